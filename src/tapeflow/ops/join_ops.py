"""Joins, splits and pads: `stack`, `unstack`, `concat`, `split`, `pad`.

Axes and sizes are static attrs; in graphs, split sizes known only when the
graph runs are an int tensor input (Note [size inputs] in `ops/core/primitives.py`),
and the gradient of a concat whose sizes are unknown until then slices its
inputs' blocks at offsets read when the graph runs.  A pad joins the input
with constant or mirrored borders; its gradient is the inner block of `dy`
(with the mirrored borders folded back onto it).  No gradient here reads an
input's value (Note [static shapes in gradients] in ops/core/primitives.py).
"""

import builtins

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import LINEAR, convert_inputs, execute, op, raise_type_mismatch
from tapeflow.framework.shapes.known_values import concat_value
from tapeflow.framework.shapes.shape_rules import merge_shapes
from tapeflow.framework.shapes.symbolic_tensors import Meta, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import math_ops, scatter_ops, slicing_ops
from tapeflow.ops.array_ops import _axis_attr, identity
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.arguments import _int_input, _shape_error, _shape_str, int_input
from tapeflow.ops.core.primitives import _dense, _stacked_inputs, shape_tensor
from tapeflow.ops.core import basic_ops


def _concat_shape(*xs, axis):
    """TensorFlow's rule: the sizes along `axis` add up (unknown if one is), the other dims merge."""
    first = xs[0].shape
    for i, x in enumerate(xs[1:], 1):
        if len(x.shape) != len(first):
            raise ValueError(f"Shape must be rank {len(first)} but is rank {len(x.shape)} for 'ConcatV2': "
                             f"shapes {list(first)} and {list(x.shape)} (input {i})")
    rest = merge_shapes([x.shape[:axis] + x.shape[axis + 1:] for x in xs], "Dimensions of inputs to ConcatV2 "
                        "should match")
    sizes = [x.shape[axis] for x in xs]
    total = None if None in sizes else sum(sizes)
    return [Meta(rest[:axis] + (total,) + rest[axis:], xs[0].dtype)]


@op("ConcatV2", shape=_concat_shape, value_rule=concat_value, accepts_indexed_slices=True, jvp=LINEAR)
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


@_concat.def_batch
def _concat_batch(xs, batched, axis):
    return execute(_concat, _stacked_inputs(xs, batched), {"axis": axis + 1}), True


@_concat.def_grad(reads_inputs=False)
def _concat_grad(op, dy):
    axis = op.get_attr("axis")                          # each input gets its slice of dy
    sizes = [t._value.shape[axis] for t in op.inputs]
    if None not in sizes:
        if type(dy) is IndexedSlices:
            return _concat_grad_sparse(dy, op.inputs, sizes, axis)
        return _split_op(_dense(dy), sizes, axis)
    return _concat_grad_slices(_dense(dy), op.inputs, axis)


def _concat_grad_sparse(dy, xs, sizes, axis):
    """IndexedSlices for each input, as TensorFlow's: along axis 0 the rows of dy falling in
    the input's block (indices shifted to it), along another axis dy's values split there."""
    if axis:
        pieces = _split_op(dy.values, sizes, axis)
        return [IndexedSlices(v, dy.indices, shape_tensor(x)) for v, x in zip(pieces, xs, strict=True)]
    grads, start = [], 0
    for x, n in zip(xs, sizes, strict=True):
        inside = math_ops.logical_and(math_ops.greater_equal(dy.indices, start), math_ops.less(dy.indices, start + n))
        rows = primitives.reshape(math_ops.where(inside), [-1])
        indices = scatter_ops.gather(dy.indices, rows) - basic_ops.cast(start, dy.indices.dtype)
        grads.append(IndexedSlices(scatter_ops.gather(dy.values, rows), indices, shape_tensor(x)))
        start += n
    return grads


def _concat_grad_slices(dy, xs, axis):
    """Each input's block of dy at offsets known when the graph runs (TF's ConcatOffset + Slice)."""
    rank_ = dy._value.ndim
    offset, grads = 0, []
    for x in xs:
        size = shape_tensor(x)                          # a constant when x's shape is static
        grads.append(slicing_ops.slice(dy, [0] * axis + [offset] + [0] * (rank_ - axis - 1), size))
        n = x._value.shape[axis]
        offset = offset + (size[axis] if n is None else n)
    return grads


@tf_export("concat")
def concat(values, axis, name="concat"):
    """Joins tensors along an existing axis.

    Raises:
      InvalidArgumentError: ranks or the other dimensions differ, or axis is out of range.
    """
    xs = convert_inputs(values if isinstance(values, (list, tuple)) else [values], list_of="ConcatV2")
    if not xs:
        raise _shape_error("ConcatV2", "concat needs at least one tensor in `values`")
    if len(xs) == 1:
        return identity(xs[0])
    rank_ = known_rank(xs[0], "ConcatV2")
    if rank_ == 0:
        raise _shape_error("ConcatV2", "ConcatOp : Can't concatenate scalars (use tf.stack instead)")
    axis = _concat_axis(axis)
    if not -rank_ <= axis < rank_:
        raise _shape_error("ConcatV2", f"ConcatOp : Expected concatenating dimensions in the range "
                                       f"[{-rank_}, {rank_}), but got {axis}")
    return execute(_concat, xs, {"axis": axis % rank_})


def _concat_axis(axis):
    """concat's `axis` as an int, its conversion errors as TensorFlow's (Note [int inputs])."""
    value = int_input(axis, "axis", "ConcatV2")
    if value.size != 1 or (value.ndim and state.graphs):   # the kernel takes a vector of one, not the shape function
        raise _shape_error("ConcatV2", f"axis of concat must be a scalar, got shape {list(value.shape)}")
    return int(value.reshape(()))


def _split_kernel(x, sizes, axis):
    return tuple(np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))


def _split_even_shape(x, num_split, axis):
    """In graphs: equal parts of the split axis, unknown when its size is."""
    shape = list(x.shape)
    n = shape[axis]
    if n is not None and n % num_split:
        raise ValueError(f"Dimension size must be evenly divisible by {num_split} but is {n} for 'Split' "
                         f"(split_dim {axis}) [Op:Split]")
    shape[axis] = None if n is None else n // num_split
    return [primitives.meta(shape, x.dtype)] * num_split


@op("Split", same_dtype=False, num_outputs=-1, shape=_split_even_shape, jvp=LINEAR)
def _split_even(x, num_split, axis):
    n = x.shape[axis]
    if n % num_split:
        raise ValueError(f"Number of ways to split should evenly divide the split dimension, but got split_dim "
                         f"{axis} (size = {n}) and num_split {num_split}")
    return _split_kernel(x, (n // num_split,) * num_split, axis)


@_split_even.def_batch
def _split_even_batch(xs, batched, num_split, axis):
    return execute(_split_even, xs, {"num_split": num_split, "axis": axis + 1}), True


def _split_sizes(sizes, n):
    """SplitV's sizes with the -1 worked out; ValueError when they do not fit n elements."""
    if sizes.count(-1) > 1:
        raise ValueError("There can only be one -1 in the input.")
    known = sum(s for s in sizes if s != -1)
    if (-1 in sizes and known > n) or (-1 not in sizes and known != n) or any(s < -1 for s in sizes):
        raise ValueError("Determined shape must either match input shape along split_dim exactly if fully "
                         "specified, or be less than the size of the input along split_dim if not fully "
                         f"specified.  Got: {known}")
    return [n - known if s == -1 else s for s in sizes]


def _split_shape(x, sizes, axis):
    """In graphs: the split axis gets the known sizes (all unknown unless every size is known, as in TF)."""
    shape = list(x._value.shape)
    parts = primitives.vector(sizes, "num_or_size_splits", "SplitV")
    n = shape[axis]
    known = sum(p for p in parts if p not in (None, -1))
    if None in parts:
        parts = [None] * len(parts)
    elif -1 in parts:
        if n is not None and known > n:
            raise ValueError(f"Total size of the outputs of SplitV ({known}) exceeds the size {n} of dimension "
                             f"{axis} of the input [Op:SplitV]")
        parts = [(None if n is None else n - known) if p == -1 else p for p in parts]
    elif n is not None and known != n:
        raise ValueError(f"The sizes of the outputs of SplitV add up to {known}, not to the size {n} of dimension "
                         f"{axis} of the input [Op:SplitV]")
    return [primitives.meta(shape[:axis] + [p] + shape[axis + 1:], x._value.dtype) for p in parts]


@op("SplitV", same_dtype=False, num_outputs=-1, shape=_split_shape, shape_reads_inputs=True, jvp=LINEAR)
def _split(x, sizes, axis):
    if type(sizes) is np.ndarray:                       # a size input: checked when the graph runs
        sizes = _split_sizes(sizes.tolist(), x.shape[axis])
    return _split_kernel(x, sizes, axis)


@_split.def_batch
def _split_batch(xs, batched, axis, sizes=None):
    if len(xs) > 1 and batched[1]:
        raise batching.NotBatchable                     # sizes per example
    attrs = {"axis": axis + 1} if sizes is None else {"sizes": sizes, "axis": axis + 1}
    return execute(_split, xs, attrs), True


@_split_even.def_grad(reads_inputs=False)
@_split.def_grad(reads_inputs=False)
def _split_grad(op, *dys):
    dx = concat([_dense(d) for d in dys], op.get_attr("axis"))   # put the pieces back together
    return dx if len(op.inputs) == 1 else (dx, None)


def _split_op(x, sizes, axis):
    return list(execute(_split, (x,), {"sizes": tuple(sizes), "axis": axis}))


@tf_export("split")
def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Splits `value` along `axis` into equal parts (an int) or parts of given sizes (a list, one may be -1).

    In graphs, the sizes may be a 1-D int tensor of known length or hold
    scalar tensors; they are then checked when the graph runs.

    Raises:
      InvalidArgumentError: sizes that do not add up, an uneven split or an axis out of range.
      ValueError: a count that is a scalar but not a Python int (a float, a string, a scalar
        tensor), as in TensorFlow.

    >>> import tapeflow as tf
    >>> [t.shape[1] for t in tf.split(tf.zeros([2, 5]), [1, -1], axis=1)]
    [1, 4]
    """
    x = convert_to_tensor(value)
    rank_ = known_rank(x, "Split")
    splits = num_or_size_splits
    if isinstance(splits, (int, np.integer)):
        if splits < 1:
            raise _shape_error("Split", f"Value for attr 'num_split' of {int(splits)} must be at least minimum 1")
        if not -rank_ <= int(axis) < rank_:
            raise _shape_error("Split", f"-input rank(-{rank_}) <= split_dim < input rank ({rank_}), "
                                        f"but got {int(axis)}")
        return list(execute(_split_even, (x,), {"num_split": int(splits), "axis": int(axis) % rank_}))
    rank_0 = splits._value.ndim == 0 if isinstance(splits, Tensor) else (
        splits is not None and not isinstance(splits, (list, tuple)) and np.ndim(splits) == 0)
    if rank_0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to split (give an "
                         f"int or a list of sizes). Argument provided: {splits}")
    # sizes are converted without a dtype: floats fail the dtype check (Note [int inputs])
    sizes = primitives.ints_or_tensor(splits, "num_or_size_splits", "SplitV", _int_input("SplitV", "any"))
    if isinstance(sizes, Tensor):
        return _split_dynamic(x, sizes, axis, num)
    sizes = list(sizes)
    if num is not None and num != len(sizes):
        raise _shape_error("SplitV", f"size of the split_tensor must be 1-D and have the same elements "
                                     f"as outputs got 1 -D and {len(sizes)} elements")
    if not sizes:
        raise InvalidArgumentError(None, "SplitV", "num_or_size_splits must name at least one size [Op:SplitV]")
    axis = _axis_attr(axis, rank_, "SplitV", "split_dim")
    n = x._value.shape[axis]
    if n is None:                                       # unknown until the graph runs: checked then
        return _split_dynamic(x, Tensor(np.asarray(sizes, np.int32)), axis, num)
    try:
        sizes = _split_sizes(sizes, n)
    except ValueError as e:
        raise _shape_error("SplitV", str(e)) from None
    return _split_op(x, sizes, axis)


def _split_dynamic(x, sizes, axis, num):
    """SplitV with its sizes as an int tensor input, read when the graph runs (Note [size inputs])."""
    count = sizes._value.shape[0] if sizes._value.ndim == 1 else None
    if count is None:
        raise ValueError(f"Cannot infer argument `num` from shape {sizes.shape}: the sizes of tf.split must be "
                         "a 1-D tensor of known length.")
    if num is not None and num != count:
        raise _shape_error("SplitV", f"size of the split_tensor must be 1-D and have the same "
                                     f"elements as outputs got 1 -D and {count} elements")
    axis = _axis_attr(axis, x._value.ndim, "SplitV", "split_dim")
    return list(execute(_split, (x, sizes), {"axis": axis}))


# -- pads: a join of the input with constant or mirrored borders -----------------------------------

def _padded_shape(x, paddings, sign, op_type):
    """In graphs: each size plus (sign 1) or minus (-1) its paddings, unknown unless all three are known."""
    shape = tuple(x._value.shape)
    rows = primitives.matrix(paddings, "paddings", op_type)
    if len(rows) != len(shape) or any(len(r) != 2 for r in rows):
        raise ValueError(f"The first dimension of paddings must be the rank of inputs: paddings of shape "
                         f"[{len(rows)}, 2] for an input of shape {list(shape)} [Op:{op_type}]")
    dims = [None if d is None or b is None or a is None else d + sign * (b + a) for d, (b, a) in zip(shape, rows)]
    return [primitives.meta(dims, x._value.dtype)]


def _pad_shape(x, constant_values, paddings):
    return _padded_shape(x, paddings, 1, "PadV2")


# x and the value share a dtype (_pad_value); the paddings are ints
@op("PadV2", same_dtype=False, shape=_pad_shape, shape_reads_inputs=True, jvp=LINEAR)
def _pad(x, constant_values, paddings):
    return np.pad(x, paddings, constant_values=constant_values)


@_pad.def_batch
def _pad_batch(xs, batched, paddings=None):
    xs, attrs = _pads_batch(xs, batched, 2, paddings)
    x, value = xs[0], xs[1]
    if not batched[0]:
        x = primitives.broadcast_batch(x, primitives.batch_size_of(value))
    if not batched[1]:
        return execute(_pad, [x] + xs[1:], attrs), True
    # a value per example: pad with zeros, then each example's value outside the input's block
    inside = execute(_pad, [math_ops.ones_like(x, dtype=bool), Tensor(np.zeros((), bool))] + xs[2:], attrs)
    padded = execute(_pad, [x, Tensor(np.zeros((), x._value.dtype))] + xs[2:], attrs)
    return math_ops.where(inside, padded, primitives.insert_axes(value, 1, x._value.ndim - 1)), True


def _pads_batch(xs, batched, at, paddings):
    """The inputs and attrs of a pad op (paddings in attr `paddings` or input `at`) with a
    (0, 0) row of paddings for the batch axis."""
    if len(xs) <= at:
        return list(xs), {"paddings": ((0, 0),) + tuple(paddings)}
    if batched[at]:
        raise batching.NotBatchable                     # paddings per example
    pads = xs[at]
    row = Tensor(np.zeros((1, 2), pads._value.dtype))
    return list(xs[:at]) + [concat([row, pads], 0)] + list(xs[at + 1:]), {}


@_pad.def_grad(reads_inputs=(2,))    # the paddings, when they are an input
def _pad_grad(op, dy):
    if len(op.inputs) == 3:                             # paddings known when the graph runs
        x, _, paddings = op.inputs
        sizes = shape_tensor(x, paddings._value.dtype)
        return slicing_ops.slice(_dense(dy), paddings[:, 0], sizes), None, None
    block = tuple(builtins.slice(b, -a if a else None) for b, a in op.get_attr("paddings"))
    return slicing_ops._getitem(_dense(dy), block), None


_MIRROR_MODES = ("REFLECT", "SYMMETRIC")


def _mirror_pad_shape(x, paddings, mode):
    return _padded_shape(x, paddings, 1, "MirrorPad")


@op("MirrorPad", same_dtype=False, shape=_mirror_pad_shape, shape_reads_inputs=True, jvp=LINEAR)
def _mirror_pad(x, paddings, mode):
    if type(paddings) is np.ndarray:                    # a size input: checked when the graph runs
        error = _pads_error(paddings.tolist(), x.shape, mode)
        if error:
            raise ValueError(error)
    return np.pad(x, paddings, mode=mode.lower())


@_mirror_pad.def_batch
def _mirror_pad_batch(xs, batched, mode, paddings=None):
    xs, attrs = _pads_batch(xs, batched, 1, paddings)
    return execute(_mirror_pad, xs, {**attrs, "mode": mode}), True


def _pads_error(pads, shape, mode):
    """Why the [before, after] rows `pads` cannot pad `shape` in `mode`; None when they can."""
    for (b, a), d in zip(pads, shape, strict=True):
        if b < 0 or a < 0:
            return f"Paddings must be non-negative: {b} {a}"
        if d is None:                                   # unknown until the graph runs
            continue
        if mode == "REFLECT" and (b >= d or a >= d):
            return f"paddings must be less than the dimension size: {b}, {a} not less than {d}"
        if mode == "SYMMETRIC" and (b > d or a > d):
            return f"paddings must be no greater than the dimension size: {b}, {a} greater than {d}"
    return None


@_mirror_pad.def_grad(reads_inputs=(1,))    # the paddings, when they are an input
def _mirror_pad_grad(op, dy):                           # fold the mirrored borders back onto the input
    if len(op.inputs) == 2:
        return execute(_mirror_pad_grad_op, (_dense(dy), op.inputs[1]), {"mode": op.get_attr("mode")}), None
    attrs = {"paddings": op.get_attr("paddings"), "mode": op.get_attr("mode")}
    return execute(_mirror_pad_grad_op, (_dense(dy),), attrs)


def _mirror_source(n, before, after, mode):
    """For each position of a mirror-padded axis, the input position it copies."""
    q = np.arange(-before, n + after)
    shift = 0 if mode == "REFLECT" else 1
    q = np.where(q < 0, -q - shift, q)
    return np.where(q >= n, 2 * n - 2 + shift - q, q)


def _mirror_pad_grad_shape(dy, paddings, mode):
    return _padded_shape(dy, paddings, -1, "MirrorPadGrad")


@op("MirrorPadGrad", same_dtype=False, shape=_mirror_pad_grad_shape, shape_reads_inputs=True)
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


@_mirror_pad_grad_op.def_batch
def _mirror_pad_grad_batch(xs, batched, mode, paddings=None):
    xs, attrs = _pads_batch(xs, batched, 1, paddings)
    return execute(_mirror_pad_grad_op, xs, {**attrs, "mode": mode}), True


@_mirror_pad_grad_op.def_grad(reads_inputs=(1,))
def _mirror_pad_grad_grad(op, ddx):                    # folding is the adjoint of mirroring
    if len(op.inputs) == 2:
        return execute(_mirror_pad, (_dense(ddx), op.inputs[1]), {"mode": op.get_attr("mode")}), None
    attrs = {"paddings": op.get_attr("paddings"), "mode": op.get_attr("mode")}
    return execute(_mirror_pad, (_dense(ddx),), attrs)


@tf_export("pad")
def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads `tensor` with `paddings[i] = [before, after]` entries along axis i.

    Modes: "CONSTANT" (with `constant_values`), "REFLECT" (mirror without the
    edge; pads < dim) and "SYMMETRIC" (mirror with the edge; pads <= dim).
    In graphs, `paddings` may be an int tensor or hold scalar tensors.

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
    known_rank(x, op_type)
    if state.graphs:
        known = primitives.sizes_or_tensor(paddings, "paddings", op_type)
        if isinstance(known, Tensor):
            return _pad_dynamic(x, known, mode, constant_values)
        paddings = paddings if known is None else known
    pads = int_input(paddings, "paddings", op_type)
    shape = x._value.shape
    if pads.ndim != 2 or pads.shape[1] != 2:
        raise _shape_error(op_type, f"paddings must be a matrix with 2 columns: {_shape_str(pads.shape)}")
    if pads.shape[0] != len(shape):
        raise _shape_error(op_type, f"The first dimension of paddings must be the rank of inputs"
                                    f"{_shape_str(pads.shape)} {_shape_str(shape)}")
    pads = tuple((int(b), int(a)) for b, a in pads.tolist())
    if any(b < 0 or a < 0 for b, a in pads):        # TF's shape function checks signs, its kernel the sizes
        raise _shape_error(op_type, _pads_error(pads, shape, mode))
    error = _pads_error(pads, shape, mode)
    if error:
        raise InvalidArgumentError(None, op_type, f"{error} [Op:{op_type}]")
    if mode != "CONSTANT":
        if None in shape:                               # the mirror checks wait until the graph runs
            return _pad_dynamic(x, Tensor(np.asarray(pads, np.int32)), mode, constant_values)
        return execute(_mirror_pad, (x,), {"paddings": pads, "mode": mode})
    return execute(_pad, (x, _pad_value(x, constant_values)), {"paddings": pads})


def _pad_value(x, constant_values):
    """The scalar tensor that tf.pad pads with, of x's dtype."""
    if isinstance(constant_values, int) and constant_values == 0:
        constant_values = np.zeros((), x._value.dtype)    # the default fits every dtype, bool included
    value = convert_inputs([x, constant_values])[1]
    if value._value.dtype != x._value.dtype:
        raise_type_mismatch(_pad.type, 1, x._value.dtype, value._value.dtype)
    if value._value.ndim:
        raise InvalidArgumentError(None, "PadV2", f"constant_values must be a scalar. Got shape "
                                   f"{_shape_str(value._value.shape)} [Op:PadV2]")
    return value


def _pad_dynamic(x, paddings, mode, constant_values):
    """tf.pad with paddings known when the graph runs: an int [rank, 2] tensor input (Note [size inputs])."""
    shape_ = tuple(paddings._value.shape)
    if shape_ != (x._value.ndim, 2):
        raise ValueError(f"paddings must be a [{x._value.ndim}, 2] int tensor for an input of rank "
                         f"{x._value.ndim}, got one of shape {list(shape_)} [Op:PadV2]")
    if mode != "CONSTANT":
        return execute(_mirror_pad, (x, paddings), {"mode": mode})
    return execute(_pad, (x, _pad_value(x, constant_values), paddings), {})
