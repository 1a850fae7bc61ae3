"""Full Jacobians, side by side: J of f(x) = tanh(W @ x), x in R^256 (256x256), and the
batch Jacobian of the same layer on a batch of 64 (float32).

Usage::

    python benchmarks/bench_jacobian.py [--rounds 30]

Rows: tapeflow's vectorized Jacobian (`experimental_use_pfor=True`, one batched
backprop) eagerly and under `tf.function`, and its row loop
(`experimental_use_pfor=False`) for reference; TensorFlow's pfor Jacobian under
`tf.function` and eagerly; PyTorch's `torch.func.jacrev` (and `vmap(jacrev)` for
the batch Jacobian); JAX's `jacrev` and `jit(jacrev)`. Frameworks that are not
importable are skipped. Medians (best in brackets) of `--rounds` calls after
two warm-up calls, interleaved per round.
"""

import argparse
import os

import numpy as np

from workloads import add_peers, interleaved

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
N, BATCH = 256, 64


def _data():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
    x = rng.standard_normal((N, 1)).astype(np.float32)
    xb = rng.standard_normal((BATCH, N)).astype(np.float32)
    return w, x, xb


def _tf_cases(tf, label, loop=False):
    w, x, xb = (tf.constant(a) for a in _data())

    def jac(x, pfor=True):
        with tf.GradientTape(persistent=not pfor) as tape:
            tape.watch(x)
            y = tf.tanh(w @ x)
        return tape.jacobian(y, x, experimental_use_pfor=pfor)

    def batch_jac(xb):
        with tf.GradientTape() as tape:
            tape.watch(xb)
            y = tf.tanh(tf.matmul(xb, w, transpose_b=True))
        return tape.batch_jacobian(y, xb)

    jac_fn, batch_fn = tf.function(jac), tf.function(batch_jac)
    cases = {f"{label} jacobian eager": lambda: jac(x),
             f"{label} jacobian tf.function": lambda: jac_fn(x),
             f"{label} batch_jacobian eager": lambda: batch_jac(xb),
             f"{label} batch_jacobian tf.function": lambda: batch_fn(xb)}
    if loop:
        cases[f"{label} jacobian eager, row loop"] = lambda: jac(x, pfor=False)
    return cases


def _torch_cases():
    import torch
    from torch.func import jacrev, vmap
    w, x, xb = (torch.tensor(a) for a in _data())

    def f(x):
        return torch.tanh(w @ x)
    return {"PyTorch jacrev eager": lambda: jacrev(f)(x),
            "PyTorch vmap(jacrev) batch eager": lambda: vmap(jacrev(lambda r: torch.tanh(w @ r)))(xb)}


def _jax_cases():
    import jax
    import jax.numpy as jnp
    w, x, xb = (jnp.asarray(a) for a in _data())

    def f(x):
        return jnp.tanh(w @ x)
    jac, jit_jac = jax.jacrev(f), jax.jit(jax.jacrev(f))
    batch = jax.jit(jax.vmap(jax.jacrev(lambda r: jnp.tanh(w @ r))))
    return {"JAX jacrev": lambda: jac(x).block_until_ready(),
            "JAX jit(jacrev)": lambda: jit_jac(x).block_until_ready(),
            "JAX jit(vmap(jacrev)) batch": lambda: batch(xb).block_until_ready()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    import tapeflow
    cases = add_peers(_tf_cases(tapeflow, "tapeflow", loop=True), (
        ("TensorFlow", lambda: _tf_cases(__import__("tensorflow"), "TensorFlow")),
        ("PyTorch", _torch_cases), ("JAX", _jax_cases)))
    samples = interleaved(cases, args.rounds, warmup=2)
    print(f"Jacobian of tanh(W @ x), n = {N} (batch Jacobian: batch {BATCH}), float32: ms per call, median (best)")
    for name, s in samples.items():
        print(f"  {name:42s} {np.median(s) * 1e3:8.3f} ({min(s) * 1e3:.3f})")


if __name__ == "__main__":
    main()
