"""Training steps under MultiWorkerMirroredStrategy, against one replica on the whole batch.

Every worker trains on its slice of one global batch; the reference is the same steps
without a strategy on the whole batch, from worker 0's initial weights (each worker
initializes its weights from its own seed: the strategy must start them all from worker
0's).  Dense (an MLP) and sparse (a gather embedding: IndexedSlices gradients) models,
SGD with momentum, eagerly and in tf.function.  Prints `RESULT <json>`.
"""

import hashlib
import json

import numpy as np

import tapeflow as tf

PER_WORKER = 4
STEPS = 3

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
group = strategy.extended._group
collectives = {"all_reduce": 0, "all_gather": 0}


def counted(name, method):
    def call(*args, **kwargs):
        collectives[name] += 1
        return method(*args, **kwargs)
    return call


for _name in collectives:                 # which MPI collectives the steps use (sparse: all-gather)
    setattr(group, _name, counted(_name, getattr(group, _name)))
n = strategy.num_replicas_in_sync
GLOBAL = PER_WORKER * n
rng = np.random.default_rng(1234)
x_all = rng.standard_normal((GLOBAL, 6)).astype(np.float32)
ids_all = rng.integers(0, 10, (GLOBAL, 3)).astype(np.int64)
y_all = rng.integers(0, 3, GLOBAL).astype(np.int64)
mine = slice(rank * PER_WORKER, (rank + 1) * PER_WORKER)


def initial_weights(seed):
    r = np.random.default_rng(seed)
    return {"mlp": [r.standard_normal((6, 8)).astype(np.float32), np.zeros(8, np.float32),
                    r.standard_normal((8, 3)).astype(np.float32), r.standard_normal(3).astype(np.float32)],
            "embedding": [r.standard_normal((10, 4)).astype(np.float32), r.standard_normal((4, 3)).astype(np.float32)]}


def logits_of(kind, params, x, ids):
    if kind == "mlp":
        h = tf.nn.relu(tf.matmul(x, params[0]) + params[1])
        return tf.matmul(h, params[2]) + params[3]
    rows = tf.gather(params[0], ids)                 # IndexedSlices gradient for the table
    return tf.matmul(tf.reduce_mean(rows, axis=1), params[1])


def make_step(kind, params, optimizer, global_batch):
    def step(x, ids, y):
        with tf.GradientTape() as tape:
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits_of(kind, params, x, ids))
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, params)
        optimizer.apply_gradients(zip(grads, params))
        return loss
    return step


def train_reference(kind, graph):
    params = [tf.Variable(w) for w in initial_weights(0)[kind]]
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    step = make_step(kind, params, optimizer, GLOBAL)
    step = tf.function(step) if graph else step
    for _ in range(STEPS):
        step(tf.constant(x_all), tf.constant(ids_all), tf.constant(y_all))
    return [p.numpy() for p in params]


def train_distributed(kind, graph):
    with strategy.scope():
        params = [tf.Variable(w) for w in initial_weights(rank)[kind]]      # rank-dependent: rank 0's must win
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    step = make_step(kind, params, optimizer, GLOBAL)

    def distributed_step(x, ids, y):
        per_replica = strategy.run(step, args=(x, ids, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    distributed_step = tf.function(distributed_step) if graph else distributed_step
    losses = [float(distributed_step(tf.constant(x_all[mine]), tf.constant(ids_all[mine]), tf.constant(y_all[mine])))
              for _ in range(STEPS)]
    return [np.asarray(p.numpy()) for p in params], losses, int(optimizer.iterations.numpy())


out = {"rank": rank, "size": n}
for kind in ("mlp", "embedding"):
    for graph in (False, True):
        key = f"{kind}_{'graph' if graph else 'eager'}"
        before = dict(collectives)
        got, losses, iterations = train_distributed(kind, graph)
        used = {k: collectives[k] - before[k] for k in collectives}
        want = train_reference(kind, graph)
        out[key] = {
            "max_error": max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)),
            "moved": max(float(np.max(np.abs(w - w0))) for w, w0 in zip(want, initial_weights(0)[kind])),
            "digest": hashlib.sha256(b"".join(g.tobytes() for g in got)).hexdigest(),
            "losses": losses, "iterations": iterations, "collectives": used}
print("RESULT " + json.dumps(out), flush=True)
