"""Spec rows for the graph-mode ops (calls, control flow, TensorArray lists, custom gradients).

Each row wraps its computation in `tf.function`, so the same row runs the
traced graph with tapeflow and with TensorFlow; gradients flow through the
call op into the ops under test.
"""

import numpy as np

from op_harness import OpSpec, UnknownDimsError, define_graph_tests, define_tests, positive, unit

VEC = [((3,),), ((1,),)]


def _rnn(tf, x, w):
    def f(x, w):
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.tanh(y * w + 0.1)), (0, x))
        return y
    return tf.function(f)(x, w)


def _cond(tf, x):
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * x, lambda: tf.sin(x) * 2.0)
    return tf.function(f)(x)


def _tensor_array(tf, x):
    def f(x):
        n = x.shape[0]
        ta = tf.TensorArray(x.dtype, size=n)

        def body(i, ta):
            return i + 1, ta.write(i, x[i] * x[i])
        _, ta = tf.while_loop(lambda i, ta: i < n, body, (0, ta))
        stacked = ta.stack()
        first = ta.read(0)
        again = ta.read(0)
        picked = ta.gather([0])
        other = tf.TensorArray(x.dtype, size=n).unstack(x * 3.0)
        scattered = tf.TensorArray(x.dtype, size=n).scatter(tf.range(n), x)
        return stacked + first * again + tf.reduce_sum(picked) + other.read(n - 1) + scattered.stack() * tf.cast(ta.size(), x.dtype)
    return tf.function(f)(x)


def _custom(tf, x):
    @tf.custom_gradient
    def softplus(x):
        def grad(dy):
            return dy * tf.sigmoid(x)
        return tf.math.log(1.0 + tf.exp(x)), grad
    return softplus(x)


def _unknown_batch(tf, x):
    spec = [tf.TensorSpec([None], x.dtype)]
    return tf.function(lambda x: tf.reshape(tf.ones_like(x) * x * x, [-1, 1]), input_signature=spec)(x)


SPECS = [
    OpSpec("while_loop", _rnn, lambda x, w: _rnn_ref(x, w), [((3,), ()), ((2, 2), (2,))], sampler=unit),
    OpSpec("cond_true", _cond, lambda x: x * x, VEC, sampler=positive),
    OpSpec("cond_false", _cond, lambda x: np.sin(x) * 2.0, VEC, sampler=lambda rng, s, d: -positive(rng, s, d)),
    # TensorArray list ops have no batching rule (NO_BATCH_RULE in test_batching_coverage.py): inside
    # vectorized code they run once per example, with correct values but the fallback's warning;
    # the row reads its size as x.shape[0] (None with an unknown batch: no TensorArray size)
    OpSpec("tensor_array", _tensor_array, None, VEC, sampler=unit, vmap=False,
           unknown_dims_error=UnknownDimsError(ValueError)),
    OpSpec("custom_gradient", _custom, lambda x: np.log1p(np.exp(x)), VEC),
    OpSpec("unknown_batch", _unknown_batch, lambda x: (x * x).reshape(-1, 1), VEC),
]


def _rnn_ref(x, w):
    y = x
    for _ in range(3):
        y = np.tanh(y * w + 0.1)
    return y


define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
