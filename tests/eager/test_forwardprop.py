"""tf.autodiff.ForwardAccumulator, differential against TensorFlow.

Every op row's JVP is checked by the spec harness (`test_jvp`, `test_jvp_against_tensorflow`
in tests/ops); these are the accumulator's own semantics: structures, errors,
nesting with itself and with GradientTape, custom gradients, functions and control flow.
"""

import numpy as np
import pytest

import tapeflow
from differential import same

X = [0.3, -1.2, 2.0]
V = [1.0, 0.5, -2.0]


def _jvp_of(body, primal=X, tangent=V):
    def prog(tf):
        x, v = tf.constant(primal), tf.constant(tangent)
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            y = body(tf, x)
        jvp = acc.jvp(y)
        return tf.convert_to_tensor(jvp) if isinstance(jvp, tf.IndexedSlices) else jvp
    return prog


BODIES = {
    "elementwise": lambda tf, x: tf.sin(x * x) * tf.exp(x),
    "reduction": lambda tf, x: tf.reduce_sum(tf.tanh(x) * x),
    "gather": lambda tf, x: tf.gather(x, [2, 0, 2]),
    "matmul": lambda tf, x: tf.matmul(tf.reshape(x, [3, 1]), tf.reshape(x, [1, 3])),
    "softmax_xent": lambda tf, x: tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(x), logits=x * 2.0),
    "reduce_max": lambda tf, x: tf.reduce_max(x),
    "concat_slice": lambda tf, x: tf.concat([x[1:], x[:2] * 3.0], 0),
    # TensorFlow's tangent here is an IndexedSlices (its segment_sum gradient's gather, transposed);
    # tapeflow's tangents are always dense: compared densified.
    "segment_sum": lambda tf, x: tf.math.segment_sum(x, [0, 0, 1]),
    "cond": lambda tf, x: tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x * 3.0),
    "while_loop": lambda tf, x: tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * x),
                                              [tf.constant(0), tf.ones([3])])[1],
    "through_function": lambda tf, x: tf.function(lambda a: tf.reduce_sum(tf.tanh(a) * a))(x),
    "integer_output": lambda tf, x: tf.argmax(x),
    "stop_gradient": lambda tf, x: tf.stop_gradient(x) * x,
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_jvp_like_tensorflow(name):
    same(_jvp_of(BODIES[name]))


def test_custom_gradient_function_is_differentiated_not_its_grad_fn():
    def body(tf, x):
        @tf.custom_gradient
        def f(a):
            return a * a, lambda dy: dy * 100.0
        return f(x)
    same(_jvp_of(body))


def test_variable_primal():
    def prog(tf):
        w = tf.Variable([1.0, 2.0, 3.0])
        with tf.autodiff.ForwardAccumulator(w, tf.constant([1.0, 1.0, 1.0])) as acc:
            y = tf.reduce_sum(w * tf.constant(X))
        return acc.jvp(y)
    same(prog)


def test_unconnected_and_structures():
    def prog(tf):
        x, v = tf.constant(X), tf.constant(V)
        with tf.autodiff.ForwardAccumulator({"a": x, "b": [v]}, {"a": v, "b": [x]}) as acc:
            y = x * v
            c = tf.constant(2.0) * 3.0
        return acc.jvp({"y": y, "list": [y, x]}), acc.jvp(c), acc.jvp(c, unconnected_gradients="zero")
    same(prog)


def test_accumulator_inside_function():
    def prog(tf):
        @tf.function
        def h(a, t):
            with tf.autodiff.ForwardAccumulator(a, t) as acc:
                y = tf.exp(a) * a
            return acc.jvp(y)
        return h(tf.constant(X), tf.constant(V))
    same(prog)


@pytest.mark.parametrize("name, make", [
    ("primal_twice", lambda tf, x, v: tf.autodiff.ForwardAccumulator([x, x], [v, v])),
    ("structure", lambda tf, x, v: tf.autodiff.ForwardAccumulator([x], [v, v])),
])
def test_construction_errors(name, make):
    same(lambda tf: make(tf, tf.constant(X), tf.constant(V)) and None)


@pytest.mark.parametrize("op", [lambda tf, x: x * 2.0, lambda tf, x: tf.sin(x), lambda tf, x: x + 1.0])
def test_tangent_shape_checked_when_an_op_uses_the_primal(op):
    # Not differential: TensorFlow raises ValueError from its JVP's shape inference, or an
    # InvalidArgumentError when a JVP function it traced before for other shapes runs instead.
    tf = tapeflow
    x = tf.constant(X)
    acc = tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 2.0]))    # no error yet
    with pytest.raises(ValueError, match="Tangent shape"):
        with acc:
            op(tf, x)


def test_recompute_grad_raises_under_an_accumulator():
    def prog(tf):
        x = tf.constant(X)
        f = tf.recompute_grad(lambda a: a * a)
        with tf.autodiff.ForwardAccumulator(x, tf.constant(V)) as acc:
            return acc.jvp(f(x))
    same(prog)


# -- higher order ---------------------------------------------------------------------------------

def _f(tf, x):
    return tf.reduce_sum(tf.sin(x) * x * x) + tf.reduce_sum(x * tf.constant([1.0, 2.0, 3.0], x.dtype)) ** 2 / 3.0


def _hvp_forward_over_reverse(tf, x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _f(tf, x)
        g = tape.gradient(y, x)
    return acc.jvp(g)


def _hvp_reverse_over_forward(tf, x, v):
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            y = _f(tf, x)
        jv = acc.jvp(y)
    return tape.gradient(jv, x)


def _hvp_reverse_over_reverse(tf, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = _f(tf, x)
        gv = tf.reduce_sum(inner.gradient(y, x) * v)
    return outer.gradient(gv, x)


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_hessian_vector_products_agree(in_function):
    x, v = tapeflow.constant(X, tapeflow.float64), tapeflow.constant(V, tapeflow.float64)
    results = []
    for hvp in (_hvp_forward_over_reverse, _hvp_reverse_over_forward, _hvp_reverse_over_reverse):
        fn = (lambda a, b, hvp=hvp: hvp(tapeflow, a, b))
        results.append((tapeflow.function(fn) if in_function else fn)(x, v).numpy())
    np.testing.assert_allclose(results[0], results[2], rtol=1e-12)
    np.testing.assert_allclose(results[1], results[2], rtol=1e-12)


@pytest.mark.parametrize("hvp", [_hvp_forward_over_reverse, _hvp_reverse_over_forward])
def test_hessian_vector_product_like_tensorflow(hvp):
    same(lambda tf: hvp(tf, tf.constant(X, tf.float64), tf.constant(V, tf.float64)))


def test_forward_over_forward():
    def prog(tf):
        x, v = tf.constant(X, tf.float64), tf.constant(V, tf.float64)
        with tf.autodiff.ForwardAccumulator(x, v) as outer:
            with tf.autodiff.ForwardAccumulator(x, v) as inner:
                y = _f(tf, x)
            jv = inner.jvp(y)
        return jv, outer.jvp(jv)
    same(prog)
