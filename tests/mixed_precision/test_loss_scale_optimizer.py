"""Loss-scale optimizers: Keras's LossScaleOptimizer (Keras 3 and Keras 2 programs, Note [two Keras
APIs]) and TF1's MixedPrecisionLossScaleOptimizer, step by step against expected values and against
TensorFlow 2.21 (Keras 3; tf_keras for Keras 2 programs when installed), eagerly, in tf.function and
in TF1 sessions; and their skipped-step reports."""

import importlib.util

import numpy as np
import pytest

import tapeflow
import tapeflow as tf
from differential import compare, same
from op_harness import tf_module

INF, NAN = float("inf"), float("nan")
MODES = pytest.mark.parametrize("in_function", [False, True], ids=["eager", "tf.function"])


# -- Keras 3: scale_loss, then apply_gradients of the scaled gradients ------------------------------

# (gradient entry of the step, scale after it, counter after it, iterations after it, applied)
# with initial_scale 4, dynamic_growth_steps 2.
KERAS3_STEPS = [
    (1.0, 4.0, 1, 1, True),
    (INF, 2.0, 0, 1, False),      # skipped: scale halved, counter reset, iterations unchanged
    (1.0, 2.0, 1, 2, True),
    (1.0, 4.0, 0, 3, True),       # the second good step in a row doubles the scale
    (NAN, 2.0, 0, 3, False),
    (INF, 1.0, 0, 3, False),
    (INF, 0.5, 0, 3, False),      # Keras 3 has no floor at 1
    (1.0, 0.5, 1, 4, True),
]


@MODES
def test_keras3_steps(in_function):
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5), 4.0, 2)
    w = tf.Variable([1.0, 1.0])

    def step(g):
        opt.apply_gradients([(g, w)])
    step = tf.function(step) if in_function else step
    value = 1.0
    for g, scale, counter, iterations, applied in KERAS3_STEPS:
        before = float(opt.dynamic_scale)
        step(tf.constant([g, 2.0]))
        if applied:
            value -= 0.5 * g / before          # the scaled gradient divided by the step's scale
        assert w.numpy()[0] == np.float32(value)
        assert (float(opt.dynamic_scale), int(opt.step_counter), int(opt.iterations)) == (scale, counter, iterations)
    assert opt.skipped_steps == 4


def test_keras3_scale_loss_dtypes():
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), initial_scale=8.0)
    half = tf.constant(3.0, tf.float16)
    assert opt.scale_loss(half).dtype == tf.float16         # by the Python initial_scale until built
    opt.apply_gradients([(tf.constant(1.0), tf.Variable(1.0))])
    scaled = opt.scale_loss(half)
    assert scaled.dtype == tf.float32 and float(scaled) == 24.0
    assert opt.scale_loss(tf.constant(3.0, tf.float64)).dtype == tf.float64


def _keras3_program(in_function, inner="sgd"):
    """A float16 layer under a float32 loss: the first steps overflow at 2**15."""
    def program(tf):
        inner_opt = (tf.keras.optimizers.SGD(0.1, momentum=0.5) if inner == "sgd"
                     else tf.keras.optimizers.Adam(0.01))
        opt = tf.keras.mixed_precision.LossScaleOptimizer(inner_opt, dynamic_growth_steps=2)
        w = tf.Variable(np.linspace(-1.0, 1.0, 8).reshape(4, 2).astype(np.float32))
        h = tf.Variable(np.float16([0.5, -0.25]))

        def step(x):
            with tf.GradientTape() as tape:
                y = tf.matmul(tf.cast(x, tf.float16), tf.cast(w, tf.float16)) * h
                loss = tf.reduce_sum(tf.cast(y, tf.float32) ** 2)
                scaled = opt.scale_loss(loss)
            grads = tape.gradient(scaled, [w, h])
            opt.apply_gradients(zip(grads, [w, h]))
            return loss
        step = tf.function(step) if in_function else step
        out = []
        for k in range(7):
            x = tf.constant(np.full((3, 4), 2.0 + k, np.float32))
            loss = step(x)
            out.append([loss, tf.identity(w), tf.identity(h), tf.identity(opt.dynamic_scale),
                        tf.identity(opt.step_counter), tf.identity(opt.iterations)])
        return out
    return program


@MODES
@pytest.mark.parametrize("inner", ["sgd", "adam"])
def test_keras3_matches_tensorflow(in_function, inner):
    ours = same(_keras3_program(in_function, inner), rtol=1e-6, atol=1e-6)
    assert float(ours[-1][3]) < 2.0 ** 15                  # some steps overflowed and were skipped


def test_keras3_float16_gradients_are_unscaled_in_float32():
    def program(tf):
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), initial_scale=2.0 ** 10)
        h = tf.Variable(np.float16([1.0, 3.0]))
        opt.apply_gradients([(tf.constant([3e-3, 7.0], tf.float16), h)])   # 3e-3 / 2**10 is subnormal in float16
        return h.numpy()
    same(program, rtol=0, atol=0)


def test_keras3_sparse_gradients_match_tensorflow():
    def program(tf):
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1, momentum=0.5),
                                                          initial_scale=4.0)
        emb = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
        out = []
        for ids in ([0, 2, 2], [1, 3], [0, 0]):
            with tf.GradientTape() as tape:
                loss = opt.scale_loss(tf.reduce_sum(tf.gather(emb, ids) ** 2))
            opt.apply_gradients([(tape.gradient(loss, emb), emb)])
            out.append(tf.identity(emb))
        return out
    same(program, rtol=0, atol=0)


# -- Keras 2: get_scaled_loss, get_unscaled_gradients, apply_gradients of the unscaled ones --------

KERAS2_STEPS = [
    (1.0, 4.0, 1, 1, True),
    (INF, 2.0, 0, 2, False),      # skipped, but Keras 2 counts the iteration
    (1.0, 2.0, 1, 3, True),
    (1.0, 4.0, 0, 4, True),
    (NAN, 2.0, 0, 5, False),
    (INF, 1.0, 0, 6, False),
    (INF, 1.0, 0, 7, False),      # never below 1
    (1.0, 1.0, 1, 8, True),
]


@MODES
def test_keras2_steps(in_function):
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5), True, 4.0, 2)
    w = tf.Variable([1.0, 1.0])

    def step(g):
        with tf.GradientTape() as tape:
            scaled = opt.get_scaled_loss(tf.reduce_sum(w * g))
        (grad,) = opt.get_unscaled_gradients(tape.gradient(scaled, [w]))
        opt.apply_gradients([(grad, w)])
    step = tf.function(step) if in_function else step
    value = 1.0
    for g, scale, counter, iterations, applied in KERAS2_STEPS:
        step(tf.constant([g, 2.0]))
        value -= 0.5 * g if applied else 0.0
        assert w.numpy()[0] == np.float32(value)
        assert (float(opt.loss_scale), int(opt.dynamic_counter), int(opt.iterations)) == (scale, counter, iterations)
    assert opt.dynamic and opt.inner_optimizer.iterations is opt.iterations
    assert opt.skipped_steps == 4


def test_keras2_fixed_scale():
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5), dynamic=False, initial_scale=8)
    assert not opt.dynamic and opt.dynamic_counter is None and opt.dynamic_growth_steps is None
    w = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        scaled = opt.get_scaled_loss(w * 3.0)
    assert float(scaled) == 24.0
    (g,) = opt.get_unscaled_gradients([tape.gradient(scaled, w)])
    opt.apply_gradients([(g, w)])
    assert float(w) == -0.5 and float(opt.loss_scale) == 8.0
    opt.apply_gradients([(tf.constant(INF), w)])             # a fixed scale applies whatever it gets
    assert np.isinf(float(w)) and opt.skipped_steps == 0


def test_keras2_scaled_loss_keeps_the_dtype_and_takes_callables():
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), initial_scale=4.0)
    assert opt.get_scaled_loss(tf.constant(2.0, tf.float16)).dtype == tf.float16
    assert float(opt.get_scaled_loss(lambda: tf.constant(3.0))()) == 12.0
    sparse = tf.IndexedSlices(tf.constant([[8.0]]), tf.constant([1]), tf.constant([3, 1]))
    g, none = opt.get_unscaled_gradients([sparse, None])
    assert isinstance(g, tf.IndexedSlices) and g.values.numpy().tolist() == [[2.0]] and none is None


def _tf_keras():
    if importlib.util.find_spec("tf_keras") is None:
        pytest.skip("tf_keras (TensorFlow's Keras 2) is not installed")
    tf_module()
    import tf_keras
    return tf_keras


def _keras2_program(tf, keras, in_function):
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1, momentum=0.5), initial_scale=8.0,
                                                   dynamic_growth_steps=2)
    v, h = tf.Variable([1.0, 2.0]), tf.Variable(np.float16([1.0, 2.0]))

    def step(g):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * g) + tf.cast(tf.reduce_sum(h * tf.cast(g, tf.float16)), tf.float32)
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, [v, h]))
        opt.apply_gradients(zip(grads, [v, h]))
    step = tf.function(step) if in_function else step
    out = []
    for g in [1.0, INF, 1.0, 1.0, NAN, 1.0, 3e38, INF, INF, INF, INF, 1.0]:
        step(tf.constant([g, 2.0]))
        out.append([v.numpy(), h.numpy(), opt.loss_scale.numpy(), opt.dynamic_counter.numpy(), opt.iterations.numpy()])
    return out


@MODES
def test_keras2_matches_tf_keras(in_function):
    keras2 = _tf_keras()
    theirs = _keras2_program(tf_module(), keras2, in_function)
    ours = _keras2_program(tapeflow, tapeflow.keras, in_function)
    compare(ours, theirs, rtol=0, atol=0)


# -- construction ---------------------------------------------------------------------------

def test_properties_and_namespaces():
    inner = tf.keras.optimizers.SGD(0.25)
    opt = tf.keras.mixed_precision.LossScaleOptimizer(inner)
    assert tf.keras.optimizers.LossScaleOptimizer is tf.keras.mixed_precision.LossScaleOptimizer
    assert opt.inner_optimizer is inner and opt.dynamic and opt.initial_scale == 2.0 ** 15
    assert opt.dynamic_growth_steps == 2000 and float(opt.learning_rate) == 0.25
    opt.learning_rate = 0.5
    assert float(inner.learning_rate) == 0.5
    assert opt.dynamic_counter is opt.step_counter and opt.step_counter.dtype == tf.int64
    assert opt.dynamic_scale.dtype == tf.float32 and float(opt.loss_scale) == 2.0 ** 15
    assert opt.skipped_steps == 0 and opt.last_nonfinite is None
    assert opt.get_config()["inner_optimizer"]["class_name"] == "SGD"


@pytest.mark.parametrize("args, kwargs, error", [
    (("not an optimizer",), {}, TypeError),
    ((), {"dynamic": "yes"}, TypeError),
    ((), {"dynamic": False}, ValueError),                         # no initial_scale
    ((), {"dynamic": False, "initial_scale": 2.0, "dynamic_growth_steps": 3}, ValueError),
    ((), {"clipnorm": 1.0}, ValueError),
])
def test_bad_arguments(args, kwargs, error):
    inner = args[0] if args else tf.keras.optimizers.SGD()
    with pytest.raises(error):
        tf.keras.mixed_precision.LossScaleOptimizer(inner, **kwargs)


def test_cannot_wrap_itself():
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())
    with pytest.raises(TypeError):
        tf.keras.mixed_precision.LossScaleOptimizer(opt)


def test_unknown_argument_matches_tensorflow():
    same(lambda tf: tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), foo=1))


# -- TF1: MixedPrecisionLossScaleOptimizer -------------------------------------------------------

def _v1_program(in_function, loss_scale, optimizer="momentum"):
    def program(tf):
        scale = tf.compat.v1.mixed_precision.DynamicLossScale(8.0, 2, 2.0) if loss_scale == "object" else loss_scale
        inner = (tf.compat.v1.train.MomentumOptimizer(0.1, 0.5) if optimizer == "momentum"
                 else tf.compat.v1.train.AdamOptimizer(0.1))
        opt = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(inner, scale)
        v, step_var = tf.Variable([1.0, 2.0]), tf.Variable(0, dtype=tf.int64)

        def step(g):
            opt.minimize(lambda: tf.reduce_sum(v * g), global_step=step_var, var_list=[v])
            return opt._loss_scale()
        step = tf.function(step) if in_function else step
        return [(tf.identity(v), step(tf.constant([g, 2.0])), tf.identity(step_var))
                for g in [1.0, INF, 1.0, 1.0, NAN, 1.0, 1.0]]
    return program


@MODES
@pytest.mark.parametrize("loss_scale", ["object", "dynamic", 4])
def test_v1_matches_tensorflow(in_function, loss_scale):
    same(_v1_program(in_function, loss_scale), rtol=0, atol=0)


@MODES
def test_v1_adam_matches_tensorflow(in_function):
    same(_v1_program(in_function, "object", "adam"), rtol=1e-6, atol=1e-6)


def test_v1_in_a_session_matches_tensorflow():
    def program(tf):
        with tf.Graph().as_default() as graph:
            x = tf.compat.v1.placeholder(tf.float32, [2])
            v = tf.Variable([1.0, 2.0])
            step_var = tf.compat.v1.train.get_or_create_global_step()
            scale = tf.compat.v1.mixed_precision.DynamicLossScale(8.0, 2, 2.0)
            opt = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(
                tf.compat.v1.train.MomentumOptimizer(0.1, 0.5), scale)
            train = opt.minimize(tf.reduce_sum(v * x), global_step=step_var)
            with tf.compat.v1.Session(graph=graph) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                out = []
                for g in [1.0, INF, 1.0, 1.0, NAN, 1.0]:
                    sess.run(train, {x: [g, 2.0]})
                    out.append(sess.run([v, scale(), step_var]))
                return out, sorted(var.name for var in opt.variables())
    same(program, rtol=0, atol=0)


def test_v1_gradients_are_unscaled():
    def program(tf):
        opt = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(1.0), 128)
        v = tf.Variable([1.0, 2.0])
        return [g for g, _ in opt.compute_gradients(lambda: tf.reduce_sum(v * v * 3.0), var_list=[v])]
    same(program, rtol=0, atol=0)


@pytest.mark.parametrize("loss_scale", [None, "static", [2.0]])
def test_v1_bad_loss_scales_match_tensorflow(loss_scale):
    same(lambda tf: tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(1.0), loss_scale))


def test_v1_needs_a_v1_optimizer():
    same(lambda tf: tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(tf.keras.optimizers.SGD(), 2))


# -- skipped-step reports ----------------------------------------------------------------------

@MODES
def test_keras_optimizer_reports_the_skipped_step(in_function):
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), initial_scale=8.0)
    v = tf.Variable([1.0, 2.0], name="v")
    h = tf.Variable(np.float16([1.0, 2.0]), name="h")

    def step(g):
        opt.apply_gradients([(tf.constant([1.0, 1.0]), v), (tf.cast(g, tf.float16), h)])
    step = tf.function(step) if in_function else step
    for g in [[1.0, 1.0], [1e5, 1.0], [1.0, 1.0], [NAN, 1.0]]:    # 1e5 is inf in float16
        step(tf.constant(g))
    assert opt.skipped_steps == 2
    report = opt.last_nonfinite
    assert (report.op_type, report.variable, report.dtype, report.loss_scale, report.step) == (
        None, "h:0", "float16", 4.0, 2)
    assert str(report) == "step 2 was skipped at loss scale 4: the gradient of h:0 is not finite"


@MODES
def test_v1_optimizer_reports_on_its_loss_scale(in_function):
    scale = tf.compat.v1.mixed_precision.DynamicLossScale(8.0)
    opt = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(0.1), scale)
    v, step_var = tf.Variable([1.0, 2.0], name="v"), tf.Variable(0, dtype=tf.int64)

    def step(g):
        opt.minimize(lambda: tf.reduce_sum(v * g), var_list=[v], global_step=step_var)
    step = tf.function(step) if in_function else step
    for g in [[1.0, 1.0], [INF, 1.0], [INF, 1.0]]:
        step(tf.constant(g))
    assert opt.skipped_steps == scale.skipped_steps == 2
    assert opt.last_nonfinite == scale.last_nonfinite
    assert opt.last_nonfinite[4:] == ("float32", 4.0, 1, "v:0")
