"""The strategy API of MultiWorkerMirroredStrategy across MPI workers; prints `RESULT <json>`.

Worker r's values depend on r, so the test can work out every expected result.
"""

import json

import numpy as np

import tapeflow as tf
from tapeflow.distribute.values import DistributedValues

strategy = tf.distribute.MultiWorkerMirroredStrategy()
resolver = strategy.cluster_resolver
rank = resolver.task_id
out = {"rank": rank}


def py(value):
    """Tensors, distributed values and nests of them as JSON-able Python values."""
    if isinstance(value, (list, tuple)):
        return [py(v) for v in value]
    if isinstance(value, dict):
        return {k: py(v) for k, v in value.items()}
    if isinstance(value, DistributedValues):
        return py(strategy.experimental_local_results(value))
    if isinstance(value, tf.IndexedSlices):
        return {"indices": py(value.indices), "values": py(value.values)}
    return np.asarray(value).tolist()


def caught(fn):
    try:
        return ["ok", py(fn())]
    except Exception as e:       # noqa: BLE001 -- the test checks the class and message
        return [type(e).__name__, str(e)]


# -- cluster -------------------------------------------------------------------------------------
out["cluster"] = {"task_type": resolver.task_type, "task_id": resolver.task_id,
                  "num_workers": resolver.cluster_spec().num_tasks("worker"),
                  "master": resolver.master(), "accelerators": resolver.num_accelerators(),
                  "multi_worker": strategy.extended._in_multi_worker_mode(),
                  "replicas": strategy.num_replicas_in_sync, "devices": list(strategy.extended.worker_devices),
                  "should_checkpoint": strategy.extended.should_checkpoint,
                  "experimental": isinstance(tf.distribute.experimental.MultiWorkerMirroredStrategy(),
                                             tf.distribute.MultiWorkerMirroredStrategy)}

# -- run, reduce, all_reduce (eagerly and in tf.function) ------------------------------------------------


def replica_fn(x):
    ctx = tf.distribute.get_replica_context()
    replica = tf.cast(ctx.replica_id_in_sync_group, tf.float32)
    sparse = tf.IndexedSlices(tf.fill([2, 2], replica + 1.0), tf.constant([rank, 2]), tf.constant([4, 2]))
    return {"replica_id": ctx.replica_id_in_sync_group, "in_sync": tf.constant(ctx.num_replicas_in_sync),
            "sum": ctx.all_reduce(tf.distribute.ReduceOp.SUM, x * (replica + 1.0)),
            "mean": ctx.all_reduce("MEAN", [x + replica, tf.cast(ctx.replica_id_in_sync_group, tf.float64)]),
            "nested": ctx.all_reduce("SUM", {"dense": x, "sparse": sparse})}


x = tf.constant([1.0, 2.0, 3.0])
for mode, fn in (("eager", lambda: strategy.run(replica_fn, args=(x,))),
                 ("graph", tf.function(lambda: strategy.run(replica_fn, args=(x,))))):
    result = fn()
    result["nested"]["sparse"] = strategy.experimental_local_results(result["nested"]["sparse"])[0]
    out["run_" + mode] = py(result)

per_replica = strategy.run(lambda: tf.constant([1.0, 2.0]) * (rank + 1))
out["reduce"] = {"sum": py(strategy.reduce("SUM", per_replica, axis=None)),
                 "mean": py(strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)),
                 "sum_axis": py(strategy.reduce("SUM", per_replica, axis=0)),
                 "mean_axis": py(strategy.reduce("MEAN", per_replica, axis=0)),
                 "local": py(strategy.experimental_local_results(per_replica)),
                 "graph_sum": py(tf.function(lambda v: strategy.reduce("SUM", strategy.run(lambda: v * (rank + 1)),
                                                                      axis=None))(tf.constant([1.0, 2.0])))}
values = strategy.experimental_distribute_values_from_function(lambda ctx: tf.constant(ctx.replica_id_in_sync_group))
out["values_from_function"] = py(values)
out["gather"] = [py(strategy.gather(strategy.run(lambda: tf.fill([1, 2], float(rank))), axis=0)),
                 py(strategy.gather(strategy.run(lambda: tf.fill([2, 1], float(rank))), axis=1))]

# -- gradients through all_reduce --------------------------------------------------------------------


def gradient_fn():
    w = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.distribute.get_replica_context().all_reduce("SUM", w * (rank + 1.0))
        loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, w)


out["all_reduce_gradient"] = [py(strategy.run(gradient_fn)), py(tf.function(lambda: strategy.run(gradient_fn))())]

# -- merge_call and reductions to destinations ---------------------------------------------------------
with strategy.scope():
    target = tf.Variable([0.0, 0.0])


def merge_fn(strategy_, value, other):
    summed = strategy_.extended.reduce_to("SUM", value, destinations=target)
    a, b = strategy_.extended.batch_reduce_to("MEAN", [(value, target), (other, other)])
    return summed, a, b


def merging():
    ctx = tf.distribute.get_replica_context()
    return ctx.merge_call(merge_fn, args=(tf.constant([1.0, 2.0]) * (rank + 1), tf.constant(float(rank))))


out["merge_call"] = [py(strategy.run(merging)), py(tf.function(lambda: strategy.run(merging))())]

# -- variables: initial values from worker 0, updates by aggregation ----------------------------------
with strategy.scope():
    initial = {"python": tf.Variable(10.0 + rank), "array": tf.Variable(np.full(2, rank, np.float64)),
               "tensor": tf.Variable(tf.fill([2], 5.0 * rank)), "callable": tf.Variable(lambda: tf.constant([rank]))}
    aggregated = {a: tf.Variable(0.0, aggregation=getattr(tf.VariableAggregation, a))
                  for a in ("SUM", "MEAN", "ONLY_FIRST_REPLICA")}


@tf.function
def made_in_function():
    with strategy.scope():
        if "in_function" not in initial:
            initial["in_function"] = tf.Variable(tf.fill([2], 7.0 * rank + 1.0))
    return initial["in_function"].read_value()


made_in_function()
out["initial"] = {k: py(v.numpy()) for k, v in initial.items()}
out["in_function_again"] = py(made_in_function())
strategy.run(lambda: [v.assign_add(rank + 1.0) for v in aggregated.values()])
out["aggregated"] = {k: py(v.numpy()) for k, v in aggregated.items()}

# -- all_gather: rows of every worker in rank order; the gradient is this worker's rows of the sum ----


def all_gather_step(x):
    ctx = tf.distribute.get_replica_context()
    with tf.GradientTape() as tape:
        tape.watch(x)
        g = ctx.all_gather(x, axis=0)
        y = tf.reduce_sum(g * tf.reshape(tf.range(tf.size(g), dtype=tf.float32), tf.shape(g)))
    return g, tape.gradient(y, x)


rows = tf.ones([rank + 1, 2])
out["all_gather"] = [py(strategy.run(all_gather_step, args=(rows,))),
                     py(tf.function(lambda x: strategy.run(all_gather_step, args=(x,)))(rows))]

# -- mismatches across workers: the same ValueError everywhere, and the job goes on -------------------
out["mismatch"] = caught(lambda: strategy.run(
    lambda: tf.distribute.get_replica_context().all_reduce("SUM", tf.ones([rank + 1]))))
out["after_mismatch"] = py(strategy.reduce("SUM", strategy.run(lambda: tf.constant(1.0)), axis=None))

# -- small packs (CommunicationOptions.bytes_per_pack) -----------------------------------------------
packed = tf.distribute.MultiWorkerMirroredStrategy(
    communication_options=tf.distribute.experimental.CommunicationOptions(bytes_per_pack=8))
out["small_packs"] = py(packed.run(lambda: tf.distribute.get_replica_context().all_reduce(
    "SUM", [tf.constant([1.0, 2.0, 3.0]) * (rank + 1), tf.constant(rank + 1), tf.constant([0.5])])))
print("RESULT " + json.dumps(out), flush=True)
