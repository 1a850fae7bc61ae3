"""LossScaleGradientTape under a strategy (issue 15 item 5, the seed's merge_call structure):
one tape per replica, the rounds in the cross-replica context, one verdict of the loss scale
for every replica's gradients, so all replicas retry together under the same scale."""

import os
import sys

import numpy as np
import pytest

import tapeflow as tf

mp = tf.mixed_precision.experimental
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "distribute", "mpi"))


@pytest.fixture
def strategy():
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def _local(strategy, value):
    return [np.asarray(v.numpy()) for v in strategy.experimental_local_results(value)]


def _per_replica(strategy, *values):
    return strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(values[ctx.replica_id_in_sync_group]))


def _exp_step(scale, w):
    """Each replica's gradient of sum(exp(w * x)) taken in float16: exp(10) * 2**15 overflows."""
    def step(x):
        with mp.LossScaleGradientTape(scale) as tape:
            y = tf.reduce_sum(tf.cast(tf.exp(tf.cast(w * x, tf.float16)), tf.float32))
        return tape.gradient(y, w), scale()
    return step


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_one_overflowing_replica_lowers_the_scale_of_every_replica(strategy, mode):
    with strategy.scope():
        scale = mp.DynamicLossScale(initial_loss_scale=2 ** 15, increment_period=1000)
        w = tf.Variable([10.0, 1.0])
    step = _exp_step(scale, w)
    run = (lambda x: strategy.run(step, args=(x,)))
    run = run if mode == "eager" else tf.function(run)
    x = _per_replica(strategy, np.float32([0.1, 1.0]), np.float32([1.0, 1.0]))
    grads, scales = run(x)
    # replica 0 alone would keep 2**15; replica 1's exp(10) = 22032 needs a scale of at most 2
    assert [float(s) for s in _local(strategy, scales)] == [2.0, 2.0]
    assert [float(s) for s in _local(strategy, scale._current_loss_scale)] == [2.0, 2.0]
    g0, g1 = _local(strategy, grads)
    e = np.float16
    np.testing.assert_allclose(g0, [float(e(np.exp(e(1.0)))) * 0.1, float(e(np.exp(e(1.0))))], rtol=1e-3)
    np.testing.assert_allclose(g1, [22032.0, float(e(np.exp(e(1.0))))], rtol=1e-3)
    assert scale.skipped_steps == 14           # 2**15 down to 2: one count per round, not per replica
    report = scale.last_nonfinite
    assert report.op_type == "Exp" and report.cause == "backward" and "test_lsgt_distributed.py" in report.source


def test_the_scale_follows_the_dynamic_rule_for_all_replicas_together(strategy):
    with strategy.scope():
        scale = mp.DynamicLossScale(initial_loss_scale=8.0, increment_period=2, multiplier=2.0)
        w = tf.Variable(1.0)

    def step(x):
        with mp.LossScaleGradientTape(scale) as tape:
            y = w * x
        return tape.gradient(y, w)

    inf = np.float32(np.inf)
    # (replica 0's x, replica 1's x) per step: a non-finite x on either replica is a bad round
    steps = [(1.0, 1.0), (1.0, 1.0), (1.0, inf), (1.0, 1.0), (inf, 1.0), (1.0, 1.0)]
    seen = []
    for a, b in steps:
        strategy.run(step, args=(_per_replica(strategy, np.float32(a), np.float32(b)),))
        seen.append([float(v) for v in _local(strategy, scale._current_loss_scale)])
    assert all(v[0] == v[1] for v in seen)
    # two good steps double 8 to 16; the bad third step is retried at halved scales down to 1;
    # a bad step at 1 keeps 1; each bad step restarts the count of good steps
    assert [v[0] for v in seen] == [8.0, 16.0, 1.0, 1.0, 1.0, 1.0]
    assert [int(c) for c in _local(strategy, scale._num_good_steps)] == [1, 1]


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_nones_zeros_and_structures_per_replica(strategy, mode):
    with strategy.scope():
        scale = mp.FixedLossScale(1024)
        a, b, unused = tf.Variable(2.0), tf.Variable(3.0), tf.Variable(5.0)

    def step(x):
        with mp.LossScaleGradientTape(scale, persistent=True) as tape:
            y = {"p": a * b * x}
        grads = tape.gradient(y, {"a": a, "rest": [b, unused]})
        zeros = tape.gradient(y, [unused], unconnected_gradients="zero")
        return grads["a"], grads["rest"][0], grads["rest"][1] is None, zeros[0]

    run = (lambda x: strategy.run(step, args=(x,)))
    run = run if mode == "eager" else tf.function(run)
    ga, gb, is_none, zero = run(_per_replica(strategy, np.float32(1.0), np.float32(2.0)))
    assert [float(v) for v in _local(strategy, ga)] == [3.0, 6.0]
    assert [float(v) for v in _local(strategy, gb)] == [2.0, 4.0]
    assert is_none is True if mode == "eager" else bool(is_none)  # every replica's unconnected source: None
    assert [float(v) for v in _local(strategy, zero)] in ([0.0], [0.0, 0.0])


def test_gradient_in_cross_replica_context_raises(strategy):
    with strategy.scope():
        scale = mp.FixedLossScale(2)
        w = tf.Variable(1.0)
        with mp.LossScaleGradientTape(scale) as tape:
            y = w * 2.0
        with pytest.raises(ValueError, match="must be called in a replica context"):
            tape.gradient(y, w)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_training_with_two_replicas_matches_one_replica_on_the_whole_batch(strategy, mode):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=8).astype(np.int32)
    w0 = rng.normal(size=(4, 3)).astype(np.float32)

    def train(strat, shards):
        with strat.scope():
            scale = mp.DynamicLossScale(initial_loss_scale=2 ** 15, increment_period=3)
            w = tf.Variable(w0)
            opt = tf.keras.optimizers.SGD(0.5, momentum=0.9)

        def replica_step(xb, yb):
            with mp.LossScaleGradientTape(scale) as tape:
                logits = tf.cast(tf.matmul(tf.cast(xb, tf.float16), tf.cast(w, tf.float16)), tf.float32)
                per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=8)
            opt.apply_gradients([(tape.gradient(loss, w), w)])

        def step(xs, ys):
            strat.run(replica_step, args=(xs, ys))
        step = step if mode == "eager" else tf.function(step)
        for _ in range(4):
            if shards == 1:
                step(tf.constant(x), tf.constant(y))
            else:
                step(_per_replica(strat, x[:4], x[4:]), _per_replica(strat, y[:4], y[4:]))
        return ([np.asarray(v.numpy()) for v in strat.experimental_local_results(w)],
                _local(strat, scale._current_loss_scale))

    (one,), one_scale = train(tf.distribute.get_strategy(), 1)
    two, two_scale = train(strategy, 2)
    np.testing.assert_array_equal(two[0], two[1])
    np.testing.assert_allclose(two[0], one, rtol=2e-3, atol=2e-3)
    assert [float(s) for s in two_scale] == [float(one_scale[0])] * 2 and float(one_scale[0]) == 65536.0


def test_loss_scale_update_in_replica_context_merges(strategy):
    with strategy.scope():
        scale = mp.DynamicLossScale(initial_loss_scale=4.0, increment_period=10)

    def step(g):
        _, ok = scale.update([g])
        return ok

    ok = strategy.run(step, args=(_per_replica(strategy, np.float32(1.0), np.float32(np.nan)),))
    assert [bool(v) for v in _local(strategy, ok)] in ([False], [False, False])   # one verdict
    assert [float(v) for v in _local(strategy, scale._current_loss_scale)] == [2.0, 2.0]


def test_loss_scaled_training_under_mpi_keeps_one_scale():
    from mpi_launch import run_mpi
    script = os.path.join(os.path.dirname(__file__), "scripts", "lsgt_mpi.py")
    run = run_mpi(script, n=2, timeout=120)
    assert run.returncode == 0, run
    r0, r1 = run.results[0], run.results[1]
    assert r0["scales"] == r1["scales"] and r0["weights"] == r1["weights"]
    assert r0["scales"][0] == 2.0              # rank 1's overflow lowered rank 0's scale too
    assert r0["skipped"] == r1["skipped"] >= 14       # 2**15 -> 2 in the first step, then again as it grows
    assert r1["op"] == "Exp"
    np.testing.assert_allclose(r0["grad"], r0["expected_grad"], rtol=1e-3)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_keras_loss_scale_optimizer_skips_on_every_replica_together(strategy, mode):
    with strategy.scope():
        w = tf.Variable([1.0, 2.0])
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1))
        opt.build([w])        # else a traced scale_loss keeps the initial scale (Keras 3 does the same)

    def replica_step(x):
        with tf.GradientTape() as tape:
            scaled = opt.scale_loss(tf.reduce_sum(w * x))
        opt.apply_gradients([(tape.gradient(scaled, w), w)])

    run = (lambda x: strategy.run(replica_step, args=(x,)))
    run = run if mode == "eager" else tf.function(run)
    run(_per_replica(strategy, np.float32([1.0, 1.0]), np.float32([1.0, np.inf])))   # replica 1 overflows
    assert [v.tolist() for v in _local(strategy, w)] == [[1.0, 2.0], [1.0, 2.0]]
    assert float(opt.dynamic_scale) == 2.0 ** 14 and opt.skipped_steps == 1
    run(_per_replica(strategy, np.float32([1.0, 1.0]), np.float32([1.0, 1.0])))
    for v in _local(strategy, w):          # the replicas' gradients summed: w -= 0.1 * 2
        np.testing.assert_allclose(v, [0.8, 1.8], rtol=1e-6)
    assert int(opt.iterations) == 1
