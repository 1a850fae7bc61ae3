"""Distribution benchmark: weak scaling of the MLP training step across MPI processes and
across MirroredStrategy replicas, one BLAS thread each.

Usage::

    python benchmarks/bench_distribute.py            # full run, about 2 minutes on 2 cores
    python benchmarks/bench_distribute.py --quick    # smoke test: one round, few steps
    python benchmarks/bench_distribute.py --batch 128 --rounds 5

The workload is `workloads.py`'s MLP (784-1024-1024-10, ReLU, sparse softmax
cross-entropy) trained by `tf.keras.optimizers.SGD` through a strategy: each
replica computes its loss on its own batch of `--batch` examples (scaled by the
global batch, `tf.nn.compute_average_loss`), and `apply_gradients` all-reduces
the gradients and updates the mirrored weights.  Rows:

- no strategy: the same step on one batch, without `strategy.run` (reference);
- MultiWorkerMirroredStrategy under `mpiexec -n 1` and `-n 2` (one replica per
  process, `OPENBLAS_NUM_THREADS=1` in each): weak scaling, efficiency
  t(1 process) / t(2 processes) (target >= 0.9), and the time spent in the MPI
  all-reduce of the gradients (metadata check, packing, MPI_Allreduce, waiting
  for the slower process) as a fraction of the step;
- MirroredStrategy with 1 and 2 replicas in one process (logical CPUs, replicas
  in threads, one BLAS thread): efficiency t(1 replica) / t(2 replicas).

Each row is measured eagerly and as a `tf.function`.  Every case runs in its own
process (the script launches them, mpiexec included); the cases are interleaved
round-robin over `--rounds` rounds and the table shows the median over rounds of
each run's median step time (rank 0's, after a barrier before every step); the
efficiency in brackets is that of each case's best round (the fastest run: the
one a busy host disturbed least).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
TARGET = 0.9
MODES = ("eager", "tf.function")
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


# -- one measured run (in its own process) ---------------------------------------------------------

def _measure(kind, mode, replicas, batch, warmup, steps):
    import numpy as np

    import tapeflow as tf
    import workloads

    group = None
    if kind == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
        strategy = tf.distribute.MirroredStrategy()
    elif kind == "multi-worker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        group = strategy.extended._group
    else:
        strategy = tf.distribute.get_strategy()
    n = strategy.num_replicas_in_sync
    rank = group.rank if group is not None else 0
    local = strategy.extended._num_local_replicas if kind != "plain" else 1
    _, _, params_np = workloads.mlp_data(0)
    batches = []
    for i in range(local):          # each replica's own examples
        rng = np.random.default_rng(1000 + rank * local + i)
        batches.append((tf.constant(rng.standard_normal((batch, workloads.MLP_SIZES[0])).astype(np.float32)),
                        tf.constant(rng.integers(0, workloads.MLP_SIZES[-1], batch))))
    with strategy.scope():
        params = [tf.Variable(p) for p in params_np]
        optimizer = tf.keras.optimizers.SGD(learning_rate=workloads.LEARNING_RATE)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(params) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
            logits = tf.matmul(h, params[-2]) + params[-1]
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=batch * n)
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    if kind == "plain":
        x, y = batches[0]

        def step():
            return replica_step(x, y)
    else:
        xs = strategy.experimental_distribute_values_from_function(
            lambda ctx: batches[ctx.replica_id_in_sync_group - rank * local][0])
        ys = strategy.experimental_distribute_values_from_function(
            lambda ctx: batches[ctx.replica_id_in_sync_group - rank * local][1])

        def step():
            return strategy.run(replica_step, args=(xs, ys))
    if mode == "tf.function":
        step = tf.function(step)

    reduce_seconds = [0.0]
    if group is not None:
        plain_all_reduce = group.all_reduce

        def timed_all_reduce(*args, **kwargs):
            start = time.perf_counter()
            try:
                return plain_all_reduce(*args, **kwargs)
            finally:
                reduce_seconds[0] += time.perf_counter() - start

        group.all_reduce = timed_all_reduce
    for _ in range(warmup):
        step()
    times, reduces = [], []
    for _ in range(steps):
        if group is not None:
            group.barrier()
        reduce_seconds[0] = 0.0
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        reduces.append(reduce_seconds[0])
    library = ""
    if group is not None and group._MPI is not None:
        library = group._MPI.Get_library_version().splitlines()[0].strip()
    return {"rank": rank, "replicas": n, "step_ms": 1e3 * statistics.median(times),
            "all_reduce_ms": 1e3 * statistics.median(reduces), "mpi": library}


def worker_main(args):
    result = _measure(args.kind, args.mode, args.replicas, args.batch, args.warmup, args.steps)
    if result["rank"] == 0:
        print("BENCH " + json.dumps(result), flush=True)


# -- the driver ------------------------------------------------------------------------------------

def _mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def _launch(case, args):
    kind, mode, count = case
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--kind", kind, "--mode", mode,
               "--replicas", str(count), "--batch", str(args.batch), "--warmup", str(args.warmup),
               "--steps", str(args.steps)]
    if kind == "multi-worker":
        command = [_mpiexec(), "-n", str(count)] + command
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, HERE, os.environ.get("PYTHONPATH", "")]),
               **{v: "1" for v in THREAD_VARIABLES})
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH "):])
    raise RuntimeError(f"{' '.join(command)} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")


def _cases(with_mpi):
    cases = []
    for mode in MODES:
        cases.append(("plain", mode, 1))
        if with_mpi:
            cases += [("multi-worker", mode, 1), ("multi-worker", mode, 2)]
        cases += [("mirrored", mode, 1), ("mirrored", mode, 2)]
    return cases


def _label(case):
    kind, mode, count = case
    if kind == "plain":
        return f"no strategy, {mode}", "1 process"
    if kind == "multi-worker":
        return f"MultiWorkerMirroredStrategy, {mode}", f"{count} process{'es' if count > 1 else ''}"
    return f"MirroredStrategy, {mode}", f"{count} replica{'s' if count > 1 else ''}"


def driver_main(args):
    import platform

    with_mpi = _mpiexec() is not None
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        with_mpi = False
    cases = _cases(with_mpi)
    runs = {case: [] for case in cases}
    for _ in range(args.rounds):
        for case in cases:             # interleaved: drifts in load hit every case alike
            runs[case].append(_launch(case, args))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load}; one BLAS thread per "
          f"process; batch {args.batch} per replica; median over {args.rounds} round(s) of {args.steps} steps")
    libraries = {r["mpi"] for rs in runs.values() for r in rs if r["mpi"]}
    if libraries:
        print(f"MPI: {', '.join(sorted(libraries))}")
    if not with_mpi:
        print("(mpi4py or mpiexec missing: the MultiWorkerMirroredStrategy rows are skipped; "
              'pip install "tapeflow[mpi]")')
    header = f"{'case':38} {'workers':12} {'step ms':>9} {'spread':>15} {'efficiency [best]':>19} " \
             f"{'all-reduce ms':>13} {'of step':>8}"
    print(header)
    print("-" * len(header))
    single = {}
    for case in cases:
        kind, mode, count = case
        steps = [r["step_ms"] for r in runs[case]]
        step = statistics.median(steps)
        reduce_ms = statistics.median(r["all_reduce_ms"] for r in runs[case])
        spread = f"{min(steps):.1f}-{max(steps):.1f}"
        efficiency = ""
        if count == 1:
            single[(kind, mode)] = step, min(steps)
        elif (kind, mode) in single:
            value = single[(kind, mode)][0] / step
            best = single[(kind, mode)][1] / min(steps)
            efficiency = f"{value:.2f} [{best:.2f}]" + ("" if value >= TARGET else " *")
        name, workers = _label(case)
        reduce_text = f"{reduce_ms:.2f}" if kind == "multi-worker" and count > 1 else ""
        share = f"{100 * reduce_ms / step:.0f}%" if reduce_text else ""
        print(f"{name:38} {workers:12} {step:9.2f} {spread:>15} {efficiency:>19} {reduce_text:>13} {share:>8}")
    print(f"efficiency: t(1) / t(2) at a fixed batch per replica (weak scaling), of the medians over rounds "
          f"[of the best rounds]; target >= {TARGET} (* below it). all-reduce: time in the MPI all-reduce of the "
          "gradients per step, rank 0.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="examples per replica (default 256)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round of 3 steps: a smoke test")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="plain", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="eager", help=argparse.SUPPRESS)
    parser.add_argument("--replicas", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps, args.warmup = 1, 3, 1
    if args.worker:
        worker_main(args)
    else:
        driver_main(args)


if __name__ == "__main__":
    main()
