"""Tensors of unknown rank in graphs, differential against TensorFlow.

`tf.compat.v1.placeholder(tf.float32)` and `tf.TensorSpec(None)` make tensors
whose rank is unknown while the graph is built (Note [unknown rank] in
graph/graph.py).  A bounded subset of ops takes them: elementwise ops,
broadcasting binary ops, reductions, shape/size/rank, reshape, broadcast_to,
matmul, squeeze without axis and softmax on the last axis.  Each case checks,
against TensorFlow: the static shapes (`t.shape.rank` and `str(t.shape)`:
`as_list()` raises for an unknown rank), the values for fed arrays of several
ranks run through one graph, and the gradients from `tf.gradients` and from
tapes.  Other ops raise a ValueError that names the op (tapeflow only: many of
them work in TensorFlow).
"""

import warnings

import numpy as np
import pytest

import tapeflow
from differential import same

X0 = np.float32(0.7)
X1 = np.array([0.5, -1.0, 2.0], np.float32)
X3 = np.linspace(-1.5, 1.2, 12).reshape(2, 2, 3).astype(np.float32)
X23 = np.linspace(-1.0, 1.5, 6).reshape(2, 3).astype(np.float32)
K = np.linspace(0.5, -0.7, 6).reshape(3, 2).astype(np.float32)


def _static(t):
    """What TensorFlow tells about a static shape of any rank."""
    return t.shape.rank, str(t.shape), t.dtype


def _graph_program(build, feeds, wrt=None):
    """A program building `build(tf, x)` on `x = placeholder(tf.float32)` (unknown rank) in a TF1
    graph: it returns the outputs' static shapes, and their values (with the gradients of their sum
    with respect to x by `tf.gradients`, when `wrt` is set) for each array of `feeds` fed to x."""
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32)
            outs = build(tf, x)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            grads = []
            if wrt:
                loss = tf.add_n([tf.reduce_sum(o) for o in outs if o.dtype == tf.float32])
                grads = tf.gradients(loss, x)
        static = [_static(t) for t in outs + grads]
        with tf.compat.v1.Session(graph=g) as sess:
            values = [[np.asarray(r) for r in sess.run(outs + grads, {x: v})] for v in feeds]   # compared closely
        return static, values
    return prog


# -- placeholders and Session feeds ------------------------------------------------------------

def test_placeholder_of_unknown_rank():
    def prog(tf):
        with tf.Graph().as_default():
            a = tf.compat.v1.placeholder(tf.float32)
            b = tf.compat.v1.placeholder(tf.int32, shape=None, name="b")
            return [_static(t) for t in (a, b)], a.shape.ndims, a.shape.dims, a.shape.is_fully_defined()
    same(prog)


def test_one_graph_fed_with_ranks_0_1_and_3():
    def build(tf, x):
        y = x * 2.0 + 1.0
        return y, tf.reduce_sum(y), tf.shape(x), tf.size(x), tf.rank(x)
    same(_graph_program(build, [X0, X1, X3]))


@pytest.mark.parametrize("value", [[["a"]], [[1.0], [2.0, 3.0]]], ids=["str", "ragged"])
def test_feed_dtype_is_still_checked(value):
    same(_graph_program(lambda tf, x: x + 1.0, [value]))


def test_feed_int_into_float_converts():
    same(_graph_program(lambda tf, x: x * 0.5, [np.arange(4, dtype=np.int64).reshape(2, 2)]))


def test_set_shape_gives_the_rank():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32)
            x.set_shape([None, 3])
            y = tf.transpose(x)                # needs the rank, known now
        with tf.compat.v1.Session(graph=g) as sess:
            return x.shape.as_list(), y.shape.as_list(), sess.run(y, {x: X23})
    same(prog)


# -- static shapes and values of the subset ----------------------------------------------------

def _cast_add(tf, x):
    return tf.cast(x, tf.int32) + 1


SUBSET = {
    # unary elementwise ops
    "negative": lambda tf, x: -x,
    "exp": lambda tf, x: tf.exp(x),
    "square": lambda tf, x: tf.square(x),
    "abs": lambda tf, x: tf.abs(x),
    "cast": lambda tf, x: tf.cast(x, tf.int32),
    "cast_add": _cast_add,
    "identity": lambda tf, x: tf.identity(x),
    "stop_gradient": lambda tf, x: tf.stop_gradient(x),
    "zeros_like": lambda tf, x: tf.zeros_like(x),
    "ones_like": lambda tf, x: tf.ones_like(x, dtype=tf.int32),
    "relu": lambda tf, x: tf.nn.relu(x),
    "sigmoid": lambda tf, x: tf.sigmoid(x),
    "tanh": lambda tf, x: tf.tanh(x),
    "softplus": lambda tf, x: tf.nn.softplus(x),
    "is_nan": lambda tf, x: tf.math.is_nan(x),
    "erf": lambda tf, x: tf.math.erf(x),
    "logical_not": lambda tf, x: tf.logical_not(x > 0.0),
    # binary broadcasting ops
    "add_const": lambda tf, x: x + tf.constant([1.0, 2.0, 3.0]),
    "add_known_rank": lambda tf, x: x + tf.ones([2, 3]),
    "sub": lambda tf, x: 1.0 - x,
    "mul_self": lambda tf, x: x * x,
    "realdiv": lambda tf, x: x / 2.0,
    "maximum": lambda tf, x: tf.maximum(x, 0.0),
    "minimum": lambda tf, x: tf.minimum(x, tf.constant([0.0, 1.0, 0.5])),
    "pow": lambda tf, x: tf.pow(x, 2.0),
    "squared_difference": lambda tf, x: tf.math.squared_difference(x, 0.5),
    "less": lambda tf, x: x < tf.constant([0.0, 1.0, 0.5]),
    "equal": lambda tf, x: tf.equal(x, x),
    "logical_and": lambda tf, x: tf.logical_and(x > -1.0, x < 1.0),
    "where": lambda tf, x: tf.where(x > 0.0, x, tf.zeros([3])),
    "add_n": lambda tf, x: tf.add_n([x, x, x]),
    "broadcast_to_list": lambda tf, x: tf.broadcast_to(x, [2, 2, 3]),
    "broadcast_to_shape_tensor": lambda tf, x: tf.broadcast_to(x, tf.shape(tf.ones([2, 2, 3]))),
    "broadcast_to_shape_of_x": lambda tf, x: tf.broadcast_to(tf.constant(1.0), tf.shape(x)),
    # reductions
    "reduce_sum": lambda tf, x: tf.reduce_sum(x),
    "reduce_sum_keepdims": lambda tf, x: tf.reduce_sum(x, keepdims=True),
    "reduce_sum_axis": lambda tf, x: tf.reduce_sum(x, -1),
    "reduce_sum_axes_keepdims": lambda tf, x: tf.reduce_sum(x, [0, -1], keepdims=True),
    "reduce_mean": lambda tf, x: tf.reduce_mean(x),
    "reduce_mean_axis": lambda tf, x: tf.reduce_mean(x, axis=0),
    "reduce_max": lambda tf, x: tf.reduce_max(x),
    "reduce_min_axis": lambda tf, x: tf.reduce_min(x, axis=-1, keepdims=True),
    "reduce_prod": lambda tf, x: tf.reduce_prod(x),
    "reduce_any": lambda tf, x: tf.reduce_any(x > 0.0),
    "reduce_all_axis": lambda tf, x: tf.reduce_all(x > -1.0, axis=1),
    "reduce_logsumexp": lambda tf, x: tf.reduce_logsumexp(x),
    "reduce_logsumexp_axis": lambda tf, x: tf.reduce_logsumexp(x, -1),
    # shape queries
    "shape": lambda tf, x: tf.shape(x),
    "shape_int64": lambda tf, x: tf.shape(x, out_type=tf.int64),
    "size": lambda tf, x: tf.size(x),
    "rank": lambda tf, x: tf.rank(x),
    "zeros_of_shape": lambda tf, x: tf.zeros(tf.shape(x)),
    "fill_of_shape": lambda tf, x: tf.fill(tf.shape(x), 2.0),
    # reshape
    "reshape_flat": lambda tf, x: tf.reshape(x, [-1]),
    "reshape_known": lambda tf, x: tf.reshape(x, [3, 2]),
    "reshape_minus_one": lambda tf, x: tf.reshape(x, [-1, 3]),
    "reshape_to_shape_of_x": lambda tf, x: tf.reshape(tf.range(6.0), tf.shape(x)),
    # matmul, squeeze, softmax
    "matmul": lambda tf, x: tf.matmul(x, tf.constant(K)),
    "matmul_transposed": lambda tf, x: tf.matmul(tf.constant(K), x, transpose_a=True, transpose_b=True),
    "matmul_operator": lambda tf, x: x @ tf.constant(K),
    "squeeze": lambda tf, x: tf.squeeze(x),
    "softmax": lambda tf, x: tf.nn.softmax(x),
    "log_softmax": lambda tf, x: tf.nn.log_softmax(x, axis=-1),
}


@pytest.mark.parametrize("name", list(SUBSET))
def test_static_shapes_and_values(name):
    same(_graph_program(SUBSET[name], [X23]))


def test_squeeze_of_unknown_dims_has_unknown_rank():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3, 1])
            y = tf.squeeze(x)
            dx = tf.gradients(tf.reduce_sum(y * y), x)[0]
        with tf.compat.v1.Session(graph=g) as sess:
            return _static(y), _static(dx), sess.run([y, dx], {x: np.ones((1, 3, 1), np.float32)})
    same(prog)


# -- gradients with tf.gradients -----------------------------------------------------------------

GRADIENTS = {
    "sum_of_polynomial": (lambda tf, x: tf.reduce_sum(x * x + tf.constant(0.5) * x), [X0, X1, X3]),
    "broadcast_against_vector": (lambda tf, x: x * tf.constant([1.0, 2.0, 3.0]) + 1.0, [X0, X1, X3]),
    "mean_of_softmax": (lambda tf, x: tf.reduce_mean(tf.nn.softmax(x)), [X1, X3]),
    "log_softmax": (lambda tf, x: tf.nn.log_softmax(x) * tf.constant([1.0, 0.0, -2.0]), [X1, X3]),
    "reshape_flat": (lambda tf, x: tf.reshape(x, [-1]) ** 2, [X0, X1, X3]),
    "matmul": (lambda tf, x: tf.sin(tf.matmul(x, tf.constant(K))), [X23, X3]),
    "matmul_transposed": (lambda tf, x: tf.matmul(tf.constant(K), x, transpose_a=True, transpose_b=True),
                          [X23, X3]),
    "unary_chain": (lambda tf, x: tf.nn.relu(tf.tanh(x) + tf.sigmoid(x) * tf.nn.softplus(x) - 0.5), [X0, X1, X3]),
    "maximum_and_where": (lambda tf, x: tf.where(x > 0.0, tf.maximum(x, 0.3), x * x), [X0, X1, X3]),
    "pow_and_division": (lambda tf, x: tf.pow(x, 3.0) / (1.0 + x * x), [X0, X1, X3]),
    "cast_round_trip": (lambda tf, x: tf.cast(tf.cast(x, tf.float64) * 2.0, tf.float32), [X0, X3]),
    "reduce_sum_axis": (lambda tf, x: tf.reduce_sum(x * x, axis=-1) ** 2, [X1, X3]),
    "reduce_mean_axes_keepdims": (lambda tf, x: tf.reduce_mean(tf.exp(x), axis=[0, -1], keepdims=True) * x,
                                  [X1, X3]),
    "reduce_mean_all": (lambda tf, x: tf.reduce_mean(x * x), [X0, X1, X3]),
    "reduce_max_axis": (lambda tf, x: tf.reduce_max(x, axis=0), [X1, X3]),
    "reduce_min_all_with_ties": (lambda tf, x: tf.reduce_min(tf.round(x)), [X1, X3]),
    "reduce_prod_all": (lambda tf, x: tf.reduce_prod(x), [X0, X1, X3]),
    "reduce_logsumexp_axis": (lambda tf, x: tf.reduce_logsumexp(x, axis=-1), [X1, X3]),
    "reduce_logsumexp_all": (lambda tf, x: tf.reduce_logsumexp(x * 2.0), [X0, X3]),
    "broadcast_to_shape_tensor": (lambda tf, x: tf.broadcast_to(x, tf.shape(tf.ones([2, 2, 3]))) ** 2, [X0, X1, X3]),
    "squeeze": (lambda tf, x: tf.squeeze(x) ** 2, [X1, X3]),
    "add_n_of_identities": (lambda tf, x: tf.add_n([tf.identity(x), x * 2.0, tf.stop_gradient(x)]), [X0, X3]),
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_gradients(name):
    build, feeds = GRADIENTS[name]
    same(_graph_program(build, feeds, wrt=True))


def test_gradients_of_two_unknown_rank_inputs_broadcast_together():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32)
            w = tf.compat.v1.placeholder(tf.float32)
            v = tf.compat.v1.placeholder(tf.float32, [3])
            y = tf.reduce_sum(tf.sin(x * w) + w * v - x / (1.0 + v * v))
            grads = tf.gradients(y, [x, w, v])
        with tf.compat.v1.Session(graph=g) as sess:
            feeds = [(X3, X1), (X1, X3), (X0, X0), (X3[:1, :1], X3)]
            values = [[np.asarray(r) for r in sess.run(grads, {x: a, w: b, v: X1})] for a, b in feeds]
        return [_static(t) for t in grads], values
    same(prog)


def test_second_order_gradients():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32)
            y = tf.reduce_sum(tf.sin(x) * x * tf.constant([1.0, 2.0, 3.0])) + tf.reduce_sum(tf.reduce_max(x * x, -1))
            dx = tf.gradients(y, x)[0]
            ddx = tf.gradients(tf.reduce_sum(dx * dx), x)[0]
        with tf.compat.v1.Session(graph=g) as sess:
            values = [[np.asarray(r) for r in sess.run([dx, ddx], {x: v})] for v in (X1, X23, X3)]
        return [_static(t) for t in (dx, ddx)], values
    same(prog, rtol=1e-4, atol=1e-4)


# -- tf.function with an input_signature of unknown rank --------------------------------------------

def _loss(tf, x):
    return (tf.reduce_sum(x * x + 0.5 * x) + tf.reduce_mean(tf.nn.softmax(x)) + tf.reduce_max(x)
            + tf.reduce_sum(tf.reshape(x, [-1]) * 2.0))


def test_function_with_a_tape_inside_traces_once():
    def prog(tf):
        static = []

        @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = _loss(tf, x)
            g = tape.gradient(y, x)
            static.append([_static(t) for t in (x, y, g)])
            return y, g
        results = [f(tf.constant(v)) for v in (X1, X1.reshape(3, 1), X3)]
        return results, static, f.experimental_get_tracing_count()
    same(prog)


def test_function_gradients_inside():
    def prog(tf):
        @tf.function(input_signature=[tf.TensorSpec(None, tf.float32), tf.TensorSpec([3], tf.float32)])
        def f(x, v):
            return tf.gradients(tf.reduce_sum(x * v + tf.matmul(tf.reshape(x, [-1, 3]), tf.reshape(v, [3, 1]))),
                                [x, v])
        return [f(tf.constant(a), tf.constant(X1)) for a in (X1, X3)]
    same(prog)


def test_tape_around_a_function_of_unknown_rank():
    def prog(tf):
        f = tf.function(lambda x: _loss(tf, x), input_signature=[tf.TensorSpec(None, tf.float32)])
        out = []
        for v in (X1, X3):
            x = tf.constant(v)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            out.append((y, tape.gradient(y, x)))
        return out
    same(prog)


def test_nested_function_call_of_unknown_rank():
    def prog(tf):
        inner = tf.function(lambda x: tf.tanh(x) * 3.0)

        @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
        def outer(x):
            y = inner(x)
            return y, tf.gradients(tf.reduce_sum(y), x)[0], y.shape.rank
        return [outer(tf.constant(v)) for v in (X0, X3)]
    same(prog)


def test_function_of_unknown_rank_called_with_known_shapes():
    """The call's static shapes come from the body inferred again for the caller's shapes (the
    reduction axes made for an unknown rank are normalized then)."""
    def prog(tf):
        inner = tf.function(lambda x: (tf.reduce_sum(tf.tanh(x) * 3.0, -1) + tf.reshape(x, [-1])[0],
                                       tf.reduce_max(x, keepdims=True), tf.reduce_logsumexp(x, [0, -1])),
                            input_signature=[tf.TensorSpec(None, tf.float32)])

        static = []

        @tf.function
        def outer(x):
            ys = inner(x)
            static.append([_static(y) for y in ys])
            return ys, tf.gradients(tf.add_n([tf.reduce_sum(y) for y in ys]), x)[0]
        return outer(tf.constant(X3)), outer(tf.constant(X23)), static
    same(prog)


def test_concrete_function_of_unknown_rank_spec():
    def prog(tf):
        f = tf.function(lambda x: tf.reduce_sum(x * 2.0), input_signature=[tf.TensorSpec(None, tf.float32)])
        concrete = f.get_concrete_function()
        return concrete(tf.constant(X3)), _static(concrete.inputs[0] if hasattr(concrete, "inputs") else None)
    same(prog)


# -- what still needs a rank (tapeflow raises; TensorFlow often runs them) ----------------------------

NEEDS_RANK = {
    "concat": (lambda tf, x: tf.concat([x, x], 0), "ConcatV2"),
    "transpose": (lambda tf, x: tf.transpose(x), "Transpose"),
    "getitem": (lambda tf, x: x[0], "StridedSlice"),
    "slice": (lambda tf, x: tf.slice(x, [0], [1]), "Slice"),
    "gather": (lambda tf, x: tf.gather(x, [0]), "GatherV2"),
    "stack": (lambda tf, x: tf.stack([x, x]), "Pack"),
    "unstack": (lambda tf, x: tf.unstack(x), "Unpack"),
    "split": (lambda tf, x: tf.split(x, 2), "Split"),
    "expand_dims": (lambda tf, x: tf.expand_dims(x, 0), "ExpandDims"),
    "squeeze_axis": (lambda tf, x: tf.squeeze(x, [0]), "Squeeze"),
    "tile": (lambda tf, x: tf.tile(x, [2]), "Tile"),
    "pad": (lambda tf, x: tf.pad(x, [[1, 1]]), "Pad"),
    "reverse": (lambda tf, x: tf.reverse(x, [0]), "ReverseV2"),
    "argmax": (lambda tf, x: tf.argmax(x), "ArgMax"),
    "cumsum": (lambda tf, x: tf.cumsum(x), "Cumsum"),
    "top_k": (lambda tf, x: tf.math.top_k(x), "TopKV2"),
    "einsum": (lambda tf, x: tf.einsum("ij->ji", x), "Einsum"),
    "one_hot": (lambda tf, x: tf.one_hot(tf.cast(x, tf.int32), 3), "OneHot"),
    "conv2d": (lambda tf, x: tf.nn.conv2d(x, tf.ones([1, 1, 1, 1]), 1, "SAME"), "Conv2D"),
    "max_pool": (lambda tf, x: tf.nn.max_pool2d(x, 2, 1, "VALID"), "MaxPool"),
    "bias_add": (lambda tf, x: tf.nn.bias_add(x, tf.ones([3])), "BiasAdd"),
    "softmax_other_axis": (lambda tf, x: tf.nn.softmax(x, axis=0), "Softmax"),
    "softmax_cross_entropy": (lambda tf, x: tf.nn.softmax_cross_entropy_with_logits(labels=x, logits=x),
                              "SoftmaxCrossEntropyWithLogits"),
    "matrix_inverse": (lambda tf, x: tf.linalg.inv(x), "MatrixInverse"),
    "cond": (lambda tf, x: tf.cond(tf.constant(True), lambda: x, lambda: x), "If"),
    "while_loop": (lambda tf, x: tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v), (0, x)), "While"),
    "variable": (lambda tf, x: tf.Variable(x), "Variable"),
    "where_coordinates": (lambda tf, x: tf.where(x > 0.0), "Where"),
    "segment_sum": (lambda tf, x: tf.math.segment_sum(x, [0, 0]), "SegmentSum"),
}


@pytest.mark.parametrize("name", list(NEEDS_RANK))
def test_ops_that_need_a_rank_raise_a_clear_value_error(name):
    tf = tapeflow
    build, op_type = NEEDS_RANK[name]
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32)
        with pytest.raises(ValueError, match=f"'{op_type}' needs inputs of known rank") as info:
            build(tf, x)
    message = str(info.value)
    assert ":0, " in message and "has unknown rank" in message and "set_shape" in message    # names the tensor, the fix


def test_ops_that_need_a_rank_raise_in_functions_too():
    tf = tapeflow
    f = tf.function(lambda x: tf.concat([x, x], 0), input_signature=[tf.TensorSpec(None, tf.float32)])
    with pytest.raises(ValueError, match="'ConcatV2' needs inputs of known rank"):
        f(tf.constant(X1))


def test_prod_gradient_over_given_axes_needs_a_rank():
    tf = tapeflow
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32)
        y = tf.reduce_prod(x, axis=0)
        assert y.shape.rank is None
        with pytest.raises(ValueError, match="reduce_prod over given axes needs an input of known rank"):
            tf.gradients(y, x)


def test_known_ranks_are_unchanged():
    """The shape rules of known ranks run as before: no unknown-rank rule is consulted."""
    def prog(tf):
        with tf.Graph().as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            outs = [tf.reduce_sum(x, -1), tf.reshape(x, [-1]), tf.exp(x) + x, tf.matmul(x, tf.constant(K)),
                    tf.nn.softmax(x), tf.shape(x), tf.squeeze(x)]
            return [o.shape.as_list() for o in outs]
    same(prog)


@pytest.mark.parametrize("axes", [[0, -1], [1], [-2, 0]])
def test_reduction_gradient_keeps_the_reduced_axes_of_an_input_of_unknown_rank(axes):
    """The gradient of a reduction without keepdims puts the reduced axes back as size 1 when
    the graph runs (the ReducedShape op), for axes counted from either end."""
    tf = tapeflow

    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.square(tf.reduce_sum(x * x, axis=axes)))
        return tape.gradient(y, x)

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10

    def expected(x):                    # d/dx sum(s^2), s = sum(x^2) over the axes: 2 s * 2 x
        return 4 * x * np.sum(x * x, axis=tuple(axes), keepdims=True)

    np.testing.assert_allclose(grad(tf.constant(x)).numpy(), expected(x), rtol=1e-5)


def test_reduced_shape_op_vectorizes_over_shape_vectors():
    """ReducedShape (the kept shape of a reduction's gradient) has a batching rule: one shape per example."""
    from tapeflow.framework.op_def import execute
    from tapeflow.ops.core.primitives import _reduced_shape
    shapes = tapeflow.constant([[2, 3, 4], [5, 6, 7]])
    kept = tapeflow.vectorized_map(lambda s: execute(_reduced_shape, [s], {"axes": (0, -1)}), shapes)
    np.testing.assert_array_equal(kept.numpy(), [[1, 3, 1], [1, 6, 1]])


_UNKNOWN_RANK_EXAMPLES = {
    "sum_all": lambda tf, x: tf.reduce_sum(x),
    "mean_all": lambda tf, x: tf.reduce_mean(x),
    "max_last": lambda tf, x: tf.reduce_max(x, axis=-1),
    "sum_first_and_last": lambda tf, x: tf.reduce_sum(x, axis=[0, -1]),
    "min_last_kept": lambda tf, x: tf.reduce_min(x, axis=-1, keepdims=True),
    "logsumexp_last": lambda tf, x: tf.reduce_logsumexp(x, axis=-1),
}


@pytest.mark.parametrize("name", sorted(_UNKNOWN_RANK_EXAMPLES))
def test_vectorized_map_over_examples_of_unknown_rank(name):
    """A function traced for examples of unknown rank, vectorized: reductions over axes counted
    from the end, or over every axis, keep their meaning for each example."""
    tf, fn = tapeflow, _UNKNOWN_RANK_EXAMPLES[name]
    f = tf.function(lambda x: fn(tf, x), input_signature=[tf.TensorSpec(None, tf.float32)])
    batch = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # a loop over the examples would warn
        got = tf.vectorized_map(f, tf.constant(batch))
    want = np.stack([fn(tf, tf.constant(row)).numpy() for row in batch])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_vectorized_sum_of_every_axis_kept_runs_per_example():
    """keepdims over every axis of examples of unknown rank has no batched form (the kept shape has
    the unknown rank): the op runs once per example, with a warning, and the values are right."""
    tf = tapeflow
    f = tf.function(lambda x: tf.reduce_sum(x, keepdims=True), input_signature=[tf.TensorSpec(None, tf.float32)])
    batch = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with pytest.warns(UserWarning, match="once per example"):
        got = tf.vectorized_map(f, tf.constant(batch))
    np.testing.assert_allclose(got.numpy(), batch.sum(axis=(1, 2), keepdims=True))
