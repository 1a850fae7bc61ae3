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
data-independent, about 0.3 and 1.0 ns an element on the project machine (1.6
inside a training step, whose arrays come out of the caches).  bfloat16
conversions are ml_dtypes' own (vectorized).  Fresh arrays cost page faults
(the allocator gives large freed blocks back to the system), so the kernels
round into the float32 results they made themselves when they may, and the
rounding steps keep their work arrays (Note [work arrays]).

Note [half precision in plans]: inside a compiled plan (graph/executor.py) a
value that only half kernels read never needs to exist in the half dtype: its
producer can leave it "wide", a float32 array holding the rounded values
(`round_wide`, cheaper than rounding to float16 bits), and its readers skip
converting it.  The plan chooses, once, which slots are wide (those of a half
step's single output, or of a constant, that only half steps of the same dtype
read, and that are not fetched) and runs those steps through `plan_kernel`.
The numbers are the same; the values that leave the plan are in the half dtype.

Note [wide values of eager tensors]: eagerly, every half kernel used to widen
each float16 argument again, though the kernel that made it had its float32
value in hand; a float16 training step widened some 12 million elements (about
a third of what its conversions cost).  Eager tensors never change, so a
float16 tensor can keep that value: `Tensor._wide`, a slot left unset on other
tensors (they pay nothing), holds float32 bit for bit `to_float32(t._value)`
(a NaN: the quiet NaN its float16 widens to).  `execute` runs a half kernel
with an `eager` function (framework/op_def.py `_execute_wide`, eager one-output
ops only) through it: `in_float32` kernels take their arguments' wide values
instead of widening them and round once into both forms (`round_both`, which
costs about what the rounding to float16 alone did), Relu and ReluGrad make
their results' wide values from their arguments' with one or two passes; an op
whose arguments are all small (under _SMALL elements) keeps none, which would
cost more than widening again.  The kernels write only into arrays made for the
call, never into an argument that comes float32 (`_in_float32`), so a cached
value stays as it was.

Variables keep `_wide_pair`, (array, its wide value), valid while the array is
still the variable's `_value`: `_update` computes from the variable's and the
delta's wide values and stores the new pair (both updated in place when nothing
else holds either, Note [in-place updates] in ops/variables.py: reads hold
both), eager reads hand the wide value to the tensor they make, and every other
write replaces `_value` (a scatter in place copies instead: the pair's
reference to the array counts), which the identity check notices.  Compiled
plans keep values wide their own way and ignore these.  bfloat16 keeps none:
its casts are ml_dtypes' vectorized ones (widening costs little), and caching
its wide values measured no faster.  The cost is memory: a float16 tensor a
half kernel made holds 6 bytes an element instead of 2, and so do the
activations a tape saves (float16 is chosen here for speed, not memory).
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
# the rounding's constants, made once (a NumPy scalar made per call costs about 0.5 us)
_EXPONENT, _SIGN, _MAGNITUDE = _U32(0x7F800000), _U32(0x80000000), _U32(0x7FFFFFFF)
_MIN_BIAS, _MAX_BIAS, _BIAS_STEP = _U32(0x38800000), _U32(0x47800000), _U32(0x06C00000)
_INF_SCALED, _ZERO, _THREE, _THIRTEEN = _U32(0x0F800000), _U32(0), _U32(3), _U32(13)
_UP, _DOWN = np.float32(2.0 ** 112), np.float32(2.0 ** -112)
_SMALL = 256            # arrays smaller than this convert with a plain cast (less fixed cost)


# -- conversions -------------------------------------------------------------------

_WORK = threading.local()        # Note [work arrays]
_BLOCK = 1 << 18                # elements the rounding steps take at a time (Note [work arrays])


def _work(n, slot):
    """A uint32 work array of `n` (at most _BLOCK) elements for the rounding steps (`slot` 0 to 2:
    three may be in use at once).

    Note [work arrays]: the rounding steps need up to three temporaries that never leave
    them.  Fresh ones cost page faults whenever the allocator has handed freed memory back
    to the system, which a training step that also runs other code (another framework,
    other dtypes) makes it do often: in bench_half.py's mixed run the float16 plan took
    about 3000 page faults a step (some 10 ms on the project machine) and none with these.
    So each thread keeps three.  The steps run over blocks of at most _BLOCK elements, which
    bounds them (3 MiB a thread) and costs nothing: rounding a matmul's result block by
    block measured no slower than in whole-array passes (a little faster)."""
    buffers = getattr(_WORK, "buffers", None)
    if buffers is None:
        buffers = _WORK.buffers = [np.empty(0, _U32) for _ in range(3)]
    if buffers[slot].size < n:
        buffers[slot] = np.empty(n, _U32)
    return buffers[slot][:n]


def to_float32(a):
    """A float16 or bfloat16 array as float32 (exact)."""
    if a.dtype == _F16 and a.size >= _SMALL:
        return widen_float16(a)
    return a.astype(_F32)


def round_to(a, dtype, own=False, out=None):
    """A float32 array rounded to the half dtype `dtype`, like `a.astype(dtype)` without overflow
    warnings; `own` and `out` as for `round_to_float16`."""
    a = np.asarray(a)
    if dtype == _F16 and a.size >= _SMALL:
        return round_to_float16(a, own, out=out)
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


def _bias(w, out=None):
    """1.5 * 2^(e + 13) for each float32 of bits `w` (either sign), where 2^e <= max(|a|, 2^-14)
    < 2^(e+1), e at most 16; and whether some |a| is 2^15 or more, inf or NaN (those take
    `_round_special`).

    Added to a, it makes a sum in [2^(e+13), 2^(e+14)) whatever a's sign (|a| < 2^(e+1)), so
    the float32 sum rounds a at float16's last mantissa bit (2^(e-10); 2^-24 for its
    subnormals), ties to even (the bias is an even multiple of that bit), and subtracting
    the bias again is exact."""
    bias = np.bitwise_and(w, _EXPONENT, out=out)         # 2^e
    _clip(bias, _MIN_BIAS, _MAX_BIAS, out=bias)
    special = np.maximum.reduce(bias) >= 0x47000000
    bias += _BIAS_STEP
    return bias, special


def _round_float16(a, own, out, bits, wide):
    """The float16 rounding of `round_to_float16`, `round_wide` and `round_both`: `(narrow,
    wide)`, the float16 bits (into `out` if given) when `bits`, the wide value (`a` itself
    with `own`) when `wide`, else None.  The steps run over blocks of at most _BLOCK elements
    (Note [work arrays])."""
    if not a.flags.c_contiguous:
        a, own = np.ascontiguousarray(a), True
    r = a if own else np.empty(a.shape, _F32) if wide else None
    into = out is not None and out.flags.c_contiguous          # else: a fresh array, copied at the end
    narrow = None if not bits else out.view(np.uint16) if into else np.empty(a.shape, np.uint16)
    flat, r_flat = a.reshape(-1), None if r is None else r.reshape(-1)
    narrow_flat = None if narrow is None else narrow.reshape(-1)
    for i in range(0, flat.size, _BLOCK):
        j = min(i + _BLOCK, flat.size)
        _round_block(flat[i:j], None if r is None else r_flat[i:j], None if narrow is None else narrow_flat[i:j],
                     wide)
    if bits and out is not None and not into:
        out[...] = narrow.view(_F16)
    return (None if not bits else out if out is not None else narrow.view(_F16)), r


def _round_block(a, r, narrow, wide):
    """One block of `_round_float16`: `a` rounded into the float32 `r` (a work array when None)
    and, unless `narrow` is None, into its float16 bits `narrow`; `wide`: r gets a's sign.

    r = (a + bias) - bias (`_bias`) is a rounded, except that a zero result is always +0.0 and
    that what rounds to 2^16 or more must become inf: a's sign goes back on with an OR (so
    the sign is kept first) and, in the rare blocks holding |a| >= 2^15, inf or NaN (`_bias`
    tells), r * 2^112 * 2^-112 overflows to inf and NaNs become the quiet NaN that a float16
    NaN widens to.  The bits: r * 2^-112 is a float32 whose bits 27..13 are the float16's
    exponent and mantissa (a float32 subnormal for a float16 one) and whose bits 30..28 are
    clear; the sign, shifted to bit 28, fills them, and shifted right by 13, the low 16 bits
    are the float16.  Each step is one NumPy operation over the block (`_clip`, not
    np.maximum, which NumPy does not vectorize against a scalar)."""
    n = a.size
    w = a.view(_U32)
    bias, special = _bias(w, _work(n, 0))
    sign = np.bitwise_and(w, _SIGN, out=_work(n, 1))
    b = bias.view(_F32)
    if r is None:
        r = _work(n, 2).view(_F32)
    if special:
        _round_special(a, b, r)
    else:
        np.add(a, b, out=r)
        r -= b
    if wide:
        np.bitwise_or(r.view(_U32), sign, out=r.view(_U32))
    if narrow is None:
        return
    m = np.multiply(r, _DOWN, out=b).view(_U32)
    if special:                                          # inf and NaN: 0x7C00 (NaN: below)
        _clip(np.bitwise_and(m, _MAGNITUDE, out=m), _ZERO, _INF_SCALED, out=m)
    m |= np.right_shift(sign, _THREE, out=sign)
    m >>= _THIRTEEN
    np.copyto(narrow, m, casting="unsafe")
    if special:
        narrow[np.isnan(r)] |= np.uint16(0x7E00)


def _round_special(a, b, r):
    """r = (a + b) - b for arrays holding |a| >= 2^15, inf or NaN: what rounds to 2^16 or more
    becomes inf, a NaN the quiet NaN 0x7FC00000 (its sign goes on after)."""
    with np.errstate(over="ignore", invalid="ignore"):
        np.add(a, b, out=r)
        r -= b
        r *= _UP
        r *= _DOWN
    magnitude = r.view(_U32)
    magnitude[np.isnan(r)] = 0x7FC00000


def round_to_float16(a, own=False, out=None):
    """float32 -> float16, rounding to nearest even, exact on every input (NaN stays NaN).

    Whole-array steps in place of NumPy's per-element cast (`_round_block`: the
    magic-number trick of Maratyszcza's FP16 library, fp16_ieee_from_fp32_value).  To spare
    fresh arrays: `own`, a may be overwritten; `out`, the float16 array to write the result
    into.
    """
    return _round_float16(a, own, out, bits=True, wide=False)[0]


def round_wide(a, dtype, own=False):
    """`round_to(a, dtype)` kept in float32: a's values rounded to the half dtype (a "wide"
    value, Note [half precision in plans]), a NaN as a float16 NaN widens; `own` as for
    `round_to_float16`."""
    a = np.asarray(a)
    if dtype != _F16 or a.size < _SMALL:
        return round_to(a, dtype).astype(_F32)
    return _round_float16(a, own, None, bits=False, wide=True)[1]


def round_both(a, dtype, own=False, out=None):
    """`a` (float32) rounded to the half dtype `dtype` in both forms: `(bits, wide)`, where
    `bits` is `round_to(a, dtype)` and `wide` is `to_float32(bits)` bit for bit (for float16;
    None for bfloat16, Note [wide values of eager tensors]).  `own` and `out` as for
    `round_to_float16`; with `own`, `wide` is `a`."""
    a = np.asarray(a)
    if dtype == _F16 and a.size >= _SMALL:
        return _round_float16(a, own, out, bits=True, wide=True)
    bits = round_to(a, dtype, out=out)
    return bits, (to_float32(bits) if dtype == _F16 else None)


# -- half kernels ----------------------------------------------------------------------

class HalfKernel:
    """An op's kernel for float16 and bfloat16 inputs (`@op(..., half=factory)`, the factories
    below).  Called, it takes and returns arrays of the half dtype.  `wide` is the op's float32
    kernel; plans run it on wide values (Note [half precision in plans]).  `exact`: on half
    values it gives half values (it selects or moves them), so its results need no rounding.
    `eager`: None, or for a one-output op run eagerly, `eager(inputs, values, attrs) ->
    (result, wide)`, the kernel on the tensors `inputs` (arrays `values`) taking their wide
    values where they have them, and giving its result's, or None (Note [wide values of eager
    tensors])."""

    __slots__ = ("narrow", "wide", "exact", "eager", "__name__", "__qualname__")

    def __init__(self, narrow, wide, exact, eager=None):
        self.narrow = narrow
        self.wide = wide
        self.exact = exact
        self.eager = eager
        self.__name__ = self.__qualname__ = f"{wide.__name__}_half"

    def __call__(self, *args, **attrs):
        return self.narrow(*args, **attrs)


def _wide_of(t, dtype):
    """The wide value of the eager tensor `t` when it has one and is of the half `dtype`, else None."""
    wide = getattr(t, "_wide", None)
    return wide if wide is not None and t._value.dtype == dtype else None


def in_float32(kernel):
    """`half=in_float32`: the op computes half-precision arguments in float32, rounding each
    result once."""
    def narrow(*args, **attrs):
        return _in_float32(kernel, args[0].dtype, args, attrs)

    def eager(inputs, values, attrs):
        dtype = values[0].dtype
        args, small = list(values), True
        for i, t in enumerate(inputs):
            if args[i].size >= _SMALL:
                small = False
                wide = _wide_of(t, dtype)
                if wide is not None:
                    args[i] = wide
        if small:                       # widening again costs less than keeping a wide value
            return _in_float32(kernel, dtype, args, attrs), None
        return _in_float32(kernel, dtype, args, attrs, both=True)
    return HalfKernel(narrow, kernel, exact=False, eager=eager)


def in_float32_ufunc(ufunc):
    """`half=in_float32_ufunc(ufunc)`: `in_float32` for an op whose kernel is `ufunc`, which
    computes into the float32 copy of an input when there is one of the result's shape."""
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


def _in_float32(kernel, dtype, args, attrs, wide_out=False, both=False):
    """`kernel` on `args` whose arrays of the half `dtype` are converted to float32 (float32
    ones, wide values, pass as they are); its float32 results rounded to `dtype`, or kept
    wide with `wide_out`, or `(rounded, wide)` with `both` (one result; wide None when it is
    not float32).  The kernel writes only into the copies made here (and the result it made),
    never into arguments that come float32."""
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
            return (out, None) if both else out
        buffer[...] = out
        return buffer
    # The result may be overwritten when it is one of the copies or shares no memory with the
    # arguments.
    own = type(out) is np.ndarray and (any(out is t for t in temps) or not any(
        np.may_share_memory(out, a) for a in args if isinstance(a, np.ndarray)))
    if both:
        return round_both(out, dtype, own)
    if wide_out:
        return round_wide(out, dtype, own)
    return round_to(out, dtype, own, out=buffer)


def update(ufunc, bits, wide, delta, delta_wide, in_place):
    """`ufunc(variable, delta)` for a half variable (`Variable._update`), computed in float32:
    `(bits, wide)`, its new value and that value's wide value.

    `bits` is the variable's array and `wide` its wide value or None; `delta` is in the half
    dtype (its wide value `delta_wide`, or None) or float32 (a plan's wide value).  With
    `in_place` nothing else holds `bits` or `wide`: the sum goes into `wide` and the new value
    into `bits` (Note [wide values of eager tensors])."""
    dtype = bits.dtype
    x = wide if wide is not None else to_float32(bits)     # the copy may be overwritten
    own = in_place or wide is None
    d = delta_wide if delta_wide is not None else to_float32(delta) if delta.dtype == dtype else delta
    out = ufunc(x, d, out=x) if own and np.shape(d) == np.shape(x) else ufunc(x, d)
    return round_both(out, dtype, own=True, out=bits if in_place else None)


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
    rest, NaN included, stays; `kernel` (float32) for arrays holding a negative NaN.  Eagerly,
    the same on the int32 view of x's wide value gives the result's."""
    def computes(x):                    # a negative NaN: max keeps it
        return x.size and x.view(np.uint16).max() > 0x8000 | _POS_INF[x.dtype]

    def relu_bits(x):
        if computes(x):
            return _in_float32(kernel, x.dtype, (x,), {})
        return _clip(x.view(np.int16), np.int16(0), np.int16(0x7FFF)).view(x.dtype)

    def eager(inputs, values, attrs):
        x = values[0]
        wide = _wide_of(inputs[0], x.dtype)
        if computes(x):
            return _in_float32(kernel, x.dtype, (x if wide is None else wide,), {}, both=True)
        out = _clip(x.view(np.int16), np.int16(0), np.int16(0x7FFF)).view(x.dtype)
        return out, None if wide is None else _clip(wide.view(_I32), _I32(0), _I32(0x7FFFFFFF)).view(_F32)
    return HalfKernel(relu_bits, kernel, exact=True, eager=eager)


def relu_grad(kernel):
    """`half=relu_grad`: dy * (y > 0) on the bits: dy where y > 0, else 0.0 with dy's sign;
    `kernel` (float32) when dy holds inf or NaN (inf * 0 is NaN) or y holds NaN.  Eagerly, with
    both wide values at hand, the result's is dy * (y > 0) (exact: dy times 1 or 0)."""
    def computes(dy, y):
        inf = _POS_INF[dy.dtype]
        return (dy.size and _has(dy, inf, 0x8000 | inf)) or (y.size and _has(y, inf + 1, 0x8000 | inf + 1))

    def select(dy, y):
        keep = _clip(y.view(np.int16), np.int16(0), np.int16(1))      # 1 where y > 0 (bits > +0.0)
        keep *= np.int16(0x7FFF)
        keep |= np.int16(-0x8000)                                       # and the sign bit everywhere
        return np.bitwise_and(dy.view(np.int16), keep).view(dy.dtype)

    def relu_grad_bits(dy, y):
        if computes(dy, y):
            return _in_float32(kernel, dy.dtype, (dy, y), {})
        return select(dy, y)

    def eager(inputs, values, attrs):
        dy, y = values
        dy_wide, y_wide = _wide_of(inputs[0], dy.dtype), _wide_of(inputs[1], dy.dtype)
        if computes(dy, y):
            return _in_float32(kernel, dy.dtype, (dy if dy_wide is None else dy_wide,
                                                  y if y_wide is None else y_wide), {}, both=True)
        if dy_wide is None or y_wide is None:
            return select(dy, y), None
        wide = np.greater(y_wide, np.float32(0)).view(np.uint8).astype(_F32)
        wide *= dy_wide
        return select(dy, y), wide
    return HalfKernel(relu_grad_bits, kernel, exact=True, eager=eager)
