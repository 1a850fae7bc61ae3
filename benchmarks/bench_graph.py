"""Graph-mode benchmarks: tapeflow's tf.function against TensorFlow's, PyTorch and NumPy.

Usage::

    python benchmarks/bench_graph.py                  # full run, about 1.5 minutes on 2 cores
    python benchmarks/bench_graph.py --quick          # smoke test: few rounds, not a measurement
    python benchmarks/bench_graph.py --only small-ops # or: --only mlp
    python benchmarks/bench_graph.py --torch-compile  # also torch.compile in (b) (compiling takes 20-40 s)
    python benchmarks/bench_graph.py --threads 1      # every framework single-threaded

Two workloads (defined in `workloads_graph.py`; the tf.function code is the
same Python for tapeflow and TensorFlow):

(a) small-op chain under tf.function: the eager benchmark's chain of 200
    elementwise ops on a 16-element float32 vector, with the GradientTape
    inside the function, which returns the gradient of the sum; reported as
    microseconds per chain op (call time / 200) and as a ratio to TensorFlow's
    tf.function. Eager tapeflow and TensorFlow, and the chain with its
    gradient written by hand in NumPy, are shown for context.
(b) MLP training step under tf.function: 784-1024-1024-10, batch 256, ReLU,
    sparse softmax cross-entropy, tape inside the function and the SGD update
    by `Variable.assign_sub` inside it too; reported in ms per step and as a
    ratio to the hand-written NumPy floor, with PyTorch (eager, and
    torch.compile on request) and eager tapeflow for context.

Method as in `bench_eager.py` (whose timing helpers are reused): one process,
cases interleaved round-robin, a settle pause before each timing block,
medians over the rounds, ratios of medians and of best rounds. Every function
is traced and every case warmed up before timing, and results are
cross-checked first (the gradient; the losses of two steps from the same
initial weights).
"""

import argparse
import statistics
import sys

import numpy as np

# bench_eager sets TF_CPP_MIN_LOG_LEVEL before anything imports TensorFlow.
from bench_eager import _ratio, _spread, _table, build, describe_environment, run_round_robin
import workloads
import workloads_graph

SMALL_OP_TARGET = 1.3    # tapeflow tf.function per-op time at most 1.3x TensorFlow's tf.function
MLP_TARGET = 1.05        # tapeflow tf.function MLP step at most 1.05x the NumPy floor

TAPEFLOW = "tapeflow tf.function"
TENSORFLOW = "TensorFlow tf.function"
FLOOR = "NumPy by hand (floor)"


def verify(checks, label, rtol):
    """Runs every case's check; prints the reference result and each case's deviation from it.

    Returns the names of the cases that ran; a case deviating by more than
    `rtol` (relative, element by element) is reported with a WARNING, not dropped.
    """
    results = {}
    for name, check in checks.items():
        try:
            results[name] = np.asarray(check(), dtype=np.float64)
        except Exception as e:
            print(f"  [{label}] {name} failed: {type(e).__name__}: {e}")
    if not results:
        return set()
    ref_name, ref = next(iter(results.items()))
    shown = np.array2string(ref, precision=6, threshold=4, max_line_width=200)
    print(f"  [{label}] cross-check against {ref_name}: {shown}")
    for name, value in list(results.items())[1:]:
        # relative to each element: the chain's gradient is ~1e-31, so an absolute tolerance would pass anything
        diff = np.max(np.abs(value - ref) / np.maximum(np.abs(ref), 1e-300)) if value.shape == ref.shape else np.inf
        ok = diff <= rtol
        print(f"  [{label}]   {name}: max relative difference {diff:.2g}" + ("" if ok else "  WARNING: differs"))
    return set(results)


def bench_small_ops(args):
    n_ops = args.ops
    print(f"\n(a) small-op chain under tf.function: {n_ops} elementwise ops "
          f"({'/'.join(workloads.PATTERN)}) on float32[{workloads.VECTOR_SIZE}], "
          "tape inside the function, returns the gradient")
    cases, checks = build(workloads_graph.SMALL_OPS, n_ops, "small-ops")
    ok = verify(checks, "small-ops", rtol=1e-4)
    cases = {k: v for k, v in cases.items() if k in ok}
    rounds, inner = (5, 3) if args.quick else (args.rounds, 20)
    samples = run_round_robin(cases, rounds, inner, warmup=3 if args.quick else 20, settle=args.settle)
    per_op = {name: statistics.median(s) / n_ops * 1e6 for name, s in samples.items()}
    best = {name: min(s) / n_ops * 1e6 for name, s in samples.items()}
    ref, ref_best = per_op.get(TENSORFLOW), best.get(TENSORFLOW)
    rows = [(name, f"{us:.3f}", _spread(samples[name], n_ops * 1e-6), f"{us * n_ops / 1e3:.3f}",
             _ratio(us, ref), _ratio(best[name], ref_best))
            for name, us in per_op.items()]
    _table(("framework", "us/op (median)", "min-max us/op", "ms/call", "vs TF tf.function (median)", "(min)"),
           rows)
    return per_op, best


def bench_mlp(args):
    print(f"\n(b) MLP training step under tf.function: {'-'.join(map(str, workloads.MLP_SIZES))}, "
          f"batch {workloads.BATCH}, ReLU, sparse softmax cross-entropy, SGD via assign_sub, float32")
    factories = dict(workloads_graph.MLP)
    if args.torch_compile:
        factories.update(workloads_graph.TORCH_COMPILE)
    cases, checks = build(factories, workloads.mlp_data(), "mlp")
    ok = verify(checks, "mlp", rtol=1e-3)
    cases = {k: v for k, v in cases.items() if k in ok}
    rounds, inner = (3, 2) if args.quick else (args.rounds, 3)
    samples = run_round_robin(cases, rounds, inner, warmup=2 if args.quick else 5, settle=args.settle)
    ms = {name: statistics.median(s) * 1e3 for name, s in samples.items()}
    best = {name: min(s) * 1e3 for name, s in samples.items()}
    ref, ref_best = ms.get(FLOOR), best.get(FLOOR)
    rows = [(name, f"{t:.2f}", _spread(samples[name], 1e-3), _ratio(t, ref), _ratio(best[name], ref_best))
            for name, t in ms.items()]
    _table(("framework", "ms/step (median)", "min-max ms", "vs NumPy (median)", "(min)"), rows)
    return ms, best


def summary(small_ops, mlp):
    print("\ntargets (ratios of medians; of best rounds in brackets):")
    if small_ops:
        _target("small-op per-op time, tapeflow vs TF tf.function", small_ops, TAPEFLOW, TENSORFLOW,
                SMALL_OP_TARGET)
    if mlp:
        _target("MLP step, tapeflow tf.function vs NumPy floor", mlp, TAPEFLOW, FLOOR, MLP_TARGET)
        _target("MLP step, TF tf.function vs NumPy floor", mlp, TENSORFLOW, FLOOR, MLP_TARGET)


def _target(label, results, name, ref_name, target):
    median, best = results
    if name not in median or ref_name not in median:
        print(f"  {label}: not measured")
        return
    r, r_best = median[name] / median[ref_name], best[name] / best[ref_name]
    print(f"  {label}: {r:.2f}x [{r_best:.2f}x] (target <= {target}x) {'MET' if r <= target else 'NOT MET'}")


def limit_threads(n):
    """Caps every framework at `n` threads: BLAS/OpenMP pools, PyTorch, TensorFlow (before it starts)."""
    tf = workloads._import_tensorflow()
    if tf is not None:
        tf.config.threading.set_intra_op_parallelism_threads(n)
        tf.config.threading.set_inter_op_parallelism_threads(n)
    try:
        import torch
        torch.set_num_threads(n)
    except ImportError:
        pass
    try:
        import threadpoolctl
    except ImportError:
        raise SystemExit("--threads needs threadpoolctl (pip install threadpoolctl)")
    threadpoolctl.threadpool_limits(n)      # after the imports above loaded their pools
    print(f"threads capped at {n} (BLAS/OpenMP pools, torch.set_num_threads, TF intra/inter-op)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test, not a measurement")
    parser.add_argument("--only", choices=("small-ops", "mlp"), help="run one workload")
    parser.add_argument("--rounds", type=int, default=21, help="timing rounds per case (default 21)")
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds of idle before each timing block, see bench_eager's "
                             "Note [thread settling] (default 0.3)")
    parser.add_argument("--ops", type=int, default=200, help="length of the elementwise chain (default 200)")
    parser.add_argument("--torch-compile", action="store_true",
                        help="add torch.compile to the MLP comparison (compiling takes 20-40 s on 2 cores)")
    parser.add_argument("--threads", type=int, default=None,
                        help="cap all frameworks at this many threads (default: their own defaults); "
                             "1 is robust on a loaded machine, see README")
    args = parser.parse_args(argv)
    if args.threads:
        limit_threads(args.threads)
    small_ops = bench_small_ops(args) if args.only in (None, "small-ops") else None
    mlp = bench_mlp(args) if args.only in (None, "mlp") else None
    print()
    describe_environment()
    if "tensorflow" in sys.modules:
        threading = sys.modules["tensorflow"].config.threading
        print(f"  tensorflow threads: intra-op {threading.get_intra_op_parallelism_threads()}, "
              f"inter-op {threading.get_inter_op_parallelism_threads()} (0 = TensorFlow's default)")
    summary(small_ops, mlp)


if __name__ == "__main__":
    main()
