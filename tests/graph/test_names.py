"""Op names in graphs, differential against TensorFlow: the `name=` argument of
ops and public functions, unique names, name scopes, invalid names, and
fetching/feeding by name (Note [op names] in graph/naming.py)."""

import numpy as np
import pytest

import tapeflow
from differential import same


def _in_graph(build):
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            return build(tf, tf.compat.v1.placeholder(tf.float32, [2, 3], name="x"))
    return prog


NAMED_CALLS = {
    "identity": lambda tf, x: tf.identity(x, name="out"),
    "op object": lambda tf, x: tf.sin(x, name="out"),
    "binary op": lambda tf, x: tf.add(x, x, name="out"),
    "matmul": lambda tf, x: tf.matmul(x, x, transpose_b=True, name="out"),
    "reduction": lambda tf, x: tf.reduce_sum(x, axis=1, name="out"),
    "reshape": lambda tf, x: tf.reshape(x, [3, 2], name="out"),
    "positional name": lambda tf, x: tf.reshape(x, [6], "out"),
    "transpose": lambda tf, x: tf.transpose(x, name="out"),
    "cast": lambda tf, x: tf.cast(x, tf.float64, name="out"),
    "relu": lambda tf, x: tf.nn.relu(x, name="out"),
    "math namespace": lambda tf, x: tf.math.cumsum(x, axis=1, name="out"),
    "constant": lambda tf, x: tf.constant([1.0, 2.0], name="out"),
}


@pytest.mark.parametrize("call", list(NAMED_CALLS), ids=list(NAMED_CALLS))
def test_name_argument_names_the_op(call):
    def build(tf, x):
        out = NAMED_CALLS[call](tf, x)
        again = NAMED_CALLS[call](tf, x)
        return out.name, out.op.name, again.name, tf.compat.v1.get_default_graph().get_tensor_by_name("out:0") is out
    assert same(_in_graph(build))[:3] == ("out:0", "out", "out_1:0")


def test_names_inside_scopes_and_functions():
    def build(tf, x):
        with tf.name_scope("outer"):
            inner = tf.identity(x, name="inner")
            unnamed = tf.sin(x)
        return inner.name, unnamed.name, tf.identity(x).name, tf.identity(x, name="x").name
    same(_in_graph(build))

    def prog(tf):
        seen = []

        @tf.function
        def f(x):
            seen.append(tf.identity(x, name="result").name)
            return x
        f(tf.constant(1.0))
        return seen
    same(prog)


@pytest.mark.parametrize("bad", ["a b", "_hidden", "-x"])
def test_invalid_names_raise_value_error(bad):
    same(_in_graph(lambda tf, x: tf.identity(x, name=bad)))


def test_fetch_and_feed_by_name():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
            tf.multiply(x, 3.0, name="tripled")
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run("tripled:0", feed_dict={"x:0": np.array([1.0, 2.0], np.float32)})
    same(prog)


def test_name_is_ignored_when_executing_eagerly():
    x = tapeflow.constant([1.0, -2.0])
    np.testing.assert_allclose(tapeflow.nn.relu(x, name="r").numpy(), [1.0, 0.0])
    np.testing.assert_allclose(tapeflow.sin(x, name="s").numpy(), np.sin([1.0, -2.0]), rtol=1e-6)
    np.testing.assert_allclose(tapeflow.reshape(x, [2, 1], "r").numpy(), [[1.0], [-2.0]])


def test_named_function_keeps_its_identity_across_namespaces():
    assert tapeflow.math.cumsum is tapeflow.cumsum
    assert tapeflow.reshape.__doc__ and "Reshapes" in tapeflow.reshape.__doc__
