"""GradientTape.jacobian / batch_jacobian and tf.test.compute_gradient, against TensorFlow."""

import numpy as np
import pytest

import tapeflow
from differential import Raised, assert_values, run_both, same
from op_harness import tf_module

_X = np.array([0.3, -0.7, 1.2], np.float32)
_B = np.array([[0.5, 1.0, -1.5], [2.0, -0.25, 0.75]], np.float32)


# -- jacobian ---------------------------------------------------------------------------

JACOBIAN_CASES = {
    "vector": lambda tf, x, m: tf.sin(x) * x,
    "matrix_target": lambda tf, x, m: tf.reshape(x, [3, 1]) * tf.reshape(x, [1, 3]) * 2.0,
    "scalar_target": lambda tf, x, m: tf.reduce_sum(tf.exp(x)),
    "matmul": lambda tf, x, m: tf.matmul(m, tf.reshape(x, [3, 1])),
    "empty_target": lambda tf, x, m: tf.zeros([0]) * tf.reduce_sum(x),
    "float64_source": lambda tf, x, m: tf.cast(tf.reduce_sum(tf.cast(x, tf.float64) ** 2), tf.float32) * x,
}


@pytest.mark.parametrize("case", list(JACOBIAN_CASES))
def test_jacobian_values_and_shapes(case):
    def prog(tf):
        x, m = tf.constant(_X), tf.constant(_B)
        with tf.GradientTape() as t:
            t.watch([x, m])
            y = JACOBIAN_CASES[case](tf, x, m)
        return t.jacobian(y, [x, m])
    same(prog)


def test_jacobian_scalar_source():
    def prog(tf):
        s = tf.constant(1.5)
        with tf.GradientTape() as t:
            t.watch(s)
            y = tf.constant(_X) * s * s
        return t.jacobian(y, s)
    same(prog)


def test_jacobian_nested_sources_and_unconnected():
    def prog(tf):
        x, u = tf.constant(_X), tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=True) as t:
            t.watch([x, u])
            y = x * x
        return (t.jacobian(y, {"x": x, "u": u}),
                t.jacobian(y, [u, x], unconnected_gradients=tf.UnconnectedGradients.ZERO),
                t.jacobian(y, u, unconnected_gradients="zero"))
    out = same(prog)
    assert out[0]["u"] is None


def test_jacobian_of_variable():
    def prog(tf):
        v = tf.Variable(_B)
        with tf.GradientTape() as t:
            y = tf.reduce_sum(v * v, axis=1)
        return t.jacobian(y, v)
    same(prog)


def test_jacobian_through_gather_densifies():
    def prog(tf):
        v = tf.Variable(_X)
        with tf.GradientTape() as t:
            y = tf.gather(v, [2, 0]) * 3.0
        return t.jacobian(y, v)
    same(prog)


def test_jacobian_non_persistent_used_once():
    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        j = t.jacobian(y, x)
        return j, t.jacobian(y, x)
    ours, theirs = run_both(prog)
    assert isinstance(ours, Raised) and isinstance(theirs, Raised)
    assert type(ours.exc) is RuntimeError and type(theirs.exc) is RuntimeError


def test_jacobian_non_persistent_then_gradient_raises():
    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        t.jacobian(y, x)
        return t.gradient(y, x)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is RuntimeError


def test_jacobian_without_pfor_needs_persistent():
    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        return t.jacobian(y, x, experimental_use_pfor=False)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is RuntimeError


def test_jacobian_persistent_many_times():
    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = tf.tanh(x) * 2.0
        return t.jacobian(y, x), t.jacobian(y, x, experimental_use_pfor=False), t.gradient(y, x)
    same(prog)


def test_hessian_by_jacobian_of_gradient():
    def prog(tf):
        x = tf.constant(_X.astype(np.float64))
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(tf.sin(x) * tf.reduce_sum(x * x))
            g = inner.gradient(y, x)
        return outer.jacobian(g, x)
    same(prog)


def test_jacobian_is_differentiable():
    def prog(tf):
        x = tf.constant(_X.astype(np.float64))
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.exp(x) * x
            j = inner.jacobian(y, x)
            s = tf.reduce_sum(j * j)
        return j, outer.gradient(s, x)
    same(prog)


def test_jacobian_inside_persistent_context():
    def prog(tf):
        x = tf.constant(_X)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x * x
            j = t.jacobian(y, x)
            s = tf.reduce_sum(j)
        return j, t.gradient(s, x)
    same(prog)


# -- batch_jacobian ---------------------------------------------------------------------

@pytest.mark.parametrize("case", ["elementwise", "matmul", "rank3_target", "rank3_source"])
def test_batch_jacobian(case):
    def prog(tf):
        x = tf.constant(_B)
        w = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)
        with tf.GradientTape() as t:
            t.watch(x)
            if case == "elementwise":
                y = tf.sin(x) * x
                src = x
            elif case == "matmul":
                y = tf.matmul(x * x, w)
                src = x
            elif case == "rank3_target":
                y = tf.reshape(tf.matmul(x, w), [2, 2, 2])
                src = x
            else:
                src = tf.reshape(x, [2, 3, 1])
                y = tf.reduce_sum(src * src, axis=2) * 2.0
        return t.batch_jacobian(y, src)
    same(prog)


def test_batch_jacobian_unconnected_gives_zeros():
    def prog(tf):
        x = tf.constant(_B)
        z = tf.constant(_B * 2)
        with tf.GradientTape(persistent=True) as t:
            t.watch([x, z])
            y = x * 2.0
        return t.batch_jacobian(y, z), t.batch_jacobian(y, z, unconnected_gradients="zero")
    same(prog)


@pytest.mark.parametrize("case", ["batch_mismatch", "rank1_target", "rank1_source"])
def test_batch_jacobian_shape_errors(case):
    def prog(tf):
        x = tf.constant(_B)
        with tf.GradientTape() as t:
            t.watch(x)
            src = x
            if case == "batch_mismatch":
                y = tf.concat([x, x], 0)
            elif case == "rank1_target":
                y = tf.reduce_sum(x, axis=1)
            else:
                src = tf.reduce_sum(x, axis=1)
                y = tf.reshape(src, [2, 1]) * x
        return t.batch_jacobian(y, src)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is ValueError


def test_batch_jacobian_non_persistent_used_once():
    def prog(tf):
        x = tf.constant(_B)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        j = t.batch_jacobian(y, x)
        return j, t.batch_jacobian(y, x)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is RuntimeError


def test_batch_jacobian_of_variable_and_float64():
    def prog(tf):
        v = tf.Variable(_B.astype(np.float64))
        with tf.GradientTape() as t:
            y = tf.tanh(tf.matmul(v, tf.transpose(v)))
        return t.batch_jacobian(y, v)
    same(prog)


# -- tf.test.compute_gradient -----------------------------------------------------------

def _compute_gradient_both(f, args):
    tf = tf_module()
    ours = tapeflow.test.compute_gradient(lambda *xs: f(tapeflow, *xs), [tapeflow.constant(a) for a in args])
    theirs = tf.test.compute_gradient(lambda *xs: f(tf, *xs), [tf.constant(a) for a in args])
    return ours, theirs


@pytest.mark.parametrize("case", ["float32", "float64", "two_args", "matrix", "complex_in_real_out",
                                  "complex_in_complex_out", "real_in_complex_out", "scalar"])
def test_compute_gradient_format_matches_tensorflow(case):
    rng = np.random.default_rng(0)
    if case == "float32":
        f, args = (lambda tf, x: tf.sin(x) * x), [rng.uniform(-1, 1, 3).astype(np.float32)]
    elif case == "float64":
        f, args = (lambda tf, x: tf.exp(x) * x), [rng.uniform(-1, 1, (2, 2))]
    elif case == "two_args":
        f, args = (lambda tf, x, y: tf.matmul(x, y)), [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3, 1))]
    elif case == "matrix":
        f, args = (lambda tf, x: tf.reduce_sum(x * x, axis=0)), [rng.uniform(-1, 1, (3, 2))]
    elif case == "complex_in_real_out":
        f, args = (lambda tf, z: tf.math.real(z * z)), [(rng.uniform(-1, 1, 2) + 1j * rng.uniform(-1, 1, 2))]
    elif case == "complex_in_complex_out":
        f, args = (lambda tf, z: tf.exp(z) * z), [(rng.uniform(-1, 1, 2) + 1j * rng.uniform(-1, 1, 2))]
    elif case == "real_in_complex_out":
        f, args = (lambda tf, x: tf.complex(x * x, x)), [rng.uniform(-1, 1, 3)]
    else:
        f, args = (lambda tf, x: x * x * x), [np.float64(0.7)]
    (t_ours, n_ours), (t_tf, n_tf) = _compute_gradient_both(f, args)
    assert type(t_ours) is type(t_tf) is tuple and type(n_ours) is type(n_tf) is tuple
    for mine, theirs in ((t_ours, t_tf), (n_ours, n_tf)):
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype, f"{a.shape} {a.dtype} vs {b.shape} {b.dtype}"
            assert_values(a, b, rtol=1e-3, atol=1e-3)


def test_compute_gradient_default_delta_is_binary():
    # With delta = 1/1024 the central difference of x**2 at 0.5 is exact in float64.
    (t,), (n,) = tapeflow.test.compute_gradient(lambda x: x * x, [np.float64(0.5)])
    assert n[0, 0] == 1.0 and t[0, 0] == 1.0
    tf = tf_module()
    (_,), (n_tf,) = tf.test.compute_gradient(lambda x: x * x * x, [tf.constant(0.5, tf.float64)])
    (_,), (n_ours,) = tapeflow.test.compute_gradient(lambda x: x * x * x, [np.float64(0.5)])
    assert n_ours[0, 0] == n_tf[0, 0]


def test_compute_gradient_explicit_delta():
    tf = tf_module()
    (_,), (n_tf,) = tf.test.compute_gradient(lambda x: x * x * x, [tf.constant(0.5, tf.float64)], delta=0.125)
    (_,), (n_ours,) = tapeflow.test.compute_gradient(lambda x: x * x * x, [np.float64(0.5)], delta=0.125)
    assert n_ours[0, 0] == n_tf[0, 0]


def test_compute_gradient_requires_list():
    def prog(tf):
        return tf.test.compute_gradient(lambda x: x * x, tf.constant(1.0))
    ours, theirs = run_both(prog)
    assert isinstance(ours, Raised) and isinstance(theirs, Raised)
    assert type(ours.exc) is type(theirs.exc) is ValueError


def test_compute_gradient_unconnected_input_is_zero():
    (t, _), (n, _) = tapeflow.test.compute_gradient(lambda x, y: x * 2.0, [np.ones(2), np.ones(3)])
    tf = tf_module()
    (t_tf, _), (n_tf, _) = tf.test.compute_gradient(lambda x, y: x * 2.0,
                                                    [tf.constant(np.ones(2)), tf.constant(np.ones(3))])
    np.testing.assert_array_equal(t, t_tf)
    np.testing.assert_array_equal(n, n_tf)
    (_, t2), (_, n2) = tapeflow.test.compute_gradient(lambda x, y: x * 2.0, [np.ones(2), np.ones(3)])
    assert t2.shape == (2, 3) and not t2.any() and not n2.any()


def test_jacobian_of_variable_wrt_itself():
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
        with tf.GradientTape(persistent=True) as t:
            y = v * 2.0
        return t.jacobian(v, v), t.jacobian(y, v), t.batch_jacobian(v, v)
    same(prog)
