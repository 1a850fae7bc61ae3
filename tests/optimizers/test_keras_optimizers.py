"""tf.keras.optimizers.SGD and Adam, differential against TensorFlow 2.21's Keras 3:
several training steps, dense and sparse (IndexedSlices) gradients, momentum,
Nesterov, amsgrad, float32/float64/float16 variables, eagerly and inside
tf.function; the slots' names and values, iterations, learning rates (floats,
callables, schedules, assignment), configs, warnings and errors."""

import warnings

import numpy as np
import pytest

import tapeflow
from differential import same

# the gradients themselves differ from TensorFlow's by an ulp here and there (tanh, matmul), which a
# few steps amplify where values cancel; test_exact_numbers.py feeds fixed gradients and compares bits
RTOL, ATOL = 1e-5, 1e-6

OPTIMIZERS = {
    "sgd": lambda tf: tf.keras.optimizers.SGD(0.1, name="opt"),
    "sgd_momentum": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.9, name="opt"),
    "sgd_nesterov": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.8, nesterov=True, name="opt"),
    "adam": lambda tf: tf.keras.optimizers.Adam(0.05, name="opt"),
    "adam_betas": lambda tf: tf.keras.optimizers.Adam(0.02, beta_1=0.5, beta_2=0.9, epsilon=1e-3, name="opt"),
    "amsgrad": lambda tf: tf.keras.optimizers.Adam(0.05, amsgrad=True, name="opt"),
}


def _model(tf, dtype):
    emb = tf.Variable(np.linspace(-1.0, 2.0, 15).reshape(5, 3).astype(dtype), name="emb")
    w = tf.Variable(np.array([[0.5], [-1.0], [2.0]], dtype), name="w")
    return emb, w


def _loss(tf, emb, w, ids, sparse):
    rows = tf.gather(emb, ids) if sparse else emb * 1.0
    return tf.reduce_sum(tf.tanh(tf.matmul(rows, w))) + 0.1 * tf.reduce_sum(rows * rows)


def _values(tf, variables):
    """The variables' values as tensors (Keras variables spell their dtype as a string)."""
    return [tf.convert_to_tensor(v) for v in variables]


def _training(make_opt, dtype="float32", sparse=False, in_function=False, steps=4):
    """A program: `steps` updates of a small model, returning the variables, the
    optimizer's variables, their names and the learning rate."""
    def prog(tf):
        emb, w = _model(tf, dtype)
        opt = make_opt(tf)
        batches = [tf.constant(ids) for ids in ([0, 2, 0, 4], [1, 1, 1, 3], [4, 0, 2, 2], [3, 3, 0, 1])]

        def step(ids):
            with tf.GradientTape() as tape:
                loss = _loss(tf, emb, w, ids, sparse)
            grads = tape.gradient(loss, [emb, w])
            kinds.append(isinstance(grads[0], tf.IndexedSlices))
            opt.apply_gradients(zip(grads, [emb, w]))
            return loss

        kinds = []
        if in_function:
            step = tf.function(step)
        losses = [step(batches[i % len(batches)]) for i in range(steps)]
        return (losses, emb, w, _values(tf, opt.variables), [v.name for v in opt.variables],
                _values(tf, [opt.iterations]), sorted(set(kinds)))
    return prog


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_training_steps(name, sparse, in_function):
    result = same(_training(OPTIMIZERS[name], sparse=sparse, in_function=in_function), rtol=RTOL, atol=ATOL)
    assert result[-1] == [sparse]


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name", ["sgd", "sgd_nesterov", "adam", "amsgrad"])
def test_other_dtypes(name, dtype):
    # learning rates and betas pass through float32 first, as in TensorFlow
    tol = 1e-12 if dtype == "float64" else 1e-3
    same(_training(OPTIMIZERS[name], dtype=dtype, sparse=True), rtol=tol, atol=tol)


def test_sgd_sparse_touches_only_gathered_rows():
    emb, w = _model(tapeflow, "float32")
    before = emb.numpy()
    opt = tapeflow.keras.optimizers.SGD(0.1)
    with tapeflow.GradientTape() as tape:
        loss = _loss(tapeflow, emb, w, tapeflow.constant([0, 3, 0]), True)
    opt.apply_gradients(zip(tape.gradient(loss, [emb, w]), [emb, w]))
    np.testing.assert_array_equal(emb.numpy()[[1, 2, 4]], before[[1, 2, 4]])
    assert not np.allclose(emb.numpy()[[0, 3]], before[[0, 3]])


def test_adam_first_step_expected_values():
    # step 1: m = 0.1 g, v = 0.001 g^2, alpha = lr sqrt(0.001) / 0.1, so w -= lr * g / (|g| + eps')
    w = tapeflow.Variable([1.0, -2.0, 0.0])
    opt = tapeflow.keras.optimizers.Adam(0.5)
    opt.apply_gradients([(tapeflow.constant([4.0, -0.25, 0.0]), w)])
    np.testing.assert_allclose(w.numpy(), [0.5, -1.5, 0.0], rtol=1e-5)
    assert int(opt.iterations) == 1 and opt.iterations.dtype == tapeflow.int64


def test_function_steps_many_times_with_one_trace_signature():
    # the first call traces twice, as TensorFlow does when a trace creates variables
    def prog(tf):
        emb, w = _model(tf, "float32")
        opt = tf.keras.optimizers.Adam(0.01)

        @tf.function
        def step(ids):
            with tf.GradientTape() as tape:
                loss = _loss(tf, emb, w, ids, True)
            opt.apply_gradients(zip(tape.gradient(loss, [emb, w]), [emb, w]))
            return loss
        losses = [step(tf.constant([0, 1, 1])) for _ in range(5)]
        return losses, emb, int(opt.iterations), step.experimental_get_tracing_count(), len(opt.variables)
    assert same(prog, rtol=RTOL, atol=ATOL)[2:] == (5, 2, 6)


# -- learning rates ---------------------------------------------------------------------------

LEARNING_RATES = {
    "exponential": lambda tf: tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5),
    "exponential_staircase": lambda tf: tf.keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5, staircase=True),
    "piecewise": lambda tf: tf.keras.optimizers.schedules.PiecewiseConstantDecay([1, 2], [0.1, 0.05, 0.01]),
    "callable": lambda tf: (lambda: 0.03),
}


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("lr", list(LEARNING_RATES))
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_learning_rate_schedules_and_callables(kind, lr, in_function):
    make = lambda tf: getattr(tf.keras.optimizers, kind)(LEARNING_RATES[lr](tf), name="opt")   # noqa: E731
    same(_training(make, sparse=True, in_function=in_function, steps=5), rtol=RTOL, atol=ATOL)


def test_learning_rate_property_and_assignment():
    def prog(tf):
        emb, w = _model(tf, "float32")
        opt = tf.keras.optimizers.SGD(0.1, momentum=0.5, name="opt")
        first = opt.learning_rate
        step = lambda: opt.apply_gradients([(tf.ones_like(w), w)])     # noqa: E731
        step()
        opt.learning_rate = 0.5
        step()
        after = opt.learning_rate
        opt.learning_rate = lambda: 0.25
        step()
        names = [v.name for v in opt.variables]
        schedule = tf.keras.optimizers.SGD(tf.keras.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5), name="s")
        schedule.apply_gradients([(tf.ones_like(w), w)])
        return (tf.convert_to_tensor(first), tf.convert_to_tensor(after), opt.learning_rate, names, w,
                schedule.learning_rate, len(schedule.variables))
    same(prog)


def test_learning_rate_of_a_schedule_is_not_settable():
    def prog(tf):
        opt = tf.keras.optimizers.Adam(tf.keras.optimizers.schedules.PiecewiseConstantDecay([1], [0.1, 0.01]))
        opt.learning_rate = 0.5
    same(prog)


# -- variables, configs ---------------------------------------------------------------------------

def test_variables_before_and_after_build():
    def prog(tf):
        emb, w = _model(tf, "float32")
        out = []
        for opt in (tf.keras.optimizers.SGD(0.1, name="a"), tf.keras.optimizers.SGD(0.1, momentum=0.2, name="b"),
                    tf.keras.optimizers.Adam(name="c"), tf.keras.optimizers.Adam(amsgrad=True, name="d")):
            before = [v.path for v in opt.variables]
            opt.apply_gradients([(tf.ones_like(emb), emb), (None, w)])    # w gets slots too
            out.append((before, [v.path for v in opt.variables], [v.name for v in opt.variables], opt.built))
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(prog)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_get_config_and_from_config(name):
    def prog(tf):
        opt = OPTIMIZERS[name](tf)
        config = opt.get_config()
        again = type(opt).from_config(config)
        return config, again.get_config() == config, type(again).__name__
    same(prog)


def test_config_with_schedule_round_trips():
    def prog(tf):
        s = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 3, 0.5, staircase=True)
        opt = tf.keras.optimizers.SGD(s, momentum=0.5, nesterov=True, name="opt")
        again = tf.keras.optimizers.SGD.from_config(opt.get_config())
        return opt.get_config(), again.get_config(), again.learning_rate
    same(prog)


def test_default_names():
    assert tapeflow.keras.optimizers.SGD().name == "sgd"
    assert tapeflow.keras.optimizers.Adam().get_config()["name"] == "adam"
    assert tapeflow.keras.optimizers.SGD().iterations.path == "sgd/iteration"


def test_constraints_are_applied_after_the_update():
    def prog(tf):
        w = tf.Variable([1.0, -1.0, 3.0], constraint=lambda x: tf.clip_by_value(x, 0.0, 2.0))
        tf.keras.optimizers.SGD(0.5).apply_gradients([(tf.constant([1.0, 1.0, -1.0]), w)])
        return w
    same(prog)


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("extra", [{"clipnorm": 0.5}, {"clipvalue": 0.1}, {"global_clipnorm": 0.3},
                                   {"weight_decay": 0.1}, {"loss_scale_factor": 4.0}],
                         ids=lambda e: next(iter(e)))
def test_base_optimizer_arguments(extra, sparse, in_function):
    make = lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.5, name="opt", **extra)     # noqa: E731
    same(_training(make, sparse=sparse, in_function=in_function, steps=3), rtol=RTOL, atol=ATOL)


# -- warnings and errors --------------------------------------------------------------------------

def test_missing_gradient_warns_with_the_variable_name():
    def prog(tf):
        emb, w = _model(tf, "float32")
        unused = tf.Variable(1.0, name="unused")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tf.keras.optimizers.Adam(0.1).apply_gradients([(None, unused), (tf.ones_like(w), w), (None, emb)])
        return [(c.category.__name__, str(c.message)) for c in caught], w
    same(prog)


BAD_CALLS = {
    "empty_list": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients([]),
    "empty_zip": lambda tf, v: tf.keras.optimizers.Adam(0.1).apply_gradients(zip([], [])),
    "all_none": lambda tf, v: tf.keras.optimizers.Adam(0.1).apply_gradients([(None, v)]),
    "tensor_not_variable": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients(
        [(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0]))]),
    "one_item_pair": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients([(tf.constant([1.0, 2.0]),)]),
    "not_zipped": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients([tf.constant(1.0)]),
    "gradient_shape": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients([(tf.constant([1.0]), v)]),
    "momentum_gradient_shape": lambda tf, v: tf.keras.optimizers.SGD(0.1, momentum=0.5).apply_gradients(
        [(tf.ones([2, 2]), v)]),
    "adam_gradient_shape": lambda tf, v: tf.keras.optimizers.Adam(0.1).apply_gradients([(tf.ones([3]), v)]),
    "int_learning_rate": lambda tf, v: tf.keras.optimizers.SGD(1),
    "tensor_learning_rate": lambda tf, v: tf.keras.optimizers.Adam(tf.constant(0.1)),
    "numpy_float32_learning_rate": lambda tf, v: tf.keras.optimizers.Adam(np.float32(0.1)),
    "int_momentum": lambda tf, v: tf.keras.optimizers.SGD(momentum=1),
    "negative_momentum": lambda tf, v: tf.keras.optimizers.SGD(momentum=-0.5),
    "momentum_above_one": lambda tf, v: tf.keras.optimizers.SGD(momentum=1.5),
    "unknown_argument": lambda tf, v: tf.keras.optimizers.Adam(0.1, foo=1),
    "two_clippings": lambda tf, v: tf.keras.optimizers.SGD(0.1, clipnorm=1.0, clipvalue=1.0),
    "decay_schedule_steps": lambda tf, v: tf.keras.optimizers.schedules.ExponentialDecay(0.1, 0, 0.5),
    "piecewise_lengths": lambda tf, v: tf.keras.optimizers.schedules.PiecewiseConstantDecay([1, 2], [0.1, 0.2]),
    "unknown_variable_after_build": lambda tf, v: _apply_twice(tf, v),
    "grads_without_build": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply([tf.ones([2])]),
}


def _apply_twice(tf, v):
    opt = tf.keras.optimizers.SGD(0.1)
    opt.apply_gradients([(tf.ones([2]), v)])
    opt.apply_gradients([(tf.ones([]), tf.Variable(1.0))])


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_errors(name):
    def prog(tf):
        v = tf.Variable([1.0, 2.0])
        BAD_CALLS[name](tf, v)
        return v
    same(prog)


ACCEPTED = {
    "negative_learning_rate": lambda tf, v: tf.keras.optimizers.SGD(-1.0).apply_gradients([(tf.ones([2]), v)]),
    "beta_above_one": lambda tf, v: tf.keras.optimizers.Adam(0.1, beta_1=2.0).apply_gradients([(tf.ones([2]), v)]),
    "float64_gradient": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients(
        [(tf.constant([1.0, 2.0], tf.float64), v)]),
    "python_gradient": lambda tf, v: tf.keras.optimizers.Adam(0.1).apply_gradients([(1.0, v)]),
    "list_pairs": lambda tf, v: tf.keras.optimizers.SGD(0.1).apply_gradients([[tf.ones([2]), v]]),
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_accepted_arguments(name):
    def prog(tf):
        v = tf.Variable([1.0, 2.0])
        ACCEPTED[name](tf, v)
        return v
    same(prog)


def test_error_messages_name_the_fix():
    with pytest.raises(AttributeError, match="not a tf.Variable"):
        tapeflow.keras.optimizers.SGD(0.1).apply_gradients([(tapeflow.constant(1.0), tapeflow.constant(1.0))])
    with pytest.raises(TypeError, match="zip"):
        tapeflow.keras.optimizers.SGD(0.1).apply_gradients([tapeflow.constant(1.0)])
    with pytest.raises(ValueError, match="recreate a new optimizer"):
        _apply_twice(tapeflow, tapeflow.Variable([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="use_ema"):
        tapeflow.keras.optimizers.Adam(use_ema=True)


# -- the base class --------------------------------------------------------------------------------

def test_a_custom_optimizer_subclass():
    def prog(tf):
        class SignDescent(tf.keras.optimizers.Optimizer):
            def build(self, variables):
                if self.built:
                    return
                super().build(variables)
                self.counts = [self.add_variable_from_reference(v, "count") for v in variables]

            def update_step(self, gradient, variable, learning_rate):
                count = self.counts[self._get_variable_index(variable)]
                count.assign_add(tf.ones_like(count))
                variable.assign_sub(tf.sign(gradient) * tf.cast(learning_rate, variable.dtype))
        w = tf.Variable([1.0, -2.0, 0.5])
        opt = SignDescent(learning_rate=0.25, name="sign")
        for _ in range(3):
            opt.apply_gradients([(tf.constant([2.0, -1.0, 0.0]), w)])
        return w, [v.path for v in opt.variables], tf.convert_to_tensor(opt.variables[-1])
    same(prog)


def test_apply_with_the_built_variables():
    def prog(tf):
        w = tf.Variable([1.0, 2.0])
        opt = tf.keras.optimizers.Adam(0.1)
        opt.build([w])
        opt.apply([tf.constant([1.0, 1.0])])
        return w, int(opt.iterations)
    same(prog)


# -- deliberate differences from TensorFlow (pinned) -------------------------------------------------

def test_default_names_are_not_numbered():
    # Keras numbers default names across the process ("sgd", "sgd_1", ...): a global counter we do not keep
    assert [tapeflow.keras.optimizers.SGD().name for _ in range(2)] == ["sgd", "sgd"]


def test_a_float_learning_rate_after_a_callable():
    # Keras fails here (AttributeError: 'function' object has no attribute 'assign'); a new variable is made
    opt = tapeflow.keras.optimizers.SGD(lambda: 0.5)
    opt.learning_rate = 0.25
    assert float(opt.learning_rate) == 0.25
    assert [v.name for v in opt.variables] == ["iteration", "learning_rate"]


def test_config_keeps_a_callable_learning_rate():
    # Keras serializes the callable's bytecode; the config here holds the callable itself
    rate = lambda: 0.5      # noqa: E731
    opt = tapeflow.keras.optimizers.Adam(rate)
    assert opt.get_config()["learning_rate"] is rate
    assert float(tapeflow.keras.optimizers.Adam.from_config(opt.get_config()).learning_rate) == 0.5
