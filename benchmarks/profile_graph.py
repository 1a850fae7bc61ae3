"""Profile tapeflow's graph path (tf.function): where does a call's time go?

Usage::

    python benchmarks/profile_graph.py                    # small-op chain: breakdown, cProfile, pyinstrument
    python benchmarks/profile_graph.py --workload mlp     # the 784-1024-1024-10 training step
    python benchmarks/profile_graph.py --top 15 --sort tottime --no-pyinstrument
    python benchmarks/profile_graph.py --workload mlp --threads 1   # BLAS single-threaded

Runs the tapeflow tf.function workloads of `bench_graph.py` (from
`workloads_graph.py`) after tracing and warming them up, and prints:

1. the compiled plan: ops in the traced graph, steps left after constant
   folding and CSE, steps by op type;
2. a breakdown of one call, its parts timed in interleaved rounds (median
   and best round): the whole call; `Plan.run` alone (so call minus run is
   the tf.function dispatch: argument flattening, cache lookup, the
   PartitionedCall op, wrapping the outputs); and every kernel alone, on the
   arguments the plan gives it, less the cost of calling a no-op the same
   way (so "kernels" is NumPy's own work and run minus kernels is the
   plan's Python overhead: the generated line, the kernel's Python wrapper,
   slot stores and deletes), summed by op type; for the MLP also the
   slowest steps and the NumPy floor's step in the same rounds (there, run
   minus kernels also holds cache effects: a kernel timed alone runs on
   warm inputs);
3. cProfile's top entries (by own and cumulative time);
4. pyinstrument's sampled call tree, when pyinstrument is installed.
"""

import argparse
import collections
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import profile_eager  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from bench_eager import _loadavg  # noqa: E402
import workloads  # noqa: E402
import workloads_graph  # noqa: E402


def make_step(args):
    if args.workload == "small-ops":
        step, _ = workloads_graph.tapeflow_function_small_ops(args.ops)
        return step, args.ops, "op"
    step, _ = workloads_graph.tapeflow_function_mlp(workloads.mlp_data())
    return step, 1, "step"


def plan_of(step):
    """The compiled plan of the traced function behind `step`, and its feed arrays."""
    concrete = step.function.get_concrete_function(*step.args)
    step()                           # the plan is compiled on the first call
    feeds = [t._value for t in list(step.args) + concrete.captured_inputs]
    return concrete, concrete._plan, feeds


def describe_plan(concrete, plan):
    graph_ops = collections.Counter(op.type for op in concrete.graph._ops)
    steps = collections.Counter(s.op.type for s in plan._steps)
    print(f"traced graph: {sum(graph_ops.values())} ops; compiled plan: {len(plan._steps)} steps "
          f"(after pruning, constant folding and CSE)")
    print("  plan steps by type: " + ", ".join(f"{t} {n}" for t, n in steps.most_common()))
    dropped = {t: n - steps.get(t, 0) for t, n in graph_ops.items() if n > steps.get(t, 0)}
    if dropped:
        print("  graph ops not run as steps: " + ", ".join(f"{t} {n}" for t, n in
                                                     sorted(dropped.items(), key=lambda kv: -kv[1])))


def _per_call(fn, iterations):
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    return (time.perf_counter() - start) / iterations


def _noop(*args, **kwargs):
    pass


def kernel_times(plan, feeds, variables, repeats):
    """Seconds each plan step's kernel takes on its own: [(op, seconds)], in plan order.

    One pass through a copy of `Plan.run`'s loop (it reads the plan's internal
    step layout) collects every kernel's arguments; then each kernel is timed
    alone over `repeats` back-to-back calls on those arguments, so the timer
    itself costs nothing per call, minus the same loop calling a no-op (so
    what remains is the kernel's own time). The variables' values are restored after
    (the update kernels run `repeats` extra times).
    """
    saved = [(v, v._value.copy()) for v in variables]
    slots = list(plan._template)
    for index, value in zip(plan._feed_slots, feeds):
        slots[index] = value
    calls = []
    for step in plan._steps:
        args = [slots[i] for i in step.ins]
        for k, var in step.variables:
            args[k] = var._value
        calls.append((step.op, step.kernel, args, step.attrs))
        result = step.kernel(*args, **step.attrs)
        if step.single:
            slots[step.out] = result
        else:
            for index, value in zip(step.out, result):
                slots[index] = value
    perf = time.perf_counter
    times = []
    for op, kernel, args, attrs in calls:
        start = perf()
        for _ in range(repeats):
            _noop(*args, **attrs)
        harness = perf() - start     # the timing loop's own cost: looping, argument unpacking, a call
        start = perf()
        for _ in range(repeats):
            kernel(*args, **attrs)
        times.append((op, max(perf() - start - harness, 0.0) / repeats))
    for v, value in saved:
        v._value = value
    return times


def breakdown(step, plan, feeds, variables, per_call, unit, floor=None, top_steps=12):
    """Times the call, `Plan.run` and the kernels in interleaved rounds; prints median and best round.

    Each round times a block of `block` calls of each part after a short idle
    pause (see bench_eager's Note [thread settling]); with `floor` (the NumPy
    MLP step) it is timed in the same rounds for reference.
    """
    # small calls: many short blocks, so that some rounds escape other processes' time slices
    block, rounds, repeats = (5, 60, 20) if per_call > 1 else (3, 15, 5)
    settle = 0.01 if per_call > 1 else 0.3
    parts = {"call": step, "run": lambda: plan.run(feeds)}
    if floor is not None:
        parts["floor"] = floor
    samples = {name: [] for name in parts}
    per_step = collections.defaultdict(list)
    try:
        for _ in range(rounds):
            for name, fn in parts.items():
                time.sleep(settle)
                fn()
                samples[name].append(_per_call(fn, block))
            time.sleep(settle)
            timed = kernel_times(plan, feeds, variables, repeats=repeats)
            for n, (op, seconds) in enumerate(timed):
                per_step[n].append(seconds)
    except (ValueError, TypeError) as e:     # the plan's internal layout changed
        print(f"(per-kernel timing unavailable: {type(e).__name__}: {e})")
        return
    med = {name: statistics.median(v) for name, v in samples.items()}
    best = {name: min(v) for name, v in samples.items()}
    med["kernels"] = sum(statistics.median(v) for v in per_step.values())   # robust to a preempted step
    best["kernels"] = sum(min(v) for v in per_step.values())
    steps = [(s.op, statistics.median(per_step[n])) for n, s in enumerate(plan._steps)]
    totals, counts = collections.Counter(), collections.Counter()
    for op, seconds in steps:
        totals[op.type] += seconds
        counts[op.type] += 1
    n_steps = len(plan._steps)
    scale, u = (1e6, "us") if per_call > 1 else (1e3, "ms")
    print(f"\none call: {rounds} interleaved rounds of {block} calls ({n_steps} plan steps; kernels timed "
          "one by one on the plan's own arguments, summed); median | best round (less load noise):")

    def parts_of(m):
        rows = [("whole tf.function call", m["call"]),
                ("  dispatch (call - Plan.run)", m["call"] - m["run"]),
                ("  Plan.run", m["run"]),
                ("    plan overhead (run - kernels)" if per_call > 1 else "    run - kernels (overhead, caches)",
                 m["run"] - m["kernels"]),
                ("    kernels", m["kernels"])]
        if floor is not None:
            rows.append(("NumPy floor step (same rounds)", m["floor"]))
        return rows

    for (label, seconds), (_, b) in zip(parts_of(med), parts_of(best)):
        extra = f"   {seconds / per_call * 1e6:7.3f} | {b / per_call * 1e6:7.3f} us/{unit}" if per_call > 1 else ""
        print(f"  {label:<36} {seconds * scale:9.3f} | {b * scale:9.3f} {u}  "
              f"{seconds / med['call'] * 100:5.1f}% | {b / best['call'] * 100:5.1f}%{extra}")
    print(f"  per plan step (best round): plan overhead {(best['run'] - best['kernels']) / n_steps * 1e9:.0f} ns, "
          f"kernel {best['kernels'] / n_steps * 1e9:.0f} ns on average")
    print("\nkernel time by op type (per call, sum of per-step medians):")
    for op_type, seconds in totals.most_common():
        n = counts[op_type]
        print(f"  {op_type:<40} {seconds * scale:10.3f} {u}  {n:4d} steps  {seconds / n * 1e6:9.2f} us/step")
    if per_call == 1:      # big kernels: list the slowest steps with their shapes
        print("\nslowest steps:")
        for op, seconds in sorted(steps, key=lambda kv: -kv[1])[:top_steps]:
            shapes = " x ".join(str(tuple(t._value.shape)) for t in op.inputs)
            attrs = ", ".join(f"{k}={v}" for k, v in op.attrs.items() if isinstance(v, (bool, int, str)))
            print(f"  {seconds * 1e3:8.3f} ms  {op.type:<28} {shapes}  {attrs}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("small-ops", "mlp"), default="small-ops")
    parser.add_argument("--ops", type=int, default=200, help="length of the elementwise chain (default 200)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="timed/profiled repetitions (default 500 for small-ops, 20 for mlp)")
    parser.add_argument("--top", type=int, default=25, help="entries to print per cProfile table (default 25)")
    parser.add_argument("--sort", action="append", choices=("tottime", "cumulative", "ncalls"),
                        help="cProfile sort key, repeatable (default: tottime and cumulative)")
    parser.add_argument("--no-pyinstrument", action="store_true", help="skip the pyinstrument pass")
    parser.add_argument("--threads", type=int, default=None, help="cap BLAS/OpenMP pools at this many threads")
    args = parser.parse_args(argv)
    if args.threads:
        import threadpoolctl
        threadpoolctl.threadpool_limits(args.threads)
    iterations = args.iterations or (500 if args.workload == "small-ops" else 20)

    step, per_call, unit = make_step(args)
    concrete, plan, feeds = plan_of(step)
    profile_eager.run(step, max(3, iterations // 10))     # warm-up
    print(f"workload: tapeflow tf.function, {args.workload}" +
          (f" ({args.ops} ops on float32[{workloads.VECTOR_SIZE}], gradient inside the function)"
           if args.workload == "small-ops" else " (784-1024-1024-10 SGD step, batch 256)"))
    print(f"numpy {np.__version__}, load average {_loadavg()}")
    describe_plan(concrete, plan)
    profile_eager.plain_timing(step, iterations, per_call, unit)
    floor = workloads.numpy_mlp(workloads.mlp_data())[0] if args.workload == "mlp" else None
    breakdown(step, plan, feeds, concrete.variables, per_call, unit, floor)
    profile_eager.with_cprofile(step, iterations, args.top, args.sort or ["tottime", "cumulative"])
    if not args.no_pyinstrument:
        profile_eager.with_pyinstrument(step, iterations)


if __name__ == "__main__":
    main()
