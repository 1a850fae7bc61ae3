"""Spec rows for the array ops (reshapes, joins, splits, tile, pad, reverse, one_hot, clip_by_value,
where, sort) and the constructors; TF-differential feature tests for dtypes and errors below.

Linear ops square their outputs before the second-order check (`square_outputs`), so
each gradient rule is differentiated again.
"""

import numpy as np
import pytest

import tapeflow
from differential import same
from op_harness import (OpSpec, UnknownDimsError, any_real, complex_of, define_graph_tests, define_tests,
                        define_unknown_dims_tests, distinct, traced_with_dims)

SQ = {"square_outputs": True}


def bound(lo, hi):
    def sample(rng, shape, dtype):
        return rng.uniform(lo, hi, shape).astype(dtype)
    sample.__name__ = f"uniform_{lo}_{hi}"
    return sample


def const(*arrays):
    """An `extra` giving fixed non-differentiable inputs."""
    return lambda rng, shapes: [np.asarray(a) for a in arrays]


def _split_sizes(x, sizes, axis):
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


def _meshgrid(x, y, indexing):
    return list(np.meshgrid(x, y, indexing=indexing))


def _linspace(a, b, num, axis):
    return np.linspace(a, b, num, axis=axis)


def _with_unknown_dims(tf, x):
    """tf.shape and tf.size inside a function traced for [None, None] inputs (read when it runs)."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], x.dtype)])
    def f(v):
        return v * tf.cast(tf.size(v), v.dtype) + tf.cast(tf.shape(v)[0], v.dtype)
    return f(x)


def _sort(x, axis, descending):
    s = np.sort(x, axis=axis)
    return np.flip(s, axis) if descending else s


SPECS = [
    # -- identity family
    OpSpec("identity", lambda tf, x: tf.identity(x), lambda x: x, [((3,),), ((),), ((0,),)], **SQ),
    OpSpec("identity_n", lambda tf, x, y: tf.identity_n([x, y]), lambda x, y: [x, y], [((2,), ())], **SQ),
    OpSpec("stop_gradient", lambda tf, x, y: x * tf.stop_gradient(y), np.multiply, [((3,), (3,))],
           numeric_wrt=[0]),        # y's gradient is None, like TensorFlow's
    # -- reshapes
    OpSpec("reshape", lambda tf, x: tf.reshape(x, [3, -1]), lambda x: x.reshape(3, -1), [((2, 3),), ((3,),)], **SQ),
    OpSpec("reshape_scalar", lambda tf, x: tf.reshape(x, [1, 1]), lambda x: x.reshape(1, 1), [((),)], **SQ),
    OpSpec("reshape_empty", lambda tf, x: tf.reshape(x, [3, 0]), lambda x: x.reshape(3, 0), [((0, 3),)], **SQ),
    OpSpec("transpose", lambda tf, x: tf.transpose(x, [2, 0, 1]), lambda x: x.transpose(2, 0, 1),
           [((2, 3, 4),), ((1, 0, 2),)], **SQ),
    OpSpec("transpose_default", lambda tf, x: tf.transpose(x), lambda x: x.T, [((2, 3),), ((),)], **SQ),
    OpSpec("broadcast_to", lambda tf, x: tf.broadcast_to(x, [2, 3]), lambda x: np.broadcast_to(x, (2, 3)),
           [((3,),), ((),), ((2, 1),)], **SQ),
    OpSpec("broadcast_to_empty", lambda tf, x: tf.broadcast_to(x, [0, 3]), lambda x: np.broadcast_to(x, (0, 3)),
           [((1, 3),)], **SQ),
    OpSpec("squeeze", lambda tf, x: tf.squeeze(x), np.squeeze, [((1, 3, 1),), ((1,),), ((),)], **SQ),
    OpSpec("squeeze_axis", lambda tf, x: tf.squeeze(x, [0, -1]), lambda x: np.squeeze(x, (0, -1)),
           [((1, 3, 1),), ((1, 0, 1),)], **SQ),
    OpSpec("expand_dims", lambda tf, x: tf.expand_dims(x, -1), lambda x: np.expand_dims(x, -1),
           [((2, 3),), ((),)], **SQ),
    OpSpec("expand_dims_front", lambda tf, x: tf.expand_dims(x, 0), lambda x: x[None], [((0, 2),)], **SQ),
    # -- joins and splits
    OpSpec("stack", lambda tf, x, y: tf.stack([x, y], axis=1), lambda x, y: np.stack([x, y], 1),
           [((2, 3), (2, 3)), ((0,), (0,))], **SQ),
    OpSpec("stack_scalars", lambda tf, x, y: tf.stack([x, y]), lambda x, y: np.stack([x, y]), [((), ())], **SQ),
    # (the number of outputs is the size of axis 1: unknown when every dim is)
    OpSpec("unstack", lambda tf, x: tf.unstack(x, axis=1), lambda x: list(np.moveaxis(x, 1, 0)),
           [((2, 3),), ((2, 1, 2),)], unknown_dims_error=UnknownDimsError(ValueError, modes=("all",)), **SQ),
    OpSpec("concat", lambda tf, x, y: tf.concat([x, y], axis=-1), lambda x, y: np.concatenate([x, y], -1),
           [((2, 3), (2, 1)), ((0, 2), (0, 3)), ((2,), (0,))], **SQ),
    OpSpec("concat_complex", lambda tf, x, y: tf.concat([x, y], 0), lambda x, y: np.concatenate([x, y]),
           [((2,), (1,))], sampler=complex_of(any_real), **SQ),
    OpSpec("split_num", lambda tf, x: tf.split(x, 2, axis=1), lambda x: np.split(x, 2, 1),
           [((3, 4),), ((0, 2),)], **SQ),
    OpSpec("split_sizes", lambda tf, x: tf.split(x, [1, -1, 0], axis=0),
           lambda x: _split_sizes(x, [1, 3, 0], 0), [((4, 2),)], **SQ),
    # -- tile, pad, reverse
    OpSpec("tile", lambda tf, x: tf.tile(x, [2, 3]), lambda x: np.tile(x, (2, 3)), [((2, 3),), ((1, 0),)], **SQ),
    OpSpec("tile_zero", lambda tf, x: tf.tile(x, [0, 2]), lambda x: np.tile(x, (0, 2)), [((2, 3),)], **SQ),
    OpSpec("tile_scalar", lambda tf, x: tf.tile(x, []), lambda x: x, [((),)], **SQ),
    OpSpec("pad_constant", lambda tf, x, c: tf.pad(x, [[1, 0], [0, 2]], constant_values=c),
           lambda x, c: np.pad(x, [[1, 0], [0, 2]], constant_values=c), [((2, 3), ()), ((0, 1), ())],
           numeric_wrt=[0],         # constant_values gets None, like TensorFlow's PadV2 gradient
           **SQ),
    OpSpec("pad_zero", lambda tf, x: tf.pad(x, [[2, 1]]), lambda x: np.pad(x, [[2, 1]]), [((3,),)], **SQ),
    OpSpec("pad_reflect", lambda tf, x: tf.pad(x, [[2, 1], [0, 3]], "REFLECT"),
           lambda x: np.pad(x, [[2, 1], [0, 3]], "reflect"), [((3, 4),)], **SQ),
    OpSpec("pad_symmetric", lambda tf, x: tf.pad(x, [[3, 1], [2, 0]], "SYMMETRIC"),
           lambda x: np.pad(x, [[3, 1], [2, 0]], "symmetric"), [((3, 2),), ((4, 3),)], **SQ),
    OpSpec("reverse", lambda tf, x: tf.reverse(x, [-1, 0]), lambda x: x[::-1, ::-1], [((2, 3),), ((0, 2),)], **SQ),
    OpSpec("reverse_none", lambda tf, x: tf.reverse(x, []), lambda x: x, [((3,),)], **SQ),
    # -- one_hot (not differentiable itself), clip_by_value, where
    OpSpec("one_hot", lambda tf, x, i: tf.one_hot(i, 4, on_value=2.0, off_value=-1.0, dtype=x.dtype, axis=0) * x,
           lambda x, i: np.where(np.arange(4)[:, None] == i, 2.0, -1.0) * x, [((4, 3),)],
           extra=const([0, 3, 5]), **SQ),
    OpSpec("one_hot_default", lambda tf, x, i: tf.cast(tf.one_hot(i, 3), x.dtype) + x,
           lambda x, i: (np.arange(3) == np.asarray(i)[..., None]) + x, [((2, 2, 3),)],
           extra=const([[0, -1], [2, 1]]), **SQ),
    OpSpec("clip_by_value", lambda tf, x, lo, hi: tf.clip_by_value(x, lo, hi), lambda x, lo, hi: np.clip(x, lo, hi),
           [((2, 3), (), ()), ((3,), (3,), ()), ((0,), (), ())],
           sampler=(any_real, bound(-1.5, -0.2), bound(0.2, 1.5))),
    OpSpec("clip_by_norm", lambda tf, x: tf.clip_by_norm(x, 1.5), lambda x: x * 1.5 / max(np.linalg.norm(x), 1.5),
           [((3,),), ((2, 3),)]),
    OpSpec("clip_by_norm_unclipped", lambda tf, x: tf.clip_by_norm(x, 1.5), lambda x: x, [((3,),)],
           sampler=bound(0.1, 0.6)),
    OpSpec("clip_by_norm_axes", lambda tf, x, c: tf.clip_by_norm(x, c, axes=[1]),
           lambda x, c: x * c / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), c), [((3, 4), ())],
           sampler=(any_real, bound(1.0, 2.5))),
    OpSpec("where", lambda tf, x, y, c: tf.where(c, x, y), lambda x, y, c: np.where(c, x, y),
           [((2, 3), (2, 3)), ((2, 3), ()), ((1, 3), (2, 1))], extra=const([[True], [False]]), **SQ),
    OpSpec("where_coordinates", lambda tf, x, c: tf.gather_nd(x, tf.where(c)), lambda x, c: x[np.nonzero(c)],
           [((2, 3),)], extra=const([[True, False, True], [False, False, True]]), **SQ),
    # -- constructors that depend on their inputs
    OpSpec("fill", lambda tf, s: tf.fill([2, 3], s), lambda s: np.full((2, 3), s), [((),)], **SQ),
    OpSpec("linspace", lambda tf, a, b: tf.linspace(a, b, 5), lambda a, b: _linspace(a, b, 5, 0),
           [((), ()), ((2,), (2,))], **SQ),
    OpSpec("linspace_axis", lambda tf, a, b: tf.linspace(a, b, 3, axis=-1), lambda a, b: _linspace(a, b, 3, -1),
           [((2,), (2,))], **SQ),
    OpSpec("linspace_short", lambda tf, a, b: [tf.linspace(a, b, 1), tf.linspace(a, b, 0)],
           lambda a, b: [_linspace(a, b, 1, 0), _linspace(a, b, 0, 0)], [((), ())], **SQ),
    OpSpec("meshgrid_xy", lambda tf, x, y: tf.meshgrid(x, y), lambda x, y: _meshgrid(x, y, "xy"),
           [((3,), (2,))], **SQ),
    OpSpec("meshgrid_ij", lambda tf, x, y: tf.meshgrid(x, y, indexing="ij"), lambda x, y: _meshgrid(x, y, "ij"),
           [((3,), (2,))], **SQ),
    OpSpec("range_shape_size", lambda tf, x: tf.reshape(x, tf.shape(tf.transpose(x))) * tf.cast(tf.size(x), x.dtype)
           + tf.cast(tf.range(2), x.dtype), lambda x: x.reshape(3, 2) * 6 + np.arange(2), [((2, 3),)], **SQ),
    # TensorFlow's second order through a function call is zeros here, ours None: its backward
    # function reads the size from the forward call's exported intermediates, whose gradient
    # gets zeros for the call's other outputs; ours recomputes tf.size(x) from x (not
    # differentiable), so x is unconnected.  Both are d/dx of a gradient that is constant in x.
    OpSpec("shape_size_unknown_dims", lambda tf, x: _with_unknown_dims(tf, x), lambda x: x * x.size + x.shape[0],
           [((2, 3),)], tf_second_order_skip=((0, 0),)),
    # -- sorting
    OpSpec("sort", lambda tf, x: tf.sort(x), lambda x: _sort(x, -1, False), [((5,),), ((2, 3),), ((1,),)],
           sampler=distinct, **SQ),
    OpSpec("sort_descending_axis0", lambda tf, x: tf.sort(x, axis=0, direction="DESCENDING"),
           lambda x: _sort(x, 0, True), [((3, 2, 2),)], sampler=distinct, **SQ),
    OpSpec("argsort_gather", lambda tf, x: tf.gather(x, tf.argsort(x, direction="DESCENDING")),
           lambda x: x[np.argsort(-x, kind="stable")], [((4,),)], sampler=distinct, **SQ),
    OpSpec("invert_permutation_gather", lambda tf, x, p: tf.gather(x, tf.math.invert_permutation(p)),
           lambda x, p: x[np.argsort(p)], [((4,),)], extra=const(np.array([2, 0, 3, 1], np.int32)), **SQ),
]


define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


X = np.arange(12.0, dtype=np.float32).reshape(3, 4)


@pytest.mark.parametrize("call", [
    lambda tf, x: tf.reshape(x, [5]), lambda tf, x: tf.reshape(x, [-1, -1]), lambda tf, x: tf.reshape(x, [-1, 5]),
    lambda tf, x: tf.reshape(x, [-2, 6]), lambda tf, x: tf.reshape(tf.zeros([0, 3]), [3, 0, -1]),
    lambda tf, x: tf.transpose(x, [0]), lambda tf, x: tf.transpose(x, [0, 0]), lambda tf, x: tf.transpose(x, [1, 2]),
    lambda tf, x: tf.transpose(x, [-1, 0]),
    lambda tf, x: tf.broadcast_to(x, [3, 3]), lambda tf, x: tf.broadcast_to(x, [2, 3, 4]),
    lambda tf, x: tf.stack([x, tf.zeros([3])]), lambda tf, x: tf.stack([x, x], axis=3),
    lambda tf, x: tf.stack([x, x], axis=-3), lambda tf, x: tf.stack([1, 2.5]),
    lambda tf, x: tf.unstack(x, num=2), lambda tf, x: tf.unstack(x, axis=2), lambda tf, x: tf.unstack(tf.constant(1.0)),
    lambda tf, x: tf.unstack(tf.zeros([0, 2])),
    lambda tf, x: tf.concat([x, tf.zeros([3, 3])], 0), lambda tf, x: tf.concat([x, tf.zeros([3])], 0),
    lambda tf, x: tf.concat([x, tf.zeros([3, 4], tf.float64)], 0), lambda tf, x: tf.concat([x], 5),
    lambda tf, x: tf.concat([tf.constant(1.0), tf.constant(2.0)], 0), lambda tf, x: tf.concat([x, x], 2),
    lambda tf, x: tf.concat([x, x], tf.constant(-1)), lambda tf, x: tf.concat([[1, 2], [3]], 0),
    lambda tf, x: tf.split(x, 3, axis=1), lambda tf, x: tf.split(x, [1, -1, -1], axis=1),
    lambda tf, x: tf.split(x, [1, 2], axis=1), lambda tf, x: tf.split(x, [1, 5], axis=1),
    lambda tf, x: tf.split(x, 0, axis=1), lambda tf, x: tf.split(x, [4], axis=1), lambda tf, x: tf.split(x, 1, axis=5),
    lambda tf, x: tf.split(x, tf.constant([1, 3]), axis=1), lambda tf, x: tf.split(x, [2, 2], axis=1, num=3),
    lambda tf, x: tf.split(tf.zeros([0, 4]), 2), lambda tf, x: tf.split(x, np.int64(2), -1),
    lambda tf, x: tf.squeeze(tf.zeros([1, 3, 1]), axis=1), lambda tf, x: tf.squeeze(tf.zeros([1, 3, 1]), axis=3),
    lambda tf, x: tf.squeeze(tf.zeros([1, 3, 1]), axis=[0, 0]), lambda tf, x: tf.squeeze(tf.zeros([1, 3, 1]), 0),
    lambda tf, x: tf.expand_dims(x, 3), lambda tf, x: tf.expand_dims(x, -4), lambda tf, x: tf.expand_dims(x, [0]),
    lambda tf, x: tf.expand_dims(x, [0, 1]), lambda tf, x: tf.expand_dims(3.0, 0),
    lambda tf, x: tf.tile(x, [2]), lambda tf, x: tf.tile(x, [-1, 1]), lambda tf, x: tf.tile(x, tf.constant([1, 2])),
    lambda tf, x: tf.pad(x, [[1, 0]]), lambda tf, x: tf.pad(x, [[-1, 0], [0, 0]]), lambda tf, x: tf.pad(x, [1, 1]),
    lambda tf, x: tf.pad(x, [[1, 0], [0, 2]], constant_values=5), lambda tf, x: tf.pad(x, [[1, 1], [0, 0]], "reflect"),
    lambda tf, x: tf.pad(x, [[3, 0], [0, 2]], "REFLECT"), lambda tf, x: tf.pad(x, [[3, 0], [0, 2]], "SYMMETRIC"),
    lambda tf, x: tf.pad(x, [[4, 0], [0, 2]], "SYMMETRIC"), lambda tf, x: tf.pad(x, [[1, 0], [0, 2]], mode="foo"),
    lambda tf, x: tf.pad(tf.range(3), [[1, 1]], constant_values=5.5),
    lambda tf, x: tf.pad(tf.range(3), [[1, 1]], constant_values=7),
    lambda tf, x: tf.pad(x, [[1, 0], [0, 2]], constant_values=tf.constant(2.0, tf.float64)),
    lambda tf, x: tf.pad(tf.constant([True]), [[1, 1]]),
    lambda tf, x: tf.reverse(x, [2]), lambda tf, x: tf.reverse(x, [1, 1]), lambda tf, x: tf.reverse(x, 1),
    lambda tf, x: tf.reverse(x, [-1, 0]),
])
def test_shape_ops_like_tensorflow(call):
    same(lambda tf: call(tf, tf.constant(X)))


@pytest.mark.parametrize("call", [
    lambda tf: tf.one_hot([0, 2, -1, 5], 3), lambda tf: tf.one_hot([0, 2], 3, on_value=5, off_value=-1),
    lambda tf: tf.one_hot([0, 2], 3, on_value=5.0), lambda tf: tf.one_hot([0, 2], 3, off_value=2),
    lambda tf: tf.one_hot([0, 2], 3, on_value=5, off_value=1.0), lambda tf: tf.one_hot([0, 2], 3, dtype=tf.int64),
    lambda tf: tf.one_hot([0, 2], 3, on_value=1, dtype=tf.float32), lambda tf: tf.one_hot([[0, 2]], 3, axis=0),
    lambda tf: tf.one_hot([[0, 2]], 3, axis=1), lambda tf: tf.one_hot([[0, 2]], 3, axis=-2),
    lambda tf: tf.one_hot([[0, 2]], 3, axis=3), lambda tf: tf.one_hot(1, 3), lambda tf: tf.one_hot([0.0, 1.0], 3),
    lambda tf: tf.one_hot(tf.constant([0, 1], tf.int64), 3), lambda tf: tf.one_hot(tf.constant([0, 1], tf.uint8), 3),
    lambda tf: tf.one_hot([0, 1], -1), lambda tf: tf.one_hot([0, 1], 0),
    lambda tf: tf.one_hot([0, 1], 3, on_value=True, off_value=False),
    lambda tf: tf.one_hot([0, 1], 3, on_value=tf.constant(2.0), dtype=tf.float64),
])
def test_one_hot_like_tensorflow(call):
    same(call)


@pytest.mark.parametrize("call", [
    lambda tf, x: tf.clip_by_value(x, 5, 2), lambda tf, x: tf.clip_by_value(tf.range(5), 1, 3),
    lambda tf, x: tf.clip_by_value(tf.range(5), 1.0, 3.0), lambda tf, x: tf.clip_by_value(x, [1.0, 2, 3, 4], 5),
    lambda tf, x: tf.clip_by_value(x, tf.zeros([3, 4, 1]), 5), lambda tf, x: tf.clip_by_value(x, tf.zeros([2]), 5),
    lambda tf, x: tf.clip_by_value(x, tf.constant(1.0, tf.float64), 5),
    lambda tf, x: tf.clip_by_value(tf.constant([[0.0, 1.0, 2.0, 3.0, 4.0]]), [[1.0], [2.0]], 3.0),
])
def test_clip_by_value_like_tensorflow(call):
    same(lambda tf: call(tf, tf.constant(X)))


@pytest.mark.parametrize("lo,hi", [(1.0, 3.0), (3.0, 1.0), ([1.0] * 5, [3.0] * 5), (0.0, 0.0)])
def test_clip_by_value_gradient_at_ties(lo, hi):
    def program(tf):
        x, low, high = tf.constant([0.0, 1.0, 2.0, 3.0, 4.0]), tf.constant(lo), tf.constant(hi)
        with tf.GradientTape() as tape:
            tape.watch([x, low, high])
            y = tf.clip_by_value(x, low, high) * tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        return tape.gradient(y, [x, low, high])
    same(program)


@pytest.mark.parametrize("call", [
    lambda tf, x: tf.clip_by_norm(x, 5.0), lambda tf, x: tf.clip_by_norm(x, 50.0), lambda tf, x: tf.clip_by_norm(x, 5),
    lambda tf, x: tf.clip_by_norm(x, 5.0, axes=0), lambda tf, x: tf.clip_by_norm(x, [[5.0], [1.0], [20.0]], axes=1),
    lambda tf, x: tf.clip_by_norm(x, tf.ones([2, 3, 4])), lambda tf, x: tf.clip_by_norm(tf.zeros([3]), 1.0),
    lambda tf, x: tf.clip_by_norm(x, tf.constant(1.0, tf.float64)), lambda tf, x: tf.clip_by_norm(x, 1.0, axes=2),
])
def test_clip_by_norm_like_tensorflow(call):
    same(lambda tf: call(tf, tf.constant(X)))


@pytest.mark.parametrize("t,c", [([0.0, 0.0], 1.0), ([3.0, 4.0], 5.0), ([3.0, 4.0], 1.0), ([[0.0, 1.0], [0.0, 0.0]], 0.5)])
def test_clip_by_norm_gradient_like_tensorflow(t, c):
    """Gradients of t and clip_norm, at a zero norm (finite, through the guarded square root) and at
    a norm equal to clip_norm (maximum's tie) too."""
    def program(tf):
        x, cn = tf.constant(t), tf.constant(c)
        with tf.GradientTape() as tape:
            tape.watch([x, cn])
            y = tf.clip_by_norm(x, cn, axes=[-1]) * tf.constant(np.arange(1.0, 1.0 + np.size(t)).reshape(np.shape(t)),
                                                                  tf.float32)
        return y, tape.gradient(y, [x, cn])
    same(program)


def test_clip_by_norm_indexed_slices_like_tensorflow():
    def program(tf):
        s = tf.IndexedSlices(tf.constant([[3.0, 4.0], [0.0, 1.0]]), tf.constant([2, 0]), tf.constant([3, 2]))
        clipped = tf.clip_by_norm(s, 2.0)
        return clipped.values, clipped.indices, clipped.dense_shape
    same(program)


def test_newaxis_like_tensorflow():
    assert tapeflow.newaxis is None
    same(lambda tf: [tf.newaxis, tf.constant(X)[tf.newaxis, :, tf.newaxis, 1]])


def test_clip_by_value_indexed_slices():
    s = tapeflow.IndexedSlices(tapeflow.constant([[-2.0, 0.5]]), tapeflow.constant([1]), tapeflow.constant([3, 2]))
    clipped = tapeflow.clip_by_value(s, -1.0, 1.0)
    assert isinstance(clipped, tapeflow.IndexedSlices)
    np.testing.assert_array_equal(clipped.values.numpy(), [[-1.0, 0.5]])


@pytest.mark.parametrize("call", [
    lambda tf: tf.where([[True, False], [True, True]]), lambda tf: tf.where([1, 0, 2]),
    lambda tf: tf.where(tf.zeros([0, 2], tf.bool)), lambda tf: tf.where([True, False], 1.0, 2.0),
    lambda tf: tf.where([True, False], [1.0, 3.0], 2), lambda tf: tf.where([[True], [False]], [1.0, 3.0], 2.0),
])
def test_where_like_tensorflow(call):
    same(call)


def test_where_gradient_like_tensorflow():
    def program(tf):
        x, y = tf.constant([[1.0, 2.0, 3.0]]), tf.constant([[4.0], [5.0]])
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            z = tf.where([[True, False, True], [False, True, True]], x, y) ** 2
        return tape.gradient(z, [x, y])
    same(program)


@pytest.mark.parametrize("call", [
    lambda tf: tf.sort([3, 1, 2]), lambda tf: tf.sort([3.0, 1, 2], direction="DESCENDING"),
    lambda tf: tf.argsort([3.0, 1, 2]), lambda tf: tf.argsort([3.0, 1, 2, 1], stable=True, direction="DESCENDING"),
    lambda tf: tf.argsort([2, 1, 2, 1, 2]), lambda tf: tf.sort([[3.0, 1, 2]], axis=0),
    lambda tf: tf.sort([[3.0, 1], [0.5, 2]], axis=-2, direction="DESCENDING"),
    lambda tf: tf.argsort(tf.constant([[3, 1, 3], [0, 0, -1]], tf.int64), axis=0, direction="DESCENDING"),
    lambda tf: tf.sort([1.0, 2.0], direction="UP"),
])
def test_sort_like_tensorflow(call):
    same(call)


def test_sort_gradient_is_dense_like_tensorflow():
    def program(tf):
        x = tf.constant([3.0, 1.0, 2.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sort(x) * tf.constant([1.0, 2.0, 3.0])
        return tape.gradient(y, x)
    same(program)


def test_none_gradients_like_tensorflow():
    def program(tf):
        x, c = tf.constant([1.0, 2.0]), tf.constant(3.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, c])
            padded = tf.pad(x, [[1, 1]], constant_values=c)
            hot = tf.one_hot([0, 1], 2, on_value=c, off_value=c - 1.0)
            stopped = x * tf.stop_gradient(x)
            counted = tf.range(c, 5.0)
        return [tape.gradient(t, [x, c]) for t in (padded, hot, stopped, counted)]
    same(program)


def test_iter_uses_unstack_and_gradient_of_unused_rows_is_zero():
    def program(tf):
        x = tf.constant(X)
        with tf.GradientTape() as tape:
            tape.watch(x)
            first, _, last = x
            y = tf.reduce_sum(first * last)
        return tape.gradient(y, x)
    same(program)


def test_split_and_unstack_gradients_with_unused_outputs():
    def program(tf):
        x = tf.constant(X)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            a, _ = tf.split(x, 2, axis=1)
            b, _, _ = tf.split(x, [1, 2, -1], axis=0)
            rows = tf.unstack(x)
            y = tf.reduce_sum(a ** 2) + tf.reduce_sum(b) + tf.reduce_sum(rows[1])
        return tape.gradient(y, x), tape.gradient(tf.identity_n([a, b])[1], x)
    same(program)


_V = np.asarray([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


@pytest.mark.parametrize("call,arrays,dims", [
    (lambda tf, a, b, n: tf.linspace(a, b, n), [_V[0, :1], _V[1], np.int32(4)], [[None], [None], []]),
    (lambda tf, a, b, n: tf.linspace(a, b, n, axis=-1), [_V[0], _V[1], np.int32(1)], [[None], [3], []]),
    (lambda tf, a, b, n: tf.linspace(a, b, n), [_V[0, 0], _V[1, 0], np.int32(-2)], [[], [], []]),
    (lambda tf, x: tf.sort(x, axis=0, direction="DESCENDING"), [_V], [[None, None]]),
    (lambda tf, x, y: tf.stack(tf.meshgrid(x, y, indexing="ij")), [_V[0], _V[1, :2]], [[None], [None]]),
    (lambda tf, x: tf.tile(x, [0, 2]), [_V], [[None, 3]]),
    (lambda tf, x: tf.slice(x, [1, 1], [1, -1]), [_V], [[None, None]]),
    (lambda tf, x: tf.slice(x, [1, 1], [2, -1]), [_V], [[None, None]]),
], ids=lambda v: "")
def test_unknown_dims_like_tensorflow(call, arrays, dims):
    """Sizes known only when the graph runs (a count as a graph input, broadcasting of unknown sizes,
    blocks checked at run time): static shapes, values, gradients and errors as TensorFlow's."""
    same(lambda tf: traced_with_dims(tf, call, arrays, dims))


@pytest.mark.parametrize("perm", [[2, 2, 1], [3, 0, 1], [[0]], [-1, 0]])
def test_invert_permutation_errors(perm):
    same(lambda tf: tf.math.invert_permutation(tf.constant(perm)))
