"""Hessian-vector products of f(x) = sum(sin(x) x^2) + x.A.x / n, n = 2000 (float64), side by side.

Usage::

    python benchmarks/bench_hvp.py [--rounds 20]

Rows: tapeflow forward-over-reverse and reverse-over-reverse, eagerly and under
`tf.function`; TensorFlow's forward-over-reverse under `tf.function` and
eagerly; PyTorch's `torch.func.jvp(grad(f))`. Frameworks that are not
importable are skipped. Medians (best in brackets) of `--rounds` calls after
one warm-up call, interleaved per round.
"""

import argparse
import os

import numpy as np

from workloads import add_peers, interleaved

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
N = 2000


def _tf_cases(tf, label):
    rng = np.random.default_rng(0)
    a = tf.constant(rng.standard_normal((N, N)))
    x, v = tf.constant(rng.standard_normal(N)), tf.constant(rng.standard_normal(N))

    def f(x):
        return tf.reduce_sum(tf.sin(x) * x * x) + tf.reduce_sum(x * tf.linalg.matvec(a, x)) / N

    def fwd_rev(x, v):
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            g = tape.gradient(y, x)
        return acc.jvp(g)

    def rev_rev(x, v):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            gv = tf.reduce_sum(inner.gradient(y, x) * v)
        return outer.gradient(gv, x)

    fwd_fn, rev_fn = tf.function(fwd_rev), tf.function(rev_rev)
    return {f"{label} fwd-over-rev eager": lambda: fwd_rev(x, v),
            f"{label} rev-over-rev eager": lambda: rev_rev(x, v),
            f"{label} fwd-over-rev tf.function": lambda: fwd_fn(x, v),
            f"{label} rev-over-rev tf.function": lambda: rev_fn(x, v)}


def _torch_cases():
    import torch
    from torch.func import grad, jvp
    rng = np.random.default_rng(0)
    a = torch.tensor(rng.standard_normal((N, N)))
    x, v = torch.tensor(rng.standard_normal(N)), torch.tensor(rng.standard_normal(N))

    def f(x):
        return (torch.sin(x) * x * x).sum() + (x * (a @ x)).sum() / N
    return {"PyTorch jvp(grad) eager": lambda: jvp(grad(f), (x,), (v,))[1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    import tapeflow
    cases = add_peers(_tf_cases(tapeflow, "tapeflow"), (
        ("TensorFlow", lambda: _tf_cases(__import__("tensorflow"), "TensorFlow")), ("PyTorch", _torch_cases)))
    samples = interleaved(cases, args.rounds)
    print(f"Hessian-vector product, n = {N}, float64: ms per call, median (best)")
    for name, s in samples.items():
        print(f"  {name:40s} {np.median(s) * 1e3:8.2f} ({min(s) * 1e3:.2f})")


if __name__ == "__main__":
    main()
