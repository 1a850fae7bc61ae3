"""Gathers, scatters and the ops finding indices: `gather`, `gather_nd`, `scatter_nd`,
`tensor_scatter_nd_*`, `boolean_mask`, `unique`, and `unsorted_segment_sum` (the
adjoint of gather, whose own gradient is a gather).

Indices are checked like TensorFlow's eager kernels (InvalidArgumentError
naming the offending position).  Gradients with respect to gathered params
are IndexedSlices where TensorFlow makes them so (axis-0 gathers, gather_nd
with [n, 1] indices); scatters differentiate into gathers and back.  A
gradient reads the indices, and of the gathered tensor only its shape (Note
[static shapes in gradients] in ops/core/primitives.py).
"""

import collections
import functools

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.dtypes import NUMERIC_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import LINEAR, execute, op, raise_type_mismatch
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, const, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import math_ops, scatter_ops
from tapeflow.ops.core import arguments, batching, primitives
from tapeflow.ops.core.arguments import _shape_str
from tapeflow.ops.core.batching import sized_by_values
from tapeflow.ops.core.primitives import _dense, _reshape_to_input, _transpose_op, reshape, shape_tensor, zeros_of
from tapeflow.ops.core.basic_ops import cast, zeros_like
from tapeflow.ops.math_ops import greater_equal, maximum, where, where_indices
from tapeflow.ops.core import basic_ops

# -- gathers ------------------------------------------------------------------

_GATHER_INDICES = frozenset(np.dtype(d) for d in (np.int16, np.int32, np.int64))


def _check_range(idx, n):
    """Raises the GatherV2 message for the first index outside [0, n)."""
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        if idx.ndim == 0:
            raise ValueError(f"indices = {int(idx)} is not in [0, {n})")
        where = np.unravel_index(int(np.argmax(bad)), idx.shape)
        raise ValueError(f"indices[{','.join(map(str, where))}] = {int(idx[where])} is not in [0, {n})")


def _gather_shape(params, indices, axis, batch_dims):
    """TensorFlow's rule: params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1:]."""
    pshape = tuple(params.shape)
    return [Meta(pshape[:axis] + tuple(indices.shape)[batch_dims:] + pshape[axis + 1:], params.dtype)]


@op("GatherV2", same_dtype=False, shape=_gather_shape, jvp=LINEAR)
def _gather(params, indices, axis, batch_dims):
    idx = np.asarray(indices)
    _check_range(idx, params.shape[axis])
    if not batch_dims:
        out = np.take(params, idx, axis=axis)
        return np.asarray(out) if isinstance(out, np.generic) else out   # a 0-d result stays an array
    # One advanced index over (flattened batch, gathered axis) puts [nb, I...] in front.
    pshape, ishape = params.shape, idx.shape
    _check_batch_dims(pshape, ishape, batch_dims)
    nb = int(np.prod(pshape[:batch_dims], dtype=np.int64))
    p = np.moveaxis(params.reshape((nb,) + pshape[batch_dims:]), axis - batch_dims + 1, 1)
    i = idx.reshape((nb,) + ishape[batch_dims:])
    out = p[np.arange(nb).reshape((nb,) + (1,) * (i.ndim - 1)), i]        # [nb, I..., A..., R...]
    ni, na = i.ndim - 1, axis - batch_dims
    out = np.moveaxis(out, tuple(range(1, 1 + ni)), tuple(range(1 + na, 1 + na + ni)))
    return out.reshape(pshape[:axis] + ishape[batch_dims:] + pshape[axis + 1:])


@_gather.def_batch
def _gather_batch(xs, batched, axis, batch_dims):
    params, indices = xs
    rank_ = batching.example_rank(params, batched[0])
    if rank_ is None:
        raise batching.NotBatchable
    axis %= rank_
    if batch_dims or all(batched):                      # the batch becomes one more batch dim
        params, indices = primitives.stacked_all(xs, batched, primitives.batch_size_of(xs[batched.index(True)]))
        return execute(_gather, (params, indices), {"axis": axis + 1, "batch_dims": batch_dims + 1}), True
    if batched[0]:                                      # the examples' params side by side: gather past the batch
        return execute(_gather, (params, indices), {"axis": axis + 1, "batch_dims": 0}), True
    out = execute(_gather, (params, indices), {"axis": axis, "batch_dims": 0})   # [A..., B, I..., R...]
    if axis == 0:
        return out, True
    return _transpose_op(out, (axis,) + tuple(i for i in range(out._value.ndim) if i != axis)), True


def _check_batch_dims(pshape, ishape, batch_dims):
    """The batch dimensions of params and indices must agree (unknown ones, None, agree with any)."""
    for d in range(batch_dims):
        if pshape[d] != ishape[d] and pshape[d] is not None and ishape[d] is not None:
            raise ValueError(f"params.shape[{d}]: {pshape[d]} should be equal to indices.shape[{d}]: {ishape[d]}")


def _dims(t):
    """t's static shape, or (graphs, unknown sizes) its dims as ints and scalar tensors read at run time."""
    shape = t._value.shape
    return tuple(shape) if None not in shape else tuple(primitives.dims_of(t))


@_gather.def_grad(reads_inputs=(1,))
def _gather_grad(op, dy):
    params, indices = op.inputs
    axis, batch_dims = op.get_attr("axis"), op.get_attr("batch_dims")
    pshape = params._value.shape
    if batch_dims:
        return _batch_gather_grad(_dense(dy), indices, params, axis, batch_dims), None
    if axis == 0:                                      # rows of dy land on the gathered rows (sparse)
        return _indexed_slices_grad(dy, indices, pshape, params), None
    axis %= len(pshape)                                # -rank: see gather
    dy = _dense(dy)
    idx_rank = indices._value.ndim
    front = tuple(range(axis, axis + idx_rank)) + tuple(range(axis)) + tuple(range(axis + idx_rank, dy._value.ndim))
    n = pshape[axis] if pshape[axis] is not None else primitives.dims_of(params)[axis]
    rows = scatter_ops.unsorted_segment_sum(_transpose_op(dy, front), indices, n)
    back = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(pshape)))
    return _transpose_op(rows, back), None


def _batch_gather_grad(dy, indices, params, axis, batch_dims):
    """Segment-sums dy [B..., A..., I..., R...] into params [B..., A..., N, R...], batches kept apart
    by offsetting the indices of batch k by k * N.  In graphs, unknown sizes are scalar tensors."""
    pdims, idims = _dims(params), _dims(indices)
    nb, ni = primitives.product(pdims[:batch_dims]), primitives.product(idims[batch_dims:])
    n, a_dims, r_dims = pdims[axis], pdims[batch_dims:axis], pdims[axis + 1:]
    na, nr = len(a_dims), len(r_dims)
    g = reshape(dy, (nb,) + a_dims + idims[batch_dims:] + r_dims)
    g = _transpose_op(g, (0,) + tuple(range(1 + na, g._value.ndim - nr)) + tuple(range(1, 1 + na))
                      + tuple(range(g._value.ndim - nr, g._value.ndim)))
    g = reshape(g, (nb * ni,) + a_dims + r_dims)
    if isinstance(nb, Tensor) or isinstance(n, Tensor):
        offsets = reshape(basic_ops.cast(basic_ops.range(nb) * n, dtypes.int64), (-1, 1))
    else:
        offsets = Tensor((np.arange(nb, dtype=np.int64) * n).reshape(nb, 1))
    ids = reshape(math_ops.add_v2(reshape(basic_ops.cast(indices, dtypes.int64), (nb, ni)), offsets), (-1,))
    rows = reshape(scatter_ops.unsorted_segment_sum(g, ids, nb * n), (nb, n) + a_dims + r_dims)   # [nb, N, A..., R...]
    rows = _transpose_op(rows, (0,) + tuple(range(2, 2 + na)) + (1,) + tuple(range(2 + na, 2 + na + nr)))
    return _reshape_to_input(rows, params)


def _indexed_slices_grad(dy, indices, pshape, params=None):
    values = reshape(dy, (-1,) + (tuple(pshape[1:]) if None not in pshape[1:] else _dims(params)[1:]))
    flat_indices = reshape(indices, (-1,))
    if None in tuple(pshape):        # rows unknown while building a graph: the dense sum, sized at run time
        return tensor_scatter_nd_add(zeros_of(params), reshape(flat_indices, (-1, 1)), values)
    return IndexedSlices(values, flat_indices, Tensor(np.asarray(pshape, np.int32)))


@tf_export("gather")
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Gathers slices of `params` along `axis` at `indices`.

    With `batch_dims=b`, the first b axes of `params` and `indices` are batch
    axes: each batch entry gathers from its own slice of `params`. The gradient
    with respect to `params` is an IndexedSlices for axis 0 (no batch dims).

    Raises:
      InvalidArgumentError: an index out of range, an axis out of range, or
        batch dimensions that differ.

    >>> import tapeflow as tf
    >>> tf.gather(tf.constant([[1, 2], [3, 4]]), [[0, 1], [1, 1]], axis=1, batch_dims=1).numpy()
    array([[1, 2],
           [4, 4]], dtype=int32)
    """
    try:
        indices = convert_to_tensor(indices)
    except (ValueError, InvalidArgumentError):
        if isinstance(indices, (list, tuple)):         # TF's class for a bad list (Note [typed index inputs])
            arguments.check_list_entries(indices)
        raise
    if indices._value.dtype not in _GATHER_INDICES:
        raise arguments.typed_index_error(indices.dtype.name, "indices", "GatherV2", "Tindices", _GATHER_INDICES)
    batch_dims = int(batch_dims)
    if batch_dims < 0:
        batch_dims += known_rank(indices, "GatherV2")
    axis = batch_dims if axis is None else int(axis._value if isinstance(axis, Tensor) else axis)
    if axis == 0:
        batch_dims = 0                                 # like TensorFlow: axis 0 ignores batch_dims
        if getattr(params, "_is_variable", False):
            return params._gather_rows(indices)        # a ResourceGather (ops/variables.py)
    params = convert_to_tensor(params)
    rank_ = known_rank(params, "GatherV2")
    if axis >= rank_ or axis < -rank_:
        raise shape_rules.shape_error("GatherV2", f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} "
                                    f"but is rank {rank_}")
    if axis != -rank_:     # TensorFlow's gradient is sparse only for an axis written as 0, not as -rank
        axis %= rank_
    ishape = indices._value.shape
    if batch_dims:
        if batch_dims > axis:
            raise InvalidArgumentError(None, "GatherV2", f"batch_dims ({batch_dims}) must be less than or equal to "
                                       f"axis ({axis}). [Op:GatherV2]")
        if batch_dims > len(ishape):
            raise InvalidArgumentError(None, "GatherV2", f"batch_dims ({batch_dims}) must be less than or equal to "
                                       f"rank(indices) ({len(ishape)}). [Op:GatherV2]")
        try:
            _check_batch_dims(params._value.shape, ishape, batch_dims)
        except ValueError as e:
            raise InvalidArgumentError(None, "GatherV2", f"{e} [Op:GatherV2]") from None
    return execute(_gather, (params, indices), {"axis": axis, "batch_dims": batch_dims})


@tf_export("boolean_mask")
def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The entries of `tensor` where `mask` is true, the mask covering axes axis..axis+rank(mask)-1.

    In graphs the number of entries kept is known only when the graph runs
    (also for a constant mask, as in TensorFlow), and the mask may be a
    tensor of unknown dimensions.

    Raises:
      ValueError: a scalar mask, or mask dimensions that do not match `tensor`.

    >>> import tapeflow as tf
    >>> tf.boolean_mask(tf.constant([1, 2, 3]), [True, False, True]).numpy()
    array([1, 3], dtype=int32)
    """
    x = convert_to_tensor(tensor)
    if state.graphs and (isinstance(x, SymbolicTensor) or isinstance(mask, SymbolicTensor)):
        return _boolean_mask_graph(x, mask, axis)
    m = np.asarray(mask._value if isinstance(mask, Tensor) else mask)
    if m.ndim == 0:
        raise ValueError("mask cannot be scalar.")
    shape = x._value.shape
    axis = _mask_axis(axis, len(shape))
    covered = shape[axis:axis + m.ndim]
    if covered != m.shape:
        raise ValueError(f"Shapes {TensorShape(covered)} and {TensorShape(m.shape)} are incompatible")
    flat = reshape(x, shape[:axis] + (-1,) + shape[axis + m.ndim:])
    keep = Tensor(np.flatnonzero(m).astype(np.int64))
    return gather(flat, keep, axis=axis)


def _mask_axis(axis, rank):
    axis = 0 if axis is None else int(axis._value if isinstance(axis, Tensor) else axis)
    return axis + rank if axis < 0 else axis


def _boolean_mask_graph(x, mask, axis):
    """boolean_mask in a graph: the kept count is known only when the graph runs (TensorFlow's static
    shape), so the mask's true positions come from a Where node, even for a constant mask."""
    m = convert_to_tensor(mask)
    if not isinstance(m, SymbolicTensor):
        m = const(state.graphs[-1], m)
    known_rank(x, "BooleanMask")
    known_rank(m, "BooleanMask")
    mshape, shape = tuple(m._value.shape), tuple(x._value.shape)
    if not mshape:
        raise ValueError("mask cannot be scalar.")
    axis = _mask_axis(axis, len(shape))
    covered = shape[axis:axis + len(mshape)]
    if len(covered) != len(mshape) or any(a != b and a is not None and b is not None for a, b in zip(covered, mshape)):
        raise ValueError(f"Shapes {TensorShape(covered)} and {TensorShape(mshape)} are incompatible")
    dims = _dims(x)
    lead = primitives.product(dims[axis:axis + len(mshape)])
    flat = reshape(x, dims[:axis] + (lead,) + dims[axis + len(mshape):])
    keep = reshape(where_indices(reshape(m, (-1,))), (-1,))
    return gather(flat, keep, axis=axis)


# -- gather_nd and the scatters --------------------------------------------------------------

_ND_INDICES = frozenset(np.dtype(d) for d in (np.int16, np.int32, np.int64))


def _nd_indices(indices, op_type):
    indices = convert_to_tensor(indices)
    if indices._value.dtype not in _ND_INDICES:
        raise InvalidArgumentError(None, op_type, f"Value for attr 'Tindices' of {indices.dtype.name} is not in the "
                                   f"list of allowed values: int16, int32, int64 [Op:{op_type}]")
    return indices


def _check_nd(idx, shape, what):
    """Raises TensorFlow's message for the first index row outside `shape` (`what`: "param shape"/"shape")."""
    if idx.ndim == 0:
        raise ValueError("indices must be at least a vector")
    k = idx.shape[-1]
    bad = ((idx < 0) | (idx >= np.asarray(shape[:k], np.int64))).any(-1) if k else np.zeros(idx.shape[:-1], bool)
    if bad.any():
        at = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        row = ", ".join(str(int(v)) for v in idx[at])
        where = ",".join(map(str, at)) if at else "0"
        raise ValueError(f"indices[{where}] = [{row}] does not index into {what} {_shape_str(shape)}")


def _rows(idx):
    """NumPy's advanced index for index rows [..., k] (one array per indexed axis)."""
    return tuple(np.moveaxis(idx, -1, 0))


def _gather_nd_shape(params, indices):
    """TensorFlow's rule: indices.shape[:-1] + params.shape[k:], k = indices.shape[-1] (an unknown
    rank when k is unknown)."""
    pshape, ishape = tuple(params.shape), tuple(indices.shape)
    if not ishape:
        raise ValueError("Shape must be at least rank 1 but is rank 0 for 'GatherNd' (indices)")
    k = ishape[-1]
    if k is None:
        return [Meta(None, params.dtype)]
    if k > len(pshape):
        raise ValueError(f"index innermost dimension length must be <= params rank; saw: {k} vs. {len(pshape)}")
    return [Meta(ishape[:-1] + pshape[k:], params.dtype)]


@op("GatherNd", same_dtype=False, shape=_gather_nd_shape, jvp=LINEAR)
def _gather_nd(params, indices):
    idx = np.asarray(indices)
    if idx.ndim and idx.shape[-1] > params.ndim:
        raise ValueError(f"index innermost dimension length must be <= params rank; saw: {idx.shape[-1]} vs. "
                         f"{params.ndim}")
    _check_nd(idx, params.shape, "param shape")
    if idx.shape[-1] == 0:
        return np.array(np.broadcast_to(params, idx.shape[:-1] + params.shape))
    return np.asarray(params[_rows(idx)])


@_gather_nd.def_batch
def _gather_nd_batch(xs, batched):
    params, indices = xs
    if not batched[0]:
        return execute(_gather_nd, xs, {}), True      # shared params: [B, I...] rows give [B, I..., R...]
    if indices._value.shape[-1] is None:
        raise batching.NotBatchable
    size = primitives.batch_size_of(params)
    return _batch_gather_nd(params, indices if batched[1] else primitives.broadcast_batch(indices, size), 1), True


@_gather_nd.def_grad(reads_inputs=(1,))
def _gather_nd_grad(op, dy):
    params, indices = op.inputs
    pshape = params._value.shape
    ishape = indices._value.shape
    if None in tuple(pshape):                          # graphs, unknown params shape: sized at run time
        return tensor_scatter_nd_add(zeros_of(params), indices, _dense(dy)), None
    if len(ishape) == 2 and ishape[-1] == 1:           # whole rows: a sparse gradient, like TensorFlow
        return IndexedSlices(_dense(dy), reshape(indices, (-1,)),
                             Tensor(np.asarray(pshape, indices._value.dtype))), None
    return _scatter_nd_op(indices, _dense(dy), pshape), None   # scatter dy back where it was read


@tf_export("gather_nd")
def gather_nd(params, indices, batch_dims=0, name=None):
    """Gathers slices of `params` at the index rows `indices[..., :]`.

    The last axis of `indices` (length k <= rank(params)) indexes the first k
    axes of params; the result has shape indices.shape[:-1] + params.shape[k:].
    With `batch_dims=b` the first b axes of both are batch axes.

    Raises:
      InvalidArgumentError: an index row outside params, or k > rank(params).

    >>> import tapeflow as tf
    >>> tf.gather_nd(tf.constant([[1, 2], [3, 4]]), [[0, 1], [1, 0]]).numpy()
    array([2, 3], dtype=int32)
    """
    indices = _nd_indices(indices, "GatherNd")
    params = convert_to_tensor(params)
    batch_dims = int(batch_dims)
    if batch_dims:
        return _batch_gather_nd(params, indices, batch_dims)
    return execute(_gather_nd, (params, indices), {})


def _batch_gather_nd(params, indices, batch_dims):
    """gather_nd with batch axes: the batch number becomes a leading index component."""
    pshape, ishape = params._value.shape, indices._value.shape
    if batch_dims < 0 or batch_dims >= len(ishape) or batch_dims > len(pshape):
        raise ValueError(f"batch_dims = {batch_dims} must be in [0, rank(indices) - 1 = {len(ishape) - 1}] and "
                         f"at most rank(params) = {len(pshape)}.")
    if any(a != b and a is not None and b is not None for a, b in zip(pshape[:batch_dims], ishape[:batch_dims])):
        raise InvalidArgumentError(None, "GatherNd", f"The batch dimensions of params {_shape_str(pshape)} and "
                                   f"indices {_shape_str(ishape)} must match [Op:GatherNd]")
    k = ishape[-1]
    if k is None:
        raise ValueError(f"The last dimension of the indices of gather_nd must be known while the graph is built, "
                         f"got indices of shape {list(ishape)}.")
    pdims, idims = _dims(params), _dims(indices)       # graphs: unknown sizes are scalar tensors
    bdims = tuple(p if i is None else i for p, i in zip(pdims[:batch_dims], ishape[:batch_dims]))
    nb = primitives.product(bdims)
    flat_idx = reshape(basic_ops.cast(indices, dtypes.int64), (nb, -1, k))
    m = flat_idx._value.shape[1]
    if isinstance(nb, Tensor) or m is None:
        m = primitives.dims_of(flat_idx)[1]
        batch = reshape(basic_ops.cast(basic_ops.range(nb), dtypes.int64), (-1, 1))
        batch = primitives.broadcast_to(batch, (nb, m))
    else:
        batch = Tensor(np.broadcast_to(np.arange(nb, dtype=np.int64).reshape(nb, 1), (nb, m)).copy())
    out = execute(_gather_nd, (reshape(params, (nb,) + pdims[batch_dims:]), _led_by(batch, flat_idx, k)), {})
    return reshape(out, bdims + idims[batch_dims:-1] + pdims[batch_dims + k:])


def _check_updates(idx, updates_shape, shape, into_zeros=False):
    """TensorFlow's shape checks of a scatter: updates = indices.shape[:-1] + shape[k:]."""
    if idx.ndim == 0:
        raise ValueError("indices must be at least a vector")
    outer, k = idx.ndim - 1, idx.shape[-1]
    if k > len(shape):
        raise ValueError(f"Index innermost dimension length {k} is larger than the rank {len(shape)} of "
                         f"the {'input' if into_zeros else 'tensor'} {_shape_str(shape)}")
    if tuple(updates_shape[:outer]) != idx.shape[:-1]:
        if into_zeros:                                 # ScatterNd's message
            raise ValueError(f"Dimensions [0,{outer}) of indices[shape={_shape_str(idx.shape)}] must match "
                             f"dimensions [0,{outer}) of updates[shape={_shape_str(updates_shape)}]")
        raise ValueError(f"Outer dimensions of indices and update must match. Indices shape: "
                         f"{_shape_str(idx.shape)}, updates shape:{_shape_str(updates_shape)}")
    if tuple(updates_shape[outer:]) != tuple(shape[k:]):
        raise ValueError(f"Dimensions [{k},{len(shape)}) of input[shape={_shape_str(shape)}] must match "
                         f"dimensions [{outer},{len(updates_shape)}) of updates[shape={_shape_str(updates_shape)}]")
    _check_nd(idx, shape, "shape")


def _add_rows(out, idx, updates):
    """out[idx rows] += updates, repeated rows adding up (in place)."""
    if idx.shape[-1] == 0:
        out += updates.reshape((-1,) + out.shape).sum(0, dtype=out.dtype)
    else:
        np.add.at(out, _rows(idx), updates)
    return out


def _scatter_shape(indices, updates, out_shape, dtype, op_type):
    """The static shape of a scatter into `out_shape` (TensorFlow's ScatterNdShapeHelper): `out_shape`,
    after checking the dims known while building (updates = indices.shape[:-1] + out_shape[k:])."""
    ishape, ushape = indices.shape, updates.shape
    if ishape is not None and not ishape:
        raise ValueError(f"indices must be at least a vector [Op:{op_type}]")
    if _count(out_shape) == 0 and (_count(ishape) or _count(ushape)):
        raise ValueError(f"Indices and updates specified for empty input [Op:{op_type}]")
    if ishape is None or not ushape or ishape[-1] is None:   # (scalar updates are not checked either)
        return [Meta(out_shape, dtype)]
    k, outer = ishape[-1], len(ishape) - 1
    if out_shape is not None and k > len(out_shape):
        raise ValueError(f"Index innermost dimension length {k} is larger than the rank {len(out_shape)} of "
                         f"the output {list(out_shape)} [Op:{op_type}]")
    want = ishape[:-1] + (ushape[outer:] if out_shape is None else tuple(out_shape[k:]))
    if len(ushape) != len(want) or any(a != b and None not in (a, b) for a, b in zip(ushape, want)):
        raise ValueError(f"The shape of updates {list(ushape)} does not fit indices {list(ishape)} and the "
                         f"output {'<unknown>' if out_shape is None else list(out_shape)}: expected {list(want)} "
                         f"[Op:{op_type}]")
    return [Meta(out_shape, dtype)]


def _count(shape):
    """The number of elements of a static shape; None when not known."""
    if shape is None or None in shape:
        return None
    return int(np.prod(shape, dtype=np.int64))


def _scatter_nd_shape(indices, updates, shape):
    """The known sizes of `shape` (an unknown rank when its length is unknown), checked against
    the indices and updates."""
    if primitives.unknown_length(shape):
        dims = None
    else:
        dims = tuple(primitives.output_dims(primitives.vector(shape, "shape", "ScatterNd"), "ScatterNd"))
    return _scatter_shape(indices._value, updates._value, dims, updates._value.dtype, "ScatterNd")


@op("ScatterNd", same_dtype=False, shape=_scatter_nd_shape, shape_reads_inputs=True, unknown_rank=True)
def _scatter_nd(indices, updates, shape):
    if type(shape) is np.ndarray:                      # a size input (graphs, Note [size inputs])
        shape = tuple(shape.tolist())
    idx = np.asarray(indices)
    _check_updates(idx, updates.shape, shape, into_zeros=True)
    return _add_rows(np.zeros(shape, updates.dtype), idx, updates)


@_scatter_nd.def_batch
def _scatter_nd_batch(xs, batched, shape=None):
    if len(xs) > 2 and batched[2]:
        raise batching.NotBatchable                     # a shape per example
    size = primitives.batch_size_of(xs[batched.index(True)])
    indices, updates = primitives.stacked_all(xs[:2], batched[:2], size)
    dims = primitives.prepend(size, shape if len(xs) == 2 else xs[2])
    if isinstance(dims, Tensor):
        return execute(_scatter_nd, (_with_example_index(indices), updates, dims), {}), True
    return _scatter_nd_op(_with_example_index(indices), updates, dims), True


def _with_example_index(indices):
    """Stacked index rows [B, ..., k] led by their example's number: [B, ..., 1 + k], rows of the
    stacked [B, ...] tensor (one scatter for the whole batch)."""
    shape, dtype = indices._value.shape, indices._value.dtype
    if shape[-1] is None:
        raise batching.NotBatchable                     # index rows of unknown length
    if None not in shape:
        lead = np.arange(shape[0], dtype=dtype).reshape((-1,) + (1,) * (len(shape) - 2))
        lead = Tensor(np.ascontiguousarray(np.broadcast_to(lead, shape[:-1])))
    else:                                               # graphs: sizes known when the graph runs
        dims = _dims(indices)
        lead = reshape(basic_ops.cast(basic_ops.range(dims[0]), dtype), (-1,) + (1,) * (len(shape) - 2))
        lead = primitives.broadcast_to(lead, dims[:-1])
    return _led_by(lead, indices, shape[-1])


def _led_by(lead, indices, k):
    """Index rows [..., 1 + k]: `lead` [...] in front of the k entries of each row of `indices` [..., k]."""
    return primitives.stack([lead, *primitives.unstack(indices, num=k, axis=-1)], axis=-1)


def _scatter_batch(op_, xs, batched, attrs):
    """TensorScatter*: the stacked tensor [B, ...] updated at the example-numbered rows."""
    tensor, indices, updates = primitives.stacked_all(xs, batched, primitives.batch_size_of(xs[batched.index(True)]))
    return execute(op_, (tensor, _with_example_index(indices), updates), attrs), True


_SCATTER_BATCH = batching.FamilyRule(_scatter_batch)


@_scatter_nd.def_grad(reads_inputs=(0,))
def _scatter_nd_grad(op, dy):
    indices, updates = op.inputs[:2]                   # each update reads its target's gradient
    du = _gather_updates(_dense(dy), indices, updates)
    return (None, du) if len(op.inputs) == 2 else (None, du, None)


def _gather_updates(dy, indices, updates):
    """The gradient of a scatter's updates: dy read at the index rows.  In graphs, an index row length
    unknown while building follows from the ranks (updates = indices[:-1] + out[k:])."""
    ishape, known = indices._value.shape, None not in (dy._value.ndim, updates._value.ndim)
    if ishape is not None and ishape[-1] is None and known:
        k = dy._value.ndim - updates._value.ndim + len(ishape) - 1
        indices = reshape(indices, _dims(indices)[:-1] + (k,))
    return execute(_gather_nd, (dy, indices), {})


def _scatter_nd_op(indices, updates, shape):
    return execute(_scatter_nd, (indices, updates), {"shape": tuple(shape)})


@tf_export("scatter_nd")
def scatter_nd(indices, updates, shape, name=None):
    """A zeros tensor of `shape` with `updates` added at the index rows `indices` (repeats add up).

    In graphs, `shape` may be an int tensor or hold scalar tensors (`tf.shape(x)`).

    Raises:
      InvalidArgumentError: shapes that do not fit together or an index outside `shape`.

    >>> import tapeflow as tf
    >>> tf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5]).numpy()
    array([0., 4., 0., 2., 0.], dtype=float32)
    """
    indices = _nd_indices(indices, "ScatterNd")
    dims = primitives.ints_or_tensor(shape, "shape", "ScatterNd", arguments._int_list)
    if isinstance(dims, Tensor):
        return execute(_scatter_nd, (indices, convert_to_tensor(updates), dims), {})
    return _scatter_nd_op(indices, convert_to_tensor(updates), dims)


def _combine_rows(ufunc):
    """A kernel body: `ufunc` (np.minimum, np.maximum) of out's index rows with the updates, in place."""
    def combine(out, idx, updates):
        if idx.shape[-1] != 0:
            ufunc.at(out, _rows(idx), updates)
        elif np.prod(idx.shape[:-1], dtype=np.int64):     # whole-tensor updates
            out[...] = ufunc(out, ufunc.reduce(updates, axis=tuple(range(idx.ndim - 1))))
        return out
    return combine


def _update_rows(out, idx, updates):
    """out[idx rows] = updates; a repeated row keeps the last update."""
    if idx.shape[-1] == 0:
        out[...] = updates.reshape((-1,) + out.shape)[-1] if updates.size else out
    else:
        out[_rows(idx)] = updates
    return out


def _tensor_scatter(kind, combine):
    """TensorScatter{kind}: a copy of `tensor` with its index rows combined with `updates` by
    `combine(out, idx, updates)`; its static shape is tensor's (of any rank), checked against the
    indices and updates."""
    op_type = f"TensorScatter{kind}"

    def shape(tensor, indices, updates):
        return _scatter_shape(indices, updates, tensor.shape, tensor.dtype, op_type)

    def kernel(tensor, indices, updates):
        idx = np.asarray(indices)
        _check_updates(idx, updates.shape, tensor.shape)
        return combine(np.array(tensor, copy=True), idx, updates)
    kernel.__name__ = kernel.__qualname__ = f"_tensor_scatter_{kind.lower()}"
    return op(op_type, same_dtype=False, shape=shape, unknown_rank=True, batch=_SCATTER_BATCH)(kernel)


_tensor_scatter_update = _tensor_scatter("Update", _update_rows)
_tensor_scatter_add = _tensor_scatter("Add", _add_rows)
_tensor_scatter_sub = _tensor_scatter("Sub", lambda out, idx, updates: _add_rows(out, idx, -updates))
_tensor_scatter_min = _tensor_scatter("Min", _combine_rows(np.minimum))
_tensor_scatter_max = _tensor_scatter("Max", _combine_rows(np.maximum))


@_tensor_scatter_update.def_grad(reads_inputs=(1,))
def _tensor_scatter_update_grad(op, dy):
    _, indices, updates = op.inputs                    # overwritten entries do not reach the output
    dy = _dense(dy)
    kept = execute(_tensor_scatter_update, (dy, indices, zeros_of(updates)), {})
    return kept, None, _gather_updates(dy, indices, updates)


@_tensor_scatter_add.def_grad(reads_inputs=(1,))
def _tensor_scatter_add_grad(op, dy):
    dy = _dense(dy)                                    # d(t + scatter(u)) = dt + gather(du)
    return dy, None, _gather_updates(dy, op.inputs[1], op.inputs[2])


@_tensor_scatter_sub.def_grad(reads_inputs=(1,))
def _tensor_scatter_sub_grad(op, dy):
    dy = _dense(dy)                                    # d(t - scatter(u)) = dt - gather(du)
    return dy, None, math_ops.negative(_gather_updates(dy, op.inputs[1], op.inputs[2]))


@_tensor_scatter_min.def_grad(reads_inputs=True, reads_outputs=True)
@_tensor_scatter_max.def_grad(reads_inputs=True, reads_outputs=True)
def _tensor_scatter_extremum_grad(op, dy):
    """d out = d t where t won, d u where u won; entries tied n ways get 1/n of dy each (TensorFlow's rule)."""
    tensor, indices, updates = op.inputs
    out, dy = op.outputs[0], _dense(dy)
    t_won = basic_ops.cast(math_ops.equal(tensor, out), dy.dtype)
    u_won = basic_ops.cast(math_ops.equal(updates, _gather_updates(out, indices, updates)), dy.dtype)
    shape = shape_tensor(tensor, np.int64 if indices._value.dtype == np.int64 else np.int32)
    winners = t_won + execute(_scatter_nd, (indices, u_won, shape), {})
    share = dy / winners                               # every entry has a winner: winners >= 1
    return share * t_won, None, _gather_updates(share, indices, updates) * u_won


def _tensor_scatter_call(kernel, tensor, indices, updates):
    tensor = convert_to_tensor(tensor)
    indices = _nd_indices(indices, kernel.type)
    updates = convert_to_tensor(updates, dtype_hint=tensor.dtype)
    if updates.dtype != tensor.dtype:
        raise_type_mismatch(kernel.type, 2, tensor._value.dtype, updates._value.dtype)
    return execute(kernel, (tensor, indices, updates), {})


@tf_export("tensor_scatter_nd_update")
def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of `tensor` with the index rows `indices` set to `updates` (a repeated row keeps the last).

    The gradient with respect to `tensor` is zero at the overwritten entries.

    Raises:
      InvalidArgumentError: shapes that do not fit together or an index outside `tensor`.

    >>> import tapeflow as tf
    >>> tf.tensor_scatter_nd_update(tf.zeros([3]), [[2]], [5.0]).numpy()
    array([0., 0., 5.], dtype=float32)
    """
    return _tensor_scatter_call(_tensor_scatter_update, tensor, indices, updates)


@tf_export("tensor_scatter_nd_add")
def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` added at the index rows `indices` (repeats add up)."""
    return _tensor_scatter_call(_tensor_scatter_add, tensor, indices, updates)


@tf_export("tensor_scatter_nd_sub")
def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` subtracted at the index rows `indices` (repeats add up)."""
    return _tensor_scatter_call(_tensor_scatter_sub, tensor, indices, updates)


@tf_export("tensor_scatter_nd_min")
def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """A copy of `tensor` whose entries at the index rows `indices` are the minimum of themselves
    and their `updates` (repeated rows all take part).

    The gradient flows to whichever of the entry and its updates is the minimum;
    entries tied between k of them give each 1/k of it, as in TensorFlow.

    Raises:
      InvalidArgumentError: shapes that do not fit together or an index outside `tensor`.

    >>> import tapeflow as tf
    >>> tf.tensor_scatter_nd_min(tf.constant([1.0, 5.0, 3.0]), [[1], [2]], [2.0, 4.0]).numpy()
    array([1., 2., 3.], dtype=float32)
    """
    return _tensor_scatter_call(_tensor_scatter_min, tensor, indices, updates)


@tf_export("tensor_scatter_nd_max")
def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """`tensor_scatter_nd_min` with the maximum.

    >>> import tapeflow as tf
    >>> tf.tensor_scatter_nd_max(tf.constant([1.0, 5.0, 3.0]), [[1], [2]], [2.0, 4.0]).numpy()
    array([1., 5., 4.], dtype=float32)
    """
    return _tensor_scatter_call(_tensor_scatter_max, tensor, indices, updates)


# -- finding indices: where (coordinates), unique -------------------------------------------------


def _unique_kernel(x, out_idx, counts):
    """y (x's distinct values in order of first occurrence), idx (y[idx] == x) and the counts.
    Each NaN is distinct (it equals nothing); 0.0 and -0.0 are one value."""
    if x.ndim != 1:
        raise ValueError("unique expects a 1D vector.")
    _, first, inverse, count = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                         equal_nan=False)
    order = np.argsort(first, kind="stable")           # sorted slots -> order of first occurrence
    slot = np.empty(len(order), np.int64)
    slot[order] = np.arange(len(order))
    y, idx = x[first[order]], slot[inverse.reshape(-1)].astype(out_idx)
    return (y, idx, count[order].astype(out_idx)) if counts else (y, idx)


def _unique_shape(x, out_idx):
    """y is a vector of a length known only when the graph runs; idx has x's shape."""
    if x.shape is not None and len(x.shape) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(x.shape)} for 'Unique' with input shape "
                         f"{list(x.shape)}")
    return [Meta((None,), x.dtype), Meta(x.shape, np.dtype(out_idx))]


def _unique_with_counts_shape(x, out_idx):
    """y and count are vectors of a length known only when the graph runs; idx has x's shape
    (whose rank TensorFlow checks only when the graph runs)."""
    return [Meta((None,), x.dtype), Meta(x.shape, np.dtype(out_idx)), Meta((None,), np.dtype(out_idx))]


# No gradients are defined: asking for one raises LookupError, as in TensorFlow.
@op("Unique", same_dtype=False, num_outputs=2, shape=_unique_shape, unknown_rank=True)
def _unique(x, out_idx):
    return _unique_kernel(x, out_idx, False)


@op("UniqueWithCounts", same_dtype=False, num_outputs=3, shape=_unique_with_counts_shape, unknown_rank=True)
def _unique_with_counts(x, out_idx):
    return _unique_kernel(x, out_idx, True)


_unique.def_batch(sized_by_values)
_unique_with_counts.def_batch(sized_by_values)

_INDEX_TYPES = (dtypes.int32, dtypes.int64)
_UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])
_UniqueWithCountsOutput = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _unique_call(kernel, x, out_idx, output):
    x = convert_to_tensor(x)
    out_idx = dtypes.as_dtype(out_idx)
    if out_idx not in _INDEX_TYPES:
        raise InvalidArgumentError(None, kernel.type, f"Value for attr 'out_idx' of {out_idx.name} is not in the "
                                   f"list of allowed values: int32, int64 [Op:{kernel.type}]")
    return output(*execute(kernel, (x,), {"out_idx": out_idx._np}))


@tf_export("unique")
def unique(x, out_idx=dtypes.int32, name=None):
    """The distinct values `y` of the 1-D `x`, in order of first occurrence, and `idx` with
    `y[idx[i]] == x[i]`.  Not differentiable (a gradient raises LookupError, as in TensorFlow).

    Raises:
      InvalidArgumentError: `x` is not 1-D, or `out_idx` is not int32 or int64.

    >>> import tapeflow as tf
    >>> y, idx = tf.unique([4, 5, 4, 2])
    >>> y.numpy(), idx.numpy()
    (array([4, 5, 2], dtype=int32), array([0, 1, 0, 2], dtype=int32))
    """
    return _unique_call(_unique, x, out_idx, _UniqueOutput)


@tf_export("unique_with_counts")
def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """`unique`, and how many times each distinct value occurs (`count`, of type `out_idx`).

    >>> import tapeflow as tf
    >>> tf.unique_with_counts([4, 5, 4, 2])[2].numpy()
    array([2, 1, 1], dtype=int32)
    """
    return _unique_call(_unique_with_counts, x, out_idx, _UniqueWithCountsOutput)


# -- unsorted segment sums (the adjoint of gather; the other segment reductions: segment_ops.py) --

def _unsorted_reduce(ufunc, empty, data, ids, num_segments):
    num_segments = int(num_segments)                     # an attr, or a scalar array (Note [size inputs])
    if data.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"data.shape = {list(data.shape)} does not start with segment_ids.shape = {list(ids.shape)}")
    if ids.size and ids.max() >= num_segments:
        bad = int(np.argmax(ids.reshape(-1) >= num_segments))
        raise ValueError(f"segment_ids[{bad}] = {int(ids.reshape(-1)[bad])} is out of range [0, {num_segments})")
    out = np.full((num_segments,) + data.shape[ids.ndim:], empty, data.dtype)
    keep = ids >= 0                                      # negative ids are dropped, like TensorFlow
    ufunc.at(out, ids[keep], data[keep])
    return out


def _gather_dropping_negatives(params, ids):
    """params[ids] with zero rows where ids < 0."""
    g = scatter_ops.gather(params, maximum(ids, zeros_like(ids)))
    keep = _ids_shaped_like(greater_equal(ids, zeros_like(ids)), g)      # broadcast by where
    return where(keep, g, zeros_like(g))


def _unsorted_op(kernel, data, segment_ids, num_segments):
    data = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    if ids._value.dtype.kind not in "iu":
        raise TypeError(f"segment_ids must be an integer tensor, got {ids.dtype.name}.")
    if isinstance(num_segments, SymbolicTensor):        # a size read when the graph runs (Note [size inputs])
        if num_segments._value.dtype not in (np.int32, np.int64) or num_segments._value.ndim:
            raise TypeError(f"num_segments of {kernel.type} must be an int32 or int64 scalar, got "
                            f"{num_segments.dtype.name} of shape {num_segments.shape}.")
        known = constant_value(num_segments)
        if known is None:
            return execute(kernel, (data, ids, num_segments), {})
        num_segments = known
    return execute(kernel, (data, ids), {"num_segments": int(num_segments)})


def _with_none_for_sizes(op, dx):
    """The gradients of an unsorted segment op: dx for data, None for the ids (and num_segments)."""
    return (dx, None, None) if len(op.inputs) == 3 else (dx, None)


def _ids_shaped_like(ids, t):
    """`ids` reshaped with trailing 1s so that it broadcasts against the per-row tensor `t`."""
    return _trailing_ones(ids, t._value.ndim - ids._value.ndim)


def _unsorted_segment_shape(data, segment_ids, num_segments):
    """Unsorted segment ops: [num_segments] + the dims of data past the ids'.  The rule gets the
    input tensors (`shape_reads_inputs`): num_segments, an attr or a size input (Note [size inputs]),
    is read where it is known while the graph is built."""
    dims, id_dims = tuple(data._value.shape), tuple(segment_ids._value.shape)
    if len(dims) < len(id_dims) or any(a is not None and b is not None and a != b for a, b in zip(dims, id_dims)):
        raise ValueError(f"data.shape = {list(dims)} does not start with segment_ids.shape = {list(id_dims)}")
    if isinstance(num_segments, Tensor):
        known = constant_value(num_segments)
        num_segments = None if known is None else int(known)
    return [Meta((num_segments,) + dims[len(id_dims):], data._value.dtype)]


def _trailing_ones(t, extra):
    """`t` with `extra` size-1 axes appended (inserted one by one when t has unknown dims)."""
    if not extra:
        return t
    shape = t._value.shape
    if None not in shape:
        return primitives.reshape(t, shape + (1,) * extra)
    for _ in range(extra):
        t = primitives.expand_dims(t, -1)
    return t


def _batch_of_segments(out, size, n):
    """The shape [size, n, ...] of the [size * n, ...] output `out` (a tensor when a size is unknown)."""
    rest = tuple(out._value.shape[1:])
    if not isinstance(size, Tensor) and not isinstance(n, Tensor) and None not in rest:
        return (size, n) + rest
    return primitives.prepend(size, primitives.prepend(n, basic_ops.shape(out)[1:]))


def _unsorted_batch(op_, xs, batched, attrs):
    """Unsorted segment ops: example b's ids offset by b * num_segments, so that one op on the stacked
    data fills [B * num_segments, ...], viewed as [B, num_segments, ...] (negative ids still dropped)."""
    if len(xs) == 3 and batched[2]:
        raise batching.NotBatchable                     # a segment count per example
    n = xs[2] if len(xs) == 3 else attrs["num_segments"]
    size = primitives.batch_size_of(xs[batched.index(True)])
    data, ids = xs[0] if batched[0] else primitives.broadcast_batch(xs[0], size), xs[1]
    if ids._value.dtype not in (np.int32, np.int64):    # room for the offsets
        ids = cast(ids, dtypes.int64)
    id_rank = batching.example_rank(ids, batched[1])
    dtype = ids._value.dtype
    if isinstance(size, Tensor) or isinstance(n, Tensor):         # graphs: sizes read when the graph runs
        total = cast(size, dtype) * cast(n, dtype)
        offsets = primitives.reshape(cast(basic_ops.range(size), dtype) * cast(n, dtype), (-1,) + (1,) * id_rank)
    else:
        total = size * n
        offsets = Tensor((np.arange(size, dtype=dtype) * n).reshape((-1,) + (1,) * id_rank))
    ids = where(greater_equal(ids, zeros_like(ids)), ids + offsets, ids)
    if isinstance(total, Tensor):
        out = execute(op_, (data, ids, total), {})
    else:
        out = execute(op_, (data, ids), {"num_segments": total})
    return primitives.reshape(out, _batch_of_segments(out, size, n)), True


_unsorted_segment_op = functools.partial(op, same_dtype=False, shape=_unsorted_segment_shape, shape_reads_inputs=True,
                                         batch=batching.FamilyRule(_unsorted_batch))


@_unsorted_segment_op("UnsortedSegmentSum", dtypes=NUMERIC_TYPES)
def _unsorted_segment_sum(data, segment_ids, num_segments):
    return _unsorted_reduce(np.add, 0, data, segment_ids, num_segments)


@_unsorted_segment_sum.def_grad(reads_inputs=(1,))
def _unsorted_segment_sum_grad(op, dy):
    return _with_none_for_sizes(op, _gather_dropping_negatives(dy, op.inputs[1]))   # each row: its segment's gradient


@tf_export("math.unsorted_segment_sum")
def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums rows of `data` into `num_segments` segments given by `segment_ids` (negative ids dropped).

    >>> import tapeflow as tf
    >>> tf.math.unsorted_segment_sum(tf.constant([1.0, 2.0, 3.0]), tf.constant([1, -1, 1]), 2).numpy()
    array([0., 4.], dtype=float32)
    """
    return _unsorted_op(_unsorted_segment_sum, data, segment_ids, num_segments)
