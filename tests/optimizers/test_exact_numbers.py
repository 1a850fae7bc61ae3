"""The update formulas to the last bit: the same fixed gradients (dense, and sparse
with repeated indices) fed to tapeflow's and TensorFlow's optimizers for 20
steps, eagerly, in tf.function and (TF1) in a graph run by a Session; the
variables and every slot compared bit for bit.

The one exception is Keras Adam in float32: TensorFlow's float32 `pow` (Eigen's)
is not correctly rounded, so `beta ** t` can differ from NumPy's by an ulp, and
the step size `sqrt(1 - beta_2 ** t)` carries that into a few ulps of the
variables (at most 16 ulps in 20 steps here).  Norm clipping and
`loss_scale_factor` are not here: TensorFlow's reductions sum in another order
and its graph optimizer turns a division by a constant into a multiplication,
so those agree to a few ulps (test_keras_optimizers.py).
"""

import numpy as np
import pytest

from differential import same

STEPS = 20
_rng = np.random.default_rng(7)
DENSE = [_rng.normal(size=(5, 3)) for _ in range(STEPS)]
ROWS = [_rng.normal(size=(4, 3)) for _ in range(STEPS)]
INDICES = [_rng.integers(0, 5, 4).astype(np.int32) for _ in range(STEPS)]
assert any(len(set(i)) < 4 for i in INDICES)       # repeated indices

KERAS = {
    "sgd": lambda tf: tf.keras.optimizers.SGD(0.1),
    "sgd_momentum": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.9),
    "sgd_nesterov": lambda tf: tf.keras.optimizers.SGD(0.05, momentum=0.8, nesterov=True),
    "adam": lambda tf: tf.keras.optimizers.Adam(0.05),
    "amsgrad": lambda tf: tf.keras.optimizers.Adam(0.02, beta_1=0.5, beta_2=0.9, epsilon=1e-3, amsgrad=True),
    "sgd_weight_decay": lambda tf: tf.keras.optimizers.SGD(0.1, momentum=0.5, weight_decay=0.2),
    "adam_weight_decay": lambda tf: tf.keras.optimizers.Adam(0.05, weight_decay=0.01),
    "sgd_clipvalue": lambda tf: tf.keras.optimizers.SGD(0.1, clipvalue=0.3),
}
V1 = {
    "gradient_descent": lambda tf: tf.compat.v1.train.GradientDescentOptimizer(0.1),
    "momentum": lambda tf: tf.compat.v1.train.MomentumOptimizer(0.05, momentum=0.9),
    "nesterov": lambda tf: tf.compat.v1.train.MomentumOptimizer(0.05, 0.8, use_nesterov=True),
    "adam": lambda tf: tf.compat.v1.train.AdamOptimizer(0.05),
    "adam_betas": lambda tf: tf.compat.v1.train.AdamOptimizer(0.02, beta1=0.5, beta2=0.9, epsilon=1e-3),
}
V1_SLOTS = {"gradient_descent": [], "momentum": ["momentum"], "nesterov": ["momentum"], "adam": ["m", "v"],
            "adam_betas": ["m", "v"]}


def _gradient(tf, k, sparse, dtype):
    if sparse:
        return tf.IndexedSlices(tf.constant(ROWS[k].astype(dtype)), tf.constant(INDICES[k]), tf.constant([5, 3]))
    return tf.constant(DENSE[k].astype(dtype))


def _variable(tf, dtype):
    return tf.Variable(np.linspace(-1.0, 2.0, 15).reshape(5, 3).astype(dtype), name="emb")


def _steps(tf, apply, sparse, dtype, in_function):
    """Runs apply(gradient) for each step, the gradient passed in as tensors to a tf.function."""
    if not in_function:
        for k in range(STEPS):
            apply(_gradient(tf, k, sparse, dtype))
        return
    if sparse:
        step = tf.function(lambda values, indices: apply(tf.IndexedSlices(values, indices, tf.constant([5, 3]))))
        for k in range(STEPS):
            g = _gradient(tf, k, True, dtype)
            step(g.values, g.indices)
    else:
        step = tf.function(lambda g: apply(g))
        for k in range(STEPS):
            step(_gradient(tf, k, False, dtype))


def _tolerance(name, dtype):
    if "adam" in name or "amsgrad" in name:
        return {"rtol": 3e-6, "atol": 3e-7} if dtype == "float32" else {"rtol": 1e-15, "atol": 1e-15}
    return {"rtol": 0, "atol": 0}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(KERAS))
def test_keras(name, sparse, in_function, dtype):
    def prog(tf):
        var = _variable(tf, dtype)
        opt = KERAS[name](tf)

        def apply(g):
            opt.apply_gradients([(g, var)])
        _steps(tf, apply, sparse, dtype, in_function)
        return [var] + [tf.convert_to_tensor(v) for v in opt.variables]
    same(prog, **_tolerance(name, dtype))


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(V1))
def test_v1_eager_and_function(name, sparse, in_function):
    def prog(tf):
        var = _variable(tf, "float32")
        opt = V1[name](tf)

        def apply(g):
            opt.apply_gradients([(g, var)])
        _steps(tf, apply, sparse, "float32", in_function)
        return [var] + [tf.convert_to_tensor(opt.get_slot(var, s)) for s in V1_SLOTS[name]]
    same(prog, rtol=0, atol=0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name", list(V1))
def test_v1_graph(name, sparse):
    def prog(tf):
        graph = tf.Graph()
        with graph.as_default():
            var = _variable(tf, "float32")
            opt = V1[name](tf)
            feeds = (tf.compat.v1.placeholder(tf.float32, [None, 3]), tf.compat.v1.placeholder(tf.int32, [None]))
            grad = tf.IndexedSlices(feeds[0], feeds[1], tf.constant([5, 3])) if sparse else feeds[0]
            train = opt.apply_gradients([(grad, var)])
            init = tf.compat.v1.global_variables_initializer()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(init)
            for k in range(STEPS):
                fed = {feeds[0]: ROWS[k], feeds[1]: INDICES[k]} if sparse else {feeds[0]: DENSE[k]}
                sess.run(train, fed)
            return sess.run([var] + [opt.get_slot(var, s) for s in V1_SLOTS[name]])
    same(prog, rtol=0, atol=0)
