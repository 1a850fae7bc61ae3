"""Segment reductions (`tf.math.segment_*`, `tf.math.unsorted_segment_*`).

Sorted segment ops take a 1-D non-decreasing `segment_ids` matching the first
dimension of `data`; the output has `segment_ids[-1] + 1` rows and empty
segments hold 0 (1 for products).  Unsorted ops take `segment_ids` of any
leading shape of `data` and `num_segments`; negative ids are dropped and empty
segments hold the reduction's identity (the dtype's lowest/highest value for
max/min).  `unsorted_segment_sum`, the adjoint of gather, is with the gathers
in `scatter_ops`.
"""

import functools

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.dtypes import NUMERIC_TYPES, REAL_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import ALL, execute, op
from tapeflow.framework.shapes.symbolic_tensors import Meta
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import scatter_ops
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.basic_ops import cast, zeros_like
from tapeflow.ops.math_ops import equal, greater, greater_equal, logical_and, maximum, ones_like, where
from tapeflow.ops.scatter_ops import (
    _gather_dropping_negatives, _ids_shaped_like, _trailing_ones, _unsorted_op, _unsorted_reduce, _unsorted_segment_op,
    _with_none_for_sizes, unsorted_segment_sum,
)
from tapeflow.ops.unary_ops import sqrt

_HALF = frozenset((np.dtype(np.float16), np.dtype(dtypes.bfloat16._np)))


def _lowest(dtype):
    return -dtypes.as_dtype(dtype).max if dtype.kind == "f" or dtype in _HALF else np.iinfo(dtype).min


def _highest(dtype):
    return dtypes.as_dtype(dtype).max if dtype.kind == "f" or dtype in _HALF else np.iinfo(dtype).max


def _ids_tensor(segment_ids, op_type):
    ids = convert_to_tensor(segment_ids)
    if ids._value.dtype not in (np.int32, np.int64):
        raise InvalidArgumentError(None, op_type, f"Value for attr 'Tindices' of {ids.dtype.name} is not in the list "
                                   f"of allowed values: int32, int64 [Op:{op_type}]")
    return ids


def _at_least_one(counts):
    """Counts with empty segments (never gathered back) set to 1, so dividing by them is clean."""
    return maximum(counts, ones_like(counts))


# -- sorted segments ----------------------------------------------------------------

def _sorted_segments(data, ids):
    """Checks sorted segment ids; returns (number of segments, start of each run, id of each run)."""
    if ids.ndim != 1 or ids.shape[0] != (data.shape[0] if data.ndim else None):
        raise ValueError("segment_ids should be the same size as dimension 0 of input.")
    if ids.size == 0:
        return 0, ids, ids
    if np.any(ids[1:] < ids[:-1]):
        raise ValueError("segment ids are not increasing")
    if ids[0] < 0:
        raise ValueError(f"Segment id {int(ids[0])} out of range [0, {int(ids[-1]) + 1}), possibly because "
                         f"'segment_ids' input is not sorted.")
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    return int(ids[-1]) + 1, starts, ids[starts]


def _segment_reduce(ufunc, empty, data, ids, dtype=None):
    n, starts, run_ids = _sorted_segments(data, ids)
    out = np.full((n,) + data.shape[1:], empty, data.dtype)
    if len(starts):
        out[run_ids] = ufunc.reduceat(data, starts, axis=0, dtype=dtype or data.dtype)
    return out


def _segment_counts(data, ids):
    """Rows per sorted segment, shaped to broadcast against the output."""
    n = int(ids[-1]) + 1 if ids.size else 0
    return np.bincount(ids, minlength=n).reshape((n,) + (1,) * (data.ndim - 1)) if ids.size else np.zeros(
        (0,) + (1,) * (data.ndim - 1), np.int64)


def _segment_shape(data, segment_ids):
    """Sorted segment ops: [number of segments] + data.shape[1:].  The number of segments
    (segment_ids[-1] + 1) depends on the ids' values: like TensorFlow's shape function, the
    rule leaves it unknown, even for constant ids."""
    if len(segment_ids.shape) != 1:
        raise ValueError(f"segment_ids must be 1-D, got shape {list(segment_ids.shape)}.")
    if not data.shape:
        raise ValueError("data must be at least 1-D to be split into segments.")
    if None not in (data.shape[0], segment_ids.shape[0]) and data.shape[0] != segment_ids.shape[0]:
        raise ValueError(f"segment_ids (shape {list(segment_ids.shape)}) must match the first dimension of data "
                         f"(shape {list(data.shape)}).")
    return [Meta((None,) + tuple(data.shape[1:]), data.dtype)]


def _sorted_batch(op_, xs, batched, attrs):
    """Sorted segment ops on a batch of data with shared ids: the batch moved behind the segmented axis."""
    if batched[1]:
        raise batching.NotBatchable                     # ids per example: each example its own segment count
    swap = (1, 0) + tuple(range(2, xs[0]._value.ndim))
    out = execute(op_, (primitives._transpose_op(xs[0], swap), xs[1]), attrs)     # [S, B, R...]
    return primitives._transpose_op(out, swap), True


_segment_op = functools.partial(op, same_dtype=False, shape=_segment_shape, batch=batching.FamilyRule(_sorted_batch))


@_segment_op("SegmentSum", dtypes=NUMERIC_TYPES)
def _segment_sum(data, segment_ids):
    return _segment_reduce(np.add, 0, data, segment_ids)


@_segment_sum.def_grad(reads_inputs=(1,))
def _segment_sum_grad(op, dy):
    return scatter_ops.gather(dy, op.inputs[1]), None     # each row gets its segment's gradient


@_segment_op("SegmentMean", dtypes=NUMERIC_TYPES)
def _segment_mean(data, segment_ids):
    total = _segment_reduce(np.add, 0, data, segment_ids)
    counts = np.maximum(_segment_counts(data, segment_ids), 1)
    if data.dtype.kind in "iu":                          # integer means truncate toward zero
        return np.where(total < 0, -(-total // counts), total // counts).astype(data.dtype)
    return (total / counts).astype(data.dtype)


@_segment_mean.def_grad(reads_inputs=(1,))
def _segment_mean_grad(op, dy):
    data, ids = op.inputs                               # each row gets dy / (rows in its segment)
    extra = (1,) * (data._value.ndim - 1)
    if None in ids._value.shape:
        ones = _trailing_ones(ones_like(ids, dtype=dtypes.as_dtype(dy._value.dtype)), len(extra))
    else:
        ones = Tensor(np.ones(ids._value.shape + extra, dy._value.dtype))
    counts = segment_sum(ones, ids)
    return scatter_ops.gather(dy / _at_least_one(counts), ids), None


@_segment_op("SegmentMax", dtypes=REAL_TYPES)
def _segment_max(data, segment_ids):
    return _segment_reduce(np.maximum, 0, data, segment_ids)


@_segment_op("SegmentMin", dtypes=REAL_TYPES)
def _segment_min(data, segment_ids):
    return _segment_reduce(np.minimum, 0, data, segment_ids)


def _segment_min_or_max_grad(op, dy):
    # The segment's gradient goes to the rows equal to its result, split evenly among ties.
    data, ids = op.inputs
    chosen = equal(data, scatter_ops.gather(op.outputs[0], ids))
    count = segment_sum(cast(chosen, dy._value.dtype), ids)
    return where(chosen, scatter_ops.gather(dy / _at_least_one(count), ids), zeros_like(data)), None


_segment_max.def_grad(_segment_min_or_max_grad, reads_inputs=ALL, reads_outputs=True)
_segment_min.def_grad(_segment_min_or_max_grad, reads_inputs=ALL, reads_outputs=True)


@_segment_op("SegmentProd", dtypes=NUMERIC_TYPES)
def _segment_prod(data, segment_ids):
    return _segment_reduce(np.multiply, 1, data, segment_ids)


@_segment_prod.def_grad(reads_inputs=ALL, reads_outputs=True)
def _segment_prod_grad(op, dy):
    # d prod / d x_i = prod / x_i; with zeros in the segment: the product of the other
    # rows for the one zero row, and 0 everywhere when a segment holds two zeros or more.
    data, ids = op.inputs
    is_zero = equal(data, zeros_like(data))
    zeros = segment_sum(cast(is_zero, dtypes.int32), ids)
    dy = where(greater(zeros, ones_like(zeros)), zeros_like(dy), dy)
    safe = where(is_zero, ones_like(data), data)
    nonzero_prod = segment_prod(safe, ids)
    partial = where(is_zero, scatter_ops.gather(nonzero_prod, ids), scatter_ops.gather(op.outputs[0], ids) / safe)
    return scatter_ops.gather(dy, ids) * partial, None


def _sorted_op(kernel, data, segment_ids):
    data = convert_to_tensor(data)
    return execute(kernel, (data, _ids_tensor(segment_ids, kernel.type)), {})


@tf_export("math.segment_sum")
def segment_sum(data, segment_ids, name=None):
    """Sums the rows of `data` in each segment of the sorted `segment_ids`.

    Raises:
      InvalidArgumentError: ids not sorted, negative, or not matching `data`'s first dimension.

    >>> import tapeflow as tf
    >>> tf.math.segment_sum(tf.constant([1.0, 2.0, 3.0]), tf.constant([0, 0, 2])).numpy()
    array([3., 0., 3.], dtype=float32)
    """
    return _sorted_op(_segment_sum, data, segment_ids)


@tf_export("math.segment_mean")
def segment_mean(data, segment_ids, name=None):
    """Means of the rows of `data` in each sorted segment (0 for empty segments)."""
    return _sorted_op(_segment_mean, data, segment_ids)


@tf_export("math.segment_max")
def segment_max(data, segment_ids, name=None):
    """Maxima of the rows of `data` in each sorted segment (0 for empty segments)."""
    return _sorted_op(_segment_max, data, segment_ids)


@tf_export("math.segment_min")
def segment_min(data, segment_ids, name=None):
    """Minima of the rows of `data` in each sorted segment (0 for empty segments)."""
    return _sorted_op(_segment_min, data, segment_ids)


@tf_export("math.segment_prod")
def segment_prod(data, segment_ids, name=None):
    """Products of the rows of `data` in each sorted segment (1 for empty segments)."""
    return _sorted_op(_segment_prod, data, segment_ids)


# -- unsorted segments ----------------------------------------------------------------


@_unsorted_segment_op("UnsortedSegmentMax", dtypes=REAL_TYPES)
def _unsorted_segment_max(data, segment_ids, num_segments):
    return _unsorted_reduce(np.maximum, _lowest(data.dtype), data, segment_ids, num_segments)


@_unsorted_segment_op("UnsortedSegmentMin", dtypes=REAL_TYPES)
def _unsorted_segment_min(data, segment_ids, num_segments):
    return _unsorted_reduce(np.minimum, _highest(data.dtype), data, segment_ids, num_segments)


def _unsorted_min_or_max_grad(op, dy):
    # The segment's gradient goes to the rows equal to its result, split evenly among ties.
    data, ids = op.inputs[:2]
    n = _num_segments(op)
    valid = _ids_shaped_like(greater_equal(ids, zeros_like(ids)), data)  # broadcast by logical_and
    chosen = logical_and(equal(data, _gather_dropping_negatives(op.outputs[0], ids)), valid)
    count = unsorted_segment_sum(cast(chosen, dy._value.dtype), ids, n)
    dx = where(chosen, _gather_dropping_negatives(dy / _at_least_one(count), ids), zeros_like(data))
    return _with_none_for_sizes(op, dx)


_unsorted_segment_max.def_grad(_unsorted_min_or_max_grad, reads_inputs=ALL, reads_outputs=True)
_unsorted_segment_min.def_grad(_unsorted_min_or_max_grad, reads_inputs=ALL, reads_outputs=True)


@_unsorted_segment_op("UnsortedSegmentProd", dtypes=NUMERIC_TYPES)
def _unsorted_segment_prod(data, segment_ids, num_segments):
    return _unsorted_reduce(np.multiply, 1, data, segment_ids, num_segments)


@_unsorted_segment_prod.def_grad(reads_inputs=ALL, reads_outputs=True)
def _unsorted_segment_prod_grad(op, dy):
    # As for SegmentProd: prod / x_i, with the one-zero and two-zeros cases handled apart.
    data, ids = op.inputs[:2]
    n = _num_segments(op)
    is_zero = equal(data, zeros_like(data))
    zeros = unsorted_segment_sum(cast(is_zero, dtypes.int32), ids, n)
    dy = where(greater(zeros, ones_like(zeros)), zeros_like(dy), dy)
    safe = where(is_zero, ones_like(data), data)
    nonzero_prod = unsorted_segment_prod(safe, ids, n)
    clipped = maximum(ids, zeros_like(ids))
    partial = where(is_zero, scatter_ops.gather(nonzero_prod, clipped), scatter_ops.gather(op.outputs[0], clipped) / safe)
    return _with_none_for_sizes(op, _gather_dropping_negatives(dy, ids) * partial)


def _num_segments(op):
    """The num_segments of an unsorted segment op: its attr, or its size input (Note [size inputs])."""
    return op.inputs[2] if len(op.inputs) == 3 else op.get_attr("num_segments")


@tf_export("math.unsorted_segment_max")
def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """Maxima of the rows of `data` per segment; empty segments hold the dtype's lowest value."""
    return _unsorted_op(_unsorted_segment_max, data, segment_ids, num_segments)


@tf_export("math.unsorted_segment_min")
def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """Minima of the rows of `data` per segment; empty segments hold the dtype's highest value."""
    return _unsorted_op(_unsorted_segment_min, data, segment_ids, num_segments)


@tf_export("math.unsorted_segment_prod")
def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """Products of the rows of `data` per segment; empty segments hold 1."""
    return _unsorted_op(_unsorted_segment_prod, data, segment_ids, num_segments)


def _segment_sizes(data, segment_ids, num_segments):
    """Rows per segment (at least 1), shaped to broadcast against the segment sums."""
    data = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    shape = ids._value.shape
    ones = ones_like(ids, dtype=data.dtype) if None in shape else Tensor(np.ones(shape, data._value.dtype))
    n = unsorted_segment_sum(ones, ids, num_segments)
    n = _trailing_ones(n, data._value.ndim - ids._value.ndim)
    return maximum(n, ones_like(n))


@tf_export("math.unsorted_segment_mean")
def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Means of the rows of `data` per segment (0 for empty segments)."""
    return unsorted_segment_sum(data, segment_ids, num_segments) / _segment_sizes(data, segment_ids, num_segments)


@tf_export("math.unsorted_segment_sqrt_n")
def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Sums of the rows of `data` per segment divided by the square root of the segment's size."""
    total = unsorted_segment_sum(data, segment_ids, num_segments)
    return total / sqrt(_segment_sizes(data, segment_ids, num_segments))
