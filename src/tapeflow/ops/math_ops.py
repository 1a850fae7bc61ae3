"""Math ops (`tf.math`): the family's hub, binary arithmetic, complex parts,
casts, comparisons, logical ops, `where` and `matmul`.

Each op's kernel and its gradient sit together; gradients use tapeflow ops
only, so they can be differentiated again.  The unary ops that arithmetic's own
rules need (`negative`, `square`, `reciprocal`, `log`) are here too; the rest of
the family sits above this module: `unary_ops` (elementwise functions of one
tensor), `special_math_ops`, `reduction_ops` (reductions, arg-reductions, scans,
top_k) and `segment_ops`.  Casts, `conj`, `real`/`imag` helpers and `reduce_sum`
are primitives of the ops core (ops/core/primitives.py).

Ops are declared with the family presets of `ops/core/presets` (`unary_op`,
`binary_op`, `comparison_op`, `reduction_op`): each declaration carries the
op's static shape and dtype rule (inputs of unknown rank included), so no
kernel runs while a graph is built, and its `def_grad` says which input and
output values the gradient reads (Note [saved inputs] in framework/op_def.py).
"""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.dtypes import FLOATING_TYPES, INEXACT_TYPES, NUMERIC_TYPES, REAL_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import _NO_ATTRS, ALL, LINEAR, convert_like, execute, op, raise_type_mismatch
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.symbolic_tensors import Meta, is_static
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core import batching, half, primitives
from tapeflow.ops.core.arguments import check_list_entries
from tapeflow.ops.core.batching import sized_by_values
from tapeflow.ops.core.presets import binary_op, comparison_op, unary_op
from tapeflow.ops.core.primitives import binary_grads, unbroadcast
from tapeflow.ops.core.basic_ops import _COMPLEX_NP, _conj_if_complex, _filled_like, cast, conj, zeros_like

_SIGNED_INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64)
_SIGNED = FLOATING_TYPES + _SIGNED_INTS + dtypes.COMPLEX_TYPES


def _is_complex(t):
    return t._value.dtype in _COMPLEX_NP


# -- binary arithmetic -------------------------------------------------------

def _sum_jvp(sign):
    """The JVP of x + sign * y: the tangents combined the same way, broadcast to the output."""
    def jvp(inputs, outputs, attrs, tangents):
        tx, ty = tangents
        if ty is not None:
            ty = ty if sign > 0 else negative(ty)
            out = ty if tx is None else add_v2(tx, ty)
        else:
            out = tx
        if out._value.shape != outputs[0]._value.shape:     # one side broadcast the other
            out = add_v2(out, zeros_like(outputs[0]))
        return [out]
    return jvp


def _mul_jvp(inputs, outputs, attrs, tangents):
    """The JVP of x * y: tx y + x ty."""
    (x, y), (tx, ty) = inputs, tangents
    terms = [multiply(t, other) for t, other in ((tx, y), (ty, x)) if t is not None]
    return [terms[0] if len(terms) == 1 else add_v2(*terms)]


# `into`: the kernel is a plain ufunc, a plan may compute it into a dying input's buffer
# (Note [buffer reuse] in graph/executor.py).  `half`: float16 and bfloat16 computed in
# float32 and rounded once, the correctly rounded result (Note [half precision] in ops/core/half.py).
@binary_op("AddV2", dtypes=NUMERIC_TYPES + (dtypes.string,), into=np.add, accepts_indexed_slices=True,
           jvp=_sum_jvp(1), half=half.in_float32_ufunc(np.add))
def add_v2(x, y):
    out = np.add(x, y)                  # strings join (TensorFlow's string Add)
    return out if type(out) is not str else np.asarray(out, x.dtype)


@tf_export("math.add", "add")
def add(x, y, name=None):
    """`x + y` elementwise, with broadcasting.

    As in TensorFlow, `y` is converted with `x`'s dtype as a hint only: a value
    that does not fit it (2.5 next to an int32 tensor) keeps its own dtype and
    the op reports the mismatch (InvalidArgumentError eagerly, TypeError in graphs).

    >>> import tapeflow as tf
    >>> tf.add(tf.constant([1, 2]), 3).numpy()
    array([4, 5], dtype=int32)
    """
    if type(x) is not Tensor:
        x = convert_to_tensor(x)
    if type(y) is not Tensor and not hasattr(y, "_as_tensor"):
        y = convert_to_tensor(y, dtype_hint=x.dtype)
    return add_v2(x, y)


@add_v2.def_grad(reads_inputs=False)
def _add_grad(op, dz):
    if type(dz) is IndexedSlices:
        return _sparse_sum_grads(op, dz, negate=False)
    return binary_grads(op, dz, dz)          # d(x+y) = dx + dy


def _sparse_sum_grads(op, dz, negate):
    """The gradients of x + y (x - y with `negate`) for an IndexedSlices `dz`, of the kinds
    TensorFlow's give: inside graphs, `dz` itself goes on to an input whose static shape is the
    output's; eagerly, and to a broadcast input, the gradient is dense."""
    x, y = op.inputs
    skip = op.skip_input_indices
    xs, ys = x._value.shape, y._value.shape
    out = np.broadcast_shapes(xs, ys) if state.graphs and is_static(xs) and is_static(ys) else None
    dense = None if out == xs and out == ys else convert_to_tensor(dz)
    gx = None if 0 in skip else (dz if out == xs else unbroadcast(dense, xs, x))
    if 1 in skip:
        return gx, None
    gy = dz if out == ys else unbroadcast(dense, ys, y)
    return gx, (-gy if negate else gy)


@tf_export("math.subtract", "subtract")
@binary_op("Sub", dtypes=NUMERIC_TYPES, into=np.subtract, accepts_indexed_slices=True, jvp=_sum_jvp(-1),
           half=half.in_float32_ufunc(np.subtract))
def subtract(x, y):
    return np.subtract(x, y)


@subtract.def_grad(reads_inputs=False)
def _sub_grad(op, dz):
    if type(dz) is IndexedSlices:
        return _sparse_sum_grads(op, dz, negate=True)
    return binary_grads(op, dz, negative(dz))   # d(x-y) = dx - dy


@tf_export("math.multiply", "multiply")
@binary_op("Mul", dtypes=NUMERIC_TYPES, into=np.multiply, jvp=_mul_jvp, half=half.in_float32_ufunc(np.multiply))
def multiply(x, y):
    return np.multiply(x, y)


@multiply.def_grad(reads_inputs=ALL)
def _mul_grad(op, dz):
    x, y = op.inputs                                  # d(xy) = y dx + x dy
    skip = op.skip_input_indices
    return binary_grads(op, None if 0 in skip else dz * _conj_if_complex(y),
                        None if 1 in skip else _conj_if_complex(x) * dz)


@binary_op("RealDiv", dtypes=INEXACT_TYPES, into=np.true_divide, half=half.in_float32_ufunc(np.true_divide))
def _real_div(x, y):
    return np.true_divide(x, y)


@_real_div.def_grad(reads_inputs=ALL)
def _real_div_grad(op, dz):
    x, y = (_conj_if_complex(t) for t in op.inputs)
    return binary_grads(op, dz / y, -dz * x / (y * y))   # d(x/y) = dx/y - x dy/y^2


# Integer operands of true division are first cast like Python 3 (TF's _TRUEDIV_TABLE).
_TRUEDIV_FLOAT = {np.dtype(t): (dtypes.float32 if np.dtype(t).itemsize <= 2 else dtypes.float64)
                  for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)}


def _true_div_inputs(x, y, what):
    x, y = _binary_inputs(x, y)
    dt = x._value.dtype
    if y._value.dtype != dt:
        raise TypeError(f"`x` and `y` must have the same dtype, got {x.dtype!r} != {y.dtype!r}.")
    if dt.kind in "iu":
        target = _TRUEDIV_FLOAT[dt]
        return cast(x, target), cast(y, target)
    if dt.kind == "b":
        raise TypeError(f"Invalid dtype tf.bool in {what}. Expected a numeric dtype.")
    return x, y


@tf_export("math.truediv", "truediv")
def truediv(x, y, name=None):
    """x / y elementwise; integers are first cast to float64 (float32 for 8/16-bit), like Python 3.

    Raises:
      TypeError: `x` and `y` have different dtypes.

    >>> import tapeflow as tf
    >>> tf.math.truediv(tf.constant([1, 2]), tf.constant([2, 2])).numpy()
    array([0.5, 1. ])
    """
    if type(x) is Tensor and type(y) is Tensor:          # fast path: two float tensors of one dtype
        dt = x._value.dtype
        if dt.kind in "fc" and y._value.dtype == dt:
            return execute(_real_div, (x, y), _NO_ATTRS)
    return _real_div(*_true_div_inputs(x, y, "__truediv__"))


@tf_export("math.divide", "divide")
def divide(x, y, name=None):
    """x / y elementwise (`truediv`)."""
    return truediv(x, y)


@binary_op("FloorDiv", dtypes=REAL_TYPES, differentiable=False)
def _floor_div(x, y):
    if x.dtype.kind in "iu":
        if np.any(y == 0):
            raise ValueError("Integer division by zero")
        return np.floor_divide(x, y)
    return np.floor(np.true_divide(x, y))


@tf_export("math.floordiv")
def floordiv(x, y, name=None):
    """floor(x / y) elementwise, in the dtype of the inputs.

    Raises:
      InvalidArgumentError: integer division by zero.
    """
    return _floor_div(*_binary_inputs(x, y))


@tf_export("math.floormod", "math.mod")
@binary_op("FloorMod", dtypes=REAL_TYPES)
def floormod(x, y):
    if x.dtype.kind in "iu":
        if np.any(y == 0):
            raise ValueError("Integer division by zero")
        return np.mod(x, y)
    with np.errstate(invalid="ignore", divide="ignore"):     # x mod 0 is NaN
        return np.mod(x, y)


@floormod.def_grad(reads_inputs=ALL)
def _floormod_grad(op, dz):
    x, y = op.inputs                          # x mod y = x - floor(x/y) y
    return binary_grads(op, dz, -dz * _floor_div(x, y))


mod = floormod


@tf_export("math.pow", "pow")
@binary_op("Pow", dtypes=FLOATING_TYPES + _SIGNED_INTS + dtypes.COMPLEX_TYPES)
def pow(x, y):  # noqa: A001 - TensorFlow's public name
    if x.dtype.kind in "iu" and np.any(np.asarray(y) < 0):
        raise ValueError("Integers to negative integer powers are not allowed")
    return np.power(x, y)


@pow.def_grad(reads_inputs=ALL, reads_outputs=True)
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


@tf_export("math.maximum", "maximum")
@binary_op("Maximum", dtypes=REAL_TYPES, into=np.maximum)
def maximum(x, y):
    return np.maximum(x, y)


@maximum.def_grad(reads_inputs=ALL)
def _maximum_grad(op, dz):
    x, y = op.inputs
    mask = x >= y                          # ties send the gradient to x
    return binary_grads(op, where(mask, dz, zeros_like(dz)), where(mask, zeros_like(dz), dz))


@tf_export("math.minimum", "minimum")
@binary_op("Minimum", dtypes=REAL_TYPES, into=np.minimum)
def minimum(x, y):
    return np.minimum(x, y)


@minimum.def_grad(reads_inputs=ALL)
def _minimum_grad(op, dz):
    x, y = op.inputs
    mask = x <= y                          # ties send the gradient to x
    return binary_grads(op, where(mask, dz, zeros_like(dz)), where(mask, zeros_like(dz), dz))


@tf_export("math.squared_difference")
@binary_op("SquaredDifference", dtypes=FLOATING_TYPES + (dtypes.int32, dtypes.int64) + dtypes.COMPLEX_TYPES)
def squared_difference(x, y):
    d = np.subtract(x, y)
    return d * np.conj(d) if d.dtype.kind == "c" else d * d


@squared_difference.def_grad(reads_inputs=ALL)
def _squared_difference_grad(op, dz):
    x, y = op.inputs
    g = 2.0 * dz * (x - y)                 # d (x-y)^2 = 2 (x-y) (dx - dy); TF keeps no conj here
    return binary_grads(op, g, -g)


@tf_export("math.atan2", "atan2")
@binary_op("Atan2", dtypes=FLOATING_TYPES)
def atan2(y, x):
    return np.arctan2(y, x)


@atan2.def_grad(reads_inputs=ALL)
def _atan2_grad(op, dz):
    y, x = op.inputs                       # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
    scale = dz / (square(y) + square(x))
    return binary_grads(op, x * scale, -y * scale)


@tf_export("math.xlogy")
@binary_op("Xlogy", dtypes=INEXACT_TYPES)
def xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, np.zeros((), x.dtype), x * np.log(y))


@xlogy.def_grad(reads_inputs=ALL)
def _xlogy_grad(op, dz):
    x, y = op.inputs                       # d x log y = log y dx + x/y dy, and 0 where x == 0
    nonzero = cast(not_equal(x, zeros_like(x)), x.dtype)
    return binary_grads(op, dz * xlogy(nonzero, y), dz * xdivy(x, y))


@tf_export("math.xlog1py")
@binary_op("Xlog1py", dtypes=INEXACT_TYPES)
def xlog1py(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, np.zeros((), x.dtype), x * np.log1p(y))


@xlog1py.def_grad(reads_inputs=ALL)
def _xlog1py_grad(op, dz):
    x, y = op.inputs                       # d x log(1+y) = log(1+y) dx + x/(1+y) dy
    nonzero = cast(not_equal(x, zeros_like(x)), x.dtype)
    return binary_grads(op, dz * xlog1py(nonzero, y), dz * xdivy(x, y + 1))


@tf_export("math.xdivy")
@binary_op("Xdivy", dtypes=INEXACT_TYPES)
def xdivy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, np.zeros((), x.dtype), x / y)


@xdivy.def_grad(reads_inputs=ALL)
def _xdivy_grad(op, dz):
    x, y = op.inputs                       # d x/y = dx/y - x/y^2 dy, and 0 where x == 0
    nonzero = cast(not_equal(x, zeros_like(x)), x.dtype)
    return binary_grads(op, dz * xdivy(nonzero, y), dz * xdivy(-x, y * y))


@binary_op("DivNoNan", dtypes=INEXACT_TYPES)
def _div_no_nan(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(y == 0, np.zeros((), x.dtype), np.true_divide(x, y))


@_div_no_nan.def_grad(reads_inputs=ALL)
def _div_no_nan_grad(op, dz):
    x, y = (_conj_if_complex(t) for t in op.inputs)   # d(x/y) = dx/y - x dy/y^2, 0 where y == 0
    return binary_grads(op, _div_no_nan(dz, y), dz * _div_no_nan(_div_no_nan(-x, y), y))


@tf_export("math.divide_no_nan")
def div_no_nan(x, y, name=None):
    """x / y elementwise, 0 where y == 0 (even where x is NaN or infinite).

    Integers are cast to floats first, as in `truediv`.

    >>> import tapeflow as tf
    >>> tf.math.divide_no_nan(tf.constant([3.0, 1.0]), tf.constant([0.0, 2.0])).numpy()
    array([0. , 0.5], dtype=float32)
    """
    return _div_no_nan(*_true_div_inputs(x, y, "tf.math.divide_no_nan"))


divide_no_nan = div_no_nan


@binary_op("MulNoNan", dtypes=INEXACT_TYPES)
def _mul_no_nan(x, y):
    with np.errstate(invalid="ignore"):                       # inf * 0 is masked out
        return np.where(y == 0, np.zeros((), x.dtype), np.multiply(x, y))


@_mul_no_nan.def_grad(reads_inputs=ALL)
def _mul_no_nan_grad(op, dz):
    x, y = op.inputs                       # d(xy) = y dx + x dy, with 0 * anything = 0 (conjugated as
    # Mul's: TensorFlow's MulNoNan gradient omits it, wrong for complex inputs)
    return binary_grads(op, _mul_no_nan(dz, _conj_if_complex(y)), _mul_no_nan(_conj_if_complex(x), dz))


@tf_export("math.multiply_no_nan")
def multiply_no_nan(x, y, name=None):
    """x * y elementwise, 0 where y == 0 (even where x is NaN or infinite).

    Raises:
      TypeError: `x` and `y` have different dtypes.
    """
    x, y = _binary_inputs(x, y)
    if x._value.dtype != y._value.dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
    return _mul_no_nan(x, y)


@tf_export("math.scalar_mul", "scalar_mul")
def scalar_mul(scalar, x, name=None):
    """Multiplies `x` (a tensor or IndexedSlices) by a scalar.

    Raises:
      ValueError: `scalar` is not 0-D.
    """
    target = x.values if isinstance(x, IndexedSlices) else convert_to_tensor(x)
    scalar = convert_to_tensor(scalar, dtype=target.dtype)
    if scalar._value.ndim:
        raise ValueError(f"The input scalar must be a 0-D value. Received shape {tuple(scalar._value.shape)}.")
    if isinstance(x, IndexedSlices):
        return IndexedSlices(multiply(scalar, x.values), x.indices, x.dense_shape)
    return multiply(scalar, target)


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
    return convert_like(value, other.dtype)


# -- add_n -------------------------------------------------------------------

@op("AddN", dtypes=NUMERIC_TYPES, shape=shape_rules.add_n_shape, unknown_rank=True, batch=batching.SAME_SHAPE,
    jvp=LINEAR)
def _add_n(*xs):
    out = np.add(xs[0], xs[1]) if len(xs) > 1 else np.array(xs[0], copy=True)
    for x in xs[2:]:
        out += x
    return out


@_add_n.def_grad(reads_inputs=False)
def _add_n_grad(op, dz):
    return [dz] * len(op.inputs)                 # d(sum xs) = sum dxs


@tf_export("math.add_n", "add_n")
def add_n(inputs, name=None):
    """Sums a list of tensors of one shape and dtype.

    Raises:
      ValueError: `inputs` is empty or not a list of tensors.
      InvalidArgumentError: shapes or dtypes differ.
    """
    if isinstance(inputs, Tensor):             # a tensor is a list of its rows (eagerly; not in graphs)
        if getattr(inputs, "_is_symbolic", False):
            raise TypeError("Iterating over a symbolic tf.Tensor is not allowed: add_n needs a list of tensors.")
        inputs = list(inputs)
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError("Inputs must be an iterable of at least one Tensor/IndexedSlices with the same dtype and shape.")
    tensors = [convert_to_tensor(t) if isinstance(t, IndexedSlices) else t for t in inputs]
    if len(tensors) == 1:
        return convert_to_tensor(tensors[0])
    ts = [convert_to_tensor(t) for t in tensors]
    shape, dtype = ts[0]._value.shape, ts[0]._value.dtype
    for i, t in enumerate(ts[1:], 1):
        if t._value.dtype != dtype:                      # types first, as TF's op builder checks them
            raise_type_mismatch("AddN", i, dtype, t._value.dtype)
        if t._value.shape != shape and not shape_rules.compatible(t._value.shape, shape):
            raise shape_rules.shape_error("AddN", f"Inputs to operation AddN of type AddN must have the same size "
                                        f"and shape.  Input 0: {list(shape)} != input {i}: {list(t._value.shape)}")
    return execute(_add_n, ts, {})


@tf_export("math.accumulate_n")
def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """Sums a list of tensors like `add_n` (TensorFlow's deprecated alias)."""
    return add_n(inputs)


# -- complex numbers ---------------------------------------------------------


@unary_op("Real", dtypes=dtypes.COMPLEX_TYPES, shape=shape_rules.unary_real_shape)
def _real(x):
    return np.real(x)


@_real.def_grad(reads_inputs=False)
def _real_grad(op, dy):
    return complex(dy, zeros_like(dy))                # d Re z = Re dz


@unary_op("Imag", dtypes=dtypes.COMPLEX_TYPES, shape=shape_rules.unary_real_shape)
def _imag(x):
    return np.imag(x)


@_imag.def_grad(reads_inputs=False)
def _imag_grad(op, dy):
    return complex(zeros_like(dy), dy)                # d Im z = Im dz, TF convention


@tf_export("math.real")
def real(input, name=None):  # noqa: A002
    """The real part of a complex tensor; real tensors are returned unchanged."""
    x = convert_to_tensor(input)
    return _real(x) if _is_complex(x) else x


@tf_export("math.imag")
def imag(input, name=None):  # noqa: A002
    """The imaginary part of a complex tensor; zeros for real tensors."""
    x = convert_to_tensor(input)
    return _imag(x) if _is_complex(x) else zeros_like(x)


@unary_op("Angle", dtypes=dtypes.COMPLEX_TYPES, shape=shape_rules.unary_real_shape)
def _angle(x):
    return np.angle(x)


@_angle.def_grad(reads_inputs=(0,))
def _angle_grad(op, dy):
    x = op.inputs[0]                                  # d arg z = -Re(dz / (Im z + i Re z)), TF convention
    return -complex(dy, zeros_like(dy)) * reciprocal(complex(imag(x), real(x)))


@tf_export("math.angle")
def angle(input, name=None):  # noqa: A002
    """The argument of a complex tensor; pi for negative and 0 for other real values."""
    x = convert_to_tensor(input)
    if _is_complex(x):
        return _angle(x)
    return where(x < 0, _filled_like(x, None, np.pi), zeros_like(x))


@binary_op("Complex", dtypes=(dtypes.float32, dtypes.float64), shape=shape_rules.complex_shape)
def _complex(re, im):
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real = re
    out.imag = im
    return out


@_complex.def_grad(reads_inputs=False)
def _complex_grad(op, dz):
    return binary_grads(op, real(dz), imag(dz))       # dz = dx + i dy


@tf_export("complex")
def complex(real, imag, name=None):  # noqa: A001 - TensorFlow's public name
    """real + 1j * imag; float32 parts give complex64, float64 parts complex128.

    Raises:
      TypeError: the parts are not both float32 or both float64.
    """
    re, im = _binary_inputs(real, imag)
    if re._value.dtype != im._value.dtype or re._value.dtype not in (np.float32, np.float64):
        raise TypeError(f"The `real` and `imag` components have incorrect types: {re.dtype.name} {im.dtype.name}. "
                        f"They must be consistent, and one of [tf.float32, tf.float64]")
    return _complex(re, im)


# -- casts and comparisons ----------------------------------------------------


def _comparison(type_, fn, allowed):
    kernel = comparison_op(type_, dtypes=allowed)(fn)

    def compare(x, y, name=None):
        return execute(kernel, _binary_inputs(x, y), {})
    compare.__name__ = fn.__name__
    compare.__doc__ = f"Elementwise `{fn.__name__}` as a bool tensor (broadcasting)."
    compare.op = kernel                  # the op record (ops/static_value.py evaluates Equal, NotEqual)
    return compare


def _text_safe(x):
    """String arrays compared as Python objects: NumPy's string comparison stops at a NUL byte
    (Note [string tensors] in framework/dtypes.py)."""
    return x.astype(object) if x.dtype.kind == "T" else x


equal = _comparison("Equal", lambda x, y: np.equal(_text_safe(x), _text_safe(y)),
                    NUMERIC_TYPES + (dtypes.bool, dtypes.string))
not_equal = _comparison("NotEqual", lambda x, y: np.not_equal(_text_safe(x), _text_safe(y)),
                        NUMERIC_TYPES + (dtypes.bool, dtypes.string))
less = _comparison("Less", lambda x, y: np.less(x, y), REAL_TYPES)
less_equal = _comparison("LessEqual", lambda x, y: np.less_equal(x, y), REAL_TYPES)
greater = _comparison("Greater", lambda x, y: np.greater(x, y), REAL_TYPES)
greater_equal = _comparison("GreaterEqual", lambda x, y: np.greater_equal(x, y), REAL_TYPES)
for _f, _n in ((equal, "equal"), (not_equal, "not_equal"), (less, "less"), (less_equal, "less_equal"),
               (greater, "greater"), (greater_equal, "greater_equal")):
    _f.__name__ = _n
    tf_export(f"math.{_n}", _n)(_f)


# -- where, zeros_like, ones_like (needed by many gradients) ----------------

@op("SelectV2", same_dtype=False, shape=shape_rules.select_shape, unknown_rank=True, batch=batching.ELEMENTWISE)
def _select(cond, x, y):
    return np.where(cond, x, y)


@_select.def_grad(reads_inputs=(0,))
def _select_grad(op, dz):
    cond, x, y = op.inputs
    zeros = zeros_like(dz)
    return (None, unbroadcast(_select(cond, dz, zeros), x._value.shape, x),
            unbroadcast(_select(cond, zeros, dz), y._value.shape, y))


@tf_export("where")
def where(condition, x=None, y=None, name=None):
    """Elementwise choice `x if condition else y` (broadcasting); with x and y None,
    the coordinates of true elements as an int64 [n, rank] tensor."""
    if x is None and y is None:
        return where_indices(convert_to_tensor(condition))
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    given = condition
    tensor = isinstance(condition, Tensor) or hasattr(condition, "_as_tensor")
    condition = convert_to_tensor(condition) if tensor else _bool_condition(condition)
    if condition._value.dtype != np.bool_:
        if state.graphs and type(given) is Tensor:      # TF's op builder fails an assertion on a captured
            raise AssertionError("Unreachable")         # eager tensor of another dtype (tf.function)
        if state.graphs:
            raise TypeError(f"Input 'condition' of 'SelectV2' Op has type {condition.dtype.name} that does not "
                            "match expected type of bool.")
        raise InvalidArgumentError(None, "SelectV2", f"condition must be a bool tensor, got {condition.dtype.name} [Op:SelectV2]")
    x, y = _binary_inputs(x, y)
    if x._value.dtype != y._value.dtype:
        raise InvalidArgumentError(None, "SelectV2", f"x and y must have the same dtype, got {x.dtype.name} and {y.dtype.name} [Op:SelectV2]")
    return execute(_select, (condition, x, y), {})


def _bool_condition(value):
    """A Python or NumPy `condition` of `where` converted to bool as TensorFlow converts the
    SelectV2 input (bool only): numbers are TypeError; in graphs every entry is checked first."""
    if isinstance(value, (list, tuple)):
        if not value:
            return convert_to_tensor(np.zeros((0,), np.bool_))
        check_list_entries(value)
    if not state.graphs or value is None:
        return convert_to_tensor(value, dtype=dtypes.bool)
    try:
        return convert_to_tensor(value, dtype=dtypes.bool)
    except (TypeError, ValueError):
        raise TypeError(f"Expected bool passed to parameter 'condition' of op 'SelectV2', got {value!r}.") from None


@tf_export("ones_like")
def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones with the shape (and dtype, unless given) of `input`."""
    return _filled_like(input, dtype, 1)


# -- matmul ------------------------------------------------------------------

# fresh_outputs: never a view of an input (Note [buffer reuse] in graph/executor.py).
def _matmul_jvp(inputs, outputs, attrs, tangents):
    """The JVP of a b: ta b + a tb (a product for each input with a tangent only)."""
    (a, b), (ta, tb) = inputs, tangents
    flags = attrs["transpose_a"], attrs["transpose_b"]
    terms = [_matmul_op(ta, b, *flags) if ta is not None else None,
             _matmul_op(a, tb, *flags) if tb is not None else None]
    terms = [t for t in terms if t is not None]
    return [terms[0] if len(terms) == 1 else add_v2(*terms)]


@op("BatchMatMulV2", dtypes=NUMERIC_TYPES, shape=shape_rules.matmul_shape, unknown_rank=shape_rules.rank_unknown,
    fresh_outputs=True, jvp=_matmul_jvp, half=half.in_float32)
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


@_matmul.def_batch
def _matmul_batch(xs, batched, transpose_a, transpose_b):
    a, b = xs
    ranks = [batching.example_rank(x, k) for x, k in zip(xs, batched)]
    if ranks == [2, 2] and batched != (True, True):
        return (_batched_left(a, b, transpose_a, transpose_b) if batched[0]
                else _batched_right(a, b, transpose_a, transpose_b)), True
    return _matmul_op(*primitives.align_ranks(xs, batched), transpose_a, transpose_b), True


def _batched_left(a, b, ta, tb):
    """[B, m, k] @ [k, n] as one [B*m, k] @ [k, n] product."""
    if ta:
        a = primitives.transpose(a, (0, 2, 1))
    size, (m, k) = primitives.batch_size_of(a), a._value.shape[1:]
    rows = size * m if isinstance(size, int) and m is not None else -1     # -1 cannot be inferred when empty
    out = _matmul_op(primitives.reshape(a, (rows, k)), b, False, tb)
    return primitives.reshape(out, primitives.prepend(size, (m if m is not None else -1, out._value.shape[1])))


def _batched_right(a, b, ta, tb):
    """[m, k] @ [B, k, n] as one [m, k] @ [k, B*n] product: (b^T a^T)^T per example, so
    out = (b' @ a^T) with b' the examples' [n, k] rows stacked, transposed back."""
    bt = b if tb else primitives.transpose(b, (0, 2, 1))          # [B, n, k]
    size, (n, k) = primitives.batch_size_of(bt), bt._value.shape[1:]
    rows = size * n if isinstance(size, int) and n is not None else -1
    out = _matmul_op(primitives.reshape(bt, (rows, k)), a, False, not ta)   # [B*n, m]
    out = primitives.reshape(out, primitives.prepend(size, (n if n is not None else -1, out._value.shape[1])))
    return primitives.transpose(out, (0, 2, 1))


@_matmul.def_grad(reads_inputs=ALL)
def _matmul_grad(op, dy):
    a, b = (_conj_if_complex(t) for t in op.inputs)
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    skip = op.skip_input_indices               # e.g. the data batch of a layer: no product for it
    mm = _matmul_op
    if not ta and not tb:                  # y = a b:       da = dy b^T,   db = a^T dy
        da = None if 0 in skip else mm(dy, b, False, True)
        db = None if 1 in skip else mm(a, dy, True, False)
    elif not ta and tb:                    # y = a b^T:     da = dy b,     db = dy^T a
        da = None if 0 in skip else mm(dy, b, False, False)
        db = None if 1 in skip else mm(dy, a, True, False)
    elif ta and not tb:                    # y = a^T b:     da = b dy^T,   db = a dy
        da = None if 0 in skip else mm(b, dy, False, True)
        db = None if 1 in skip else mm(a, dy, False, False)
    else:                                  # y = a^T b^T:   da = b^T dy^T, db = dy^T a^T
        da = None if 0 in skip else mm(b, dy, True, True)
        db = None if 1 in skip else mm(dy, a, True, True)
    return binary_grads(op, da, db)


def _matmul_op(a, b, transpose_a, transpose_b):
    return execute(_matmul, (a, b), {"transpose_a": transpose_a, "transpose_b": transpose_b})


@tf_export("linalg.matmul", "matmul")
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
    if type(a) is not Tensor or type(b) is not Tensor:     # as TF: `b` takes a's dtype as a hint only
        a = convert_to_tensor(a)
        b = convert_to_tensor(b, dtype_hint=a.dtype)
    if adjoint_a:
        a, transpose_a = conj(a), True
    if adjoint_b:
        b, transpose_b = conj(b), True
    return _matmul_op(a, b, bool(transpose_a), bool(transpose_b))


# -- logical ------------------------------------------------------------------

def _logical(type_, fn, arity):
    kernel = comparison_op(type_, dtypes=(dtypes.bool,),
                           shape=shape_rules.compare_shape if arity == 2 else shape_rules.unary_bool_shape)(fn)
    if arity == 1:
        def logical(x, name=None):
            return execute(kernel, (_bool_operand(x),), {})
    else:
        def logical(x, y, name=None):
            return execute(kernel, (_bool_operand(x), _bool_operand(y)), {})
    logical.__doc__ = f"Elementwise logical {fn.__name__} of bool tensors."
    return logical


def _bool_operand(value):
    """Python values become bool tensors; tensors keep their dtype (checked by the op)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return convert_to_tensor(value)
    return convert_to_tensor(value, dtype=dtypes.bool)


logical_and = tf_export("math.logical_and", "logical_and")(_logical("LogicalAnd", np.logical_and, 2))
logical_or = tf_export("math.logical_or", "logical_or")(_logical("LogicalOr", np.logical_or, 2))
logical_not = tf_export("math.logical_not", "logical_not")(_logical("LogicalNot", np.logical_not, 1))


@tf_export("math.logical_xor")
def logical_xor(x, y, name="LogicalXor"):
    """Elementwise exclusive or of bool tensors."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)))


@tf_export("math.negative", "negative")
@unary_op("Neg", dtypes=_SIGNED, into=np.negative)
def negative(x):
    return np.negative(x)


@negative.def_grad(reads_inputs=False)
def _neg_grad(op, dy):
    return -dy                                          # d(-x) = -dx


@tf_export("math.square", "square")
@unary_op("Square", dtypes=NUMERIC_TYPES, into=np.square)
def square(x):
    return np.square(x)


@square.def_grad(reads_inputs=(0,))
def _square_grad(op, dy):
    return dy * (2 * _conj_if_complex(op.inputs[0]))                  # d x^2 = 2x dx


@tf_export("math.reciprocal")
@unary_op("Reciprocal", dtypes=INEXACT_TYPES, into=np.reciprocal)
def reciprocal(x):
    return np.reciprocal(x)


@reciprocal.def_grad(reads_inputs=False, reads_outputs=True)
def _reciprocal_grad(op, dy):
    y = _conj_if_complex(op.outputs[0])
    return _mul_no_nan(-y * y, dy)                      # d (1/x) = -dx / x^2; Note [zero upstream gradient]


@tf_export("math.log")
@unary_op("Log", dtypes=INEXACT_TYPES, into=np.log)
def log(x):
    return np.log(x)


@log.def_grad(reads_inputs=(0,))
def _log_grad(op, dy):
    return dy * reciprocal(_conj_if_complex(op.inputs[0]))            # d log x = dx / x


def _where_shape(condition):
    """[count, rank] int64 coordinates; the count is known only when the graph runs."""
    return [Meta((None, len(condition.shape)), np.dtype(np.int64))]


@op("Where", same_dtype=False, shape=_where_shape, differentiable=False)   # integer coordinates
def _where(condition):
    return np.argwhere(condition).astype(np.int64)


_where.def_batch(sized_by_values)


def where_indices(condition):
    """The coordinates of the true (nonzero) entries of `condition`, as an int64 [count, rank] tensor
    (`tf.where` with one argument)."""
    return execute(_where, (convert_to_tensor(condition),), {})
