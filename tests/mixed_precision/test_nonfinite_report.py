"""Why a loss-scaled step was skipped (a tapeflow addition, so expected-value tests): the count
of rejected rounds and the op located, eagerly and inside tf.function, with the line of this
file that created the op."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.eager.tape import Tape
from tapeflow.mixed_precision.nonfinite import NonFiniteReport, SiteTape

M = tf.mixed_precision.experimental
F16 = tf.float16


def _line(marker):
    """`path:line` of the line of this file holding `# <marker>`."""
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return f"{__file__}:{number}"
    raise AssertionError(marker)


def _modes(fn):
    return pytest.mark.parametrize("in_function", [False, True], ids=["eager", "tf.function"])(fn)


def _exp_step(scale, w, in_function):
    def step(x):
        with M.LossScaleGradientTape(scale) as tape:
            y = tf.exp(w * x)  # EXP
        return tape.gradient(y, w), tape
    return tf.function(lambda x: step(x)[0]) if in_function else (lambda x: step(x)[0])


@_modes
def test_an_overflowing_gradient_names_its_op_and_line(in_function):
    scale = M.DynamicLossScale()                      # 2**15
    w = tf.Variable(np.float16(10.0), name="w")
    step = _exp_step(scale, w, in_function)
    # d/dw exp(w x) at w=10, x=1: e^10 = 22032 in float16; times 2**15 .. 4 it overflows in Exp's gradient.
    assert float(step(tf.constant(1.0, F16))) == 22032.0
    assert float(scale()) == 2.0
    assert scale.skipped_steps == 14
    report = scale.last_nonfinite
    assert report == NonFiniteReport(op_type="Exp", op_name="Exp", source=_line("EXP"), cause="backward",
                                     dtype="float16", loss_scale=4.0, step=None, variable="w:0")
    assert str(report) == (f"a step was skipped at loss scale 4: the gradient of w:0 is not finite; first float16 "
                           f"inf/NaN: in the gradient of Exp 'Exp' created at {_line('EXP')}")


@_modes
def test_counting_across_steps(in_function):
    scale = M.DynamicLossScale(increment_period=1)   # each good step doubles the scale
    w = tf.Variable(np.float16(10.0), name="w")
    step = _exp_step(scale, w, in_function)
    step(tf.constant(1.0, F16))                      # 2**15 .. 4 rejected, 2 accepted (then 4)
    first = scale.last_nonfinite
    assert scale.skipped_steps == 14 and float(scale()) == 4.0
    np.testing.assert_allclose(float(step(tf.constant(0.5, F16))), 0.5 * np.exp(5.0), rtol=1e-3)
    assert scale.skipped_steps == 14 and scale.last_nonfinite is first     # a finite step counts nothing
    assert float(scale()) == 8.0
    assert float(step(tf.constant(1.0, F16))) == 22032.0                   # 8 and 4 rejected, 2 accepted
    assert scale.skipped_steps == 16 and float(scale()) == 4.0
    assert scale.last_nonfinite == first._replace(loss_scale=4.0) and scale.last_nonfinite is not first


@_modes
def test_finite_steps_report_nothing(in_function):
    scale = M.DynamicLossScale(8.0)
    w = tf.Variable(np.float16(1.0), name="w")
    step = _exp_step(scale, w, in_function)
    for x in (1.0, 2.0, 0.5):
        step(tf.constant(x, F16))
    assert scale.skipped_steps == 0 and scale.last_nonfinite is None and float(scale()) == 8.0


@_modes
def test_a_forward_overflow_names_the_op_whose_output_is_inf(in_function):
    scale = M.DynamicLossScale()

    def grad(x):
        with M.LossScaleGradientTape(scale) as tape:
            tape.watch(x)
            e = tf.exp(x)  # FORWARD
            y = tf.reduce_sum(e * tf.constant(0.5, F16))
        return tape.gradient(y, x)
    grad = tf.function(grad) if in_function else grad
    dx = grad(tf.constant([12.0, 1.0], F16)).numpy()           # e^12 overflows float16
    assert np.isinf(dx[0]) and dx[1] == np.float16(0.5 * np.e)
    assert float(scale()) == 1.0 and scale.skipped_steps == 15   # every round from 2**15 down to 2
    report = scale.last_nonfinite
    assert (report.op_type, report.cause, report.source, report.loss_scale) == ("Exp", "forward", _line("FORWARD"), 2.0)


@_modes
def test_a_non_finite_input_is_named(in_function):
    scale = M.DynamicLossScale(4.0)

    def grad(w):
        c = tf.constant([np.inf, 1.0], F16)
        with M.LossScaleGradientTape(scale) as tape:
            tape.watch(w)
            y = tf.reduce_sum(c * w)  # INPUT
        return tape.gradient(y, w)
    grad = tf.function(grad) if in_function else grad
    assert np.isinf(grad(tf.constant([1.0, 1.0], F16)).numpy()[0])
    report = scale.last_nonfinite
    assert (report.op_type, report.cause, report.source) == ("Mul", "input", _line("INPUT"))
    assert scale.skipped_steps == 2                                  # at 4 and at 2


@_modes
def test_a_matmul_of_large_values_in_a_layer(in_function):
    scale = M.DynamicLossScale(2.0 ** 12)
    kernel = tf.Variable(np.full((64, 2), 0.01, np.float16), name="dense/kernel")

    def grad(a):
        with M.LossScaleGradientTape(scale) as tape:
            h = tf.matmul(a, kernel)  # MATMUL
            y = tf.reduce_sum(tf.cast(h, tf.float32))
        return tape.gradient(y, kernel)
    grad = tf.function(grad) if in_function else grad
    # d/dkernel = a^T ones = 200: times 2**12 .. 512 it overflows float16 in MatMul's gradient.
    assert grad(tf.constant(np.full((1, 64), 200.0, np.float16))).numpy().tolist() == [[200.0, 200.0]] * 64
    assert scale.skipped_steps == 4 and float(scale()) == 256.0
    report = scale.last_nonfinite
    assert "MatMul" in report.op_type and report.cause == "backward" and report.source == _line("MATMUL")
    assert (report.dtype, report.loss_scale, report.variable) == ("float16", 512.0, "dense/kernel:0")


@_modes
def test_sums_and_seeds_that_overflow(in_function):
    scale = M.DynamicLossScale(2.0 ** 17)

    def grad(x):
        with M.LossScaleGradientTape(scale) as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x)
    grad = tf.function(grad) if in_function else grad
    assert float(grad(tf.constant(2.0, F16))) == 4.0
    log = scale.last_nonfinite
    # 2**17 and 2**16 are inf in float16 (the seed); at 2**15 Mul's gradient 2 * 2**15 overflows;
    # at 2**14 each of Mul's two gradients for x is finite (2**15) but their sum is not.
    assert scale.skipped_steps == 4 and float(scale()) == 2.0 ** 13
    assert (log.op_type, log.cause, log.loss_scale) == (None, "sum", 2.0 ** 14)


def test_the_seed_case():
    scale = M.DynamicLossScale(2.0 ** 16)
    x = tf.constant(2.0, F16)
    with M.LossScaleGradientTape(scale, persistent=True) as tape:
        tape.watch(x)
        y = x * 1.0
    tape.gradient(y, x)
    assert scale.skipped_steps == 1
    assert scale.last_nonfinite == NonFiniteReport(None, None, None, "seed", "float16", 65536.0, None, "sources[0]")
    assert "the output gradient times the loss scale overflows float16" in str(scale.last_nonfinite)


def test_a_fixed_scale_rejects_nothing():
    scale = M.FixedLossScale(2.0 ** 15)
    x = tf.constant(8.0, F16)
    with M.LossScaleGradientTape(scale) as tape:
        tape.watch(x)
        y = x * 8.0
    assert np.isinf(float(tape.gradient(y, x)))
    assert tape.skipped_steps == scale.skipped_steps == 0 and tape.last_nonfinite is None


def test_the_tape_shows_its_loss_scale_s_count():
    scale = M.DynamicLossScale(2.0 ** 15)
    x = tf.constant(8.0, F16)
    for expected in (3, 3):                          # 8 * 2**15, 2**14, 2**13 overflow; 2**12 does not
        with M.LossScaleGradientTape(scale) as tape:
            tape.watch(x)
            y = x * 8.0
        tape.gradient(y, x)
        assert tape.skipped_steps == scale.skipped_steps == expected
        assert tape.last_nonfinite is scale.last_nonfinite


def test_only_loss_scale_tapes_keep_creation_sites():
    """Note [creation sites]: ordinary tapes keep the plain Tape, so their hot path is unchanged."""
    x = tf.constant(1.0)
    with tf.GradientTape() as plain, M.LossScaleGradientTape(M.FixedLossScale(2)) as scaled:
        plain.watch(x)
        scaled.watch(x)
        y = x * 3.0  # SITE
    assert float(y) == 3.0 and type(plain._tape) is Tape and type(scaled._tape) is SiteTape
    assert list(scaled._tape.sites.values()) == [(__file__, int(_line("SITE").rsplit(":", 1)[1]))]


def test_sites_are_released_with_their_records():
    x = tf.constant(1.0)
    with M.LossScaleGradientTape(M.FixedLossScale(2), persistent=True) as tape:
        tape.watch(x)
        y = x * 3.0
        z = x * 4.0
        del z                                        # its record dies with it (Note [trace deletion])
    assert len(tape._tape.sites) == len(tape._tape._op_tape) == 1
    assert float(tape.gradient(y, x)) == 3.0


@_modes
def test_a_float16_network(in_function):
    """The usual mixed-precision layout: float32 weights cast to float16 layers, a float32 loss."""
    rng = np.random.default_rng(0)
    w1 = tf.Variable(rng.normal(size=(8, 16)).astype(np.float32), name="w1")
    w2 = tf.Variable(rng.normal(size=(16, 3)).astype(np.float32), name="w2")
    scale = M.DynamicLossScale(2.0 ** 20)

    def grad(x, labels):
        with M.LossScaleGradientTape(scale) as tape:
            h = tf.nn.relu(tf.matmul(tf.cast(x, F16), tf.cast(w1, F16)))  # LAYER1
            logits = tf.matmul(h, tf.cast(w2, F16))
            losses = tf.nn.softmax_cross_entropy_with_logits(labels, tf.cast(logits, tf.float32))
            loss = tf.reduce_mean(losses)
        return tape.gradient(loss, [w1, w2])
    grad = tf.function(grad) if in_function else grad
    g1, g2 = grad(tf.constant(rng.normal(size=(4, 8)).astype(np.float32)), tf.one_hot([0, 1, 2, 1], 3))
    assert np.isfinite(g1.numpy()).all() and np.isfinite(g2.numpy()).all()
    assert scale.skipped_steps == 6 and float(scale()) == 2.0 ** 14          # 2**20 .. 2**15 rejected
    report = scale.last_nonfinite
    assert "MatMul" in report.op_type and report.source == _line("LAYER1")  # the first layer's weight gradient
    assert (report.cause, report.dtype, report.loss_scale, report.variable) == ("backward", "float16", 2.0 ** 15,
                                                                                "w1:0")


@_modes
def test_ops_inside_functions_and_conds_are_reported_as_the_call(in_function):
    @tf.function
    def model(x):
        return tf.exp(x)
    scale = M.DynamicLossScale(8.0)

    def grad(x):
        with M.LossScaleGradientTape(scale) as tape:
            tape.watch(x)
            y = model(x) * 1.0  # CALL
            y = tf.cond(tf.reduce_sum(y) > 0, lambda: y * 2.0, lambda: y)
        return tape.gradient(y, x)
    grad = tf.function(grad) if in_function else grad
    assert np.isinf(float(grad(tf.constant(10.0, F16))))     # 2 * e^10 overflows at every scale down to 2
    report = scale.last_nonfinite
    assert scale.skipped_steps == 3 and report.loss_scale == 2.0
    assert (report.op_type, report.cause, report.source) == ("PartitionedCall", "backward", _line("CALL"))
