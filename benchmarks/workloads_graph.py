"""Graph-mode workloads: the `workloads.py` maths inside `tf.function`.

tapeflow and TensorFlow run literally the same Python code here (the factory
receives the framework module), so the two traced graphs describe the same
computation. The `GradientTape` is used inside the function, so the gradient
is part of the traced graph, as is the SGD update of the MLP step
(`Variable.assign_sub`).

Factories follow `workloads.py`: each returns `(step, check)` or None when its
framework is not importable. For the MLP, `check()` resets the weights, runs
two steps and returns both losses: the first checks the forward pass, the
second checks that the gradients and the update were applied identically.

PyTorch has no `tf.function`; its rows are eager PyTorch and, when asked for,
`torch.compile` on the loss (the backward then comes from AOTAutograd).
"""

import workloads
from workloads import LEARNING_RATE, chain, mlp_data, small_op_input  # noqa: F401  (re-exported)


# -- shared by tapeflow and TensorFlow ---------------------------------------------
def _small_ops_function(tf, n_ops):
    @tf.function
    def value_and_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = tf.reduce_sum(chain(x, tf.sin, tf.tanh, tf.exp, n_ops))
        return tape.gradient(out, x)

    x = tf.constant(small_op_input())
    value_and_gradient(x)      # trace outside the timed region

    def step():
        return value_and_gradient(x)

    step.function, step.args = value_and_gradient, (x,)   # for profile_graph.py
    return step, lambda: step().numpy()


def mlp_loss(tf, x, y, params):
    """Mean sparse softmax cross-entropy of the ReLU MLP (tapeflow or TensorFlow)."""
    h = x
    for i in range(0, len(params) - 2, 2):
        h = tf.nn.relu(tf.matmul(h, params[i]) + params[i + 1])
    logits = tf.matmul(h, params[-2]) + params[-1]
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def _mlp_function(tf, data):
    x_np, y_np, params_np = data
    x, y = tf.constant(x_np), tf.constant(y_np)
    params = [tf.Variable(p) for p in params_np]

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = mlp_loss(tf, x, y, params)
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads, strict=True):
            p.assign_sub(LEARNING_RATE * g)
        return loss

    def step():
        return train_step(x, y)

    step.function, step.args = train_step, (x, y)          # for profile_graph.py

    def check():
        for p, v in zip(params, params_np, strict=True):
            p.assign(v)
        return [float(step()), float(step())]

    return step, check


def _two_steps(made):
    """Wraps an eager workload's one-step check into the two-loss check used here."""
    if made is None:
        return None
    step, check = made
    return step, lambda: [float(check()), float(step())]


# -- tapeflow -----------------------------------------------------------------------
def tapeflow_function_small_ops(n_ops):
    import tapeflow as tf
    return _small_ops_function(tf, n_ops)


def tapeflow_function_mlp(data):
    import tapeflow as tf
    return _mlp_function(tf, data)


# -- TensorFlow ----------------------------------------------------------------------
def tensorflow_function_small_ops(n_ops):
    tf = workloads._import_tensorflow()
    return None if tf is None else _small_ops_function(tf, n_ops)


def tensorflow_function_mlp(data):
    tf = workloads._import_tensorflow()
    return None if tf is None else _mlp_function(tf, data)


# -- hand-written NumPy (the floor) -------------------------------------------------
def numpy_small_ops(n_ops):
    """The chain and its gradient by hand: one NumPy call per forward op and per derivative factor."""
    import numpy as np
    x = small_op_input()
    half, quarter = np.float32(0.5), np.float32(0.25)
    kinds = [workloads.PATTERN[i % len(workloads.PATTERN)] for i in range(n_ops)]

    def step():
        saved = []                  # sin: its input; tanh, exp: their outputs
        v = x
        for kind in kinds:
            if kind == "sin":
                saved.append(v)
                v = np.sin(v)
            elif kind == "mul":
                v = v * half
            elif kind == "add":
                v = v + quarter
            else:
                v = np.tanh(v) if kind == "tanh" else np.exp(v)
                saved.append(v)
        g = np.ones_like(v)         # d sum / d v
        for kind in reversed(kinds):
            if kind == "sin":
                g = g * np.cos(saved.pop())
            elif kind == "mul":
                g = g * half
            elif kind == "tanh":
                y = saved.pop()
                g = g * (1 - y * y)
            elif kind == "exp":
                g = g * saved.pop()
        return g

    return step, step


# -- PyTorch -------------------------------------------------------------------------
def torch_compile_mlp(data):
    """`torch.compile` (inductor) on the loss; gradients and the update as in the eager step.

    Compiling takes tens of seconds on 2 cores (a C++ toolchain is required),
    so the benchmark runs this case only with --torch-compile.
    """
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    x_np, y_np, params_np = data
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    params = [torch.tensor(p, requires_grad=True) for p in params_np]

    def loss_fn(x, y, *params):
        h = x
        for i in range(0, len(params) - 2, 2):
            h = torch.relu(h @ params[i] + params[i + 1])
        return F.cross_entropy(h @ params[-2] + params[-1], y)

    compiled = torch.compile(loss_fn)

    def step():
        loss = compiled(x, y, *params)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(LEARNING_RATE * g)
        return loss.detach()

    def check():
        with torch.no_grad():
            for p, v in zip(params, params_np, strict=True):
                p.copy_(torch.from_numpy(v))
        return [float(step()), float(step())]

    return step, check


SMALL_OPS = {
    "tapeflow tf.function": tapeflow_function_small_ops,
    "TensorFlow tf.function": tensorflow_function_small_ops,
    "tapeflow eager": workloads.tapeflow_small_ops,
    "TensorFlow eager": workloads.tensorflow_small_ops,
    "NumPy by hand": numpy_small_ops,
}

MLP = {
    "NumPy by hand (floor)": lambda data: _two_steps(workloads.numpy_mlp(data)),
    "tapeflow tf.function": tapeflow_function_mlp,
    "TensorFlow tf.function": tensorflow_function_mlp,
    "PyTorch eager": lambda data: _two_steps(workloads.torch_mlp(data)),
    "tapeflow eager": lambda data: _two_steps(workloads.tapeflow_mlp(data)),
}

TORCH_COMPILE = {"PyTorch torch.compile": torch_compile_mlp}
