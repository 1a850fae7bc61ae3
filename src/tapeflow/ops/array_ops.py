"""Array ops: identity, reshapes, broadcast_to, transpose, tile, reverse, one_hot, clip_by_value,
clip_by_norm, and `newaxis`.

Index-like arguments (shapes, permutations, axes, multiples) are static attrs
of the ops; in graphs, sizes known only when the graph runs are int tensor
inputs instead (Note [size inputs] in `ops/core/primitives.py`).  Each gradient is
written with tapeflow ops, so it can be differentiated again, and reads no
input value it does not need (Note [static shapes in gradients] in ops/core/primitives.py).
The tensor constructors live in `constructor_ops`, joins, splits and pads in
`join_ops`, slicing in `slicing_ops`, the gathers, scatters, `where` and
`unique` in `scatter_ops`.
"""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state, tapes_paused
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import LINEAR, execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import identity_value
from tapeflow.framework.shapes.symbolic_tensors import Meta, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core import batching, primitives
# The constructors and shape queries (`constructor_ops`) stay reachable as
# `array_ops.zeros` etc. (`range` is not imported: it would hide the builtin).
from tapeflow.ops.core.arguments import _int_input, _shape_error, check_list_entries, int_attr_list, int_input, typed_index
from tapeflow.ops.core.primitives import _dense, _reshape_to_input, reshape
from tapeflow.ops.core import basic_ops

newaxis = tf_export("newaxis")(None)        # `x[tf.newaxis]` inserts an axis


def _axis_attr(axis, rank_, op_type, what="axis"):
    """An int axis in [-rank, rank) made non-negative; InvalidArgumentError otherwise (ValueError
    while a graph is built: Note [build-time shape errors] in framework/shapes/shape_rules.py)."""
    if isinstance(axis, Tensor):
        axis = axis._value
    axis = int(axis)
    if not -rank_ <= axis < rank_:
        raise _shape_error(op_type, f"Expected {what} in the range [{-rank_}, {rank_}), but got {axis}")
    return axis % rank_


# -- identity and stop_gradient -------------------------------------------------

# Note [unknown rank] in framework/shapes/symbolic_tensors.py: the identities take inputs of unknown rank.
@op("Identity", same_dtype=False, shape=shape_rules.unchanged_shape, unknown_rank=True, value_rule=identity_value,
    accepts_indexed_slices=True, batch=batching.ELEMENTWISE, jvp=LINEAR)
def _identity(x):
    return x


@_identity.def_grad(reads_inputs=False)
def _identity_grad(op, dy):
    return dy                                            # d x = dx


@tf_export("identity")
def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value (a new tape node)."""
    return execute(_identity, (convert_to_tensor(input),), {})


@op("IdentityN", same_dtype=False, num_outputs=-1, shape=shape_rules.unchanged_shapes, unknown_rank=True,
    accepts_indexed_slices=True, batch=batching.PASSING)
def _identity_n(*xs):
    return xs


@_identity_n.def_grad(reads_inputs=False)
def _identity_n_grad(op, *dys):
    return list(dys)                                     # each output passes its gradient through


@tf_export("identity_n")
def identity_n(input, name=None):  # noqa: A002
    """The identity on a list of tensors (of any dtypes); returns a list."""
    values = input if isinstance(input, (list, tuple)) else list(input)
    return list(execute(_identity_n, [convert_to_tensor(v) for v in values], {}))


@op("StopGradient", same_dtype=False, shape=shape_rules.unchanged_shape, unknown_rank=True, differentiable=False,
    value_rule=identity_value, batch=batching.ELEMENTWISE)
def _stop_gradient(x):
    return x


@tf_export("stop_gradient")
def stop_gradient(input, name=None):  # noqa: A002
    """The identity whose gradient is None: the input is treated as a constant.

    No tape records it (as TensorFlow's tape skips StopGradient), so a tape does not
    trace its output either: gradients with respect to it, and to tensors computed
    only from it, are None unless it is watched.
    """
    x = convert_to_tensor(input)
    if state.tapes:
        with tapes_paused():
            return execute(_stop_gradient, (x,), {})
    return execute(_stop_gradient, (x,), {})


# -- reshapes ------------------------------------------------------------------


def _squeeze_shape(x, squeeze_dims):
    """In graphs: the listed axes go (an unknown size is taken to be 1); without a list, the size-1
    axes, and an unknown rank when a size is unknown (TensorFlow's rule)."""
    if not squeeze_dims and (x.shape is None or None in x.shape):
        return [Meta(None, x.dtype)]
    for a in squeeze_dims:
        if x.shape[a] not in (1, None):
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
    drop = squeeze_dims or tuple(i for i, d in enumerate(x.shape) if d == 1)
    return [Meta(tuple(d for i, d in enumerate(x.shape) if i not in drop), x.dtype)]


# `squeeze` asks for the rank when given axes; without, any rank is taken
@op("Squeeze", same_dtype=False, shape=_squeeze_shape, unknown_rank=True, jvp=LINEAR)
def _squeeze(x, squeeze_dims):
    for a in squeeze_dims:
        if x.shape[a] != 1:
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {x.shape[a]}")
    axes = squeeze_dims or tuple(i for i, d in enumerate(x.shape) if d == 1)
    return np.squeeze(x, axes)


@_squeeze.def_batch
def _squeeze_batch(xs, batched, squeeze_dims):
    x = xs[0]
    if not squeeze_dims:                                # every size-1 axis of the example
        shape = x._value.shape
        if shape is None or None in shape[1:]:
            raise batching.NotBatchable
        squeeze_dims = tuple(i for i, d in enumerate(shape[1:]) if d == 1)
    return execute(_squeeze, (x,), {"squeeze_dims": batching.shift_axes(squeeze_dims)}), True


@_squeeze.def_grad(reads_inputs=False)
def _squeeze_grad(op, dy):
    return _reshape_to_input(dy, op.inputs[0])          # reinsert the size-1 axes


@tf_export("squeeze")
def squeeze(input, axis=None, name=None):  # noqa: A002
    """Removes size-1 axes: all of them, or those in `axis`.

    Raises:
      InvalidArgumentError: an axis out of range or of size other than 1.
    """
    x = convert_to_tensor(input)
    axes = () if axis is None else int_attr_list(axis, "axis", "squeeze")
    rank_ = known_rank(x, "Squeeze") if axes else x._value.ndim
    for a in axes:
        if not -rank_ <= a < rank_:
            raise _shape_error("Squeeze", f"Tried to squeeze dim index {a} for tensor with {rank_} dimensions.")
    return execute(_squeeze, (x,), {"squeeze_dims": tuple(sorted({a % rank_ for a in axes}))})


# -- tile, reverse (pad: join_ops) ---------------------------------------------

def _tile_shape(x, multiples):
    """In graphs: each size times its multiple (unknown when either is, but 0 and 1 times are known)."""
    shape = tuple(x._value.shape)
    reps = primitives.vector(multiples, "multiples", "Tile")
    if len(reps) != len(shape):
        raise ValueError(f"Expected multiples argument to be a vector of length {len(shape)} but got length "
                         f"{len(reps)} [Op:Tile]")
    return [primitives.meta([_times(d, m) for d, m in zip(shape, reps)], x._value.dtype)]


def _times(d, m):
    if d == 0 or m == 0:
        return 0
    if m == 1 or d == 1:
        return d if m == 1 else m
    return None if d is None or m is None else d * m


@op("Tile", same_dtype=False, shape=_tile_shape, shape_reads_inputs=True, jvp=LINEAR)
def _tile(x, multiples):
    return np.tile(x, multiples)


@_tile.def_batch
def _tile_batch(xs, batched, multiples=None):
    if len(xs) > 1:
        if batched[1]:
            raise batching.NotBatchable                 # multiples per example
        reps = basic_ops.cast(xs[1], dtypes.int64)
        return tile(xs[0], primitives.prepend(1, reps)), True          # the batch axis repeated once
    return execute(_tile, xs, {"multiples": (1,) + tuple(multiples)}), True


@_tile.def_grad(reads_inputs=(1,))   # the multiples, when they are an input
def _tile_grad(op, dy):
    x = op.inputs[0]                                    # sum the copies: view dy as [m0, d0, m1, d1, ...]
    shape = x._value.shape
    split = None if len(op.inputs) > 1 else tuple(v for pair in zip(op.get_attr("multiples"), shape, strict=True)
                                                  for v in pair)
    if split is not None and (None not in shape or (split.count(None) == 1 and 0 not in split)):
        split = tuple(-1 if d is None else d for d in split)   # one unknown dimension (and no 0): reshape infers it
    else:                                               # sizes known when the graph runs
        sizes = op.inputs[1] if len(op.inputs) == 2 else None
        reps = list(op.get_attr("multiples")) if sizes is None else primitives.entries(sizes, len(shape))
        dims = primitives.dims_of(x, np.int32 if sizes is None else sizes._value.dtype)
        split = [v for pair in zip(reps, dims, strict=True) for v in pair]
    summed = primitives.reduce_sum(reshape(_dense(dy), split), axis=tuple(range(0, 2 * len(shape), 2)))
    dx = _reshape_to_input(summed, x)
    return dx if len(op.inputs) == 1 else (dx, None)


@tf_export("tile")
def tile(input, multiples, name=None):  # noqa: A002
    """Repeats `input` `multiples[i]` times along axis i; in graphs `multiples` may hold tensors.

    Raises:
      InvalidArgumentError: `multiples` not of length rank, or negative.
      ValueError: in graphs, a `multiples` tensor not of length rank.
    """
    x = convert_to_tensor(input)
    reps = primitives.ints_or_tensor(multiples, "multiples", "Tile", _int_input("Tile"))
    if isinstance(reps, Tensor):
        return execute(_tile, (x, reps), {})
    if len(reps) != known_rank(x, "Tile"):
        raise _shape_error("Tile", f"Expected multiples argument to be a vector of length {x._value.ndim} but got "
                                   f"length {len(reps)}")
    for i, m in enumerate(reps):
        if m < 0:
            raise InvalidArgumentError(None, "Tile", f"Expected multiples[{i}] >= 0, but got {m} [Op:Tile]")
    return execute(_tile, (x,), {"multiples": reps})


@op("ReverseV2", same_dtype=False, shape=shape_rules.unchanged_shape, jvp=LINEAR)
def _reverse(x, axis):
    return np.flip(x, axis) if axis else x


@_reverse.def_batch
def _reverse_batch(xs, batched, axis):
    return execute(_reverse, xs, {"axis": batching.shift_axes(axis)}), True


@_reverse.def_grad(reads_inputs=False)
def _reverse_grad(op, dy):
    return execute(_reverse, (_dense(dy),), {"axis": op.get_attr("axis")})   # reversing is its own inverse


@tf_export("reverse")
def reverse(tensor, axis, name=None):
    """Reverses `tensor` along each axis in the 1-D list `axis`.

    Raises:
      InvalidArgumentError: an axis out of range or repeated, or `axis` not 1-D.
    """
    x = convert_to_tensor(tensor)
    axes = int_input(axis, "axis", "ReverseV2")
    if axes.ndim != 1:
        raise _shape_error("ReverseV2", f"'dims' must be 1-dimension, not {axes.ndim}")
    rank_ = known_rank(x, "ReverseV2")
    seen = []
    for i, a in enumerate(axes.tolist()):
        if not -rank_ <= a < rank_:
            raise _shape_error("ReverseV2", f"'axis'[{i}] = {a} is out of valid range [0, {rank_ - 1}")
        if a % rank_ in seen:
            raise _shape_error("ReverseV2", f"axis {a % rank_} specified more than once.")
        seen.append(a % rank_)
    return execute(_reverse, (x,), {"axis": tuple(sorted(seen))})


# -- one_hot, clip_by_value ---------------------------------------------------

_ONE_HOT_INDICES = frozenset(np.dtype(d) for d in (np.uint8, np.int8, np.int32, np.int64))


def _one_hot_shape(indices, on_value, off_value, depth, axis):
    """indices' shape with a new axis of size `depth` at `axis`; the on/off values' dtype."""
    return [Meta(indices.shape[:axis] + (depth,) + indices.shape[axis:], on_value.dtype)]


# TensorFlow: not differentiable in any input
@op("OneHot", same_dtype=False, shape=_one_hot_shape, differentiable=False)
def _one_hot(indices, on_value, off_value, depth, axis):
    hits = np.expand_dims(indices, axis) == np.arange(depth).reshape((-1,) + (1,) * (indices.ndim - axis))
    return np.where(hits, on_value, off_value)


@_one_hot.def_batch
def _one_hot_batch(xs, batched, depth, axis):
    if batched[1] or batched[2]:
        raise batching.NotBatchable                     # on/off values per example
    return execute(_one_hot, xs, {"depth": depth, "axis": axis + 1}), True


@tf_export("one_hot")
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
    try:
        given, indices = indices, convert_to_tensor(indices)
    except (ValueError, InvalidArgumentError):          # TF's class for a bad list (Note [typed index inputs])
        if isinstance(indices, (list, tuple)):
            check_list_entries(indices)
        raise
    if indices._value.dtype not in _ONE_HOT_INDICES:     # TI defaults to int64: True, [] convert to it
        indices = typed_index(given, "indices", "OneHot", "TI", _ONE_HOT_INDICES, dtypes.int64)
    dtype, on, off = _one_hot_values(on_value, off_value, dtype)
    depth = int(depth._value if isinstance(depth, Tensor) else depth)
    if depth < 0:
        raise InvalidArgumentError(None, "OneHot", f"depth must be non-negative, got: {depth} [Op:OneHot]")
    rank_ = known_rank(indices, "OneHot")
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


