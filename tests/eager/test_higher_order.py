"""Second- and third-order derivatives through nested (and persistent) tapes, against TensorFlow."""

import numpy as np
import pytest

import tapeflow
from differential import same

_X = np.array([0.3, 0.7, 1.3], np.float64)
_Y = np.array([1.1, 0.6, 0.9], np.float64)
_M = np.array([[0.5, -0.2, 0.3], [0.1, 0.4, -0.6]], np.float64)


def _attr(module, dotted):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


# name -> (function of (tf, x), tapeflow names it needs)
UNARY = {
    "exp": (lambda tf, x: tf.exp(x), ()),
    "sin": (lambda tf, x: tf.sin(x), ()),
    "cos": (lambda tf, x: tf.cos(x), ()),
    "tanh": (lambda tf, x: tf.tanh(x), ()),
    "log": (lambda tf, x: tf.math.log(x), ()),
    "sqrt": (lambda tf, x: tf.sqrt(x), ()),
    "square": (lambda tf, x: tf.square(x), ()),
    "reciprocal": (lambda tf, x: tf.math.reciprocal(x), ()),
    "pow_const": (lambda tf, x: tf.pow(x, 3.5), ()),
    "pow_operator": (lambda tf, x: x ** 4, ()),
    "mul_self": (lambda tf, x: x * x * x, ()),
    "div": (lambda tf, x: 1.5 / (x + 2.0), ()),
    "div_self": (lambda tf, x: tf.sin(x) / x, ()),
    "reduce_sum": (lambda tf, x: tf.reduce_sum(x * x) * tf.reduce_sum(x), ()),
    "reduce_mean": (lambda tf, x: tf.reduce_mean(tf.exp(x)) ** 2, ()),
    "matmul": (lambda tf, x: tf.matmul(tf.constant(_M), tf.reshape(x * x, [3, 1])) ** 2, ()),
    "matmul_self": (lambda tf, x: tf.matmul(tf.reshape(x, [3, 1]), tf.reshape(tf.sin(x), [1, 3])), ()),
    "abs": (lambda tf, x: tf.abs(x - 0.5) ** 3, ()),
    "maximum": (lambda tf, x: tf.maximum(x * x, 0.5), ()),
    "squared_difference": (lambda tf, x: tf.math.squared_difference(tf.exp(x), 1.0), ()),
    "where": (lambda tf, x: tf.where(x > 0.5, x ** 3, tf.sin(x)), ()),
    "sigmoid": (lambda tf, x: tf.sigmoid(x), ("sigmoid",)),
    "softplus": (lambda tf, x: tf.nn.softplus(x), ("nn.softplus",)),
    "log_softmax": (lambda tf, x: tf.nn.log_softmax(x), ("nn.log_softmax",)),
    "softmax": (lambda tf, x: tf.nn.softmax(x), ("nn.softmax",)),
    "elu": (lambda tf, x: tf.nn.elu(x - 0.5), ("nn.elu",)),
    "selu": (lambda tf, x: tf.nn.selu(x - 0.5), ("nn.selu",)),
    "atan": (lambda tf, x: tf.math.atan(x), ("math.atan",)),
    "erf": (lambda tf, x: tf.math.erf(x), ("math.erf",)),
    "logsumexp": (lambda tf, x: tf.reduce_logsumexp(x * x), ("reduce_logsumexp",)),
    "cumsum": (lambda tf, x: tf.cumsum(x ** 3), ("cumsum",)),
    "cumprod": (lambda tf, x: tf.math.cumprod(x), ("math.cumprod",)),
}


def _needs(names):
    for name in names:
        if _attr(tapeflow, name) is None:
            pytest.skip(f"tapeflow has no {name} yet")


def _three_orders(tf, f, value):
    """f(x), df, d2f, d3f through three nested tapes (each gradient sums over outputs)."""
    x = tf.constant(value)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = f(tf, x)
            g1 = t1.gradient(y, x)
        g2 = t2.gradient(g1, x)
    g3 = t3.gradient(g2, x)
    return y, g1, g2, g3


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_third_order_nested_tapes(name, dtype):
    f, needs = UNARY[name]
    _needs(needs)
    tol = 1e-9 if dtype is np.float64 else 2e-4
    same(lambda tf: _three_orders(tf, f, _X.astype(dtype)), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "log", "div_self", "matmul", "reduce_sum", "pow_const"])
def test_higher_order_with_one_persistent_tape(name):
    f, needs = UNARY[name]
    _needs(needs)

    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = f(tf, x)
            g1 = t.gradient(y, x)
            g2 = t.gradient(g1, x)
        g3 = t.gradient(g2, x)
        return y, g1, g2, g3, t.gradient(g1, x)
    same(prog)


BINARY = {
    "mul": lambda tf, x, y: x * y * x,
    "div": lambda tf, x, y: x / y,
    "pow": lambda tf, x, y: tf.pow(x, y),
    "sub_sq": lambda tf, x, y: (x - y) ** 2 * x,
    "matmul": lambda tf, x, y: tf.matmul(tf.reshape(x, [1, 3]), tf.reshape(tf.exp(y), [3, 1])) ** 2,
    "maximum": lambda tf, x, y: tf.maximum(x, y) * x,
    "broadcast": lambda tf, x, y: tf.reshape(x, [3, 1]) * tf.reshape(y, [1, 3]) ** 2,
}


@pytest.mark.parametrize("name", list(BINARY))
def test_mixed_partials(name):
    f = BINARY[name]

    def prog(tf):
        x, y = tf.constant(_X), tf.constant(_Y)
        with tf.GradientTape(persistent=True) as outer:
            outer.watch([x, y])
            with tf.GradientTape() as inner:
                inner.watch([x, y])
                z = f(tf, x, y)
            gx, gy = inner.gradient(z, [x, y])
        return (z, gx, gy, outer.gradient(gx, [x, y]), outer.gradient(gy, [x, y]),
                outer.gradient([gx, gy], {"x": x, "y": y}))
    same(prog)


def test_second_order_unconnected_is_none():
    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = x * 3.0               # linear: the gradient does not depend on x
            g = inner.gradient(y, x)
        return g, outer.gradient(g, x)
    same(prog)


def test_second_order_of_variable():
    def prog(tf):
        v = tf.Variable(_X)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                y = tf.reduce_sum(tf.sin(v) * v)
            g = inner.gradient(y, v)
        return g, outer.gradient(g, v)
    same(prog)


def test_hessian_vector_product():
    def prog(tf):
        x = tf.constant(_X)
        vec = tf.constant(_Y)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(tf.exp(x) * tf.reduce_sum(x * x))
            g = inner.gradient(y, x)
            gv = tf.reduce_sum(g * vec)
        return outer.gradient(gv, x)
    same(prog)


def test_outer_tape_sees_only_its_watched_tensors():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x
            g = inner.gradient(y, x)
        return g, outer.gradient(g, x)
    same(prog)


def test_fourth_order_sin():
    def prog(tf):
        x = tf.constant(0.4, tf.float64)
        tapes = [tf.GradientTape(persistent=True) for _ in range(4)]
        for t in tapes:
            t.__enter__()
            t.watch(x)
        y = tf.sin(x) * x
        grads = [y]
        for t in reversed(tapes):
            t.__exit__(None, None, None)
            grads.append(t.gradient(grads[-1], x))
        return grads
    same(prog)


def test_complex_second_order():
    def prog(tf):
        z = tf.constant(np.array([0.5 + 1.0j, -0.3 + 0.2j], np.complex128))
        with tf.GradientTape() as outer:
            outer.watch(z)
            with tf.GradientTape() as inner:
                inner.watch(z)
                y = tf.math.real(tf.exp(z) * z)
            g = inner.gradient(y, z)
            s = tf.math.real(g * tf.math.conj(g))
        return g, outer.gradient(s, z)
    same(prog)
