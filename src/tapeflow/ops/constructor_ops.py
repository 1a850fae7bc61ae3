"""Tensor constructors and shape queries: `zeros`, `ones`, `fill`, `range`, `linspace`, `eye`, `meshgrid`,
`shape`, `shape_n`, `size`, `rank`.

Constructors from Python values make constants; `fill` is differentiable in
its value, `linspace` (built from ops) in its start and stop, and `range` is
not differentiable, all as in TensorFlow.  In graphs, `zeros`, `ones` and
`fill` of a shape known only when the graph runs are "Fill" ops taking the
shape as an int tensor input (Note [size inputs] in `ops/core/primitives.py`).
"""

import builtins

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value, size_value
from tapeflow.framework.shapes.symbolic_tensors import Meta, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import join_ops, math_ops, slicing_ops
from tapeflow.ops.core import basic_ops, batching, primitives
from tapeflow.ops.core.arguments import _any_tensor, _int_list, int_input
from tapeflow.ops.core.basic_ops import _query, _shape, _shape_batch, _shape_type, range, shape
from tapeflow.ops.core.primitives import unstack

# Note [int inputs]: TensorFlow takes shapes, perms, multiples, paddings and axes as
# int32/int64 tensor inputs (Reshape's shape, Transpose's perm) and converts a Python
# argument to a tensor before its dtype check, so a bad argument fails with the
# conversion's class, not the op's:
#
#   argument                          eagerly                 in graphs
#   None                              ValueError              ValueError
#   a non-rectangular list            ValueError              ValueError
#   None or strings among numbers     ValueError (mixed)      TypeError
#   None or a string among tensors    TypeError               TypeError
#   a Python float                    TypeError               TypeError
#   a string, or a list of floats     InvalidArgumentError    TypeError
#   a float/bool/string tensor        InvalidArgumentError    TypeError
#   a NumPy float array               truncated to ints       truncated to ints
#
# (a Python bool is an int; an empty list is int32).  `convert` names the conversion: "input", an op's input
# (the table); "int32", an explicit conversion to int32 (zeros, ones: floats and
# strings are TypeError eagerly too); "any", a conversion without a dtype (split:
# floats, NumPy floats and an empty list keep a float dtype, then fail the dtype
# check).  A wrong rank after conversion is the op's shape check
# (`shape_rules.shape_error`, Note [build-time shape errors]).


def _dims(shape, op_type="Fill", convert="int32", vector_only=False):
    """A constructor's shape argument as a tuple of ints (Note [int inputs]); a scalar is a vector of
    one, except in graphs when `vector_only` (Fill's dims must be 1-D there, as in TF's shape function).

    Raises:
      TypeError: `shape` holds symbolic tensors (graphs: `_shape_dims` takes them), or TF's TypeErrors.
      ValueError: a partly unknown TensorShape, or TF's conversion errors.
      InvalidArgumentError: not a vector, or a negative size (ValueError in graphs).
    """
    if isinstance(shape, TensorShape) and not shape.is_fully_defined():
        raise ValueError(f"Cannot make a tensor of the partly unknown shape {shape}; give every dimension.")
    array = int_input(shape, "shape", op_type, convert)
    if array.ndim > 1 or (vector_only and array.ndim == 0 and state.graphs):
        raise shape_rules.shape_error(op_type, f"dims must represent a vector, got shape {list(array.shape)}")
    dims = tuple(array.reshape(-1).tolist())
    shape_rules.check_rank(len(dims), op_type)
    for d in dims:
        if d < 0:
            raise shape_rules.shape_error(op_type, f"Dimension {d} must be >= 0")
    return dims


def _shape_dims(shape, convert="int32", vector_only=False):
    """zeros/ones/fill's shape: a tuple of ints, or in graphs, where it holds symbolic tensors
    known only when the graph runs, the int tensor a Fill op takes (Note [size inputs])."""
    try:
        return _dims(shape, "Fill", convert, vector_only)
    except TypeError:
        if not primitives.has_symbolic(shape):
            raise
    dims = primitives.sizes_or_tensor(shape, "shape", "Fill")
    if not isinstance(dims, Tensor):
        return _dims(dims if vector_only else np.atleast_1d(dims), "Fill")
    if dims._value.ndim == 0 and not vector_only:        # a scalar size: a vector of one
        dims = primitives.reshape(dims, (1,))
    if dims._value.ndim != 1:
        raise ValueError(f"dims of Fill must be a vector, got a tensor of shape {dims.shape}.")
    return dims


def _filled(shape, value, dtype):
    """zeros/ones: `value` of `dtype` in `shape`; a Fill op when the shape is known only when the graph runs."""
    dims = _shape_dims(shape)
    np_dtype = dtypes.as_dtype(dtype)._np
    if np_dtype.kind == "T":           # strings: zeros are empty; NumPy would write "0" (or "1")
        if value:
            raise TypeError(f"Cannot convert {value} to EagerTensor of dtype string")
        scalar = Tensor(np.zeros((), np_dtype))
    else:
        scalar = Tensor(np.asarray(value, np_dtype))
    if isinstance(dims, Tensor):
        return execute(_fill, (scalar, dims), {})
    return Tensor(np.full(dims, scalar._value))


@tf_export("zeros")
def zeros(shape, dtype=dtypes.float32, name=None):
    """A tensor of zeros of `shape` (default dtype float32); in graphs `shape` may hold tensors."""
    return _filled(shape, 0, dtype)


@tf_export("ones")
def ones(shape, dtype=dtypes.float32, name=None):
    """A tensor of ones of `shape` (default dtype float32); in graphs `shape` may hold tensors."""
    return _filled(shape, 1, dtype)


def _fill_shape(value, dims):
    """In graphs: the known sizes of `dims` (unknown rank when its length is unknown)."""
    if primitives.unknown_length(dims):
        return [primitives.meta(None, value._value.dtype)]
    known = primitives.output_dims(primitives.vector(dims, "dims", "Fill"), "Fill")
    return [primitives.meta(known, value._value.dtype)]


@op("Fill", same_dtype=False, shape=_fill_shape, shape_reads_inputs=True)
def _fill(value, dims):
    return np.full(dims, value, value.dtype)


@_fill.def_batch
def _fill_batch(xs, batched, dims=None):
    return primitives.broadcast_to_shape_input(xs, batched, dims)     # a scalar per example, broadcast


@_fill.def_grad(reads_inputs=False)
def _fill_grad(op, dy):
    dvalue = primitives.reduce_sum(dy)                   # every element is the value: d value = sum dy
    return dvalue if len(op.inputs) == 1 else (dvalue, None)


@tf_export("fill")
def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with the scalar `value` (differentiable in `value`).

    In graphs, `dims` may be an int tensor or hold scalar tensors (`tf.shape(x)`).

    Raises:
      InvalidArgumentError: `value` is not a scalar, `dims` not a vector of integers, or a
        negative dimension (ValueError while a graph is built; a scalar `dims` too).
      TypeError, ValueError: `dims` cannot be converted to an int tensor (Note [int inputs]).

    >>> import tapeflow as tf
    >>> tf.fill([2], 3).numpy()
    array([3, 3], dtype=int32)
    """
    shape_ = _shape_dims(dims, "input", vector_only=True)
    value = convert_to_tensor(value)
    if value._value.ndim:
        raise shape_rules.shape_error("Fill", f"value must be a scalar, got shape {list(value._value.shape)}")
    if isinstance(shape_, Tensor):
        return execute(_fill, (value, shape_), {})
    return execute(_fill, (value,), {"dims": shape_})


# -- range, linspace, eye, meshgrid ---------------------------------------------------


@tf_export("linspace")
def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` inclusive, along a new `axis`.

    `start` and `stop` may be tensors that broadcast together (the values then
    run along `axis`); integers give float64. Differentiable in `start` and
    `stop`. In graphs, `num` may be a scalar int tensor read when the graph runs.

    Raises:
      TypeError: `num` is not an integer.

    >>> import tapeflow as tf
    >>> tf.linspace(0.0, 1.0, 5).numpy()
    array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    start = convert_to_tensor(start)
    if not (start.dtype.is_floating or start.dtype.is_complex):
        start = basic_ops.cast(start, dtypes.float64)
    stop = convert_to_tensor(stop, dtype_hint=start.dtype)
    if stop.dtype != start.dtype:
        stop = basic_ops.cast(stop, start.dtype)
    if isinstance(num, Tensor):
        if not num.dtype.is_integer:
            raise TypeError(f"Argument `num` must be of type integer, got a {num.dtype.name} tensor.")
        known = constant_value(num)
        num = num if known is None else int(known)     # graphs: a count known only when the graph runs
    elif not isinstance(num, (int, np.integer)):
        raise TypeError(f"Argument `num` must be of type integer. Received `num` = {num!r}")
    else:
        num = int(num)
    if not isinstance(num, Tensor) and num < 0:
        raise InvalidArgumentError(None, "LinSpace", f"Requires num >= 0, got {num} [Op:LinSpace]")
    start, stop = _broadcast_pair(start, stop)
    rank_ = start._value.ndim
    axis = int(axis)
    if not -rank_ - 1 <= axis <= rank_:
        raise InvalidArgumentError(None, "LinSpace", f"axis {axis} is out of range for {rank_ + 1} output "
                                   "dimensions [Op:LinSpace]")
    axis %= rank_ + 1
    first, last = primitives.expand_dims(start, axis), primitives.expand_dims(stop, axis)
    if isinstance(num, Tensor):                          # the count and the middle points read at run time
        steps = math_ops.maximum(num - 1, 1)
        delta = (last - first) / basic_ops.cast(steps, start.dtype)
        middle = basic_ops.cast(range(1, math_ops.where(num >= 0, steps, -1)), start.dtype)   # num < 0: an error
        middle = primitives.reshape(middle, (-1,) + (1,) * (rank_ - axis))
    else:
        steps = builtins.max(num - 1, 1)
        delta = (last - first) / Tensor(np.asarray(steps, start._value.dtype))
        middle = Tensor(np.arange(1, steps, dtype=start._value.dtype).reshape((-1,) + (1,) * (rank_ - axis)))
    inner = first + middle * delta
    out = join_ops.concat([first, inner, last], axis)
    if isinstance(num, Tensor):                          # its block, of sizes read at run time (TF's static shape)
        sizes = math_ops.where(Tensor(np.arange(rank_ + 1) == axis), basic_ops.cast(num, dtypes.int32), shape(out))
        return slicing_ops.slice(out, [0] * (rank_ + 1), sizes)
    return out[(builtins.slice(None),) * axis + (builtins.slice(0, num),)]


def _broadcast_pair(x, y):
    """x and y broadcast against each other (in graphs, sizes unknown while building are read at run time)."""
    known_rank(x, "LinSpace")
    known_rank(y, "LinSpace")
    xs, ys = x._value.shape, y._value.shape
    if None in xs or None in ys:                        # an unknown size may still be 1: add zeros to broadcast
        return x + basic_ops.zeros_like(y), y + basic_ops.zeros_like(x)
    if xs == ys:
        return x, y
    both = np.broadcast_shapes(xs, ys)
    return primitives.broadcast_to(x, both), primitives.broadcast_to(y, both)


@tf_export("eye", "linalg.eye")
def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """An identity matrix [num_rows, num_columns] (square by default), tiled over `batch_shape`.

    Raises:
      InvalidArgumentError: a negative size.

    >>> import tapeflow as tf
    >>> tf.eye(2, 3, dtype=tf.int32).numpy()
    array([[1, 0, 0],
           [0, 1, 0]], dtype=int32)
    """
    rows = int(num_rows._value if isinstance(num_rows, Tensor) else num_rows)
    cols = rows if num_columns is None else int(num_columns._value if isinstance(num_columns, Tensor) else num_columns)
    batch = () if batch_shape is None else _int_list(batch_shape, "batch_shape")
    dims = _dims(batch + (rows, cols))
    matrix = np.eye(rows, cols, dtype=dtypes.as_dtype(dtype)._np)
    return Tensor(np.array(np.broadcast_to(matrix, dims)))


@tf_export("meshgrid")
def meshgrid(*args, **kwargs):
    """Coordinate grids from 1-D tensors: N inputs give N tensors of N dims.

    `indexing="xy"` (default) puts the first input along columns (Cartesian);
    `"ij"` keeps input i along axis i (matrix indexing). Differentiable.

    Raises:
      TypeError: an unknown keyword argument.
      ValueError: `indexing` other than "xy" or "ij".

    >>> import tapeflow as tf
    >>> [g.shape for g in tf.meshgrid([1, 2, 3], [4, 5])]
    [TensorShape([2, 3]), TensorShape([2, 3])]
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this function")
    if indexing not in ("xy", "ij"):
        raise ValueError("Argument `indexing` parameter must be either 'xy' or 'ij', got '{}'".format(indexing))
    xs = [primitives.reshape(convert_to_tensor(a), (-1,)) for a in args]
    sizes = [primitives.dims_of(x)[0] for x in xs]     # in graphs, unknown sizes are read at run time
    n = len(xs)
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for i, x in enumerate(xs):
        pos = (1 - i if i < 2 else i) if indexing == "xy" and n > 1 else i
        shape_i = [1] * n
        shape_i[pos] = -1
        grids.append(primitives.broadcast_to(primitives.reshape(x, tuple(shape_i)), sizes))
    return grids


# -- shape queries ------------------------------------------------------------------


@op("Size", same_dtype=False, shape=lambda x, out_type: [Meta((), np.dtype(out_type))], unknown_rank=True,
    differentiable=False, value_rule=size_value)
def _size(x, out_type):
    return np.asarray(x.size, out_type)


@_size.def_batch
def _size_batch(xs, batched, out_type):
    dims = _shape_batch(xs, batched, out_type)[0]     # the example's shape: its size is their product
    count = dims._value.shape[0]
    if count is None:
        raise batching.NotBatchable                     # examples of unknown rank
    size = Tensor(np.asarray(1, out_type))
    for d in unstack(dims, num=count):
        size = size * d
    return size, False


@op("Rank", same_dtype=False, shape=lambda x: [Meta((), np.dtype(np.int32))], unknown_rank=True,
    differentiable=False)
def _rank(x):
    return np.asarray(x.ndim, np.int32)


@_rank.def_batch
def _rank_batch(xs, batched):
    return execute(_rank, xs, {}) - 1, False


@tf_export("shape_n")
def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shapes of a list of tensors, as a list of 1-D tensors."""
    np_type = _shape_type(out_type, "ShapeN")
    return [_query(_shape, x, np_type) for x in input]


@tf_export("size")
def size(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The number of elements of `input` as a scalar int32 (or int64) tensor."""
    return _query(_size, input, _shape_type(out_type, "Size"))


@tf_export("rank")
def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as a scalar int32 tensor (read when the graph runs
    for a graph tensor of unknown rank)."""
    x = _any_tensor(input)
    if x._value.ndim is None:
        return execute(_rank, (x,), {})
    return Tensor(np.asarray(x._value.ndim, np.int32))


