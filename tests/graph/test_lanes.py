"""Parallel lanes in plans (Note [parallel lanes] in graph/lanes.py): independent blocks of ops
placed on different devices run at once, with the numbers of the sequential plan.  These are
tapeflow's own scheduling rules, so the tests look at the schedule and the results."""

import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.graph import lanes
from tapeflow.graph.executor import Plan

N = 256           # 256 x 256 outputs: worth a lane


def _groups(plan, threads=0):
    return [item for item in lanes.schedule(plan._steps, threads) if type(item) is tuple]


def _lane_types(plan, group):
    return [[plan._steps[n].op.type for n in lane] for lane in group]


def _graph_plan(build):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [N, N])
        fetches = build(x)
    return Plan(g, fetches, [x])


def _x(seed=0):
    return np.random.default_rng(seed).standard_normal((N, N)).astype(np.float32)


def test_independent_blocks_on_two_devices_run_as_two_lanes():
    def build(x):
        with tf.device("/cpu:0"):
            a = tf.nn.relu(tf.matmul(x, x))
        with tf.device("/cpu:1"):
            b = tf.tanh(tf.matmul(x, x + 1.0))
        return [a, b]

    plan = _graph_plan(build)
    groups = _groups(plan)
    assert len(groups) == 1 and _lane_types(plan, groups[0]) == [["BatchMatMulV2", "Relu"],
                                                                 ["AddV2", "BatchMatMulV2", "Tanh"]]
    assert _groups(plan, threads=1) == []            # inter-op parallelism 1: no lanes
    x = _x()
    for _ in range(20):      # x is read by both lanes and dies in the second: deleted after the group
        a, b = plan.run([x])
        np.testing.assert_array_equal(a, np.maximum(x @ x, 0))
        np.testing.assert_allclose(b, np.tanh(x @ (x + 1)), rtol=1e-6, atol=1e-6)


def test_blocks_that_depend_on_each_other_or_share_written_state_stay_in_order():
    v = tf.Variable(np.ones([N, N], np.float32))

    def dependent(x):
        with tf.device("/cpu:0"):
            a = tf.matmul(x, x)
        with tf.device("/cpu:1"):
            b = tf.matmul(a, x)                      # reads the other block's value
        return [b]

    def writes_what_the_other_reads(x):
        with tf.device("/cpu:0"):
            a = tf.matmul(x, v)                      # reads v
        with tf.device("/cpu:1"):
            w = v.assign_add(tf.matmul(x, x), read_value=False)        # writes v
        return [a, w]

    def random_ops(x):
        with tf.device("/cpu:0"):
            a = tf.matmul(x, tf.random.uniform([N, N]))     # random numbers keep their order
        with tf.device("/cpu:1"):
            b = tf.matmul(x, tf.random.uniform([N, N]))
        return [a, b]

    def unplaced(x):
        a = tf.matmul(x, x)
        b = tf.matmul(x, x + 2.0)
        return [a, b]

    for build in (dependent, writes_what_the_other_reads, random_ops, unplaced):
        assert _groups(_graph_plan(build)) == [], build.__name__


def test_writes_of_different_variables_run_in_lanes():
    v0 = tf.Variable(np.zeros([N, N], np.float32))
    v1 = tf.Variable(np.ones([N, N], np.float32))

    def build(x):
        with tf.device("/cpu:0"):
            w0 = v0.assign_add(tf.matmul(x, x), read_value=False)      # the write ops
        with tf.device("/cpu:1"):
            w1 = v1.assign_sub(tf.matmul(x, x + 1.0), read_value=False)
        return [w0, w1]

    plan = _graph_plan(build)
    assert [len(group) for group in _groups(plan)] == [2]
    x = _x(5)
    plan.run([x])
    np.testing.assert_allclose(v0.numpy(), x @ x, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(v1.numpy(), 1 - x @ (x + 1), rtol=1e-6, atol=1e-5)


def test_small_blocks_are_not_worth_a_thread():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [8, 8])
        with tf.device("/cpu:0"):
            a = tf.matmul(x, x)
        with tf.device("/cpu:1"):
            b = tf.matmul(x, x + 1.0)
    assert _groups(Plan(g, [a, b], [x])) == []


def _strategy():
    return tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])


def test_mirrored_replicas_in_a_function_run_in_lanes_with_the_sequential_numbers():
    strategy = _strategy()
    w0 = _x(1) / N
    with strategy.scope():
        w = tf.Variable(w0)
    xs = [_x(2), _x(3)]
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant(xs[ctx.replica_id_in_sync_group]))

    def replica_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) ** 2)
        grad = tape.gradient(loss, w)
        w.assign_sub(1e-4 * tf.distribute.get_replica_context().all_reduce("sum", grad))
        return loss

    step = tf.function(lambda x: strategy.run(replica_step, args=(x,)))
    losses = strategy.experimental_local_results(step(per_replica))
    plan = step.get_concrete_function(per_replica)._plan
    assert any(len(group) == 2 for group in _groups(plan))

    expected_grad = 0
    for k, x in enumerate(xs):
        h = np.maximum(x.astype(np.float64) @ w0, 0)
        np.testing.assert_allclose(losses[k].numpy(), (h ** 2).sum(), rtol=1e-5)
        expected_grad = expected_grad + x.T.astype(np.float64) @ (2 * h)
    for component in w.values:
        np.testing.assert_allclose(component.numpy(), w0 - 1e-4 * expected_grad, rtol=1e-4, atol=1e-6)


def test_an_error_in_a_lane_names_its_op_and_the_next_call_works():
    strategy = _strategy()
    rows = strategy.experimental_distribute_values_from_function(
        lambda ctx: tf.constant([0, 1] if ctx.replica_id_in_sync_group == 0 else [0, N + 5]))
    good = strategy.experimental_distribute_values_from_function(lambda ctx: tf.constant([0, 1]))
    x = strategy.experimental_distribute_values_from_function(lambda ctx: tf.constant(_x(4)))

    @tf.function
    def step(rows, x):
        return strategy.run(lambda r, x: tf.gather(tf.matmul(x, x), r), args=(rows, x))

    with pytest.raises(InvalidArgumentError, match="GatherV2"):
        step(rows, x)
    assert any(len(group) == 2 for group in _groups(step.get_concrete_function(rows, x)._plan))
    results = strategy.experimental_local_results(step(good, x))
    for r in results:
        np.testing.assert_array_equal(r.numpy(), (_x(4) @ _x(4))[[0, 1]])


def test_lanes_run_in_other_threads():
    seen = set()
    done = threading.Event()

    def first():
        seen.add(threading.get_ident())

    def second():
        seen.add(threading.get_ident())
        done.set()

    lanes.run_lanes(first, second)
    assert done.is_set() and len(seen) == 2

    def fails():
        raise ValueError("lane 2")

    with pytest.raises(ValueError, match="lane 2"):
        lanes.run_lanes(first, fails)


from tapeflow.framework.op_def import execute, op      # noqa: E402
from tapeflow.framework.shapes import shape_rules


@op("TestLaneHalves", same_dtype=False, num_outputs=-1, shape=shape_rules.unchanged_shapes, unknown_rank=True,
    donates=True)
def _halves(*xs, donated=()):
    """x / 2 for each input, in place when donated (a pure op that donates, for the lane rules)."""
    return tuple(np.divide(x, 2, out=x) if k in donated else x / 2 for k, x in enumerate(xs))


def test_a_donated_input_is_a_buffer_written_for_the_lane_rules():
    def build(x, donating):
        y = tf.matmul(x, x)                          # unplaced: before the group
        with tf.device("/cpu:0"):
            a = tf.tanh(y)                           # reads y
        with tf.device("/cpu:1"):
            b = execute(_halves, [y], {})[0] if donating else tf.sigmoid(y)     # y's last reader
        return [a, b]

    x = _x(6) / N
    plain = _graph_plan(lambda x: build(x, False))
    assert [len(group) for group in _groups(plain)] == [2]
    donating = _graph_plan(lambda x: build(x, True))
    assert _groups(donating) == []                   # y may be overwritten while tanh reads it
    a, b = donating.run([x])
    np.testing.assert_allclose(a, np.tanh(x @ x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, (x @ x) / 2, rtol=1e-5, atol=1e-6)
