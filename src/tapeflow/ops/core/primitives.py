"""The primitive ops the machinery needs, with the helpers built on them.

Batching rules, gradient rules and the vectorization driver all reshape,
broadcast, stack, cast and sum; those ops' own rules need the same helpers.
So they live here together, one recursive group, below every op family:

- layout: `reshape`, `expand_dims`, `broadcast_to`, `transpose`, `stack`,
  `unstack`, and `reduce_sum` (on the simpler ops of ops/core/basic_ops.py);
- batching helpers (Note [batching rules] in ops/core/vectorization.py):
  `prepend`, `insert_axes`, `broadcast_batch`, `stacked_all`, `align_ranks`;
- gradient helpers: the one place broadcasting is undone (`unbroadcast`,
  `binary_grads`, `reduction_grad`) and the *ToShapeOf ops for shapes known
  only when a graph runs (Note [static shapes in gradients] below);
- size inputs.

Note [size inputs]: eagerly, and in graphs whenever the sizes are Python
values or known constants, ops take their sizes (shapes, multiples, paddings,
begin/size) as static attrs (the fast path).  When part of a size argument is a
symbolic tensor (`[tf.shape(x)[0] * 3]`, `tf.shape(x)`), the op takes it as an
int32/int64 tensor input instead, TensorFlow's encoding: it has one more input
than its static form and its attrs lack the size attr.  Its kernel receives the
sizes as a NumPy array where the static form gets a tuple, its shape rule
(declared with `shape_reads_inputs=True`) receives the tensor, and its static
output shape comes from the entries known while building
(framework/shapes/known_values.py).  Its gradient returns None for the sizes
input (and declares it among the inputs it reads when it needs the sizes).

Note [a closed core]: the group is closed, so nothing here imports an op family.
Three rules are written to keep it so: stacked shapes are Packs of their entries,
not ConcatV2s (so `prepend` needs the example's rank, and raises NotBatchable
without it); the gradient of a reduction of an input of unknown rank keeps the
reduced axes with the ReducedShape op; and `shape`, `range`, `cast`, `conj` and
`zeros_like`, whose rules need nothing else, sit below in ops/core/basic_ops.py.
A family that needs an op above the core uses it in its own rules only.
"""

import builtins

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.dtypes import NUMERIC_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import LINEAR, convert_inputs, execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import (
    constant_value, pack_value, partial_value, shape_vector, unpack_value,
)
from tapeflow.framework.shapes.shape_rules import merge_shapes
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, is_static, known_rank
from tapeflow.framework.tensor import Tensor, _contains_tensor, convert_to_tensor
from tapeflow.ops.core import arguments, batching, half
from tapeflow.ops.core.arguments import (
    _int_input, _int_list, _known_count, _shape_error, _shape_str, int_input,
)
from tapeflow.ops.core.basic_ops import cast, conj, shape, zeros_like
from tapeflow.ops.core.batching import NotBatchable, example_rank
from tapeflow.ops.core.presets import reduction_op

# -- size inputs (Note [size inputs]) ---------------------------------------------------------

_INT_TYPES = frozenset(np.dtype(d) for d in (np.int32, np.int64))


def has_symbolic(value):
    """Whether `value` is or holds (in nested lists) a symbolic tensor."""
    if isinstance(value, SymbolicTensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_symbolic(v) for v in value)
    return False


def _auto_packed(value):
    """A nested list of ints and scalar tensors as one tensor (TF's auto-packing)."""
    if not isinstance(value, (list, tuple)) or not has_symbolic(value):
        return value
    return stack([_auto_packed(v) for v in value])


def sizes_or_tensor(value, what, op_type):
    """A size argument holding symbolic tensors: its value when known while building, else an int tensor.

    Returns:
      A NumPy int array when every entry is known (the op then takes the
      static path), else the int32/int64 tensor the op takes as an input;
      None when `value` holds no symbolic tensor (not a graph size argument).

    Raises:
      TypeError: the tensor is not of an integer type.
    """
    if not has_symbolic(value):
        return None
    t = _auto_packed(value)
    if t._value.dtype not in _INT_TYPES:
        raise TypeError(f"`{what}` of {op_type} must be an int32 or int64 tensor, got {t.dtype.name}.")
    known = constant_value(t)
    return t if known is None else known


def ints_or_tensor(value, what, op_type, int_list):
    """A size argument as `int_list(value, what)` (a tuple of ints, the static
    path), or, in graphs where an entry is known only at run time, the int
    tensor the op takes as an input (Note [size inputs]).

    Raises:
      TypeError: `value` is not a size argument.
    """
    try:
        return int_list(value, what)
    except TypeError:
        known = sizes_or_tensor(value, what, op_type)
        if known is None:
            raise
        return known if isinstance(known, Tensor) else tuple(known.tolist())


def vector(sizes, what, op_type):
    """The entries of a size argument (tuple attr or 1-D tensor input) as ints, None where unknown."""
    if isinstance(sizes, Tensor):
        return shape_vector(sizes, what, op_type)
    return list(sizes)


def matrix(sizes, what, op_type):
    """The entries of a 2-D size argument (paddings) as rows of ints, None where unknown."""
    if not isinstance(sizes, Tensor):
        return [list(row) for row in sizes]
    known = partial_value(sizes)
    if known is None or known.ndim != 2:
        raise ValueError(f"`{what}` of {op_type} must be a matrix of known shape, got one of shape "
                         f"{sizes.shape}.")
    return known.tolist()


def entries(t, n):
    """The n entries of the 1-D int tensor `t`: Python ints where known, scalar tensors `t[i]` otherwise."""
    known = shape_vector(t, "sizes")
    return [t[i] if d is None else d for i, d in enumerate(known[:n])]


def dims_of(x, out_type=np.int32):
    """x's dimensions: Python ints where static, scalar tensors read when the graph runs otherwise."""
    static = tuple(x._value.shape)
    if None not in static:
        return list(static)
    dynamic = shape(x, out_type=out_type)
    return [dynamic[i] if d is None else d for i, d in enumerate(static)]


def meta(shape, dtype):
    """A Meta of `shape` (a sequence, or None for an unknown rank) and `dtype`."""
    return Meta(None if shape is None else tuple(shape), np.dtype(dtype))


def unknown_length(sizes):
    """Whether a size argument is a tensor whose length is unknown while building (`tf.shape(x)`
    of an x of unknown rank): the op's output then has unknown rank (Note [unknown rank])."""
    if not isinstance(sizes, Tensor):
        return False
    shape = sizes._value.shape
    return shape is None or (len(shape) == 1 and shape[0] is None)


def output_dims(values, op_type):
    """Known sizes of a shape tensor as output dims: -1 (and None) unknown, other negatives an error."""
    out = []
    for d in values:
        if d is not None and d < -1:
            raise ValueError(f"Dimension {d} must be >= -1 (a size of {op_type}).")
        out.append(None if d is None or d == -1 else d)
    return out


def product(dims):
    """The product of sizes that are Python ints or scalar int tensors: an int when all are ints."""
    out = 1
    for d in dims:
        out = d * out if isinstance(d, Tensor) else out * d
    return out


# -- reshaping, broadcasting, transposing -----------------------------------------------------

def _dense(t):
    """A gradient as a dense tensor (IndexedSlices are summed into place)."""
    return t if type(t) is Tensor else convert_to_tensor(t)


def _resolve_shape(input_shape, shape):
    """TensorFlow's Reshape checks; returns `shape` with its -1 filled in.

    With a zero among the requested sizes, the -1 is found from the nonzero
    sizes only (TensorFlow's rule), e.g. [0, 3] -> [3, 0, -1] gives [3, 0, 1].
    """
    shape = tuple(int(d) for d in shape)                 # a tuple attr, or a size input's array
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


def _reshape_shape(x, shape):
    """Static shape of a reshape in a graph (TensorFlow's rule).

    The output has the known sizes of `shape`; one unknown output size is
    found from the element counts when the input's are known, or equals the
    input's one unknown size when the known counts agree.  A `shape` tensor of
    unknown length gives an unknown rank; an input of unknown rank, only the
    known sizes of `shape` (Note [unknown rank]).
    """
    if unknown_length(shape):
        return [meta(None, x._value.dtype)]
    out = output_dims(vector(shape, "shape", "Reshape"), "Reshape")
    if x._value.shape is None:
        return [meta(out, x._value.dtype)]
    in_shape = tuple(x._value.shape)
    out_known, out_unknown = _known_count(out)
    in_known, in_unknown = _known_count(in_shape)
    if len(out_unknown) <= 1 and len(in_unknown) <= 1:
        if not in_unknown and not out_unknown:
            if in_known != out_known:
                raise ValueError(f"Cannot reshape a tensor with {in_known} elements to shape {out} "
                                 f"({out_known} elements) [Op:Reshape]")
        elif not in_unknown and out_known > 0:
            if in_known % out_known:
                raise ValueError(f"Cannot reshape a tensor with {in_known} elements to shape {out} "
                                 f"(a multiple of {out_known} elements) [Op:Reshape]")
            out[out_unknown[0]] = in_known // out_known
        elif not out_unknown and in_known and out_known % in_known:
            raise ValueError(f"Cannot reshape a tensor of shape {list(in_shape)} to shape {out} [Op:Reshape]")
        elif in_unknown and out_unknown and in_known == out_known:
            out[out_unknown[0]] = in_shape[in_unknown[0]]
    return [meta(out, x._value.dtype)]


@op("Reshape", same_dtype=False, shape=_reshape_shape, shape_reads_inputs=True, unknown_rank=True, jvp=LINEAR)
def _reshape(x, shape):
    if -1 in shape or min(shape, default=0) < 0 or 0 in shape:
        shape = _resolve_shape(x.shape, shape)
    try:
        return np.reshape(x, shape)
    except ValueError:
        return np.reshape(x, _resolve_shape(x.shape, shape))


@_reshape.def_batch
def _reshape_batch(xs, batched, shape=None):
    if len(xs) > 1 and batched[1]:
        raise batching.NotBatchable                     # a shape per example
    x = xs[0]
    return reshape(x, prepend(batch_size_of(x), xs[1] if len(xs) > 1 else shape)), True


@_reshape.def_grad(reads_inputs=False)
def _reshape_grad(op, dy):
    dx = _reshape_to_input(dy, op.inputs[0])           # reshape back
    return dx if len(op.inputs) == 1 else (dx, None)


@tf_export("reshape")
def reshape(tensor, shape, name=None):
    """Reshapes `tensor`; one dimension may be -1.

    In graphs, `shape` may be an int tensor or a list holding scalar tensors
    (`[tf.shape(x)[0] * 3]`): it is then read when the graph runs, and the
    static shape keeps the sizes known while building.

    Raises:
      InvalidArgumentError: the element counts differ, or several -1.
      ValueError: in graphs, sizes known while building that cannot fit.

    >>> import tapeflow as tf
    >>> tf.reshape(tf.range(6), [2, -1]).shape
    TensorShape([2, 3])
    """
    x = tensor if type(tensor) is Tensor else convert_to_tensor(tensor)
    if type(shape) is tuple and not state.graphs:
        return execute(_reshape, (x,), {"shape": shape})
    new_shape = ints_or_tensor(shape, "shape", "Reshape", _int_input("Reshape", eager_scalar=True))
    if isinstance(new_shape, Tensor):
        return execute(_reshape, (x, new_shape), {})
    if not state.graphs:                                # graphs: the shape rule's count check first
        shape_rules.check_rank(len(new_shape), "Reshape")
    return execute(_reshape, (x,), {"shape": new_shape})


def _expand_dims_shape(x, dim):
    """A size-1 axis inserted at `dim`."""
    return [Meta(x.shape[:dim] + (1,) + x.shape[dim:], x.dtype)]


@op("ExpandDims", same_dtype=False, shape=_expand_dims_shape, jvp=LINEAR)
def _expand_dims(x, dim):
    return np.expand_dims(x, dim)


@_expand_dims.def_batch
def _expand_dims_batch(xs, batched, dim):
    return execute(_expand_dims, xs, {"dim": dim + 1}), True


@_expand_dims.def_grad(reads_inputs=False)
def _expand_dims_grad(op, dy):
    return _reshape_to_input(dy, op.inputs[0])          # drop the inserted axis


def _reshape_to_input(dy, x):
    """dy reshaped to x's shape, read when the graph runs if x has unknown dimensions (or rank)
    (Note [static shapes in gradients] in ops/core/primitives.py)."""
    shape = x._value.shape
    if shape is None or None in shape:
        return reshape_like(dy, x)
    return reshape(dy, shape)


@tf_export("expand_dims")
def expand_dims(input, axis, name=None):  # noqa: A002
    """Inserts a size-1 axis at `axis` (in [-rank-1, rank]).

    Raises:
      InvalidArgumentError: `axis` out of range or not a single value.
    """
    x = convert_to_tensor(input)
    if axis is None:
        raise ValueError("Attempt to convert a value (None) with an unsupported type (<class 'NoneType'>) to a Tensor.")
    axes = int_input(axis, "axis", "ExpandDims")
    if axes.size != 1:
        raise _shape_error("ExpandDims", "'dim' must be a tensor with a single value")
    rank_ = known_rank(x, "ExpandDims")
    shape_rules.check_rank(rank_ + 1, "ExpandDims")
    a = int(axes.reshape(()))
    if not -rank_ - 1 <= a <= rank_:
        raise _shape_error("ExpandDims", f"Tried to expand dim index {a} for tensor with {rank_} dimensions.")
    return execute(_expand_dims, (x,), {"dim": a % (rank_ + 1)})


def _broadcast_to_shape(x, shape):
    """Static shape in graphs: the known sizes of `shape`, and x's sizes above 1 where those are unknown
    (an unknown rank when `shape` has unknown length: Note [unknown rank])."""
    if unknown_length(shape):
        return [meta(None, x._value.dtype)]
    out = output_dims(vector(shape, "shape", "BroadcastTo"), "BroadcastTo")
    in_shape = () if x._value.shape is None else tuple(x._value.shape)
    if len(in_shape) > len(out):
        raise ValueError(f"Shape must be at most rank {len(out)} but is rank {len(in_shape)}: cannot broadcast "
                         f"{list(in_shape)} to {out} [Op:BroadcastTo]")
    for i in builtins.range(1, len(in_shape) + 1):
        d = in_shape[-i]
        if d is not None and d > 1:
            if out[-i] not in (None, d):
                raise ValueError(f"Incompatible shapes: {list(in_shape)} vs. {out} [Op:BroadcastTo]")
            out[-i] = d
    return [meta(out, x._value.dtype)]


@op("BroadcastTo", same_dtype=False, shape=_broadcast_to_shape, shape_reads_inputs=True, unknown_rank=True,
    jvp=LINEAR)
def _broadcast_to(x, shape):
    try:
        return np.broadcast_to(x, shape)
    except ValueError:
        raise ValueError(f"Incompatible shapes: {_shape_str(x.shape)} vs. {_shape_str(shape)}") from None


@_broadcast_to.def_batch
def _broadcast_to_batch(xs, batched, shape=None):
    return broadcast_to_shape_input(xs, batched, shape)


@_broadcast_to.def_grad(reads_inputs=False)
def _broadcast_to_grad(op, dy):
    x = op.inputs[0]                                    # sum over the broadcast axes
    dx = unbroadcast(_dense(dy), x._value.shape, x)
    return dx if len(op.inputs) == 1 else (dx, None)


@tf_export("broadcast_to")
def broadcast_to(input, shape, name=None):  # noqa: A002
    """Broadcasts `input` to `shape` (NumPy rules); in graphs `shape` may hold tensors.

    Raises:
      InvalidArgumentError: the shapes are not broadcast-compatible.
      ValueError: in graphs, sizes known while building that are not compatible.
    """
    x = convert_to_tensor(input)
    dims = ints_or_tensor(shape, "shape", "BroadcastTo", _int_input("BroadcastTo"))
    if isinstance(dims, Tensor):
        return execute(_broadcast_to, (x, dims), {})
    if not state.graphs:                                # graphs: the shape rule's checks first
        shape_rules.check_rank(len(dims), "BroadcastTo")
    return execute(_broadcast_to, (x,), {"shape": dims})


def _transpose_shape(x, perm):
    """Input dim perm[i] is output dim i."""
    return [Meta(tuple(x.shape[p] for p in perm), x.dtype)]


@op("Transpose", same_dtype=False, shape=_transpose_shape, jvp=LINEAR)
def _transpose(x, perm):
    return np.transpose(x, perm)


@_transpose.def_batch
def _transpose_batch(xs, batched, perm):
    return _transpose_op(xs[0], (0,) + batching.shift_axes(perm)), True


@_transpose.def_grad(reads_inputs=False)
def _transpose_grad(op, dy):
    return _transpose_op(_dense(dy), tuple(np.argsort(op.get_attr("perm")).tolist()))   # inverse permutation


def _transpose_op(x, perm):
    return execute(_transpose, (x,), {"perm": perm})


@tf_export("transpose")
def transpose(a, perm=None, conjugate=False, name="transpose"):
    """Permutes the axes (reverses them when `perm` is None); conjugates if asked.

    Raises:
      InvalidArgumentError: `perm` is not a permutation of the axes.
    """
    x = convert_to_tensor(a)
    rank_ = known_rank(x, "Transpose")
    perm = tuple(builtins.range(rank_ - 1, -1, -1)) if perm is None else _int_list(perm, "perm", "Transpose")
    if len(perm) != rank_:
        raise _shape_error("Transpose", f"transpose expects a vector of size {rank_}. But input(1) is a vector of "
                                        f"size {len(perm)}")
    for p in perm:
        if not -rank_ <= p < rank_:
            raise _shape_error("Transpose", f"{p} is out of range [0 .. {rank_})")
    perm = tuple(p % rank_ for p in perm)
    missing = sorted(set(builtins.range(rank_)) - set(perm))
    if missing:
        raise InvalidArgumentError(None, "Transpose", f"{missing[0]} is missing from "
                                   f"{{{','.join(map(str, perm))}}}. [Op:Transpose]")
    out = _transpose_op(x, perm)
    return conj(out) if conjugate else out


# -- stacking ---------------------------------------------------------------------------------

def _pack_shape(*xs, axis):
    """The inputs' shapes merged, with a new axis of size len(xs) at `axis`."""
    shape = merge_shapes([x.shape for x in xs], "Shapes of all inputs to Pack must match")
    return [Meta(shape[:axis] + (len(xs),) + shape[axis:], xs[0].dtype)]


@op("Pack", shape=_pack_shape, value_rule=pack_value, jvp=LINEAR)
def _pack(*xs, axis):
    shape = xs[0].shape
    for i, x in enumerate(xs):
        if x.shape != shape:
            raise ValueError(f"Shapes of all inputs must match: values[0].shape = {_shape_str(shape)} != "
                             f"values[{i}].shape = {_shape_str(x.shape)}")
    return np.stack(xs, axis=axis)


@_pack.def_batch
def _pack_batch(xs, batched, axis):
    return execute(_pack, _stacked_inputs(xs, batched), {"axis": axis + 1}), True


@_pack.def_grad(reads_inputs=False)
def _pack_grad(op, dy):
    return unstack(_dense(dy), num=len(op.inputs), axis=op.get_attr("axis"))   # split back along the new axis


def _stacked_inputs(xs, batched):
    """Every input stacked (the shared ones repeated for each example: a view, eagerly)."""
    return stacked_all(xs, batched, batch_size_of(xs[batched.index(True)]))


@tf_export("stack")
def stack(values, axis=0, name="stack"):
    """Stacks same-shaped tensors along a new axis.

    Raises:
      ValueError: an axis out of range.
      InvalidArgumentError: shapes differ.
    """
    if not values:
        return Tensor(np.zeros(0, np.float32))
    if axis == 0 and not _contains_tensor(values):
        try:
            return convert_to_tensor(values)            # plain values: one dtype for the whole list
        except ValueError:
            if any(v is None for v in values):
                raise
            # mixed types ([1, "a"]): converted one by one to the first's dtype, TypeError like TF's
    xs = convert_inputs(values, list_of="Pack")
    rank_ = known_rank(xs[0], "Pack")
    shape_rules.check_rank(rank_ + 1, "Pack")
    if not -rank_ - 1 <= axis <= rank_:
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank_ - 1}, {rank_ + 1})")
    return execute(_pack, xs, {"axis": axis % (rank_ + 1)})


def _unpack_shape(x, num, axis):
    """`num` outputs of x's shape without `axis` (whose size, when known, is `num`)."""
    if x.shape[axis] not in (None, num):
        raise ValueError(f"Dimension {axis} of the input to Unpack has size {x.shape[axis]}, not num = {num}: "
                         f"shape {list(x.shape)}")
    return [Meta(x.shape[:axis] + x.shape[axis + 1:], x.dtype)] * num


@op("Unpack", same_dtype=False, num_outputs=-1, shape=_unpack_shape, value_rule=unpack_value, jvp=LINEAR)
def _unpack(x, num, axis):
    moved = np.moveaxis(x, axis, 0) if axis else x
    return tuple(moved[i, ...] for i in builtins.range(num))     # `...` keeps 0-d pieces arrays


@_unpack.def_batch
def _unpack_batch(xs, batched, num, axis):
    return execute(_unpack, xs, {"num": num, "axis": axis + 1}), True


@_unpack.def_grad(reads_inputs=False)
def _unpack_grad(op, *dys):
    return stack([_dense(d) for d in dys], axis=op.get_attr("axis"))   # restack the pieces


@tf_export("unstack")
def unstack(value, num=None, axis=0, name="unstack"):
    """Splits a tensor along `axis` into a list of tensors of one rank less.

    Raises:
      ValueError: `axis` out of range (scalars cannot be unstacked).
      InvalidArgumentError: `num` differs from the size of `axis`.
    """
    x = convert_to_tensor(value)
    rank_ = known_rank(x, "Unpack")
    if axis < -rank_ or axis >= rank_:                  # a NaN axis passes, as in TensorFlow (then fails indexing)
        raise ValueError(f"Argument `axis` = {axis} not in range [{-rank_}, {rank_})")
    axis %= rank_
    n = x._value.shape[axis]
    if n is None:                                       # unknown while the graph is built
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {x.shape}")
        n = num
    if num is not None and num != n:
        raise _shape_error("Unpack", f"Input shape axis {axis} must equal {num}, got shape "
                                     f"{_shape_str(x._value.shape)}")
    if n == 0:
        return []
    return list(execute(_unpack, (x,), {"num": n, "axis": axis}))


# -- sums -------------------------------------------------------------------------------------

_INT32_64 = frozenset((np.dtype(np.int32), np.dtype(np.int64)))


def _axes(axis, rank, op_type="Sum"):
    """A reduction `axis` argument as a sorted tuple of non-negative ints, checked like TensorFlow
    (for an unknown `rank`: None for all axes, else the ints as given)."""
    if axis is None:
        return None if rank is None else tuple(builtins.range(rank))
    if isinstance(axis, Tensor):
        if axis._value.dtype not in (np.int32, np.int64):
            raise arguments.int_input_error(axis.dtype.name, "axis", op_type)
        value = axis._value
        if isinstance(axis, SymbolicTensor):            # graphs: the axes must be known while building
            value = constant_value(axis)
            if value is None:
                raise ValueError(f"The reduction axes of {op_type} must be known while the graph is built "
                                 f"(constants or values computed from static shapes), got {axis.name}.")
        value = np.asarray(value)
        if value.ndim > 1 and state.graphs:
            raise shape_rules.shape_error(op_type, f"Shape must be at most rank 1 but is rank {value.ndim}")
        axis = value.reshape(-1).tolist()
    elif isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = []
    for a in axis:
        if not isinstance(a, (int, np.integer)):
            return _axes(_axes_value(axis, op_type), rank, op_type)
        a = int(a)
        if rank is None:
            out.append(a)
            continue
        if not -rank <= a < rank:
            raise shape_rules.shape_error(op_type, f"Invalid reduction dimension ({a} for input with {rank} "
                                                 "dimension(s)")
        a %= rank
        if a in out:
            raise InvalidArgumentError(None, op_type, f"Invalid reduction arguments: Axes contains duplicate "
                                       f"dimension: {a} [Op:{op_type}]")
        out.append(a)
    return tuple(out) if rank is None else tuple(sorted(out))


def _axes_value(axis, op_type):
    """A reduction `axis` list or array holding more than ints, converted as TensorFlow converts
    its `reduction_indices` input (Note [typed index inputs]): the axes as a flat list of ints.

    Raises:
      TypeError: a tensor among the entries; in graphs, None or text among numbers, or
        non-integers; eagerly a Python float.
      ValueError: eagerly, None or text among numbers; a ragged list; in graphs, a rank above 1.
      InvalidArgumentError: eagerly, floats, bools or text.
    """
    t = arguments.typed_index(axis, "axis", op_type, "Tidx", _INT32_64, dtypes.int32)
    value = np.asarray(constant_value(t) if isinstance(t, SymbolicTensor) else t._value)
    if value.ndim > 1 and state.graphs:
        raise shape_rules.shape_error(op_type, f"Shape must be at most rank 1 but is rank {value.ndim}")
    return value.reshape(-1).tolist()


def _expand_to_input(op, dy):
    """The output gradient broadcast back to the input's shape (`dy` reshaped to kept dims first)."""
    return reduction_grad(dy, op.inputs[0], op.get_attr("axis"), op.get_attr("keepdims"))


@reduction_op("Sum", dtypes=NUMERIC_TYPES, jvp=LINEAR, half=half.in_float32)
def _sum(x, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@_sum.def_grad(reads_inputs=False)
def _sum_grad(op, dy):
    return _expand_to_input(op, dy)                     # each input element gets the sum's gradient


@tf_export("math.reduce_sum", "reduce_sum")
def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes when None; an int, a list or an int tensor; negative counts from the end).

    Raises:
      InvalidArgumentError: an axis is out of range or repeated, or the dtype is bool.

    >>> import tapeflow as tf
    >>> tf.reduce_sum(tf.ones([2, 3]), axis=1).numpy()
    array([3., 3.], dtype=float32)
    """
    x = input_tensor if type(input_tensor) is Tensor else convert_to_tensor(input_tensor)
    rank = x._value.ndim
    axes = tuple(builtins.range(rank)) if axis is None and rank is not None else _axes(axis, rank, "Sum")
    return execute(_sum, (x,), {"axis": axes, "keepdims": bool(keepdims)})


# -- batching helpers (Note [batching rules] in ops/core/vectorization.py) --------------------

def align_ranks(xs, batched):
    """Stacked inputs with size-1 axes inserted after the batch axis, so that examples
    of lower rank broadcast against the others as they would one example at a time."""
    ranks = [example_rank(x, b) for x, b in zip(xs, batched)]
    if None in ranks:
        if any(r is None for r, b in zip(ranks, batched) if b):
            raise ValueError("Cannot vectorize a broadcasting op over a tensor of unknown rank.")
    top = max((r for r in ranks if r is not None), default=0)
    out = list(xs)
    for i, (x, b, r) in enumerate(zip(xs, batched, ranks)):
        if b and r < top:
            out[i] = insert_axes(x, 1, top - r)
    return out


def insert_axes(x, at, count):
    """`x` with `count` size-1 axes inserted at axis `at`."""
    shape = x._value.shape
    if shape is not None and None not in shape:
        return reshape(x, tuple(shape[:at]) + (1,) * count + tuple(shape[at:]))
    for _ in builtins.range(count):
        x = expand_dims(x, at)
    return x


def batch_size_of(x):
    """The batch size of stacked tensor `x`: an int, or a scalar tensor when unknown statically."""
    n = x._value.shape[0]
    if n is not None:
        return n
    return shape(x)[0]


def prepend(size, dims):
    """The stacked shape for example shape `dims` (ints, or an int vector tensor) and
    batch `size` (an int or a scalar tensor): a tuple when both are known, else a tensor.

    The tensor is a Pack of the entries, so the example's rank must be known
    (NotBatchable otherwise: the op then runs once per example)."""
    if not isinstance(size, Tensor) and not isinstance(dims, Tensor):
        return (size,) + tuple(dims)
    if not isinstance(dims, Tensor) and all(isinstance(d, (int, np.integer)) for d in dims):
        dims = np.asarray(dims, np.int32).reshape(-1)     # () too: an empty int32 vector, not float32
    dims = convert_to_tensor(dims, dtype_hint="int32")
    count = dims._value.shape[0] if dims._value.ndim == 1 else None
    if count is None:
        raise NotBatchable                              # examples of unknown rank
    head = cast(reshape(size, ()), dims.dtype)
    return stack([head, *unstack(dims, num=count)])


def broadcast_to_shape_input(xs, batched, dims):
    """The rule of ops broadcasting their input 0 to a shape given as input 1 or as the attr
    `dims` (BroadcastTo, Fill): the stacked input with its example's axes aligned, broadcast
    to the batch size followed by the shape."""
    if len(xs) > 1 and batched[1]:
        raise NotBatchable                              # a shape per example
    x = xs[0]
    dims = xs[1] if len(xs) > 1 else dims
    rank = dims._value.shape[0] if isinstance(dims, Tensor) else len(dims)
    if rank is None:
        raise NotBatchable
    x = insert_axes(x, 1, rank - example_rank(x, True))
    return broadcast_to(x, prepend(batch_size_of(x), dims)), True


def broadcast_batch(x, size):
    """The stacked tensor whose every example is `x` (which is not batched)."""
    x = convert_to_tensor(x)
    return broadcast_to(expand_dims(x, 0), _with_batch(size, x))


def _with_batch(size, x):
    static = x._value.shape
    if static is not None and None not in static and not isinstance(size, Tensor):
        return (size,) + tuple(static)
    return prepend(size, shape(x) if static is None or None in static else static)


def stacked_all(xs, batched, size):
    """Every input in stacked form (unbatched ones repeated for each example)."""
    return [x if b else broadcast_batch(x, size) for x, b in zip(xs, batched)]


# -- gradient helpers: undoing broadcasts, shapes known only when a graph runs ----------------

def _sum_to(g, shape):
    """NumPy: sums array g down to `shape` (the inverse of broadcasting)."""
    lead = g.ndim - len(shape)
    axes = tuple(builtins.range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
    return np.sum(g, axis=axes, keepdims=True, dtype=g.dtype).reshape(shape) if axes else g.reshape(shape)


def _like_shape(g, like):
    """The *ToShapeOf ops have like's static shape (any rank, unknown included)."""
    return [Meta(None if like.shape is None else tuple(like.shape), g.dtype)]


def _broadcast_like_shape(g, like):
    """BroadcastToShapeOf: like's static shape, unknown dims filled by g's sizes above 1."""
    if like.shape is None or g.shape is None:
        return _like_shape(g, like)
    dims = list(like.shape)
    for i in builtins.range(1, min(len(dims), len(g.shape)) + 1):
        if dims[-i] is None and g.shape[-i] is not None and g.shape[-i] > 1:
            dims[-i] = g.shape[-i]
    return [Meta(tuple(dims), g.dtype)]


@op("BroadcastToShapeOf", same_dtype=False, shape=_broadcast_like_shape, unknown_rank=True)
def broadcast_like(g, like):
    return np.broadcast_to(g, np.shape(like))


@broadcast_like.def_batch
def _broadcast_like_batch(xs, batched):
    g, like = xs
    if not batched[1]:
        like = broadcast_batch(like, batch_size_of(g))
    gap = _rank_gap(like, g) if batched[0] else 0
    if gap:                                          # g's examples lined up with like's
        g = insert_axes(g, 1, gap)
    return broadcast_like(g, like), True


@broadcast_like.def_grad(reads_inputs=False)
def _broadcast_like_grad(op, dy):
    g = op.inputs[0]                                 # broadcasting's adjoint sums
    return unbroadcast(dy, g._value.shape, g), None


def _rank_gap(big, small):
    """How many more dims the examples of stacked `big` have than those of stacked `small`."""
    if big._value.ndim is None or small._value.ndim is None:
        raise batching.NotBatchable                  # unknown rank: the examples cannot be lined up
    return big._value.ndim - small._value.ndim


@op("SumToShapeOf", same_dtype=False, shape=_like_shape, unknown_rank=True)
def sum_like(g, like):
    return _sum_to(np.asarray(g), np.shape(like))


@sum_like.def_batch
def _sum_like_batch(xs, batched):
    g, like = stacked_all(xs, batched, batch_size_of(xs[batched.index(True)]))
    gap = _rank_gap(g, like)
    if not gap:
        return sum_like(g, like), True
    # the examples' leading dims summed too, not the batch axis: sum to like with size-1 axes after the batch
    return reshape_like(sum_like(g, insert_axes(like, 1, gap)), like), True


@sum_like.def_grad(reads_inputs=False)
def _sum_like_grad(op, dy):
    g = op.inputs[0]                                 # summing's adjoint broadcasts
    if is_static(g._value.shape):
        return broadcast_to(dy, g._value.shape), None
    return broadcast_like(dy, g), None


@op("ReshapeToShapeOf", same_dtype=False, shape=_like_shape, unknown_rank=True)
def reshape_like(g, like):
    return np.reshape(g, np.shape(like))


@reshape_like.def_batch
def _reshape_like_batch(xs, batched):
    g, like = stacked_all(xs, batched, batch_size_of(xs[batched.index(True)]))
    return reshape_like(g, like), True


@reshape_like.def_grad(reads_inputs=False)
def _reshape_like_grad(op, dy):
    g = op.inputs[0]                                 # reshape back
    if is_static(g._value.shape):
        return reshape(dy, g._value.shape), None
    return reshape_like(dy, g), None


def shape_tensor(x, out_type=np.int32):
    """x's shape as a 1-D int tensor: a constant when static, else read when the graph runs."""
    static = x._value.shape
    if is_static(static):
        return Tensor(np.asarray(static, out_type))
    return shape(x, out_type=out_type)


def zeros_of(x):
    """Zeros of x's shape and dtype (Note [static shapes in gradients])."""
    shape = x._value.shape
    if is_static(shape):
        return Tensor(np.zeros(shape, x._value.dtype))
    return zeros_like(x)


def unbroadcast(grad, shape, like=None):
    """Sums `grad` down to `shape`, undoing NumPy-style broadcasting.

    With unknown dimensions or rank (graphs), `like` (a tensor of the target
    shape) is required and the reduction happens when the graph runs.

    >>> import tapeflow as tf
    >>> from tapeflow.ops.core.primitives import unbroadcast
    >>> unbroadcast(tf.ones([2, 3]), (3,)).numpy()
    array([2., 2., 2.], dtype=float32)
    """
    gshape = grad._value.shape if isinstance(grad, Tensor) else tuple(grad.shape)
    if gshape == shape and shape is not None and None not in shape:      # (inline: the eager hot path)
        return grad
    if gshape is None or shape is None or None in gshape or None in shape:
        if like is None:
            raise ValueError(f"unbroadcast of a gradient of shape {gshape} to {shape} needs `like`")
        return sum_like(grad, like)
    lead = len(gshape) - len(shape)
    axes = list(builtins.range(lead))
    for i, d in enumerate(shape):
        if d == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        grad = reduce_sum(grad, axes)
    return reshape(grad, shape)


def binary_grads(op, dx, dy):
    """Unbroadcasts the gradients of a broadcasting binary op to its input shapes."""
    x, y = op.inputs
    skip = op.skip_input_indices
    return (None if dx is None or 0 in skip else unbroadcast(dx, x._value.shape, x),
            None if dy is None or 1 in skip else unbroadcast(dy, y._value.shape, y))


def reduction_grad(dy, x, axes, keepdims):
    """Spreads the gradient of a reduction over `axes` of `x` back to x's shape."""
    shape = x._value.shape
    if shape is None:                   # unknown rank: axes None (all) or not normalized
        return broadcast_like(dy if keepdims else keep_reduced_dims(dy, x, axes), x)
    if None not in shape:
        if not keepdims:
            dy = reshape(dy, tuple(1 if i in axes else d for i, d in enumerate(shape)))
        return broadcast_to(dy, shape)
    if not keepdims:
        kept = tuple(1 if i in axes else (-1 if d is None else d) for i, d in enumerate(shape))
        if kept.count(-1) <= 1:
            dy = reshape(dy, kept)
        else:
            for a in sorted(axes):
                dy = expand_dims(dy, a)
    return broadcast_like(dy, x)


def keep_reduced_dims(t, x, axes):
    """`t`, the result of a reduction of `x` (of unknown rank) over `axes` without keepdims, with
    the reduced axes back as size-1 axes: the shape is computed when the graph runs (TF's
    reduced_shape).  `axes` None means all axes (`t` is a scalar: it broadcasts as it is);
    else the axes may be negative."""
    if axes is None:
        return t
    return reshape(t, execute(_reduced_shape, [shape(x)], {"axes": tuple(axes)}))


@op("ReducedShape", differentiable=False, shape=lambda shape, axes: [Meta(shape.shape, shape.dtype)])
def _reduced_shape(shape, axes):
    """A shape vector with 1 at `axes` (negative ones count from the end): the shape a reduction
    over `axes` keeps its result in before it is broadcast back (TF's reduced_shape)."""
    kept = np.array(shape)
    kept[..., np.asarray(axes, np.int64) % kept.shape[-1]] = 1
    return kept


@_reduced_shape.def_batch
def _reduced_shape_batch(xs, batched, axes):
    return execute(_reduced_shape, xs, {"axes": axes}), True       # a shape per example: the last axis
