"""Spec rows for reductions, scans, top_k and segment ops; differential tests for their
dtype rules, edge cases and errors against TensorFlow."""

import numpy as np
import pytest
import scipy.special as sp

from differential import same
from op_harness import (
    OpSpec, UnknownDimsError, any_real, away_from_zero, complex_of, define_graph_tests, define_tests,
    define_unknown_dims_tests, distinct, traced_static_and_values,
)

ALL_AXES = [((2, 3),), ((),), ((0,),), ((1,),)]
AXIS_1 = [((2, 3),), ((0, 3),), ((2, 1),), ((3, 0),)]
AXES_3D = [((2, 3, 2),), ((1, 3, 0),)]


def with_zeros(rng, shape, dtype):
    """Values away from zero with about a third of the entries exactly zero."""
    x = away_from_zero(rng, shape, dtype)
    return np.where(rng.uniform(size=shape) < 0.35, 0, x).astype(dtype)


def one_zero(rng, shape, dtype):
    """Values away from zero with exactly one zero in each row of the last axis."""
    x = away_from_zero(rng, shape, np.float64)
    if x.size:
        rows = x.reshape(-1, shape[-1])
        rows[np.arange(len(rows)), rng.integers(0, shape[-1], len(rows))] = 0
    return x.astype(dtype)


def _sorted_ids(rng, shapes):
    n = shapes[0][0]
    return [np.sort(rng.integers(0, 3, n)).astype(np.int32) + 1]


def _unsorted_ids(rng, shapes, num=4):
    ids_shape = shapes[0][:-1] if len(shapes[0]) > 1 else shapes[0]
    return [rng.integers(-1, num, ids_shape).astype(np.int32)]


def _covering_ids(rng, shapes, num=3):
    """Ids hitting every one of `num` segments (so max/min see no empty segment)."""
    n = shapes[0][0]
    return [rng.permutation(np.arange(n) % num).astype(np.int64)]


def _segment_ref(reduce, empty):
    def ref(data, ids):
        n = int(ids.max()) + 1 if ids.size else 0
        out = np.full((n,) + data.shape[1:], empty, data.dtype)
        for s in range(n):
            rows = data[ids == s]
            if len(rows):
                out[s] = reduce(rows, axis=0)
        return out
    return ref


def _unsorted_ref(reduce, empty, num):
    def ref(data, ids):
        out = np.full((num,) + data.shape[ids.ndim:], empty, data.dtype)
        for s in range(num):
            rows = data[ids == s]
            if len(rows):
                out[s] = reduce(rows, axis=0)
        return out
    return ref


def _scan_ref(fn, axis=0, exclusive=False, reverse=False, identity=0.0):
    def ref(x):
        if reverse:
            x = np.flip(x, axis)
        if exclusive:
            pad = np.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], identity)
            x = np.concatenate([pad, np.delete(x, -1, axis)], axis) if x.shape[axis] else x
        out = fn(x, axis=axis)
        return np.flip(out, axis) if reverse else out
    return ref


def _top_k_ref(k):
    def ref(x):
        idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        return [np.take_along_axis(x, idx, -1), idx.astype(np.int32)]
    return ref


def _logsumexp(x, axis=None, keepdims=False):
    return sp.logsumexp(x, axis=axis, keepdims=keepdims) if x.size else np.full(
        np.sum(x, axis=axis, keepdims=keepdims).shape, -np.inf)


SPECS = [
    # -- sums and means, every axis form
    OpSpec("reduce_sum_all", lambda tf, x: tf.reduce_sum(x), np.sum, ALL_AXES),
    OpSpec("reduce_sum_axis", lambda tf, x: tf.reduce_sum(x, axis=1), lambda x: x.sum(1), AXIS_1),
    OpSpec("reduce_sum_negative_keepdims", lambda tf, x: tf.reduce_sum(x, axis=[0, -1], keepdims=True),
           lambda x: x.sum((0, 2), keepdims=True), AXES_3D),
    OpSpec("reduce_sum_tensor_axis", lambda tf, x: tf.reduce_sum(x, axis=tf.constant([-2])), lambda x: x.sum(-2),
           [((2, 3),)]),
    OpSpec("reduce_sum_empty_axes", lambda tf, x: tf.reduce_sum(x, axis=[]), lambda x: x, [((2, 3),)]),
    OpSpec("reduce_sum_complex", lambda tf, x: tf.reduce_sum(x, axis=0), lambda x: x.sum(0), [((2, 3),)],
           sampler=complex_of(any_real)),
    OpSpec("reduce_mean_all", lambda tf, x: tf.reduce_mean(x), lambda x: np.mean(x) if x.size else np.nan, ALL_AXES),
    OpSpec("reduce_mean_axis", lambda tf, x: tf.reduce_mean(x, axis=-1, keepdims=True),
           lambda x: x.mean(-1, keepdims=True) if x.shape[-1] else np.full(x.shape[:-1] + (1,), np.nan), AXIS_1),
    OpSpec("reduce_mean_3d", lambda tf, x: tf.math.reduce_mean(x, axis=(0, 2)), lambda x: x.mean((0, 2)),
           [((2, 3, 2),)]),
    # -- products (exact gradients with zeros, second order included)
    OpSpec("reduce_prod_all", lambda tf, x: tf.reduce_prod(x), np.prod, ALL_AXES, sampler=away_from_zero),
    # TensorFlow's Prod gradient is built from cumprods, whose gradient (div_no_nan(..., x), no conjugate) is
    # wrong at zeros and for complex x: its second order is not compared there.
    OpSpec("reduce_prod_axis", lambda tf, x: tf.reduce_prod(x, axis=1), lambda x: x.prod(1), AXIS_1, sampler=with_zeros,
           tf_second_order_skip=((0, 0),)),
    OpSpec("reduce_prod_zeros", lambda tf, x: tf.reduce_prod(x, axis=[0, 2], keepdims=True),
           lambda x: x.prod((0, 2), keepdims=True), AXES_3D, sampler=with_zeros, tf_second_order_skip=((0, 0),)),
    OpSpec("reduce_prod_complex", lambda tf, x: tf.reduce_prod(x, axis=1), lambda x: x.prod(1), [((2, 3),)],
           sampler=complex_of(any_real), tf_second_order_skip=((0, 0),)),
    # -- max and min (distinct values: no ties)
    OpSpec("reduce_max_all", lambda tf, x: tf.reduce_max(x), np.max, [((2, 3),), ((),), ((1,),)], sampler=distinct),
    OpSpec("reduce_max_axis", lambda tf, x: tf.reduce_max(x, axis=1), lambda x: x.max(1), [((2, 3),), ((2, 1),), ((0, 3),)],
           sampler=distinct),
    OpSpec("reduce_min_keepdims", lambda tf, x: tf.reduce_min(x, axis=[-1, 0], keepdims=True),
           lambda x: x.min((0, 2), keepdims=True), [((2, 3, 2),)], sampler=distinct),
    OpSpec("reduce_min_all", lambda tf, x: tf.math.reduce_min(x), np.min, [((2, 3),), ((),)], sampler=distinct),
    # -- log-sum-exp, norms, moments
    OpSpec("reduce_logsumexp_all", lambda tf, x: tf.reduce_logsumexp(x), _logsumexp, ALL_AXES),
    OpSpec("reduce_logsumexp_axis", lambda tf, x: tf.reduce_logsumexp(x * 300.0, axis=1),
           lambda x: _logsumexp(300 * x, axis=1), AXIS_1, rtol=1e-5),
    OpSpec("reduce_logsumexp_keepdims", lambda tf, x: tf.math.reduce_logsumexp(x, axis=-1, keepdims=True),
           lambda x: _logsumexp(x, axis=-1, keepdims=True), [((2, 3),)]),
    OpSpec("reduce_euclidean_norm", lambda tf, x: tf.math.reduce_euclidean_norm(x, axis=1),
           lambda x: np.sqrt((x * x).sum(1)), [((2, 3),), ((2, 1),)], sampler=away_from_zero),
    OpSpec("reduce_euclidean_norm_all", lambda tf, x: tf.math.reduce_euclidean_norm(x, keepdims=True),
           lambda x: np.sqrt((x * x).sum(keepdims=True)), [((2, 3),), ((),)], sampler=away_from_zero),
    OpSpec("reduce_variance", lambda tf, x: tf.math.reduce_variance(x, axis=0), lambda x: x.var(0), [((3, 2),), ((1, 3),)]),
    OpSpec("reduce_std", lambda tf, x: tf.math.reduce_std(x, axis=-1, keepdims=True), lambda x: x.std(-1, keepdims=True),
           [((2, 3),)]),
    OpSpec("reduce_variance_complex", lambda tf, x: tf.math.reduce_variance(x), lambda x: x.var(), [((4,),)],
           sampler=complex_of(any_real)),
    # -- logical reductions, counts and arg-reductions (integer/bool results select values)
    OpSpec("reduce_any", lambda tf, x: tf.where(tf.reduce_any(x > 0.5, axis=1, keepdims=True), x, -x),
           lambda x: np.where((x > 0.5).any(1, keepdims=True), x, -x), [((2, 3),), ((3, 1),)]),
    OpSpec("reduce_all", lambda tf, x: tf.where(tf.reduce_all(x > -1.0, axis=0), x, 2 * x),
           lambda x: np.where((x > -1).all(0), x, 2 * x), [((2, 3),), ((0, 3),)]),
    OpSpec("count_nonzero", lambda tf, x: tf.cast(tf.math.count_nonzero(x > 0, axis=1), x.dtype) * tf.reduce_sum(x, 1),
           lambda x: np.count_nonzero(x > 0, axis=1) * x.sum(1), [((2, 3),)]),
    OpSpec("argmax", lambda tf, x: tf.reduce_max(x, -1) * tf.cast(tf.argmax(x, -1), x.dtype),
           lambda x: x.max(-1) * x.argmax(-1), [((2, 3),), ((3,),), ((2, 1),)], sampler=distinct),
    OpSpec("argmin", lambda tf, x: tf.reduce_min(x, 0) * tf.cast(tf.argmin(x, axis=0, output_type=tf.int32), x.dtype),
           lambda x: x.min(0) * x.argmin(0), [((2, 3),), ((3,),)], sampler=distinct),
    # -- scans
    OpSpec("cumsum", lambda tf, x: tf.cumsum(x), _scan_ref(np.cumsum), [((4,),), ((0,),), ((1,),)]),
    OpSpec("cumsum_exclusive_reverse", lambda tf, x: tf.cumsum(x, axis=1, exclusive=True, reverse=True),
           _scan_ref(np.cumsum, 1, True, True), [((2, 3),), ((2, 0),)]),
    OpSpec("cumsum_negative_axis", lambda tf, x: tf.math.cumsum(x, axis=-1, exclusive=True),
           _scan_ref(np.cumsum, 1, True), [((2, 3),)]),
    OpSpec("cumsum_complex", lambda tf, x: tf.cumsum(x, reverse=True), _scan_ref(np.cumsum, reverse=True), [((3,),)],
           sampler=complex_of(any_real)),
    OpSpec("cumprod", lambda tf, x: tf.math.cumprod(x), _scan_ref(np.cumprod), [((4,),), ((0,),), ((1,),)],
           sampler=away_from_zero),
    OpSpec("cumprod_exclusive_reverse", lambda tf, x: tf.math.cumprod(x, axis=1, exclusive=True, reverse=True),
           _scan_ref(np.cumprod, 1, True, True, 1.0), [((2, 4),)], sampler=away_from_zero),
    OpSpec("cumprod_reverse", lambda tf, x: tf.math.cumprod(x, axis=0, reverse=True),
           _scan_ref(np.cumprod, 0, False, True, 1.0), [((3, 2),)], sampler=away_from_zero),
    # With zeros tapeflow's gradient is exact; TensorFlow's is 0 at every zero: not compared.
    OpSpec("cumprod_zeros", lambda tf, x: tf.math.cumprod(x, axis=1, exclusive=True),
           _scan_ref(np.cumprod, 1, True, False, 1.0), [((3, 4),)], sampler=one_zero, check_tf_grad=False),
    OpSpec("cumprod_zeros_reverse", lambda tf, x: tf.math.cumprod(x, reverse=True),
           _scan_ref(np.cumprod, 0, False, True, 1.0), [((5,),)], sampler=one_zero, check_tf_grad=False),
    OpSpec("cumprod_many_zeros", lambda tf, x: tf.math.cumprod(x, axis=1), _scan_ref(np.cumprod, 1), [((3, 5),)],
           sampler=with_zeros, check_tf_grad=False, second_order=False),
    OpSpec("cumprod_complex", lambda tf, x: tf.math.cumprod(x), _scan_ref(np.cumprod), [((3,),)],
           sampler=complex_of(away_from_zero), check_tf_grad=False),
    OpSpec("cumulative_logsumexp", lambda tf, x: tf.math.cumulative_logsumexp(x),
           _scan_ref(np.logaddexp.accumulate), [((4,),), ((1,),), ((0,),), ((0, 3),)]),
    OpSpec("cumulative_logsumexp_exclusive_reverse",
           lambda tf, x: tf.math.cumulative_logsumexp(x, axis=1, exclusive=True, reverse=True)[:, :-1],
           lambda x: _scan_ref(np.logaddexp.accumulate, 1, True, True, -np.inf)(x)[:, :-1], [((2, 4),), ((2, 0),)]),
    # -- top_k
    OpSpec("top_k", lambda tf, x: tf.math.top_k(x, k=2), _top_k_ref(2), [((5,),), ((2, 4),), ((2, 3, 2),)],
           sampler=distinct),
    # (k is x.shape[-1]: None when every dim is unknown)
    OpSpec("top_k_all", lambda tf, x: tf.math.top_k(x, k=x.shape[-1]), _top_k_ref(3), [((2, 3),)], sampler=distinct,
           unknown_dims_error=UnknownDimsError(ValueError, modes=("all",), tapeflow_differs=(
               "tapeflow's top_k raises TypeError for k=None (int(None)); TensorFlow a ValueError: None values "
               "not supported"))),
    OpSpec("top_k_zero", lambda tf, x: tf.math.top_k(x, k=0).values + tf.reduce_sum(x), lambda x: np.zeros((2, 0)),
           [((2, 3),)], sampler=distinct),
    OpSpec("in_top_k", lambda tf, x, t: tf.where(tf.math.in_top_k(t, tf.cast(x, tf.float32), 2)[:, None], x, -x),
           lambda x, t: np.where((np.sum(x > x[np.arange(len(t)), t][:, None], 1) < 2)[:, None], x, -x),
           [((3, 4),)], sampler=distinct, extra=lambda rng, shapes: [rng.integers(0, 4, 3).astype(np.int32)]),
    # -- sorted segments
    OpSpec("segment_sum", lambda tf, x, ids: tf.math.segment_sum(x, ids), _segment_ref(np.sum, 0.0),
           [((5,),), ((4, 2),), ((1, 3),)], extra=_sorted_ids),
    OpSpec("segment_mean", lambda tf, x, ids: tf.math.segment_mean(x, ids), _segment_ref(np.mean, 0.0),
           [((5,),), ((4, 2),)], extra=_sorted_ids),
    OpSpec("segment_max", lambda tf, x, ids: tf.math.segment_max(x, ids), _segment_ref(np.max, 0.0),
           [((5,),), ((4, 2),)], sampler=distinct, extra=_sorted_ids),
    OpSpec("segment_min", lambda tf, x, ids: tf.math.segment_min(x, ids), _segment_ref(np.min, 0.0),
           [((5,),), ((4, 2),)], sampler=distinct, extra=_sorted_ids),
    OpSpec("segment_prod", lambda tf, x, ids: tf.math.segment_prod(x, ids), _segment_ref(np.prod, 1.0),
           [((5,),), ((4, 2),)], sampler=away_from_zero, extra=_sorted_ids),
    # -- unsorted segments (negative ids dropped)
    OpSpec("unsorted_segment_sum", lambda tf, x, ids: tf.math.unsorted_segment_sum(x, ids, 4),
           _unsorted_ref(np.sum, 0.0, 4), [((5,),), ((4, 2),), ((2, 3, 2),), ((0,),)], extra=_unsorted_ids),
    OpSpec("unsorted_segment_mean", lambda tf, x, ids: tf.math.unsorted_segment_mean(x, ids, 4),
           _unsorted_ref(np.mean, 0.0, 4), [((5,),), ((4, 2),)], extra=_unsorted_ids),
    OpSpec("unsorted_segment_sqrt_n", lambda tf, x, ids: tf.math.unsorted_segment_sqrt_n(x, ids, 4),
           _unsorted_ref(lambda r, axis: r.sum(axis) / np.sqrt(len(r)), 0.0, 4), [((5,),), ((4, 2),)],
           extra=_unsorted_ids),
    OpSpec("unsorted_segment_prod", lambda tf, x, ids: tf.math.unsorted_segment_prod(x, ids, 4),
           _unsorted_ref(np.prod, 1.0, 4), [((6,),), ((4, 2),)], sampler=away_from_zero, extra=_unsorted_ids),
    OpSpec("unsorted_segment_max", lambda tf, x, ids: tf.math.unsorted_segment_max(x, ids, 3),
           _unsorted_ref(np.max, 0.0, 3), [((6,),), ((4, 2),)], sampler=distinct, extra=_covering_ids),
    OpSpec("unsorted_segment_min", lambda tf, x, ids: tf.math.unsorted_segment_min(x, ids, 3),
           _unsorted_ref(np.min, 0.0, 3), [((6,),), ((3, 2),)], sampler=distinct, extra=_covering_ids),
]

define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


# -- edge cases, dtypes and errors compared with TensorFlow -----------------------------

PROGRAMS = {
    "int_reductions": lambda tf: [tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), 0),
                                  tf.reduce_mean(tf.constant([-1, -2])), tf.reduce_mean(tf.constant([-1, -4])),
                                  tf.reduce_mean(tf.constant([7, 8], tf.int64)),
                                  tf.reduce_prod(tf.constant([2, 3, 4])), tf.reduce_max(tf.constant([[1, 5], [7, 2]]), 1),
                                  tf.reduce_min(tf.constant([3, 1], tf.uint8)),
                                  tf.math.reduce_euclidean_norm(tf.constant([3, 4])),
                                  tf.math.reduce_euclidean_norm(tf.constant([1, 1]))],
    "empty_reductions": lambda tf: [tf.reduce_sum(tf.zeros([0])), tf.reduce_mean(tf.zeros([0, 2]), 0),
                                    tf.reduce_prod(tf.zeros([0])), tf.reduce_max(tf.zeros([0])),
                                    tf.reduce_min(tf.zeros([2, 0]), 1), tf.reduce_max(tf.zeros([0], tf.int32)),
                                    tf.reduce_logsumexp(tf.zeros([0])), tf.reduce_any(tf.zeros([0], tf.bool)),
                                    tf.reduce_all(tf.zeros([0], tf.bool))],
    "nan_and_inf": lambda tf: [tf.reduce_max(tf.constant([np.nan, 1.0])), tf.reduce_min(tf.constant([1.0, np.nan])),
                               tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf])),
                               tf.reduce_logsumexp(tf.constant([np.inf, 1.0])),
                               tf.argmax(tf.constant([1.0, np.nan, 3.0])), tf.argmin(tf.constant([np.nan, 2.0, 1.0])),
                               tf.math.top_k(tf.constant([1.0, np.nan, 2.0]), k=2)],
    "half_reductions": lambda tf: [tf.reduce_sum(tf.constant([1.0, 2.0], tf.float16)),
                                   tf.reduce_mean(tf.constant([1.0, 2.0], tf.bfloat16)),
                                   tf.reduce_logsumexp(tf.constant([1.0, 2.0], tf.float16)),
                                   tf.reduce_max(tf.constant([1.0, 2.0], tf.float16)),
                                   tf.math.cumsum(tf.constant([1.0, 2.0], tf.float16)),
                                   tf.math.cumulative_logsumexp(tf.constant([1.0, 2.0], tf.float16))],
    "keepdims_and_axes": lambda tf: [tf.reduce_sum(tf.ones([2, 3, 4]), axis=[-1, 0], keepdims=True),
                                     tf.reduce_max(tf.ones([2, 3]), axis=tf.constant(1, tf.int64)),
                                     tf.reduce_mean(tf.ones([2, 3]), axis=()),
                                     tf.reduce_sum(tf.constant(3.0), axis=[])],
    "count_nonzero": lambda tf: [tf.math.count_nonzero(tf.constant([1.0, 0.0, 2.0])),
                                 tf.math.count_nonzero(tf.constant([True, False])),
                                 tf.math.count_nonzero(tf.constant([[1, 0], [2, 3]]), axis=1, keepdims=True,
                                                       dtype=tf.int32),
                                 tf.math.count_nonzero(tf.constant([1.0, 0.0]), dtype=tf.float32)],
    "any_all": lambda tf: [tf.reduce_any(tf.constant([[True, False], [False, False]]), axis=1),
                           tf.reduce_all(tf.constant([[True, False], [True, True]]), axis=0, keepdims=True)],
    "argmax_variants": lambda tf: [tf.argmax(tf.constant([[1.0, 3.0], [4.0, 2.0]])),
                                   tf.argmax(tf.constant([[1, 3], [4, 2]]), axis=-1, output_type=tf.int32),
                                   tf.argmin(tf.constant([[1.0, 2.0]]), axis=tf.constant(1)),
                                   tf.argmax(tf.constant([True, False, True])),
                                   tf.argmax(tf.constant([2.0, 5.0, 5.0])), tf.argmin(tf.zeros([3, 0]), axis=0)],
    "scans_int": lambda tf: [tf.cumsum(tf.constant([1, 2, 3]), exclusive=True),
                             tf.math.cumprod(tf.constant([1, 2, 3]), exclusive=True, reverse=True),
                             tf.cumsum(tf.constant([[1, 2], [3, 4]], tf.int64), axis=1, reverse=True),
                             tf.math.cumulative_logsumexp(tf.constant([1.0, 2.0, 3.0]), exclusive=True)],
    "top_k_variants": lambda tf: [tf.math.top_k(tf.constant([1.0, 3.0, 2.0, 3.0]), k=2),
                                  tf.math.top_k(tf.constant([1, 3, 2], tf.uint8), k=2),
                                  tf.math.top_k(tf.constant([[5, 1, 4], [2, 2, 9]]), k=tf.constant(3)),
                                  tf.math.top_k(tf.constant([1.0, 3.0]), k=0),
                                  tf.math.top_k(tf.constant([1.0, 3.0, 2.0]), index_type=tf.int64)],
    "segments_edge": lambda tf: [tf.math.segment_sum(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3])),
                                 tf.math.segment_max(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3])),
                                 tf.math.segment_min(tf.constant([1, 2, 3]), tf.constant([1, 1, 2])),
                                 tf.math.segment_prod(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3])),
                                 tf.math.segment_mean(tf.constant([-1, -2, 5]), tf.constant([0, 0, 1])),
                                 tf.math.segment_mean(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3], tf.int64)),
                                 tf.math.segment_sum(tf.zeros([0, 2]), tf.zeros([0], tf.int32))],
    "unsorted_segments_edge": lambda tf: [
        tf.math.unsorted_segment_max(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3]), 5),
        tf.math.unsorted_segment_min(tf.constant([1, 2, 3]), tf.constant([0, 0, 3]), 5),
        tf.math.unsorted_segment_prod(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, -1, 3]), 5),
        tf.math.unsorted_segment_mean(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3]), 5),
        tf.math.unsorted_segment_sqrt_n(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 3]), 5),
        tf.math.unsorted_segment_sum(tf.constant([[1, 2], [3, 4]]), tf.constant([[1, 0], [1, -1]]), 2)],
    "monotonic_and_zero_fraction": lambda tf: [tf.math.is_non_decreasing([1, 1, 2]), tf.math.is_strictly_increasing([1, 1, 2]),
                                               tf.math.is_non_decreasing([]),
                                               tf.math.is_strictly_increasing(tf.constant([[1.0, 2.0], [3.0, 4.0]])),
                                               tf.math.zero_fraction(tf.constant([0, 1, 0, 2])),
                                               tf.math.zero_fraction(tf.zeros([0]))],
    "in_top_k": lambda tf: [tf.math.in_top_k(tf.constant([0, 2]), tf.constant([[1.0, 1.0, 0.0], [0.0, 1.0, np.inf]]), 1),
                            tf.math.in_top_k(tf.constant([3, 1], tf.int64), tf.constant([[1.0, 1.0, 0.0], [3.0, 2.0, 1.0]]), 2),
                            tf.math.in_top_k(tf.constant([0]), tf.constant([[np.nan, 1.0]]), 2)],
    "variance_complex_real_dtype": lambda tf: [tf.math.reduce_variance(tf.constant([1 + 1j, 2 + 0j])),
                                               tf.math.reduce_std(tf.constant([1.0, 3.0], tf.float64))],
}

ERRORS = {
    "axis_out_of_range": lambda tf: tf.reduce_sum(tf.ones([2, 3]), axis=2),
    "negative_axis_out_of_range": lambda tf: tf.reduce_max(tf.ones([2, 3]), axis=-3),
    "duplicate_axes": lambda tf: tf.reduce_mean(tf.ones([2, 3]), axis=[0, -2]),
    "axis_on_scalar": lambda tf: tf.reduce_sum(tf.constant(1.0), axis=0),
    "float_axis": lambda tf: tf.reduce_sum(tf.ones([2, 3]), axis=1.0),
    "sum_of_bool": lambda tf: tf.reduce_sum(tf.constant([True])),
    "mean_of_bool": lambda tf: tf.reduce_mean(tf.constant([True])),
    "max_of_complex": lambda tf: tf.reduce_max(tf.constant([1j])),
    "any_of_float": lambda tf: tf.reduce_any(tf.constant([1.0])),
    "logsumexp_of_int": lambda tf: tf.reduce_logsumexp(tf.constant([1, 2])),
    "std_of_int": lambda tf: tf.math.reduce_std(tf.constant([1, 2])),
    "argmax_empty_axis": lambda tf: tf.argmax(tf.zeros([0, 3])),
    "argmax_scalar": lambda tf: tf.argmax(tf.constant(3.0)),
    "argmax_axis_out_of_range": lambda tf: tf.argmax(tf.ones([1, 2]), axis=2),
    "argmax_float_output": lambda tf: tf.argmax(tf.ones([2]), output_type=tf.float32),
    "argmin_of_complex": lambda tf: tf.argmin(tf.constant([1j])),
    "cumsum_axis_out_of_range": lambda tf: tf.cumsum(tf.constant([1.0, 2.0]), axis=5),
    "cumsum_scalar": lambda tf: tf.cumsum(tf.constant(1.0)),
    "cumulative_logsumexp_of_int": lambda tf: tf.math.cumulative_logsumexp(tf.constant([1])),
    "top_k_too_large": lambda tf: tf.math.top_k(tf.constant([1.0, 3.0, 2.0]), k=5),
    "top_k_negative": lambda tf: tf.math.top_k(tf.constant([1.0, 3.0]), k=-1),
    "top_k_scalar": lambda tf: tf.math.top_k(tf.constant(1.0)),
    "top_k_of_bool": lambda tf: tf.math.top_k(tf.constant([True, False])),
    "segment_ids_unsorted": lambda tf: tf.math.segment_sum(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 2, 1])),
    "segment_ids_length": lambda tf: tf.math.segment_sum(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0])),
    "segment_ids_negative": lambda tf: tf.math.segment_max(tf.constant([1.0, 2.0, 3.0]), tf.constant([-1, 0, 0])),
    "segment_ids_float": lambda tf: tf.math.segment_sum(tf.constant([1.0, 2.0]), tf.constant([0.0, 0.0])),
    "unsorted_id_too_large": lambda tf: tf.math.unsorted_segment_sum(tf.constant([1.0, 2.0]), tf.constant([0, 5]), 5),
    "unsorted_ids_shape": lambda tf: tf.math.unsorted_segment_max(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0]), 2),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_forward_like_tensorflow(name):
    same(PROGRAMS[name])


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_tensorflow(name):
    same(ERRORS[name])


def _grads(reduce, values, **kwargs):
    def program(tf):
        x = tf.constant(values)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = reduce(tf, x, **kwargs)
        return tape.gradient(y, x)
    return program


TIE_PROGRAMS = {
    "reduce_max_ties": _grads(lambda tf, x: tf.reduce_max(x, axis=1) * tf.constant([1.0, 2.0]),
                              [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]),
    "reduce_min_ties_keepdims": _grads(lambda tf, x: tf.reduce_min(x, axis=0, keepdims=True),
                                       [[1.0, 3.0], [1.0, 0.0]]),
    "reduce_max_all_ties": _grads(lambda tf, x: tf.reduce_max(x), [[4.0, 1.0], [4.0, 4.0]]),
    "segment_max_ties": _grads(lambda tf, x: tf.math.segment_max(x, tf.constant([0, 0, 1])),
                               [5.0, 5.0, 1.0]),
    "unsorted_segment_min_ties": _grads(
        lambda tf, x: tf.math.unsorted_segment_min(x, tf.constant([1, 1, -1, 1]), 2), [2.0, 2.0, 0.0, 3.0]),
    "reduce_prod_zeros": _grads(lambda tf, x: tf.reduce_prod(x, axis=1), [[0.0, 2.0, 3.0], [0.0, 0.0, 4.0]]),
    "segment_prod_zeros": _grads(lambda tf, x: tf.math.segment_prod(x, tf.constant([0, 0, 0, 1, 1])),
                                 [0.0, 2.0, 3.0, 0.0, 0.0]),
    "unsorted_segment_prod_zeros": _grads(lambda tf, x: tf.math.unsorted_segment_prod(x, tf.constant([0, 0, 1, 1]), 2),
                                          [0.0, 2.0, 0.0, 0.0]),
    "top_k_ties": _grads(lambda tf, x: tf.math.top_k(x, k=2).values * tf.constant([1.0, 2.0]), [1.0, 3.0, 2.0, 3.0]),
    "argmax_no_gradient": _grads(lambda tf, x: tf.cast(tf.argmax(x), tf.float32), [1.0, 2.0]),
    "count_nonzero_no_gradient": _grads(lambda tf, x: tf.cast(tf.math.count_nonzero(x), tf.float32), [1.0, 0.0]),
    "logsumexp_large": _grads(lambda tf, x: tf.reduce_logsumexp(x), [1000.0, 1000.0, -1000.0]),
    "euclidean_norm_zero": _grads(lambda tf, x: tf.math.reduce_euclidean_norm(x), [0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(TIE_PROGRAMS))
def test_gradients_like_tensorflow(name):
    same(TIE_PROGRAMS[name])


def test_top_k_returns_named_tuple():
    import tapeflow as tf
    out = tf.math.top_k(tf.constant([[1.0, 3.0, 2.0]]), k=2, sorted=False)
    values, indices = out
    assert type(out).__name__ == "TopKV2" and out.values is values and out.indices is indices
    assert sorted(values.numpy().ravel().tolist()) == [2.0, 3.0] and indices.dtype == tf.int32


def test_cumprod_gradient_exact_with_zeros():
    import tapeflow as tf
    x = np.array([1.5, 0.0, 2.0, 0.0, 3.0])
    for exclusive in (False, True):
        for reverse in (False, True):
            t, n = tf.test.compute_gradient(lambda v: tf.math.cumprod(v, exclusive=exclusive, reverse=reverse), [x])
            np.testing.assert_allclose(t[0], n[0], atol=1e-6)


def test_logsumexp_stable():
    import tapeflow as tf
    x = tf.constant([1000.0, 1000.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_logsumexp(x)
    np.testing.assert_allclose(y.numpy(), 1000.0 + np.log(2.0))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.5, 0.5])


def test_sizes_known_only_when_the_graph_runs():
    # num_segments, top_k's k and reduction axes computed from run-time shapes, with gradients
    def fn(tf, x, ids):
        n = tf.shape(x)[0]
        with tf.GradientTape() as tape:
            tape.watch(x)
            a = tf.math.unsorted_segment_sum(x, ids, n)
            b = tf.math.unsorted_segment_max(x, ids, n + 1)[:n]
            c = tf.math.unsorted_segment_prod(x, ids, tf.constant(3))
            d = tf.math.top_k(x, k=tf.shape(x)[1] - 1)
            e = tf.reduce_prod(x, axis=tf.rank(x) - 1)
            y = sum(tf.reduce_sum(t) for t in (a, b, c, d.values, e))
        return [a, b, c, d.values, d.indices, e, tape.gradient(y, x)]
    x = np.random.default_rng(0).uniform(0.5, 1.5, (3, 4)).astype(np.float32)
    ids = np.array([0, 2, 0], np.int32)
    same(lambda tf: traced_static_and_values(tf, fn, [([None, None], tf.float32), ([None], tf.int32)], x, ids), rtol=1e-5)


def test_unknown_dims_errors_at_run_time():
    def prog(tf):
        f = tf.function(lambda x, ids: tf.math.unsorted_segment_sum(x, ids, 2),
                        input_signature=[tf.TensorSpec([None]), tf.TensorSpec([None], tf.int32)])
        return f(tf.ones([3]), tf.constant([0, 1, 2]))
    same(prog)
