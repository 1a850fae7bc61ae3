"""Half precision computed in float32 (ops/core/half.py, Note [half precision]).

The conversions are exact (checked against NumPy's casts); ops that TensorFlow
accumulates in float32 give its sums where float16 or bfloat16 accumulation
would saturate, and the scans keep TensorFlow's half-precision accumulation.
Every op row also runs in both half dtypes in the harness (`test_half_precision`).
"""

import warnings

import ml_dtypes
import numpy as np
import pytest

import tapeflow as tf
from differential import same
from tapeflow.ops.core import half

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e6, np.inf, -np.inf, np.nan,
                    6.1035156e-05, 6.0975552e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 8.9406967e-08,
                    1e-30, 1e-45, 2049.0, 2051.0, 0.1, 1.0 / 3.0], np.float32)


def _same_bits(a, b):
    return bool(np.all((a.view(np.uint16) == b.view(np.uint16)) | (np.isnan(a) & np.isnan(b))))


def _reference_float16(x):
    with np.errstate(over="ignore"):
        return x.astype(np.float16)


def test_round_to_float16_is_numpys_rounding():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = (rng.standard_normal(1 << 16) * np.exp2(rng.integers(-30, 20, 1 << 16))).astype(np.float32)
    for x in (np.resize(SPECIAL, 4096), bits, scaled, -scaled):
        assert _same_bits(half.round_to_float16(x), _reference_float16(x))


def test_round_to_keeps_shape_and_layout_of_any_array():
    x = np.random.default_rng(1).standard_normal((64, 96)).astype(np.float32).T      # not C-contiguous
    for a in (x, x[::2], x[0], np.float32(3.3), np.array(2.5, np.float32)):
        got = half.round_to(a, np.dtype(np.float16))
        assert got.shape == np.shape(a) and got.dtype == np.float16
        assert _same_bits(got, _reference_float16(np.asarray(a)))
    assert half.round_to(x, np.dtype(ml_dtypes.bfloat16)).dtype == ml_dtypes.bfloat16


def test_to_float32_is_exact_on_every_float16():
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    got, want = half.to_float32(h), h.astype(np.float32)
    assert got.dtype == np.float32 and got.shape == h.shape
    assert np.all((got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want)))


def test_float16_overflow_gives_inf_without_warnings():
    x = tf.constant(np.full(5000, 1e5, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = tf.cast(x, tf.float16)
        z = tf.matmul(tf.ones([2, 3], tf.float16) * 60000.0, tf.ones([3, 2], tf.float16))
    assert np.all(np.isinf(y.numpy())) and np.all(np.isinf(z.numpy()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_accumulation_like_tensorflow(dtype):
    """4096 ones add up to 4096 where TensorFlow accumulates in float32 (float16 would stop
    at 2048, bfloat16 at 256), and the scans add up in the half type as TensorFlow's do."""
    def program(tf):
        dt = getattr(tf, dtype)
        ones = tf.ones([4096], dt)
        x = tf.ones([1, 1, 4096, 1], dt)
        w = tf.ones([1, 4096, 1, 1], dt)
        return [tf.reduce_sum(ones), tf.reduce_mean(ones * 2.0), tf.matmul(ones[None], ones[:, None]),
                tf.tensordot(ones, ones, 1), tf.nn.conv2d(x, w, 1, "VALID"), tf.nn.l2_loss(ones),
                tf.math.reduce_euclidean_norm(ones), tf.nn.softmax(tf.zeros([4096], dt))[:3],
                tf.math.cumsum(ones)[-1]]
    same(program)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mlp_step_in_half_precision(dtype):
    """A dense layer's training step, eagerly and in tf.function (where activations may be
    computed into dying buffers), gives TensorFlow's loss, gradients and updated weights."""
    def program(tf):
        dt = getattr(tf, dtype)
        rng = np.random.default_rng(0)
        x = tf.constant(rng.standard_normal((64, 32)), dt)
        w = tf.Variable(tf.constant(rng.standard_normal((32, 16)) * 0.2, dt))
        b = tf.Variable(tf.zeros([16], dt))
        labels = tf.constant(rng.integers(0, 16, 64))

        def step():
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(x, w) + b)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(gw * 0.5)
            b.assign_sub(gb * 0.5)
            return loss, gw, gb

        eager = step()
        traced = tf.function(step)()
        return eager, traced, w.read_value(), b.read_value()
    tol = 1e-2 if dtype == "float16" else 5e-2
    same(program, rtol=tol, atol=tol)


# -- buffer reuse, wide values, bit kernels, dispatch and plans --------------------------

def _values(seed=2, n=1 << 16):
    """float32 values across float16's range and beyond, with its special cases."""
    rng = np.random.default_rng(seed)
    scaled = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 20, n))).astype(np.float32)
    bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([np.resize(SPECIAL, 4096), -np.resize(SPECIAL, 4096), scaled, bits])


def _same_float32_bits(a, b):
    return a.dtype == b.dtype == np.float32 and bool(
        np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


def test_round_to_float16_may_reuse_its_input_and_an_output():
    x = _values().reshape(-1, 64)
    want = _reference_float16(x)
    kept = x.copy()
    assert _same_bits(half.round_to_float16(x.copy(), own=True), want)
    assert _same_bits(half.round_to_float16(x), want) and _same_float32_bits(x, kept)     # not own: untouched
    out = np.empty(x.T.shape, np.float16, order="F").T                 # any layout
    assert half.round_to_float16(x.T.T, out=out) is out and _same_bits(out, want)
    assert _same_bits(half.round_to_float16(np.asfortranarray(x), own=True), want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_round_wide_keeps_the_rounded_values_in_float32(dtype):
    x = _values()
    dt = np.dtype(np.float16) if dtype == "float16" else np.dtype(ml_dtypes.bfloat16)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(dt).astype(np.float32)
    for own in (False, True):
        assert _same_float32_bits(half.round_wide(x.copy(), dt, own=own), want)
    assert _same_float32_bits(half.round_wide(x[:100], dt), want[:100])          # below the bits path


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_relu_and_relu_grad_half_kernels_give_the_float32_kernels_rounded(dtype):
    """The bit kernels select, and agree bit for bit with computing in float32 and rounding,
    for every special value (NaN, +-inf, -0.0 and subnormals take their fallback when needed)."""
    from tapeflow.ops import nn_ops
    relu, relu_grad = nn_ops._relu, nn_ops._relu_grad_op
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore", invalid="ignore"):
        base = np.concatenate([SPECIAL, -SPECIAL, rng.standard_normal(2000).astype(np.float32)])
        cases = [base, base[np.isfinite(base)], base[~np.isnan(base)], np.abs(base)]
        for x in cases:
            x = x.astype(dtype)
            want = half.round_to(relu.kernel(x.astype(np.float32)), x.dtype)
            got = relu.half(x)
            assert got.dtype == x.dtype and _same_bits(got, want)
            for dy in (rng.permutation(x), rng.standard_normal(x.size).astype(dtype)):
                want = half.round_to(relu_grad.kernel(dy.astype(np.float32), x.astype(np.float32)), x.dtype)
                got = relu_grad.half(dy, x)
                assert got.dtype == x.dtype and _same_bits(got, want)


def test_half_kernels_cost_float32_nothing_and_keep_the_dtype_errors():
    """Declared half kernels take float16 and bfloat16 out of the kernel's `allowed` dtypes
    (the float32 dispatch never looks at them); a dtype the op refuses still names them."""
    from tapeflow.ops import math_ops
    mul = math_ops.multiply
    f16, bf16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
    assert f16 not in mul.allowed and mul.half_dtypes == {f16, bf16}
    assert mul.kernel_for(np.dtype(np.float32)) is mul.kernel and mul.kernel_for(f16) is mul.half
    with pytest.raises(tf.errors.InvalidArgumentError, match="bfloat16.*float16"):
        tf.math.multiply(tf.constant([True]), tf.constant([False]))
    with pytest.raises(TypeError, match="bfloat16.*float16"):
        tf.function(lambda: tf.math.multiply(tf.constant([True]), tf.constant([False])))()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_plans_keep_half_values_wide_and_give_the_eager_numbers(dtype):
    """Note [half precision in plans]: a tf.function gives, bit for bit, what the same code
    gives eagerly: values read only by half kernels stay float32 inside the plan (with a
    captured constant widened once), fetched ones come out in the half dtype, overflow
    still gives inf and NaN stays NaN."""
    dt = getattr(tf, dtype)
    rng = np.random.default_rng(4)
    x = tf.constant(rng.standard_normal((64, 32)) * 30.0, dt)
    k = tf.constant(rng.standard_normal((32, 16)), dt)              # captured: widened when the plan is built
    w = tf.Variable(tf.constant(rng.standard_normal((32, 16)), dt))
    big = tf.constant(np.full(16, 6e4 if dtype == "float16" else 3e38), dt)

    def step(x):
        with tf.GradientTape() as tape:
            z = tf.matmul(x, w) + tf.matmul(x, k)
            h = tf.nn.relu(z)
            loss = tf.reduce_mean(h * h)
        g = tape.gradient(loss, w)
        w.assign_sub(g * 0.01)
        over = (h + big) * 2.0                                       # inf where it overflows
        nan = tf.nn.relu(over - over) * 1.0                          # inf - inf: NaN through relu
        return z, loss, g, over, nan, tf.reduce_sum(z)

    w0 = w.numpy()
    eager = [t.numpy() for t in step(x)]
    w_eager = w.numpy()
    w.assign(w0)
    traced = [t.numpy() for t in tf.function(step)(x)]
    assert all(_same_bits(a, b) for a, b in zip(eager, traced, strict=True))
    assert _same_bits(w.numpy(), w_eager)
    assert np.isinf(eager[3].astype(np.float32)).any() and np.isnan(eager[4].astype(np.float32)).any()
    assert {t.dtype for t in eager} == {np.dtype(dt.as_numpy_dtype)}


def test_plans_run_half_steps_on_wide_values():
    """The plan of a float16 layer leaves matmul -> add -> relu -> sum wide between them."""
    x = tf.constant(np.ones((8, 4)), tf.float16)
    w = tf.Variable(tf.ones([4, 3], tf.float16))

    @tf.function
    def f(x):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w) + 1.0))
    concrete = f.get_concrete_function(x)
    assert float(f(x)) == 8 * 3 * 5.0
    steps = {step[-1].type: step[0] for step in concrete._plan._steps}
    assert all(not isinstance(steps[t], half.HalfKernel) for t in ("BatchMatMulV2", "AddV2", "Relu", "Sum"))


def test_rounding_work_arrays_are_per_thread():
    """Note [work arrays]: threads rounding at once (a MirroredStrategy's replicas) each get
    their own work arrays and exact results."""
    import concurrent.futures
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal(50_000 + 1000 * k) * 10.0 ** rng.integers(-6, 4)).astype(np.float32) for k in range(8)]

    def both(x):
        for _ in range(20):
            narrow, wide = half.round_to_float16(x), half.round_wide(x, np.dtype(np.float16))
        return narrow, wide
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(both, xs))
    for x, (narrow, wide) in zip(xs, results, strict=True):
        assert _same_bits(narrow, _reference_float16(x))
        assert _same_float32_bits(wide, _reference_float16(x).astype(np.float32))
