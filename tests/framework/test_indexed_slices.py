"""tf.IndexedSlices against TensorFlow: properties, densifying, negation, use as sparse gradients."""

import numpy as np
import pytest

import tapeflow
from differential import Raised, same


def _slices(tf, dense_shape=True, dtype=None):
    values = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=dtype)
    indices = tf.constant([2, 0, 2])
    return tf.IndexedSlices(values, indices, tf.constant([4, 2]) if dense_shape else None)


def test_properties():
    def prog(tf):
        s = _slices(tf)
        return s.values, s.indices, s.dense_shape, s.dtype, s.shape, type(s).__name__
    same(prog)


def test_shape_without_dense_shape():
    same(lambda tf: _slices(tf, dense_shape=False).shape)


def test_densify_sums_duplicate_indices():
    def prog(tf):
        s = _slices(tf)
        return tf.convert_to_tensor(s), tf.convert_to_tensor(_slices(tf, dtype=tf.float64))
    same(prog)


def test_densify_without_dense_shape_raises():
    out = same(lambda tf: tf.convert_to_tensor(_slices(tf, dense_shape=False)))
    assert isinstance(out, Raised) and type(out.exc) is ValueError


def test_densify_with_requested_dtype():
    same(lambda tf: tf.convert_to_tensor(_slices(tf), dtype=tf.float32))
    same(lambda tf: tf.convert_to_tensor(_slices(tf), dtype=tf.float64))


def test_int64_indices_and_rank3_values():
    def prog(tf):
        s = tf.IndexedSlices(tf.ones([2, 2, 3]), tf.constant([1, 1], tf.int64), tf.constant([3, 2, 3], tf.int64))
        return tf.convert_to_tensor(s)
    same(prog)


def test_ops_accept_indexed_slices():
    def prog(tf):
        s = _slices(tf)
        return tf.reduce_sum(s), tf.add_n([tf.convert_to_tensor(s), tf.ones([4, 2])])
    same(prog)


def test_negation():
    def prog(tf):
        n = -_slices(tf)
        return type(n).__name__, n.values, n.indices, tf.convert_to_tensor(n)
    same(prog)


def test_densify_is_differentiable():
    def prog(tf):
        v = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with tf.GradientTape() as t:
            t.watch(v)
            s = tf.IndexedSlices(v * 2.0, tf.constant([1, 1]), tf.constant([3, 2]))
            y = tf.reduce_sum(tf.convert_to_tensor(s) * tf.constant([[1.0], [2.0], [3.0]]))
        return t.gradient(y, v)
    same(prog)


def test_gradient_is_indexed_slices_with_dense_shape():
    def prog(tf):
        emb = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
        with tf.GradientTape() as t:
            rows = tf.gather(emb, [[3, 1], [1, 0]])
            y = tf.reduce_sum(rows * rows)
        g = t.gradient(y, emb)
        return type(g).__name__, g.values, g.indices, g.dense_shape, g.dense_shape.dtype, tf.convert_to_tensor(g)
    same(prog)


def test_output_gradient_as_indexed_slices():
    def prog(tf):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * 3.0
        seed = tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([1]), tf.constant([2, 2]))
        return t.gradient(y, x, output_gradients=seed)
    same(prog)


def test_repr_mentions_parts():
    r = repr(_slices(tapeflow))
    assert r.startswith("IndexedSlices(") and "indices=" in r and "values=" in r and "dense_shape=" in r


@pytest.mark.parametrize("method", ["scatter_add", "scatter_update"])
def test_indexed_slices_drive_variable_scatter(method):
    def prog(tf):
        v = tf.Variable(tf.zeros([4, 2]))
        getattr(v, method)(tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([3, 1])))
        return v
    same(prog)
