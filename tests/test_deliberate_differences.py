"""Where tapeflow deliberately differs from TensorFlow (the README's list).

In each case TensorFlow's answer is wrong or accidental and tapeflow gives the
mathematically right one.  Each test pins tapeflow's answer against the exact
value (or float64 central differences) and, when TensorFlow is installed, checks
that TensorFlow still differs: if it is ever fixed, the test says the entry is
stale.  Conversions tapeflow refuses where TensorFlow changes the value silently
are pinned in tests/framework/test_tensor.py (DEVIATIONS).
"""

import numpy as np
import pytest

import tapeflow
from op_harness import HAVE_TF, tf_module


def _second_order(tf, f, x):
    """d/dx of sum(d f / dx), tape in tape."""
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(f(tf, x))
        g = inner.gradient(y, x)
    return outer.gradient(g, x)


def _first_order(tf, f, x):
    x = tf.constant(x, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(tf, x))
    return tape.gradient(y, x)


def _tf_or_skip():
    if not HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    return tf_module()


def test_cumprod_gradient_at_zero():
    """TensorFlow's cumprod gradient divides by x, so it is 0 wherever x is 0; it is not."""
    f = lambda tf, x: tf.math.cumprod(x, axis=1)      # noqa: E731
    x = np.array([[2.0, 0.0, 3.0]])
    exact = np.array([[1.0 + 0.0 + 0.0, 2.0 + 6.0, 0.0]])   # d/dx_k of x0 + x0 x1 + x0 x1 x2
    np.testing.assert_allclose(_first_order(tapeflow, f, x).numpy(), exact)
    tf = _tf_or_skip()
    assert not np.allclose(_first_order(tf, f, x).numpy(), exact)


def test_moments_second_order():
    """TensorFlow's variance stops the gradient through the mean: right to first order,
    wrong to second (the Hessian of a sum of variances of two samples is 0 here)."""
    f = lambda tf, x: tf.nn.moments(x, axes=[0])[1]      # noqa: E731
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    exact = np.zeros_like(x)     # sum_j var_j is quadratic with zero row sums: d/dx of its gradient sums to 0
    np.testing.assert_allclose(_second_order(tapeflow, f, x).numpy(), exact, atol=1e-12)
    tf = _tf_or_skip()
    assert not np.allclose(_second_order(tf, f, x).numpy(), exact)


def test_softsign_second_order():
    """TensorFlow has no gradient for SoftsignGrad (LookupError); tapeflow's rule is differentiable."""
    f = lambda tf, x: tf.nn.softsign(x)      # noqa: E731
    x = np.array([-1.0, 0.5])
    exact = -2.0 * np.sign(x) / (1.0 + np.abs(x)) ** 3
    np.testing.assert_allclose(_second_order(tapeflow, f, x).numpy(), exact)
    tf = _tf_or_skip()
    with pytest.raises(LookupError):
        _second_order(tf, f, x)


def test_leaky_relu_alpha_is_not_rounded_to_float32():
    """TensorFlow stores `alpha` as a float32 attribute, so float64 results carry its rounding."""
    x = np.array([-1.0, 2.0])
    ours = tapeflow.nn.leaky_relu(tapeflow.constant(x), alpha=0.1).numpy()
    np.testing.assert_array_equal(ours, [-0.1, 2.0])
    tf = _tf_or_skip()
    assert tf.nn.leaky_relu(tf.constant(x), alpha=0.1).numpy()[0] != -0.1


def test_softmax_cross_entropy_mixed_second_order():
    """d/dlabels of the gradient with respect to the logits is -dy (TensorFlow gives 0)."""
    def mixed(tf):
        logits = tf.constant([[0.5, -1.0, 2.0]], tf.float64)
        labels = tf.constant([[0.2, 0.3, 0.5]], tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(labels)
            with tf.GradientTape() as inner:
                inner.watch(logits)
                loss = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            g = inner.gradient(loss, logits)        # softmax(logits) - labels
            v = tf.reduce_sum(g * tf.constant([[1.0, 2.0, 3.0]], tf.float64))
        return outer.gradient(v, labels)
    np.testing.assert_allclose(mixed(tapeflow).numpy(), [[-1.0, -2.0, -3.0]])
    tf = _tf_or_skip()
    theirs = mixed(tf)
    assert theirs is None or not np.allclose(theirs.numpy(), [[-1.0, -2.0, -3.0]])


def test_reduce_prod_second_order_at_zero():
    """TensorFlow's reduce_prod gradient is right at a single zero, its second order is not."""
    f = lambda tf, x: tf.reduce_prod(x, axis=1)      # noqa: E731
    x = np.array([[0.0, 2.0, 3.0]])
    # sum of d/dx_j (prod_{i != k} x_i) over k: for x0 = 0, row j=0 gets x2 + x1, others get x0 terms.
    exact = np.array([[3.0 + 2.0, 3.0 + 0.0, 2.0 + 0.0]])
    np.testing.assert_allclose(_second_order(tapeflow, f, x).numpy(), exact)
    tf = _tf_or_skip()
    assert not np.allclose(_second_order(tf, f, x).numpy(), exact)


def test_complex_determinant_gradient_conjugate():
    """The gradient of a real loss through det of a complex matrix (TensorFlow misses a conjugate)."""
    a = np.array([[1.0 + 2.0j, 0.5 - 1.0j], [-0.3 + 0.2j, 2.0 + 0.5j]])

    def grad(tf):
        x = tf.constant(a)
        with tf.GradientTape() as tape:
            tape.watch(x)
            d = tf.linalg.det(x)
            loss = tf.math.real(d * tf.math.conj(d))     # |det|^2
        return tape.gradient(loss, x).numpy()
    # TensorFlow's convention: the gradient of a real loss is 2 d loss / d conj(z); for |det|^2,
    # with d det / d z = det inv(z)^T (the cofactor matrix), that is 2 det conj(det inv(z)^T).
    det = np.linalg.det(a)
    exact = 2.0 * det * np.conj(det * np.linalg.inv(a).T)
    np.testing.assert_allclose(grad(tapeflow), exact, rtol=1e-10)
    tf = _tf_or_skip()
    assert not np.allclose(grad(tf), exact)


def test_sparse_gradient_densified_by_cond_in_graphs():
    """An IndexedSlices gradient reaching a cond's output in a graph: TensorFlow passes it on
    there but densifies it eagerly; tapeflow densifies it in both (Note [sparse gradients] in
    ops/gradient_rules.py)."""
    def grad(tf):
        @tf.function
        def f(x):
            y = tf.cond(tf.constant(True), lambda: x * 1.0, lambda: x)
            return tf.gradients(tf.gather(y, [1]), x)[0]
        return f(tf.constant([[1.0, -2.0], [3.0, 4.0]]))
    ours = grad(tapeflow)
    assert type(ours) is tapeflow.Tensor
    np.testing.assert_array_equal(ours.numpy(), [[0.0, 0.0], [1.0, 1.0]])
    tf = _tf_or_skip()
    assert isinstance(grad(tf), tf.IndexedSlices)


def test_multiply_no_nan_complex_gradient_conjugates():
    """multiply_no_nan's gradient is multiply's where y != 0: the other factor conjugated."""
    def grads(tf, f):
        x, y = tf.constant([1.0 + 2.0j, -0.5 + 1.0j]), tf.constant([0.3 - 1.0j, 2.0 + 0.5j])
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            z = f(x, y)
            loss = tf.reduce_sum(tf.math.real(z * tf.math.conj(z)))
        return [g.numpy() for g in tape.gradient(loss, [x, y])]
    ours = grads(tapeflow, tapeflow.math.multiply_no_nan)
    exact = grads(tapeflow, lambda x, y: x * y)
    for a, b in zip(ours, exact):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    tf = _tf_or_skip()
    theirs = grads(tf, tf.math.multiply_no_nan)
    assert not all(np.allclose(a, b) for a, b in zip(theirs, exact))


def test_half_precision_einsum_and_bias_gradient_accumulate_in_float32():
    """float16 einsum and the bfloat16 bias_add gradient add up in float32, as TensorFlow's own
    matmul and reductions do (Note [half precision] in ops/core/half.py); TensorFlow's CPU Einsum for
    float16 and BiasAddGrad for bfloat16 add up in the half type, so 4096 ones sum to 2048 (256)."""
    def sums(tf):
        ones = tf.ones([4096], tf.float16)
        b = tf.zeros([1], tf.bfloat16)
        with tf.GradientTape() as tape:
            tape.watch(b)
            y = tf.reduce_sum(tf.nn.bias_add(tf.ones([4096, 1], tf.bfloat16), b))
        return [float(tf.einsum("i,i->", ones, ones)), float(tape.gradient(y, b)[0])]
    assert sums(tapeflow) == [4096.0, 4096.0]
    tf = _tf_or_skip()
    assert sums(tf) == [2048.0, 256.0]


def test_py_function_unused_input_gets_zeros_of_its_shape():
    """TensorFlow's py_function gradient turns an input's None gradient into `constant(0.0)`, a scalar,
    so adding it to another gradient of that input fails (AddN of [] and [2]); ours is zeros of the
    input's shape (Note [py_function gradients] in py_func.py)."""
    def grads(tf):
        x, y = tf.constant([1.0, 2.0]), tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            total = tf.py_function(lambda a, b: b * 2.0, [x, y], tf.float32) + tf.reduce_sum(x)
        return [g.numpy() for g in tape.gradient(total, [x, y])]
    gx, gy = grads(tapeflow)
    np.testing.assert_array_equal(gx, [1.0, 1.0])
    assert gy == 2.0
    tf = _tf_or_skip()
    with pytest.raises(tf.errors.InvalidArgumentError):
        grads(tf)


def test_py_function_runs_keep_their_own_tapes():
    """Each run of a py_function keeps the tape of its Python ops with its outputs, so a persistent tape
    takes the gradient twice and two calls of one traced function under one tape each get theirs;
    TensorFlow keeps one tape per op, taken by the first gradient (a second one fails)."""
    def grads(tf):
        @tf.function
        def h(a):
            return tf.py_function(lambda q: q * q, [a], tf.float32)
        x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 5.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([x, y])
            total = tf.reduce_sum(h(x)) + tf.reduce_sum(h(y))
        return [g.numpy() for g in tape.gradient(total, [x, y])], tape.gradient(total, y).numpy()
    (gx, gy), again = grads(tapeflow)
    np.testing.assert_array_equal(gx, [2.0, 4.0])
    np.testing.assert_array_equal(gy, [6.0, 10.0])
    np.testing.assert_array_equal(again, [6.0, 10.0])
    tf = _tf_or_skip()
    with pytest.raises(Exception):      # noqa: B017 -- a KeyError of its tape cache, as an op error
        grads(tf)


def test_sparse_tensor_times_scalar_tensor_gradient():
    """The gradient of the scalar in `sparse * scalar`: the sum of the values times the output gradient;
    TensorFlow's SparseDenseCwiseMul gradient fails on a scalar (GatherNd of a scalar)."""
    def grads(tf):
        v, y = tf.constant([1.0, 2.0, 3.0, 4.0]), tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch([v, y])
            out = tf.reduce_sum(tf.sparse.to_dense(tf.SparseTensor([[0, 1], [1, 0], [1, 2], [2, 3]], v, [3, 4]) * y))
        return [g.numpy() for g in tape.gradient(out, [v, y])]
    dv, dy = grads(tapeflow)
    np.testing.assert_array_equal(dv, [3.0] * 4)
    assert dy == 10.0
    tf = _tf_or_skip()
    with pytest.raises(tf.errors.InvalidArgumentError):
        grads(tf)
