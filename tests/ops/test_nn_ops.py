"""Spec rows for tf.nn ops (activations, softmax, cross-entropies, layer helpers)."""

import numpy as np
import pytest
import scipy.special

import tapeflow as tf
from differential import same
from op_harness import (
    OpSpec, any_real, away_from_zero, define_graph_tests, define_tests, define_unknown_dims_tests, positive, tf_module,
    traced_static_and_values,
)

UNARY = [((3,),), ((),), ((2, 3),), ((0,),), ((1,),)]
ROWS = [((2, 3),), ((3,),), ((2, 3, 4),), ((0, 3),), ((1, 1),), ((2, 0),), ((0,),)]   # last two: no classes


def distribution(rng, shape, dtype):
    """Rows of probabilities along the last axis (labels of the dense cross-entropy)."""
    p = rng.uniform(0.1, 1.0, shape)
    return (p / p.sum(-1, keepdims=True) if p.size else p).astype(dtype)


def class_labels(rng, shapes):
    shape = shapes[0]
    return [rng.integers(0, shape[-1], shape[:-1]).astype(np.int32)]


def np_softmax(x, axis=-1):
    return scipy.special.softmax(x, axis) if x.size else x


def np_log_softmax(x, axis=-1):
    return x - scipy.special.logsumexp(x, axis=axis, keepdims=True) if x.size else x


def np_sparse_xent(x, labels):
    ls = np_log_softmax(x)
    return -np.take_along_axis(ls, labels[..., None].astype(np.int64), -1)[..., 0]


def np_xent(x, z, axis=-1):
    return -np.sum(z * np_log_softmax(x, axis), axis=axis)


# TensorFlow's SoftmaxCrossEntropyWithLogits gradient sends the labels nothing from the gradient of its
# backprop output (softmax - labels): its d/dlabels of the logits gradient is 0 instead of -dy.
TF_XENT_SECOND = {"tf_second_order_skip": ((0, 1),)}


SPECS = [
    OpSpec("relu", lambda tf, x: tf.nn.relu(x), lambda x: np.maximum(x, 0), UNARY, sampler=away_from_zero),
    OpSpec("softmax", lambda tf, x: tf.nn.softmax(x), np_softmax, ROWS),
    OpSpec("softmax_axis0", lambda tf, x: tf.nn.softmax(x, axis=0), lambda x: np_softmax(x, 0),
           [((2, 3),), ((2, 3, 4),), ((0, 3),)]),
    OpSpec("log_softmax", lambda tf, x: tf.nn.log_softmax(x), np_log_softmax, ROWS),
    OpSpec("log_softmax_axis1", lambda tf, x: tf.nn.log_softmax(x, axis=1), lambda x: np_log_softmax(x, 1),
           [((2, 3, 4),), ((2, 0, 4),)]),
    OpSpec("sparse_softmax_xent",
           lambda tf, x, labels: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x),
           np_sparse_xent, [((2, 3),), ((3,),), ((2, 3, 4),), ((0, 3),), ((1, 1),)], extra=class_labels),
    OpSpec("softmax_xent",
           lambda tf, x, z: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
           np_xent, [((2, 3), (2, 3)), ((3,), (3,)), ((2, 3, 4), (2, 3, 4)), ((0, 3), (0, 3)), ((1, 1), (1, 1)),
                     ((2, 0), (2, 0)), ((0,), (0,))], sampler=(any_real, distribution), **TF_XENT_SECOND),
    # TensorFlow broadcasts labels in the forward pass but cannot differentiate that; compare with explicit broadcast.
    OpSpec("softmax_xent_broadcast_labels",
           lambda tf, x, z: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
           np_xent, [((2, 3), (3,)), ((2, 4, 3), (2, 1, 3))], sampler=(any_real, distribution),
           tf_fn=lambda tf, x, z: tf.nn.softmax_cross_entropy_with_logits(labels=tf.broadcast_to(z, x.shape), logits=x),
           **TF_XENT_SECOND),
    OpSpec("softmax_xent_axis0",
           lambda tf, x, z: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x, axis=0),
           lambda x, z: np_xent(x, z, 0), [((3, 2), (3, 2)), ((4, 2, 3), (4, 2, 3)), ((0, 2), (0, 2))],
           sampler=(any_real, lambda rng, s, d: np.moveaxis(distribution(rng, s[1:] + s[:1], d), -1, 0)),
           **TF_XENT_SECOND),
]


def np_sigmoid_xent(x, z):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def unit_interval(rng, shape, dtype):
    return rng.uniform(0.05, 0.95, shape).astype(dtype)


def counts(rng, shape, dtype):
    return rng.integers(0, 5, shape).astype(dtype)


def np_moments(x, axes, keepdims=False):
    return [x.mean(axis=axes, keepdims=keepdims), x.var(axis=axes, keepdims=keepdims)]


def ids_for(rows):
    return lambda rng, shapes: [rng.integers(0, shapes[0][0], rows).astype(np.int32)]


SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

SPECS += [
    OpSpec("relu6", lambda tf, x: tf.nn.relu6(x * 4.0), lambda x: np.clip(x * 4, 0, 6), UNARY, sampler=away_from_zero),
    OpSpec("leaky_relu", lambda tf, x: tf.nn.leaky_relu(x, alpha=0.3), lambda x: np.where(x > 0, x, 0.3 * x), UNARY,
           sampler=away_from_zero),
    OpSpec("elu", lambda tf, x: tf.nn.elu(x), lambda x: np.where(x > 0, x, np.expm1(x)), UNARY, sampler=away_from_zero),
    OpSpec("selu", lambda tf, x: tf.nn.selu(x), lambda x: SELU_S * np.where(x > 0, x, SELU_A * np.expm1(x)), UNARY,
           sampler=away_from_zero),
    OpSpec("gelu", lambda tf, x: tf.nn.gelu(x), lambda x: 0.5 * x * (1 + scipy.special.erf(x / np.sqrt(2))), UNARY),
    OpSpec("gelu_approximate", lambda tf, x: tf.nn.gelu(x, approximate=True),
           lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), UNARY),
    OpSpec("silu", lambda tf, x: tf.nn.silu(x), lambda x: x * scipy.special.expit(x), UNARY),
    OpSpec("silu_beta", lambda tf, x: tf.nn.silu(x, beta=2.0), lambda x: x * scipy.special.expit(2 * x), UNARY),
    OpSpec("swish", lambda tf, x: tf.nn.swish(x), lambda x: x * scipy.special.expit(x), [((2, 3),)]),
    OpSpec("softplus", lambda tf, x: tf.nn.softplus(x), lambda x: np.logaddexp(0, x), UNARY),
    OpSpec("softsign", lambda tf, x: tf.nn.softsign(x), lambda x: x / (1 + np.abs(x)), UNARY, sampler=away_from_zero),
    OpSpec("sigmoid_xent", lambda tf, x, z: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
           np_sigmoid_xent, [((3,), (3,)), ((), ()), ((2, 3), (2, 3)), ((0,), (0,))],
           sampler=(away_from_zero, unit_interval)),
    OpSpec("weighted_xent", lambda tf, x, z: tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=1.7),
           lambda x, z: (1 - z) * x + (1 + 0.7 * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)),
           [((3,), (3,)), ((2, 3), (2, 3))], sampler=(away_from_zero, unit_interval)),
    OpSpec("log_poisson_loss", lambda tf, x, z: tf.nn.log_poisson_loss(z, x, compute_full_loss=True),
           lambda x, z: np.exp(x) - x * z + np.where(z > 1, z * np.log(np.maximum(z, 1)) - z + 0.5 * np.log(2 * np.pi * np.maximum(z, 1)), 0),
           [((5,), (5,)), ((2, 3), (2, 3))], sampler=(any_real, counts),
           wrt=(0,)),     # targets: TensorFlow's gradient is NaN at 0 (log 0 masked by a where), ours finite
    OpSpec("bias_add", lambda tf, x, b: tf.nn.bias_add(x, b), lambda x, b: x + b,
           [((2, 3), (3,)), ((2, 4, 4, 3), (3,)), ((0, 3), (3,)), ((2, 1), (1,))]),
    OpSpec("bias_add_nchw", lambda tf, x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
           lambda x, b: x + b.reshape((-1,) + (1,) * (x.ndim - 2)), [((2, 3, 4, 2), (3,)), ((2, 3), (3,))]),
    OpSpec("l2_loss", lambda tf, x: tf.nn.l2_loss(x), lambda x: np.sum(x * x) / 2, UNARY),
    # TensorFlow's variance uses stop_gradient(mean): right to first order, not its second order.
    OpSpec("moments", lambda tf, x: list(tf.nn.moments(x, axes=[0])), lambda x: np_moments(x, 0),
           [((4, 3),), ((5,),), ((1, 2),)], tf_second_order_skip=((0, 0),)),
    OpSpec("moments_keepdims", lambda tf, x: list(tf.nn.moments(x, axes=[0, 1, 2], keepdims=True)),
           lambda x: np_moments(x, (0, 1, 2), True), [((2, 3, 2, 2),)], tf_second_order_skip=((0, 0),)),
    OpSpec("batch_normalization",
           lambda tf, x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
           lambda x, m, v, o, s: (x - m) / np.sqrt(v + 1e-3) * s + o,
           [((4, 3), (3,), (3,), (3,), (3,)), ((2, 2, 2, 3), (3,), (3,), (3,), (3,))],
           sampler=(any_real, any_real, positive, any_real, any_real)),
    OpSpec("batch_normalization_no_affine",
           lambda tf, x, m, v: tf.nn.batch_normalization(x, m, v, None, None, 1e-3),
           lambda x, m, v: (x - m) / np.sqrt(v + 1e-3), [((4, 3), (3,), (3,))], sampler=(any_real, any_real, positive)),
    OpSpec("embedding_lookup", lambda tf, p, ids: tf.nn.embedding_lookup(p, ids), lambda p, ids: p[ids],
           [((5, 3),), ((4,),), ((6, 2, 2),)], extra=ids_for((2, 3))),
    OpSpec("embedding_lookup_list", lambda tf, p, q, ids: tf.nn.embedding_lookup([p, q], ids),
           lambda p, q, ids: np.concatenate([p, q])[ids], [((3, 2), (2, 2))],
           extra=lambda rng, shapes: [np.array([0, 4, 2, 3, 3], np.int32)]),
    OpSpec("embedding_lookup_max_norm", lambda tf, p, ids: tf.nn.embedding_lookup(p, ids, max_norm=1.0),
           lambda p, ids: p[ids] * np.minimum(1.0, 1.0 / np.linalg.norm(p[ids], axis=-1, keepdims=True)),
           [((5, 3),)], extra=ids_for((4,))),
]

# Random ops with degenerate parameters give TensorFlow's exact values (and gradients to the parameters).
SPECS += [
    OpSpec("dropout_rate0", lambda tf, x: tf.nn.dropout(x, 0.0), lambda x: x, [((2, 3),), ((0,),)]),
    OpSpec("random_normal_zero_stddev", lambda tf, m: tf.random.normal([2, 3], mean=m, stddev=0.0, dtype=m.dtype),
           lambda m: np.broadcast_to(m, (2, 3)), [((3,),), ((),)]),
    OpSpec("truncated_normal_zero_stddev", lambda tf, m: tf.random.truncated_normal([2, 3], mean=m, stddev=0.0, dtype=m.dtype),
           lambda m: np.broadcast_to(m, (2, 3)), [((3,),)]),
    OpSpec("random_uniform_int_single_value",
           lambda tf, x: x + tf.cast(tf.random.uniform([3], 4, 5, dtype=tf.int32), x.dtype), lambda x: x + 4,
           [((3,),)]),
    OpSpec("categorical_single_class",
           lambda tf, x: x * tf.cast(tf.random.categorical([[0.0, -np.inf]], 3) + 1, x.dtype), lambda x: x,
           [((1, 3),)]),
    OpSpec("shuffle_no_gradient", lambda tf, x: x + 0.0 * tf.reduce_sum(tf.random.shuffle(x)), lambda x: x,
           [((4, 2),)]),
]

define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


# -- behaviours beyond the spec rows ------------------------------------------------

def test_relu_on_ints_keeps_dtype():
    out = tf.nn.relu(tf.constant([-3, 4]))
    assert out.dtype == tf.int32 and out.numpy().tolist() == [0, 4]


@pytest.mark.parametrize("fn", [tf.nn.softmax, tf.nn.log_softmax])
def test_softmax_rejects_scalars_and_ints(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="dimension"):
        fn(tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        fn(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dim"):
        fn(tf.zeros([2, 3]), axis=2)


def test_sparse_xent_errors_match_tensorflow():
    logits = tf.zeros([2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"label value of 5 .*\[0, 3\)"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 5], logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of -1"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, -1], logits=logits)
    with pytest.raises(ValueError, match="rank"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0, 1]], logits=logits)
    with pytest.raises(ValueError, match="except for the last dimension"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2], logits=logits)
    with pytest.raises(ValueError, match="scalar"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0], logits=tf.constant(0.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tlabels"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0.0, 1.0], logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least one class"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 0], logits=tf.zeros([2, 0]))


def test_dense_xent_errors_and_label_cast():
    with pytest.raises(tf.errors.InvalidArgumentError, match="broadcastable"):
        tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([2, 4]), logits=tf.zeros([2, 3]))
    out = tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([2, 3], tf.float64), logits=tf.zeros([2, 3]))
    assert out.dtype == tf.float32
    assert tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([]), logits=tf.zeros([])).shape == []


def test_xent_second_output_gets_none_and_half_precision():
    logits = tf.constant(np.random.default_rng(0).normal(size=(4, 5)).astype(np.float16))
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2, 3], logits=logits)
    g = tape.gradient(loss, logits)
    assert loss.dtype == tf.float16 and g.dtype == tf.float16
    want = scipy.special.softmax(logits.numpy().astype(np.float64), -1) - np.eye(5)[:4]
    np.testing.assert_allclose(g.numpy(), want, atol=2e-3)


def test_xent_hessian_vector_products_match_tensorflow():
    """Second order through both cross-entropies (backprop output used), compared with TensorFlow."""
    tft = tf_module()
    rng = np.random.default_rng(1)
    x, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    z = distribution(np.random.default_rng(2), (3, 4), np.float64)

    def hvp(m, sparse):
        xs, zs = m.constant(x), m.constant(z)
        with m.GradientTape() as outer:
            outer.watch([xs, zs])
            with m.GradientTape() as inner:
                inner.watch(xs)
                if sparse:
                    loss = m.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 3, 1], logits=xs)
                else:
                    loss = m.nn.softmax_cross_entropy_with_logits(labels=zs, logits=xs)
                loss = m.reduce_sum(loss * m.constant([1.0, 2.0, 3.0], m.float64))
            g = inner.gradient(loss, xs)
            gv = m.reduce_sum(g * m.constant(v))
        return [None if d is None else d.numpy() for d in outer.gradient(gv, [xs, zs])]

    for sparse in (True, False):
        ours, theirs = hvp(tf, sparse), hvp(tft, sparse)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
        if sparse:
            assert ours[1] is None and theirs[1] is None


def test_nn_namespace_reexports_math_activations():
    for name in ("sigmoid", "tanh", "softplus", "softsign", "l2_normalize", "relu", "conv2d", "max_pool2d", "swish"):
        assert hasattr(tf.nn, name), name
    assert not hasattr(tf, "relu") and not hasattr(tf, "conv2d")      # tf.nn names are not top-level


def test_activation_dtype_errors_match_tensorflow():
    with pytest.raises(ValueError, match="floating point"):
        tf.nn.gelu(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.nn.l2_loss(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.nn.elu(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="complex128"):
        tf.nn.relu(tf.constant([1 + 1j]))
    assert tf.nn.relu6(tf.constant([1, 7])).numpy().tolist() == [1, 6]
    assert tf.nn.leaky_relu(tf.constant([1, -2])).dtype == tf.float32
    np.testing.assert_allclose(tf.nn.leaky_relu([1.0, -2.0], alpha=2.0).numpy(), [1.0, -4.0])


def test_cross_entropy_and_bias_add_errors():
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant([1.0, 0.0], tf.float64), logits=[1.0, 2.0])
    x = tf.ones([2, 5, 5, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="as many biases"):
        tf.nn.bias_add(x, tf.ones([4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Biases must be 1D"):
        tf.nn.bias_add(x, tf.ones([3, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 2D"):
        tf.nn.bias_add(tf.ones([3]), tf.ones([3]))
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.bias_add(x, tf.ones([5]), data_format="CHWN")


def test_embedding_lookup_on_variables_gives_indexed_slices():
    table = tf.Variable(np.arange(8.0).reshape(4, 2))
    with tf.GradientTape() as tape:
        y = tf.nn.embedding_lookup(table, [[1, 1], [3, 0]])
    g = tape.gradient(y, table)
    assert isinstance(g, tf.IndexedSlices)
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(), [[1, 1], [2, 2], [0, 0], [1, 1]])
    parts = [tf.Variable(np.zeros((2, 2))), tf.Variable(np.zeros((2, 2))), tf.Variable(np.zeros((1, 2)))]
    with tf.GradientTape() as tape:
        y = tf.nn.embedding_lookup(parts, [4, 1, 2])
    grads = tape.gradient(y, parts)
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    assert [tf.convert_to_tensor(g).numpy()[:, 0].tolist() for g in grads] == [[0, 1], [1, 0], [1]]
    with pytest.raises(ValueError, match="at least one param"):
        tf.nn.embedding_lookup([], [0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
        tf.nn.embedding_lookup(parts, [5])


def test_moments_half_precision_and_ints():
    mean, var = tf.nn.moments(tf.constant(np.arange(6.0).reshape(2, 3), tf.float16), [0])
    assert mean.dtype == tf.float16 and var.dtype == tf.float16
    np.testing.assert_allclose(var.numpy(), [2.25] * 3)
    mean, var = tf.nn.moments(tf.constant([1, 2, 3]), [0])
    assert mean.dtype == tf.int32 and int(mean) == 2 and int(var) == 0


def test_random_and_dropout_with_sizes_known_at_run_time():
    def fn(tf, x, rate):
        n = tf.shape(x)[0]
        ints = tf.random.uniform([n, 3], 4, n + 5, dtype=tf.int32)
        normal = tf.random.normal(tf.shape(x))
        kept = tf.nn.dropout(x, rate)                         # a rate fed when the graph runs
        rows = tf.nn.dropout(x, 0.0, noise_shape=[None, 1])
        return [tf.shape(ints), tf.reduce_all(ints >= 4), tf.shape(normal), kept, rows]
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    same(lambda tf: traced_static_and_values(tf, fn, [([None, None], tf.float32), ([], tf.float32)], x, np.float32(0.0)))


def test_bias_add_and_cross_entropy_with_unknown_dims():
    def fn(tf, x, b, labels, broadcast):
        with tf.GradientTape() as tape:
            tape.watch([x, b])
            y = tf.nn.bias_add(x, b)
            if broadcast:                  # TensorFlow cannot broadcast rank-3 labels itself
                labels = tf.broadcast_to(labels, tf.shape(x))
            total = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=y))
        return [y, total] + tape.gradient(total, [x, b])
    rng = np.random.default_rng(3)
    x, b = rng.normal(size=(2, 4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    labels = scipy.special.softmax(rng.normal(size=(2, 1, 3)), -1).astype(np.float32)

    def prog(tf, broadcast=True):
        specs = [([None, 4, None], tf.float32), ([None], tf.float32), ([None, None, None], tf.float32)]
        return traced_static_and_values(tf, lambda tf, *a: fn(tf, *a, broadcast), specs, x, b, labels)
    expected = same(prog, rtol=1e-5)
    ours = prog(tf, broadcast=False)                   # tapeflow broadcasts the labels itself
    assert ours[0] == expected[0]
    for a, e in zip(ours[1], expected[1]):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-6)


def test_bias_add_checks_channels_when_the_graph_runs():
    def prog(tf):
        f = tf.function(tf.nn.bias_add, input_signature=[tf.TensorSpec([None, None]), tf.TensorSpec([None])])
        return f(tf.ones([2, 3]), tf.ones([1]))
    same(prog)

