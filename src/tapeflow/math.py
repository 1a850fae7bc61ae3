"""`tf.math`: elementwise math, reductions, scans, segment ops and top_k."""

from tapeflow.ops.linalg_ops import l2_normalize  # noqa: F401
from tapeflow.ops.math_ops import (  # noqa: F401
    abs, accumulate_n, acos, acosh, add, add_n, angle, argmax, argmin, asin, asinh, atan, atan2, atanh,
    bessel_i0, bessel_i0e, bessel_i1, bessel_i1e, ceil, conj, cos, cosh, count_nonzero, cumprod, cumsum,
    cumulative_logsumexp, digamma, divide, divide_no_nan, equal, erf, erfc, erfcinv, erfinv, exp, expm1,
    floor, floordiv, floormod, greater, greater_equal, imag, in_top_k, is_finite, is_inf, is_nan,
    is_non_decreasing, is_strictly_increasing, lbeta, less, less_equal, lgamma, log, log1p, log_sigmoid,
    logical_and, logical_not, logical_or, logical_xor, maximum, minimum, mod, multiply, multiply_no_nan,
    ndtri, negative, nextafter, not_equal, polygamma, polyval, pow, real, reciprocal, reciprocal_no_nan,
    reduce_all, reduce_any, reduce_euclidean_norm, reduce_logsumexp, reduce_max, reduce_mean, reduce_min,
    reduce_prod, reduce_std, reduce_sum, reduce_variance, rint, round, rsqrt, scalar_mul, segment_max,
    segment_mean, segment_min, segment_prod, segment_sum, sigmoid, sign, sin, sinh, softplus, softsign,
    sqrt, square, squared_difference, subtract, tan, tanh, top_k, truediv, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod, unsorted_segment_sqrt_n,
    unsorted_segment_sum, xdivy, xlog1py, xlogy, zero_fraction, zeta,
)
from tapeflow.ops.nn_ops import log_softmax, softmax  # noqa: F401
