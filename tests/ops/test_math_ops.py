"""Spec rows for elementwise tf.math ops; the harness runs forward, gradient, second order and TF checks.

Differential tests at the bottom compare dtype rules, integer/half/complex
results and error classes with TensorFlow.
"""

import numpy as np
import pytest
import scipy.special as sp

from differential import Raised, compare, run_both, same
from op_harness import (
    FLOAT16_ONLY, NO_HALF, OpSpec, above_one, any_real, away_from_zero, complex_of, define_graph_tests, define_tests,
    define_unknown_dims_tests, positive, unit,
)

BROADCAST = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,)), ((0, 3), (3,)), ((1,), ())]
PAIRS = [((2, 3), (3,)), ((), (2,)), ((0,), (0,))]
UNARY = [((2, 3),), ((),), ((0,),), ((1,),)]
SMALL = [((2, 3),), ((),)]


def with_zeros(rng, shape, dtype):
    """Values away from zero with about a third of the entries exactly zero."""
    x = away_from_zero(rng, shape, dtype)
    return np.where(rng.uniform(size=shape) < 0.35, 0, x).astype(dtype)


def with_specials(*specials):
    """A sampler of finite values mixed with the given special values (NaN, infinities)."""
    def sample(rng, shape, dtype):
        x = any_real(rng, shape, dtype)
        pick = rng.integers(0, len(specials) + 2, shape)
        return np.select([pick == i for i in range(len(specials))], list(specials), x).astype(dtype)
    return sample


def probability(rng, shape, dtype):
    return rng.uniform(0.1, 0.9, shape).astype(dtype)


def not_half_integers(rng, shape, dtype):
    """Values whose rounding is unambiguous (fractional part away from .5) and away from integers."""
    base = rng.integers(-3, 3, shape)
    return (base + rng.choice([0.2, 0.35, 0.65, 0.8], shape)).astype(dtype)


def _xlogy(x, y):
    return np.where(x == 0, 0.0, x * np.log(y))


def _angle_real(x):
    return np.where(x < 0, np.pi, 0.0)


SPECS = [
    # -- binary arithmetic
    OpSpec("add", lambda tf, x, y: tf.add(x, y), np.add, BROADCAST),
    OpSpec("subtract", lambda tf, x, y: tf.subtract(x, y), np.subtract, BROADCAST),
    OpSpec("multiply", lambda tf, x, y: tf.multiply(x, y), np.multiply, BROADCAST),
    OpSpec("divide", lambda tf, x, y: tf.divide(x, y), np.divide, BROADCAST, sampler=(any_real, away_from_zero)),
    OpSpec("truediv_operator", lambda tf, x, y: x / y, np.divide, PAIRS, sampler=(any_real, away_from_zero)),
    OpSpec("floordiv", lambda tf, x, y: tf.math.floordiv(x, y) * x, lambda x, y: np.floor(x / y) * x, PAIRS,
           sampler=(any_real, away_from_zero)),
    OpSpec("floormod", lambda tf, x, y: tf.math.floormod(x, y), np.mod, BROADCAST, sampler=(any_real, away_from_zero)),
    OpSpec("mod_operator", lambda tf, x, y: x % y, np.mod, PAIRS, sampler=(any_real, away_from_zero)),
    OpSpec("pow", lambda tf, x, y: tf.pow(x, y), np.power, BROADCAST, sampler=positive),
    OpSpec("pow_negative_base", lambda tf, x: tf.pow(x, 3.0), lambda x: x ** 3, SMALL),
    OpSpec("maximum", lambda tf, x, y: tf.maximum(x, y), np.maximum, BROADCAST),
    OpSpec("minimum", lambda tf, x, y: tf.minimum(x, y), np.minimum, BROADCAST),
    OpSpec("squared_difference", lambda tf, x, y: tf.math.squared_difference(x, y), lambda x, y: (x - y) ** 2,
           BROADCAST),
    OpSpec("atan2", lambda tf, y, x: tf.math.atan2(y, x), np.arctan2, BROADCAST, sampler=(any_real, away_from_zero)),
    OpSpec("xlogy", lambda tf, x, y: tf.math.xlogy(x, y), _xlogy, BROADCAST, sampler=(any_real, positive)),
    # At x == 0 TensorFlow's gradient with respect to x is 0 (not log y): compared with TF only.
    OpSpec("xlogy_zeros", lambda tf, x, y: tf.math.xlogy(x, y), _xlogy, PAIRS, sampler=(with_zeros, positive),
           numeric_wrt=(1,)),
    OpSpec("xlog1py", lambda tf, x, y: tf.math.xlog1py(x, y), lambda x, y: np.where(x == 0, 0.0, x * np.log1p(y)),
           PAIRS, sampler=(any_real, positive)),
    OpSpec("xlog1py_zeros", lambda tf, x, y: tf.math.xlog1py(x, y), lambda x, y: np.where(x == 0, 0.0, x * np.log1p(y)),
           PAIRS, sampler=(with_zeros, positive), numeric_wrt=(1,)),   # as xlogy_zeros
    OpSpec("xdivy", lambda tf, x, y: tf.math.xdivy(x, y), lambda x, y: np.where(x == 0, 0.0, x / y), PAIRS,
           sampler=(any_real, away_from_zero)),
    OpSpec("xdivy_zeros", lambda tf, x, y: tf.math.xdivy(x, y), lambda x, y: np.where(x == 0, 0.0, x / y), PAIRS,
           sampler=(with_zeros, away_from_zero), numeric_wrt=(1,)),    # as xlogy_zeros
    OpSpec("divide_no_nan", lambda tf, x, y: tf.math.divide_no_nan(x, y), np.divide, BROADCAST,
           sampler=(any_real, away_from_zero)),
    OpSpec("divide_no_nan_zeros", lambda tf, x, y: tf.math.divide_no_nan(x, y),
           lambda x, y: np.where(y == 0, 0.0, x / np.where(y == 0, 1, y)), PAIRS, sampler=(any_real, with_zeros),
           numeric_wrt=(0,)),       # a jump at y == 0, where TensorFlow's gradient with respect to y is 0
    OpSpec("multiply_no_nan", lambda tf, x, y: tf.math.multiply_no_nan(x, y), np.multiply, BROADCAST,
           sampler=(any_real, with_zeros)),
    OpSpec("scalar_mul", lambda tf, x: tf.math.scalar_mul(2.5, x), lambda x: 2.5 * x, UNARY),
    OpSpec("add_n", lambda tf, x, y, z: tf.add_n([x, y, z]), lambda x, y, z: x + y + z,
           [((2, 3), (2, 3), (2, 3)), ((), (), ())]),
    # -- signs, powers, exponentials
    OpSpec("negative", lambda tf, x: tf.negative(x), np.negative, UNARY),
    OpSpec("abs", lambda tf, x: tf.abs(x), np.abs, UNARY, sampler=away_from_zero),
    OpSpec("sign", lambda tf, x: tf.sign(x) * x, lambda x: np.sign(x) * x, UNARY, sampler=away_from_zero),
    OpSpec("square", lambda tf, x: tf.square(x), np.square, UNARY),
    OpSpec("sqrt", lambda tf, x: tf.sqrt(x), np.sqrt, UNARY, sampler=positive),
    OpSpec("rsqrt", lambda tf, x: tf.math.rsqrt(x), lambda x: 1 / np.sqrt(x), UNARY, sampler=positive),
    OpSpec("reciprocal", lambda tf, x: tf.math.reciprocal(x), np.reciprocal, UNARY, sampler=away_from_zero),
    OpSpec("exp", lambda tf, x: tf.exp(x), np.exp, UNARY),
    OpSpec("expm1", lambda tf, x: tf.math.expm1(x), np.expm1, UNARY),
    OpSpec("log", lambda tf, x: tf.math.log(x), np.log, UNARY, sampler=positive),
    OpSpec("log1p", lambda tf, x: tf.math.log1p(x), np.log1p, UNARY, sampler=unit),
    # -- trigonometric and hyperbolic
    OpSpec("sin", lambda tf, x: tf.sin(x), np.sin, UNARY),
    OpSpec("cos", lambda tf, x: tf.cos(x), np.cos, UNARY),
    OpSpec("tan", lambda tf, x: tf.tan(x), np.tan, UNARY, sampler=unit),
    OpSpec("asin", lambda tf, x: tf.asin(x), np.arcsin, UNARY, sampler=unit, grad_tol=1e-4),
    OpSpec("acos", lambda tf, x: tf.acos(x), np.arccos, UNARY, sampler=unit, grad_tol=1e-4),
    OpSpec("atan", lambda tf, x: tf.atan(x), np.arctan, UNARY),
    OpSpec("sinh", lambda tf, x: tf.sinh(x), np.sinh, UNARY),
    OpSpec("cosh", lambda tf, x: tf.cosh(x), np.cosh, UNARY),
    OpSpec("tanh", lambda tf, x: tf.tanh(x), np.tanh, UNARY),
    OpSpec("asinh", lambda tf, x: tf.asinh(x), np.arcsinh, UNARY),
    OpSpec("acosh", lambda tf, x: tf.acosh(x), np.arccosh, UNARY, sampler=above_one),
    OpSpec("atanh", lambda tf, x: tf.atanh(x), np.arctanh, UNARY, sampler=unit, grad_tol=1e-4),
    # -- sigmoid family and special functions
    OpSpec("sigmoid", lambda tf, x: tf.sigmoid(x), sp.expit, UNARY),
    OpSpec("sigmoid_saturated", lambda tf, x: tf.math.sigmoid(x * 40.0), lambda x: sp.expit(40 * x), SMALL),
    OpSpec("log_sigmoid", lambda tf, x: tf.math.log_sigmoid(x), lambda x: -np.logaddexp(0, -x), UNARY),
    OpSpec("softplus", lambda tf, x: tf.math.softplus(x), lambda x: np.logaddexp(0, x), UNARY),
    OpSpec("softplus_large", lambda tf, x: tf.math.softplus(x * 50.0), lambda x: np.logaddexp(0, 50 * x), SMALL),
    OpSpec("softsign", lambda tf, x: tf.math.softsign(x), lambda x: x / (1 + np.abs(x)), UNARY, sampler=away_from_zero),
    OpSpec("erf", lambda tf, x: tf.math.erf(x), sp.erf, UNARY),
    OpSpec("erfc", lambda tf, x: tf.math.erfc(x), sp.erfc, UNARY),
    OpSpec("lgamma", lambda tf, x: tf.math.lgamma(x), sp.gammaln, UNARY, sampler=positive, grad_tol=1e-4,
           half_dtypes=FLOAT16_ONLY),
    OpSpec("digamma", lambda tf, x: tf.math.digamma(x), sp.digamma, UNARY, sampler=positive, grad_tol=1e-4,
           half_dtypes=NO_HALF),
    OpSpec("polygamma", lambda tf, x, a: tf.math.polygamma(tf.cast(a, x.dtype), x), lambda x, a: sp.polygamma(a, x),
           [((3,),), ((2, 3),)], sampler=above_one, extra=lambda rng, shapes: [rng.integers(0, 3, shapes[0])],
           grad_tol=1e-4, half_dtypes=NO_HALF),
    OpSpec("zeta", lambda tf, q, x: tf.math.zeta(tf.cast(x, q.dtype), q), lambda q, x: sp.zeta(x, q),
           [((3,),), ((2, 3),)], sampler=above_one, extra=lambda rng, shapes: [rng.uniform(2.0, 4.0, shapes[0])],
           half_dtypes=NO_HALF),
    OpSpec("erfinv", lambda tf, x: tf.math.erfinv(x), sp.erfinv, UNARY, sampler=unit, grad_tol=1e-4,
           half_dtypes=NO_HALF),
    OpSpec("ndtri", lambda tf, p: tf.math.ndtri(p), sp.ndtri, UNARY, sampler=probability, grad_tol=1e-4,
           half_dtypes=NO_HALF),
    OpSpec("erfcinv", lambda tf, x: tf.math.erfcinv(x), sp.erfcinv, SMALL, sampler=lambda r, s, d: 2 * probability(r, s, d),
           grad_tol=1e-4, half_dtypes=NO_HALF),
    OpSpec("lbeta", lambda tf, x: tf.math.lbeta(x), lambda x: sp.gammaln(x).sum(-1) - sp.gammaln(x.sum(-1)),
           [((2, 3),), ((3,),), ((1,),)], sampler=positive, grad_tol=1e-4, half_dtypes=FLOAT16_ONLY),
    OpSpec("bessel_i0", lambda tf, x: tf.math.bessel_i0(x), sp.i0, UNARY, half_dtypes=FLOAT16_ONLY),
    OpSpec("bessel_i0e", lambda tf, x: tf.math.bessel_i0e(x), sp.i0e, UNARY, sampler=away_from_zero,
           half_dtypes=FLOAT16_ONLY),
    OpSpec("bessel_i1", lambda tf, x: tf.math.bessel_i1(x), sp.i1, UNARY, half_dtypes=FLOAT16_ONLY),
    OpSpec("bessel_i1e", lambda tf, x: tf.math.bessel_i1e(x), sp.i1e, UNARY, sampler=away_from_zero,
           half_dtypes=FLOAT16_ONLY),
    OpSpec("polyval", lambda tf, c, x: tf.math.polyval([c[0], c[1], c[2]], x),
           lambda c, x: np.polyval(c, x), [((3,), (2, 3)), ((3,), ())]),
    OpSpec("nextafter", lambda tf, x, y: tf.math.nextafter(x, y), np.nextafter, PAIRS, half_dtypes=NO_HALF),
    OpSpec("reciprocal_no_nan", lambda tf, x: tf.math.reciprocal_no_nan(x), np.reciprocal, UNARY, sampler=away_from_zero),
    OpSpec("accumulate_n", lambda tf, x, y: tf.math.accumulate_n([x, y, x]), lambda x, y: 2 * x + y,
           [((2, 3), (2, 3))]),
    # -- rounding (None gradients, like TensorFlow)
    OpSpec("round", lambda tf, x: tf.round(x) * x, lambda x: np.round(x) * x, UNARY, sampler=not_half_integers),
    OpSpec("rint", lambda tf, x: tf.math.rint(x) * x, lambda x: np.rint(x) * x, UNARY, sampler=not_half_integers,
           half_dtypes=NO_HALF),
    OpSpec("floor", lambda tf, x: tf.floor(x) * x, lambda x: np.floor(x) * x, UNARY, sampler=not_half_integers),
    OpSpec("ceil", lambda tf, x: tf.math.ceil(x) * x, lambda x: np.ceil(x) * x, UNARY, sampler=not_half_integers),
    OpSpec("round_alone", lambda tf, x: tf.round(x), np.round, SMALL, sampler=not_half_integers),
    # -- predicates, comparisons and logical ops (bool results select values)
    OpSpec("is_finite", lambda tf, x: tf.where(tf.math.is_finite(x), x, tf.zeros_like(x)),
           lambda x: np.where(np.isfinite(x), x, 0.0), UNARY, sampler=with_specials(np.nan, np.inf, -np.inf), second_order=False),
    OpSpec("is_nan", lambda tf, x: tf.where(tf.math.is_nan(x), tf.zeros_like(x), x),
           lambda x: np.where(np.isnan(x), 0.0, x), UNARY, sampler=with_specials(np.nan), second_order=False),
    OpSpec("is_inf", lambda tf, x: tf.where(tf.math.is_inf(x), tf.zeros_like(x), x),
           lambda x: np.where(np.isinf(x), 0.0, x), UNARY, sampler=with_specials(np.inf, -np.inf), second_order=False),
    OpSpec("equal", lambda tf, x, y: tf.where(tf.equal(x, y), x, y), lambda x, y: np.where(x == y, x, y), PAIRS),
    OpSpec("not_equal", lambda tf, x, y: tf.where(tf.not_equal(x, y), x, y), lambda x, y: np.where(x != y, x, y), PAIRS),
    OpSpec("less", lambda tf, x, y: tf.where(tf.less(x, y), x, y), np.minimum, BROADCAST),
    OpSpec("less_equal", lambda tf, x, y: tf.where(tf.less_equal(x, y), x, y), np.minimum, PAIRS),
    OpSpec("greater", lambda tf, x, y: tf.where(tf.greater(x, y), x, y), np.maximum, PAIRS),
    OpSpec("greater_equal", lambda tf, x, y: tf.where(tf.greater_equal(x, y), x, y), np.maximum, PAIRS),
    OpSpec("logical_and", lambda tf, x, y: tf.where(tf.logical_and(x > 0, y > 0), x, y),
           lambda x, y: np.where((x > 0) & (y > 0), x, y), PAIRS),
    OpSpec("logical_or", lambda tf, x, y: tf.where(tf.logical_or(x > 0, y > 0), x, y),
           lambda x, y: np.where((x > 0) | (y > 0), x, y), PAIRS),
    OpSpec("logical_xor", lambda tf, x, y: tf.where(tf.math.logical_xor(x > 0, y > 0), x, y),
           lambda x, y: np.where((x > 0) ^ (y > 0), x, y), PAIRS),
    OpSpec("logical_not", lambda tf, x: tf.where(tf.logical_not(x > 0), x, -x), lambda x: np.where(x > 0, -x, x), UNARY),
    # The gradient passes through the float16 rounding (a convention: the rounded value is piecewise
    # constant), so it is compared with TensorFlow only, not with central differences.
    OpSpec("cast", lambda tf, x: tf.cast(tf.cast(x, tf.float16), x.dtype) + x,
           lambda x: x.astype(np.float16).astype(x.dtype) + x, UNARY, rtol=1e-3, atol=1e-3, numeric_wrt=()),
    OpSpec("matmul", lambda tf, a, b: tf.matmul(a, b), np.matmul, [((2, 3), (3, 4)), ((2, 2, 3), (3, 1)), ((0, 3), (3, 2))]),
    # -- complex numbers
    OpSpec("complex", lambda tf, x, y: tf.complex(x, y), lambda x, y: x + 1j * y, [((3,), (3,)), ((2, 3), ())],
           half_dtypes=NO_HALF),
    OpSpec("real_imag", lambda tf, z: tf.math.real(z) * tf.math.imag(z), lambda z: z.real * z.imag, UNARY,
           sampler=complex_of(any_real)),
    OpSpec("conj", lambda tf, z: tf.math.conj(z) * z * tf.constant(1 + 2j, z.dtype) + tf.math.conj(z),
           lambda z: np.conj(z) * z * (1 + 2j) + np.conj(z), SMALL, sampler=complex_of(any_real)),
    OpSpec("angle", lambda tf, z: tf.math.angle(z), np.angle, UNARY, sampler=complex_of(away_from_zero)),
    OpSpec("angle_real", lambda tf, x: tf.math.angle(x) + x, lambda x: _angle_real(x) + x, SMALL, sampler=away_from_zero),
    OpSpec("complex_abs", lambda tf, z: tf.abs(z), np.abs, UNARY, sampler=complex_of(away_from_zero)),
    OpSpec("complex_add_sub", lambda tf, x, y: (x + y) * (x - y), lambda x, y: (x + y) * (x - y), PAIRS,
           sampler=complex_of(any_real)),
    OpSpec("complex_mul", lambda tf, x, y: x * y, np.multiply, [((3,), (3,))], sampler=complex_of(any_real)),
    OpSpec("complex_div", lambda tf, x, y: x / y, np.divide, [((3,), (3,))], sampler=complex_of(away_from_zero)),
    OpSpec("complex_pow", lambda tf, x, y: tf.pow(x, y), np.power, [((3,), (3,))], sampler=complex_of(positive),
           grad_tol=1e-4),
    OpSpec("complex_exp", lambda tf, x: tf.exp(x), np.exp, SMALL, sampler=complex_of(any_real)),
    OpSpec("complex_log", lambda tf, x: tf.math.log(x), np.log, SMALL, sampler=complex_of(positive)),
    OpSpec("complex_sin_cos", lambda tf, x: tf.sin(x) + tf.cos(x), lambda x: np.sin(x) + np.cos(x), SMALL,
           sampler=complex_of(unit)),
    OpSpec("complex_tanh", lambda tf, x: tf.tanh(x), np.tanh, SMALL, sampler=complex_of(unit)),
    OpSpec("complex_sigmoid", lambda tf, x: tf.sigmoid(x), lambda x: 1 / (1 + np.exp(-x)), SMALL,
           sampler=complex_of(unit)),
    OpSpec("complex_sqrt", lambda tf, x: tf.sqrt(x), np.sqrt, SMALL, sampler=complex_of(positive)),
    OpSpec("complex_square", lambda tf, x: tf.square(x), np.square, SMALL, sampler=complex_of(any_real)),
    OpSpec("complex_reciprocal_rsqrt", lambda tf, x: tf.math.reciprocal(x) + tf.math.rsqrt(x),
           lambda x: 1 / x + 1 / np.sqrt(x), SMALL, sampler=complex_of(positive)),
    OpSpec("complex_expm1_log1p", lambda tf, x: tf.math.expm1(x) * tf.math.log1p(x), lambda x: np.expm1(x) * np.log1p(x),
           SMALL, sampler=complex_of(unit)),
    OpSpec("complex_sign", lambda tf, x: tf.sign(x) * x, lambda x: x / np.abs(x) * x, SMALL,
           sampler=complex_of(away_from_zero), check_tf_grad=True),
    OpSpec("complex_div_no_nan", lambda tf, x, y: tf.math.divide_no_nan(x, y), np.divide, [((3,), (3,))],
           sampler=complex_of(away_from_zero)),
]

define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


# -- dtype rules, integer/half/complex forward results, errors: compared with TensorFlow ----

def _c(tf, value, dtype):
    return tf.constant(value, dtype=getattr(tf, dtype))


INT_PROGRAMS = {
    "int32_add_mul_sub": lambda tf: [tf.constant([1, -2, 3]) + 2, tf.constant([1, -2, 3]) * tf.constant([4, 5, 6]),
                                     tf.subtract(tf.constant([1, 2]), 3)],
    "int_floordiv_mod": lambda tf: [tf.constant([-7, 7, 5]) // tf.constant([2, -2, 5]),
                                    tf.math.floormod(tf.constant([-7, 7, 5]), tf.constant([2, -2, 3])),
                                    tf.math.mod(_c(tf, [-7, 7], "int64"), _c(tf, [3, 3], "int64"))],
    "int32_truediv_float64": lambda tf: tf.constant([1, 2, 3]) / tf.constant([2, 2, 2]),
    "int16_truediv_float32": lambda tf: _c(tf, [1, 2], "int16") / _c(tf, [4, 4], "int16"),
    "uint8_truediv_float32": lambda tf: tf.math.truediv(_c(tf, [1, 2], "uint8"), _c(tf, [4, 4], "uint8")),
    "int_divide_no_nan": lambda tf: tf.math.divide_no_nan(tf.constant([1, 2]), tf.constant([0, 4])),
    "int_pow": lambda tf: tf.pow(tf.constant([2, 3, -2]), tf.constant([3, 0, 3])),
    "int_unary": lambda tf: [tf.abs(tf.constant([-3, 4])), tf.sign(tf.constant([-3, 0, 4])),
                             tf.square(tf.constant([-3, 4])), tf.negative(tf.constant([1, -1])),
                             tf.round(tf.constant([1, 2]))],
    "int_max_min": lambda tf: [tf.maximum(tf.constant([1, 5]), tf.constant([3, 2])),
                               tf.minimum(_c(tf, [1, 5], "int64"), 2)],
    "int_squared_difference": lambda tf: tf.math.squared_difference(tf.constant([1, 5]), tf.constant([3, 2])),
    "int_comparisons": lambda tf: [tf.less(tf.constant([1, 5]), 3), tf.equal(tf.constant([1, 5]), tf.constant([1, 4])),
                                   tf.greater_equal(_c(tf, [1, 5], "uint8"), _c(tf, [2, 5], "uint8"))],
    "bool_logic": lambda tf: [tf.logical_and(tf.constant([True, False]), True),
                              tf.math.logical_xor(tf.constant([True, False, True]), tf.constant([True, True, False])),
                              tf.equal(tf.constant([True, False]), tf.constant([True, True])),
                              tf.logical_not(tf.constant(False))],
    "add_n_ints": lambda tf: tf.add_n([tf.constant([1, 2]), tf.constant([3, 4]), tf.constant([5, 6])]),
    "scalar_mul_int": lambda tf: tf.math.scalar_mul(3, tf.constant([1, 2])),
    "python_scalars_adopt_dtype": lambda tf: [tf.constant([1.5], tf.float64) * 2, 2 + tf.constant([1], tf.int64),
                                              tf.constant([1.0], tf.float16) * 3.0, tf.add(1, 2)],
    "real_imag_conj_of_reals": lambda tf: [tf.math.real(tf.constant([1, 2])), tf.math.imag(tf.constant([1.5])),
                                           tf.math.conj(tf.constant([3]))],
    "complex_abs_real_dtype": lambda tf: [tf.abs(tf.constant([3 + 4j], tf.complex64)), tf.math.angle(tf.constant([1j]))],
    "complex_broadcast": lambda tf: tf.complex(tf.constant([1.0, 2.0]), tf.constant(3.0)),
    "round_half_to_even": lambda tf: [tf.round(tf.constant([0.5, 1.5, 2.5, -0.5, -1.5])),
                                      tf.math.rint(tf.constant([0.5, 1.5, -2.5], tf.float64))],
    "floor_div_float": lambda tf: [tf.math.floordiv(tf.constant([1.0, -1.0]), tf.constant([0.1, 0.3])),
                                   tf.math.floormod(tf.constant([1.0, -3.0]), tf.constant([0.0, 2.0]))],
    "special_values": lambda tf: [tf.math.xlogy(tf.constant([0.0, 0.0, 1.0]), tf.constant([0.0, np.nan, 0.0])),
                                  tf.math.xdivy(tf.constant([0.0]), tf.constant([0.0])),
                                  tf.math.multiply_no_nan(tf.constant([np.inf, np.nan]), tf.constant([0.0, 0.0])),
                                  tf.math.divide_no_nan(tf.constant([np.nan, 1.0]), 0.0),
                                  tf.math.lgamma(tf.constant([-1.5, 0.0, -2.0])),
                                  tf.math.digamma(tf.constant([0.0, -1.0, -1.5])),
                                  tf.math.polygamma(tf.constant([0.0, 1.0, 1.5, -1.0]), tf.constant([2.0, 2.0, 2.0, 2.0])),
                                  tf.math.zeta(tf.constant([2.0, 0.5, 1.0]), tf.constant([1.0, 1.0, 1.0])),
                                  tf.math.softplus(tf.constant([100.0, -100.0, 0.0])),
                                  tf.math.log_sigmoid(tf.constant([-100.0, 100.0])),
                                  tf.sigmoid(tf.constant([-100.0, 100.0]))],
    "special_extras": lambda tf: [tf.math.lbeta(tf.zeros([2, 0])), tf.math.lbeta(tf.constant([[1.0, 2.0], [3.0, 4.0]])),
                                  tf.math.polyval([], tf.constant([1.0, 2.0])),
                                  tf.math.polyval([tf.constant(2.0)], tf.constant([1.0, 2.0])),
                                  tf.math.reciprocal_no_nan(tf.constant([0.0, 2.0])),
                                  tf.math.erfinv(tf.constant([0.3, 1.0, -1.0])),
                                  tf.math.erfcinv(tf.constant([0.5, 1.5])),
                                  tf.math.bessel_i1e(tf.constant([0.0, -2.0], tf.float64)),
                                  tf.math.nextafter(tf.constant([1.0]), tf.constant([2.0]))],
    "predicates": lambda tf: [tf.math.is_finite(tf.constant([1.0, np.inf, np.nan])),
                              tf.math.is_nan(tf.constant([1.0, np.inf, np.nan])),
                              tf.math.is_inf(tf.constant([1.0, -np.inf, np.nan], tf.float16))],
}

UNARY_FLOAT_OPS = ["abs", "negative", "sign", "square", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "log1p",
                   "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "atanh", "sigmoid",
                   "log_sigmoid", "softplus", "softsign", "erf", "erfc", "lgamma", "digamma", "round", "floor",
                   "ceil", "rint"]

ERROR_PROGRAMS = {
    "mixed_dtypes": lambda tf: tf.add(tf.constant([1]), tf.constant([1.0])),
    "truediv_mixed": lambda tf: tf.math.truediv(tf.constant([1.0]), tf.constant([1.0], tf.float64)),
    "int_division_by_zero": lambda tf: tf.math.floordiv(tf.constant([1]), tf.constant([0])),
    "int_mod_by_zero": lambda tf: tf.math.floormod(tf.constant([1]), tf.constant([0])),
    "int_negative_power": lambda tf: tf.pow(tf.constant([2]), tf.constant([-1])),
    "exp_of_int": lambda tf: tf.exp(tf.constant([1])),
    "sigmoid_of_int": lambda tf: tf.sigmoid(tf.constant([1])),
    "sqrt_of_int": lambda tf: tf.sqrt(1),
    "floor_of_int": lambda tf: tf.floor(tf.constant([1])),
    "softplus_of_complex": lambda tf: tf.math.softplus(tf.constant([1j])),
    "erf_of_complex": lambda tf: tf.math.erf(tf.constant([1j])),
    "maximum_of_complex": lambda tf: tf.maximum(tf.constant([1j]), tf.constant([1j])),
    "less_of_complex": lambda tf: tf.less(tf.constant([1j]), tf.constant([1j])),
    "is_nan_of_int": lambda tf: tf.math.is_nan(tf.constant([1])),
    "abs_of_uint8": lambda tf: tf.abs(tf.constant([1], tf.uint8)),
    "broadcast_mismatch": lambda tf: tf.add(tf.ones([2, 3]), tf.ones([4])),
    "complex_parts_mismatch": lambda tf: tf.complex(tf.constant([1.0]), tf.constant([1.0], tf.float64)),
    "complex_of_ints": lambda tf: tf.complex(tf.constant([1]), tf.constant([1])),
    "conj_of_bool": lambda tf: tf.math.conj(tf.constant([True])),
    "divide_no_nan_mixed": lambda tf: tf.math.divide_no_nan(tf.constant([1.0]), tf.constant([1])),
    "scalar_mul_not_scalar": lambda tf: tf.math.scalar_mul(tf.constant([2.0]), tf.constant([1.0, 2.0])),
    "add_n_empty": lambda tf: tf.add_n([]),
    "add_n_shapes": lambda tf: tf.add_n([tf.ones([2]), tf.ones([3])]),
    "logical_of_float": lambda tf: tf.logical_and(tf.constant([1.0]), tf.constant([1.0])),
    "reciprocal_no_nan_of_int": lambda tf: tf.math.reciprocal_no_nan(tf.constant([0, 2])),
    "lbeta_of_scalar": lambda tf: tf.math.lbeta(tf.constant(2.0)),
    "nextafter_of_float16": lambda tf: tf.math.nextafter(tf.constant([1.0], tf.float16), tf.constant([2.0], tf.float16)),
    "polygamma_of_float16": lambda tf: tf.math.polygamma(tf.constant([1.0], tf.float16), tf.constant([1.0], tf.float16)),
}


@pytest.mark.parametrize("name", sorted(INT_PROGRAMS))
def test_forward_like_tensorflow(name):
    same(INT_PROGRAMS[name])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", UNARY_FLOAT_OPS)
def test_unary_ops_keep_dtype(name, dtype):
    def program(tf):
        return getattr(tf.math, name)(tf.constant([0.25, 0.5, 0.75], getattr(tf, dtype)))
    ours, theirs = run_both(program)
    assert ours.dtype.name == dtype
    if isinstance(theirs, Raised):   # TensorFlow has no CPU kernel for some half-precision ops
        assert type(theirs.exc).__name__ == "NotFoundError", theirs
        return
    half = dtype in ("float16", "bfloat16")
    compare(ours, theirs, rtol=2e-2 if half else None, atol=2e-2 if half else None)


@pytest.mark.parametrize("name", sorted(ERROR_PROGRAMS))
def test_errors_like_tensorflow(name):
    same(ERROR_PROGRAMS[name])


def test_none_gradients_like_tensorflow():
    def program(tf):
        x = tf.constant([1.3, -2.7])
        y = tf.constant([0.5, 2.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            outs = [tf.round(x), tf.floor(x), tf.math.ceil(x), tf.math.rint(x), tf.math.floordiv(x, y),
                    tf.cast(tf.greater(x, y), tf.float32), tf.sign(x), tf.math.angle(x)]
        return [tape.gradient(o, [x, y]) for o in outs]
    same(program)


def test_x_zero_gradients_like_tensorflow():
    def program(tf):
        x = tf.constant([0.0, 0.0, 2.0])
        y = tf.constant([0.5, 0.0, 3.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            outs = [tf.math.xlogy(x, y), tf.math.xdivy(x, y), tf.math.xlog1py(x, y), tf.math.divide_no_nan(x, y),
                    tf.math.multiply_no_nan(x, y)]
        return [tape.gradient(o, [x, y]) for o in outs]
    same(program)


def test_complex_gradients_without_conj_like_tensorflow():
    # TensorFlow's rules for these complex ops do not conjugate; tapeflow follows them.
    def program(tf):
        x = tf.constant([1 + 2j, -0.5 + 1j])
        y = tf.constant([0.5 - 1j, 2 + 0.5j])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            outs = [tf.math.xlogy(x, y), tf.math.xdivy(x, y), tf.math.xlog1py(x, y),
                    tf.math.squared_difference(x, y), tf.math.reduce_euclidean_norm(x)]
        return [tape.gradient(o, [x, y]) for o in outs]
    same(program)


def test_bessel_gradients_at_zero_like_tensorflow():
    def program(tf):
        x = tf.constant([0.0, 1.5, -0.5])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            outs = [tf.math.bessel_i0(x), tf.math.bessel_i0e(x), tf.math.bessel_i1(x), tf.math.bessel_i1e(x)]
        return [tape.gradient(o, x) for o in outs]
    same(program)


def test_maximum_minimum_ties_go_to_x():
    def program(tf):
        x = tf.constant([1.0, 2.0, 3.0])
        y = tf.constant([1.0, 0.0, 3.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            hi, lo = tf.maximum(x, y), tf.minimum(x, y)
        return tape.gradient(hi, [x, y]), tape.gradient(lo, [x, y])
    same(program)


def test_math_namespace_has_tensorflow_names():
    tf = pytest.importorskip("tensorflow")
    import tapeflow
    wanted = """add subtract multiply divide truediv floordiv floormod mod pow maximum minimum squared_difference
        negative abs sign square sqrt rsqrt reciprocal exp expm1 log log1p sin cos tan asin acos atan atan2 sinh
        cosh tanh asinh acosh atanh sigmoid log_sigmoid softplus softsign erf erfc lgamma digamma polygamma zeta
        round floor ceil rint xlogy xdivy xlog1py multiply_no_nan divide_no_nan real imag conj angle is_finite
        is_nan is_inf logical_and logical_or logical_not logical_xor equal not_equal less less_equal greater
        greater_equal add_n scalar_mul cumsum cumprod cumulative_logsumexp reduce_sum reduce_mean reduce_prod
        reduce_max reduce_min reduce_logsumexp reduce_std reduce_variance reduce_any reduce_all
        reduce_euclidean_norm argmax argmin count_nonzero segment_sum segment_mean segment_max segment_min
        segment_prod unsorted_segment_sum unsorted_segment_max unsorted_segment_min unsorted_segment_mean
        unsorted_segment_prod unsorted_segment_sqrt_n top_k in_top_k erfinv erfcinv ndtri lbeta bessel_i0 bessel_i0e
        bessel_i1 bessel_i1e polyval nextafter reciprocal_no_nan accumulate_n zero_fraction is_non_decreasing
        is_strictly_increasing softmax log_softmax l2_normalize""".split()
    for name in wanted:
        assert hasattr(tf.math, name), name
        assert hasattr(tapeflow.math, name), f"tapeflow.math lacks {name}"
        assert hasattr(tapeflow, name) == hasattr(tf, name), f"top-level {name}: TensorFlow has it: {hasattr(tf, name)}"


def test_static_shapes_with_unknown_dims_in_graphs():
    # TensorFlow's shape functions: matmul batch broadcasting, broadcasting against 0 and 1, AddN merging
    def prog(tf):
        with tf.Graph().as_default():
            def hold(shape):
                return tf.compat.v1.placeholder(tf.float32, shape)
            a, b, c, d = hold([None, 2, 3]), hold([3, None]), hold([None]), hold([0])
            e, f = hold([None, 1, 4]), hold([5, None, None])
            return [t.shape.as_list() for t in (
                a @ b, tf.matmul(b, a, transpose_a=True, transpose_b=True), c + d, c < 1.0, e * f,
                tf.where(c > 0, c, d), tf.math.add_n([hold([None, 3]), hold([2, None])]))]
    same(prog)


def test_incompatible_static_shapes_raise_while_building():
    def matmul(tf):
        with tf.Graph().as_default():
            return tf.matmul(tf.compat.v1.placeholder(tf.float32, [None, 3]), tf.ones([4, 2]))
    def add(tf):
        with tf.Graph().as_default():
            return tf.compat.v1.placeholder(tf.float32, [None, 3]) + tf.ones([2])
    same(matmul)
    same(add)
