"""Special functions (`tf.math`): error functions and their inverses, the gamma
family (lgamma, digamma, polygamma, zeta, lbeta), modified Bessel functions and
polynomial evaluation.

Kernels call SciPy; half-precision inputs are computed in float32 and cast
back, so every op returns its input's dtype.  TensorFlow's conventions at the
poles (NaN for digamma/polygamma at 0, -1, ...) are kept.  See Note [module
split] in math_ops.py for the imports from math_ops.
"""

import numpy as np
import scipy.special

from tapeflow.framework import dtypes
from tapeflow.framework.dtypes import FLOATING_TYPES
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import ALL, execute
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core.presets import binary_op, unary_op
from tapeflow.ops.core.primitives import reduce_sum, unbroadcast
from tapeflow.ops.core.basic_ops import zeros_like
from tapeflow.ops.math_ops import _binary_inputs, equal, ones_like, reciprocal, square, where
from tapeflow.ops.unary_ops import _special, exp, sign

# -- error function and normal quantiles ------------------------------------------------

@tf_export("math.erf")
@unary_op("Erf", dtypes=FLOATING_TYPES)
def erf(x):
    return _special(scipy.special.erf, x)


@erf.def_grad(reads_inputs=(0,))
def _erf_grad(op, dy):
    x = op.inputs[0]
    return dy * (2 / np.sqrt(np.pi)) * exp(-square(x))  # d erf x = 2/sqrt(pi) e^(-x^2) dx


@tf_export("math.erfc")
@unary_op("Erfc", dtypes=FLOATING_TYPES)
def erfc(x):
    return _special(scipy.special.erfc, x)


@erfc.def_grad(reads_inputs=(0,))
def _erfc_grad(op, dy):
    x = op.inputs[0]
    return dy * (-2 / np.sqrt(np.pi)) * exp(-square(x))  # d erfc x = -2/sqrt(pi) e^(-x^2) dx


@tf_export("math.erfinv")
@unary_op("Erfinv", dtypes=FLOATING_TYPES)
def erfinv(x):
    return _special(scipy.special.erfinv, x)


@erfinv.def_grad(reads_inputs=False, reads_outputs=True)
def _erfinv_grad(op, dy):
    y = op.outputs[0]                                   # d erfinv x = sqrt(pi)/2 e^(erfinv(x)^2) dx
    return dy * (np.sqrt(np.pi) / 2) * exp(square(y))


@tf_export("math.ndtri")
@unary_op("Ndtri", dtypes=FLOATING_TYPES)
def ndtri(x):
    return _special(scipy.special.ndtri, x)


@ndtri.def_grad(reads_inputs=False, reads_outputs=True)
def _ndtri_grad(op, dy):
    y = op.outputs[0]                                   # d ndtri x = sqrt(2 pi) e^(ndtri(x)^2 / 2) dx
    return dy * np.sqrt(2 * np.pi) * exp(square(y) / 2)


@tf_export("math.erfcinv")
def erfcinv(x, name=None):
    """The inverse of erfc: -ndtri(x / 2) / sqrt(2)."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    return ndtri(x * 0.5) * (-1 / np.sqrt(2.0))


# -- gamma family ----------------------------------------------------------------------

@tf_export("math.lgamma")
@unary_op("Lgamma", dtypes=FLOATING_TYPES)
def lgamma(x):
    return _special(scipy.special.gammaln, x)


@lgamma.def_grad(reads_inputs=(0,))
def _lgamma_grad(op, dy):
    return dy * digamma(op.inputs[0])                   # d log|Gamma(x)| = psi(x) dx


def _poles_to_nan(x, out):
    """TensorFlow's digamma/polygamma are NaN at the poles 0, -1, -2, ..."""
    pole = (x <= 0) & (x == np.floor(x))
    return np.where(pole, np.nan, out).astype(out.dtype, copy=False) if np.any(pole) else out


@tf_export("math.digamma")
@unary_op("Digamma", dtypes=FLOATING_TYPES)
def digamma(x):
    return _poles_to_nan(x, _special(scipy.special.digamma, x))


@digamma.def_grad(reads_inputs=(0,))
def _digamma_grad(op, dy):
    x = op.inputs[0]
    return dy * polygamma(ones_like(x), x)              # d psi(x) = psi'(x) dx


@binary_op("Polygamma", dtypes=(dtypes.float32, dtypes.float64))
def _polygamma(a, x):
    with np.errstate(invalid="ignore"):
        out = np.asarray(scipy.special.polygamma(a, x))
    # Orders that are not non-negative integers are undefined (NaN), like TensorFlow.
    out = np.where((a < 0) | (a != np.floor(a)), np.nan, out)
    return _poles_to_nan(np.broadcast_to(x, out.shape), out).astype(x.dtype, copy=False)


@_polygamma.def_grad(reads_inputs=ALL)
def _polygamma_grad(op, dy):
    a, x = op.inputs                                    # d psi^(a)(x) = psi^(a+1)(x) dx
    return None, unbroadcast(dy * polygamma(a + 1, x), x._value.shape, x)


@tf_export("math.polygamma")
def polygamma(a, x, name=None):
    """The polygamma function psi^(a)(x); `a` must hold non-negative integers (else NaN)."""
    return execute(_polygamma, _binary_inputs(a, x), {})


@binary_op("Zeta", dtypes=(dtypes.float32, dtypes.float64))
def _zeta(x, q):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(scipy.special.zeta(x, q)).astype(x.dtype, copy=False)


@_zeta.def_grad(reads_inputs=ALL)
def _zeta_grad(op, dy):
    x, q = op.inputs                                    # d zeta(x, q) / dq = -x zeta(x+1, q)
    return None, unbroadcast(dy * (-x * zeta(x + 1, q)), q._value.shape, q)


@tf_export("math.zeta")
def zeta(x, q, name=None):
    """The Hurwitz zeta function sum_n (n + q)^(-x)."""
    return execute(_zeta, _binary_inputs(x, q), {})


@tf_export("math.lbeta")
def lbeta(x, name=None):
    """log|B(x)| of the last axis: sum(lgamma(x)) - lgamma(sum(x)); -inf for an empty last axis."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    if x._value.ndim and x._value.shape[-1] == 0 and None not in x._value.shape:
        return Tensor(np.full(x._value.shape[:-1], -np.inf, x._value.dtype))
    return reduce_sum(lgamma(x), -1) - lgamma(reduce_sum(x, -1))


# -- modified Bessel functions of the first kind ------------------------------------------

@tf_export("math.bessel_i0")
@unary_op("BesselI0", dtypes=FLOATING_TYPES)
def bessel_i0(x):
    return _special(scipy.special.i0, x)


@bessel_i0.def_grad(reads_inputs=(0,))
def _bessel_i0_grad(op, dy):
    return dy * bessel_i1(op.inputs[0])                 # d I0(x) = I1(x) dx


@tf_export("math.bessel_i0e")
@unary_op("BesselI0e", dtypes=FLOATING_TYPES)
def bessel_i0e(x):
    return _special(scipy.special.i0e, x)


@bessel_i0e.def_grad(reads_inputs=(0,), reads_outputs=True)
def _bessel_i0e_grad(op, dy):
    x, y = op.inputs[0], op.outputs[0]                 # d e^-|x| I0(x) = (I1e(x) - sign(x) I0e(x)) dx
    return dy * (bessel_i1e(x) - sign(x) * y)


@tf_export("math.bessel_i1")
@unary_op("BesselI1", dtypes=FLOATING_TYPES)
def bessel_i1(x):
    return _special(scipy.special.i1, x)


@bessel_i1.def_grad(reads_inputs=(0,), reads_outputs=True)
def _bessel_i1_grad(op, dy):
    x, y = op.inputs[0], op.outputs[0]                 # d I1(x) = (I0(x) - I1(x)/x) dx
    at_zero = equal(x, zeros_like(x))                   # (TensorFlow imputes 1 at x = 0; the limit is 1/2)
    safe = where(at_zero, ones_like(x), x)
    return dy * where(at_zero, ones_like(x), bessel_i0(x) - y / safe)


@tf_export("math.bessel_i1e")
@unary_op("BesselI1e", dtypes=FLOATING_TYPES)
def bessel_i1e(x):
    return _special(scipy.special.i1e, x)


@bessel_i1e.def_grad(reads_inputs=(0,), reads_outputs=True)
def _bessel_i1e_grad(op, dy):
    x, y = op.inputs[0], op.outputs[0]                 # d I1e(x) = (I0e(x) - I1e(x) (sign x + 1/x)) dx
    at_zero = equal(x, zeros_like(x))
    safe = where(at_zero, ones_like(x), x)
    return dy * where(at_zero, ones_like(x) * 0.5, bessel_i0e(x) - y * (sign(x) + reciprocal(safe)))


# -- polynomials -------------------------------------------------------------------------

@tf_export("math.polyval")
def polyval(coeffs, x, name=None):
    """coeffs[0] x^(n-1) + ... + coeffs[n-1] by Horner's rule; zeros for no coefficients.

    Raises:
      ValueError: `coeffs` is not a list.
    """
    if not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")
    x = x if type(x) is Tensor else convert_to_tensor(x)
    if not coeffs:
        return zeros_like(x)
    p = convert_to_tensor(coeffs[0])
    for c in coeffs[1:]:
        p = convert_to_tensor(c) + p * x
    return p


# -- floating-point steps ------------------------------------------------------------------

@binary_op("NextAfter", dtypes=(dtypes.float32, dtypes.float64))
def _nextafter(x1, x2):
    return np.nextafter(x1, x2)


@_nextafter.def_grad(reads_inputs=False)
def _nextafter_grad(op, dy):
    x1, x2 = op.inputs                                  # a step of one ulp: d x1 = dy, d x2 = 0
    return unbroadcast(dy, x1._value.shape, x1), unbroadcast(dy * zeros_like(dy), x2._value.shape, x2)


@tf_export("math.nextafter")
def nextafter(x1, x2, name=None):
    """The next representable value after `x1` in the direction of `x2`."""
    return execute(_nextafter, _binary_inputs(x1, x2), {})


# -- the normal distribution's log CDF -------------------------------------------------------

@tf_export("math.log_ndtr")
@unary_op("LogNdtr", dtypes=FLOATING_TYPES)
def log_ndtr(x):
    return _special(scipy.special.log_ndtr, x)


@log_ndtr.def_grad(reads_inputs=(0,), reads_outputs=True)
def _log_ndtr_grad(op, dy):
    x, y = op.inputs[0], op.outputs[0]                 # d log Phi(x) = e^(-x^2/2 - log Phi(x)) / sqrt(2 pi) dx
    return dy * exp(-0.5 * square(x) - y) * (1 / np.sqrt(2 * np.pi))
