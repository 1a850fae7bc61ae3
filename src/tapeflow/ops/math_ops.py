"""Math ops (`tf.math`): elementwise arithmetic, reductions, matmul, segment sums.

Each op's kernel and its gradient sit together; gradients use tapeflow ops
only, so they can be differentiated again.
"""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.dtypes import FLOATING_TYPES, INEXACT_TYPES, NUMERIC_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.op_def import execute, no_gradient, op
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.grad_util import binary_grads, unbroadcast

_COMPLEX_NP = frozenset((np.dtype(np.complex64), np.dtype(np.complex128)))


def _is_complex(t):
    return t._value.dtype in _COMPLEX_NP


def _conj_if_complex(t):
    return conj(t) if _is_complex(t) else t


# -- binary arithmetic -------------------------------------------------------

@op("AddV2", dtypes=NUMERIC_TYPES)
def add(x, y):
    return np.add(x, y)


@add.def_grad
def _add_grad(op, dz):
    return binary_grads(op, dz, dz)          # d(x+y) = dx + dy


@op("Sub", dtypes=NUMERIC_TYPES)
def subtract(x, y):
    return np.subtract(x, y)


@subtract.def_grad
def _sub_grad(op, dz):
    return binary_grads(op, dz, negative(dz))   # d(x-y) = dx - dy


@op("Mul", dtypes=NUMERIC_TYPES)
def multiply(x, y):
    return np.multiply(x, y)


@multiply.def_grad
def _mul_grad(op, dz):
    x, y = op.inputs
    return binary_grads(op, dz * _conj_if_complex(y), _conj_if_complex(x) * dz)   # d(xy) = y dx + x dy


@op("RealDiv", dtypes=INEXACT_TYPES)
def _real_div(x, y):
    return np.true_divide(x, y)


@_real_div.def_grad
def _real_div_grad(op, dz):
    x, y = (_conj_if_complex(t) for t in op.inputs)
    return binary_grads(op, dz / y, -dz * x / (y * y))   # d(x/y) = dx/y - x dy/y^2


def divide(x, y, name=None):
    """x / y elementwise; integers are first cast to float64 (float32 for 8/16-bit), like Python 3."""
    return truediv(x, y)


def truediv(x, y, name=None):
    x, y = _binary_inputs(x, y)
    if x._value.dtype.kind in "iu":
        if y._value.dtype != x._value.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
        target = dtypes.float32 if x._value.dtype.itemsize <= 2 else dtypes.float64
        x, y = cast(x, target), cast(y, target)
    return _real_div(x, y)


@op("FloorDiv", dtypes=NUMERIC_TYPES)
def _floor_div(x, y):
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    return np.floor_divide(x, y)


no_gradient("FloorDiv")


def floordiv(x, y, name=None):
    return _floor_div(*_binary_inputs(x, y))


@op("FloorMod", dtypes=NUMERIC_TYPES)
def floormod(x, y):
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    return np.mod(x, y)


@floormod.def_grad
def _floormod_grad(op, dz):
    x, y = op.inputs                          # x mod y = x - floor(x/y) y
    return binary_grads(op, dz, -dz * floor(_floor_div(x, y) if x._value.dtype.kind in "iu" else x / y))


@op("Pow", dtypes=NUMERIC_TYPES)
def pow(x, y):  # noqa: A001 - TensorFlow's public name
    if x.dtype.kind in "iu" and np.any(np.asarray(y) < 0):
        raise ValueError("Integers to negative integer powers are not allowed")
    return np.power(x, y)


@pow.def_grad(uses_outputs=True)
def _pow_grad(op, dz):
    x, y = op.inputs
    z = op.outputs[0]
    dx = dz * _conj_if_complex(y * x ** (y - 1))           # d x^y / dx = y x^(y-1)
    if _is_complex(x):
        log_x = where(x != 0, log(x), zeros_like(x))
    else:
        log_x = where(x > 0, log(where(x > 0, x, ones_like(x))), zeros_like(x))
    dy = dz * _conj_if_complex(z * log_x)                    # d x^y / dy = x^y log x
    return binary_grads(op, dx, dy)


@op("Maximum", dtypes=NUMERIC_TYPES)
def maximum(x, y):
    return np.maximum(x, y)


@maximum.def_grad
def _maximum_grad(op, dz):
    x, y = op.inputs
    mask = x >= y                          # ties send the gradient to x
    return binary_grads(op, where(mask, dz, zeros_like(dz)), where(mask, zeros_like(dz), dz))


@op("Minimum", dtypes=NUMERIC_TYPES)
def minimum(x, y):
    return np.minimum(x, y)


@minimum.def_grad
def _minimum_grad(op, dz):
    x, y = op.inputs
    mask = x <= y
    return binary_grads(op, where(mask, dz, zeros_like(dz)), where(mask, zeros_like(dz), dz))


@op("SquaredDifference", dtypes=NUMERIC_TYPES)
def squared_difference(x, y):
    d = np.subtract(x, y)
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


@squared_difference.def_grad
def _squared_difference_grad(op, dz):
    x, y = op.inputs
    g = 2.0 * dz * (x - y) if not _is_complex(x) else 2.0 * dz * (x - y)   # d (x-y)^2 = 2 (x-y) (dx - dy)
    return binary_grads(op, g, -g)


def _binary_inputs(x, y):
    """Converts two operands; a Python value takes the dtype of the tensor operand."""
    if type(x) is Tensor and type(y) is Tensor:
        return x, y
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        x = convert_to_tensor(x)
        return x, _convert_like(y, x)
    if isinstance(y, Tensor) or hasattr(y, "_as_tensor"):
        y = convert_to_tensor(y)
        return _convert_like(x, y), y
    x = convert_to_tensor(x)
    return x, _convert_like(y, x)


def _convert_like(value, other):
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return convert_to_tensor(value)
    return convert_to_tensor(value, dtype=other.dtype)


# -- add_n -------------------------------------------------------------------

@op("AddN", dtypes=NUMERIC_TYPES)
def _add_n(*xs):
    out = np.add(xs[0], xs[1]) if len(xs) > 1 else np.array(xs[0], copy=True)
    for x in xs[2:]:
        out += x
    return out


@_add_n.def_grad
def _add_n_grad(op, dz):
    return [dz] * len(op.inputs)                 # d(sum xs) = sum dxs


def add_n(inputs, name=None):
    """Sums a list of tensors of one shape and dtype.

    Raises:
      ValueError: `inputs` is empty or not a list of tensors.
      InvalidArgumentError: shapes or dtypes differ.
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("inputs must be a non-empty list of Tensor, IndexedSlices, or Variable objects.")
    from tapeflow.framework.indexed_slices import IndexedSlices
    tensors = [convert_to_tensor(t) if isinstance(t, IndexedSlices) else t for t in inputs]
    if len(tensors) == 1:
        return convert_to_tensor(tensors[0])
    ts = [convert_to_tensor(t) for t in tensors]
    shape = ts[0]._value.shape
    for t in ts[1:]:
        if t._value.shape != shape:
            raise InvalidArgumentError(None, "AddN", f"Inputs to operation AddN must have the same shape; "
                                       f"got {list(shape)} and {list(t._value.shape)} [Op:AddN]")
    return execute(_add_n, ts, {})


# -- unary ------------------------------------------------------------------

@op("Neg", dtypes=NUMERIC_TYPES)
def negative(x):
    return np.negative(x)


@negative.def_grad
def _neg_grad(op, dy):
    return -dy                                   # d(-x) = -dx


@op("Exp", dtypes=INEXACT_TYPES)
def exp(x):
    return np.exp(x)


@exp.def_grad(uses_outputs=True)
def _exp_grad(op, dy):
    return dy * _conj_if_complex(op.outputs[0])   # d e^x = e^x dx


@op("Log", dtypes=INEXACT_TYPES)
def log(x):
    return np.log(x)


@log.def_grad
def _log_grad(op, dy):
    return dy * reciprocal(_conj_if_complex(op.inputs[0]))   # d log x = dx / x


@op("Sin", dtypes=INEXACT_TYPES)
def sin(x):
    return np.sin(x)


@sin.def_grad
def _sin_grad(op, dy):
    return dy * _conj_if_complex(cos(op.inputs[0]))   # d sin x = cos x dx


@op("Cos", dtypes=INEXACT_TYPES)
def cos(x):
    return np.cos(x)


@cos.def_grad
def _cos_grad(op, dy):
    return -dy * _conj_if_complex(sin(op.inputs[0]))  # d cos x = -sin x dx


@op("Tanh", dtypes=INEXACT_TYPES)
def tanh(x):
    return np.tanh(x)


@tanh.def_grad(uses_outputs=True)
def _tanh_grad(op, dy):
    y = _conj_if_complex(op.outputs[0])
    return dy * (1 - y * y)                          # d tanh x = (1 - tanh^2 x) dx


@op("Square", dtypes=NUMERIC_TYPES)
def square(x):
    return np.square(x)


@square.def_grad
def _square_grad(op, dy):
    return dy * (2 * _conj_if_complex(op.inputs[0]))   # d x^2 = 2x dx


@op("Sqrt", dtypes=INEXACT_TYPES)
def sqrt(x):
    return np.sqrt(x)


@sqrt.def_grad(uses_outputs=True)
def _sqrt_grad(op, dy):
    return dy * 0.5 / _conj_if_complex(op.outputs[0])   # d sqrt x = dx / (2 sqrt x)


@op("Reciprocal", dtypes=INEXACT_TYPES)
def reciprocal(x):
    return np.reciprocal(x)


@reciprocal.def_grad(uses_outputs=True)
def _reciprocal_grad(op, dy):
    y = _conj_if_complex(op.outputs[0])
    return -dy * y * y                               # d (1/x) = -dx / x^2


@op("Floor", dtypes=FLOATING_TYPES)
def floor(x):
    return np.floor(x)


@floor.def_grad
def _floor_grad(op, dy):
    return None                                       # piecewise constant: TF returns None


@op("Abs", dtypes=NUMERIC_TYPES)
def _abs(x):
    return np.abs(x)


@_abs.def_grad
def _abs_grad(op, dy):
    return dy * sign(op.inputs[0])                   # d|x| = sign(x) dx


@op("ComplexAbs", dtypes=dtypes.COMPLEX_TYPES)
def _complex_abs(x):
    return np.abs(x)


@_complex_abs.def_grad(uses_outputs=True)
def _complex_abs_grad(op, dy):
    x, y = op.inputs[0], op.outputs[0]              # d|z| = Re(conj(z)/|z| dz)
    return complex(dy, zeros_like(dy)) * div_no_nan(x, complex(y, zeros_like(y)))


def abs(x, name=None):  # noqa: A001 - TensorFlow's public name
    """|x| elementwise; for complex x a real tensor of magnitudes."""
    x = convert_to_tensor(x)
    return _complex_abs(x) if _is_complex(x) else _abs(x)


@op("Sign", dtypes=NUMERIC_TYPES)
def sign(x):
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)
    return np.sign(x)


@sign.def_grad
def _sign_grad(op, dy):
    return zeros_like(op.inputs[0])                  # piecewise constant


@op("Conj", dtypes=NUMERIC_TYPES)
def _conj(x):
    return np.conj(x)


@_conj.def_grad
def _conj_grad(op, dy):
    return conj(dy)                                   # conj is its own adjoint


def conj(x, name=None):
    """Complex conjugate; the identity on real tensors."""
    x = convert_to_tensor(x)
    return _conj(x) if _is_complex(x) else x


@op("Real", dtypes=dtypes.COMPLEX_TYPES)
def _real(x):
    return np.real(x)


@_real.def_grad
def _real_grad(op, dy):
    return complex(dy, zeros_like(dy))                # d Re z = Re dz


@op("Imag", dtypes=dtypes.COMPLEX_TYPES)
def _imag(x):
    return np.imag(x)


@_imag.def_grad
def _imag_grad(op, dy):
    return complex(zeros_like(dy), dy)                # d Im z = Im dz, TF convention


def real(input, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    return _real(x) if _is_complex(x) else x


def imag(input, name=None):  # noqa: A002
    x = convert_to_tensor(input)
    return _imag(x) if _is_complex(x) else zeros_like(x)


@op("Complex", dtypes=(dtypes.float32, dtypes.float64))
def _complex(re, im):
    return np.asarray(re + 1j * np.asarray(im)).astype(np.complex64 if re.dtype == np.float32 else np.complex128)


@_complex.def_grad
def _complex_grad(op, dz):
    return binary_grads(op, real(dz), imag(dz))


def complex(real, imag, name=None):  # noqa: A001 - TensorFlow's public name
    """real + 1j * imag; float32 gives complex64, float64 gives complex128."""
    return _complex(*_binary_inputs(real, imag))


# -- casts and comparisons ----------------------------------------------------

@op("Cast", same_dtype=False)
def _cast(x, DstT):
    if x.dtype.kind == "c" and DstT.kind != "c":
        x = np.real(x)
    return np.asarray(x).astype(DstT, copy=False) if x.dtype != DstT else x


@_cast.def_grad
def _cast_grad(op, dy):
    src = op.inputs[0]._value.dtype
    if src not in dtypes.TRAINABLE_NP or dy._value.dtype not in dtypes.TRAINABLE_NP:
        return None                                   # casts to or from integers cut the gradient
    return cast(dy, dtypes.from_numpy(src))


def cast(x, dtype, name=None):
    """Casts `x` to `dtype`; complex to real keeps the real part.

    >>> import tapeflow as tf
    >>> tf.cast(tf.constant([1.7, -1.7]), tf.int32).numpy()
    array([ 1, -1], dtype=int32)
    """
    dtype = dtypes.as_dtype(dtype)
    from tapeflow.framework.indexed_slices import IndexedSlices
    if isinstance(x, IndexedSlices):
        return IndexedSlices(cast(x.values, dtype), x.indices, x.dense_shape)
    x = convert_to_tensor(x)
    if x._value.dtype == dtype._np:
        return x
    return execute(_cast, (x,), {"DstT": dtype._np})


def _comparison(type_, fn):
    kernel = op(type_, dtypes=NUMERIC_TYPES + (dtypes.bool,))(fn)
    no_gradient(type_)

    def compare(x, y, name=None):
        return execute(kernel, _binary_inputs(x, y), {})
    compare.__name__ = fn.__name__
    compare.__doc__ = f"Elementwise `{fn.__name__}` as a bool tensor (broadcasting)."
    return compare


equal = _comparison("Equal", lambda x, y: np.equal(x, y))
not_equal = _comparison("NotEqual", lambda x, y: np.not_equal(x, y))
less = _comparison("Less", lambda x, y: np.less(x, y))
less_equal = _comparison("LessEqual", lambda x, y: np.less_equal(x, y))
greater = _comparison("Greater", lambda x, y: np.greater(x, y))
greater_equal = _comparison("GreaterEqual", lambda x, y: np.greater_equal(x, y))
for _f, _n in ((equal, "equal"), (not_equal, "not_equal"), (less, "less"), (less_equal, "less_equal"),
               (greater, "greater"), (greater_equal, "greater_equal")):
    _f.__name__ = _n


# -- where, zeros_like, ones_like (needed by many gradients) ----------------

@op("SelectV2", same_dtype=False)
def _select(cond, x, y):
    return np.where(cond, x, y)


@_select.def_grad
def _select_grad(op, dz):
    cond, x, y = op.inputs
    zeros = zeros_like(dz)
    return None, unbroadcast(_select(cond, dz, zeros), x._value.shape), unbroadcast(_select(cond, zeros, dz), y._value.shape)


def where(condition, x=None, y=None, name=None):
    """Elementwise choice `x if condition else y` (broadcasting); with x and y None,
    the coordinates of true elements as an int64 [n, rank] tensor."""
    condition = convert_to_tensor(condition)
    if x is None and y is None:
        return Tensor(np.argwhere(np.asarray(condition._value)).astype(np.int64))
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    if condition._value.dtype != np.bool_:
        raise InvalidArgumentError(None, "SelectV2", f"condition must be a bool tensor, got {condition.dtype.name} [Op:SelectV2]")
    x, y = _binary_inputs(x, y)
    if x._value.dtype != y._value.dtype:
        raise InvalidArgumentError(None, "SelectV2", f"x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name} [Op:SelectV2]")
    return execute(_select, (condition, x, y), {})


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros with the shape (and dtype, unless given) of `input`."""
    x = input if type(input) is Tensor else convert_to_tensor(input)
    np_dtype = x._value.dtype if dtype is None else dtypes.as_dtype(dtype)._np
    return Tensor(np.zeros(x._value.shape, np_dtype))


def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones with the shape (and dtype, unless given) of `input`."""
    x = input if type(input) is Tensor else convert_to_tensor(input)
    np_dtype = x._value.dtype if dtype is None else dtypes.as_dtype(dtype)._np
    return Tensor(np.ones(x._value.shape, np_dtype))


def div_no_nan(x, y, name=None):
    """x / y, with 0 where y == 0."""
    x, y = _binary_inputs(x, y)
    safe = where(equal(y, zeros_like(y)), ones_like(y), y)
    return where(equal(y, zeros_like(y)), zeros_like(x / safe), x / safe)


# -- reductions ---------------------------------------------------------------

def _axes(axis, rank):
    """Normalizes a reduction axis argument to a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, Tensor):
        axis = np.asarray(axis._value).tolist()
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    out = []
    for a in axis:
        a = int(a)
        if not -rank <= a < max(rank, 1):
            raise InvalidArgumentError(None, "Reduce", f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        out.append(a % rank if rank else 0)
    return tuple(sorted(set(out)))


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


@op("Sum", dtypes=NUMERIC_TYPES)
def _sum(x, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@_sum.def_grad
def _sum_grad(op, dy):
    from tapeflow.ops import array_ops
    x = op.inputs[0]
    shape = x._value.shape
    if not op.get_attr("keepdims"):
        dy = array_ops.reshape(dy, _kept_shape(shape, op.get_attr("axis")))
    return array_ops.broadcast_to(dy, shape)          # each input element gets the sum's gradient


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes when None).

    >>> import tapeflow as tf
    >>> tf.reduce_sum(tf.ones([2, 3]), axis=1).numpy()
    array([3., 3.], dtype=float32)
    """
    x = input_tensor if type(input_tensor) is Tensor else convert_to_tensor(input_tensor)
    if x._value.dtype == np.bool_:
        raise InvalidArgumentError(None, "Sum", "Value for attr 'T' of bool is not in the list of allowed values [Op:Sum]")
    return execute(_sum, (x,), {"axis": _axes(axis, x._value.ndim), "keepdims": bool(keepdims)})


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis`; integer inputs give integer (truncated) means like TensorFlow."""
    x = input_tensor if type(input_tensor) is Tensor else convert_to_tensor(input_tensor)
    axes = _axes(axis, x._value.ndim)
    count = 1
    for a in axes:
        count *= x._value.shape[a]
    total = reduce_sum(x, axes, keepdims)
    if x._value.dtype.kind in "iu":
        return _floor_div(total, Tensor(np.asarray(max(count, 1), x._value.dtype))) if count else total
    return total / Tensor(np.asarray(count, x._value.dtype))


# -- matmul ------------------------------------------------------------------

@op("BatchMatMulV2", dtypes=NUMERIC_TYPES)
def _matmul(a, b, transpose_a, transpose_b):
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"In[0] and In[1] must be at least rank 2, got shapes {list(a.shape)} and {list(b.shape)}")
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: {list(b.shape)}")
    return np.matmul(a, b)


@_matmul.def_grad
def _matmul_grad(op, dy):
    a, b = (_conj_if_complex(t) for t in op.inputs)
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    mm = _matmul_op
    if not ta and not tb:                  # y = a b:       da = dy b^T,   db = a^T dy
        da, db = mm(dy, b, False, True), mm(a, dy, True, False)
    elif not ta and tb:                    # y = a b^T:     da = dy b,     db = dy^T a
        da, db = mm(dy, b, False, False), mm(dy, a, True, False)
    elif ta and not tb:                    # y = a^T b:     da = b dy^T,   db = a dy
        da, db = mm(b, dy, False, True), mm(a, dy, False, False)
    else:                                  # y = a^T b^T:   da = b^T dy^T, db = dy^T a^T
        da, db = mm(b, dy, True, True), mm(dy, a, True, True)
    return binary_grads(op, da, db)


def _matmul_op(a, b, transpose_a, transpose_b):
    return execute(_matmul, (a, b), {"transpose_a": transpose_a, "transpose_b": transpose_b})


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    """Matrix product of the last two axes, batch axes broadcast.

    Raises:
      ValueError: both transpose_x and adjoint_x are set.
      InvalidArgumentError: ranks below 2, mismatched inner dimensions or dtypes.

    >>> import tapeflow as tf
    >>> tf.matmul(tf.ones([2, 3]), tf.ones([3, 4])).shape
    TensorShape([2, 4])
    """
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    a, b = _binary_inputs(a, b)
    if adjoint_a:
        a, transpose_a = conj(a), True
    if adjoint_b:
        b, transpose_b = conj(b), True
    return _matmul_op(a, b, bool(transpose_a), bool(transpose_b))


# -- segment sums -----------------------------------------------------------

@op("UnsortedSegmentSum", same_dtype=False, dtypes=NUMERIC_TYPES)
def _unsorted_segment_sum(data, segment_ids, num_segments):
    ids = np.asarray(segment_ids)
    data = np.asarray(data)
    if data.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"data.shape = {list(data.shape)} does not start with segment_ids.shape = {list(ids.shape)}")
    if ids.size and ids.max() >= num_segments:
        raise ValueError(f"segment_ids[{int(np.argmax(ids))}] = {int(ids.max())} is out of range [0, {num_segments})")
    out = np.zeros((num_segments,) + data.shape[ids.ndim:], data.dtype)
    keep = ids >= 0                                    # negative ids are dropped, like TensorFlow
    np.add.at(out, ids[keep], data[keep])
    return out


@_unsorted_segment_sum.def_grad
def _unsorted_segment_sum_grad(op, dy):
    from tapeflow.ops import array_ops
    ids = op.inputs[1]
    clipped = maximum(ids, zeros_like(ids))
    g = array_ops.gather(dy, clipped)                  # each row gets its segment's gradient
    mask = greater_equal(ids, zeros_like(ids))
    mask = array_ops.reshape(mask, ids._value.shape + (1,) * (g._value.ndim - ids._value.ndim))
    return where(array_ops.broadcast_to(mask, g._value.shape), g, zeros_like(g)), None


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums rows of `data` into `num_segments` segments given by `segment_ids` (negative ids dropped)."""
    data = convert_to_tensor(data)
    segment_ids = convert_to_tensor(segment_ids)
    if segment_ids._value.dtype.kind not in "iu":
        raise TypeError(f"segment_ids must be an integer tensor, got {segment_ids.dtype.name}.")
    return execute(_unsorted_segment_sum, (data, segment_ids), {"num_segments": int(num_segments)})


__all__ = [
    "abs", "add", "add_n", "cast", "complex", "conj", "cos", "divide", "equal", "exp", "floor",
    "floordiv", "greater", "greater_equal", "imag", "less", "less_equal", "log", "matmul", "maximum",
    "minimum", "multiply", "negative", "not_equal", "ones_like", "pow", "real", "reduce_mean",
    "reduce_sum", "sign", "sin", "sqrt", "square", "subtract", "tanh", "truediv", "where",
    "zeros_like", "reciprocal", "squared_difference", "floormod", "div_no_nan", "unsorted_segment_sum",
]


# -- logical ------------------------------------------------------------------

def _logical(type_, fn, arity):
    kernel = op(type_, dtypes=(dtypes.bool,))(fn)
    no_gradient(type_)
    if arity == 1:
        def logical(x, name=None):
            return execute(kernel, (convert_to_tensor(x, dtype=dtypes.bool),), {})
    else:
        def logical(x, y, name=None):
            return execute(kernel, (convert_to_tensor(x, dtype=dtypes.bool), convert_to_tensor(y, dtype=dtypes.bool)), {})
    logical.__doc__ = f"Elementwise logical {fn.__name__} of bool tensors."
    return logical


logical_and = _logical("LogicalAnd", np.logical_and, 2)
logical_or = _logical("LogicalOr", np.logical_or, 2)
logical_not = _logical("LogicalNot", np.logical_not, 1)


def logical_xor(x, y, name="LogicalXor"):
    """Elementwise exclusive or of bool tensors."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)))


__all__ += ["logical_and", "logical_or", "logical_not", "logical_xor"]
