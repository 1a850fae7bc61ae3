"""Eager-mode benchmarks: tapeflow against TensorFlow, PyTorch, HIPS autograd and NumPy.

Usage::

    python benchmarks/bench_eager.py            # full run (a few minutes on 2 cores)
    python benchmarks/bench_eager.py --quick    # fewer repeats, for a smoke test
    python benchmarks/bench_eager.py --only small-ops   # or: --only mlp

Two workloads (defined in `workloads.py`, identical maths for every framework):

(a) small-op overhead: a chain of 200 elementwise ops on a 16-element float32
    vector, forward plus the gradient of its sum w.r.t. the input; reported as
    microseconds per op (total / 200) and as a ratio to PyTorch.
(b) MLP training step: 784-1024-1024-10, batch 256, ReLU, sparse softmax
    cross-entropy, gradients w.r.t. all weights and biases and an SGD update,
    float32; reported in ms per step and as a ratio to hand-written NumPy.

Frameworks that are not importable are skipped. All cases run in one process
and are interleaved round-robin (one timing of each case per round), so drift
in machine load hits them alike; each timing block starts after a short idle
pause (see Note [thread settling]); each reported figure is the median over
the rounds. BLAS and framework thread pools keep their defaults (printed).
"""

import argparse
import os
import platform
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import workloads  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

SMALL_OP_TARGET = 1.0   # tapeflow small-op overhead at most PyTorch's (issue 10)
MLP_TARGET = 1.2        # tapeflow eager MLP step at most 1.2x the NumPy floor


def run_round_robin(cases, rounds, inner, warmup, settle):
    """Times every case once per round; returns {name: [seconds per call, ...]}.

    Note [thread settling]: BLAS and OpenMP worker threads busy-wait for a while
    after a parallel call (OpenBLAS for about 2**28 cycles); on a 2-core machine
    they would steal a core from whichever framework runs next. So before each
    timing block we sleep `settle` seconds and make one untimed call.
    """
    return workloads.interleaved(cases, rounds, warmup, settle=settle, inner=inner)


def build(factories, arg, label):
    """Instantiates the available cases; prints which were skipped."""
    cases, checks = {}, {}
    for name, factory in factories.items():
        try:
            made = factory(arg)
        except Exception as e:   # a framework that imports but cannot run the case
            print(f"  [{label}] skipping {name}: {type(e).__name__}: {e}")
            continue
        if made is None:
            print(f"  [{label}] skipping {name}: not importable")
            continue
        cases[name], checks[name] = made
    return cases, checks


def verify(checks, label, rtol):
    """Runs every case's check and warns when one disagrees with the first case's result."""
    results = {}
    for name, check in list(checks.items()):
        try:
            results[name] = np.asarray(check(), dtype=np.float64)
        except Exception as e:
            print(f"  [{label}] {name} failed: {type(e).__name__}: {e}")
    if results:
        ref_name, ref = next(iter(results.items()))
        for name, value in results.items():
            if not np.allclose(value, ref, rtol=rtol, atol=rtol):
                print(f"  [{label}] WARNING: {name} result differs from {ref_name}: "
                      f"max abs diff {np.max(np.abs(value - ref)):.3g}")
    return set(results)


def bench_small_ops(args):
    n_ops = args.ops
    print(f"\n(a) small-op overhead: chain of {n_ops} elementwise ops "
          f"({'/'.join(workloads.PATTERN)}) on float32[{workloads.VECTOR_SIZE}], forward + gradient")
    cases, checks = build(workloads.SMALL_OPS, n_ops, "small-ops")
    ok = verify(checks, "small-ops", rtol=1e-4)
    cases = {k: v for k, v in cases.items() if k in ok}
    rounds, inner = (5, 3) if args.quick else (args.rounds, 10)
    samples = run_round_robin(cases, rounds, inner, warmup=3 if args.quick else 20, settle=args.settle)
    per_op = {name: statistics.median(s) / n_ops * 1e6 for name, s in samples.items()}
    best = {name: min(s) / n_ops * 1e6 for name, s in samples.items()}
    ref, ref_best = per_op.get("PyTorch eager"), best.get("PyTorch eager")
    rows = []
    for name, us in per_op.items():
        spread = _spread(samples[name], n_ops * 1e-6)
        rows.append((name, f"{us:.2f}", spread, _ratio(us, ref), _ratio(best[name], ref_best)))
    _table(("framework", "us/op (median)", "min-max us/op", "vs PyTorch (median)", "(min)"), rows)
    return per_op, best


def bench_mlp(args):
    print(f"\n(b) MLP training step: {'-'.join(map(str, workloads.MLP_SIZES))}, batch {workloads.BATCH}, "
          "ReLU, sparse softmax cross-entropy, SGD update, float32")
    cases, checks = build(workloads.MLP, workloads.mlp_data(), "mlp")
    ok = verify(checks, "mlp", rtol=1e-3)
    cases = {k: v for k, v in cases.items() if k in ok}
    rounds, inner = (3, 2) if args.quick else (args.rounds, 3)
    samples = run_round_robin(cases, rounds, inner, warmup=2 if args.quick else 5, settle=args.settle)
    ms = {name: statistics.median(s) * 1e3 for name, s in samples.items()}
    best = {name: min(s) * 1e3 for name, s in samples.items()}
    ref, ref_best = ms.get("NumPy by hand (floor)"), best.get("NumPy by hand (floor)")
    rows = [(name, f"{t:.2f}", _spread(samples[name], 1e-3), _ratio(t, ref), _ratio(best[name], ref_best))
            for name, t in ms.items()]
    _table(("framework", "ms/step (median)", "min-max ms", "vs NumPy (median)", "(min)"), rows)
    return ms, best


def _spread(samples, unit):
    return f"{min(samples) / unit:.2f}-{max(samples) / unit:.2f}"


def _ratio(value, ref):
    return "-" if ref is None else f"{value / ref:.2f}x"


def _table(header, rows):
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    line = lambda r: "  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    print(line(header))
    print("  " + "  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def describe_environment():
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {_loadavg()}")
    try:
        import threadpoolctl
        for pool in threadpoolctl.threadpool_info():
            print(f"  BLAS/OpenMP pool: {pool.get('internal_api')} ({pool.get('filepath', '').rsplit('/', 1)[-1]}), "
                  f"{pool.get('num_threads')} threads")
    except ImportError:
        print("  (threadpoolctl not installed: BLAS thread count unknown)")
    for module, attr in (("torch", "__version__"), ("tensorflow", "__version__"), ("autograd", None)):
        if module in sys.modules:
            mod = sys.modules[module]
            version = getattr(mod, "__version__", "?") if attr else _dist_version(module)
            extra = f", {mod.get_num_threads()} intra-op threads" if module == "torch" else ""
            print(f"  {module} {version}{extra}")


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return "?"


def _loadavg():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def summary(small_ops, mlp):
    print("\ntargets (ratios of medians; of best rounds in brackets):")
    _target("small-op overhead vs PyTorch", small_ops, "PyTorch eager", SMALL_OP_TARGET)
    _target("MLP step vs NumPy floor", mlp, "NumPy by hand (floor)", MLP_TARGET)


def _target(label, results, ref_name, target):
    if not results:
        return
    median, best = results
    if "tapeflow eager" not in median or ref_name not in median:
        print(f"  {label}: not measured")
        return
    r = median["tapeflow eager"] / median[ref_name]
    r_best = best["tapeflow eager"] / best[ref_name]
    print(f"  {label}: {r:.2f}x [{r_best:.2f}x] (target <= {target}x) {'MET' if r <= target else 'NOT MET'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test, not a measurement")
    parser.add_argument("--only", choices=("small-ops", "mlp"), help="run one workload")
    parser.add_argument("--rounds", type=int, default=21, help="timing rounds per case (default 21)")
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds of idle before each timing block, see Note [thread settling] (default 0.3)")
    parser.add_argument("--ops", type=int, default=200, help="length of the elementwise chain (default 200)")
    args = parser.parse_args(argv)
    small_ops = bench_small_ops(args) if args.only in (None, "small-ops") else None
    mlp = bench_mlp(args) if args.only in (None, "mlp") else None
    print()
    describe_environment()
    summary(small_ops, mlp)


if __name__ == "__main__":
    main()
