"""A training step under MirroredStrategy with two replicas, each on half of a batch, gives
the weights one replica gets on the whole batch (the per-replica loss is its examples'
loss summed over the global batch size): dense gradients (an MLP) and sparse ones (an
embedding read with tf.gather, IndexedSlices), SGD with momentum and Adam, eagerly, with
`strategy.run` inside a `tf.function`, and with a `tf.function` given to `run`."""

import numpy as np
import pytest

import tapeflow as tf

STEPS = 3
BATCH = 8


def _data():
    rng = np.random.RandomState(0)
    return {"w1": rng.randn(5, 16).astype(np.float32) * 0.5, "b1": np.zeros(16, np.float32),
            "w2": rng.randn(16, 3).astype(np.float32) * 0.5, "emb": rng.randn(10, 5).astype(np.float32),
            "x": rng.randn(STEPS, BATCH, 5).astype(np.float32), "ids": rng.randint(0, 10, (STEPS, BATCH)),
            "y": rng.randint(0, 3, (STEPS, BATCH))}


def _optimizer(name):
    if name == "sgd":
        return tf.keras.optimizers.SGD(0.1, momentum=0.9)
    return tf.keras.optimizers.Adam(0.05)


def _make_model(data):
    return [tf.Variable(data[k], name=k) for k in ("w1", "b1", "w2", "emb")]


def _loss(variables, x, ids, y, global_batch):
    w1, b1, w2, emb = variables
    h = tf.tanh((x + tf.gather(emb, ids)) @ w1 + b1)
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h @ w2)
    return tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)


def _step(variables, opt, x, ids, y, global_batch):
    with tf.GradientTape() as tape:
        loss = _loss(variables, x, ids, y, global_batch)
    grads = tape.gradient(loss, variables)
    assert isinstance(grads[3], tf.IndexedSlices)      # the embedding's gradient is sparse
    opt.apply_gradients(zip(grads, variables))
    return loss


def _one_replica(data, opt_name):
    variables, opt = _make_model(data), _optimizer(opt_name)
    for i in range(STEPS):
        _step(variables, opt, tf.constant(data["x"][i]), tf.constant(data["ids"][i]), tf.constant(data["y"][i]),
              BATCH)
    return [v.numpy() for v in variables]


def _two_replicas(data, opt_name, mode):
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        variables, opt = _make_model(data), _optimizer(opt_name)

    def replica_step(x, ids, y):
        return _step(variables, opt, x, ids, y, BATCH)

    if mode == "eager":
        step = lambda *a: strategy.run(replica_step, args=a)      # noqa: E731
    elif mode == "function":
        step = tf.function(lambda *a: strategy.run(replica_step, args=a))
    else:               # a tf.function given to run
        replica_function = tf.function(replica_step)
        step = lambda *a: strategy.run(replica_function, args=a)  # noqa: E731
    half = BATCH // 2
    losses = []
    for i in range(STEPS):
        parts = [strategy.experimental_distribute_values_from_function(
            lambda ctx, k=k: tf.constant(data[k][i][ctx.replica_id_in_sync_group * half:][:half]))
            for k in ("x", "ids", "y")]
        losses.append(strategy.reduce("SUM", step(*parts), axis=None))
    for v in variables:         # the components stayed equal
        for component in v.values[1:]:
            np.testing.assert_array_equal(component.numpy(), v.values[0].numpy())
    assert int(opt.iterations) == STEPS
    return [v.numpy() for v in variables], losses


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
@pytest.mark.parametrize("mode", ["eager", "function", "function_given_to_run"])
def test_two_replicas_match_one_replica_on_the_whole_batch(opt_name, mode):
    data = _data()
    expected = _one_replica(data, opt_name)
    got, losses = _two_replicas(data, opt_name, mode)
    for name, a, b in zip(("w1", "b1", "w2", "emb"), got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=name)
    assert not np.allclose(got[3], data["emb"])          # the sparse update happened
    first = _loss(_make_model(data), data["x"][0], data["ids"][0], data["y"][0], BATCH)
    np.testing.assert_allclose(float(losses[0]), float(first), rtol=1e-5)


def test_slots_of_mirrored_variables_are_mirrored():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
        opt = tf.keras.optimizers.Adam(0.1)
    strategy.run(lambda: opt.apply_gradients([(tf.constant([1.0, -1.0]), v)]))
    kinds = {type(var).__name__ for var in opt.variables}
    assert kinds == {"MirroredVariable"}
    assert [var.name for var in opt.variables] == ["iteration", "learning_rate", "Variable_0_momentum",
                                                   "Variable_0_velocity"]
    assert opt.variables[2].path == "adam/Variable_0_momentum"
    assert opt.iterations.aggregation is tf.VariableAggregation.ONLY_FIRST_REPLICA
    np.testing.assert_allclose(opt.variables[2].values[1].numpy(), [0.2, -0.2], rtol=1e-6)  # from the summed gradient


def test_optimizer_outside_any_strategy_is_unchanged():
    v = tf.Variable([1.0, 2.0])
    opt = tf.keras.optimizers.SGD(0.5, momentum=0.5)
    for _ in range(2):
        opt.apply_gradients([(tf.constant([1.0, -1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.25, 3.25])
    assert type(opt.iterations).__name__ == "OptimizerVariable"
