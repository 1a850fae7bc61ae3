"""LossScaleGradientTape: scaled targets, unscaled gradients, retries under a dynamic scale,
None/zero conventions, structures, persistence, Jacobians. (TensorFlow 2.21 no longer ships
the tape, so these are expected-value tests.)"""

import numpy as np
import pytest

import tapeflow as tf

M = tf.mixed_precision.experimental
F16 = tf.float16


def _tape(scale, **kwargs):
    return M.LossScaleGradientTape(scale, **kwargs)


@pytest.mark.parametrize("scale", [M.FixedLossScale(1), M.FixedLossScale(2.0 ** 10), M.DynamicLossScale(8.0)])
def test_gradient_is_unchanged_by_the_scale(scale):
    x = tf.constant([1.0, 2.0, 3.0])
    with _tape(scale) as g:
        g.watch(x)
        y = tf.reduce_sum(x * x * x)
    np.testing.assert_allclose(g.gradient(y, x).numpy(), [3.0, 12.0, 27.0])


def test_overflowing_gradients_lower_the_dynamic_scale_until_finite():
    scale = M.DynamicLossScale()                     # 2**15
    x = tf.constant(2.0, F16)
    with _tape(scale) as g:
        g.watch(x)
        y = x * 8.0                                  # 8 * 2**15 overflows float16
    dx = g.gradient(y, x)
    assert dx.dtype == F16 and float(dx) == 8.0
    # 2**15, 2**14, 2**13 overflow (8 * 2**13 = 65536 > 65504); 2**12 is the first finite round.
    assert float(scale()) == 2.0 ** 12 and int(scale._num_good_steps.numpy()) == 1


def test_a_fixed_scale_returns_what_it_gets():
    x = tf.constant(2.0, F16)
    with _tape(M.FixedLossScale(2.0 ** 15)) as g:
        g.watch(x)
        y = x * 8.0
    assert np.isinf(float(g.gradient(y, x)))


def test_retries_stop_at_scale_one():
    scale = M.DynamicLossScale(4.0)
    x = tf.constant(1e4, F16)
    with _tape(scale) as g:
        g.watch(x)
        y = x * x                                    # dy/dx = 2e4 * ... overflows in float16 from the square
        z = y * y
    assert np.isinf(float(g.gradient(z, x)))
    assert float(scale()) == 1.0


def test_underflow_is_recovered_by_scaling():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as plain, _tape(M.FixedLossScale(2.0 ** 15)) as scaled:
        plain.watch(x)
        scaled.watch(x)
        h = tf.cast(x, F16) * tf.cast(x, F16)            # a float16 layer in a float32 model
        y = tf.cast(h, tf.float32) * 1e-8                 # dy/dh = 1e-8 flushes to 0 in float16
    assert float(plain.gradient(y, x)) == 0.0
    np.testing.assert_allclose(float(scaled.gradient(y, x)), 6e-8, rtol=1e-2)


def test_unconnected_sources_keep_none_or_get_zeros():
    x, z = tf.constant(2.0), tf.constant([1.0, 2.0])
    with _tape(M.DynamicLossScale(4.0), persistent=True) as g:
        g.watch([x, z])
        y = x * x
    dx, dz = g.gradient(y, [x, z])
    assert float(dx) == 4.0 and dz is None
    dx, dz = g.gradient(y, [x, z], unconnected_gradients="zero")
    assert float(dx) == 4.0 and dz.numpy().tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        g.gradient(y, x, unconnected_gradients="nonsense")


def test_nested_targets_sources_and_output_gradients():
    x, w = tf.constant(3.0), tf.Variable([1.0, 2.0])
    with _tape(M.DynamicLossScale(16.0)) as g:
        g.watch(x)
        a, b = x * x, w * x
    grads = g.gradient({"a": a, "b": [b]}, {"x": x, "more": (w,)},
                       output_gradients=[tf.constant(2.0), tf.constant([1.0, 10.0])])
    assert float(grads["x"]) == 2 * 6.0 + 1.0 + 20.0
    assert grads["more"][0].numpy().tolist() == [3.0, 30.0]


def test_variables_are_watched_automatically():
    v = tf.Variable(2.0)
    with _tape(M.FixedLossScale(8)) as g:
        y = v * v * v
    assert list(g.watched_variables()) == [v]
    assert float(g.gradient(y, v)) == 12.0


def test_persistence():
    x = tf.constant(2.0)
    with _tape(M.FixedLossScale(4)) as g:
        g.watch(x)
        y = x * x
    assert float(g.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="persistent=True"):
        g.gradient(y, x)
    with _tape(M.FixedLossScale(4), persistent=True) as g:
        g.watch(x)
        y = x * x
    assert float(g.gradient(y, x)) == float(g.gradient(y, x)) == 4.0


def test_gradient_inside_the_context_raises():
    x = tf.constant(2.0)
    with _tape(M.FixedLossScale(4)) as g:
        g.watch(x)
        with pytest.raises(ValueError):
            g.gradient(x * x, x)


def test_a_loss_scale_is_required():
    for bad in (8, "dynamic", None):
        with pytest.raises(ValueError, match="instance of LossScale"):
            M.LossScaleGradientTape(bad)


def test_tf1_graphs_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Eager mode"):
            M.LossScaleGradientTape(M.FixedLossScale(2))


def test_retries_inside_tf_function():
    scale = M.DynamicLossScale(2.0 ** 15, increment_period=1)

    @tf.function
    def grad(a):
        with _tape(scale) as g:
            g.watch(a)
            y = a * a * a * tf.constant(8.0, F16)
        return g.gradient(y, a)
    assert float(grad(tf.constant(3.0, F16))) == 216.0
    # 216 * 256 is the first finite round; that good step (period 1) doubles the scale.
    assert float(scale()) == 512.0 and int(scale._num_good_steps.numpy()) == 0


def test_jacobian_and_batch_jacobian():
    scale = M.DynamicLossScale(2.0 ** 15)
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], F16)
    with _tape(scale, persistent=True) as g:
        g.watch(x)
        y = x * x * 100.0                            # 2**15 * 800 overflows: retried
        s = tf.constant(1.0)
    jac = g.jacobian(y, [x, s])
    assert jac[1] is None
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            want[i, j, i, j] = 200.0 * float(x[i, j])
    np.testing.assert_allclose(jac[0].numpy(), want)
    assert float(scale()) < 2.0 ** 15
    batch_want = np.stack([np.diag(200.0 * x.numpy()[b].astype(np.float64)) for b in range(2)])
    np.testing.assert_allclose(g.batch_jacobian(y, x).numpy(), batch_want)


def test_jacobian_on_a_one_shot_tape():
    x = tf.constant([1.0, 2.0])
    with _tape(M.FixedLossScale(4)) as g:
        g.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="persistent=True"):
        g.jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(g.jacobian(y, x).numpy(), [[2.0, 0.0], [0.0, 4.0]])
    with pytest.raises(RuntimeError):
        g.jacobian(y, x)
