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
_SMALL = 256            # arrays smaller than this convert with a plain cast (less fixed cost)

# float16 bit pattern -> its float32 value (exact), indexed by the pattern as uint16.
_F16_TO_F32 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


def to_float32(a):
    """A float16 or bfloat16 array as float32 (exact)."""
    if a.dtype == _F16 and a.size >= _SMALL:
        return _F16_TO_F32.take(a.view(np.uint16))
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


def round_to_float16(a):
    """float32 -> float16, rounding to nearest even, exact on every input (NaN stays NaN).

    Whole-array steps in place of NumPy's per-element cast: `base`, |a| scaled by
    2^112 (overflowing to inf where float16 does) and back by 2^-110, is added to a
    power of two chosen from a's exponent so that the float32 addition itself rounds
    at float16's last mantissa bit (subnormals included); the float16 exponent and
    mantissa are then read off the sum's bits.  (The algorithm of Maratyszcza's FP16
    library, fp16_ieee_from_fp32_value.)
    """
    w = a.view(_U32)
    bias = np.bitwise_and(w, _U32(0x7F800000))             # a's exponent bits
    np.maximum(bias, _U32(0x38800000), out=bias)
    bias += _U32(0x07800000)
    base = np.abs(w.view(_F32))
    nan = base.view(_U32).max(initial=0) > 0x7F800000
    with np.errstate(over="ignore", invalid="ignore"):     # invalid: signaling NaNs
        base *= np.float32(2.0 ** 112)
        base *= np.float32(2.0 ** -110)
        base += bias.view(_F32)
    bits = base.view(_U32)
    out = np.right_shift(bits, _U32(13), out=bias)
    out &= _U32(0x7C00)                                    # the float16 exponent
    bits &= _U32(0x0FFF)                                   # the mantissa (with a carry into the exponent)
    out += bits
    if nan:
        np.putmask(out, np.isnan(a), _U32(0x7E00))
    sign = np.right_shift(w, _U32(16), out=bits)
    sign &= _U32(0x8000)
    out |= sign
    return out.astype(np.uint16).view(np.float16)


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


@functools.cache
def ufunc_in_float32(ufunc):
    """`ufunc` computing half precision in float32 (made once per ufunc: wrapping one reads its
    generated docstring)."""
    return computes_in_float32(ufunc)


def _narrow(out, dtype):
    """A kernel result computed from float32 arguments, in the half dtype (other dtypes: as it is)."""
    return round_to(out, dtype) if np.result_type(out) == _F32 else out
