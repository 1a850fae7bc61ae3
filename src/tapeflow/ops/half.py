"""Half precision: kernels that compute float16 and bfloat16 in float32.

Note [half precision]: NumPy has no BLAS for float16 (its matmul multiplies
element by element, hundreds of times slower than float32), it adds up float16
sums in float16, and its float16 ufunc loops convert each element to float and
back one at a time (about 100 ns an element when the result is subnormal, as
small gradients are).  ml_dtypes' bfloat16 matmul gives float32 results.
TensorFlow's CPU kernels for matmul, convolutions and reductions (sum, mean,
norms, logsumexp, softmax, the cross-entropies) accumulate the half types in
float32.  So these kernels, and the elementwise ones a training step spends its
time in (Relu, ReluGrad, BiasAdd, variable updates, Cast), are declared with
`@computes_in_float32`, written under their `@op`:

    @op("BatchMatMulV2", dtypes=NUMERIC_TYPES, ...)
    @computes_in_float32
    def _matmul(a, b, transpose_a, transpose_b):
        ...

When the input that decides the op's dtype is float16 or bfloat16, the kernel
gets every array argument of that dtype converted to float32 and its float32
results are rounded (to nearest, ties to even, overflowing to inf, as a cast
does) back to the half dtype: one rounding per output.  Other dtypes reach the
kernel unchanged, behind one dtype test.  (TensorFlow's scans, products and
segment reductions accumulate in the half type; cumsum, cumprod, reduce_prod and
the segment ops keep NumPy's half-precision arithmetic.)

The conversions are where half precision costs time: NumPy casts float16 one
element at a time (no F16C in its baseline build), so float16 -> float32 reads
a 65536-entry table and float32 -> float16 is done with whole-array integer
and float operations (`round_to_float16`), both exact and data-independent.
bfloat16 conversions are ml_dtypes' own (vectorized)."""

import functools

import ml_dtypes
import numpy as np

_F16 = np.dtype(np.float16)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
HALF_NP = frozenset((_F16, _BF16))

_U32 = np.uint32
_I32 = np.int32
_SMALL = 256            # arrays smaller than this convert with a plain cast (less fixed cost)

def to_float32(a):
    """A float16 or bfloat16 array as float32 (exact)."""
    if a.dtype == _F16 and a.size >= _SMALL:
        return widen_float16(a)
    return a.astype(_F32)


def round_to(a, dtype):
    """A float32 array rounded to the half dtype `dtype`, like `a.astype(dtype)` without overflow warnings."""
    a = np.asarray(a)
    if dtype == _F16 and a.size >= _SMALL:
        return round_to_float16(a)
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def astype(a, dtype):
    """`a.astype(dtype)`, with the fast conversions between float16 and float32 (the Cast kernel)."""
    if a.dtype == _F32 and dtype == _F16:
        return round_to(a, dtype)
    if a.dtype == _F16 and dtype == _F32:
        return to_float32(a)
    return a.astype(dtype, copy=False)


def widen_float16(h):
    """float16 -> float32, exact on every input, in whole-array integer steps.

    The float16 bits, sign-extended to 32 and shifted left by 13, put its exponent and
    mantissa where float32 keeps them (bits 27..13) and its sign in bits 31..28; with
    bits 30..28 cleared, that float32 is the float16 value times 2^-112 (a float32
    subnormal when the float16 is one), so one multiplication by 2^112 gives the value.
    Infinities and NaNs (exponent 31) would come out finite: the rare arrays holding
    them have those elements cast one by one.
    """
    x = h.view(np.int16).astype(_I32)
    x <<= _I32(13)
    x &= _I32(-0x70000001)                                 # 0x8FFFFFFF: sign, exponent, mantissa
    out = x.view(_F32)
    out *= np.float32(2.0 ** 112)
    if h.view(np.int16).max() >= 0x7C00 or h.view(np.uint16).max() >= 0xFC00:     # inf or nan
        special = (h.view(np.uint16) & np.uint16(0x7C00)) == 0x7C00
        out[special] = h[special].astype(_F32)
    return out


def round_to_float16(a):
    """float32 -> float16, rounding to nearest even, exact on every input (NaN stays NaN).

    Whole-array steps in place of NumPy's per-element cast, on t = |a| clamped to 2^16
    (which rounds to inf, as everything from 65520 up does):

    * bias = 2^(e + 13), where 2^e <= max(t, 2^-14) < 2^(e+1): adding it to t makes the
      float32 addition round t at float16's last mantissa bit (2^(e-10); 2^-24 for the
      subnormals), and subtracting it again is exact, so r = (t + bias) - bias is t
      rounded to float16 (the magic-number trick of Maratyszcza's FP16 library,
      fp16_ieee_from_fp32_value);
    * r * 2^-112 is a float32 whose bits 27..13 are the float16's exponent and mantissa
      (a float32 subnormal for a float16 one): shifted right by 13, they are the result
      but for the sign, taken from a's bit 31.
    Each step is one NumPy operation on the whole array (integer clips, not maximum,
    which NumPy does not vectorize for unsigned integers).
    """
    w = a.view(_U32)
    t = np.bitwise_and(w, _U32(0x7FFFFFFF))                # |a|
    nan = t.max() > 0x7F800000
    np.clip(t, _U32(0), _U32(0x47800000), out=t)           # at most 2^16 (inf, nan too)
    bias = np.bitwise_and(t, _U32(0x7F800000))             # 2^e
    np.clip(bias, _U32(0x38800000), _U32(0x47800000), out=bias)      # at least 2^-14
    bias += _U32(0x06800000)                               # 2^(e + 13)
    r, b = t.view(_F32), bias.view(_F32)
    r += b
    r -= b
    r *= np.float32(2.0 ** -112)
    out = np.right_shift(t, _U32(13), out=bias)
    sign = np.right_shift(w, _U32(16), out=t)
    sign &= _U32(0x8000)
    out |= sign
    out = out.astype(np.uint16)
    if nan:
        nans = np.isnan(a)
        with np.errstate(invalid="ignore"):
            out[nans] = a[nans].astype(np.float16).view(np.uint16)
    return out.view(np.float16)


def computes_in_float32(kernel=None, *, dtype_of=0):
    """Kernel decorator: half-precision inputs are computed in float32 and the results
    rounded back (Note [half precision]).

    Args:
      dtype_of: the positional argument whose dtype is the op's (its first float input:
        1 for the convolution backprop ops, whose input 0 is a shape).
    """
    def wrap(kernel):
        @functools.wraps(kernel)
        def half_in_float32(*args, **attrs):
            dtype = args[dtype_of].dtype
            if dtype not in HALF_NP:
                return kernel(*args, **attrs)
            return _in_float32(kernel, dtype, args, attrs)
        return half_in_float32
    return wrap if kernel is None else wrap(kernel)


def _in_float32(kernel, dtype, args, attrs):
    wide = [to_float32(a) if isinstance(a, np.ndarray) and a.dtype == dtype else a for a in args]
    buffer = attrs.get("out")            # an `into` kernel (Note [buffer reuse] in graph/executor.py)
    if buffer is not None:
        attrs = {**attrs, "out": None}
    out = kernel(*wide, **attrs)
    if type(out) is tuple:
        return tuple(_narrow(o, dtype) for o in out)
    if buffer is None:
        return _narrow(out, dtype)
    buffer[...] = _narrow(out, dtype)
    return buffer


def in_float32(kernel):
    """The half kernel (`@op(..., half=)`) that runs `kernel` in float32: like
    `computes_in_float32`, without the dtype test, which the op's dispatch makes."""
    def half_in_float32(*args, **attrs):
        return _in_float32(kernel, args[0].dtype, args, attrs)
    half_in_float32.__name__ = half_in_float32.__qualname__ = f"{kernel.__name__}_in_float32"
    return half_in_float32


# -- kernels on the bits ---------------------------------------------------------
# Selections need no arithmetic: on the int16 view of float16 and bfloat16 alike (sign in
# bit 15, then the exponent and mantissa, so that for numbers the int16 order is the
# float order among non-negative values), they cost a pass or two over 2-byte elements
# instead of two conversions.  Arrays holding what the shortcut does not cover (NaN,
# infinities) take the float32 kernel.

_POS_INF = {_F16: 0x7C00, _BF16: 0x7F80}          # +inf's bits; -inf's are these | 0x8000


def _has(x, positive_from, negative_from):
    """Whether some element's bits are >= `positive_from` (as int16) or >= `negative_from`
    (as uint16): two reductions over the array."""
    return bool(x.view(np.int16).max() >= positive_from or x.view(np.uint16).max() >= negative_from)


def relu(x):
    """max(x, 0) of a half-precision array: negative numbers (and -0.0, -inf) become +0.0,
    the rest, NaN included, stays (the Relu op's half kernel)."""
    if x.size and x.view(np.uint16).max() > 0x8000 | _POS_INF[x.dtype]:     # a negative NaN: max keeps it
        return _RELU_IN_FLOAT32(x)
    return np.clip(x.view(np.int16), np.int16(0), np.int16(0x7FFF)).view(x.dtype)


def relu_grad(dy, y):
    """dy * (y > 0) in half precision: dy where y > 0, else 0.0 with dy's sign (the
    ReluGrad op's half kernel; infinite or NaN dy and NaN y take the float32 kernel,
    where inf * 0 is NaN)."""
    inf = _POS_INF[dy.dtype]
    if (dy.size and _has(dy, inf, 0x8000 | inf)) or (y.size and _has(y, inf + 1, 0x8000 | inf + 1)):
        return _RELU_GRAD_IN_FLOAT32(dy, y)
    keep = np.clip(y.view(np.int16), np.int16(0), np.int16(1))     # 1 where y > 0 (bits > +0.0)
    keep *= np.int16(0x7FFF)
    keep |= np.int16(-0x8000)                                      # and the sign bit everywhere
    return np.bitwise_and(dy.view(np.int16), keep).view(dy.dtype)


_RELU_IN_FLOAT32 = in_float32(lambda x: np.maximum(x, np.float32(0)))
_RELU_GRAD_IN_FLOAT32 = in_float32(lambda dy, y: dy * (y > 0).astype(np.float32))


@functools.cache
def ufunc_in_float32(ufunc):
    """`ufunc` computing half precision in float32 (made once per ufunc: wrapping one reads its
    generated docstring)."""
    return computes_in_float32(ufunc)


def _narrow(out, dtype):
    """A kernel result computed from float32 arguments, in the half dtype (other dtypes: as it is)."""
    return round_to(out, dtype) if np.result_type(out) == _F32 else out
