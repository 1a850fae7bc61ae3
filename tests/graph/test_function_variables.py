"""Variables and `tf.function`, differential against TensorFlow: writes (assign*,
scatter_*) are graph ops run at each call in program order; variables created on
the first trace (initial values from the arguments or other variables) and the
ValueErrors of later creation."""

import numpy as np
import pytest

import tapeflow
from differential import Raised, same

SCATTERS = ["scatter_update", "scatter_add", "scatter_sub", "scatter_mul", "scatter_div", "scatter_max", "scatter_min"]


# -- writes run at call time, in program order -------------------------------------------------

@pytest.mark.parametrize("method", SCATTERS)
def test_scatter_in_function_runs_at_each_call(method):
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

        @tf.function
        def f(x):
            before = v.read_value()
            out = getattr(v, method)(tf.IndexedSlices(x, tf.constant([2, 0])))
            return before, out * 1.0, v.read_value()
        d = tf.constant([[10.0, 20.0], [2.0, 0.5]])
        return f(d), f(d), v
    same(prog)


@pytest.mark.parametrize("method", ["scatter_nd_update", "scatter_nd_add", "scatter_nd_sub"])
def test_scatter_nd_in_function_runs_at_each_call(method):
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])

        @tf.function
        def f(u):
            getattr(v, method)([[0, 1], [1, 0]], u)
            getattr(v, method)([[1]], [[1.0, 1.0]])
            return v.read_value()
        return f(tf.constant([10.0, 20.0])), f(tf.constant([10.0, 20.0])), v
    same(prog)


def test_batch_scatter_update_in_function():
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

        @tf.function
        def f(rows):
            return v.batch_scatter_update(tf.IndexedSlices(rows, tf.constant([[1], [0], [1]]))) * 1.0
        return f(tf.constant([[9.0], [8.0], [7.0]])), v
    same(prog)


def test_write_result_is_read_when_used():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f():
            r = v.assign_add(1.0)
            early = r * 1.0
            v.assign(10.0)
            return early, r * 1.0          # TF's _UnreadVariable: read where it is used
        return f(), v
    same(prog)


def test_write_results_chain_and_read_value_false():
    def prog(tf):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f(x):
            chained = v.assign(x).assign_add(x).read_value()
            op = v.assign_sub(x, read_value=False)
            kinds.append((type(op).__name__, op.type, isinstance(v.assign(x), tf.Variable)))
            return chained
        kinds = []
        return f(tf.constant([1.0, 1.0])), v, kinds
    same(prog)


def test_writes_in_control_dependencies():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f(x):
            a = v.assign(x)
            with tf.control_dependencies([a]):
                y = tf.identity(x) * 2.0
            return y, v.read_value()
        return f(tf.constant(4.0)), v
    same(prog)


def test_reads_have_the_declared_shape():
    def prog(tf):
        v = tf.Variable(tf.zeros([1, 2]), shape=[None, 2])
        shapes = []

        @tf.function
        def f():
            shapes.append(v.read_value().shape)
            v.assign(tf.ones([3, 2]))
            return v.read_value()
        return f(), shapes, v.shape
    same(prog)


WRITE_ERRORS = {
    "index_out_of_range": lambda tf, v: v.scatter_add(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([3]))),
    "negative_index": lambda tf, v: v.scatter_sub(tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([-1]))),
    "updates_shape": lambda tf, v: v.scatter_add(tf.IndexedSlices(tf.constant([1.0]), tf.constant([1]))),
    "updates_dtype": lambda tf, v: v.scatter_update(tf.IndexedSlices(tf.constant([[9.0, 9.0]], tf.float64), [0])),
    "not_indexed_slices": lambda tf, v: v.scatter_update(tf.constant([[9.0, 9.0]])),
    "scalar_updates": lambda tf, v: v.scatter_update(tf.IndexedSlices(tf.constant(7.0), tf.constant([1]))),
    "python_updates": lambda tf, v: v.scatter_max(tf.IndexedSlices([[9.0, -9.0]], [0])),
    "int64_indices": lambda tf, v: v.scatter_mul(tf.IndexedSlices(tf.ones([1, 2]) * 3, tf.constant([2], tf.int64))),
    "matrix_indices": lambda tf, v: v.scatter_add(tf.IndexedSlices(tf.ones([2, 2, 2]), tf.constant([[0, 1], [1, 2]]))),
    "nd_out_of_range": lambda tf, v: v.scatter_nd_sub([[5]], [[1.0, 1.0]]),
    "nd_updates_shape": lambda tf, v: v.scatter_nd_add([[1]], [1.0, 1.0, 1.0]),
    "assign_shape": lambda tf, v: v.assign([1.0, 2.0]),
    "assign_add_shape": lambda tf, v: v.assign_add([1.0, 2.0]),
    "assign_add_dtype": lambda tf, v: v.assign_add(tf.ones([3, 2], tf.float64)),
}


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", list(WRITE_ERRORS))
def test_write_values_and_errors(name, in_function):
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        if in_function:
            tf.function(lambda: [WRITE_ERRORS[name](tf, v), None][1], autograph=False)()
        else:
            WRITE_ERRORS[name](tf, v)
        return v
    same(prog)


def test_function_writing_under_tape_writes_once():
    # Note [call side outputs]: the backward function neither re-runs the writes
    # nor reads the variables again (TF's gradient uses the forward's values).
    def prog(tf):
        v = tf.Variable([1.0, 2.0, 3.0])
        w = tf.Variable(2.0)

        @tf.function
        def f(x):
            y = tf.reduce_sum(x * w)
            w.assign_add(1.0)
            v.scatter_add(tf.IndexedSlices(x[:1], tf.constant([0])))
            return y + tf.reduce_sum(v * x)
        x = tf.constant([1.0, 2.0, 3.0])
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        return y, t.gradient(y, [x, v, w]), v, w
    same(prog)


def test_gradient_uses_values_of_the_call():
    def prog(tf):
        v = tf.Variable(2.0)

        @tf.function
        def f(x):
            return x * v * v
        x = tf.constant(3.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        v.assign(100.0)
        return t.gradient(y, [x, v])
    same(prog)


def test_gradient_sees_the_random_values_of_the_call():
    def prog(tf):
        @tf.function
        def f(x):
            return tf.nn.dropout(x, 0.5) * x
        x = tf.ones([1000])
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        return bool(tf.reduce_all(tf.equal(t.gradient(y, x) > 0, y > 0)))
    assert same(prog) is True


def test_write_in_cond_under_tape():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f(x):
            tf.cond(x > 0.0, lambda: v.assign_add(x), lambda: v.assign_sub(x))
            return x * v
        x = tf.constant(2.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = f(x)
        return y, t.gradient(y, x), v
    same(prog)


# -- variables created by a tf.function ----------------------------------------------------------

def test_variable_from_argument_created_once():
    def prog(tf):
        class Accumulate:
            def __init__(self):
                self.v, self.traces = None, 0

            @tf.function
            def __call__(self, x):
                self.traces += 1
                if self.v is None:
                    self.v = tf.Variable(2.0 * x)
                self.v.assign_add(x)
                return self.v.read_value()
        m = Accumulate()
        out = m(tf.constant([1.0, 2.0])), m(tf.constant([3.0, 4.0]))
        return out, m.v, m.traces, m.__call__.experimental_get_tracing_count()
    same(prog)


INITIAL_VALUES_FROM_ARGUMENTS = {
    "zeros_like": lambda tf, x: tf.zeros_like(x),
    "ones_like_times_2": lambda tf, x: tf.ones_like(x) * 2.0,
}


@pytest.mark.parametrize("initial", list(INITIAL_VALUES_FROM_ARGUMENTS))
def test_lazily_created_variable_with_graph_initial_value(initial):
    # the initial value is computed in the trace from the argument
    def prog(tf):
        class Total:
            def __init__(self):
                self.v = None

            @tf.function
            def __call__(self, x):
                if self.v is None:
                    self.v = tf.Variable(INITIAL_VALUES_FROM_ARGUMENTS[initial](tf, x))
                self.v.assign_add(x)
                return self.v * x
        m = Total()
        return m(tf.constant([1.0, 2.0])), m(tf.constant([3.0, 4.0])), m.v
    same(prog)


def test_variable_shape_from_input_signature():
    def prog(tf):
        class Shifted:
            def __init__(self):
                self.v = None

            @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
            def __call__(self, x):
                if self.v is None:
                    self.v = tf.Variable(tf.zeros_like(x) + 1.0)
                return self.v.read_value() + x
        m = Shifted()
        return m(tf.constant([1.0, 2.0])), m.v.shape, m.v
    same(prog)


def test_variables_from_other_variables_and_constants():
    def prog(tf):
        w = tf.Variable([1.0, 2.0])

        class Model:
            def __init__(self):
                self.a = None

            @tf.function
            def __call__(self, x):
                if self.a is None:
                    self.a = tf.Variable(w * 3.0)
                    self.b = tf.Variable(self.a * 2.0 + x)          # reads the new variable a
                    self.c = tf.Variable(tf.ones([2]), trainable=False, name="c")
                    self.d = tf.Variable(lambda: tf.zeros([2]), dtype=tf.float32)
                    self.steps = tf.Variable(0)
                self.steps.assign_add(1)
                return self.a + self.b * self.c + self.d, self.steps.read_value()
        m = Model()
        first = m(tf.constant(1.0))
        w.assign([10.0, 10.0])                                         # a keeps its initial value
        second = m(tf.constant(5.0))
        return (first, second, m.a, m.b, m.c, m.d, m.steps, m.c.trainable, m.c.name, m.d.name,
                sorted(v.name for v in m.__call__.get_concrete_function(tf.constant(5.0)).variables))
    same(prog)


def test_created_variables_are_differentiable():
    def prog(tf):
        class Linear:
            def __init__(self):
                self.w = None

            @tf.function
            def __call__(self, x):
                if self.w is None:
                    self.w = tf.Variable(tf.ones([2, 1]))
                return tf.reduce_sum(tf.matmul(x, self.w) ** 2)
        m = Linear()
        with tf.GradientTape() as t:
            y = m(tf.constant([[1.0, 2.0]]))
        return y, t.gradient(y, m.w), [v.name for v in t.watched_variables()]
    same(prog)


def test_variable_created_by_nested_function():
    def prog(tf):
        class Layer:
            def __init__(self):
                self.v = None

            @tf.function
            def __call__(self, x):
                if self.v is None:
                    self.v = tf.Variable(tf.ones([2]))
                return self.v * x
        layer = Layer()

        @tf.function
        def outer(x):
            return layer(x) + 1.0
        return outer(tf.constant([1.0, 2.0])), outer(tf.constant([3.0, 4.0])), layer.v
    same(prog)


def test_guarded_creation_retraces_without_creating():
    def prog(tf):
        class Scale:
            def __init__(self):
                self.vs = []

            @tf.function
            def __call__(self, x):
                if not self.vs:
                    self.vs.append(tf.Variable(1.0))
                return x * self.vs[0]
        m = Scale()
        return m(tf.constant(1.0)), m(tf.constant([1.0, 2.0])), m.__call__.experimental_get_tracing_count()
    same(prog)


def test_get_concrete_function_creates_variables():
    def prog(tf):
        class Scale:
            def __init__(self):
                self.v = None

            @tf.function
            def __call__(self, x):
                if self.v is None:
                    self.v = tf.Variable(3.0)
                return self.v * x
        m = Scale()
        concrete = m.__call__.get_concrete_function(tf.TensorSpec([], tf.float32))
        return concrete(tf.constant(2.0)), m.v
    same(prog)


CREATION_ERRORS = {
    "on_every_call": lambda tf, m, x: tf.Variable(1.0) * x,
    "on_a_later_call": lambda tf, m, x: m.later(x),
    "initial_value_dtype": lambda tf, m, x: tf.Variable(x, dtype=tf.float64),
}


@pytest.mark.parametrize("name", list(CREATION_ERRORS))
def test_variable_creation_errors(name):
    def prog(tf):
        class Module:
            def __init__(self):
                self.v = None

            @tf.function
            def later(self, x, make=True):
                if make and self.v is None:
                    self.v = tf.Variable(1.0)
                return x * 2.0
        m = Module()
        m.later(tf.constant(1.0), False)
        return tf.function(lambda x: CREATION_ERRORS[name](tf, m, x))(tf.constant(1.0))
    assert isinstance(same(prog), Raised)


def test_variable_creation_error_messages():
    @tapeflow.function
    def every(x):
        return tapeflow.Variable(1.0) * x
    with pytest.raises(ValueError, match="tf.function only supports singleton tf.Variables created on the first call"):
        every(tapeflow.constant(1.0))

    @tapeflow.function
    def later(x, make):
        if make:
            tapeflow.Variable(1.0)
        return x
    later(tapeflow.constant(1.0), False)
    with pytest.raises(ValueError, match="Creating variables on a non-first call to a function decorated with"):
        later(tapeflow.constant(1.0), True)
