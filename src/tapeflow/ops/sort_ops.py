"""Sorting: `tf.sort` and `tf.argsort`.

`argsort` is one op (not differentiable); `sort` gathers the values in that
order, so its gradient is the gather's: each sorted position sends its
gradient back to the element it came from.  Ties keep their input order in
both directions, as TensorFlow's top_k-based sort does.

NaN sorts as the largest value (last ascending, first descending), as in
NumPy.  A deliberate difference: TensorFlow's comparator is not an order when
NaN is present, and its rows then come back unsorted in an unspecified way.
"""

import numpy as np

from tapeflow.framework.dtypes import REAL_TYPES, int32, int64
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.shape_rules import shape_error
from tapeflow.framework.shapes.symbolic_tensors import Meta, known_rank
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import scatter_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.core import basic_ops


def _argsort_shape(x, descending):
    """ArgSort: int32 indices of x's shape."""
    return [Meta(tuple(x.shape), np.dtype(np.int32))]


@op("ArgSort", dtypes=REAL_TYPES, same_dtype=False, shape=_argsort_shape, differentiable=False)
def _argsort(x, descending):
    if not descending:
        return np.argsort(x, axis=-1, kind="stable").astype(np.int32)
    n = x.shape[-1]                                    # stable descending: sort the reversed row
    return (n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]).astype(np.int32)


@_argsort.def_batch
def _argsort_batch(xs, batched, descending):
    return execute(_argsort, xs, {"descending": descending}), True     # rows along the last axis


def _moved(values, axis, op_name):
    """`values` with `axis` moved last, and the permutation that moves it back.

    A scalar or an axis out of range fails as TensorFlow's `tf.shape(values)[axis]` does
    (`shape_error`: InvalidArgumentError eagerly, ValueError while a graph is built)."""
    x = convert_to_tensor(values)
    rank = known_rank(x, op_name)
    axis = int(axis)
    if rank == 0 or not -rank <= axis < rank:
        what = "a scalar" if rank == 0 else f"a tensor of rank {rank}"
        raise shape_error(op_name, f"axis {axis} is out of range for {what} (slice index {axis} of dimension 0 "
                                   f"out of bounds); {op_name} takes an axis in [-rank, rank) of a tensor of "
                                   f"rank >= 1")
    axis %= rank
    if axis == rank - 1:
        return x, None
    perm = tuple(i for i in range(rank) if i != axis) + (axis,)
    back = tuple(int(i) for i in np.argsort(perm))
    return primitives.transpose(x, perm), back


def _direction(direction):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f'Argument `direction` must be "ASCENDING" or "DESCENDING", got {direction!r}')
    return direction == "DESCENDING"


@tf_export("argsort")
def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort `values` along `axis` (ties in input order).

    Raises:
      ValueError: an unknown direction; a scalar or an axis out of range in a graph.
      InvalidArgumentError: a scalar or an axis out of range, or complex or bool values, eagerly.
      TypeError: complex or bool values in a graph.

    >>> import tapeflow as tf
    >>> tf.argsort([3.0, 1.0, 2.0]).numpy()
    array([1, 2, 0], dtype=int32)
    """
    descending = _direction(direction)
    x, back = _moved(values, axis, "argsort")
    order = execute(_argsort, (x,), {"descending": descending})
    return order if back is None else primitives.transpose(order, back)


@tf_export("sort")
def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`; differentiable (the gradient follows each element).

    Raises:
      ValueError: an unknown direction; a scalar or an axis out of range in a graph.
      InvalidArgumentError: a scalar or an axis out of range, or complex or bool values, eagerly.
      TypeError: complex or bool values in a graph.

    >>> import tapeflow as tf
    >>> tf.sort([3, 1, 2], direction="DESCENDING").numpy()
    array([3, 2, 1], dtype=int32)
    """
    descending = _direction(direction)
    x, back = _moved(values, axis, "sort")
    shape = x._value.shape
    if None in shape:                                  # graphs: unknown sizes are read at run time
        shape = primitives.dims_of(x)
    rows = primitives.reshape(x, (-1, shape[-1]))      # [m, n]: a batch gather keeps the gradient dense
    order = execute(_argsort, (rows,), {"descending": descending})
    out = primitives.reshape(scatter_ops.gather(rows, order, axis=1, batch_dims=1), shape)
    return out if back is None else primitives.transpose(out, back)


def _invert_permutation_shape(x):
    """InvertPermutation: a vector in, a vector of the same length and dtype out."""
    if x.shape is not None and len(x.shape) != 1:
        raise ValueError(f"invert_permutation expects a 1D vector, got shape {list(x.shape)}")
    return [Meta((None,) if x.shape is None else tuple(x.shape), x.dtype)]


@tf_export("math.invert_permutation")
@op("InvertPermutation", dtypes=(int32, int64), shape=_invert_permutation_shape, unknown_rank=True,
    differentiable=False)
def invert_permutation(x):
    """The inverse of the permutation `x` of 0..n-1: y[x[i]] = i.

    >>> import tapeflow as tf
    >>> tf.math.invert_permutation(tf.constant([2, 0, 1])).numpy()
    array([1, 2, 0], dtype=int32)
    """
    if x.ndim != 1:
        raise ValueError("invert_permutation expects a 1D vector.")
    n = x.shape[0]
    bad = (x < 0) | (x >= n)
    if bad.any():
        raise ValueError(f"{x[bad][0]} is not between 0 and {n}")
    counts = np.bincount(x, minlength=n)
    if (counts > 1).any():
        raise ValueError(f"{x[counts[x] > 1][0]} is duplicated in the input.")
    y = np.empty_like(x)
    y[x] = np.arange(n, dtype=x.dtype)
    return y


@invert_permutation.def_batch
def _invert_permutation_batch(xs, batched):
    # the inverse of a permutation is the order that sorts it (rows are not checked to be permutations)
    return basic_ops.cast(execute(_argsort, xs, {"descending": False}), xs[0]._value.dtype), True
