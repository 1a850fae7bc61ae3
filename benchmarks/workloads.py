"""The benchmark workloads, written once per framework with identical maths.

Each `*_small_ops(n_ops)` returns `(step, check)`: `step()` runs the chain of
`n_ops` elementwise ops forward on a 16-element float32 vector and takes the
gradient of its sum with respect to the input; `check()` returns that gradient
as a NumPy array (used to verify that every framework computes the same thing).

Each `*_mlp(data)` returns `(step, check)` for one SGD training step of the
784-1024-1024-10 ReLU MLP on a batch with sparse labels; `check()` runs one
step from the initial weights and returns its loss.

A factory returns None when its framework is not importable.
"""

import numpy as np

VECTOR_SIZE = 16
MLP_SIZES = (784, 1024, 1024, 10)
BATCH = 256
LEARNING_RATE = 0.01

# The elementwise chain: this pattern of five ops, repeated. Values stay in a
# small range (tanh and sin bound them), so exp never overflows.
PATTERN = ("sin", "mul", "add", "tanh", "exp")


def chain(x, sin, tanh, exp, n_ops):
    """Applies `n_ops` ops of PATTERN to `x` with the given framework's functions."""
    fns = {"sin": sin, "tanh": tanh, "exp": exp,
           "mul": lambda v: v * 0.5, "add": lambda v: v + 0.25}
    for i in range(n_ops):
        x = fns[PATTERN[i % len(PATTERN)]](x)
    return x


def small_op_input(seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, VECTOR_SIZE).astype(np.float32)


def mlp_data(seed=0):
    """Same inputs, labels and initial weights for every framework (float32, labels int64)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, MLP_SIZES[0])).astype(np.float32)
    y = rng.integers(0, MLP_SIZES[-1], BATCH).astype(np.int64)
    params = []
    for fan_in, fan_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        params.append(rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return x, y, params


# -- tapeflow ---------------------------------------------------------------
def tapeflow_small_ops(n_ops):
    import tapeflow as tf
    x = tf.constant(small_op_input())

    def step():
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = tf.reduce_sum(chain(x, tf.sin, tf.tanh, tf.exp, n_ops))
        return tape.gradient(out, x)

    return step, lambda: step().numpy()


def tapeflow_mlp(data):
    import tapeflow as tf
    x_np, y_np, params_np = data
    x, y = tf.constant(x_np), tf.constant(y_np)
    params = [tf.Variable(p) for p in params_np]

    def step():
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(params) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
            logits = tf.matmul(h, params[-2]) + params[-1]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.assign_sub(LEARNING_RATE * g)
        return loss

    def check():
        for p, v in zip(params, params_np, strict=True):
            p.assign(v)
        return float(step())

    return step, check


# -- TensorFlow -------------------------------------------------------------
def _import_tensorflow():
    """TensorFlow, or None; its C++ start-up banner (printed despite TF_CPP_MIN_LOG_LEVEL) is muted."""
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            import tensorflow as tf
    except ImportError:
        return None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return tf


def tensorflow_small_ops(n_ops):
    tf = _import_tensorflow()
    if tf is None:
        return None
    x = tf.constant(small_op_input())

    def step():
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = tf.reduce_sum(chain(x, tf.sin, tf.tanh, tf.exp, n_ops))
        return tape.gradient(out, x)

    return step, lambda: step().numpy()


def tensorflow_mlp(data):
    tf = _import_tensorflow()
    if tf is None:
        return None
    x_np, y_np, params_np = data
    x, y = tf.constant(x_np), tf.constant(y_np)
    params = [tf.Variable(p) for p in params_np]

    def step():
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(params) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
            logits = tf.matmul(h, params[-2]) + params[-1]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.assign_sub(LEARNING_RATE * g)
        return loss

    def check():
        for p, v in zip(params, params_np, strict=True):
            p.assign(v)
        return float(step())

    return step, check


# -- PyTorch ----------------------------------------------------------------
def torch_small_ops(n_ops):
    try:
        import torch
    except ImportError:
        return None
    x = torch.tensor(small_op_input(), requires_grad=True)

    def step():
        out = chain(x, torch.sin, torch.tanh, torch.exp, n_ops).sum()
        (grad,) = torch.autograd.grad(out, x)
        return grad

    return step, lambda: step().numpy()


def torch_mlp(data):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    x_np, y_np, params_np = data
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    params = [torch.tensor(p, requires_grad=True) for p in params_np]

    def step():
        h = x
        for i in range(0, len(params) - 2, 2):
            h = torch.relu(h @ params[i] + params[i + 1])
        logits = h @ params[-2] + params[-1]
        loss = F.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(LEARNING_RATE * g)
        return loss.detach()

    def check():
        with torch.no_grad():
            for p, v in zip(params, params_np, strict=True):
                p.copy_(torch.from_numpy(v))
        return float(step())

    return step, check


# -- HIPS autograd ----------------------------------------------------------
def autograd_small_ops(n_ops):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None
    x = small_op_input()
    grad_fn = autograd.grad(lambda v: anp.sum(chain(v, anp.sin, anp.tanh, anp.exp, n_ops)))

    def step():
        return grad_fn(x)

    return step, step


# -- hand-written NumPy (the floor) -----------------------------------------
def numpy_mlp(data):
    """Forward and backward by hand, updating the weights in place."""
    x, y, params_np = data
    params = [p.copy() for p in params_np]
    n_layers = len(params) // 2
    rows = np.arange(len(y))

    def step():
        acts, pre = [x], []
        h = x
        for i in range(n_layers):
            z = h @ params[2 * i] + params[2 * i + 1]
            pre.append(z)
            h = np.maximum(z, 0) if i < n_layers - 1 else z
            acts.append(h)
        logits = acts[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(total[:, 0]) - shifted[rows, y])
        d = exp / total                      # d loss / d logits = (softmax - onehot) / batch
        d[rows, y] -= 1.0
        d /= len(y)
        for i in range(n_layers - 1, -1, -1):
            w = params[2 * i]
            dw = acts[i].T @ d
            db = d.sum(axis=0)
            if i > 0:
                d = (d @ w.T) * (pre[i - 1] > 0)
            w -= LEARNING_RATE * dw
            params[2 * i + 1] -= LEARNING_RATE * db
        return loss

    def check():
        for p, v in zip(params, params_np, strict=True):
            p[...] = v
        return float(step())

    return step, check


SMALL_OPS = {
    "tapeflow eager": tapeflow_small_ops,
    "TensorFlow eager": tensorflow_small_ops,
    "PyTorch eager": torch_small_ops,
    "HIPS autograd": autograd_small_ops,
}

MLP = {
    "NumPy by hand (floor)": numpy_mlp,
    "tapeflow eager": tapeflow_mlp,
    "TensorFlow eager": tensorflow_mlp,
    "PyTorch eager": torch_mlp,
}


def interleaved(cases, rounds, warmup=1, settle=None, inner=1):
    """Times each callable of `cases` (name -> step) `rounds` times after `warmup` calls,
    interleaving the cases round by round so that drift hits them alike.

    With `settle` (seconds, 0 included), each timing block starts with a pause that long and
    one untimed call (Note [thread settling] in bench_eager.py); a block times `inner`
    back-to-back calls.

    Returns:
      name -> list of seconds per call (each the mean of a block).
    """
    import time
    for step in cases.values():
        for _ in range(warmup):
            step()
    samples = {name: [] for name in cases}
    for _ in range(rounds):
        for name, step in cases.items():
            if settle is not None:
                time.sleep(settle)
                step()
            start = time.perf_counter()
            for _ in range(inner):
                step()
            samples[name].append((time.perf_counter() - start) / inner)
    return samples


def add_peers(cases, makers):
    """Adds the cases of each importable peer (`makers`: framework name -> function
    returning its cases); prints which were skipped."""
    for name, make in makers:
        try:
            cases.update(make())
        except ImportError:
            print(f"skipping {name}: not importable")
    return cases
