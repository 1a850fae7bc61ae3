"""Spec rows and TF-differential tests of `unique` and `unique_with_counts`: values, dtypes,
static shapes, errors, and the LookupError TensorFlow raises when a gradient through them is
asked for (eagerly, inside tf.function and with TF1 `tf.gradients`).
"""

import numpy as np
import pytest

from differential import same
from op_harness import OpSpec, define_graph_tests, define_tests, define_unknown_dims_tests, traced_static_and_values


def const(*arrays):
    """An `extra` giving fixed non-differentiable inputs."""
    return lambda rng, shapes: [np.asarray(a) for a in arrays]


def _unique(x):
    """NumPy reference: distinct values in order of first occurrence, and the index of each entry's value."""
    values, first, inverse, count = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    slot = np.empty(len(order), np.int64)
    slot[order] = np.arange(len(order))
    return x[first[order]], slot[inverse.reshape(-1)], count[order]


def _halves(rng, shape, dtype):
    """Values on a grid of halves, so that repeats occur."""
    return (rng.integers(-3, 4, shape) / 2.0).astype(dtype)


SPECS = [
    # Not differentiable (no input to differentiate, no second order): the forward values and
    # dtypes against NumPy and TensorFlow.  Not vectorized: each example's count of distinct
    # values is read from its values (the rule raises NotBatchable, as for Where).
    OpSpec("unique", lambda tf, x: tf.unique(x), lambda x: [_unique(x)[0], _unique(x)[1].astype(np.int32)],
           [((8,),), ((0,),), ((1,),)], sampler=_halves, wrt=(), second_order=False, vmap=False),
    OpSpec("unique_with_counts_int64", lambda tf, x: tf.unique_with_counts(x, out_idx=tf.int64),
           lambda x: list(_unique(x)), [((9,),)], sampler=_halves, wrt=(), second_order=False, vmap=False),
    # The indices of a constant's unique values used to gather a differentiable tensor.
    OpSpec("unique_idx_gather", lambda tf, x, v: tf.gather(x, tf.unique(v).idx),
           lambda x, v: x[_unique(v)[1]], [((3,),), ((3, 2),)], extra=const([5, 1, 5, 7, 1]), square_outputs=True),
    OpSpec("unique_with_counts_weights", lambda tf, x, v: x * tf.cast(tf.unique_with_counts(v).count, x.dtype),
           lambda x, v: x * _unique(v)[2], [((3,),)], extra=const([2, 0, 2, 9])),
]

define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


@pytest.mark.parametrize("call", [
    lambda tf: tf.unique([4, 5, 4, 2, 5]), lambda tf: tf.unique([4.0, 5.0, 4.0], out_idx=tf.int64),
    lambda tf: tf.unique(tf.constant([0.0, -0.0, np.nan, np.nan, 1.0])), lambda tf: tf.unique([True, False, True]),
    lambda tf: tf.unique(tf.constant([3, 1, 3], tf.int8)), lambda tf: tf.unique(tf.zeros([0])),
    lambda tf: tf.unique(tf.constant([1.5, 2.5, 1.5], tf.float16)), lambda tf: tf.unique(tf.constant([7], tf.int64)),
    lambda tf: tf.unique_with_counts([4, 5, 4, 2, 5]), lambda tf: tf.unique_with_counts([1.5, 1.5], out_idx=tf.int64),
    lambda tf: tf.unique(tf.ones([2, 2])), lambda tf: tf.unique(1.0), lambda tf: tf.unique_with_counts(tf.ones([2, 2])),
    lambda tf: tf.unique([1.0], out_idx=tf.float32), lambda tf: tf.unique([1.0], out_idx=tf.int16),
    lambda tf: tf.unique([3, 1, 3]).y, lambda tf: tf.unique_with_counts([3, 1, 3]).count,
])
def test_unique_like_tensorflow(call):
    same(call)


@pytest.mark.parametrize("dims", [[None], None, [4], [2, 2]])
def test_unique_static_shapes_like_tensorflow(dims):
    """In a graph: y and count have an unknown length, idx x's shape (any rank); Unique, but not
    UniqueWithCounts, checks the rank while building."""
    def program(tf):
        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.float32, dims)
            outs = []
            for f in (tf.unique, tf.unique_with_counts):
                try:
                    outs.append([t.shape for t in f(x, out_idx=tf.int64)] + [f(x).idx.dtype])
                except ValueError as e:
                    outs.append(type(e).__name__)
            return outs
    same(program)


def test_unique_in_function_like_tensorflow():
    def fn(tf, x):
        u = tf.unique_with_counts(x)
        return u.y, u.idx, u.count, tf.gather(u.y, u.idx)
    same(lambda tf: traced_static_and_values(tf, fn, [([None], tf.float32)], tf.constant([2.0, 1.0, 2.0, 3.0])))


def _tape_program(f):
    def program(tf):
        x = tf.constant([1.0, 2.0, 1.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(tf, x)
        return tape.gradient(y, x)
    return program


_THROUGH = [
    lambda tf, x: tf.unique(x).y, lambda tf, x: tf.unique_with_counts(x).y * 2.0,
    lambda tf, x: tf.reduce_sum(tf.unique(x * 3.0)[0]),
]


@pytest.mark.parametrize("f", _THROUGH)
def test_gradient_raises_lookup_error_eagerly_like_tensorflow(f):
    same(_tape_program(f))


@pytest.mark.parametrize("f", _THROUGH)
def test_gradient_raises_lookup_error_in_function_like_tensorflow(f):
    same(lambda tf: tf.function(_tape_program(f), autograph=False)(tf))


@pytest.mark.parametrize("f", _THROUGH)
def test_gradient_raises_lookup_error_in_tf1_graphs_like_tensorflow(f):
    def program(tf):
        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None])
            return tf.gradients(f(tf, x), x)
    same(program)


def test_gradient_through_the_indices_only_like_tensorflow():
    """Only the integer output is used: the gradient does not pass through Unique (no error)."""
    same(_tape_program(lambda tf, x: tf.gather(x, tf.unique(x).idx) * tf.constant([1.0, 2.0, 3.0])))
