"""tapeflow's own checks of tf.distribute (what test_distribute_differential.py does not compare):
devices, what replica threads inherit, concurrency and lock-step tracing, distributed
variables under tapes and creators, cross-device ops, the losses, and the contract the
multi-worker strategy builds on."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.distribute import cross_device_ops, mirrored_strategy, values


@pytest.fixture
def strategy():
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def _rid():
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def _local(strategy, value):
    return [np.asarray(v.numpy()) for v in strategy.experimental_local_results(value)]


# -- devices -----------------------------------------------------------------------------------

def test_replicas_and_components_live_on_their_logical_devices():
    program = textwrap.dedent("""
        import tapeflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        s = tf.distribute.MirroredStrategy()
        with s.scope():
            v = tf.Variable(1.0)
        out = s.run(lambda: (v * 2.0).device)
        one = tf.distribute.OneDeviceStrategy("/cpu:1")
        with one.scope():
            w = tf.Variable(1.0)
        print(s.num_replicas_in_sync, s.experimental_local_results(out), [c.device for c in v.values],
              w.device, one.run(lambda: tf.constant(1.0) + 1.0).device)
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-2000:]
    cpu = "/job:localhost/replica:0/task:0/device:CPU:"
    assert done.stdout.split() == ["2", f"('{cpu}0',", f"'{cpu}1')", f"['{cpu}0',", f"'{cpu}1']", f"{cpu}1",
                                   f"{cpu}1"]


def test_devices_are_canonical_and_unique():
    s = tf.distribute.MirroredStrategy(["CPU:0", "/device:CPU:1"])
    assert s.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",
                                         "/job:localhost/replica:0/task:0/device:CPU:1")
    assert s.extended.parameter_devices == s.extended.worker_devices
    with pytest.raises(AssertionError, match="No duplicates"):
        tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:0"])
    with pytest.raises(TypeError, match="CrossDeviceOps"):
        tf.distribute.MirroredStrategy(["/cpu:0"], cross_device_ops=3)


# -- replica threads ---------------------------------------------------------------------------

def test_a_tape_opened_outside_run_records_nothing_of_the_replicas(strategy):
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:          # as TensorFlow: tapes are per thread
        tape.watch(x)
        y = strategy.run(lambda: x * x)
    assert tape.gradient(strategy.experimental_local_results(y)[0], x) is None


def test_eager_replicas_run_concurrently(strategy):
    barrier = threading.Barrier(2, timeout=10)     # passes only when both replicas run at once

    def replica_fn():
        barrier.wait()
        return _rid()
    assert [int(v) for v in _local(strategy, strategy.run(replica_fn))] == [0, 1]


def test_traced_replicas_take_turns_in_replica_order(strategy):
    order = []

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        order.append(("before", ctx._replica_id))
        y = ctx.all_reduce("SUM", tf.constant(1.0) * 2.0)
        order.append(("after", ctx._replica_id))
        with tf.name_scope("inner"):
            return tf.identity(y, name="out")

    graph = tf.function(lambda: strategy.run(replica_fn)).get_concrete_function().graph
    assert order == [("before", 0), ("before", 1), ("after", 0), ("after", 1)]
    names = [op.name for op in graph.get_operations()]
    assert "inner/out" in names and "replica_1/inner/out" in names
    assert names.index("inner/out") < names.index("replica_1/inner/out")


def test_name_scope_and_control_dependencies_after_a_traced_run(strategy):
    @tf.function
    def step():
        with tf.name_scope("outer"):
            out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", tf.constant(1.0) * 1.0))
            inside = tf.identity(1.0, name="after")
        return out, inside

    graph = step.get_concrete_function().graph
    names = [op.name for op in graph.get_operations()]
    assert "outer/after" in names and any(n.startswith("outer/replica_1/") for n in names)
    assert graph._name_stack == "" and graph._control_inputs == []


def test_merge_call_inside_a_nested_function_raises(strategy):
    @tf.function
    def inner(x):
        return tf.distribute.get_replica_context().all_reduce("SUM", x)

    with pytest.raises(RuntimeError, match="merge_call` called while defining a new graph"):
        strategy.run(lambda: inner(tf.constant(1.0)))


def test_a_function_called_by_eager_replicas_reads_each_replicas_component(strategy):
    with strategy.scope():
        w = tf.Variable([1.0, 2.0])
        table = tf.Variable(tf.reshape(tf.range(6.0), [3, 2]))

    @tf.function
    def model(x, ids):
        return tf.reduce_sum(w * x) + tf.reduce_sum(tf.gather(table, ids))

    first_traced = threading.Event()

    def replica_fn():
        rid = tf.distribute.get_replica_context()._replica_id
        if rid == 1:
            first_traced.wait(10)       # replica 1 comes after replica 0's trace, and makes its own
        with tf.GradientTape() as tape:
            y = model(tf.constant([1.0, 1.0]) * (rid + 1.0), tf.constant([rid]))
        grads = tape.gradient(y, [w, table])
        first_traced.set()
        return y, grads[0], tf.convert_to_tensor(grads[1])

    y, dw, dtable = strategy.run(replica_fn)
    assert model.experimental_get_tracing_count() == 2     # one trace per replica, as TensorFlow's per device
    np.testing.assert_allclose(_local(strategy, y), [4.0, 11.0])
    np.testing.assert_allclose(_local(strategy, dw), [[1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_allclose(_local(strategy, dtable)[1], [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    strategy.run(lambda: w.assign_add(tf.ones([2]) * tf.cast(_rid(), tf.float32)))   # NONE: components differ
    first_traced.clear()
    np.testing.assert_allclose(_local(strategy, strategy.run(replica_fn)[0]), [4.0, 15.0])


def test_variables_made_in_run_are_shared_by_the_replicas(strategy):
    made = strategy.run(lambda: tf.Variable(tf.cast(_rid(), tf.float32) + 1.0))
    assert isinstance(made, values.MirroredVariable)
    assert [float(c) for c in made.values] == [1.0, 1.0]       # replica 0's value, on every device


# -- distributed variables ----------------------------------------------------------------------

def test_gradients_in_a_replica_are_of_its_component(strategy):
    with strategy.scope():
        w = tf.Variable([1.0, 2.0])

    def replica_fn():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w) * (tf.cast(_rid(), tf.float32) + 1.0)
        return tape.gradient(loss, w), tape.watched_variables()

    grads, watched = strategy.run(replica_fn)
    np.testing.assert_allclose(_local(strategy, grads), [[2.0, 4.0], [4.0, 8.0]])
    assert all(v is w for v in strategy.experimental_local_results(watched)[0])


def test_updates_outside_any_strategy_reach_every_component(strategy):
    with strategy.scope():
        w = tf.Variable([1.0, 2.0])
    w.assign_add([1.0, 1.0])
    w.scatter_sub(tf.IndexedSlices(tf.constant([1.0]), tf.constant([0])))
    assert [list(c.numpy()) for c in w.values] == [[1.0, 3.0], [1.0, 3.0]]
    assert repr(w).startswith("MirroredVariable:{\n  0: <tf.Variable 'Variable:0'")
    assert isinstance(w, tf.Variable)


def test_mirrored_variables_in_functions(strategy):
    with strategy.scope():
        w = tf.Variable(1.0, aggregation=tf.VariableAggregation.MEAN)

    @tf.function
    def step():
        return strategy.run(lambda: w.assign_add(tf.cast(_rid(), tf.float32)))

    step()
    step()
    assert [float(c) for c in w.values] == [2.0, 2.0]


def test_variables_made_in_a_function_trace_under_a_scope(strategy):
    made = []

    @tf.function
    def step():
        if not made:
            with strategy.scope():
                made.append(tf.Variable(tf.ones([2]) * 3.0))
        return made[0].read_value()

    assert list(step().numpy()) == [3.0, 3.0]
    assert [list(c.numpy()) for c in made[0].values] == [[3.0, 3.0], [3.0, 3.0]]


def test_variable_creator_scopes_nest_innermost_first():
    calls = []

    def creator(label):
        def make(next_creator, **kwargs):
            calls.append(label)
            return next_creator(**kwargs)
        return make

    with tf.variable_creator_scope(creator("outer")), tf.variable_creator_scope(creator("inner")):
        v = tf.Variable(1.0, name="v")
    assert calls == ["inner", "outer"] and v.name == "v:0"


def test_initial_value_broadcast_once_per_variable():
    class Counting(mirrored_strategy.MirroredExtended):
        seen = []

        def _broadcast_initial_value(self, value):
            self.seen.append(float(value))
            return value

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    strategy._extended = Counting(strategy, devices=["/cpu:0", "/cpu:1"])
    with strategy.scope():
        v = tf.Variable(lambda: tf.constant(4.0))
    assert Counting.seen == [4.0] and [float(c) for c in v.values] == [4.0, 4.0]


def test_extended_keeps_what_the_multi_worker_strategy_builds_on(strategy):
    ext = strategy.extended
    assert (ext._num_workers, ext._task_id, ext._replica_offset, ext._in_multi_worker_mode()) == (1, 0, 0, False)
    assert len(ext._devices) == 2 and ext._num_replicas_in_sync == 2
    assert isinstance(ext._cross_device_ops, tf.distribute.CrossDeviceOps)
    total = ext._cross_device_ops._reduce_local(tf.distribute.ReduceOp.MEAN, [tf.constant(1.0), tf.constant(3.0)],
                                                "value 0")
    assert float(total) == 4.0          # summed, not divided


# -- cross-device ops ----------------------------------------------------------------------------

@pytest.mark.parametrize("ops", [tf.distribute.ReductionToOneDevice(), tf.distribute.NcclAllReduce(),
                                 tf.distribute.HierarchicalCopyAllReduce(num_packs=2)])
def test_cross_device_ops_reduce_in_process(ops):
    s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"], cross_device_ops=ops)
    dense = s.experimental_distribute_values_from_function(lambda ctx: tf.constant([1.0, 2.0]) * (
        ctx.replica_id_in_sync_group + 1))
    sparse = s.experimental_distribute_values_from_function(lambda ctx: tf.IndexedSlices(
        tf.ones([1, 2]) * (ctx.replica_id_in_sync_group + 1), tf.constant([ctx.replica_id_in_sync_group]),
        tf.constant([3, 2])))
    np.testing.assert_allclose(ops.reduce(tf.distribute.ReduceOp.SUM, dense, "/cpu:0").numpy(), [3.0, 6.0])
    mean = ops.batch_reduce(tf.distribute.ReduceOp.MEAN, [(sparse, "/cpu:0")])[0]
    assert isinstance(mean, tf.IndexedSlices)
    np.testing.assert_allclose(mean.values.numpy(), [[0.5, 0.5], [1.0, 1.0]])
    assert list(mean.indices.numpy()) == [0, 1]
    copies = ops.broadcast(tf.constant(1.0), dense)
    assert isinstance(copies, values.Mirrored) and len(copies.values) == 2
    with pytest.raises(ValueError, match="must be Reduce.SUM or Reduce.MEAN"):
        ops.reduce("SUM", dense, "/cpu:0")
    with pytest.raises(ValueError, match="destinations can not be empty"):
        ops.reduce(tf.distribute.ReduceOp.SUM, dense, "")
    assert cross_device_ops.get_devices_from("/cpu:1") == ("/job:localhost/replica:0/task:0/device:CPU:1",)


def test_all_reduce_of_one_object_on_every_replica_sums_it(strategy):
    c = tf.constant(2.0)
    out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", c))
    assert [float(v) for v in _local(strategy, out)] == [4.0, 4.0]


def test_gather(strategy):
    out = strategy.gather(strategy.run(lambda: tf.ones([1, 2]) * tf.cast(_rid(), tf.float32)), axis=0)
    np.testing.assert_array_equal(out.numpy(), [[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(NotImplementedError, match="IndexedSlices"):
        strategy.gather(tf.IndexedSlices(tf.ones([1]), tf.constant([0])), axis=0)


# -- contexts and losses -------------------------------------------------------------------------

def test_experimental_set_strategy(strategy):
    tf.distribute.experimental_set_strategy(strategy)
    try:
        assert tf.distribute.get_strategy() is strategy and tf.distribute.in_cross_replica_context()
        with pytest.raises(RuntimeError, match="Mixing different"):
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                pass
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert not tf.distribute.has_strategy()


def test_default_strategy_scope_does_not_nest(strategy):
    with strategy.scope():
        with pytest.raises(RuntimeError, match="Must not nest"):
            with tf.distribute.distribute_lib._default_strategy().scope():
                pass


def test_compute_average_loss_checks_its_arguments():
    loss = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(TypeError, match="must be an integer"):
        tf.nn.compute_average_loss(loss, global_batch_size=2.0)
    with pytest.raises(ValueError, match="must be scalar"):
        tf.nn.compute_average_loss(loss, global_batch_size=[2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.nn.compute_average_loss(loss, global_batch_size=-2)
    assert float(tf.nn.compute_average_loss(loss, global_batch_size=0)) == 0.0
    weighted = tf.nn.compute_average_loss(tf.constant([1.0, 2.0]), sample_weight=tf.constant([[1.0], [0.5]]))
    assert float(weighted) == 1.0
    assert float(tf.function(lambda: tf.nn.compute_average_loss(loss))()) == 1.5
