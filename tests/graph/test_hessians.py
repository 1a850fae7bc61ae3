"""tf.hessians: every Hessian-vector product in one batched backprop (graph/gradients.py),
against TensorFlow's row-by-row loop and against the Hessian written out by hand."""

import numpy as np
import pytest

import tapeflow as tf
from op_harness import HAVE_TF, tf_module

requires_tf = pytest.mark.skipif(not HAVE_TF, reason="TensorFlow is not installed")


def _cubic(m, x, y):
    return m.reduce_sum(m.sin(x) * x ** 2) + m.reduce_sum(m.tensordot(x, y, 0) ** 2) + m.reduce_prod(y)


def _hessians_of(m, fn, args):
    @m.function
    def hess(*xs):
        return m.hessians(fn(m, *xs), list(xs))
    return [h.numpy() for h in hess(*[m.constant(a) for a in args])]


def _args():
    rng = np.random.default_rng(0)
    return [rng.normal(size=(2, 3)), rng.normal(size=(2,))]


def test_matches_the_hessian_written_out():
    x = np.array([0.3, -1.2, 2.0])
    (h,) = _hessians_of(tf, lambda m, v: m.reduce_sum(v ** 3) + m.reduce_sum(v) ** 2, [x])
    np.testing.assert_allclose(h, np.diag(6 * x) + 2.0, rtol=1e-12)


@requires_tf
def test_against_tensorflow():
    ours = _hessians_of(tf, _cubic, _args())
    theirs = _hessians_of(tf_module(), _cubic, _args())
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_unconnected_source_is_none():
    @tf.function
    def hess(x, z):
        return tf.hessians(tf.reduce_sum(x ** 2), [x, z])
    h, none = hess(tf.constant([1.0, 2.0]), tf.constant([3.0]))
    assert none is None
    np.testing.assert_allclose(h.numpy(), 2 * np.eye(2))


def test_linear_function_has_zero_hessian():
    @tf.function
    def hess(x):
        return tf.hessians(tf.reduce_sum(3.0 * x), x)[0]
    np.testing.assert_array_equal(hess(tf.constant([1.0, 2.0])).numpy(), np.zeros((2, 2)))


def test_in_a_tf1_session():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float64, [2])
        (h,) = tf.compat.v1.hessians(tf.reduce_sum(tf.exp(x)), x)
        with tf.compat.v1.Session() as sess:
            got = sess.run(h, {x: [0.0, 1.0]})
    np.testing.assert_allclose(got, np.diag(np.exp([0.0, 1.0])))


def test_eagerly_raises():
    with pytest.raises(RuntimeError):
        tf.hessians(tf.constant(1.0), tf.constant(1.0))
