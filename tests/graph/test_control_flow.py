"""`tf.cond` and `tf.while_loop` in graphs (If / While ops) and eagerly, differential
against TensorFlow: values, structures, errors, and gradients (tapes and
`tf.gradients`, first and second order), including the 20-step RNN of the issue
checked against TensorFlow and a numerical gradient."""

import numpy as np
import pytest

import tapeflow
from differential import Raised, run, same


def in_function(body, *args):
    """A program calling `body(tf, *args)` (args built by `tf`) inside a tf.function."""
    def prog(tf):
        built = [a(tf) if callable(a) else a for a in args]
        return tf.function(lambda *xs: body(tf, *xs), autograph=False)(*built)
    return prog


def const(value, dtype="float32"):
    return lambda tf: tf.constant(value, dtype=getattr(tf, dtype))


# -- cond: values and structures ---------------------------------------------------------------

@pytest.mark.parametrize("p", [True, False])
def test_cond_values(p):
    def body(tf, x, pred):
        return tf.cond(pred, lambda: (x * 2.0, {"a": x + 1.0}), lambda: (x - 1.0, {"a": x * x}))
    same(in_function(body, const([1.0, 2.0]), const(p, "bool")))


@pytest.mark.parametrize("p", [True, False])
def test_cond_eager(p):
    def prog(tf):
        x = tf.constant(3.0)
        return tf.cond(tf.constant(p), lambda: x * 2.0, lambda: x - 1.0)
    same(prog)


def test_cond_single_and_nested_outputs():
    def body(tf, x):
        a = tf.cond(x > 0.0, lambda: x, lambda: -x)
        b = tf.cond(x < 0.0, lambda: [x, (x * 2.0,)], lambda: [x * 3.0, (x * 4.0,)])
        return a, b
    same(in_function(body, const(-1.5)))


def test_cond_python_bool_pred_in_graph_raises():
    def body(tf, x):
        return tf.cond(True, lambda: x + 10.0, lambda: x - 10.0)
    same(in_function(body, const(1.0)))


def test_cond_eager_python_bool_pred():
    def prog(tf):
        return tf.cond(False, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
    same(prog)


def test_cond_captures_variable_and_assign_in_branch():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function(autograph=False)
        def f(x):
            return tf.cond(x > 0.0, lambda: v.assign_add(x), lambda: v.assign_sub(1.0) * 1.0)
        return f(tf.constant(2.0)), f(tf.constant(-2.0)), v
    same(prog)


def test_cond_branches_with_integer_and_shape_outputs():
    def body(tf, x):
        return tf.cond(tf.reduce_sum(x) > 0.0, lambda: (tf.shape(x), x), lambda: (tf.shape(x) * 2, -x))
    same(in_function(body, const([[1.0, 2.0]])))


@pytest.mark.parametrize("branches", [
    lambda x: (lambda: [x, x], lambda: (x, x)),
    lambda x: (lambda: {"a": x}, lambda: {"b": x}),
    lambda x: (lambda: (x, [x]), lambda: (x, x)),
], ids=["list-tuple", "dict-keys", "nesting"])
def test_cond_structure_mismatch_raises(branches):
    def body(tf, x):
        return tf.cond(x > 0.0, *branches(x))
    ours = run(in_function(body, const(1.0)), tapeflow)
    assert isinstance(ours, Raised)
    same(in_function(body, const(1.0)))


def test_cond_dtype_mismatch_raises():
    def body(tf, x):
        return tf.cond(x > 0.0, lambda: x, lambda: tf.cast(x, tf.float64))
    same(in_function(body, const(1.0)))


def test_cond_not_callable_raises():
    def body(tf, x):
        return tf.cond(x > 0.0, x, lambda: x)
    same(in_function(body, const(1.0)))


def test_cond_different_shapes_merge_to_unknown():
    def prog(tf):
        shapes = []

        @tf.function(autograph=False)
        def f(x, p):
            out = tf.cond(p, lambda: x, lambda: tf.concat([x, x], 0))
            shapes.append(out.shape.as_list())
            return out
        return f(tf.constant([1.0, 2.0]), tf.constant(False)), shapes
    same(prog)


# -- cond: gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [True, False])
def test_cond_gradients_both_branches(p):
    def body(tf, x, y, pred):
        out = tf.cond(pred, lambda: tf.sin(x) * y, lambda: x * x)
        return out, tf.gradients(out, [x, y]), tf.gradients(out, [x, y], unconnected_gradients="zero")
    same(in_function(body, const(0.7), const(2.0), const(p, "bool")))


@pytest.mark.parametrize("p", [True, False])
def test_cond_tape_gradients_and_variables(p):
    def prog(tf):
        v = tf.Variable(1.5)
        c = tf.constant(3.0)

        @tf.function(autograph=False)
        def f(x, pred):
            return tf.cond(pred, lambda: x * v * c, lambda: tf.exp(x) + c)
        x = tf.constant(0.5)
        with tf.GradientTape() as t:
            t.watch([x, c])
            y = f(x, tf.constant(p))
        return y, t.gradient(y, [x, v, c])
    same(prog)


@pytest.mark.parametrize("p", [True, False])
def test_cond_second_order(p):
    def body(tf, x, pred):
        y = tf.cond(pred, lambda: x ** 3, lambda: tf.sin(x))
        (g,) = tf.gradients(y, x)
        (h,) = tf.gradients(g, x)
        return g, h
    same(in_function(body, const(0.8), const(p, "bool")))


def test_cond_second_order_tape_in_function():
    def prog(tf):
        @tf.function(autograph=False)
        def f(x):
            with tf.GradientTape() as t2:
                t2.watch(x)
                with tf.GradientTape() as t1:
                    t1.watch(x)
                    y = tf.cond(x > 0.0, lambda: x * x * x, lambda: -x)
                g = t1.gradient(y, x)
            return g, t2.gradient(g, x)
        return f(tf.constant(2.0)), f(tf.constant(-2.0))
    same(prog)


def test_cond_gradient_multiple_outputs_partial_use():
    def body(tf, x):
        a, b = tf.cond(x > 0.0, lambda: (x * 2.0, x * x), lambda: (x * 3.0, tf.exp(x)))
        return tf.gradients(b, x), tf.gradients(a + b, x)
    same(in_function(body, const(1.5)))


def test_nested_cond_gradients():
    def body(tf, x):
        y = tf.cond(x > 0.0, lambda: tf.cond(x > 1.0, lambda: x * x, lambda: 3.0 * x), lambda: -x)
        return y, tf.gradients(y, x)
    same(in_function(body, const(2.0)))


# -- while_loop: values ---------------------------------------------------------------------------------

def test_while_values():
    def body(tf, x):
        i, s = tf.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * x + 1.0), (tf.constant(0), tf.constant(0.0)))
        return i, s
    same(in_function(body, const(1.5)))


def test_while_eager():
    def prog(tf):
        return tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2.0), (0, 1.0))
    same(prog)


def test_while_single_loop_var():
    def body(tf, x):
        return tf.while_loop(lambda v: v < 100.0, lambda v: v * 3.0, [x]), \
            tf.while_loop(lambda v: v < 100.0, lambda v: [v * 3.0], [x])
    same(in_function(body, const(2.0)))


def test_while_zero_iterations():
    def body(tf, x):
        return tf.while_loop(lambda i, v: i < 0, lambda i, v: (i + 1, v * 2.0), (0, x))
    same(in_function(body, const([1.0, 2.0])))


@pytest.mark.parametrize("limit", [0, 3, 100])
def test_while_maximum_iterations(limit):
    def body(tf, x):
        return tf.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * 2.0), (0, x),
                             maximum_iterations=limit)
    same(in_function(body, const(1.0)))


def test_while_maximum_iterations_eager():
    def prog(tf):
        return tf.while_loop(lambda i: i < 10, lambda i: [i + 1], [tf.constant(0)], maximum_iterations=4)
    same(prog)


def test_while_eager_structure_change_raises():
    def prog(tf):
        return tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])
    same(prog)


def test_while_python_loop_vars_in_graph():
    def body(tf, n):
        return tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + 0.5), [0, 0.0])
    same(in_function(body, const(5, "int32")))


def test_while_nested_structures():
    def body(tf, x):
        def loop_body(i, state):
            return i + 1, {"h": state["h"] * 0.5 + x, "hist": (state["hist"][0] + state["h"],)}
        return tf.while_loop(lambda i, st: i < 4, loop_body, (0, {"h": x, "hist": (tf.zeros_like(x),)}))
    same(in_function(body, const([1.0, -2.0])))


def test_while_shape_invariants():
    def body(tf, x):
        i, v = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.concat([v, v], 0)), (0, x),
                             shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
        return i, v, v.shape.as_list()
    same(in_function(body, const([1.0, 2.0])))


def test_while_shape_invariants_gradient():
    def body(tf, x):
        _, v = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.concat([v, v], 0)), (0, x),
                             shape_invariants=(tf.TensorShape([]), tf.TensorShape([None])))
        return tf.gradients(tf.reduce_sum(v * v), x)
    same(in_function(body, const([1.0, 2.0])))


def test_while_shape_change_raises():
    def body(tf, x):
        return tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.concat([v, v], 0)), (0, x))
    ours = run(in_function(body, const([1.0, 2.0])), tapeflow)
    assert isinstance(ours, Raised)
    same(in_function(body, const([1.0, 2.0])))


def test_while_structure_change_raises():
    def body(tf, x):
        return tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, (v, v)), (0, x))
    ours = run(in_function(body, const(1.0)), tapeflow)
    assert isinstance(ours, Raised)
    same(in_function(body, const(1.0)))


def test_while_dtype_change_raises():
    def body(tf, x):
        return tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.cast(v, tf.float64)), (0, x))
    same(in_function(body, const(1.0)))


def test_while_captures_variable_and_assigns():
    def prog(tf):
        v = tf.Variable(0.0)

        @tf.function(autograph=False)
        def f(n):
            def loop_body(i):
                v.assign_add(tf.cast(i, tf.float32))
                return i + 1
            tf.while_loop(lambda i: i < n, loop_body, [0])
            return v.read_value()
        return f(tf.constant(4)), f(tf.constant(2)), v
    same(prog)


def test_while_with_cond_inside():
    def body(tf, x):
        def loop_body(i, v):
            return i + 1, tf.cond(v > 10.0, lambda: v - 7.0, lambda: v * 2.0)
        return tf.while_loop(lambda i, v: i < 6, loop_body, (0, x))
    same(in_function(body, const(3.0)))


def test_nested_while():
    def body(tf, x):
        def outer(i, acc):
            _, inner = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + x), (0, acc))
            return i + 1, inner
        return tf.while_loop(lambda i, a: i < 4, outer, (0, tf.zeros_like(x)))
    same(in_function(body, const([1.0, 2.0])))


# -- while_loop: gradients -----------------------------------------------------------------------------------

def test_while_gradient_loop_carried():
    def body(tf, x):
        _, y = tf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, tf.sin(v) * v), (0, x))
        return y, tf.gradients(y, x)
    same(in_function(body, const([0.3, 1.1])))


def test_while_gradient_loop_invariant():
    def body(tf, x, w):
        _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * w + w * w), (0, x))
        return tf.gradients(y, [x, w])
    same(in_function(body, const(0.5), const(1.5)))


def test_while_gradient_variable():
    def prog(tf):
        w = tf.Variable([0.9, 1.1])

        @tf.function(autograph=False)
        def f(x):
            _, y = tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, tf.tanh(v * w)), (0, x))
            return tf.gradients(tf.reduce_sum(y), [x, w])
        return f(tf.constant([0.5, -0.3]))
    same(prog)


def test_while_gradient_unconnected_and_integer():
    def body(tf, x, z):
        i, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), (0, x))
        return tf.gradients(y, [x, z]), tf.gradients(tf.cast(i, tf.float32), x)
    same(in_function(body, const(1.0), const(2.0)))


def test_while_gradient_maximum_iterations():
    def body(tf, x):
        _, y = tf.while_loop(lambda i, v: i < 100, lambda i, v: (i + 1, v * v), (0, x), maximum_iterations=3)
        return y, tf.gradients(y, x)
    same(in_function(body, const(1.1)))


def test_while_gradient_multiple_outputs():
    def body(tf, x):
        _, a, b = tf.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a * b, a + b), (0, x, 2.0 * x))
        return tf.gradients(a, x), tf.gradients(b, x), tf.gradients([a, b], x)
    same(in_function(body, const(0.7)))


def test_while_tape_gradient():
    def prog(tf):
        w = tf.Variable(1.2)

        @tf.function(autograph=False)
        def f(x):
            return tf.while_loop(lambda i, v: i < 4, lambda i, v: (i + 1, v * w + x), (0, x))[1]
        x = tf.constant(0.5)
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        return y, t.gradient(y, [x, w])
    same(prog)


def test_while_tape_gradient_eager():
    def prog(tf):
        x = tf.constant(0.5)
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v + x), (0, x))[1]
        return t.gradient(y, x)
    same(prog)


def test_while_second_order():
    def body(tf, x):
        _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), (0, x))   # y = x^4
        (g,) = tf.gradients(y, x)
        (h,) = tf.gradients(g, x)
        return y, g, h
    ours = same(in_function(body, const(1.5)))
    np.testing.assert_allclose([float(t) for t in ours], [1.5 ** 4, 4 * 1.5 ** 3, 12 * 1.5 ** 2], rtol=1e-5)


def test_while_second_order_tape():
    def prog(tf):
        @tf.function(autograph=False)
        def f(x):
            with tf.GradientTape() as t2:
                t2.watch(x)
                with tf.GradientTape() as t1:
                    t1.watch(x)
                    y = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, tf.sin(v)), (0, x))[1]
                g = t1.gradient(y, x)
            return g, t2.gradient(g, x)
        return f(tf.constant(0.4))
    same(prog)


def test_nested_while_gradient():
    def body(tf, x):
        def outer(i, acc):
            _, inner = tf.while_loop(lambda j, a: j < 2, lambda j, a: (j + 1, a * x), (0, acc))
            return i + 1, inner
        _, y = tf.while_loop(lambda i, a: i < 2, outer, (0, x))       # y = x^5
        return y, tf.gradients(y, x)
    same(in_function(body, const(1.2)))


def test_while_gradient_with_cond_in_body():
    def body(tf, x):
        def loop_body(i, v):
            return i + 1, tf.cond(v > 2.0, lambda: tf.sqrt(v), lambda: v * v + 1.0)
        _, y = tf.while_loop(lambda i, v: i < 5, loop_body, (0, x))
        return y, tf.gradients(y, x)
    same(in_function(body, const(1.3)))


def test_while_gradient_of_values_read_by_index():
    def body(tf, xs):
        def loop_body(i, acc):
            return i + 1, acc * 0.5 + tf.gather(xs, i) ** 2
        _, y = tf.while_loop(lambda i, acc: i < 4, loop_body, (0, tf.constant(0.0)))
        return tf.gradients(y, xs)
    same(in_function(body, const([1.0, 2.0, 3.0, 4.0])))


# -- the RNN: 20 iterations of h = tanh(W h + U x_t) -------------------------------------------

N, STEPS = 4, 20
_rng = np.random.default_rng(7)
W0 = (_rng.normal(size=(N, N)) * 0.4).astype(np.float64)
U0 = (_rng.normal(size=(N, N)) * 0.4).astype(np.float64)
X0 = _rng.normal(size=(STEPS, N)).astype(np.float64)


def rnn_loss(tf, w, u, x):
    def step(t, h):
        x_t = tf.reshape(x[t], [N, 1])
        return t + 1, tf.tanh(tf.matmul(w, h) + tf.matmul(u, x_t))
    _, h = tf.while_loop(lambda t, h: t < STEPS, step, (tf.constant(0), tf.zeros([N, 1], tf.float64)))
    return tf.reduce_sum(h * h)


def test_rnn_while_loop_gradients_match_tf_and_numeric():
    def prog(tf):
        @tf.function(autograph=False)
        def grads(w, u, x):
            loss = rnn_loss(tf, w, u, x)
            return (loss,) + tuple(tf.gradients(loss, [w, u, x]))
        return grads(tf.constant(W0), tf.constant(U0), tf.constant(X0))
    loss, gw, gu, gx = same(prog)

    def numeric(which, eps=1e-6):
        base = [W0, U0, X0]
        out = np.zeros_like(base[which])
        for idx in np.ndindex(*out.shape):
            plus = [b.copy() for b in base]
            minus = [b.copy() for b in base]
            plus[which][idx] += eps
            minus[which][idx] -= eps
            out[idx] = (_np_rnn_loss(*plus) - _np_rnn_loss(*minus)) / (2 * eps)
        return out
    np.testing.assert_allclose(float(loss), _np_rnn_loss(W0, U0, X0), rtol=1e-12)
    for which, g in enumerate([gw, gu, gx]):
        np.testing.assert_allclose(g.numpy(), numeric(which), rtol=1e-6, atol=1e-9)


def _np_rnn_loss(w, u, x):
    h = np.zeros((N, 1))
    for t in range(STEPS):
        h = np.tanh(w @ h + u @ x[t].reshape(N, 1))
    return float(np.sum(h * h))


def test_rnn_while_loop_tape_with_variables():
    def prog(tf):
        w, u = tf.Variable(W0), tf.Variable(U0)

        @tf.function(autograph=False)
        def loss_fn(x):
            return rnn_loss(tf, w, u, x)
        with tf.GradientTape() as t:
            loss = loss_fn(tf.constant(X0))
        return loss, t.gradient(loss, [w, u])
    same(prog)
