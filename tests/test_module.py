"""tf.Module against TensorFlow: tutorial models trained eagerly and in tf.function, the order and
names of variables and submodules, name scopes and errors."""

import numpy as np
import pytest

import tapeflow
from differential import same

_RNG = np.random.default_rng(0)
_X = _RNG.normal(size=(8, 3)).astype(np.float32)
_Y = _RNG.normal(size=(8, 2)).astype(np.float32)


def _init(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32) * 0.5


def _models(tf):
    """The tutorial's Dense and MLP (deterministic initial values instead of tf.random)."""
    class Dense(tf.Module):
        def __init__(self, n_in, n_out, seed, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(_init((n_in, n_out), seed), name="w")
            self.b = tf.Variable(tf.zeros([n_out]), name="b")

        def __call__(self, x):
            return tf.nn.relu(tf.matmul(x, self.w) + self.b)

    class MLP(tf.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            with self.name_scope:
                self.hidden = Dense(3, 4, seed=1)
                self.out = Dense(4, 2, seed=2, name="out")

        @tf.Module.with_name_scope
        def __call__(self, x):
            return self.out(self.hidden(x))

    return Dense, MLP


def _train(tf, model, step, n=5):
    losses = [step(tf.constant(_X), tf.constant(_Y)) for _ in range(n)]
    return losses, [v.name for v in model.trainable_variables], list(model.trainable_variables)


def _sgd_step(tf, model):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(0.1 * g)
        return loss
    return step


def test_mlp_trains_eagerly_like_tensorflow():
    def program(tf):
        _, MLP = _models(tf)
        model = MLP()
        return _train(tf, model, _sgd_step(tf, model))
    same(program)


def test_mlp_trains_in_a_tf_function_step_like_tensorflow():
    def program(tf):
        _, MLP = _models(tf)
        model = MLP()
        return _train(tf, model, tf.function(_sgd_step(tf, model)))
    same(program)


def test_eager_and_tf_function_training_agree():
    _, MLP = _models(tapeflow)
    eager, traced = MLP(), MLP()
    a = _train(tapeflow, eager, _sgd_step(tapeflow, eager))
    b = _train(tapeflow, traced, tapeflow.function(_sgd_step(tapeflow, traced)))
    np.testing.assert_allclose(np.array(a[0]), np.array(b[0]), rtol=1e-6)
    for u, v in zip(a[2], b[2], strict=True):
        np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-6)


def test_gradients_of_a_module_are_a_tuple_like_tensorflow():
    def program(tf):
        Dense, _ = _models(tf)
        layer = Dense(3, 2, seed=3)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(tf.constant(_X)))
        return tape.gradient(loss, layer.trainable_variables)
    same(program)


def _flexible(tf):
    """The tutorial's module whose tf.function __call__ creates its variables on the first call."""
    class FlexibleDense(tf.Module):
        def __init__(self, n_out, name=None):
            super().__init__(name=name)
            self.n_out = n_out
            self.is_built = False

        @tf.function
        @tf.Module.with_name_scope
        def __call__(self, x):
            if not self.is_built:
                self.w = tf.Variable(tf.ones([x.shape[-1], self.n_out]) * 0.3, name="w")
                self.b = tf.Variable(tf.zeros([self.n_out]), name="b")
                self.is_built = True
            return tf.matmul(x, self.w) + self.b

    class Model(tf.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            with self.name_scope:
                self.first = FlexibleDense(4)
                self.second = FlexibleDense(2)

        @tf.function
        def __call__(self, x):
            return self.second(tf.nn.tanh(self.first(x)))
    return Model


def test_tf_function_call_creating_variables_on_first_call_like_tensorflow():
    def program(tf):
        model = _flexible(tf)()
        first = model(tf.constant(_X))
        again = model(tf.constant(_X[:2]))
        return first, again, [v.name for v in model.variables], list(model.variables)
    same(program)


def test_tf_function_module_trains_with_a_tape_outside_like_tensorflow():
    def program(tf):
        model = _flexible(tf)()
        losses = []
        for _ in range(3):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(tf.constant(_X)) - _Y))
            grads = tape.gradient(loss, model.trainable_variables)
            for v, g in zip(model.trainable_variables, grads):
                v.assign_sub(0.5 * g)
            losses.append(loss)
        return losses, list(model.trainable_variables)
    same(program)


def _structure(tf):
    """A module holding variables and modules in attributes, lists, tuples, nested dicts, one module
    reached twice and a cycle back to its parent."""
    class Leaf(tf.Module):
        def __init__(self, k, name=None):
            super().__init__(name=name)
            self.v = tf.Variable(float(k), name=f"v{k}")
            self.frozen = tf.Variable([k], trainable=False, name=f"frozen{k}")

    class Tree(tf.Module):
        def __init__(self):
            super().__init__()
            self.zeta = Leaf(1, name="zeta_leaf")
            self.alpha = [Leaf(2), (Leaf(3, name="in_tuple"), tf.Variable(30.0, name="t"))]
            self.mid = {"b": Leaf(4, name="b_leaf"), "a": {"y": tf.Variable(40.0, name="y"), "x": Leaf(5)}}
            self.shared = self.zeta
            self.own = tf.Variable(0.0, name="own")
            self.none = None
            self.number = 3
            self.zeta.parent = self        # a cycle
    return Tree()


def test_variables_and_submodules_order_like_tensorflow():
    def program(tf):
        tree = _structure(tf)
        return ([v.name for v in tree.variables], [v.name for v in tree.trainable_variables],
                [v.name for v in tree.non_trainable_variables], [m.name for m in tree.submodules],
                [m.name for m in tree.zeta.submodules], [v.name for v in tree.alpha[0].variables])
    same(program)


@pytest.mark.parametrize("recursive", [True, False])
def test_flatten_with_paths_like_tensorflow(recursive):
    """With paths a value is yielded once per path; the cycle back to the parent is walked once."""
    def program(tf):
        tree = _structure(tf)
        return [(path, v.name) for path, v in tree._flatten(predicate=lambda x: isinstance(x, tf.Variable),
                                                            with_path=True, recursive=recursive)]
    same(program)


@pytest.mark.parametrize("name", [None, "my_model", "_private", "Name2", "1abc", "a b", "", "a/b", "a.b", "a-b"])
def test_names_like_tensorflow(name):
    def program(tf):
        class CamelCASEModel2(tf.Module):
            pass
        m = CamelCASEModel2(name=name)
        return m.name, m.name_scope.name
    same(program)


def test_name_scopes_name_variables_like_tensorflow():
    def program(tf):
        class Scaled(tf.Module):
            @tf.Module.with_name_scope
            def __call__(self, x):
                if not hasattr(self, "s"):
                    self.s = tf.Variable(2.0)
                with tf.name_scope("inner"):
                    self.t = tf.Variable(1.0, name="t")
                return x * self.s
        with tf.name_scope("outer"):
            m = Scaled()
            plain = tf.Module()
        m(tf.constant(1.0))
        with m.name_scope as scope:
            inside = tf.Variable(0.0, name="inside")
        with tf.name_scope("a"):
            with tf.name_scope("b") as nested:
                v = tf.Variable(0.0)
            with tf.name_scope("/abs/") as absolute:
                w = tf.Variable(0.0)
            with tf.name_scope("") as top:
                u = tf.Variable(0.0)
        return [m.name_scope.name, plain.name_scope.name, m.s.name, m.t.name, scope, inside.name, nested,
                v.name, absolute, w.name, top, u.name]
    same(program)


def test_name_scope_argument_errors_like_tensorflow():
    same(lambda tf: tf.name_scope(3))
    same(lambda tf: tf.name_scope(None))


def test_variables_created_in_a_traced_name_scope_like_tensorflow():
    def program(tf):
        @tf.function
        def f(x):
            with tf.name_scope("block"):
                if not holder:
                    holder.append(tf.Variable(1.0, name="k"))
                    holder.append(tf.Variable(2.0))
            return x * holder[0]
        holder = []
        with tf.name_scope("ignored_outside"):
            f(tf.constant(1.0))
        return [v.name for v in holder]
    same(program)


def test_modules_in_a_graph_get_unique_scopes():
    """Module scopes are made unique in a graph (eagerly they are not), as TensorFlow's."""
    def program(tf):
        names = []

        @tf.function
        def f():
            names.extend([tf.Module(name="m").name_scope.name, tf.Module(name="m").name_scope.name])
            return tf.constant(0)
        f()
        return names + [tf.Module(name="m").name_scope.name, tf.Module(name="m").name_scope.name]
    same(program)
