"""Array ops: identity, reshapes, joins and splits, tile, pad, reverse, one_hot, clip_by_value.

Index-like arguments (shapes, permutations, axes, paddings, multiples) are
static attrs of the ops; each gradient is written with tapeflow ops, so it can
be differentiated again.  The tensor constructors live in `constructor_ops`,
slicing in `slicing_ops`, the n-d gathers and scatters in `scatter_ops`.
"""

import builtins

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import convert_inputs, execute, no_gradient, op
from tapeflow.framework.tensor import Tensor, _contains_tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops.grad_util import unbroadcast

# The constructors and shape queries (`constructor_ops`) stay reachable as
# `array_ops.zeros` etc. (`range` is not imported: it would hide the builtin).
from tapeflow.ops.constructor_ops import (  # noqa: F401  (re-exported)
    _int_list, eye, fill, linspace, meshgrid, ones, rank, shape, shape_n, size, zeros,
)


def _dense(t):
    """A gradient as a dense tensor (IndexedSlices are summed into place)."""
    return t if type(t) is Tensor else convert_to_tensor(t)


def _shape_str(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def _axis_attr(axis, rank_, op_type, what="axis"):
    """An int axis in [-rank, rank) made non-negative; InvalidArgumentError otherwise."""
    if isinstance(axis, Tensor):
        axis = axis._value
    axis = int(axis)
    if not -rank_ <= axis < rank_:
        raise InvalidArgumentError(
            None, op_type, f"Expected {what} in the range [{-rank_}, {rank_}), but got {axis} [Op:{op_type}]")
    return axis % rank_


# -- identity and stop_gradient -------------------------------------------------

@op("Identity", same_dtype=False)
def _identity(x):
    return x


@_identity.def_grad
def _identity_grad(op, dy):
    return dy                                            # d x = dx


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value (a new tape node)."""
    return execute(_identity, (convert_to_tensor(input),), {})


@op("IdentityN", same_dtype=False, num_outputs=-1)
def _identity_n(*xs):
    return xs


@_identity_n.def_grad
def _identity_n_grad(op, *dys):
    return list(dys)                                     # each output passes its gradient through


def identity_n(input, name=None):  # noqa: A002
    """The identity on a list of tensors (of any dtypes); returns a list."""
    values = input if isinstance(input, (list, tuple)) else list(input)
    return list(execute(_identity_n, [convert_to_tensor(v) for v in values], {}))


@op("StopGradient", same_dtype=False)
def _stop_gradient(x):
    return x


no_gradient("StopGradient")                            # the input is a constant to the tape


def stop_gradient(input, name=None):  # noqa: A002
    """The identity whose gradient is None: the input is treated as a constant."""
    return execute(_stop_gradient, (convert_to_tensor(input),), {})


# -- reshapes ------------------------------------------------------------------

def _resolve_shape(input_shape, shape):
    """TensorFlow's Reshape checks; returns `shape` with its -1 filled in.

    With a zero among the requested sizes, the -1 is found from the nonzero
    sizes only (TensorFlow's rule), e.g. [0, 3] -> [3, 0, -1] gives [3, 0, 1].
    """
    unknown, known = None, 1
    for i, d in enumerate(shape):
        if d == -1:
            if unknown is not None:
                raise ValueError(f"Only one input size may be -1, not both {unknown} and {i}")
            unknown = i
        elif d < 0:
            raise ValueError(f"Size {i} must be non-negative, not {d}")
        elif d:
            known *= d
    size_ = int(np.prod(input_shape, dtype=np.int64))
    has_zero = 0 in shape
    if unknown is None:
        if (0 if has_zero else known) != size_:
            raise ValueError(f"Input to reshape is a tensor with {size_} values, but the requested shape has "
                             f"{0 if has_zero else known}")
        return shape
    if has_zero:
        nonzero = int(np.prod([d for d in input_shape if d], dtype=np.int64))
        return shape[:unknown] + (nonzero // known,) + shape[unknown + 1:]
    if size_ % known:
        raise ValueError(f"Input to reshape is a tensor with {size_} values, but the requested shape requires "
                         f"a multiple of {known}")
    return shape[:unknown] + (size_ // known,) + shape[unknown + 1:]


@op("Reshape", same_dtype=False)
def _reshape(x, shape):
    if -1 in shape or min(shape, default=0) < 0 or 0 in shape:
        shape = _resolve_shape(x.shape, shape)
    try:
        return np.reshape(x, shape)
    except ValueError:
        return np.reshape(x, _resolve_shape(x.shape, shape))


def _reshape_shape(x, shape):
    """Static shape of a reshape in a graph: -1 resolved when the input size is known."""
    from tapeflow.graph.graph import Meta
    dims = list(shape)
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known *= d
        size = None if None in x.shape else int(np.prod(x.shape, dtype=np.int64))
        dims[dims.index(-1)] = None if size is None or known == 0 else size // known
    return [Meta(tuple(dims), x.dtype)]


_reshape.shape_fn = _reshape_shape


@_reshape.def_grad
def _reshape_grad(op, dy):
    x = op.inputs[0]                                    # reshape back
    if None in x._value.shape:                          # unknown until the graph runs
        from tapeflow.ops.grad_util import reshape_like
        return reshape_like(dy, x)
    return reshape(dy, x._value.shape)


def reshape(tensor, shape, name=None):
    """Reshapes `tensor`; one dimension may be -1.

    Raises:
      InvalidArgumentError: the element counts differ, or several -1.

    >>> import tapeflow as tf
    >>> tf.reshape(tf.range(6), [2, -1]).shape
    TensorShape([2, 3])
    """
    x = tensor if type(tensor) is Tensor else convert_to_tensor(tensor)
    new_shape = shape if type(shape) is tuple else _int_list(shape, "shape")
    return execute(_reshape, (x,), {"shape": new_shape})


@op("Squeeze", same_dtype=False)
def _squeeze(x, squeeze_dims):
    for a in squeeze_dims:
        if x.shape[a] != 1:
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
    axes = squeeze_dims or tuple(i for i, d in enumerate(x.shape) if d == 1)
    return np.squeeze(x, axes)


def _squeeze_shape(x, squeeze_dims):
    """In graphs: the listed axes go (an unknown size is taken to be 1); without a list, the size-1 axes."""
    from tapeflow.graph.graph import Meta
    if not squeeze_dims and None in x.shape:
        raise ValueError(f"tf.squeeze of a tensor of partly unknown shape {list(x.shape)} needs `axis`.")
    for a in squeeze_dims:
        if x.shape[a] not in (1, None):
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
    drop = squeeze_dims or tuple(i for i, d in enumerate(x.shape) if d == 1)
    return [Meta(tuple(d for i, d in enumerate(x.shape) if i not in drop), x.dtype)]


_squeeze.shape_fn = _squeeze_shape


@_squeeze.def_grad
def _squeeze_grad(op, dy):
    return _reshape_to_input(dy, op.inputs[0])          # reinsert the size-1 axes


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Removes size-1 axes: all of them, or those in `axis`.

    Raises:
      InvalidArgumentError: an axis out of range or of size other than 1.
    """
    x = convert_to_tensor(input)
    rank_ = x._value.ndim
    axes = () if axis is None else _int_list(axis, "axis")
    for a in axes:
        if not -rank_ <= a < rank_:
            raise InvalidArgumentError(
                None, "Squeeze", f"Tried to squeeze dim index {a} for tensor with {rank_} dimensions. [Op:Squeeze]")
    return execute(_squeeze, (x,), {"squeeze_dims": tuple(sorted({a % rank_ for a in axes}))})


@op("ExpandDims", same_dtype=False)
def _expand_dims(x, dim):
    return np.expand_dims(x, dim)


@_expand_dims.def_grad
def _expand_dims_grad(op, dy):
    return _reshape_to_input(dy, op.inputs[0])          # drop the inserted axis


def _reshape_to_input(dy, x):
    """dy reshaped to x's shape, read when the graph runs if x has unknown dimensions."""
    if None in x._value.shape:
        from tapeflow.ops.grad_util import reshape_like
        return reshape_like(dy, x)
    return reshape(dy, x._value.shape)


def expand_dims(input, axis, name=None):  # noqa: A002
    """Inserts a size-1 axis at `axis` (in [-rank-1, rank]).

    Raises:
      InvalidArgumentError: `axis` out of range or not a single value.
    """
    x = convert_to_tensor(input)
    if axis is None:
        raise ValueError("Attempt to convert a value (None) with an unsupported type (<class 'NoneType'>) to a Tensor.")
    axes = _int_list(axis, "axis")
    if len(axes) != 1:
        raise InvalidArgumentError(None, "ExpandDims", "'dim' must be a tensor with a single value [Op:ExpandDims]")
    rank_ = x._value.ndim
    a = axes[0]
    if not -rank_ - 1 <= a <= rank_:
        raise InvalidArgumentError(
            None, "ExpandDims", f"Tried to expand dim index {a} for tensor with {rank_} dimensions. [Op:ExpandDims]")
    return execute(_expand_dims, (x,), {"dim": a % (rank_ + 1)})


@op("BroadcastTo", same_dtype=False)
def _broadcast_to(x, shape):
    try:
        return np.broadcast_to(x, shape)
    except ValueError:
        raise ValueError(f"Incompatible shapes: {_shape_str(x.shape)} vs. {_shape_str(shape)}") from None


@_broadcast_to.def_grad
def _broadcast_to_grad(op, dy):
    return unbroadcast(_dense(dy), op.inputs[0]._value.shape)   # sum over the broadcast axes


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
    return _transpose_op(_dense(dy), tuple(np.argsort(op.get_attr("perm")).tolist()))   # inverse permutation


def _transpose_op(x, perm):
    return execute(_transpose, (x,), {"perm": perm})


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes the axes (reverses them when `perm` is None); conjugates if asked.

    Raises:
      InvalidArgumentError: `perm` is not a permutation of the axes.
    """
    from tapeflow.ops import math_ops
    x = convert_to_tensor(a)
    rank_ = x._value.ndim
    perm = tuple(range(rank_ - 1, -1, -1)) if perm is None else _int_list(perm, "perm")
    if len(perm) != rank_:
        raise InvalidArgumentError(None, "Transpose", f"transpose expects a vector of size {rank_}. But input(1) is "
                                   f"a vector of size {len(perm)} [Op:Transpose]")
    for p in perm:
        if not -rank_ <= p < rank_:
            raise InvalidArgumentError(None, "Transpose", f"{p} is out of range [0 .. {rank_}) [Op:Transpose]")
    perm = tuple(p % rank_ for p in perm)
    missing = sorted(set(range(rank_)) - set(perm))
    if missing:
        raise InvalidArgumentError(None, "Transpose", f"{missing[0]} is missing from "
                                   f"{{{','.join(map(str, perm))}}}. [Op:Transpose]")
    out = _transpose_op(x, perm)
    return math_ops.conj(out) if conjugate else out


# -- joins and splits ---------------------------------------------------------

@op("Pack")
def _pack(*xs, axis):
    shape = xs[0].shape
    for i, x in enumerate(xs):
        if x.shape != shape:
            raise ValueError(f"Shapes of all inputs must match: values[0].shape = {_shape_str(shape)} != "
                             f"values[{i}].shape = {_shape_str(x.shape)}")
    return np.stack(xs, axis=axis)


@_pack.def_grad
def _pack_grad(op, dy):
    return unstack(_dense(dy), num=len(op.inputs), axis=op.get_attr("axis"))   # split back along the new axis


def stack(values, axis=0, name="stack"):
    """Stacks same-shaped tensors along a new axis.

    Raises:
      ValueError: an axis out of range.
      InvalidArgumentError: shapes differ.
    """
    if not values:
        return Tensor(np.zeros(0, np.float32))
    if axis == 0 and not _contains_tensor(values):
        return convert_to_tensor(values)                # plain values: one dtype for the whole list
    xs = convert_inputs(values)
    rank_ = xs[0]._value.ndim
    if not -rank_ - 1 <= axis <= rank_:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank_ - 1}, {rank_ + 1})")
    return execute(_pack, xs, {"axis": axis % (rank_ + 1)})


@op("Unpack", same_dtype=False, num_outputs=-1)
def _unpack(x, num, axis):
    moved = np.moveaxis(x, axis, 0) if axis else x
    return tuple(moved[i, ...] for i in range(num))     # `...` keeps 0-d pieces arrays


@_unpack.def_grad
def _unpack_grad(op, *dys):
    return stack([_dense(d) for d in dys], axis=op.get_attr("axis"))   # restack the pieces


def unstack(value, num=None, axis=0, name="unstack"):
    """Splits a tensor along `axis` into a list of tensors of one rank less.

    Raises:
      ValueError: `axis` out of range (scalars cannot be unstacked).
      InvalidArgumentError: `num` differs from the size of `axis`.
    """
    x = convert_to_tensor(value)
    rank_ = x._value.ndim
    if not -rank_ <= axis < rank_:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank_}, {rank_})")
    axis %= rank_
    n = x._value.shape[axis]
    if num is not None and num != n:
        raise InvalidArgumentError(None, "Unpack", f"Input shape axis {axis} must equal {num}, got shape "
                                   f"{_shape_str(x._value.shape)} [Op:Unpack]")
    if n == 0:
        return []
    return list(execute(_unpack, (x,), {"num": n, "axis": axis}))


@op("ConcatV2")
def _concat(*xs, axis):
    first = xs[0].shape
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != len(first):
            raise ValueError(f"ConcatOp : Ranks of all input tensors should match: shape[0] = {_shape_str(first)} "
                             f"vs. shape[{i}] = {_shape_str(x.shape)}")
        for d, (a, b) in enumerate(zip(first, x.shape, strict=True)):
            if d != axis and a != b:
                raise ValueError(f"ConcatOp : Dimension {d} in both shapes must be equal: shape[0] = "
                                 f"{_shape_str(first)} vs. shape[{i}] = {_shape_str(x.shape)}")
    return np.concatenate(xs, axis=axis)


@_concat.def_grad
def _concat_grad(op, dy):
    axis = op.get_attr("axis")
    sizes = [t._value.shape[axis] for t in op.inputs]
    return _split_op(_dense(dy), sizes, axis)          # each input gets its slice


def concat(values, axis, name="concat"):
    """Joins tensors along an existing axis.

    Raises:
      InvalidArgumentError: ranks or the other dimensions differ, or axis is out of range.
    """
    xs = convert_inputs(values if isinstance(values, (list, tuple)) else [values])
    if not xs:
        raise ValueError("concat needs at least one tensor in `values`.")
    if len(xs) == 1:
        return identity(xs[0])
    rank_ = xs[0]._value.ndim
    if rank_ == 0:
        raise InvalidArgumentError(None, "ConcatV2", "ConcatOp : Can't concatenate scalars (use tf.stack instead) "
                                   "[Op:ConcatV2]")
    axis = int(axis._value if isinstance(axis, Tensor) else axis)
    if not -rank_ <= axis < rank_:
        raise InvalidArgumentError(None, "ConcatV2", f"ConcatOp : Expected concatenating dimensions in the range "
                                   f"[{-rank_}, {rank_}), but got {axis} [Op:ConcatV2]")
    return execute(_concat, xs, {"axis": axis % rank_})


def _split_kernel(x, sizes, axis):
    return tuple(np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))


@op("Split", same_dtype=False, num_outputs=-1)
def _split_even(x, num_split, axis):
    n = x.shape[axis]
    if n % num_split:
        raise ValueError(f"Number of ways to split should evenly divide the split dimension, but got split_dim "
                         f"{axis} (size = {n}) and num_split {num_split}")
    return _split_kernel(x, (n // num_split,) * num_split, axis)


@op("SplitV", same_dtype=False, num_outputs=-1)
def _split(x, sizes, axis):
    return _split_kernel(x, sizes, axis)


def _split_grad(op, *dys):
    return concat([_dense(d) for d in dys], op.get_attr("axis"))   # put the pieces back together


_split_even.def_grad(_split_grad)
_split.def_grad(_split_grad)


def _split_op(x, sizes, axis):
    return list(execute(_split, (x,), {"sizes": tuple(sizes), "axis": axis}))


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits `value` along `axis` into equal parts (an int) or parts of given sizes (a list, one may be -1).

    Raises:
      InvalidArgumentError: sizes that do not add up, an uneven split or an axis out of range.

    >>> import tapeflow as tf
    >>> [t.shape[1] for t in tf.split(tf.zeros([2, 5]), [1, -1], axis=1)]
    [1, 4]
    """
    x = convert_to_tensor(value)
    rank_ = x._value.ndim
    splits = num_or_size_splits
    if isinstance(splits, Tensor) and splits._value.ndim == 0:
        splits = int(splits._value)
    if isinstance(splits, (int, np.integer)):
        if splits < 1:
            raise InvalidArgumentError(None, "Split", f"Value for attr 'num_split' of {int(splits)} must be at "
                                       "least minimum 1 [Op:Split]")
        if not -rank_ <= int(axis) < rank_:
            raise InvalidArgumentError(None, "Split", f"-input rank(-{rank_}) <= split_dim < input rank ({rank_}), "
                                       f"but got {int(axis)} [Op:Split]")
        return list(execute(_split_even, (x,), {"num_split": int(splits), "axis": int(axis) % rank_}))
    sizes = list(_int_list(splits, "num_or_size_splits"))
    if num is not None and num != len(sizes):
        raise InvalidArgumentError(None, "SplitV", f"size of the split_tensor must be 1-D and have the same elements "
                                   f"as outputs got 1 -D and {len(sizes)} elements [Op:SplitV]")
    if not sizes:
        raise InvalidArgumentError(None, "SplitV", "num_or_size_splits must name at least one size [Op:SplitV]")
    axis = _axis_attr(axis, rank_, "SplitV", "split_dim")
    n = x._value.shape[axis]
    if sizes.count(-1) > 1:
        raise InvalidArgumentError(None, "SplitV", "There can only be one -1 in the input. [Op:SplitV]")
    known = sum(s for s in sizes if s != -1)
    if (-1 in sizes and known > n) or (-1 not in sizes and known != n) or any(s < -1 for s in sizes):
        raise InvalidArgumentError(
            None, "SplitV", "Determined shape must either match input shape along split_dim exactly if fully "
            "specified, or be less than the size of the input along split_dim if not fully specified.  "
            f"Got: {known} [Op:SplitV]")
    sizes = [n - known if s == -1 else s for s in sizes]
    return _split_op(x, sizes, axis)


# -- tile, pad, reverse -------------------------------------------------------

@op("Tile", same_dtype=False)
def _tile(x, multiples):
    return np.tile(x, multiples)


@_tile.def_grad
def _tile_grad(op, dy):
    from tapeflow.ops import math_ops
    shape = op.inputs[0]._value.shape                   # sum the copies: view dy as [m0, d0, m1, d1, ...]
    split = tuple(v for pair in zip(op.get_attr("multiples"), shape, strict=True) for v in pair)
    if list(shape).count(None) == 1:                    # one unknown dimension (graphs): let reshape infer it
        split = tuple(-1 if d is None else d for d in split)
    summed = math_ops.reduce_sum(reshape(_dense(dy), split), axis=tuple(range(0, len(split), 2)))
    return _reshape_to_input(summed, op.inputs[0])


def tile(input, multiples, name=None):  # noqa: A002
    """Repeats `input` `multiples[i]` times along axis i.

    Raises:
      InvalidArgumentError: `multiples` not of length rank, or negative.
    """
    x = convert_to_tensor(input)
    reps = _int_list(multiples, "multiples")
    if len(reps) != x._value.ndim:
        raise InvalidArgumentError(None, "Tile", f"Expected multiples argument to be a vector of length "
                                   f"{x._value.ndim} but got length {len(reps)} [Op:Tile]")
    for i, m in enumerate(reps):
        if m < 0:
            raise InvalidArgumentError(None, "Tile", f"Expected multiples[{i}] >= 0, but got {m} [Op:Tile]")
    return execute(_tile, (x,), {"multiples": reps})


@op("PadV2")
def _pad(x, constant_values, paddings):
    return np.pad(x, paddings, constant_values=constant_values)


@_pad.def_grad
def _pad_grad(op, dy):
    from tapeflow.ops import slicing_ops                # the gradient is the unpadded block of dy
    block = tuple(builtins.slice(b, -a if a else None) for b, a in op.get_attr("paddings"))
    return slicing_ops._getitem(_dense(dy), block), None


_MIRROR_MODES = ("REFLECT", "SYMMETRIC")


@op("MirrorPad", same_dtype=False)
def _mirror_pad(x, paddings, mode):
    return np.pad(x, paddings, mode=mode.lower())


@_mirror_pad.def_grad
def _mirror_pad_grad(op, dy):                           # fold the mirrored borders back onto the input
    attrs = {"paddings": op.get_attr("paddings"), "mode": op.get_attr("mode")}
    return execute(_mirror_pad_grad_op, (_dense(dy),), attrs)


def _mirror_source(n, before, after, mode):
    """For each position of a mirror-padded axis, the input position it copies."""
    q = np.arange(-before, n + after)
    shift = 0 if mode == "REFLECT" else 1
    q = np.where(q < 0, -q - shift, q)
    return np.where(q >= n, 2 * n - 2 + shift - q, q)


@op("MirrorPadGrad", same_dtype=False)
def _mirror_pad_grad_op(dy, paddings, mode):
    out = dy
    for axis, (before, after) in enumerate(paddings):
        if before == after == 0:
            continue
        n = out.shape[axis] - before - after
        moved = np.moveaxis(out, axis, 0)
        folded = np.zeros((n,) + moved.shape[1:], dy.dtype)
        np.add.at(folded, _mirror_source(n, before, after, mode), moved)
        out = np.moveaxis(folded, 0, axis)
    return out


@_mirror_pad_grad_op.def_grad
def _mirror_pad_grad_grad(op, ddx):                    # folding is the adjoint of mirroring
    attrs = {"paddings": op.get_attr("paddings"), "mode": op.get_attr("mode")}
    return execute(_mirror_pad, (_dense(ddx),), attrs)


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads `tensor` with `paddings[i] = [before, after]` entries along axis i.

    Modes: "CONSTANT" (with `constant_values`), "REFLECT" (mirror without the
    edge; pads < dim) and "SYMMETRIC" (mirror with the edge; pads <= dim).

    Raises:
      ValueError: an unknown mode.
      InvalidArgumentError: paddings of the wrong shape, negative, or too large to mirror.

    >>> import tapeflow as tf
    >>> tf.pad(tf.constant([1, 2, 3]), [[2, 1]], mode="REFLECT").numpy()
    array([3, 2, 1, 2, 3, 2], dtype=int32)
    """
    x = convert_to_tensor(tensor)
    mode = mode.upper()
    if mode not in ("CONSTANT",) + _MIRROR_MODES:
        raise ValueError('Value of argument `mode` expected to be one of "CONSTANT", "REFLECT", or "SYMMETRIC". '
                         f"Received `mode` = {mode}")
    op_type = "Pad" if mode == "CONSTANT" else "MirrorPad"
    pads = np.asarray(paddings._value if isinstance(paddings, Tensor) else paddings)
    shape = x._value.shape
    if pads.ndim != 2 or pads.shape[1] != 2:
        raise InvalidArgumentError(None, op_type, f"paddings must be a matrix with 2 columns: "
                                   f"{_shape_str(pads.shape)} [Op:{op_type}]")
    if pads.shape[0] != len(shape):
        raise InvalidArgumentError(None, op_type, f"The first dimension of paddings must be the rank of inputs"
                                   f"{_shape_str(pads.shape)} {_shape_str(shape)} [Op:{op_type}]")
    pads = tuple((int(b), int(a)) for b, a in pads.tolist())
    for (b, a), d in zip(pads, shape, strict=True):
        if b < 0 or a < 0:
            raise InvalidArgumentError(None, op_type, f"Paddings must be non-negative: {b} {a} [Op:{op_type}]")
        if mode == "REFLECT" and (b >= d or a >= d):
            raise InvalidArgumentError(None, op_type, f"paddings must be less than the dimension size: {b}, {a} "
                                       f"not less than {d} [Op:{op_type}]")
        if mode == "SYMMETRIC" and (b > d or a > d):
            raise InvalidArgumentError(None, op_type, f"paddings must be no greater than the dimension size: "
                                       f"{b}, {a} greater than {d} [Op:{op_type}]")
    if mode != "CONSTANT":
        return execute(_mirror_pad, (x,), {"paddings": pads, "mode": mode})
    if isinstance(constant_values, int) and constant_values == 0:
        constant_values = np.zeros((), x._value.dtype)    # the default fits every dtype, bool included
    value = convert_inputs([x, constant_values])[1]
    if value._value.ndim:
        raise InvalidArgumentError(None, "PadV2", f"constant_values must be a scalar. Got shape "
                                   f"{_shape_str(value._value.shape)} [Op:PadV2]")
    return execute(_pad, (x, value), {"paddings": pads})


@op("ReverseV2", same_dtype=False)
def _reverse(x, axis):
    return np.flip(x, axis) if axis else x


@_reverse.def_grad
def _reverse_grad(op, dy):
    return execute(_reverse, (_dense(dy),), {"axis": op.get_attr("axis")})   # reversing is its own inverse


def reverse(tensor, axis, name=None):
    """Reverses `tensor` along each axis in the 1-D list `axis`.

    Raises:
      InvalidArgumentError: an axis out of range or repeated, or `axis` not 1-D.
    """
    x = convert_to_tensor(tensor)
    axes = np.asarray(axis._value if isinstance(axis, Tensor) else axis)
    if axes.ndim != 1:
        raise InvalidArgumentError(None, "ReverseV2", f"'dims' must be 1-dimension, not {axes.ndim} [Op:ReverseV2]")
    rank_ = x._value.ndim
    seen = []
    for i, a in enumerate(axes.astype(np.int64).tolist()):
        if not -rank_ <= a < rank_:
            raise InvalidArgumentError(None, "ReverseV2", f"'axis'[{i}] = {a} is out of valid range [0, {rank_ - 1} "
                                       "[Op:ReverseV2]")
        if a % rank_ in seen:
            raise InvalidArgumentError(None, "ReverseV2", f"axis {a % rank_} specified more than once. [Op:ReverseV2]")
        seen.append(a % rank_)
    return execute(_reverse, (x,), {"axis": tuple(sorted(seen))})


# -- one_hot, clip_by_value ---------------------------------------------------

_ONE_HOT_INDICES = frozenset(np.dtype(d) for d in (np.uint8, np.int8, np.int32, np.int64))


@op("OneHot", same_dtype=False)
def _one_hot(indices, on_value, off_value, depth, axis):
    hits = np.expand_dims(indices, axis) == np.arange(depth).reshape((-1,) + (1,) * (indices.ndim - axis))
    return np.where(hits, on_value, off_value)


no_gradient("OneHot")                                  # TensorFlow: not differentiable in any input


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot encoding: `on_value` where `indices == k` along a new axis of size `depth`.

    Out-of-range indices (negative or >= depth) give rows of `off_value`. The
    dtype is `dtype`, else that of `on_value`/`off_value`, else float32.

    Raises:
      TypeError: on/off values of different dtypes, or not matching `dtype`.
      InvalidArgumentError: non-integer indices, negative depth or a bad axis.

    >>> import tapeflow as tf
    >>> tf.one_hot([0, 2], 3).numpy()
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    indices = convert_to_tensor(indices)
    if indices._value.dtype not in _ONE_HOT_INDICES:
        raise InvalidArgumentError(None, "OneHot", f"Value for attr 'TI' of {indices.dtype.name} is not in the "
                                   "list of allowed values: uint8, int8, int32, int64 [Op:OneHot]")
    dtype, on, off = _one_hot_values(on_value, off_value, dtype)
    depth = int(depth._value if isinstance(depth, Tensor) else depth)
    if depth < 0:
        raise InvalidArgumentError(None, "OneHot", f"depth must be non-negative, got: {depth} [Op:OneHot]")
    rank_ = indices._value.ndim
    axis = -1 if axis is None else int(axis)
    if not (axis == -1 or 0 <= axis <= rank_):
        raise InvalidArgumentError(None, "OneHot", f"Expected axis to be -1 or between [0, {rank_ + 1}).  But "
                                   f"received: {axis} [Op:OneHot]")
    return execute(_one_hot, (indices, on, off), {"depth": depth, "axis": rank_ if axis == -1 else axis})


def _one_hot_values(on_value, off_value, dtype):
    """The output dtype and the on/off scalars of one_hot (TensorFlow's inference)."""
    hint = None if dtype is None else dtypes.as_dtype(dtype)
    on = None if on_value is None else convert_to_tensor(on_value, dtype_hint=hint)
    off = None if off_value is None else convert_to_tensor(off_value, dtype_hint=hint)
    given = [(w, t) for w, t in (("on_value", on), ("off_value", off)) if t is not None]
    if hint is not None:
        for what, t in given:
            if t.dtype != hint:
                raise TypeError(f"dtype {t.dtype!r} of {what} does not match dtype parameter {hint!r}")
    if on is not None and off is not None and on.dtype != off.dtype:
        raise TypeError(f"dtype {on.dtype!r} of on_value does not match dtype {off.dtype!r} of off_value")
    dtype = hint or (given[0][1].dtype if given else dtypes.float32)
    on = on if on is not None else Tensor(np.ones((), dtype._np))
    off = off if off is not None else Tensor(np.zeros((), dtype._np))
    return dtype, on, off


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips `t` to [clip_value_min, clip_value_max] as `maximum(minimum(t, max), min)`.

    The bounds may broadcast against `t` but not enlarge it. Gradients follow
    TensorFlow: `t` gets the gradient where min <= t <= max (ties included),
    a bound gets it where `t` lies strictly beyond it.

    Raises:
      ValueError: the bounds would broadcast `t` to a larger shape.
      InvalidArgumentError: incompatible shapes or dtypes.
    """
    from tapeflow.ops import math_ops
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_value(t.values, clip_value_min, clip_value_max), t.indices, t.dense_shape)
    values = convert_to_tensor(t)
    out = math_ops.maximum(math_ops.minimum(values, clip_value_max), clip_value_min)
    if out._value.shape != values._value.shape:
        raise ValueError(f"Shapes {TensorShape(values._value.shape)} and {TensorShape(out._value.shape)} "
                         "are incompatible")
    return out


__all__ = [
    "broadcast_to", "clip_by_value", "concat", "expand_dims", "identity", "identity_n", "one_hot", "pad", "reshape",
    "reverse", "split", "squeeze", "stack", "stop_gradient", "tile", "transpose", "unstack",
]

from tapeflow.ops.slicing_ops import _getitem  # noqa: E402,F401  (Tensor.__getitem__, via operators)


# The gathers live in `scatter_ops`; `array_ops.gather` stays for the callers that use it.
from tapeflow.ops.scatter_ops import boolean_mask, gather  # noqa: E402,F401
