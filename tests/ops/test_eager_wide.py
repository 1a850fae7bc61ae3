"""Eager float16 tensors keep their float32 values (Note [wide values of eager tensors] in
ops/core/half.py).

The kept value must be, bit for bit, the float16 value widened; kernels read it instead of
widening, so the numbers must be those of a run that keeps none and of the compiled plan;
a variable's kept value must follow every write; and no kernel may write into one.
"""

import weakref

import ml_dtypes
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import op_def
from tapeflow.ops.core import half

F16 = np.dtype(np.float16)


def _bits(a):
    return np.asarray(a).view(np.uint16)


def _same32(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return (a.dtype == b.dtype == np.float32 and a.shape == b.shape
            and bool(np.all(a.view(np.uint32) == b.view(np.uint32))))


def _canonical(h):
    """float16 bits with every NaN as round_to_float16 makes it: its sign and 0x7E00."""
    bits = _bits(h)
    nan = (bits & 0x7C00 == 0x7C00) & (bits & 0x03FF != 0)
    return np.where(nan, (bits & 0x8000) | 0x7E00, bits).astype(np.uint16)


def _wide_ok(t):
    """`t` keeps its widened value exactly (a float16 tensor) or keeps none."""
    wide = getattr(t, "_wide", None)
    return wide is None or _same32(wide, half.to_float32(np.asarray(t._value)))


# -- the conversion --------------------------------------------------------------------

@pytest.mark.parametrize("size", [65536, 100])          # the bit steps, and the plain casts below _SMALL
def test_bits_from_wide_values_on_every_float16(size):
    """Rounding a float16 value given in float32 gives its bits back (a NaN the quiet NaN
    round_to_float16 makes, with its sign) and, as the wide value, the same float32."""
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    for start in range(0, 65536, size):
        h = every[start:start + size]
        w = half.to_float32(h)
        for own in (False, True):
            bits, wide = half.round_both(w.copy(), F16, own=own)
            assert bits.dtype == F16 and np.all(_bits(bits) == (_canonical(h) if size >= half._SMALL else _bits(h)))
            assert _same32(wide, half.to_float32(bits))
    signs = _bits(half.round_both(half.to_float32(every), F16)[0]) >> 15
    assert np.all(signs == _bits(every) >> 15)                  # -0.0, -inf and negative NaNs included


def test_round_both_is_round_to_then_to_float32():
    """On float32 values of every kind (random bit patterns, every pattern of the top 24 bits,
    float16's boundaries), in blocks and not, in place or not, into an output or not: the
    bits are NumPy's cast's and the wide value is those bits widened."""
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e6, np.inf, -np.inf, np.nan, -np.nan,
                        6.1035156e-05, 5.9604645e-08, 2.9802322e-08, -2.9802322e-08, 2.9802326e-08, 1e-45,
                        32768.0, 2049.0], np.float32)
    top = (np.arange(1 << 24, dtype=np.uint32) << 8 | rng.integers(0, 256, 1 << 24, dtype=np.uint32)).view(np.float32)
    scaled = (rng.standard_normal(1 << 18) * np.exp2(rng.integers(-30, 20, 1 << 18))).astype(np.float32)
    cases = [top, scaled, np.resize(special, 5000), scaled[:3000].reshape(60, 50).T, special]
    for x in cases:
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(np.float16)
        for own, out in ((False, None), (True, None), (False, np.empty(x.shape, np.float16))):
            bits, wide = half.round_both(x.copy() if own else x, F16, own=own, out=out)
            assert out is None or bits is out
            assert np.all((_bits(bits) == _bits(want)) | (np.isnan(bits) & np.isnan(want)))
            assert np.all(_bits(bits) >> 15 == _bits(want) >> 15)
            assert _same32(wide, half.to_float32(bits))
        assert np.all(_bits(half.round_to_float16(x)) == _bits(half.round_both(x, F16)[0]))


# -- eager tensors ---------------------------------------------------------------------

@pytest.fixture
def without_wide_values(monkeypatch):
    """Runs half kernels as they ran before wide values: every argument widened, no result
    or variable keeping one."""
    def run():
        for op_ in op_def._OPS.values():
            if op_.half is not None and op_.half.eager is not None:
                monkeypatch.setattr(op_.half, "eager", None)
        update = half.update
        monkeypatch.setattr(half, "update", lambda ufunc, bits, wide, delta, delta_wide, in_place: (
            update(ufunc, bits, None, delta, None, in_place)[0], None))
    return run


def _mlp(dtype, steps=3):
    """A float16 MLP training run: losses, gradients and final weights (its own variables)."""
    rng = np.random.default_rng(7)
    x = tf.constant(rng.standard_normal((64, 48)), dtype)
    labels = tf.constant(rng.integers(0, 10, 64))
    params = [tf.Variable(tf.constant(rng.standard_normal(s) * 0.3, dtype))
              for s in ((48, 64), (64,), (64, 10), (10,))]

    def step():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, params[0]) + params[1])
            logits = tf.matmul(h, params[2]) + params[3]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            loss = loss + 1e-3 * tf.reduce_sum(tf.nn.softmax(logits) * logits)
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.assign_sub(0.05 * g)
        return [loss, h, logits] + grads
    return params, step


def _run(step, params, steps=3):
    out = []
    for _ in range(steps):
        out += [np.asarray(t._value) for t in step()]
    return out + [p.numpy() for p in params]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_eager_numbers_are_those_without_wide_values_and_of_plans(dtype, without_wide_values):
    """Training steps give, bit for bit, the numbers of the same steps run with no wide values
    and of the same steps traced by tf.function."""
    dt = getattr(tf, dtype)
    params, step = _mlp(dt)
    eager = _run(step, params)
    assert all(_wide_ok(p.value()) for p in params)
    params, step = _mlp(dt)
    traced = _run(tf.function(step), params)
    without_wide_values()
    params, step = _mlp(dt)
    plain = _run(step, params)
    for a, b, c in zip(eager, traced, plain, strict=True):
        assert a.dtype == b.dtype == c.dtype == np.dtype(dt.as_numpy_dtype)
        assert np.array_equal(_bits(a), _bits(b)) and np.array_equal(_bits(a), _bits(c))


def test_results_keep_the_widened_value_and_bfloat16_and_float32_none():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((40, 30)) * 100, tf.float16)
    w = tf.constant(rng.standard_normal((30, 20)), tf.float16)
    with tf.GradientTape() as tape:
        tape.watch(w)
        z = tf.matmul(x, w)
        h = tf.nn.relu(z + 1.0)
        loss = tf.reduce_sum(h * h)
    dw = tape.gradient(loss, w)
    over = (h + 65000.0) * 2.0                                   # inf where it overflows
    results = [z, h, loss, dw, over, tf.nn.relu(over - over), tf.reduce_mean(x, axis=0), tf.nn.softmax(x)]
    assert all(getattr(t, "_wide", None) is not None for t in results)
    assert all(_wide_ok(t) for t in results)
    assert np.isinf(over.numpy().astype(np.float32)).any() and np.isnan(results[5].numpy().astype(np.float32)).any()
    for dtype in (tf.bfloat16, tf.float32):
        y = tf.matmul(tf.cast(x, dtype), tf.cast(w, dtype)) + 1.0
        with pytest.raises(AttributeError):
            y._wide


def test_kernels_never_write_into_a_kept_value():
    """An argument's kept float32 value is the kernels' input, never their output: the same
    tensor twice in an elementwise op, in a matmul, in kernels that shift a copy in place."""
    rng = np.random.default_rng(2)
    x = tf.constant(rng.standard_normal((300, 300)), tf.float16) * 1.0
    kept, bits = x._wide.copy(), x.numpy()
    outs = [x * x, x + x, x - x, x / x, tf.matmul(x, x), tf.nn.log_softmax(x), tf.nn.softmax(x),
            tf.nn.relu(x), tf.reduce_logsumexp(x, axis=1), tf.nn.bias_add(x, x[0])]
    assert _same32(x._wide, kept) and np.array_equal(_bits(x.numpy()), _bits(bits))
    assert all(_wide_ok(t) for t in outs)
    assert np.array_equal(_bits((x - x).numpy()), np.zeros(x.shape, np.uint16))


# -- variables -------------------------------------------------------------------------

def _read_ok(v):
    r = v.value()
    return _wide_ok(r) and np.array_equal(_bits(r.numpy()), _bits(v.numpy()))


def test_updates_keep_the_variables_wide_value_in_place_when_nothing_else_holds_it():
    rng = np.random.default_rng(3)
    v = tf.Variable(tf.constant(rng.standard_normal((50, 40)), tf.float16))
    d = tf.constant(rng.standard_normal((50, 40)) * 0.01, tf.float16) * 1.0      # with a wide value
    want = (v.numpy().astype(np.float32) - d.numpy().astype(np.float32)).astype(np.float16)
    v.assign_sub(d)
    assert v._wide_pair[0] is v._value and np.array_equal(_bits(v.numpy()), _bits(want)) and _read_ok(v)
    bits, wide = (weakref.ref(a) for a in v._wide_pair)       # references that do not count
    v.assign_add(d)                                   # no tensor holds the arrays: updated in place
    assert v._wide_pair[0] is bits() and v._wide_pair[1] is wide() and _read_ok(v)
    read = v.value()                                  # a read holds both: the next update makes new ones
    before, before_wide = read.numpy(), read._wide.copy()
    v.assign_sub(d)
    assert v._value is not read._value and v._wide_pair[1] is not read._wide
    assert np.array_equal(_bits(read.numpy()), _bits(before)) and _same32(read._wide, before_wide)
    assert np.array_equal(_bits(v.numpy()), _bits(want)) and _read_ok(v)


@pytest.mark.parametrize("write", ["assign", "assign_other_variable", "scatter_update", "scatter_nd_add",
                                   "scatter_sub", "tf.function assign_sub"])
def test_reads_after_any_write_see_the_new_value(write):
    """After an update stored the wide value, every other kind of write leaves no stale one:
    reads give the new value, widened exactly, and updates compute from it."""
    rng = np.random.default_rng(4)
    v = tf.Variable(tf.constant(rng.standard_normal((30, 20)), tf.float16))
    other = tf.Variable(tf.constant(rng.standard_normal((30, 20)), tf.float16))
    d = tf.constant(rng.standard_normal((30, 20)) * 0.01, tf.float16) * 1.0
    v.assign_sub(d)
    other.assign_sub(d)
    other_before = other.numpy()
    rows = tf.IndexedSlices(tf.constant(rng.standard_normal((2, 20)), tf.float16), tf.constant([3, 7]))
    if write == "assign":
        v.assign(tf.constant(np.full((30, 20), 0.5), tf.float16))
    elif write == "assign_other_variable":
        v.assign(other)
    elif write == "scatter_update":
        v.scatter_update(rows)
    elif write == "scatter_sub":
        v.scatter_sub(rows)
    elif write == "scatter_nd_add":
        v.scatter_nd_add(tf.constant([[1, 2], [4, 5]]), tf.constant([1.0, 2.0], tf.float16))
    else:
        tf.function(lambda: v.assign_sub(d))()
    expected = v.numpy()
    assert _read_ok(v)
    got = tf.matmul(v, tf.ones([20, 1], tf.float16)).numpy()          # a kernel reading the variable
    assert np.array_equal(_bits(got), _bits(half.round_to(expected.astype(np.float32) @ np.ones((20, 1), np.float32),
                                                           F16)))
    v.assign_sub(d)
    want = half.round_to(expected.astype(np.float32) - d.numpy().astype(np.float32), F16)
    assert np.array_equal(_bits(v.numpy()), _bits(want)) and _read_ok(v)
    assert np.array_equal(_bits(other.numpy()), _bits(other_before)) and _read_ok(other)


def test_small_scalar_and_bfloat16_variables():
    s = tf.Variable(tf.constant(1.5, tf.float16))
    s.assign_sub(tf.constant(0.25, tf.float16) * 1.0)
    assert float(s.numpy()) == 1.25 and _read_ok(s)
    b = tf.Variable(tf.constant(np.linspace(-1, 1, 600), tf.bfloat16))
    b.assign_sub(tf.constant(np.full(600, 0.01), tf.bfloat16) * 1.0)
    assert b._wide_pair is None and getattr(b.value(), "_wide", None) is None
    want = (np.linspace(-1, 1, 600).astype(ml_dtypes.bfloat16).astype(np.float32)
            - np.float32(np.float32(0.01).astype(ml_dtypes.bfloat16))).astype(ml_dtypes.bfloat16)
    assert np.array_equal(_bits(b.numpy()), _bits(want))
