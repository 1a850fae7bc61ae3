"""Sizes known only when a graph runs, differential against TensorFlow.

Inside `tf.function(input_signature=[tf.TensorSpec([None, 3])])` the batch size
`n = tf.shape(x)[0]` is a symbolic tensor, so reshape, tile, broadcast_to,
zeros/ones/fill, pad, slice and split take their sizes as tensor inputs, the
gradient of concat slices at offsets read when the graph runs and `tf.where(c)`
has an unknown count.  Each case checks, against TensorFlow: the values, the
static shapes inferred while tracing (`.shape.as_list()`), the gradients from
`tf.gradients` in the function and from a tape around the call, and the
exception class of sizes that are wrong when the graph runs.
"""

import numpy as np
import pytest

import tapeflow
from differential import Raised, run, same

X = np.linspace(-1.0, 1.2, 12).reshape(4, 3).astype(np.float32)


def _loss(tf, outs):
    """A scalar depending nonlinearly on every float output."""
    terms = [tf.reduce_sum(tf.sin(o) * o) for o in outs if o.dtype == tf.float32]
    return tf.add_n(terms) if terms else None


def traced(body, value=X, signature=(None, 3)):
    """A program tracing `body(tf, x, n)` with an unknown batch size; it returns the outputs, the
    static shapes seen while tracing and the gradient of `_loss` by `tf.gradients` inside."""
    def prog(tf):
        shapes = []

        @tf.function(input_signature=[tf.TensorSpec(signature, tf.float32)])
        def f(x):
            out = body(tf, x, tf.shape(x)[0])
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            shapes.append([o.shape.as_list() for o in outs])
            loss = _loss(tf, outs)
            return outs, (tf.gradients(loss, x) if loss is not None else None)
        outs, grads = f(tf.constant(value))
        return outs, grads, shapes
    return prog


def taped(body, value=X, signature=(None, 3)):
    """A program differentiating a call of the traced `body` with a GradientTape around it."""
    def prog(tf):
        f = tf.function(lambda x: body(tf, x, tf.shape(x)[0]),
                        input_signature=[tf.TensorSpec(signature, tf.float32)])
        x = tf.constant(value)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = f(x)
            loss = _loss(tf, list(out) if isinstance(out, (list, tuple)) else [out])
        return out, tape.gradient(loss, x)
    return prog


CASES = {
    "reshape_n_times_3": lambda tf, x, n: tf.reshape(x, [n * 3]),
    "reshape_tuple": lambda tf, x, n: tf.reshape(x, (n, 3, 1)),
    "reshape_known_entry_arithmetic": lambda tf, x, n: tf.reshape(x, [tf.shape(x)[1] * 2, -1]),
    "reshape_minus_one_and_dim": lambda tf, x, n: tf.reshape(x, [-1, tf.shape(x)[1]]),
    "reshape_shape_of_x": lambda tf, x, n: tf.reshape(x * 2.0, tf.shape(x)),
    "reshape_reversed_shape": lambda tf, x, n: tf.reshape(x, tf.reverse(tf.shape(x), [0])),
    "reshape_concat_of_shape": lambda tf, x, n: tf.reshape(x, tf.concat([[1], tf.shape(x)], 0)),
    "reshape_shape_tail": lambda tf, x, n: tf.reshape(x, tf.concat([[-1], tf.shape(x)[1:]], 0)),
    "reshape_int64_shape": lambda tf, x, n: tf.reshape(x, tf.shape(x, out_type=tf.int64)),
    "reshape_cast_shape": lambda tf, x, n: tf.reshape(x, tf.cast(tf.shape(x, out_type=tf.int64), tf.int32)),
    "reshape_two_unknown": lambda tf, x, n: tf.reshape(x, [n, -1]),
    "reshape_floordiv": lambda tf, x, n: tf.reshape(x, [n, tf.shape(x)[1] // 3, 3]),
    "reshape_size": lambda tf, x, n: tf.reshape(x, [tf.size(x)]),
    "reshape_unstacked_shape": lambda tf, x, n: tf.reshape(x, tf.unstack(tf.shape(x))[::-1]),
    "reshape_gathered_shape": lambda tf, x, n: tf.reshape(x, tf.gather(tf.shape(x), [1, 0])),
    "zeros_shape_of_reshape": lambda tf, x, n: tf.zeros(tf.shape(tf.reshape(x, [n, 3, 1]))[1:]),
    "zeros_shape_plus_one": lambda tf, x, n: tf.zeros(tf.shape(x) + 1),
    "zeros_maximum": lambda tf, x, n: tf.zeros([tf.maximum(tf.shape(x)[1], 2), n]),
    "tile_stack": lambda tf, x, n: tf.tile(x, tf.stack([n, 1])),
    "tile_list": lambda tf, x, n: tf.tile(x, [2, n]),
    "tile_shape": lambda tf, x, n: tf.tile(x, tf.shape(x)),
    "tile_int64": lambda tf, x, n: tf.tile(x, tf.stack([tf.cast(n, tf.int64), 2])),
    "broadcast_to_shape": lambda tf, x, n: tf.broadcast_to(tf.reduce_sum(x), tf.shape(x)),
    "broadcast_to_column": lambda tf, x, n: tf.broadcast_to(x[:, :1], [n, 3]),
    "broadcast_to_new_axis": lambda tf, x, n: tf.broadcast_to(x, [2, n, 3]),
    "broadcast_to_stack": lambda tf, x, n: tf.broadcast_to(x[:1], tf.stack([2, n, 3])),
    "zeros_shape": lambda tf, x, n: tf.zeros(tf.shape(x)) + x,
    "zeros_int": lambda tf, x, n: tf.zeros([n, 2], tf.int32),
    "ones_list": lambda tf, x, n: tf.ones([n, 2]),
    "ones_scalar_size": lambda tf, x, n: tf.ones(n),
    "fill_shape": lambda tf, x, n: tf.fill(tf.shape(x), 2.0),
    "fill_value_from_x": lambda tf, x, n: tf.fill([n, 2], x[0, 1]),
    "fill_int": lambda tf, x, n: tf.fill([n], 2),
    "pad_rows": lambda tf, x, n: tf.pad(x, [[0, n], [1, 1]]),
    "pad_columns": lambda tf, x, n: tf.pad(x, [[1, 1], [n, 1]]),
    "pad_value": lambda tf, x, n: tf.pad(x, [[0, n], [1, 1]], constant_values=3.0),
    "pad_tensor": lambda tf, x, n: tf.pad(x, tf.stack([[1, 0], tf.stack([n - 3, 2])])),
    "pad_reflect": lambda tf, x, n: tf.pad(x, [[0, n - 2], [1, 1]], mode="REFLECT"),
    "pad_symmetric_unknown_dim": lambda tf, x, n: tf.pad(x, [[1, 2], [0, 3]], mode="SYMMETRIC"),
    "slice_size_tensor": lambda tf, x, n: tf.slice(x, [0, 1], [n - 1, -1]),
    "slice_begin_tensor": lambda tf, x, n: tf.slice(x, [n - 1, 1], [1, 2]),
    "slice_begin_tensor_to_end": lambda tf, x, n: tf.slice(x, [n - 1, 1], [-1, -1]),
    "slice_shape_minus_one": lambda tf, x, n: tf.slice(x, tf.stack([0, n - 4]), tf.shape(x) - 1),
    "slice_static": lambda tf, x, n: tf.slice(x, [1, 1], [-1, -1]),
    "concat_rows": lambda tf, x, n: tf.concat([x, x * 2.0], 0),
    "concat_mixed_sizes": lambda tf, x, n: tf.concat([x, x[:2] * 3.0, tf.sin(x)], 0),
    "concat_columns": lambda tf, x, n: tf.concat([x, x[:, :1] * 2.0], 1),
    "split_sizes_tensor": lambda tf, x, n: tf.split(x, [1, n - 1], 0),
    "split_minus_one": lambda tf, x, n: tf.split(x, [1, -1], 0),
    "split_columns": lambda tf, x, n: tf.split(x, [1, 2], 1),
    "split_stacked_sizes": lambda tf, x, n: tf.split(x, tf.stack([n - 2, 2]), 0),
    "split_even": lambda tf, x, n: tf.split(x, 2, 0),
    "where_one_argument": lambda tf, x, n: tf.where(x > 0.0),
    "where_int_condition": lambda tf, x, n: tf.where(tf.cast(x > 0.0, tf.int32)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_shapes_and_gradients_in_function(name):
    same(traced(CASES[name]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_tape_around_call(name):
    same(taped(CASES[name]))


def test_two_unknown_dimensions():
    def body(tf, x, n):
        m = tf.shape(x)[1]
        return (tf.reshape(x, [m, n]), tf.tile(x, [1, 2]), tf.concat([x, x], 1),
                tf.pad(x, [[m - 1, 0], [0, n]]), tf.broadcast_to(x[None], [2, n, m]))
    same(traced(body, signature=(None, None)))
    same(taped(body, signature=(None, None)))


def test_empty_batch():
    same(traced(lambda tf, x, n: (tf.reshape(x, [n * 3]), tf.tile(x, [n + 1, 1]), tf.concat([x, x], 0),
                                  tf.pad(x, [[n + 1, 0], [0, 0]]), tf.where(x > 0.0)),
                value=np.zeros((0, 3), np.float32)))


def test_second_order():
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(x):
            n = tf.shape(x)[0]
            y = tf.concat([tf.reshape(x, [n * 3]), tf.reshape(tf.tile(x, [n, 1]), [-1])], 0)
            y = tf.concat([y, tf.reshape(tf.pad(x, [[0, n], [1, 1]]), [-1])], 0)
            y = tf.concat([y, tf.reshape(tf.slice(x, [n - 2, 0], [-1, 2]), [-1])], 0)
            y = tf.concat([y, tf.reshape(tf.broadcast_to(x[:1], [n, 3]), [-1])], 0)
            y = tf.concat([y, tf.reshape(tf.pad(x, [[0, n - 2], [1, 1]], mode="REFLECT"), [-1])], 0)
            y = tf.concat([y, tf.split(x, [1, n - 1], 0)[1][:, 0], tf.fill([n], x[0, 0])], 0)
            g = tf.gradients(tf.reduce_sum(y * y * y), x)[0]
            return g, tf.gradients(tf.reduce_sum(g * g), x)[0]
        return f(tf.constant(X))
    same(prog)


def test_tf1_graph_placeholder_and_session():
    def prog(tf):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            n = tf.shape(x)[0]
            y = tf.concat([tf.reshape(x, [n * 3]), tf.reshape(tf.tile(x, tf.stack([n, 1])), [-1])], 0)
            g = tf.gradients(tf.reduce_sum(y * y), x)[0]
            shapes = [y.shape.as_list(), g.shape.as_list()]
            with tf.compat.v1.Session(graph=graph) as session:
                return session.run([y, g], feed_dict={x: X}), shapes
    same(prog)


def test_while_loop_with_shape_invariants():
    def body(tf, x, n):
        def step(i, v):
            return i + 1, tf.concat([v, tf.reshape(tf.tile(v[:1], [2, 1]), [-1, 3])], 0)
        _, v = tf.while_loop(lambda i, v: i < 2, step, (0, x),
                             shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, 3])))
        return v
    same(traced(body))


# -- sizes that are wrong when the graph runs ---------------------------------------------

RUNTIME_ERRORS = {
    "reshape_count": lambda tf, x, n: tf.reshape(x, [n * 2]),
    "reshape_two_minus_ones": lambda tf, x, n: tf.reshape(x, tf.stack([n - 5, -1])),
    "tile_negative": lambda tf, x, n: tf.tile(x, [n - 10, 1]),
    "broadcast_incompatible": lambda tf, x, n: tf.broadcast_to(x, [n + 1, 3]),
    "fill_negative": lambda tf, x, n: tf.fill([n - 10], 1.0),
    "zeros_negative": lambda tf, x, n: tf.zeros([n - 10, 2]),
    "pad_negative": lambda tf, x, n: tf.pad(x, [[0, n - 10], [0, 0]]),
    "pad_reflect_too_large": lambda tf, x, n: tf.pad(x, [[n, 0], [0, 0]], mode="REFLECT"),
    "pad_symmetric_too_large": lambda tf, x, n: tf.pad(x, [[5, 0], [0, 0]], mode="SYMMETRIC"),
    "slice_begin_out_of_range": lambda tf, x, n: tf.slice(x, [n + 1, 0], [-1, -1]),
    "slice_size_too_large": lambda tf, x, n: tf.slice(x, [0, 0], [n + 1, 3]),
    "split_sizes_do_not_add_up": lambda tf, x, n: tf.split(x, [1, n], 0),
    "split_minus_one_too_large": lambda tf, x, n: tf.split(x, [n + 1, -1], 0),
    "split_unknown_dim_static_sizes": lambda tf, x, n: tf.split(x, [1, 2], 0),
}


@pytest.mark.parametrize("name", sorted(RUNTIME_ERRORS))
def test_wrong_sizes_raise_when_the_graph_runs(name):
    body = RUNTIME_ERRORS[name]

    def prog(tf):
        f = tf.function(lambda x: body(tf, x, tf.shape(x)[0]),
                        input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        return f(tf.constant(X))
    ours = run(prog, tapeflow)
    assert isinstance(ours, Raised) and type(ours.exc).__name__ == "InvalidArgumentError", ours
    same(prog)


BUILD_ERRORS = {
    "reshape_known_count_mismatch": lambda tf, x, n: tf.reshape(x, [tf.shape(x)[1] * 5 + 1]),
    "tile_wrong_length": lambda tf, x, n: tf.tile(x, tf.stack([n, 1, 1])),
    "broadcast_to_known_mismatch": lambda tf, x, n: tf.broadcast_to(x, [n, 2]),
}


@pytest.mark.parametrize("name", sorted(BUILD_ERRORS))
def test_sizes_known_wrong_while_tracing_raise_value_error(name):
    body = BUILD_ERRORS[name]
    same(lambda tf: tf.function(lambda x: body(tf, x, tf.shape(x)[0]),
                                input_signature=[tf.TensorSpec([None, 3], tf.float32)])(tf.constant(X)))
    ours = run(lambda tf: tf.function(lambda x: body(tf, x, tf.shape(x)[0]),
                                      input_signature=[tf.TensorSpec([None, 3], tf.float32)])(tf.constant(X)),
               tapeflow)
    assert isinstance(ours, Raised) and isinstance(ours.exc, ValueError), ours


def test_shape_tensor_of_unknown_length_gives_an_unknown_rank():
    def prog(tf):
        ranks = []

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def f(x):
            dims = tf.boolean_mask(tf.shape(x), tf.shape(x) > 0)         # [4, 3], of unknown length
            y = tf.reshape(x * 2.0, dims)
            ranks.append((y.shape.rank, str(y.shape)))
            return y, tf.gradients(tf.reduce_sum(y * y), x)
        return f(tf.constant(X)), ranks
    same(prog)


# -- tapeflow specifics: eager and static sizes keep the attr path ------------------------------

def test_static_sizes_keep_the_attr_form():
    tf = tapeflow
    ops = {}

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        n = tf.shape(x)[0]
        known = tf.reshape(x, [tf.shape(x)[1] * 4, -1])        # every entry known while tracing
        dynamic = tf.reshape(x, [n * 3])
        ops["known"], ops["dynamic"] = known.op, dynamic.op
        return known, dynamic
    f(tf.constant(X))
    assert len(ops["known"].inputs) == 1 and ops["known"].get_attr("shape") == (12, -1)
    assert len(ops["dynamic"].inputs) == 2 and ops["dynamic"].type == "Reshape"


def test_constant_value_as_shape():
    tf = tapeflow
    from tapeflow.framework.shapes.known_values import constant_value, constant_value_as_shape
    seen = {}

    @tf.function(input_signature=[tf.TensorSpec([None, 3, None], tf.float32)])
    def f(x):
        s = tf.shape(x)
        seen["shape"] = constant_value_as_shape(s).as_list()
        seen["tail"] = constant_value_as_shape(s[1:]).as_list()
        seen["reversed"] = constant_value_as_shape(s[::-1]).as_list()
        seen["stack"] = constant_value_as_shape(tf.stack([s[1] * 2, s[0], -1])).as_list()
        seen["concat"] = constant_value_as_shape(tf.concat([[4], s[:2]], 0)).as_list()
        seen["entry"] = constant_value(s[1] + 1)
        seen["unknown"] = constant_value(s[0] + 1)
        return x
    f(tf.zeros([2, 3, 4]))
    assert seen["shape"] == [None, 3, None]
    assert seen["tail"] == [3, None]
    assert seen["reversed"] == [None, 3, None]
    assert seen["stack"] == [6, None, None]
    assert seen["concat"] == [4, None, 3]
    assert int(seen["entry"]) == 4 and seen["unknown"] is None


def test_where_one_argument_static_shape_in_graph():
    tf = tapeflow
    g = tf.Graph()
    with g.as_default():
        c = tf.compat.v1.placeholder(tf.bool, [None, 2, 5])
        w = tf.where(c)
        assert w.shape.as_list() == [None, 3] and w.dtype == tf.int64
        with tf.compat.v1.Session(graph=g) as session:
            mask = np.random.default_rng(0).random((3, 2, 5)) > 0.5
            np.testing.assert_array_equal(session.run(w, feed_dict={c: mask}), np.argwhere(mask))


def test_slice_begin_from_variable():
    def prog(tf):
        begin = tf.Variable([1, 0])
        shapes = []

        @tf.function
        def f(x):
            y = tf.slice(x, begin, [2, -1])
            shapes.append(y.shape.as_list())
            return y, tf.gradients(tf.reduce_sum(y * y), x)
        return f(tf.constant(X)), shapes
    same(prog)
