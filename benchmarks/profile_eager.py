"""Profile tapeflow's eager hot path: where does the per-op time go?

Usage::

    python benchmarks/profile_eager.py                    # small-op chain, cProfile (+ pyinstrument if installed)
    python benchmarks/profile_eager.py --top 40 --sort cumulative
    python benchmarks/profile_eager.py --workload mlp     # the 784-1024-1024-10 training step instead
    python benchmarks/profile_eager.py --no-pyinstrument

Runs the same workloads as `bench_eager.py` (from `workloads.py`): by default
the chain of 200 elementwise ops on a 16-element float32 vector, forward plus
gradient, repeated `--iterations` times after a warm-up, first under cProfile
(printing the top entries by own time and by cumulative time) and then under
pyinstrument's sampling profiler when it is installed (its call tree shows
the hot path without cProfile's per-call overhead distorting it).
"""

import argparse
import cProfile
import io
import os
import pstats
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import workloads  # noqa: E402  (benchmarks/ is on sys.path when run as a script)


def make_step(args):
    if args.workload == "small-ops":
        step, _ = workloads.tapeflow_small_ops(args.ops)
        per_call = args.ops
        unit = "op"
    else:
        step, _ = workloads.tapeflow_mlp(workloads.mlp_data())
        per_call = 1
        unit = "step"
    return step, per_call, unit


def run(step, iterations):
    for _ in range(iterations):
        step()


def plain_timing(step, iterations, per_call, unit):
    start = time.perf_counter()
    run(step, iterations)
    elapsed = time.perf_counter() - start
    print(f"unprofiled: {elapsed / iterations / per_call * 1e6:.2f} us/{unit} "
          f"({iterations} iterations in {elapsed:.2f} s)")


def with_cprofile(step, iterations, top, sort_keys):
    profiler = cProfile.Profile()
    profiler.enable()
    run(step, iterations)
    profiler.disable()
    for key in sort_keys:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key)
        stats.print_stats(top)
        print(f"\n=== cProfile: top {top} by {key} ===")
        print(_trim(out.getvalue()))


def _trim(report):
    """Drops pstats' preamble lines up to the column header."""
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("ncalls"):
            return "\n".join(lines[i:]).rstrip()
    return report.rstrip()


def with_pyinstrument(step, iterations):
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("\n(pyinstrument not installed: pip install pyinstrument for a sampled call tree)")
        return
    profiler = Profiler(interval=0.0002)
    profiler.start()
    run(step, iterations)
    profiler.stop()
    print("\n=== pyinstrument ===")
    print(profiler.output_text(unicode=True, color=False, show_all=False))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("small-ops", "mlp"), default="small-ops")
    parser.add_argument("--ops", type=int, default=200, help="length of the elementwise chain (default 200)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="profiled repetitions (default 200 for small-ops, 20 for mlp)")
    parser.add_argument("--top", type=int, default=25, help="entries to print per cProfile table (default 25)")
    parser.add_argument("--sort", action="append", choices=("tottime", "cumulative", "ncalls"),
                        help="cProfile sort key, repeatable (default: tottime and cumulative)")
    parser.add_argument("--no-pyinstrument", action="store_true", help="skip the pyinstrument pass")
    args = parser.parse_args(argv)
    iterations = args.iterations or (200 if args.workload == "small-ops" else 20)

    step, per_call, unit = make_step(args)
    run(step, max(3, iterations // 10))   # warm-up: imports, caches
    print(f"workload: {args.workload}" + (f" ({args.ops} ops on float32[{workloads.VECTOR_SIZE}], "
                                          "forward + gradient)" if args.workload == "small-ops" else ""))
    plain_timing(step, iterations, per_call, unit)
    with_cprofile(step, iterations, args.top, args.sort or ["tottime", "cumulative"])
    if not args.no_pyinstrument:
        with_pyinstrument(step, iterations)


if __name__ == "__main__":
    main()
