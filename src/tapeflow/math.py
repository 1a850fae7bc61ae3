"""`tf.math`: elementwise math, reductions, scans, segment ops and top_k."""

from tapeflow.ops.math_ops import (  # noqa: F401
    abs, acos, acosh, add, add_n, angle, argmax, argmin, asin, asinh, atan, atan2, atanh, ceil, conj, cos,
    cosh, count_nonzero, cumprod, cumsum, cumulative_logsumexp, digamma, divide, divide_no_nan, equal, erf,
    erfc, exp, expm1, floor, floordiv, floormod, greater, greater_equal, imag, is_finite, is_inf, is_nan,
    less, less_equal, lgamma, log, log1p, log_sigmoid, logical_and, logical_not, logical_or, logical_xor,
    maximum, minimum, mod, multiply, multiply_no_nan, negative, not_equal, polygamma, pow, real,
    reciprocal, reduce_all, reduce_any, reduce_euclidean_norm, reduce_logsumexp, reduce_max, reduce_mean,
    reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_variance, rint, round, rsqrt, scalar_mul,
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, sigmoid, sign, sin, sinh, softplus,
    softsign, sqrt, square, squared_difference, subtract, tan, tanh, top_k, truediv, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod, unsorted_segment_sqrt_n,
    unsorted_segment_sum, xdivy, xlog1py, xlogy, zeta,
)
