"""Edge-case numerics against TensorFlow (issue 13): size-0 axes, gradients at kinks and at
inf/-inf/NaN, the output kinds of bias_add's gradient and the error classes of sort.

Each program runs with tapeflow and TensorFlow (`differential.same`): values with NaN
placement, None-ness, IndexedSlices versus dense and exception classes.  Where TensorFlow's
answer is an artifact rather than a convention (listed in `DELIBERATE` below), the test pins
tapeflow's own answer and says why.
"""

import numpy as np
import pytest

import tapeflow
from differential import same

inf, nan = np.inf, np.nan

# Deliberate differences: TensorFlow 2.21 is wrong there and tapeflow is right (documented list).
DELIBERATE = {
    "softmax_float32_inf_nan": "TensorFlow's float32 CPU softmax (oneDNN, on by default) gives NaN at some "
                               "positions and 0 at the others for a row holding +inf or NaN, which position "
                               "depending on SIMD lanes; its float64/float16 kernels and its float32 kernel "
                               "without oneDNN give an all-NaN row, as tapeflow does in every dtype.",
    "sort_nan": "TensorFlow sorts with a comparator that is not a strict weak order when NaN is present "
                "(std::sort's result is then unspecified: [3, nan, 1, -inf] sorts to [-inf, 1, 3, nan] or "
                "worse, rows are left unsorted); tapeflow orders NaN as the largest value, as NumPy does.",
    "sort_grad_empty_axis": "TensorFlow's sort/top_k gradient over a size-0 last axis raises "
                            "InvalidArgumentError (a Range with delta 0); the gradient is an empty tensor.",
}


def grad_program(fn, x, dy=None, dtype="float32", function=False):
    """A program: (fn(x), d fn / dx with output gradient dy) for a constant x."""
    def program(tf):
        def run():
            xt = tf.constant(np.asarray(x), dtype=dtype)
            with tf.GradientTape() as tape:
                tape.watch(xt)
                y = fn(tf, xt)
            seed = None if dy is None else tf.constant(np.asarray(dy), dtype=dtype)
            return y, tape.gradient(y, xt, output_gradients=seed)
        return tf.function(run)() if function else run()
    return program


def second_order_program(fn, x, dtype="float32", function=False):
    """A program: (the gradient of fn at x, the gradient of its sum), tape in tape."""
    def program(tf):
        def run():
            xt = tf.constant(np.asarray(x), dtype=dtype)
            with tf.GradientTape() as outer:
                outer.watch(xt)
                with tf.GradientTape() as inner:
                    inner.watch(xt)
                    y = fn(tf, xt)
                g = inner.gradient(y, xt)
            return g, outer.gradient(g, xt)
        return tf.function(run)() if function else run()
    return program


# -- size-0 axes -----------------------------------------------------------------------------

EMPTY_AXES = [((2, 0), -1), ((0,), -1), ((2, 0), 0), ((0, 3), 0), ((3, 0, 2), 1), ((40, 0), -1), ((0, 40), 0)]


@pytest.mark.parametrize("function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("shape,axis", EMPTY_AXES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmax_xent"])
def test_softmax_family_over_empty_axis(name, shape, axis, function):
    fns = {
        "softmax": lambda tf, x: tf.nn.softmax(x, axis=axis),
        "log_softmax": lambda tf, x: tf.nn.log_softmax(x, axis=axis),
        "softmax_xent": lambda tf, x: tf.nn.softmax_cross_entropy_with_logits(labels=tf.ones_like(x), logits=x,
                                                                              axis=axis),
    }
    same(grad_program(fns[name], np.zeros(shape), function=function))
    same(second_order_program(fns[name], np.zeros(shape), dtype="float64"))


@pytest.mark.parametrize("shape,labels", [((2, 0), [0, 0]), ((0, 0), []), ((0, 3), [])])
def test_sparse_softmax_xent_empty(shape, labels):
    # no classes: InvalidArgumentError in both; no rows: empty loss and gradient
    same(grad_program(lambda tf, x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.array(labels, np.int32), logits=x), np.zeros(shape)))


@pytest.mark.parametrize("shape,axis", [((2, 0), -1), ((2, 0), 0), ((0, 3), -1), ((0,), 0)])
def test_axis_ops_over_empty_axes(shape, axis):
    x = np.zeros(shape)
    same(grad_program(lambda tf, x: tf.math.l2_normalize(x, axis=axis), x))
    same(grad_program(lambda tf, x: list(tf.nn.moments(x, axes=[axis])), x))
    same(grad_program(lambda tf, x: tf.reduce_logsumexp(x, axis=axis), x))
    for name in ("cumsum", "cumprod", "cumulative_logsumexp"):
        for exclusive in (False, True):
            for reverse in (False, True):
                same(grad_program(lambda tf, x: getattr(tf.math, name)(x, axis=axis, exclusive=exclusive,
                                                                      reverse=reverse), x))


def test_sort_top_k_over_empty_axes():
    same(lambda tf: [tf.sort(tf.zeros([2, 0])), tf.sort(tf.zeros([0])), tf.argsort(tf.zeros([2, 0])),
                     tf.argsort(tf.zeros([0, 3]), axis=0), tf.math.top_k(tf.zeros([2, 0]), 0)])
    same(grad_program(lambda tf, x: tf.sort(x), np.zeros((0, 3))))           # no rows: TensorFlow agrees
    same(grad_program(lambda tf, x: tf.math.top_k(x, 2).values, np.zeros((0, 3))))
    # DELIBERATE["sort_grad_empty_axis"]: an empty last axis has an empty gradient
    for shape, axis in (((2, 0), -1), ((0,), -1), ((0, 3), 0)):
        x = tapeflow.zeros(shape)
        with tapeflow.GradientTape() as tape:
            tape.watch(x)
            y = tapeflow.sort(x, axis=axis)
        g = tape.gradient(y, x)
        assert g.shape == shape and g.dtype == tapeflow.float32


# -- activations: kinks and non-finite inputs ---------------------------------------------------

SPECIAL = [-inf, -2.0, -1.0, 0.0, 1.0, 6.0, 7.0, inf, nan]
ACTIVATIONS = {
    "relu": lambda tf, x: tf.nn.relu(x),
    "relu6": lambda tf, x: tf.nn.relu6(x),
    "leaky_relu": lambda tf, x: tf.nn.leaky_relu(x),
    "leaky_relu_alpha": lambda tf, x: tf.nn.leaky_relu(x, alpha=0.3),
    "elu": lambda tf, x: tf.nn.elu(x),
    "selu": lambda tf, x: tf.nn.selu(x),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", [1.0, inf, -inf, nan])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradient_at_special_points(name, seed, dtype):
    # selu'(0) and elu'(0) are the right-hand slopes; a NaN input takes the linear slope.  leaky_relu's
    # alpha is TensorFlow's rounded to float32 (tests/test_deliberate_differences.py): 1.5e-8 relative.
    rtol = 1e-7 if name.startswith("leaky_relu") and dtype == "float64" else None
    same(grad_program(ACTIVATIONS[name], SPECIAL, dy=np.full(len(SPECIAL), seed), dtype=dtype), rtol=rtol)


@pytest.mark.parametrize("function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_second_order(name, function):
    # zeros, not None, through relu6 and leaky_relu; 0 at x = 0 for elu and selu
    rtol = 1e-7 if name.startswith("leaky_relu") else None      # alpha: see the test above
    for x in (SPECIAL, [-1.0, -2.0], [7.0, 8.0], [0.0, 6.0]):
        same(second_order_program(ACTIVATIONS[name], x, dtype="float64", function=function), rtol=rtol)


def test_activation_second_order_with_gradients():
    def program(tf):
        @tf.function
        def hess(x):
            return [tf.gradients(tf.gradients(fn(tf, x), x)[0], x)[0] for fn in ACTIVATIONS.values()]
        return hess(tf.constant([-1.0, 0.0, 3.0, 7.0]))
    same(program)


def test_selu_elu_slope_at_zero():
    x = tapeflow.constant([0.0])
    with tapeflow.GradientTape(persistent=True) as tape:
        tape.watch(x)
        ys = tapeflow.nn.selu(x), tapeflow.nn.elu(x)
    np.testing.assert_allclose([float(tape.gradient(y, x)[0]) for y in ys], [1.0507009873554805, 1.0])


# -- softmax with non-finite logits ---------------------------------------------------------------

LOGIT_ROWS = [[1.0, 2.0, 3.0], [inf, 1.0, 2.0], [-inf, 1.0, 2.0], [inf, inf, 1.0], [-inf, -inf, -inf],
              [nan, 1.0, 2.0], [inf, -inf, 0.0], [1e30, -1e30, 0.0], [-inf, -inf, 1.0]]
LOGIT_DY = np.tile([[1.0, 2.0, -0.5]], (len(LOGIT_ROWS), 1))


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_non_finite_logits(name, dtype):
    same(grad_program(lambda tf, x: getattr(tf.nn, name)(x), LOGIT_ROWS, dy=LOGIT_DY, dtype=dtype))
    same(grad_program(lambda tf, x: getattr(tf.nn, name)(x, axis=0), np.transpose(LOGIT_ROWS),
                      dy=np.transpose(LOGIT_DY), dtype=dtype))
    long_rows = np.tile(LOGIT_ROWS, (1, 12))                 # rows of 36 classes (Note [short rows])
    same(grad_program(lambda tf, x: getattr(tf.nn, name)(x), long_rows, dy=np.tile(LOGIT_DY, (1, 12)), dtype=dtype))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_non_finite_float32_matches_float64(name):
    # DELIBERATE["softmax_float32_inf_nan"]: float32 gives TensorFlow's float64 (reference kernel) values
    def program(tf, dtype):
        return grad_program(lambda tf, x: getattr(tf.nn, name)(x), LOGIT_ROWS, dy=LOGIT_DY, dtype=dtype)(tf)
    ours = program(tapeflow, "float32")
    want = program(tapeflow, "float64")
    for a, b in zip(ours, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy().astype(np.float32), rtol=1e-5, atol=1e-6, equal_nan=True)
    same(lambda tf: program(tf, "float64"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropies_non_finite_logits(dtype):
    labels = np.tile([[0.2, 0.3, 0.5]], (len(LOGIT_ROWS), 1))
    same(grad_program(lambda tf, x: tf.nn.softmax_cross_entropy_with_logits(labels=labels.astype(dtype), logits=x),
                      LOGIT_ROWS, dtype=dtype))
    for label in (0, 2):
        same(grad_program(lambda tf, x: tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=np.full(len(LOGIT_ROWS), label, np.int32), logits=x), LOGIT_ROWS, dtype=dtype))


# -- cumulative_logsumexp with inf, -inf and NaN ----------------------------------------------------

SCAN_ROWS = [[1.0, -inf, 2.0, inf, 3.0, nan, 0.0], [-inf, -inf, 1.0, -inf, 2.0, inf, -inf],
             [inf, inf, 1.0, 2.0, -inf, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
             [nan, 1.0, -inf, nan, 2.0, 0.0, 0.0], [1.0, inf, 2.0, inf, -inf, 0.0, 1.0]]
SCAN_DY = (np.arange(42.0).reshape(6, 7) - 10) / 3


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumulative_logsumexp_non_finite(exclusive, reverse, dtype):
    def fn(axis):
        return lambda tf, x: tf.math.cumulative_logsumexp(x, axis=axis, exclusive=exclusive, reverse=reverse)
    same(grad_program(fn(1), SCAN_ROWS, dy=SCAN_DY, dtype=dtype))
    same(grad_program(fn(0), np.transpose(SCAN_ROWS), dy=np.transpose(SCAN_DY), dtype=dtype))


def test_cumulative_logsumexp_non_finite_in_function():
    same(grad_program(lambda tf, x: tf.math.cumulative_logsumexp(x, axis=1, reverse=True), SCAN_ROWS, dy=SCAN_DY,
                      function=True))


# -- sort ------------------------------------------------------------------------------------------

SORT_ROWS = [[3.0, 1.0, -inf, inf, 2.0, 0.0, -0.0, 1.0], [-inf, -inf, 1.0, 1.0, 5.0, 0.0, 2.0, inf]]
SORT_DY = np.arange(16.0).reshape(2, 8) + 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_infinities_ties_and_signed_zeros(direction, dtype):
    same(grad_program(lambda tf, x: tf.sort(x, direction=direction), SORT_ROWS, dy=SORT_DY, dtype=dtype))
    same(grad_program(lambda tf, x: tf.sort(x, axis=0, direction=direction), SORT_ROWS, dy=SORT_DY, dtype=dtype))
    same(lambda tf: tf.argsort(tf.constant(SORT_ROWS, dtype), direction=direction))


def test_sort_nan_is_largest():
    # DELIBERATE["sort_nan"]: NaN sorts last ascending and first descending; the gradient follows it
    x = tapeflow.constant([3.0, nan, 1.0, -inf, nan, 2.0])
    with tapeflow.GradientTape(persistent=True) as tape:
        tape.watch(x)
        up, down = tapeflow.sort(x), tapeflow.sort(x, direction="DESCENDING")
        weights = tapeflow.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        up_loss, down_loss = tapeflow.reduce_sum(up * weights), tapeflow.reduce_sum(down * weights)
    np.testing.assert_array_equal(up.numpy(), [-inf, 1.0, 2.0, 3.0, nan, nan])
    np.testing.assert_array_equal(down.numpy(), [nan, nan, 3.0, 2.0, 1.0, -inf])
    np.testing.assert_array_equal(tapeflow.argsort(x).numpy(), [3, 2, 5, 0, 1, 4])
    np.testing.assert_array_equal(tape.gradient(up_loss, x).numpy(), [4.0, 5.0, 2.0, 1.0, 6.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(down_loss, x).numpy(), [3.0, 1.0, 5.0, 6.0, 2.0, 4.0])


@pytest.mark.parametrize("function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("fn", ["sort", "argsort"])
def test_sort_bad_axis_and_scalar(fn, function):
    # InvalidArgumentError eagerly, ValueError while tracing, as TensorFlow's tf.shape(values)[axis]
    def call(tf, values, axis):
        op = getattr(tf, fn)
        return tf.function(lambda: op(values, axis=axis))() if function else op(values, axis=axis)
    for axis in (2, -3, 5):
        same(lambda tf: call(tf, tf.zeros([2, 4]), axis))
    same(lambda tf: call(tf, tf.zeros([3]), 1))
    same(lambda tf: call(tf, tf.constant(1.0), -1))
    same(lambda tf: call(tf, tf.constant([True, False]), -1))


# -- bias_add: IndexedSlices versus dense ----------------------------------------------------------

BIAS_CASES = {
    "gather_after": lambda tf, v, b: tf.gather(tf.nn.bias_add(v, b), [0, 2]),
    "gather_after_repeated": lambda tf, v, b: tf.gather(tf.nn.bias_add(v, b), [1, 1]) * 2.0,
    "gather_before": lambda tf, v, b: tf.nn.bias_add(tf.gather(v, [0, 2]), b),
    "gather_after_axis1": lambda tf, v, b: tf.gather(tf.nn.bias_add(v, b), [1], axis=1),
    # rank-2 NCHW: eager only, TensorFlow's graph shape function wants rank >= 3 (tapeflow's does not)
    "gather_after_nchw": lambda tf, v, b: tf.gather(tf.nn.bias_add(v, b, data_format="NCHW"), [3, 0]),
    "gather_after_nchw_4d": lambda tf, v, b: tf.gather(
        tf.nn.bias_add(tf.reshape(v, [4, 3, 1, 1]), b, data_format="NCHW"), [3, 0]),
}


@pytest.mark.parametrize("mode", ["eager", "function", "gradients"])
@pytest.mark.parametrize("case", sorted(BIAS_CASES))
def test_bias_add_gradient_kinds(case, mode):
    if case == "gather_after_nchw" and mode != "eager":
        pytest.skip("rank-2 NCHW bias_add: TensorFlow's graph shape function rejects it (see BIAS_CASES)")
    fn = BIAS_CASES[case]

    def program(tf):
        v = tf.Variable(np.arange(12.0, dtype=np.float32).reshape(4, 3))
        b = tf.Variable([1.0, 2.0, 3.0])

        def tape_grads():
            with tf.GradientTape() as tape:
                y = fn(tf, v, b)
            return tape.gradient(y, [v, b])

        def graph_grads():
            x, c = tf.identity(v), tf.identity(b)
            return tf.gradients(fn(tf, x, c), [x, c])
        if mode == "eager":
            return tape_grads()
        return tf.function(tape_grads if mode == "function" else graph_grads)()
    same(program)


def test_bias_add_indexed_slices_second_order():
    def program(tf):
        v = tf.Variable(np.arange(6.0).reshape(3, 2))
        b = tf.Variable(np.array([0.5, -1.0]))
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                y = tf.reduce_sum(tf.gather(tf.nn.bias_add(v, b), [0, 2, 0]) ** 2)
            gv, gb = inner.gradient(y, [v, b])
            total = tf.reduce_sum(tf.convert_to_tensor(gv) ** 2) + tf.reduce_sum(gb)
        return outer.gradient(total, [v, b])
    same(program)
