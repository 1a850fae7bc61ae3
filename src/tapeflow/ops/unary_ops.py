"""Elementwise unary math (`tf.math`): signs, powers, exponentials, trigonometry,
the sigmoid family, rounding and float predicates (special functions are in
`special_math_ops`).

Each op's kernel and gradient sit together.  Gradients of holomorphic functions
follow TensorFlow's complex convention `dx = dy * conj(f'(x))`.  Every op
returns its input's dtype (half-precision SciPy calls go through float32).
"""

import numpy as np
import scipy.special

from tapeflow.framework import dtypes
from tapeflow.framework.dtypes import FLOATING_TYPES, INEXACT_TYPES
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import ALL, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core.batching import SAME_SHAPE
from tapeflow.ops.core.presets import unary_op
from tapeflow.ops.core.basic_ops import _conj_if_complex, cast, zeros_like
from tapeflow.ops.math_ops import (
    _SIGNED_INTS, _div_no_nan, _mul_no_nan, complex, div_no_nan, negative, reciprocal, square,
)


def _special(fn, x):
    """A SciPy special function of `x` in x's dtype (half types computed in float32)."""
    dtype = x.dtype
    if dtype.itemsize == 2:
        return np.asarray(fn(x.astype(np.float32))).astype(dtype)
    out = fn(x)
    return out if out.dtype == dtype else out.astype(dtype)


_c = _conj_if_complex


# -- signs and powers ----------------------------------------------------------------


@unary_op("Abs", dtypes=FLOATING_TYPES + _SIGNED_INTS)
def _abs(x):
    return np.abs(x)


@_abs.def_grad(reads_inputs=(0,))
def _abs_grad(op, dy):
    return dy * _sign(op.inputs[0])                     # d|x| = sign(x) dx


@unary_op("ComplexAbs", dtypes=dtypes.COMPLEX_TYPES, shape=shape_rules.unary_real_shape)
def _complex_abs(x):
    return np.abs(x)


@_complex_abs.def_grad(reads_inputs=(0,), reads_outputs=True)
def _complex_abs_grad(op, dy):
    x, y = op.inputs[0], op.outputs[0]                 # d|z| = Re(conj(z)/|z| dz)
    return div_no_nan(complex(dy, zeros_like(dy)) * x, complex(y, zeros_like(y)))


@tf_export("math.abs", "abs")
def abs(x, name=None):  # noqa: A001 - TensorFlow's public name
    """|x| elementwise; for complex `x` the real magnitudes (float32 or float64).

    >>> import tapeflow as tf
    >>> tf.abs(tf.constant([-1.5, 2.0])).numpy()
    array([1.5, 2. ], dtype=float32)
    """
    x = x if type(x) is Tensor else convert_to_tensor(x)
    return _complex_abs(x) if x._value.dtype.kind == "c" else _abs(x)


@unary_op("Sign", dtypes=FLOATING_TYPES + _SIGNED_INTS)
def _sign(x):
    return np.sign(x)


@_sign.def_grad(reads_inputs=False)
def _sign_grad(op, dy):
    return zeros_like(dy)                               # piecewise constant


@tf_export("math.sign", "sign")
def sign(x, name=None):
    """-1, 0 or 1 by the sign of `x`; for complex `x`, x / |x| (0 at 0), differentiable like TensorFlow's."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    if x._value.dtype.kind == "c":
        return div_no_nan(x, cast(_complex_abs(x), x.dtype))
    return _sign(x)


@tf_export("math.sqrt", "sqrt")
@unary_op("Sqrt", dtypes=INEXACT_TYPES, into=np.sqrt)
def sqrt(x):
    return np.sqrt(x)


# Note [zero upstream gradient]: TensorFlow's SqrtGrad, RsqrtGrad and ReciprocalGrad kernels
# give 0 where dy is 0, even where the derivative is infinite (sqrt at 0) or NaN, so that
# `tf.where(x > 0, tf.sqrt(x), 0.)` has gradient 0 at x = 0; multiply_no_nan does that.

@sqrt.def_grad(reads_inputs=False, reads_outputs=True)
def _sqrt_grad(op, dy):
    return _mul_no_nan(0.5 / _c(op.outputs[0]), dy)     # d sqrt x = dx / (2 sqrt x); Note [zero upstream gradient]


@tf_export("math.rsqrt")
@unary_op("Rsqrt", dtypes=INEXACT_TYPES)
def rsqrt(x):
    return np.reciprocal(np.sqrt(x))


@rsqrt.def_grad(reads_inputs=False, reads_outputs=True)
def _rsqrt_grad(op, dy):
    y = _c(op.outputs[0])
    return _mul_no_nan(-0.5 * y * y * y, dy)            # d x^(-1/2) = -x^(-3/2)/2 dx; Note [zero upstream gradient]


@tf_export("math.reciprocal_no_nan")
def reciprocal_no_nan(x, name=None):
    """1 / x elementwise, 0 where x == 0."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    return _div_no_nan(Tensor(np.ones((), x._value.dtype)), x)


# -- exponentials and logarithms -------------------------------------------------------

@tf_export("math.exp", "exp")
@unary_op("Exp", dtypes=INEXACT_TYPES, into=np.exp)
def exp(x):
    return np.exp(x)


@exp.def_grad(reads_inputs=False, reads_outputs=True)
def _exp_grad(op, dy):
    return dy * _c(op.outputs[0])                       # d e^x = e^x dx


@tf_export("math.expm1")
@unary_op("Expm1", dtypes=INEXACT_TYPES)
def expm1(x):
    return np.expm1(x)


@expm1.def_grad(reads_inputs=(0,))
def _expm1_grad(op, dy):
    return dy * exp(_c(op.inputs[0]))                   # d (e^x - 1) = e^x dx


@tf_export("math.log1p")
@unary_op("Log1p", dtypes=INEXACT_TYPES)
def log1p(x):
    return np.log1p(x)


@log1p.def_grad(reads_inputs=(0,))
def _log1p_grad(op, dy):
    return dy * reciprocal(1 + _c(op.inputs[0]))        # d log(1+x) = dx / (1+x)


# -- trigonometric and hyperbolic ------------------------------------------------------

@tf_export("math.sin", "sin")
@unary_op("Sin", dtypes=INEXACT_TYPES, into=np.sin)
def sin(x):
    return np.sin(x)


@sin.def_grad(reads_inputs=(0,))
def _sin_grad(op, dy):
    return dy * cos(_c(op.inputs[0]))                   # d sin x = cos x dx


@tf_export("math.cos", "cos")
@unary_op("Cos", dtypes=INEXACT_TYPES, into=np.cos)
def cos(x):
    return np.cos(x)


@cos.def_grad(reads_inputs=(0,))
def _cos_grad(op, dy):
    return -dy * sin(_c(op.inputs[0]))                  # d cos x = -sin x dx


@tf_export("math.tan", "tan")
@unary_op("Tan", dtypes=INEXACT_TYPES, into=np.tan)
def tan(x):
    return np.tan(x)


@tan.def_grad(reads_inputs=(0,))
def _tan_grad(op, dy):
    return dy * square(reciprocal(cos(_c(op.inputs[0]))))   # d tan x = sec^2 x dx


@tf_export("math.asin", "asin")
@unary_op("Asin", dtypes=INEXACT_TYPES, into=np.arcsin)
def asin(x):
    return np.arcsin(x)


@asin.def_grad(reads_inputs=(0,))
def _asin_grad(op, dy):
    x = _c(op.inputs[0])
    return dy * reciprocal(sqrt(1 - square(x)))         # d asin x = dx / sqrt(1 - x^2)


@tf_export("math.acos", "acos")
@unary_op("Acos", dtypes=INEXACT_TYPES, into=np.arccos)
def acos(x):
    return np.arccos(x)


@acos.def_grad(reads_inputs=(0,))
def _acos_grad(op, dy):
    x = _c(op.inputs[0])
    return -dy * reciprocal(sqrt(1 - square(x)))        # d acos x = -dx / sqrt(1 - x^2)


@tf_export("math.atan", "atan")
@unary_op("Atan", dtypes=INEXACT_TYPES, into=np.arctan)
def atan(x):
    return np.arctan(x)


@atan.def_grad(reads_inputs=(0,))
def _atan_grad(op, dy):
    return dy * reciprocal(1 + square(_c(op.inputs[0])))   # d atan x = dx / (1 + x^2)


@tf_export("math.sinh", "sinh")
@unary_op("Sinh", dtypes=INEXACT_TYPES, into=np.sinh)
def sinh(x):
    return np.sinh(x)


@sinh.def_grad(reads_inputs=(0,))
def _sinh_grad(op, dy):
    return dy * cosh(_c(op.inputs[0]))                  # d sinh x = cosh x dx


@tf_export("math.cosh", "cosh")
@unary_op("Cosh", dtypes=INEXACT_TYPES, into=np.cosh)
def cosh(x):
    return np.cosh(x)


@cosh.def_grad(reads_inputs=(0,))
def _cosh_grad(op, dy):
    return dy * sinh(_c(op.inputs[0]))                  # d cosh x = sinh x dx


@tf_export("math.tanh", "nn.tanh", "tanh")
@unary_op("Tanh", dtypes=INEXACT_TYPES, into=np.tanh)
def tanh(x):
    return np.tanh(x)


@tanh.def_grad(reads_inputs=False, reads_outputs=True)
def _tanh_grad(op, dy):
    return _tanh_grad_op(_c(op.outputs[0]), dy)         # d tanh x = (1 - tanh^2 x) dx


@op("TanhGrad", dtypes=INEXACT_TYPES, shape=shape_rules.merge_both_shape, unknown_rank=True, batch=SAME_SHAPE)
def _tanh_grad_op(y, dy):
    return dy * (_one(y.dtype) - y * y)


@_tanh_grad_op.def_grad(reads_inputs=ALL)
def _tanh_grad_grad(op, g):
    y, dy = (_c(t) for t in op.inputs)   # d[dy (1 - y^2)] = -2 y dy d(y) + (1 - y^2) d(dy)
    return g * -2.0 * dy * y, _tanh_grad_op(y, g)


@tf_export("math.asinh", "asinh")
@unary_op("Asinh", dtypes=INEXACT_TYPES, into=np.arcsinh)
def asinh(x):
    return np.arcsinh(x)


@asinh.def_grad(reads_inputs=False, reads_outputs=True)
def _asinh_grad(op, dy):
    return dy / cosh(_c(op.outputs[0]))                 # d asinh x = dx / cosh(asinh x)


@tf_export("math.acosh", "acosh")
@unary_op("Acosh", dtypes=INEXACT_TYPES, into=np.arccosh)
def acosh(x):
    return np.arccosh(x)


@acosh.def_grad(reads_inputs=False, reads_outputs=True)
def _acosh_grad(op, dy):
    return dy / sinh(_c(op.outputs[0]))                 # d acosh x = dx / sinh(acosh x)


@tf_export("math.atanh", "atanh")
@unary_op("Atanh", dtypes=INEXACT_TYPES, into=np.arctanh)
def atanh(x):
    return np.arctanh(x)


@atanh.def_grad(reads_inputs=(0,))
def _atanh_grad(op, dy):
    return dy * reciprocal(1 - square(_c(op.inputs[0])))   # d atanh x = dx / (1 - x^2)


# -- sigmoid family --------------------------------------------------------------------

@tf_export("math.sigmoid", "nn.sigmoid", "sigmoid")
@unary_op("Sigmoid", dtypes=INEXACT_TYPES)
def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise, computed without overflow.

    >>> import tapeflow as tf
    >>> tf.sigmoid(tf.constant([0.0, 100.0])).numpy()
    array([0.5, 1. ], dtype=float32)
    """
    if x.dtype.kind == "c":
        return np.reciprocal(1 + np.exp(-x))
    return _special(scipy.special.expit, x)


@sigmoid.def_grad(reads_inputs=False, reads_outputs=True)
def _sigmoid_grad(op, dy):
    return _sigmoid_grad_op(_c(op.outputs[0]), dy)      # d s(x) = s(x) (1 - s(x)) dx


@op("SigmoidGrad", dtypes=INEXACT_TYPES, shape=shape_rules.merge_both_shape, unknown_rank=True, batch=SAME_SHAPE)
def _sigmoid_grad_op(y, dy):
    return dy * (y * (_one(y.dtype) - y))


@_sigmoid_grad_op.def_grad(reads_inputs=ALL)
def _sigmoid_grad_grad(op, g):
    y, dy = (_c(t) for t in op.inputs)   # d[dy y (1 - y)] = dy (1 - 2y) d(y) + y (1 - y) d(dy)
    gdy = g * dy
    return gdy - 2.0 * gdy * y, _sigmoid_grad_op(y, g)


@tf_export("math.softplus", "nn.softplus")
@unary_op("Softplus", dtypes=FLOATING_TYPES)
def softplus(features):
    """log(1 + exp(x)) elementwise, computed without overflow."""
    return np.logaddexp(np.zeros((), features.dtype), features)


@softplus.def_grad(reads_inputs=(0,))
def _softplus_grad(op, dy):
    return dy * sigmoid(op.inputs[0])                   # d log(1 + e^x) = sigmoid(x) dx


@tf_export("math.softsign", "nn.softsign")
@unary_op("Softsign", dtypes=FLOATING_TYPES)
def softsign(features):
    """x / (1 + |x|) elementwise."""
    return features / (1 + np.abs(features))


@softsign.def_grad(reads_inputs=(0,))
def _softsign_grad(op, dy):
    return dy / square(1 + _abs(op.inputs[0]))          # d x/(1+|x|) = dx / (1+|x|)^2


@tf_export("math.log_sigmoid")
def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return negative(softplus(negative(x)))


# -- rounding (piecewise constant: TensorFlow's gradients are None) ---------------------

@tf_export("math.floor", "floor")
@unary_op("Floor", dtypes=FLOATING_TYPES, into=np.floor)
def floor(x):
    return np.floor(x)


@tf_export("math.ceil")
@unary_op("Ceil", dtypes=FLOATING_TYPES, into=np.ceil)
def ceil(x):
    return np.ceil(x)


@tf_export("math.rint")
@unary_op("Rint", dtypes=FLOATING_TYPES, into=np.rint)
def rint(x):
    return np.rint(x)


@unary_op("Round", dtypes=FLOATING_TYPES + _SIGNED_INTS)
def _round(x):
    return np.rint(x)


@tf_export("math.round", "round")
def round(x, name=None):  # noqa: A001 - TensorFlow's public name
    """Rounds half to even ("banker's rounding"); integer tensors are returned unchanged.

    >>> import tapeflow as tf
    >>> tf.round(tf.constant([0.5, 1.5, 2.5, -0.5])).numpy()
    array([ 0.,  2.,  2., -0.], dtype=float32)
    """
    x = x if type(x) is Tensor else convert_to_tensor(x)
    if x._value.dtype.kind in "iu":
        return x
    return _round(x)


def _rounding_grad(op, dy):
    return None                                         # piecewise constant: TensorFlow gives None


for _rounding in (floor, ceil, rint, _round):
    _rounding.def_grad(_rounding_grad, reads_inputs=False)


# -- float predicates (bool outputs, not differentiable) --------------------------------

@tf_export("math.is_finite")
@unary_op("IsFinite", dtypes=FLOATING_TYPES, shape=shape_rules.unary_bool_shape, differentiable=False)
def is_finite(x):
    return np.isfinite(x)


@tf_export("math.is_nan")
@unary_op("IsNan", dtypes=FLOATING_TYPES, shape=shape_rules.unary_bool_shape, differentiable=False)
def is_nan(x):
    return np.isnan(x)


@tf_export("math.is_inf")
@unary_op("IsInf", dtypes=FLOATING_TYPES, shape=shape_rules.unary_bool_shape, differentiable=False)
def is_inf(x):
    return np.isinf(x)


_ONES = {}


def _one(dtype):
    """A 0-d one of `dtype`: NumPy's array-scalar path is ~25% faster on small arrays
    than its Python-int one (the chain benchmark's TanhGrad)."""
    one = _ONES.get(dtype)
    if one is None:
        one = _ONES[dtype] = np.ones((), dtype)
    return one
