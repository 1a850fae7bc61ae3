"""Half precision computed in float32 (ops/half.py, Note [half precision]).

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
from tapeflow.ops import half

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
