"""What the gradient engines do around the rules, differential against TensorFlow.

* Note [sparse gradients]: an IndexedSlices output gradient (from a gather on
  axis 0) reaches most rules as a dense tensor; identities, casts, reads and
  custom gradients pass it on, as TensorFlow's do.
* A tape does not record `stop_gradient`, so what is computed from its output
  only is not traced; `zeros_like`/`ones_like` are recorded (not differentiable).
* A one-shot tape whose backprop failed partway is spent: a second call raises.
"""

import pytest

from differential import same

# An op applied before an axis-0 gather: each used to fail on the IndexedSlices
# gradient the gather sends back.
BEFORE_GATHER = {
    "relu": lambda tf, x: tf.nn.relu(x),
    "relu6": lambda tf, x: tf.nn.relu6(x * 4.0),
    "leaky_relu": lambda tf, x: tf.nn.leaky_relu(x),
    "matmul": lambda tf, x: tf.matmul(x, x, transpose_b=True),
    "reduce_mean": lambda tf, x: tf.reduce_mean(x, axis=1, keepdims=True),
    "reduce_max": lambda tf, x: tf.reduce_max(x, axis=1, keepdims=True),
    "reduce_min": lambda tf, x: tf.reduce_min(x, axis=1, keepdims=True),
    "reduce_variance": lambda tf, x: tf.math.reduce_variance(x, axis=1, keepdims=True),
    "erf": lambda tf, x: tf.math.erf(x),
    "erfc": lambda tf, x: tf.math.erfc(x),
    "erfinv": lambda tf, x: tf.math.erfinv(x * 0.3),
    "squared_difference": lambda tf, x: tf.math.squared_difference(x, x * x),
    "cumulative_logsumexp": lambda tf, x: tf.math.cumulative_logsumexp(x, axis=1),
    "unsorted_segment_max": lambda tf, x: tf.math.unsorted_segment_max(x, [0, 1, 0], 3),
    "add": lambda tf, x: x + tf.ones_like(x),
    "reshape": lambda tf, x: tf.reshape(x, [3, 2]),
    "tanh": lambda tf, x: tf.tanh(x),
}


def _gather_after(name, in_function):
    def prog(tf):
        x = tf.constant([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])

        def grads(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.gather(BEFORE_GATHER[name](tf, x), [2, 0, 2])
                loss = tf.reduce_sum(y * y)
            return tape.gradient(loss, x)
        return tf.function(grads)(x) if in_function else grads(x)
    return prog


@pytest.mark.parametrize("name", sorted(BEFORE_GATHER))
def test_gather_after_op(name):
    same(_gather_after(name, in_function=False))


@pytest.mark.parametrize("name", ["relu", "matmul", "reduce_mean", "erf", "cumulative_logsumexp"])
def test_gather_after_op_in_function(name):
    same(_gather_after(name, in_function=True))


def _kind_through(make):
    def prog(tf):
        x = tf.constant([[1.0, -2.0], [3.0, 4.0]])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.gather(make(tf, x), [1])
        return tape.gradient(y, x)
    return prog


def _custom_identity(tf):
    @tf.custom_gradient
    def f(a):
        return tf.identity(a), lambda dy: dy
    return f


@pytest.mark.parametrize("name, make", [
    ("identity", lambda tf, x: tf.identity(x)),                       # passes IndexedSlices on
    ("identity_n", lambda tf, x: tf.identity_n([x])[0]),
    ("cast", lambda tf, x: tf.cast(x, tf.float64)),
    ("custom_gradient", lambda tf, x: _custom_identity(tf)(x)),
    ("cond", lambda tf, x: tf.cond(tf.constant(True), lambda: x, lambda: x)),
    ("function", lambda tf, x: tf.function(lambda a: a * 1.0)(x)),   # dense, as TF's function calls
    ("reshape", lambda tf, x: tf.reshape(x, [2, 2])),
    ("add", lambda tf, x: x + tf.zeros([2, 2])),
])
def test_indexed_slices_or_dense_like_tensorflow(name, make):
    same(_kind_through(make))


def test_variable_gradient_kinds():
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        out = []
        for f in (lambda: tf.gather(v, [2, 0]), lambda: tf.gather(v * 1.0, [2, 0]),
                  lambda: tf.gather(tf.identity(v), [2, 0]), lambda: tf.gather(v, [1], axis=-2)):
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(f())
            out.append(tape.gradient(y, v))
        return out
    same(prog)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_gather_gradient_sparse_only_for_axis_written_as_zero(axis):
    def prog(tf):
        x = tf.reshape(tf.range(24.0), [2, 3, 4])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.gather(x, [1, 0], axis=axis)
        return tape.gradient(y, x)
    same(prog)


# -- what the tape traces ----------------------------------------------------------

@pytest.mark.parametrize("name", ["stop_gradient", "zeros_like", "ones_like", "round", "sign"])
def test_gradient_with_respect_to_outputs_of_non_differentiable_ops(name):
    def prog(tf):
        x = tf.constant([1.5, 2.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            s = getattr(tf, name)(x)
            y = s * 2.0
            z = y + x
        return [tape.gradient(y, s), tape.gradient(z, s), tape.gradient(y, x), tape.gradient(z, x)]
    same(prog)


def test_watched_stop_gradient_output_is_traced():
    def prog(tf):
        x = tf.constant([1.5, 2.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            s = tf.stop_gradient(x)
            tape.watch(s)
            y = s * s
        return tape.gradient(y, s), tape.gradient(y, x)
    same(prog)


def test_stop_gradient_in_function_under_tape():
    def prog(tf):
        x = tf.constant([1.5, 2.0])

        @tf.function
        def f(a):
            return tf.stop_gradient(a) * a
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)
    same(prog)


# -- a failed backprop spends a one-shot tape ---------------------------------------

def _failing_once(tf):
    calls = []

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            calls.append(1)
            if len(calls) == 1:
                raise ValueError("the rule fails once")
            return dy * 2.0
        return tf.identity(x), grad
    return f


def test_second_gradient_after_a_failed_one_raises():
    def prog(tf):
        f = _failing_once(tf)
        x = tf.constant(1.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x) * 3.0
        outcomes = []
        for _ in range(2):
            try:
                outcomes.append(tape.gradient(y, x))
            except Exception as e:  # noqa: BLE001 - the class is what is compared
                outcomes.append(type(e).__name__)
        return outcomes
    same(prog)


def test_persistent_tape_recovers_after_a_failed_gradient():
    def prog(tf):
        f = _failing_once(tf)
        x = tf.constant(1.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x) * 3.0
        try:
            tape.gradient(y, x)
        except ValueError:
            pass
        return tape.gradient(y, x)
    same(prog)


def test_bad_arguments_do_not_spend_the_tape():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * 3.0
        try:
            tape.gradient(None, x)
        except TypeError:
            pass
        return tape.gradient(y, x)
    same(prog)


@pytest.mark.parametrize("watch_z", [False, True], ids=["z_unwatched", "z_watched"])
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", ["x+z", "x-z", "z-x", "m+x"])
def test_sparse_gradient_through_sums(name, in_function, watch_z):
    """Inside graphs x + y passes an IndexedSlices gradient on to an input of the output's
    static shape; eagerly it is made dense (TensorFlow's AddV2/Sub gradients)."""
    def prog(tf):
        x, z, m = tf.constant([1.0, 2.0, 3.0]), tf.constant(0.5), tf.ones([2, 3])
        f = {"x+z": lambda a, b: a + b, "x-z": lambda a, b: a - b, "z-x": lambda a, b: b - a,
             "m+x": lambda a, b: b + a}[name]
        other = m if name == "m+x" else z

        def grads(a, b):
            with tf.GradientTape() as tape:
                tape.watch(a)
                if watch_z:
                    tape.watch(b)
                y = tf.reduce_sum(tf.gather(f(a, b), [1, 0]))
            return tape.gradient(y, [a, b])
        return tf.function(grads)(x, other) if in_function else grads(x, other)
    same(prog)
