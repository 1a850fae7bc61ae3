"""`tf.function`, differential against TensorFlow: values, tracing and its cache,
input signatures, nested structures, captures, variables and nested functions.

Each program is written against a TensorFlow-like module `tf` and run with both
tapeflow and TensorFlow by `differential.same` (values, dtypes, None-ness,
structures and exception classes are compared).
"""

import numpy as np
import pytest

import tapeflow
from differential import Raised, run, same


# -- values equal to eager ------------------------------------------------------------

def _mlp(tf, x, w, b):
    h = tf.tanh(tf.matmul(x, w) + b)
    return tf.reduce_sum(h * h, axis=1), tf.nn.softmax(h)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_function_matches_eager(dtype):
    rng = np.random.default_rng(0)
    x, w, b = (rng.normal(size=s).astype(dtype) for s in [(4, 3), (3, 5), (5,)])

    def prog(tf):
        eager = _mlp(tf, tf.constant(x), tf.constant(w), tf.constant(b))
        graph = tf.function(lambda x, w, b: _mlp(tf, x, w, b))(tf.constant(x), tf.constant(w), tf.constant(b))
        return eager, graph
    eager, graph = same(prog)
    for e, g in zip(eager, graph):
        np.testing.assert_allclose(e.numpy(), g.numpy(), rtol=1e-6)


def test_function_executing_eagerly_flag():
    def prog(tf):
        seen = []

        @tf.function
        def f(x):
            seen.append(tf.executing_eagerly())
            return x + 1.0
        f(tf.constant(1.0))
        return tf.executing_eagerly(), seen
    assert same(prog) == (True, [False])


def test_function_python_side_effects_run_once_per_trace():
    def prog(tf):
        calls = []

        @tf.function
        def f(x):
            calls.append(1)
            return x * 2.0
        outs = [f(tf.constant(float(i))) for i in range(3)]
        return outs, len(calls)
    assert same(prog)[1] == 1


# -- retracing ------------------------------------------------------------------------

def test_retrace_by_shape_and_dtype():
    def prog(tf):
        @tf.function
        def f(x):
            return tf.reduce_sum(x * x)
        counts = []
        for v in [tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]), tf.constant([1.0, 2.0, 3.0]),
                  tf.constant([1.0, 2.0], dtype=tf.float64), tf.constant([[1.0]])]:
            f(v)
            counts.append(f.experimental_get_tracing_count())
        return counts
    assert same(prog) == [1, 1, 2, 3, 4]


def test_retrace_by_python_value():
    def prog(tf):
        @tf.function
        def f(x, n, flag=False):
            for _ in range(n):
                x = x * 2.0
            return -x if flag else x
        x = tf.constant(1.5)
        outs = [f(x, 2), f(x, 2), f(x, 3), f(x, 3, flag=True), f(x, 2)]
        return outs, f.experimental_get_tracing_count()
    assert same(prog)[1] == 3


def test_python_value_output():
    def prog(tf):
        @tf.function
        def f(x, k):
            return {"y": x * k, "k": k, "f": 2.5, "flag": True, "none": None, "pair": (k, x), "list": [1, 2],
                    "array": np.array([1.0, 2.0])}
        return f(tf.constant([1.0, 2.0]), 3)
    same(prog)


# -- input_signature ---------------------------------------------------------------------

def test_input_signature_none_dims_traces_once():
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(x):
            return tf.reduce_sum(x, axis=0), tf.shape(x)[0]
        outs = [f(tf.ones([n, 3])) for n in (1, 4, 7)]
        return outs, f.experimental_get_tracing_count()
    assert same(prog)[1] == 1


def test_get_concrete_function_without_arguments():
    # with an input_signature the signature is the default; without one, a missing argument
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def f(x):
            return x * 2.0
        c = f.get_concrete_function()
        shape = [t.shape.as_list() for t in c.outputs]
        return c(tf.constant([1.0, 2.0])), shape, f.get_concrete_function(tf.TensorSpec([None], tf.float32)) is c
    assert same(prog)[2] is True
    same(lambda tf: tf.function(lambda x: x).get_concrete_function())


def test_input_signature_static_shape_seen_inside():
    def prog(tf):
        shapes = []

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(x):
            shapes.append(x.shape.as_list())
            return x * 2.0
        f(tf.ones([2, 3]))
        return shapes
    assert same(prog) == [[None, 3]]


def test_input_signature_converts_python_values():
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def f(x):
            return x + 1.0
        return f([1.0, 2.0]), f(np.array([3.0, 4.0], np.float32))
    same(prog)


@pytest.mark.parametrize("value", [
    lambda tf: tf.ones([2, 4]),                          # wrong dimension
    lambda tf: tf.ones([2, 3], dtype=tf.float64),        # wrong dtype
    lambda tf: tf.ones([3]),                             # wrong rank
], ids=["dim", "dtype", "rank"])
def test_input_signature_incompatible_raises(value):
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(x):
            return x * 2.0
        return f(value(tf))
    ours = run(prog, tapeflow)
    assert isinstance(ours, Raised)
    same(prog)


def test_input_signature_wrong_number_of_args():
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def f(x):
            return x
        return f(tf.constant(1.0), tf.constant(2.0))
    same(prog)


def test_input_signature_nested():
    def prog(tf):
        sig = [{"a": tf.TensorSpec([None], tf.float32), "b": (tf.TensorSpec([], tf.float32),)}]

        @tf.function(input_signature=sig)
        def f(d):
            return d["a"] * d["b"][0]
        return f({"a": tf.constant([1.0, 2.0]), "b": (tf.constant(3.0),)}), f.experimental_get_tracing_count()
    same(prog)


# -- nested structures ------------------------------------------------------------------------

def test_nested_structures_in_and_out():
    def prog(tf):
        @tf.function
        def f(inputs, scale):
            a, (b, c) = inputs["pair"], inputs["rest"]
            return {"sum": a + b, "list": [a * scale, (c, scale)], "tuple": (b - c,)}
        return f({"pair": tf.constant([1.0, 2.0]), "rest": [tf.constant([3.0, 4.0]), tf.constant(5.0)]}, 2.0)
    same(prog)


def test_returns_input_unchanged_and_constant():
    def prog(tf):
        @tf.function
        def f(x):
            return x, tf.constant([7, 8]), tf.zeros([2, 0])
        return f(tf.constant([1.0, 2.0]))
    same(prog)


def test_returns_nothing():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f():
            v.assign_add(1.0)
        r = f()
        f()
        return r, v
    same(prog)


def test_kwargs_and_defaults():
    def prog(tf):
        @tf.function
        def f(x, y=None, *, scale=2.0):
            return x * scale if y is None else (x + y) * scale
        x = tf.constant(1.0)
        return f(x), f(x, y=tf.constant(2.0)), f(x, scale=3.0), f(y=x, x=tf.constant(4.0))
    same(prog)


# -- captures ---------------------------------------------------------------------------------

def test_captured_tensor():
    def prog(tf):
        c = tf.constant([1.0, 2.0])

        @tf.function
        def f(x):
            return x * c
        return f(tf.constant([3.0, 4.0]))
    same(prog)


def test_captured_variable_read_at_call_time():
    def prog(tf):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f(x):
            return x * v
        a = f(tf.constant(2.0))
        v.assign([10.0, 20.0])
        b = f(tf.constant(2.0))
        v.assign_add([1.0, 1.0])
        c = f(tf.constant(2.0))
        return a, b, c, f.experimental_get_tracing_count()
    same(prog)


def test_variable_argument():
    def prog(tf):
        v, w = tf.Variable(2.0), tf.Variable(3.0)

        @tf.function
        def f(var, x):
            return var * x
        return f(v, tf.constant(2.0)), f(w, tf.constant(2.0)), f(v, tf.constant(5.0))
    same(prog)


# -- variable writes ---------------------------------------------------------------------------

def test_assign_ops_order():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f(x):
            a = v.read_value()
            v.assign(x)
            b = v.read_value()
            v.assign_add(2.0)
            c = v * 1.0
            v.assign_sub(0.5)
            d = tf.identity(v)
            return a, b, c, d
        first = f(tf.constant(5.0))
        second = f(tf.constant(7.0))
        return first, second, v
    same(prog)


def test_assign_returns_value():
    def prog(tf):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f():
            return v.assign_add([1.0, 1.0]) * 2.0
        return f(), f(), v
    same(prog)


def test_variable_counter_across_calls():
    def prog(tf):
        step = tf.Variable(0)
        total = tf.Variable(0.0)

        @tf.function
        def f(x):
            step.assign_add(1)
            total.assign_add(x * tf.cast(step, tf.float32))
            return total.read_value()
        outs = [f(tf.constant(float(i))) for i in range(1, 4)]
        return outs, step, total
    same(prog)


def test_assign_wrong_shape_raises():
    def prog(tf):
        v = tf.Variable([1.0, 2.0])

        @tf.function
        def f():
            v.assign([1.0, 2.0, 3.0])
            return v.read_value()
        return f()
    same(prog)


def test_unused_assign_still_runs():
    def prog(tf):
        v = tf.Variable(0.0)

        @tf.function
        def f(x):
            v.assign(x * 3.0)
            return x
        f(tf.constant(2.0))
        return v
    same(prog)


# -- nested functions and methods -----------------------------------------------------------------

def test_nested_function_calls():
    def prog(tf):
        v = tf.Variable(2.0)

        @tf.function
        def inner(x):
            return x * v + 1.0

        @tf.function
        def outer(x):
            return inner(x) * inner(2.0 * x)
        return outer(tf.constant(3.0)), inner(tf.constant(1.0))
    same(prog)


def test_call_of_a_general_signature_gets_the_callers_shapes():
    # a function traced for [None, None] called on [None, 3] tensors: its outputs'
    # static shapes are inferred again from the caller's (a capture and shape reads included)
    def prog(tf):
        w = tf.constant(np.ones((3, 2)))

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float64)])
        def inner(x):
            flat = tf.reshape(x, [-1])
            return tf.matmul(x, w), flat, x * tf.cast(tf.shape(x)[1], x.dtype), tf.zeros([4])
        shapes = []

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float64)])
        def outer(x):
            out = inner(x)
            shapes.append([t.shape.as_list() for t in out])
            return out
        values = outer(tf.constant(np.arange(6.0).reshape(2, 3)))
        return shapes, values
    same(prog)


def test_nested_function_with_assign():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def bump(d):
            v.assign_add(d)
            return v.read_value()

        @tf.function
        def outer(x):
            a = bump(x)
            b = bump(x)
            return a, b, v.read_value()
        return outer(tf.constant(2.0)), v
    same(prog)


def test_method_decorated():
    def prog(tf):
        class Model:
            def __init__(self, w):
                self.w = tf.Variable(w)

            @tf.function
            def __call__(self, x):
                return tf.reduce_sum(x * self.w)

        m1, m2 = Model([1.0, 2.0]), Model([3.0, 4.0])
        x = tf.constant([1.0, 1.0])
        return m1(x), m2(x), m1(2.0 * x)
    same(prog)


def test_get_concrete_function():
    def prog(tf):
        @tf.function
        def f(x):
            return x * 2.0
        cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
        same_cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
        return cf(tf.constant([1.0, 2.0, 3.0])), cf(tf.constant([4.0])), f.experimental_get_tracing_count(), \
            cf is same_cf
    same(prog)


def test_get_concrete_function_from_values():
    def prog(tf):
        @tf.function
        def f(x, n):
            return x * n
        cf = f.get_concrete_function(tf.constant([1.0, 2.0]), 3.0)
        return cf(tf.constant([5.0, 6.0])), [o.shape.as_list() for o in cf.outputs], \
            [i.shape.as_list() for i in cf.inputs]
    same(prog)


def test_concrete_function_wrong_shape_raises():
    def prog(tf):
        @tf.function
        def f(x):
            return x * 2.0
        cf = f.get_concrete_function(tf.TensorSpec([2], tf.float32))
        return cf(tf.constant([1.0, 2.0, 3.0]))
    same(prog)


def test_numpy_inside_function_raises():
    def prog(tf):
        @tf.function
        def f(x):
            return x.numpy()
        return f(tf.constant(1.0))
    ours = run(prog, tapeflow)
    assert isinstance(ours, Raised)


def test_python_bool_of_tensor_raises():
    def prog(tf):
        @tf.function(autograph=False)
        def f(x):
            if x > 0:
                return x
            return -x
        return f(tf.constant(1.0))
    same(prog)


def test_runtime_error_in_function():
    def prog(tf):
        @tf.function
        def f(x, i):
            return tf.gather(x, i)
        return f(tf.constant([1.0, 2.0]), tf.constant(5))
    same(prog)


def test_numpy_arguments_trace_by_shape_and_dtype():
    def prog(tf):
        @tf.function
        def f(x):
            return x * 2
        outs = [f(np.array([1.0, 2.0])), f(np.array([3.0, 4.0])), f(np.array([1, 2], np.int32)),
                f(np.ones((2, 2), np.float32))]
        return outs, f.experimental_get_tracing_count()
    same(prog)


def test_control_dependencies_and_name_scope_in_function():
    def prog(tf):
        v = tf.Variable(1.0)

        @tf.function
        def f(x):
            with tf.name_scope("block") as scope:
                a = v.assign_add(x)
                with tf.control_dependencies([a]):
                    y = tf.identity(x) * 2.0
                scopes.append(scope)
            return y, v.read_value()
        scopes = []
        return f(tf.constant(3.0)), v, scopes
    assert same(prog)[2] == ["block/"]


def test_indexed_slices_returned_from_function():
    def prog(tf):
        params = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

        @tf.function
        def f(p):
            with tf.GradientTape() as t:
                t.watch(p)
                y = tf.reduce_sum(tf.gather(p, [2, 0]) ** 2)
            return {"grad": t.gradient(y, p), "y": y}
        return f(params)
    out = same(prog)
    assert isinstance(out["grad"], tapeflow.IndexedSlices)


def test_variable_created_on_every_call_raises():
    def prog(tf):
        @tf.function
        def f(x):
            v = tf.Variable(1.0)
            return v * x
        return f(tf.constant(1.0))
    same(prog)
