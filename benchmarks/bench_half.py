"""Half-precision benchmark: the MLP training step in float16 (and bfloat16) against float32.

Usage::

    python benchmarks/bench_half.py            # full run, about a minute on 2 cores
    python benchmarks/bench_half.py --quick    # smoke test: few rounds, not a measurement
    python benchmarks/bench_half.py --no-tf    # tapeflow only
    python benchmarks/bench_half.py --threads 1  # every framework single-threaded (steadier on a loaded machine)

The workload is `workloads.py`'s MLP step (784-1024-1024-10, batch 256, ReLU,
mean sparse softmax cross-entropy, gradients of all weights and biases, SGD by
`Variable.assign_sub(0.01 * g)`) with the data and weights cast to the dtype,
so every op of the step runs in it.  The same Python step runs in tapeflow and
TensorFlow, eagerly and as a `tf.function` (traced before timing).

Reported: ms per step (median over the rounds, and the spread), each half step
as a ratio to the same framework's float32 step in the same mode (the target:
tapeflow's float16 step at most 1.5x its float32 step), and tapeflow's step as
a ratio to TensorFlow's in the same dtype and mode.  Method as in
`bench_eager.py` (whose timing helpers are reused): one process, cases
interleaved round-robin, a settle pause before each timing block.  The first
step's loss from the shared initial weights is cross-checked first (tapeflow's
tf.function loss must be its eager loss exactly, Note [half precision in plans]).
"""

import argparse
import statistics

import numpy as np

# bench_eager sets TF_CPP_MIN_LOG_LEVEL before anything imports TensorFlow.
from bench_eager import _spread, _table, describe_environment, run_round_robin
from bench_graph import limit_threads
import workloads

TARGET = 1.5             # tapeflow float16 step at most 1.5x its float32 step
DTYPES = ("float32", "float16", "bfloat16")
MODES = ("eager", "tf.function")


def mlp_step(tf, data, dtype, mode):
    """(step, check) for one SGD step of the MLP with data and weights in `dtype`."""
    x_np, y_np, params_np = data
    dt = getattr(tf, dtype)
    x, y = tf.cast(tf.constant(x_np), dt), tf.constant(y_np)
    initial = [tf.cast(tf.constant(p), dt) for p in params_np]
    params = [tf.Variable(p) for p in initial]

    def step():
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(params) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
            logits = tf.matmul(h, params[-2]) + params[-1]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.assign_sub(workloads.LEARNING_RATE * g)
        return loss

    run = tf.function(step) if mode == "tf.function" else step

    def check():
        for p, v in zip(params, initial, strict=True):
            p.assign(v)
        return float(run())

    run()                          # traces the function; warms the eager path
    return run, check


def frameworks(use_tf):
    import tapeflow
    found = {"tapeflow": tapeflow}
    if use_tf:
        tf = workloads._import_tensorflow()
        if tf is None:
            print("  TensorFlow is not importable: tapeflow only")
        else:
            found["TensorFlow"] = tf
    return found


def build_cases(found, data, dtypes):
    cases, checks = {}, {}
    for mode in MODES:
        for name, module in found.items():
            for dtype in dtypes:
                key = (name, mode, dtype)
                try:
                    cases[key], checks[key] = mlp_step(module, data, dtype, mode)
                except Exception as e:   # a framework that cannot run a dtype
                    print(f"  skipping {name} {mode} {dtype}: {type(e).__name__}: {e}")
    return cases, checks


def verify(checks):
    """Each case's first loss against tapeflow's float32 eager loss (half precision: loose)."""
    losses = {key: check() for key, check in checks.items()}
    ref = losses.get(("tapeflow", "eager", "float32"))
    for key, loss in losses.items():
        tol = 2e-2 if key[2] != "float32" else 1e-4
        if ref is not None and not np.isclose(loss, ref, rtol=tol, atol=tol):
            print(f"  WARNING: {' '.join(key)} first loss {loss:.5f}, tapeflow float32 eager {ref:.5f}")
    for (name, mode, dtype), loss in losses.items():   # plans keep values wide, with the eager numbers
        eager = losses.get((name, "eager", dtype))
        if name == "tapeflow" and mode != "eager" and dtype != "float32" and eager is not None and loss != eager:
            print(f"  WARNING: tapeflow {mode} {dtype} first loss {loss!r}, eagerly {eager!r}: not the same number")
    print("  first-step losses: " + ", ".join(f"{' '.join(k)} {v:.4f}" for k, v in losses.items()))


def report(samples):
    ms = {key: statistics.median(s) * 1e3 for key, s in samples.items()}
    best = {key: min(s) * 1e3 for key, s in samples.items()}
    rows = []
    for (name, mode, dtype), t in ms.items():
        own32 = ms.get((name, mode, "float32"))
        vs32 = "-" if dtype == "float32" or own32 is None else f"{t / own32:.2f}x"
        tf_same = ms.get(("TensorFlow", mode, dtype))
        vs_tf = "-" if name == "TensorFlow" or tf_same is None else f"{t / tf_same:.2f}x"
        rows.append((name, mode, dtype, f"{t:.2f}", _spread(samples[(name, mode, dtype)], 1e-3), vs32, vs_tf))
    _table(("framework", "mode", "dtype", "ms/step (median)", "min-max ms", "vs own float32", "vs TensorFlow"),
           rows)
    print("\ntarget: tapeflow float16 step at most 1.5x its float32 step (ratio of medians; of best rounds):")
    for mode in MODES:
        key16, key32 = ("tapeflow", mode, "float16"), ("tapeflow", mode, "float32")
        if key16 in ms and key32 in ms:
            r, r_best = ms[key16] / ms[key32], best[key16] / best[key32]
            print(f"  {mode}: {r:.2f}x [{r_best:.2f}x] {'MET' if r <= TARGET else 'NOT MET'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke test, not a measurement")
    parser.add_argument("--no-tf", action="store_true", help="tapeflow only")
    parser.add_argument("--rounds", type=int, default=11, help="timing rounds per case (default 11)")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated dtypes (default: all three)")
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds of idle before each timing block, see Note [thread settling] in bench_eager.py")
    parser.add_argument("--threads", type=int, default=None,
                        help="cap all frameworks at this many threads (default: their own defaults)")
    args = parser.parse_args(argv)
    if args.threads:
        limit_threads(args.threads)
    print(f"MLP training step {'-'.join(map(str, workloads.MLP_SIZES))}, batch {workloads.BATCH}, "
          "in float32 and half precision, eager and tf.function")
    cases, checks = build_cases(frameworks(not args.no_tf), workloads.mlp_data(), args.dtypes.split(","))
    verify(checks)
    rounds, inner = (2, 1) if args.quick else (args.rounds, 2)
    named = {" ".join(key): step for key, step in cases.items()}
    samples = run_round_robin(named, rounds, inner, warmup=1 if args.quick else 2, settle=args.settle)
    report({key: samples[" ".join(key)] for key in cases})
    print()
    describe_environment()


if __name__ == "__main__":
    main()
