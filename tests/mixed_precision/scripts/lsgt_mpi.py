"""Under `mpiexec -n 2`: LossScaleGradientTape with a MultiWorkerMirroredStrategy, one replica per
process.  Rank 1's float16 gradient overflows at high scales; the loss scale must fall on both
ranks together and stay equal, eagerly and then in a tf.function training loop."""

import json

import numpy as np
from mpi4py import MPI

import tapeflow as tf

mp = tf.mixed_precision.experimental
strategy = tf.distribute.MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
with strategy.scope():
    scale = mp.DynamicLossScale(initial_loss_scale=2 ** 15, increment_period=2)
    w = tf.Variable([10.0, 1.0])
    opt = tf.keras.optimizers.SGD(1e-6)


def step(x):
    with mp.LossScaleGradientTape(scale) as tape:
        y = tf.reduce_sum(tf.cast(tf.exp(tf.cast(w * x, tf.float16)), tf.float32))
    g = tape.gradient(y, w)
    opt.apply_gradients([(g, w)])
    return g


x = tf.constant([0.1, 1.0] if rank == 0 else [1.0, 1.0])
grad = strategy.run(step, args=(x,))
scales = [float(scale())]
function_step = tf.function(lambda x: strategy.run(step, args=(x,)))
for _ in range(3):
    function_step(x)
    scales.append(float(scale()))
report = scale.last_nonfinite
e = np.exp(np.float16(1.0))
expected = [float(e) * 0.1, float(e)] if rank == 0 else [22032.0, float(e)]
line = "RESULT " + json.dumps({"rank": rank, "scales": scales, "weights": w.numpy().tolist(),
                              "skipped": scale.skipped_steps, "grad": np.asarray(grad).tolist(),
                              "expected_grad": expected, "op": report.op_type if report else None})
for turn in range(strategy.num_replicas_in_sync):      # one line at a time: the launcher may mix them
    if turn == rank:
        print(line, flush=True)
    MPI.COMM_WORLD.Barrier()
