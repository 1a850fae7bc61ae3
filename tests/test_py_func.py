"""tf.py_function against TensorFlow: values, gradients (eager tape, tape around and inside a
tf.function, tf.gradients), None-ness, side effects when the graph runs, and errors."""

import sys

import numpy as np
import pytest

import tapeflow
from differential import same

_X = np.array([1.0, 2.0], np.float32)


def _cube_and_shift(a, b):
    return a * a * b, a + 1.0


def test_values_and_gradients_like_tensorflow():
    def program(tf):
        x, y = tf.constant(_X), tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            o1, o2 = tf.py_function(_cube_and_shift, [x, y], [tf.float32, tf.float32])
            total = tf.reduce_sum(o1) + 2 * tf.reduce_sum(o2)
        return o1, o2, tape.gradient(total, [x, y])
    same(program)


def test_python_control_flow_and_numpy_inside_like_tensorflow():
    def program(tf):
        def piecewise(a):
            return a * a if a.numpy().sum() > 0 else tf.sin(a)
        out = []
        for value in (_X, -_X):
            x = tf.constant(value)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.py_function(piecewise, [x], tf.float32)
            out.append((y, tape.gradient(y, x)))
        return out
    same(program)


def test_unused_input_gets_zeros_and_unrelated_source_none_like_tensorflow():
    def program(tf):
        x, y, z = tf.constant(_X), tf.constant(3.0), tf.constant(1.0)
        with tf.GradientTape() as tape:
            tape.watch([x, y, z])
            o = tf.py_function(lambda a, b: a * 2.0, [x, y], tf.float32)
        return tape.gradient(o, [x, y, z])
    same(program)


def test_integer_outputs_beside_float_ones_like_tensorflow():
    def program(tf):
        x = tf.constant(_X)
        with tf.GradientTape() as tape:
            tape.watch(x)
            o, n = tf.py_function(lambda a: (a * 2.0, tf.shape(a)), [x], [tf.float32, tf.int32])
        return o, n, tape.gradient(o, x)
    same(program)


def test_variables_read_inside_get_no_gradient_like_tensorflow():
    def program(tf):
        v = tf.Variable(2.0)
        with tf.GradientTape() as tape:
            o = tf.py_function(lambda a: a * v, [tf.constant(_X)], tf.float32)
        return o, tape.gradient(o, v), [w.name for w in tape.watched_variables()]
    same(program)


def test_second_order_is_none_like_tensorflow():
    def program(tf):
        x = tf.constant(_X)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.py_function(lambda q: q * q * q, [x], tf.float32)
            g = inner.gradient(y, x)
        return g, outer.gradient(g, x)
    same(program)


def test_in_tf_function_runs_each_call_with_unknown_shape_like_tensorflow():
    def program(tf):
        calls, static = [], []

        @tf.function
        def f(a):
            r = tf.py_function(lambda q: (calls.append(q.numpy().tolist()), q * 2.0 + 1.0)[1], [a], tf.float32)
            static.append((r.shape.rank, r.dtype))
            nothing = tf.py_function(lambda q: calls.append("side effect"), [a], [])
            static.append(type(nothing).__name__)
            return r
        out = [f(tf.constant(_X)), f(tf.constant([5.0])), f(tf.constant([7.0]))]
        return out, calls, static
    ours = same(program)
    assert ours[2][1] == "Operation"


@pytest.mark.parametrize("where", ["tape_inside", "tape_outside", "tf_gradients"])
def test_gradients_through_tf_function_like_tensorflow(where):
    def program(tf):
        cube = lambda q: q * q * q  # noqa: E731
        x = tf.constant(_X)
        if where == "tape_inside":
            @tf.function
            def f(a):
                with tf.GradientTape() as t:
                    t.watch(a)
                    r = tf.py_function(cube, [a], tf.float32)
                return t.gradient(r, a)
            return f(x), f(x + 1.0)
        if where == "tf_gradients":
            @tf.function
            def g(a):
                return tf.gradients(tf.py_function(cube, [a], tf.float32), a)
            return g(x)

        @tf.function
        def h(a):
            return tf.py_function(cube, [a], tf.float32) * 2.0
        with tf.GradientTape() as t:
            t.watch(x)
            r = h(x)
        return r, t.gradient(r, x)
    same(program)


def test_tout_forms_and_conversion_like_tensorflow():
    def program(tf):
        return [tf.py_function(lambda: None, [], []), tf.py_function(lambda: 1, [], tf.int32),
                tf.py_function(lambda: [1, 2.0], [], [tf.int32, tf.float32]),
                tf.py_function(lambda: (1,), [], (tf.int32,)),
                tf.py_function(lambda: [1, 2], [], tf.int32), tf.py_function(lambda a: a, [[1.0, 2.0]], tf.float32),
                tf.py_function(lambda a: a + 1, [tf.Variable(1.0)], tf.float32),
                tf.py_function(lambda a: a, [tf.constant("s")], tf.string),
                tf.py_function(func=lambda a: a * 2, inp=[tf.constant(2.0)], Tout=tf.float32),
                tf.py_function(Tout=tf.float32)(lambda a: a * 3)(tf.constant(2.0))]
    same(program)


@pytest.mark.parametrize("call", [
    lambda tf: tf.py_function(lambda: 1, [], None),
    lambda tf: tf.py_function(3, [], tf.int32),
    lambda tf: tf.py_function(None, [1], Tout=tf.int32),
    lambda tf: tf.py_function(lambda: 1, None, tf.int32),
    lambda tf: tf.py_function(lambda: 1.5, [], tf.int32),
    lambda tf: tf.py_function(lambda: 1, [], [tf.int32, tf.int32]),
    lambda tf: tf.py_function(lambda: None, [], [tf.float32]),
    lambda tf: tf.py_function(lambda: tf.Variable(1.0), [], tf.float32),
], ids=lambda c: "")
def test_argument_and_result_errors_like_tensorflow(call):
    same(call)


@pytest.mark.parametrize("exc", [ValueError, TypeError, StopIteration, NotImplementedError, KeyError,
                                 ZeroDivisionError, RuntimeError])
@pytest.mark.parametrize("in_function", [False, True])
def test_exceptions_of_the_function_like_tensorflow(exc, in_function):
    def program(tf):
        def fail():
            raise exc("boom")
        call = lambda: tf.py_function(fail, [], tf.int32)  # noqa: E731
        return tf.function(call)() if in_function else call()
    same(program)


def test_prints_inside_run_in_order(capsys):
    tf = tapeflow
    v = tf.Variable(1.0)

    @tf.function
    def f():
        v.assign(2.0)
        tf.py_function(lambda: print("py sees", float(v.numpy())), [], [])
        tf.print("then tf.print", output_stream=sys.stdout)
        v.assign(3.0)
        return tf.constant(0)
    f()
    assert capsys.readouterr().out == "py sees 2.0\nthen tf.print\n"
