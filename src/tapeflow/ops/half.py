"""Half precision: kernels that compute float16 and bfloat16 in float32.

Note [half precision]: NumPy has no BLAS for float16 (its matmul multiplies
element by element, hundreds of times slower than float32), it adds up float16
sums in float16, and its float16 ufunc loops convert each element to float and
back one at a time (about 100 ns an element when the result is subnormal, as
small gradients are).  ml_dtypes' bfloat16 matmul gives float32 results.
TensorFlow's CPU kernels for matmul, convolutions and reductions (sum, mean,
norms, logsumexp, softmax, the cross-entropies) accumulate the half types in
float32, and its elementwise kernels compute in float and round once.  So the
ops a training step spends its time in declare a half kernel, made from their
kernel by a factory of this module:

    @op("BatchMatMulV2", dtypes=NUMERIC_TYPES, ..., half=half.in_float32)
    def _matmul(a, b, transpose_a, transpose_b):
        ...

`in_float32`: the kernel gets every array argument of the half dtype converted to
float32, and its float32 results are rounded (to nearest, ties to even,
overflowing to inf, as a cast does) back to the half dtype: one rounding per
output.  For +, -, *, / that is the correctly rounded result, which NumPy's own
float16 loops give too (float32 has at least 2 * 11 + 2 bits, so rounding twice
changes nothing).  Relu and ReluGrad only select, so they work on the bits
(`relu`, `relu_grad`); variable reads and updates take half values in either
form (`any_width`).  The op's dispatch sends float16 and bfloat16 inputs to the
half kernel from its dtype check's failure branch (framework/op_def.py), so
other dtypes pay nothing for it.  Ops whose dtype is not their input 0's (the
convolution backprop ops, the sparse ones) and Einsum wrap their kernel in
`@computes_in_float32` instead, which tests the dtype on every call.
(TensorFlow's scans, products and segment reductions accumulate in the half
type; cumsum, cumprod, reduce_prod and the segment ops keep NumPy's
half-precision arithmetic.)

The conversions are where half precision costs time: NumPy casts float16 one
element at a time (no F16C in its baseline build; about 2.5 ns an element, and
60-130 ns for a subnormal result), so both directions are whole-array integer
and float operations here (`widen_float16`, `round_to_float16`), exact and
data-independent, about 0.35 and 1.2 ns an element on the project machine.
bfloat16 conversions are ml_dtypes' own (vectorized).  Fresh arrays cost page
faults (the allocator gives large freed blocks back to the system), so the
kernels round into the float32 copies they made themselves when they may, and
the rounding steps keep their work arrays (Note [work arrays]).

Note [half precision in plans]: inside a compiled plan (graph/executor.py) a
value that only half kernels read never needs to exist in the half dtype: its
producer can leave it "wide", a float32 array holding the rounded values
(`round_wide`, cheaper than rounding to float16 bits), and its readers skip
converting it.  The plan chooses, once, which slots are wide (those of a half
step's single output, or of a constant, that only half steps of the same dtype
read, and that are not fetched) and runs those steps through `plan_kernel`.
The numbers are the same; the values that leave the plan are in the half dtype.
"""

import functools
import threading

import ml_dtypes
import numpy as np

try:                                       # the clip ufunc: np.clip adds a Python layer (microseconds a call)
    from numpy._core.umath import clip as _clip
except ImportError:                        # NumPy 1
    from numpy.core.umath import clip as _clip

_F16 = np.dtype(np.float16)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
HALF_NP = frozenset((_F16, _BF16))

_U32 = np.uint32
_I32 = np.int32
_SMALL = 256            # arrays smaller than this convert with a plain cast (less fixed cost)


# -- conversions -------------------------------------------------------------------

_WORK = threading.local()        # Note [work arrays]
_WORK_MAX = 1 << 22             # elements: larger arrays get fresh work arrays


def _work(shape, slot):
    """A uint32 work array of `shape` for the rounding steps (`slot` 0 or 1: two may be in use
    at once), or None (let NumPy allocate) for more than _WORK_MAX elements.

    Note [work arrays]: the rounding steps need one or two whole-array temporaries that never
    leave them.  Fresh ones cost page faults whenever the allocator has handed freed memory
    back to the system, which a training step that also runs other code (another framework,
    other dtypes) makes it do often: in bench_half.py's mixed run the float16 plan took
    about 3000 page faults a step (some 10 ms on the project machine) and none with these.
    So each thread keeps two, grown to the largest size asked for (up to _WORK_MAX)."""
    n = int(np.prod(shape))
    if n > _WORK_MAX:
        return None
    buffers = getattr(_WORK, "buffers", None)
    if buffers is None:
        buffers = _WORK.buffers = [np.empty(0, _U32), np.empty(0, _U32)]
    if buffers[slot].size < n:
        buffers[slot] = np.empty(n, _U32)
    return buffers[slot][:n].reshape(shape)


def to_float32(a):
    """A float16 or bfloat16 array as float32 (exact)."""
    if a.dtype == _F16 and a.size >= _SMALL:
        return widen_float16(a)
    return a.astype(_F32)


def round_to(a, dtype, own=False, spare=None, out=None):
    """A float32 array rounded to the half dtype `dtype`, like `a.astype(dtype)` without overflow
    warnings; `own`, `spare` and `out` as for `round_to_float16`."""
    a = np.asarray(a)
    if dtype == _F16 and a.size >= _SMALL:
        return round_to_float16(a, own, spare, out)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = a.astype(dtype)
    if out is None:
        return rounded
    out[...] = rounded
    return out


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


def _bias(t, out=None):
    """2^(e + 13) for each magnitude t (float32 bits), where 2^e <= max(t, 2^-14) < 2^(e+1),
    at most 2^29: added to t, the float32 sum rounds t at float16's last mantissa bit
    (2^(e-10); 2^-24 for its subnormals), and subtracting it again is exact."""
    bias = np.bitwise_and(t, _U32(0x7F800000), out=out)   # 2^e
    _clip(bias, _U32(0x38800000), _U32(0x47800000), out=bias)
    bias += _U32(0x06800000)
    return bias


def round_to_float16(a, own=False, spare=None, out=None):
    """float32 -> float16, rounding to nearest even, exact on every input (NaN stays NaN).

    Whole-array steps in place of NumPy's per-element cast, on t = |a| clamped to 2^16
    (which rounds to inf, as everything from 65520 up does): r = (t + bias) - bias is t
    rounded to float16 (`_bias`: the magic-number trick of Maratyszcza's FP16 library,
    fp16_ieee_from_fp32_value), and r * 2^-112 is a float32 whose bits 27..13 are the
    float16's exponent and mantissa (a float32 subnormal for a float16 one); shifted
    right by 13 they are the result but for the sign, a's bit 31.  Each step is one
    NumPy operation on the whole array (clips, not maximum, which NumPy does not
    vectorize against a scalar).  To spare fresh arrays: `own`, a may be overwritten;
    `spare`, a float32 array of a's shape that may be; `out`, the float16 array to
    write the result into.
    """
    if not a.flags.c_contiguous:
        a, own = np.ascontiguousarray(a), True
    w = a.view(_U32)
    bits = np.empty(a.shape, np.uint16) if out is None else out.view(np.uint16)
    np.multiply(np.signbit(a), np.uint16(0x8000), out=bits, dtype=np.uint16)     # the sign
    t = np.bitwise_and(w, _U32(0x7FFFFFFF), out=w if own else _work(a.shape, 1))     # |a|
    nans = np.greater(t, _U32(0x7F800000)) if t.max() > 0x7F800000 else None
    _clip(t, _U32(0), _U32(0x47800000), out=t)             # at most 2^16 (inf, nan too)
    usable = spare is not None and spare.shape == a.shape and spare.flags.c_contiguous
    bias = _bias(t, spare.view(_U32) if usable else _work(a.shape, 0))
    r, b = t.view(_F32), bias.view(_F32)
    r += b
    r -= b
    r *= np.float32(2.0 ** -112)
    magnitude = np.right_shift(t, _U32(13), out=bias)
    narrow = t.reshape(-1).view(np.uint16)[:t.size].reshape(t.shape)    # t's first half, free now
    np.copyto(narrow, magnitude, casting="unsafe")
    bits |= narrow
    if nans is not None:
        bits[nans] |= np.uint16(0x7E00)                    # a quiet NaN
    return bits.view(np.float16) if out is None else out


def round_wide(a, dtype, own=False, spare=None):
    """`round_to(a, dtype)` kept in float32: a's values rounded to the half dtype (a "wide"
    value, Note [half precision in plans]); `own` and `spare` as for `round_to_float16`.

    For float16, r = (|a| + bias) - bias rounds |a| (`_bias`), r * 2^112 * 2^-112 makes
    what float16 cannot hold inf, and a's sign goes back on; NaN stays NaN.
    """
    a = np.asarray(a)
    if dtype != _F16 or a.size < _SMALL:
        return round_to(a, dtype).astype(_F32)
    if not a.flags.c_contiguous:
        a, own = np.ascontiguousarray(a), True
    w = a.view(_U32)
    sign = np.bitwise_and(w, _U32(0x80000000), out=_work(a.shape, 1))
    t = np.bitwise_and(w, _U32(0x7FFFFFFF), out=w if own else None)      # |a|
    usable = spare is not None and spare.shape == a.shape and spare.flags.c_contiguous
    bias = _bias(t, spare.view(_U32) if usable else _work(a.shape, 0))
    r, b = t.view(_F32), bias.view(_F32)
    with np.errstate(over="ignore", invalid="ignore"):       # invalid: signaling NaNs
        r += b
        r -= b
        r *= np.float32(2.0 ** 112)
        r *= np.float32(2.0 ** -112)
    t |= sign
    return r


# -- half kernels ----------------------------------------------------------------------

class HalfKernel:
    """An op's kernel for float16 and bfloat16 inputs (`@op(..., half=factory)`, the factories
    below).  Called, it takes and returns arrays of the half dtype.  `wide` is the op's float32
    kernel; plans run it on wide values (Note [half precision in plans]).  `exact`: on half
    values it gives half values (it selects or moves them), so its results need no rounding."""

    __slots__ = ("narrow", "wide", "exact", "__name__", "__qualname__")

    def __init__(self, narrow, wide, exact):
        self.narrow = narrow
        self.wide = wide
        self.exact = exact
        self.__name__ = self.__qualname__ = f"{wide.__name__}_half"

    def __call__(self, *args, **attrs):
        return self.narrow(*args, **attrs)


def in_float32(kernel):
    """`half=in_float32`: the op computes half-precision arguments in float32, rounding each
    result once."""
    def narrow(*args, **attrs):
        return _in_float32(kernel, args[0].dtype, args, attrs)
    return HalfKernel(narrow, kernel, exact=False)


def in_float32_ufunc(ufunc):
    """`half=in_float32_ufunc(ufunc)`: `in_float32` for an op whose kernel is `ufunc`, which
    computes into the float32 copy of an input."""
    return lambda kernel: in_float32(ufunc)


def any_width(kernel):
    """`half=any_width`: the kernel takes half values as they come, in the half dtype or wide,
    and gives them back so (variable reads and updates)."""
    return HalfKernel(kernel, kernel, exact=True)


def computes_in_float32(kernel=None, *, dtype_of=0):
    """Kernel decorator, for ops whose dtype is not input 0's: half-precision inputs are
    computed in float32 and the results rounded back (Note [half precision]).

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


@functools.cache
def ufunc_in_float32(ufunc):
    """`ufunc` computing half precision in float32 (made once per ufunc: wrapping one reads its
    generated docstring)."""
    return computes_in_float32(ufunc)


def _in_float32(kernel, dtype, args, attrs, wide_out=False):
    """`kernel` on `args` whose arrays of the half `dtype` are converted to float32 (float32
    ones, wide values, pass as they are); its float32 results rounded to `dtype`, or kept
    wide with `wide_out`."""
    temps, wide = [], []          # temps: the float32 copies made here, which nothing else sees
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype == dtype:
            a = to_float32(a)
            temps.append(a)
        wide.append(a)
    buffer = attrs.get("out")            # an `into` kernel (Note [buffer reuse] in graph/executor.py)
    if type(kernel) is np.ufunc:         # elementwise: into the copy of an input of the result's shape
        shape = np.broadcast_shapes(*[np.shape(a) for a in wide])
        out = kernel(*wide, out=next((t for t in temps if t.shape == shape), None))
    else:
        out = kernel(*wide, **(attrs if buffer is None else {**attrs, "out": None}))
    if type(out) is tuple:
        return tuple(round_to(o, dtype) if np.result_type(o) == _F32 else o for o in out)
    if np.result_type(out) != _F32:
        if buffer is None:
            return out
        buffer[...] = out
        return buffer
    # The result may be overwritten when it is one of the copies or shares no memory with the
    # arguments; a copy of its shape that it does not share memory with is spare.
    own = type(out) is np.ndarray and (any(out is t for t in temps) or not any(
        np.may_share_memory(out, a) for a in args if isinstance(a, np.ndarray)))
    spare = next((t for t in temps if t.shape == out.shape and t is not out and not np.may_share_memory(t, out)),
                 None) if own else None
    if wide_out:
        return round_wide(out, dtype, own, spare)
    return round_to(out, dtype, own, spare, buffer)


def plan_kernel(kernel, dtype, wide_out):
    """The HalfKernel `kernel` for a plan step whose arguments of the half `dtype` may come
    wide, returning its result wide (`wide_out`) or in `dtype` (Note [half precision in plans])."""
    if not kernel.exact:
        def step(*args, **attrs):
            return _in_float32(kernel.wide, dtype, args, attrs, wide_out)
    else:
        def step(*args, **attrs):
            out = kernel.wide(*[to_float32(a) if isinstance(a, np.ndarray) and a.dtype == dtype else a
                                for a in args], **attrs)
            return out if wide_out or type(out) is tuple or np.result_type(out) != _F32 else round_to(out, dtype)
    step.__name__ = step.__qualname__ = kernel.__name__
    return step


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


def relu(kernel):
    """`half=relu`: max(x, 0) on the bits: negative numbers (and -0.0, -inf) become +0.0, the
    rest, NaN included, stays; `kernel` (float32) for arrays holding a negative NaN."""
    def relu_bits(x):
        if x.size and x.view(np.uint16).max() > 0x8000 | _POS_INF[x.dtype]:     # a negative NaN: max keeps it
            return _in_float32(kernel, x.dtype, (x,), {})
        return _clip(x.view(np.int16), np.int16(0), np.int16(0x7FFF)).view(x.dtype)
    return HalfKernel(relu_bits, kernel, exact=True)


def relu_grad(kernel):
    """`half=relu_grad`: dy * (y > 0) on the bits: dy where y > 0, else 0.0 with dy's sign;
    `kernel` (float32) when dy holds inf or NaN (inf * 0 is NaN) or y holds NaN."""
    def relu_grad_bits(dy, y):
        inf = _POS_INF[dy.dtype]
        if (dy.size and _has(dy, inf, 0x8000 | inf)) or (y.size and _has(y, inf + 1, 0x8000 | inf + 1)):
            return _in_float32(kernel, dy.dtype, (dy, y), {})
        keep = _clip(y.view(np.int16), np.int16(0), np.int16(1))      # 1 where y > 0 (bits > +0.0)
        keep *= np.int16(0x7FFF)
        keep |= np.int16(-0x8000)                                       # and the sign bit everywhere
        return np.bitwise_and(dy.view(np.int16), keep).view(dy.dtype)
    return HalfKernel(relu_grad_bits, kernel, exact=True)
