"""The primitives whose rules need no other op: `shape`, `range`, `cast`, `conj`, `zeros_like`.

The recursive group of the core (ops/core/primitives.py) and every family build on them.
"""

import builtins

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError, UnimplementedError
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import _tf_name, execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import cast_value, constant_value, shape_value
from tapeflow.framework.shapes.symbolic_tensors import Meta
from tapeflow.framework.tensor import Tensor, _convert_python, convert_to_tensor
from tapeflow.ops.core import batching, half
from tapeflow.ops.core.arguments import _any_tensor
from tapeflow.ops.core.presets import unary_op

# -- shapes -----------------------------------------------------------------------------------

_SHAPE_TYPES = (dtypes.int32, dtypes.int64)


def _shape_type(out_type, op_type):
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _SHAPE_TYPES:
        raise InvalidArgumentError(None, op_type, f"Value for attr 'out_type' of {out_type.name} is not in the list "
                                   f"of allowed values: int32, int64 [Op:{op_type}]")
    return out_type._np


# Note [unknown rank] in framework/shapes/symbolic_tensors.py: the queries take tensors of unknown rank.
@op("Shape", same_dtype=False, shape=lambda x, out_type: [Meta((x.ndim,), np.dtype(out_type))],
    unknown_rank=True, differentiable=False, value_rule=shape_value)
def _shape(x, out_type):
    return np.asarray(x.shape, out_type)


@_shape.def_batch
def _shape_batch(xs, batched, out_type):
    return execute(_shape, xs, {"out_type": out_type})[1:], False     # the example's shape


@tf_export("shape")
def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shape of `input` as a 1-D int32 (or int64) tensor."""
    return _query(_shape, input, _shape_type(out_type, "Shape"))


def _query(query, x, out_type):
    """A constant when the shape is known (also in graphs); else an op that reads it when the graph runs."""
    x = _any_tensor(x)
    dims = x._value.shape
    if dims is not None and None not in dims:
        return Tensor(np.asarray(dims if query is _shape else int(np.prod(dims, dtype=np.int64)), out_type))
    return execute(query, (x,), {"out_type": out_type})


# -- ranges -----------------------------------------------------------------------------------

_RANGE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


_RANGE_TYPES = frozenset(np.dtype(d._np) for d in (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64,
                                                   dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint16,
                                                   dtypes.uint32, dtypes.uint64))


def _range_size(start, limit, delta):
    """The length of a range; ValueError for a delta of 0 or pointing away from limit."""
    if delta == 0:
        raise ValueError(f"Requires delta != 0: {delta}")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if start.dtype.kind in "iu":
        span, step = abs(int(limit) - int(start)), abs(int(delta))
        return (span + step - 1) // step
    with np.errstate(all="ignore"):                   # in the range's own precision, as TensorFlow
        return int(np.ceil(np.abs((limit - start) / delta)))


def _range_shape(start, limit, delta):
    """In graphs: the length is known when start, limit and delta are known while building."""
    values = [constant_value(t) for t in (start, limit, delta)]
    size = None if any(v is None for v in values) else _range_size(*values)
    return [Meta((size,), start._value.dtype)]


@op("Range", shape=_range_shape, shape_reads_inputs=True, differentiable=False)
def _range(start, limit, delta):
    n = _range_size(start, limit, delta)
    if start.dtype.kind in "iu":
        return (int(start) + np.arange(n, dtype=np.int64) * int(delta)).astype(start.dtype)
    return start + np.arange(n).astype(start.dtype) * delta


@tf_export("range")
def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TensorFlow's public name
    """The sequence start, start + delta, ... up to but excluding `limit` (`builtins.range(n)` counts from 0).

    Without `dtype`, Python ints give int32 and floats float32; tensors and
    NumPy values keep their dtype, and the widest of int32 < int64 < float32 <
    float64 among the arguments wins.

    Raises:
      InvalidArgumentError: delta is 0, or points away from limit.

    >>> import tapeflow as tf
    >>> tf.range(1, 10, 3).numpy()
    array([1, 4, 7], dtype=int32)
    """
    if limit is None:
        start, limit = 0, start
    want = None if dtype is None else dtypes.as_dtype(dtype)
    # Python values become eager constants, so a range of them is a constant inside graphs too.
    args = [a if isinstance(a, Tensor) or hasattr(a, "_as_tensor") else Tensor(_convert_python(a, want))
            for a in (start, limit, delta)]
    args = [convert_to_tensor(a) for a in args]
    if want is None:
        want = builtins.max((a.dtype for a in args),
                            key=lambda d: _RANGE_ORDER.index(d) if d in _RANGE_ORDER else len(_RANGE_ORDER))
    if want._np not in _RANGE_TYPES:
        raise InvalidArgumentError(None, "Range", f"Value for attr 'Tidx' of {want.name} is not in the list of "
                                   "allowed values: bfloat16, half, float, double, int16, int32, int64, uint16, "
                                   "uint32, uint64 [Op:Range]")
    args = [cast(a, want) for a in args]
    for what, a in zip(("start", "limit", "delta"), args, strict=True):
        if a._value.ndim:
            raise InvalidArgumentError(None, "Range", f"{what} must be a scalar, not shape "
                                       f"{list(a._value.shape)} [Op:Range]")
    return execute(_range, args, {})


# -- casts and complex conjugates -------------------------------------------------------------

@unary_op("Cast", same_dtype=False, shape=shape_rules.cast_shape, value_rule=cast_value, accepts_indexed_slices=True)
def _cast(x, DstT):
    if (x.dtype.kind == "T") != (DstT.kind == "T"):      # strings: tf.strings.as_string / to_number
        raise UnimplementedError(None, "Cast", f"Cast {_tf_name(x.dtype)} to {_tf_name(DstT)} is not supported "
                                 "[Op:Cast]")
    if x.dtype.kind == "c" and DstT.kind != "c":
        x = np.real(x)
    return half.astype(np.asarray(x), DstT) if x.dtype != DstT else x     # Note [half precision]


@_cast.def_grad(reads_inputs=False)
def _cast_grad(op, dy):
    src = op.inputs[0]._value.dtype
    if src not in dtypes.TRAINABLE_NP or dy.dtype._np not in dtypes.TRAINABLE_NP:
        return None                                   # casts to or from integers cut the gradient
    return cast(dy, dtypes.from_numpy(src))


@tf_export("cast")
def cast(x, dtype, name=None):
    """Casts `x` to `dtype`; complex to real keeps the real part.

    >>> import tapeflow as tf
    >>> tf.cast(tf.constant([1.7, -1.7]), tf.int32).numpy()
    array([ 1, -1], dtype=int32)
    """
    dtype = dtypes.as_dtype(dtype)
    if isinstance(x, IndexedSlices):
        return IndexedSlices(cast(x.values, dtype), x.indices, x.dense_shape)
    x = convert_to_tensor(x)
    if x._value.dtype == dtype._np:
        return x
    return execute(_cast, (x,), {"DstT": dtype._np})


_COMPLEX_NP = frozenset((np.dtype(np.complex64), np.dtype(np.complex128)))


def _conj_if_complex(t):
    return _conj(t) if t._value.dtype in _COMPLEX_NP else t


@unary_op("Conj", dtypes=dtypes.COMPLEX_TYPES)
def _conj(x):
    return np.conj(x)


@_conj.def_grad(reads_inputs=False)
def _conj_grad(op, dy):
    return conj(dy)                                   # conj is its own adjoint


@tf_export("math.conj")
def conj(x, name=None):
    """Complex conjugate; real tensors are returned unchanged.

    Raises:
      TypeError: `x` is not numeric.
    """
    x = x if type(x) is Tensor else convert_to_tensor(x)
    kind = x._value.dtype.kind
    if kind == "c":
        return _conj(x)
    if kind == "b":
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}.")
    return x


# -- zeros of another tensor's shape ----------------------------------------------------------

@op("FillLike", same_dtype=False, shape=shape_rules.fill_like_shape, unknown_rank=True, differentiable=False,
    batch=batching.ELEMENTWISE)
def _fill_like(like, value, dtype):
    if value == 0:
        return np.zeros(np.shape(like), dtype)      # strings: empty ones (np.full would write "0")
    return np.full(np.shape(like), value, dtype)


def _filled_like(input, dtype, value):
    x = input if type(input) is Tensor else convert_to_tensor(input)
    np_dtype = x._value.dtype if dtype is None else dtypes.as_dtype(dtype)._np
    if value and np_dtype.kind == "T":
        raise InvalidArgumentError(None, "OnesLike", "Value for attr 'T' of string is not in the list of allowed "
                                   "values [Op:OnesLike]")
    shape = x._value.shape
    if shape is None or None in shape or (state.tapes and np_dtype == x._value.dtype):
        # Filled when the graph runs (a graph tensor of unknown shape or rank), or recorded
        # like TensorFlow's ZerosLike/OnesLike: a tape tracing `input` traces the result.
        return execute(_fill_like, (x,), {"value": value, "dtype": np_dtype})
    return Tensor(np.full(shape, value, np_dtype) if value else np.zeros(shape, np_dtype))


@tf_export("zeros_like")
def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros with the shape (and dtype, unless given) of `input`."""
    return _filled_like(input, dtype, 0)
