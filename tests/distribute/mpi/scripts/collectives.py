"""The MPI collectives of MultiWorkerMirroredStrategy, on every worker; prints `RESULT <json>`.

Worker r's inputs depend on r, so the test can compute the expected results for any
number of workers.
"""

import json

import ml_dtypes
import numpy as np

import tapeflow as tf
from tapeflow.distribute import mpi, mpi_ops
from listing import listed      # beside this script

group = mpi.world()
r, n = group.rank, group.size
out = {"rank": r, "size": n}


def inputs(rank):
    return [np.full((2, 3), rank + 1, np.float32), np.arange(4) * (rank + 1), np.full(3, 0.5 + rank, np.float16),
            np.full(2, 1.5 * (rank + 1), ml_dtypes.bfloat16), np.zeros((0, 3)),
            np.linspace(0, 1, 100_000) * (rank + 1), np.float64(rank),
            np.array([1 + 2j * rank], np.complex64)]


# -- NumPy level: fused all-reduce (packed and unpacked, every dtype), gather, scatter, broadcast --
mine = inputs(r)
summed = group.all_reduce(mine)
out["all_reduce"] = listed(summed)
out["all_reduce_dtypes"] = [str(a.dtype) for a in summed]
out["all_reduce_small_packs"] = listed(group.all_reduce(mine, pack_bytes=16))
out["all_gather"] = listed(group.all_gather([np.arange(r + 1) + 10 * r, np.full((r + 1, 2), r, np.float16)]))
out["reduce_scatter"] = listed(group.reduce_scatter([np.arange(n * (n + 1) // 2, dtype=np.float32)], [r + 1]))
out["broadcast"] = listed(group.broadcast([np.full(2, r, np.float32), np.array(r == 0),
                                           np.full((2, 2), r + 0.5, ml_dtypes.bfloat16)]))
scalar = group.broadcast([np.float64(r + 7)])[0]
out["broadcast_scalar"] = [list(scalar.shape), float(scalar)]
group.barrier()

# -- ops: eager, under tapes, in tf.function ---------------------------------------------------
x = tf.Variable([1.0, 2.0])
y = tf.Variable([[1.0 + r]])


def step(scale):
    with tf.GradientTape() as tape:
        s0, s1 = mpi_ops.all_reduce([x * scale, y * y], group)
        loss = tf.reduce_sum(s0 * s0) + tf.reduce_sum(s1)
    gx, gy = tape.gradient(loss, [x, y])
    return s0, s1, gx, gy


out["eager_step"] = listed(step(tf.constant(float(r + 1))))
graph_step = tf.function(step)
out["graph_step"] = listed(graph_step(tf.constant(float(r + 1))))
out["graph_step_again"] = listed(graph_step(tf.constant(float(r + 1))))

rows = tf.constant(np.arange(2 * (r + 1), dtype=np.float32).reshape(r + 1, 2))


def gathered(v):
    with tf.GradientTape() as tape:
        tape.watch(v)
        (g,) = mpi_ops.all_gather([v], group)
        loss = tf.reduce_sum(g * g)
    return g, tape.gradient(loss, v)


out["gather_eager"] = listed(gathered(rows))
out["gather_graph"] = listed(tf.function(gathered)(rows))

slices = tf.IndexedSlices(tf.constant([[1.0 + r, 2.0]] * (r + 1)), tf.constant(list(range(r + 1))),
                          tf.constant([5, 2]))
total = mpi_ops.all_reduce_indexed_slices(slices, group)
out["slices"] = listed([total.indices, total.values, total.dense_shape])
out["slices_type"] = type(total).__name__

with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0])) as acc:
    (z,) = mpi_ops.all_reduce([x * x], group)
out["jvp"] = listed([acc.jvp(z)])
with tf.GradientTape() as tape:
    (z,) = mpi_ops.all_reduce([x * x * (r + 1)], group)
out["jacobian"] = listed([tape.jacobian(z, x)])
out["broadcast_op"] = listed(mpi_ops.broadcast([tf.constant([float(r), 2.0 * r])], group))


@tf.function
def unused_then_used(a):
    mpi_ops.all_reduce([a * 100.0], group)       # nothing reads it: it must still run on every worker
    return mpi_ops.all_reduce([a], group)[0]


out["unused_then_used"] = listed([unused_then_used(tf.constant([float(r)]))])

# -- mismatches: the same error on every worker, then the collectives still work --------------
errors = []
for args in ([tf.ones([2]), tf.ones([3, r + 1])], [tf.ones([2])] * (r + 1), [tf.ones([2], tf.float64 if r else tf.float32)]):
    try:
        mpi_ops.all_reduce(args, group, names=["first", "dense/kernel:0", "third"][:len(args)])
        errors.append(None)
    except ValueError as e:
        errors.append(["ValueError", str(e)])


@tf.function
def mismatched(a):
    return mpi_ops.all_reduce([a], group)


try:
    mismatched(tf.ones([r + 1]))
    errors.append(None)
except tf.errors.InvalidArgumentError as e:
    errors.append(["InvalidArgumentError", e.message])
out["errors"] = errors
out["after_errors"] = listed(group.all_reduce([np.ones(1)]))
print("RESULT " + json.dumps(out), flush=True)
