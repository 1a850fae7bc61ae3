"""Array ops: shapes, joins, gathers and the tensor constructors."""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import execute, no_gradient, op
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.framework.variables import Variable
from tapeflow.ops.grad_util import unbroadcast


def _int_list(value, what):
    """A shape-like argument (list, TensorShape or int tensor) as a tuple of ints."""
    if isinstance(value, TensorShape):
        value = value.as_list()
    if isinstance(value, Tensor):
        value = np.asarray(value._value).tolist()
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{what} must be a list of integers, got {value!r}") from None


# -- constructors ------------------------------------------------------------

def zeros(shape, dtype=dtypes.float32, name=None):
    """A tensor of zeros."""
    return Tensor(np.zeros(_int_list(shape, "shape"), dtypes.as_dtype(dtype)._np))


def ones(shape, dtype=dtypes.float32, name=None):
    """A tensor of ones."""
    return Tensor(np.ones(_int_list(shape, "shape"), dtypes.as_dtype(dtype)._np))


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with the scalar `value`."""
    value = convert_to_tensor(value)
    if value._value.ndim:
        raise InvalidArgumentError(None, "Fill", f"value must be a scalar, got shape {list(value._value.shape)} [Op:Fill]")
    return Tensor(np.full(_int_list(dims, "dims"), value._value, value._value.dtype))


def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shape of `input` as a 1-D integer tensor."""
    x = _any_tensor(input)
    return Tensor(np.asarray(x._value.shape, dtypes.as_dtype(out_type)._np))


def size(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The number of elements of `input` as a scalar integer tensor."""
    return Tensor(np.asarray(np.size(_any_tensor(input)._value), dtypes.as_dtype(out_type)._np))


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as a scalar int32 tensor."""
    return Tensor(np.asarray(np.ndim(_any_tensor(input)._value), np.int32))


def _any_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else convert_to_tensor(x)


# -- identity and reshapes ---------------------------------------------------------

@op("Identity", same_dtype=False)
def _identity(x):
    return x


@_identity.def_grad
def _identity_grad(op, dy):
    return dy                                            # d x = dx


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value (a new tape node)."""
    return execute(_identity, (convert_to_tensor(input),), {})


@op("StopGradient", same_dtype=False)
def _stop_gradient(x):
    return x


no_gradient("StopGradient")


def stop_gradient(input, name=None):  # noqa: A002
    """The identity whose gradient is None: the input is treated as a constant."""
    return execute(_stop_gradient, (convert_to_tensor(input),), {})


@op("Reshape", same_dtype=False)
def _reshape(x, shape):
    return np.reshape(x, shape)


@_reshape.def_grad
def _reshape_grad(op, dy):
    return reshape(dy, op.inputs[0]._value.shape)       # reshape back


def reshape(tensor, shape, name=None):
    """Reshapes `tensor`; one dimension may be -1.

    Raises:
      InvalidArgumentError: the element counts differ.
    """
    x = tensor if type(tensor) is Tensor else convert_to_tensor(tensor)
    new_shape = shape if type(shape) is tuple else _int_list(shape, "shape")
    return execute(_reshape, (x,), {"shape": new_shape})


@op("BroadcastTo", same_dtype=False)
def _broadcast_to(x, shape):
    return np.broadcast_to(x, shape)


@_broadcast_to.def_grad
def _broadcast_to_grad(op, dy):
    return unbroadcast(dy, op.inputs[0]._value.shape)   # sum over the broadcast axes


def broadcast_to(input, shape, name=None):  # noqa: A002
    """Broadcasts `input` to `shape` (NumPy rules).

    Raises:
      InvalidArgumentError: the shapes are not broadcast-compatible.
    """
    return execute(_broadcast_to, (convert_to_tensor(input),), {"shape": _int_list(shape, "shape")})


@op("Transpose", same_dtype=False)
def _transpose(x, perm):
    return np.transpose(x, perm)


@_transpose.def_grad
def _transpose_grad(op, dy):
    return _transpose_op(dy, tuple(np.argsort(op.get_attr("perm")).tolist()))   # inverse permutation


def _transpose_op(x, perm):
    return execute(_transpose, (x,), {"perm": perm})


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes the axes (reverses them when `perm` is None); conjugates if asked."""
    from tapeflow.ops import math_ops
    x = convert_to_tensor(a)
    rank_ = x._value.ndim
    perm = tuple(range(rank_ - 1, -1, -1)) if perm is None else _int_list(perm, "perm")
    if sorted(p % rank_ if rank_ else p for p in perm) != list(range(rank_)):
        raise InvalidArgumentError(None, "Transpose", f"{list(perm)} is not a valid permutation of {rank_} dimensions [Op:Transpose]")
    out = _transpose_op(x, tuple(p % rank_ for p in perm))
    return math_ops.conj(out) if conjugate else out


# -- joins and splits ---------------------------------------------------------

@op("Pack")
def _pack(*xs, axis):
    return np.stack(xs, axis=axis)


@_pack.def_grad
def _pack_grad(op, dy):
    return unstack(dy, num=len(op.inputs), axis=op.get_attr("axis"))   # split back along the new axis


def stack(values, axis=0, name="stack"):
    """Stacks same-shaped tensors along a new axis.

    Raises:
      ValueError: an axis out of range.
      InvalidArgumentError: shapes differ.
    """
    from tapeflow.framework.op_def import convert_inputs
    xs = convert_inputs(values)
    rank_ = xs[0]._value.ndim if xs else 0
    if not -rank_ - 1 <= axis <= rank_:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank_ - 1}, {rank_ + 1})")
    return execute(_pack, xs, {"axis": axis % (rank_ + 1)})


@op("Unpack", same_dtype=False, num_outputs=-1)
def _unpack(x, num, axis):
    return tuple(np.take(x, i, axis=axis) for i in range(num))


@_unpack.def_grad
def _unpack_grad(op, *dys):
    return stack(list(dys), axis=op.get_attr("axis"))   # restack the pieces


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits a tensor along `axis` into a list of tensors of one rank less."""
    x = convert_to_tensor(value)
    rank_ = x._value.ndim
    if not -rank_ <= axis < rank_:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank_}, {rank_})")
    axis %= rank_
    n = x._value.shape[axis]
    if num is not None and num != n:
        raise InvalidArgumentError(None, "Unpack", f"Input shape axis {axis} must equal {num}, got shape {list(x._value.shape)} [Op:Unpack]")
    if n == 0:
        return []
    return list(execute(_unpack, (x,), {"num": n, "axis": axis}))


@op("ConcatV2")
def _concat(*xs, axis):
    return np.concatenate(xs, axis=axis)


@_concat.def_grad
def _concat_grad(op, dy):
    axis = op.get_attr("axis")
    sizes = [t._value.shape[axis] for t in op.inputs]
    return _split_op(dy, sizes, axis)                    # each input gets its slice


def concat(values, axis, name="concat"):
    """Joins tensors along an existing axis.

    Raises:
      InvalidArgumentError: ranks or the other dimensions differ, or axis is out of range.
    """
    from tapeflow.framework.op_def import convert_inputs
    xs = convert_inputs(values if isinstance(values, (list, tuple)) else [values])
    if len(xs) == 1:
        return identity(xs[0])
    rank_ = xs[0]._value.ndim
    axis = int(axis)
    if not -rank_ <= axis < rank_:
        raise InvalidArgumentError(None, "ConcatV2", f"ConcatOp : Expected concatenating dimensions in the range [{-rank_}, {rank_}), but got {axis} [Op:ConcatV2]")
    return execute(_concat, xs, {"axis": axis % rank_})


@op("SplitV", same_dtype=False, num_outputs=-1)
def _split(x, sizes, axis):
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


@_split.def_grad
def _split_grad(op, *dys):
    return concat(list(dys), op.get_attr("axis"))       # put the pieces back together


def _split_op(x, sizes, axis):
    return list(execute(_split, (x,), {"sizes": tuple(sizes), "axis": axis}))


# -- gathers ------------------------------------------------------------------

@op("GatherV2", same_dtype=False)
def _gather(params, indices, axis):
    n = params.shape[axis]
    idx = np.asarray(indices)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = idx.ravel()[np.argmax((idx.ravel() < 0) | (idx.ravel() >= n))]
        raise ValueError(f"indices = {int(bad)} is not in [0, {n})")
    return np.take(params, idx, axis=axis)


@_gather.def_grad
def _gather_grad(op, dy):
    params, indices = op.inputs
    axis = op.get_attr("axis")
    pshape = params._value.shape
    if axis == 0:                                      # rows of dy land on the gathered rows
        return _indexed_slices_grad(dy, indices, pshape), None
    perm = (axis,) + tuple(i for i in range(len(pshape)) if i != axis)
    idx_rank = indices._value.ndim
    # Move the gathered axes of dy to the front, scatter-add, and move back.
    dy_perm = tuple(range(axis, axis + idx_rank)) + tuple(range(axis)) + tuple(range(axis + idx_rank, dy._value.ndim))
    from tapeflow.ops import math_ops
    moved = math_ops.unsorted_segment_sum(_transpose_op(dy, dy_perm), indices, pshape[axis])
    return _transpose_op(moved, tuple(np.argsort(perm).tolist())), None


def _indexed_slices_grad(dy, indices, pshape):
    values = reshape(dy, (-1,) + tuple(pshape[1:]))
    flat_indices = reshape(indices, (-1,))
    return IndexedSlices(values, flat_indices, Tensor(np.asarray(pshape, np.int32)))


@op("ResourceGather", same_dtype=False)
def _resource_gather(params, indices):
    return _gather.kernel(params, indices, 0)


@_resource_gather.def_grad
def _resource_gather_grad(op, dy):
    var, indices = op.inputs                           # a sparse update of the variable's rows
    return _indexed_slices_grad(dy, indices, var._value.shape), None


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Gathers slices of `params` along `axis` at `indices`.

    The gradient with respect to `params` is an IndexedSlices for axis 0.

    Raises:
      InvalidArgumentError: an index out of range.
    """
    if batch_dims:
        raise ValueError("gather: batch_dims other than 0 are not supported; use tf.gather_nd.")
    indices = convert_to_tensor(indices)
    if indices._value.dtype.kind not in "iu":
        raise TypeError(f"indices must be an integer tensor, got {indices.dtype.name}.")
    axis = 0 if axis is None else int(axis)
    if isinstance(params, Variable) and axis == 0:
        params._note_access()
        return execute(_resource_gather, (params, indices), {})
    params = convert_to_tensor(params)
    rank_ = params._value.ndim
    if not -rank_ <= axis < rank_:
        raise InvalidArgumentError(None, "GatherV2", f"Expected axis in the range [{-rank_}, {rank_}), but got {axis} [Op:GatherV2]")
    return execute(_gather, (params, indices), {"axis": axis % rank_})


__all__ = [
    "broadcast_to", "concat", "fill", "gather", "identity", "ones", "rank", "reshape", "shape",
    "size", "stack", "stop_gradient", "transpose", "unstack", "zeros",
]
