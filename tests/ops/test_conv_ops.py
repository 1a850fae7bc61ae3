"""Spec rows for convolutions and pooling, plus their errors and second-order ops."""

import itertools
import warnings
import time

import numpy as np
import pytest

import tapeflow as tf
from differential import same
from op_harness import (
    OpSpec, define_graph_tests, define_tests, define_unknown_dims_tests, distinct, tf_module, traced_static_and_values,
)


def np_conv2d(x, w, strides=(1, 1), pads=((0, 0), (0, 0)), dilations=(1, 1)):
    """Direct (loop over output pixels) reference convolution, NHWC / HWIO."""
    x = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    kh, kw, _, o = w.shape
    eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh, ow = (x.shape[1] - eh) // strides[0] + 1, (x.shape[2] - ew) // strides[1] + 1
    out = np.zeros((x.shape[0], oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * strides[0]:i * strides[0] + eh:dilations[0], j * strides[1]:j * strides[1] + ew:dilations[1], :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def same_pads(size, k, s, d=1):
    eff = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + eff - size, 0)
    return (total // 2, total - total // 2)


def np_convolution(x, w, strides=None, padding="VALID", dilations=None):
    """Direct (loop over output positions) reference N-d convolution, channels last: [N, *S, C] x [*K, C, O]."""
    n = w.ndim - 2
    strides, dilations = strides or (1,) * n, dilations or (1,) * n
    ks = w.shape[:n]
    pads = [same_pads(x.shape[1 + i], ks[i], strides[i], dilations[i]) if padding == "SAME" else (0, 0)
            for i in range(n)]
    x = np.pad(x, ((0, 0), *pads, (0, 0)))
    eff = [(k - 1) * d + 1 for k, d in zip(ks, dilations)]
    out_sizes = [(x.shape[1 + i] - eff[i]) // strides[i] + 1 for i in range(n)]
    out = np.zeros((x.shape[0], *out_sizes, w.shape[-1]))
    for pos in itertools.product(*map(range, out_sizes)):
        patch = x[(slice(None),) + tuple(slice(p * s, p * s + e, d) for p, s, e, d in zip(pos, strides, eff, dilations))]
        out[(slice(None),) + pos] = np.tensordot(patch, w, axes=(list(range(1, n + 2)), list(range(n + 1))))
    return out


def np_pool(x, k, s, padding, reduce):
    if padding == "SAME":
        pads = [same_pads(x.shape[1], k[0], s[0]), same_pads(x.shape[2], k[1], s[1])]
    else:
        pads = [(0, 0), (0, 0)]
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=np.nan)
    oh, ow = (xp.shape[1] - k[0]) // s[0] + 1, (xp.shape[2] - k[1]) // s[1] + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = reduce(xp[:, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]], axis=(1, 2))
    return out


CONV_SHAPES = [((1, 4, 4, 2), (3, 3, 2, 2)), ((2, 5, 4, 1), (2, 3, 1, 3)), ((1, 3, 3, 2), (1, 1, 2, 1)),
               ((0, 4, 4, 2), (3, 3, 2, 2))]

SPECS = [
    OpSpec("conv2d_same", lambda tf, x, w: tf.nn.conv2d(x, w, 1, "SAME"),
           lambda x, w: np_conv2d(x, w, pads=(same_pads(x.shape[1], w.shape[0], 1), same_pads(x.shape[2], w.shape[1], 1))),
           CONV_SHAPES),
    OpSpec("conv2d_valid_strided", lambda tf, x, w: tf.nn.conv2d(x, w, [2, 1], "VALID"),
           lambda x, w: np_conv2d(x, w, strides=(2, 1)), [((1, 5, 4, 2), (3, 2, 2, 2)), ((2, 4, 4, 1), (2, 2, 1, 2))]),
    OpSpec("conv2d_same_stride2", lambda tf, x, w: tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
           lambda x, w: np_conv2d(x, w, (2, 2), (same_pads(x.shape[1], w.shape[0], 2), same_pads(x.shape[2], w.shape[1], 2))),
           [((1, 5, 4, 2), (3, 3, 2, 2)), ((1, 4, 4, 1), (2, 2, 1, 1))]),
    OpSpec("conv2d_dilated", lambda tf, x, w: tf.nn.conv2d(x, w, 1, "VALID", dilations=2),
           lambda x, w: np_conv2d(x, w, dilations=(2, 2)), [((1, 6, 5, 2), (2, 2, 2, 2))],
           # TensorFlow's CPU kernels differentiate dilated convolutions only where oneDNN runs them;
           # atrous_conv2d (space_to_batch around a plain conv2d) is the same function everywhere
           tf_fn=lambda tf, x, w: tf.nn.atrous_conv2d(x, w, 2, "VALID")),
    OpSpec("conv2d_explicit", lambda tf, x, w: tf.nn.conv2d(x, w, 1, [[0, 0], [1, 0], [2, 1], [0, 0]]),
           lambda x, w: np_conv2d(x, w, pads=((1, 0), (2, 1))), [((1, 4, 3, 2), (3, 3, 2, 2))]),
    OpSpec("conv1d", lambda tf, x, w: tf.nn.conv1d(x, w, 2, "SAME"),
           lambda x, w: np_conv2d(x[:, None], w[None], (1, 2), ((0, 0), same_pads(x.shape[1], w.shape[0], 2)))[:, 0],
           [((2, 7, 2), (3, 2, 3)), ((1, 4, 1), (2, 1, 1))]),
    OpSpec("conv2d_transpose", lambda tf, x, w: tf.nn.conv2d_transpose(x, w, [1, 5, 5, 2], 2, "SAME"),
           None, [((1, 3, 3, 3), (3, 3, 2, 3))]),
    OpSpec("conv2d_transpose_valid", lambda tf, x, w: tf.nn.conv2d_transpose(x, w, [2, 6, 5, 1], [2, 1], "VALID"),
           None, [((2, 2, 3, 2), (3, 3, 1, 2))]),
    OpSpec("max_pool2d", lambda tf, x: tf.nn.max_pool2d(x, 2, 2, "VALID"),
           lambda x: np_pool(x, (2, 2), (2, 2), "VALID", np.max), [((1, 4, 4, 2),), ((2, 5, 3, 1),), ((0, 2, 2, 1),)],
           sampler=distinct),
    OpSpec("max_pool2d_same_overlap", lambda tf, x: tf.nn.max_pool2d(x, [3, 2], [1, 2], "SAME"),
           lambda x: np_pool(x, (3, 2), (1, 2), "SAME", np.nanmax), [((1, 4, 5, 2),), ((1, 1, 1, 1),)], sampler=distinct),
    OpSpec("avg_pool2d", lambda tf, x: tf.nn.avg_pool2d(x, 2, 2, "VALID"),
           lambda x: np_pool(x, (2, 2), (2, 2), "VALID", np.mean), [((1, 4, 4, 2),), ((2, 5, 3, 1),), ((0, 2, 2, 1),)]),
    OpSpec("avg_pool2d_same", lambda tf, x: tf.nn.avg_pool2d(x, 3, [1, 2], "SAME"),
           lambda x: np_pool(x, (3, 3), (1, 2), "SAME", np.nanmean), [((1, 4, 5, 2),), ((1, 1, 1, 1),)]),
    OpSpec("max_pool1d", lambda tf, x: tf.nn.max_pool1d(x, 3, 2, "SAME"),
           lambda x: np_pool(x[:, None], (1, 3), (1, 2), "SAME", np.nanmax)[:, 0], [((2, 5, 2),)], sampler=distinct),
    # tf.nn.convolution: 1-D, 2-D and 3-D by the filters' rank.  TensorFlow's Conv2D and Conv3D gradients
    # read their data_format attr, which tf.nn.convolution leaves unset (None): their rows name the format.  TensorFlow
    # runs dilated convolutions through space_to_batch (differentiable on its CPU kernels), so dilated rows
    # compare against tf.nn.convolution itself.
    OpSpec("convolution_1d", lambda tf, x, w: tf.nn.convolution(x, w, strides=2, padding="SAME"),
           lambda x, w: np_convolution(x, w, (2,), "SAME"), [((2, 7, 2), (3, 2, 3)), ((1, 4, 1), (2, 1, 1))]),
    OpSpec("convolution_1d_dilated", lambda tf, x, w: tf.nn.convolution(x, w, padding="VALID", dilations=2),
           lambda x, w: np_convolution(x, w, dilations=(2,)), [((2, 7, 2), (3, 2, 2))]),
    OpSpec("convolution_2d", lambda tf, x, w: tf.nn.convolution(x, w, strides=[1, 2], padding="VALID"),
           lambda x, w: np_convolution(x, w, (1, 2)), [((1, 5, 4, 2), (3, 2, 2, 2)), ((2, 4, 4, 1), (2, 2, 1, 2))],
           tf_fn=lambda tf, x, w: tf.nn.convolution(x, w, strides=[1, 2], padding="VALID", data_format="NHWC")),
    OpSpec("convolution_2d_dilated", lambda tf, x, w: tf.nn.convolution(x, w, padding="VALID", dilations=[2, 1]),
           lambda x, w: np_convolution(x, w, dilations=(2, 1)), [((1, 6, 5, 2), (2, 2, 2, 2))]),
    OpSpec("convolution_3d", lambda tf, x, w: tf.nn.convolution(x, w, padding="SAME"),
           lambda x, w: np_convolution(x, w, padding="SAME"), [((1, 4, 3, 4, 2), (2, 3, 2, 2, 3)),
                                                                ((2, 2, 3, 2, 1), (1, 1, 1, 1, 2))],
           tf_fn=lambda tf, x, w: tf.nn.convolution(x, w, padding="SAME", data_format="NDHWC")),
    OpSpec("convolution_3d_strided", lambda tf, x, w: tf.nn.convolution(x, w, strides=[2, 1, 2], padding="VALID"),
           lambda x, w: np_convolution(x, w, (2, 1, 2)), [((1, 5, 3, 5, 2), (3, 2, 2, 2, 2))],
           tf_fn=lambda tf, x, w: tf.nn.convolution(x, w, strides=[2, 1, 2], padding="VALID", data_format="NDHWC")),
    OpSpec("convolution_3d_dilated", lambda tf, x, w: tf.nn.convolution(x, w, padding="VALID", dilations=[2, 1, 2]),
           lambda x, w: np_convolution(x, w, dilations=(2, 1, 2)), [((1, 5, 3, 5, 2), (2, 2, 2, 2, 2))],
           tf_fn=lambda tf, x, w: tf.nn.convolution(x, w, padding="VALID", dilations=[2, 1, 2], data_format="NDHWC")),
    OpSpec("convolution_3d_channels_first",
           lambda tf, x, w: tf.nn.convolution(x, w, strides=2, padding="SAME", data_format="NCDHW"),
           lambda x, w: np.moveaxis(np_convolution(np.moveaxis(x, 1, -1), w, (2, 2, 2), "SAME"), -1, 1),
           [((1, 2, 4, 3, 3), (2, 2, 2, 2, 2))],
           # TensorFlow's CPU Conv3D takes channels last only
           tf_fn=lambda tf, x, w: tf.transpose(tf.nn.convolution(tf.transpose(x, [0, 2, 3, 4, 1]), w, strides=2,
                                                                  padding="SAME", data_format="NDHWC"),
                                               [0, 4, 1, 2, 3])),
]

define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


# -- errors --------------------------------------------------------------------------

def test_conv2d_errors():
    x, w = tf.ones([2, 5, 5, 3]), tf.ones([3, 3, 3, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding"):
        tf.nn.conv2d(x, w, 1, "same")
    with pytest.raises(ValueError, match="size 4"):
        tf.nn.conv2d(x, w, 1, [[1, 1], [2, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch or depth"):
        tf.nn.conv2d(x, w, 1, [[1, 1], [1, 1], [2, 0], [0, 0]])
    with pytest.raises(tf.errors.UnimplementedError, match="batch and depth"):
        tf.nn.conv2d(x, w, [2, 2, 2, 1], "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="4-dimensional"):
        tf.nn.conv2d(x, tf.ones([3, 3, 4]), 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="evenly divisible"):
        tf.nn.conv2d(x, tf.ones([3, 3, 2, 4]), 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.nn.conv2d(x, tf.ones([7, 7, 3, 4]), 1, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="larger than 0"):
        tf.nn.conv2d(x, w, 0, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a double tensor"):
        tf.nn.conv2d(tf.ones([2, 5, 5, 3], tf.float64), w, 1, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="out_backprop"):
        tf.nn.conv2d_transpose(tf.ones([2, 3, 3, 4]), w, [2, 7, 7, 3], 2, "SAME")


def test_pool_errors():
    x = tf.ones([2, 5, 5, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="ksize must be positive"):
        tf.nn.max_pool2d(x, 0, 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Stride must be > 0"):
        tf.nn.max_pool2d(x, 2, 0, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Left padding 2"):
        tf.nn.max_pool2d(x, 2, 1, [[0, 0], [1, 1], [2, 0], [0, 0]])
    with pytest.raises(TypeError, match="padding"):
        tf.nn.avg_pool2d(x, 2, 1, [[0, 0], [1, 1], [1, 0], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.nn.avg_pool2d(tf.ones([2, 5, 5, 3], tf.int32), 2, 1, "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="4-dimensional"):
        tf.nn.max_pool2d(tf.ones([5, 5, 3]), 2, 1, "SAME")


# -- behaviours beyond the rows -------------------------------------------------------------

def test_shapes_match_tensorflow():
    tft = tf_module()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 7, 6, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 4)).astype(np.float32)
    for pad in ["SAME", "VALID", [[0, 0], [1, 2], [0, 1], [0, 0]]]:
        for st, dl in [(1, 1), (2, 1), ([2, 1], 1), (1, 2), (3, 1)]:
            ours = tf.nn.conv2d(x, w, st, pad, dilations=dl).numpy()
            np.testing.assert_allclose(ours, tft.nn.conv2d(x, w, st, pad, dilations=dl).numpy(), rtol=1e-4, atol=1e-4)
    for pad in ["SAME", "VALID"]:
        for k, st in [(2, 2), (3, 1), ([2, 3], [1, 2]), (3, 2), (1, 3)]:
            for ours_fn, tf_fn in [(tf.nn.max_pool2d, tft.nn.max_pool2d), (tf.nn.avg_pool2d, tft.nn.avg_pool2d)]:
                np.testing.assert_allclose(ours_fn(x, k, st, pad).numpy(), tf_fn(x, k, st, pad).numpy(), rtol=1e-5, atol=1e-6)


def test_nchw_and_batch_dims():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 5, 5, 3))
    w = rng.normal(size=(3, 3, 3, 4))
    nhwc = tf.nn.conv2d(x, w, 1, "SAME").numpy()
    nchw = tf.nn.conv2d(x.transpose(0, 3, 1, 2), w, 1, "SAME", data_format="NCHW").numpy()
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-12)
    batched = tf.nn.conv2d(np.stack([x, x]), w, 1, "SAME").numpy()
    np.testing.assert_allclose(batched[1], nhwc, rtol=1e-12)
    pooled = tf.nn.max_pool2d(x.transpose(0, 3, 1, 2), 2, 2, "VALID", data_format="NCHW").numpy()
    np.testing.assert_allclose(pooled, tf.nn.max_pool2d(x, 2, 2, "VALID").numpy().transpose(0, 3, 1, 2))


def test_zero_output_channels():
    # TensorFlow without oneDNN allows this; its oneDNN kernel rejects it.
    assert tf.nn.conv2d(tf.ones([1, 4, 4, 2]), tf.ones([3, 3, 2, 0]), 1, "SAME").shape == [1, 4, 4, 0]


def test_max_pool_ties_go_to_first_max():
    x = tf.constant(np.ones((1, 2, 2, 1)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy().ravel(), [1, 0, 0, 0])


def test_conv_hessian_vector_product_matches_tensorflow():
    tft = tf_module()
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(1, 5, 5, 2)), rng.normal(size=(3, 3, 2, 3))
    v = rng.normal(size=(1, 5, 5, 2))

    def hvp(m):
        xs, ws = m.constant(x), m.constant(w)
        with m.GradientTape() as outer:
            outer.watch([xs, ws])
            with m.GradientTape() as inner:
                inner.watch(xs)
                y = m.nn.conv2d(m.tanh(xs), ws, [2, 2], "SAME")
                loss = m.reduce_sum(y * y)
            g = inner.gradient(loss, xs)
            gv = m.reduce_sum(g * m.constant(v))
        return [d.numpy() for d in outer.gradient(gv, [xs, ws])]

    for a, b in zip(hvp(tf), hvp(tft), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_conv_and_pool_are_fast():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(8, 28, 28, 8)).astype(np.float32))
    w = tf.constant(rng.normal(size=(3, 3, 8, 16)).astype(np.float32))
    start = time.perf_counter()
    for _ in range(5):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")), 2, 2, "SAME")
            loss = tf.reduce_sum(y)
        tape.gradient(loss, [x, w])
    per_step = (time.perf_counter() - start) / 5
    assert per_step < 0.1, f"conv + pool training step took {per_step * 1e3:.1f} ms"


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pool_gradient_of_gradient_wrt_upstream_matches_tensorflow(pool):
    """d/dv <grad(pool)(x) . v, u>: exercises MaxPoolGradGrad / AvgPool-of-ddx and their own gradients."""
    tft = tf_module()
    rng = np.random.default_rng(5)
    x = distinct(rng, (1, 5, 4, 2), np.float64)
    v, u = rng.normal(size=(1, 3, 2, 2)), rng.normal(size=(1, 5, 4, 2))

    def run(m):
        xs, vs = m.constant(x), m.constant(v)
        with m.GradientTape() as outer:
            outer.watch(vs)
            with m.GradientTape() as inner:
                inner.watch(xs)
                y = getattr(m.nn, pool)(xs, 3, 2, "SAME")
            g = inner.gradient(y, xs, output_gradients=vs)
            gu = m.reduce_sum(g * m.constant(u))
        return outer.gradient(gu, vs).numpy()

    np.testing.assert_allclose(run(tf), run(tft), rtol=1e-12, atol=1e-12)


def test_max_pool_third_order_runs():
    x = tf.constant(distinct(np.random.default_rng(6), (1, 4, 4, 1), np.float64))
    v = tf.constant(np.ones((1, 2, 2, 1)))
    with tf.GradientTape() as t3:
        t3.watch(v)
        with tf.GradientTape() as t2:
            t2.watch(v)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.nn.max_pool2d(x, 2, 2, "VALID")
            g = t1.gradient(y, x, output_gradients=v * v)
            s = tf.reduce_sum(g * g)
        dv = t2.gradient(s, v)                  # = 4 v^3 routed through MaxPoolGradGrad
        s2 = tf.reduce_sum(dv)
    np.testing.assert_allclose(dv.numpy(), 4 * np.ones((1, 2, 2, 1)))
    np.testing.assert_allclose(t3.gradient(s2, v).numpy(), 12 * np.ones((1, 2, 2, 1)))


def test_convolutions_and_pooling_with_sizes_known_at_run_time():
    # conv2d_transpose to a run-time output shape, conv1d, 5-D conv2d and pooling with
    # unknown dims: TensorFlow's static shapes, values and gradients
    def fn(tf, x, w, x5):
        n, h, wd = tf.shape(x)[0], tf.shape(x)[1], tf.shape(x)[2]
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            up = tf.nn.conv2d_transpose(x, w, tf.stack([n, 2 * h, 2 * wd, 2]), 2, "SAME")
            line = tf.nn.conv1d(x[:, 0], w[0], 1, "VALID")
            deep = tf.nn.conv2d(x5, tf.transpose(w, (0, 1, 3, 2)), 1, "SAME")
            pooled = tf.nn.max_pool2d(x, 2, 1, "VALID") + tf.nn.avg_pool2d(x, 2, 1, "VALID")
            total = tf.add_n([tf.reduce_sum(t) for t in (up, line, pooled)])
        return [up, line, deep, pooled] + tape.gradient(total, [x, w])
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4, 3, 3)).astype(np.float32)
    w = rng.normal(size=(2, 2, 2, 3)).astype(np.float32)
    x5 = rng.normal(size=(2, 2, 4, 3, 2)).astype(np.float32)
    same(lambda tf: traced_static_and_values(
        tf, fn, [([None, None, None, 3], tf.float32), ([None, None, None, None], tf.float32),
                 ([None, None, None, None, 2], tf.float32)], x, w, x5), rtol=1e-4, atol=1e-5)


# -- tf.nn.convolution beyond the rows ------------------------------------------------------

CONVOLUTION_ERRORS = {
    "explicit_padding": lambda tf: tf.nn.convolution(tf.ones([1, 4, 4, 2]), tf.ones([2, 2, 2, 3]),
                                                     padding=[[0, 0], [1, 1], [1, 1], [0, 0]]),
    "strides_and_dilations": lambda tf: tf.nn.convolution(tf.ones([1, 6, 6, 6, 2]), tf.ones([2, 2, 2, 2, 3]),
                                                          strides=2, dilations=2, padding="SAME"),
    "no_spatial_dims": lambda tf: tf.nn.convolution(tf.ones([2, 3]), tf.ones([3, 4]), padding="SAME"),
    "strides_length": lambda tf: tf.nn.convolution(tf.ones([1, 4, 4, 4, 2]), tf.ones([2, 2, 2, 2, 3]),
                                                   strides=[1, 2], padding="SAME"),
    "depth_mismatch": lambda tf: tf.nn.convolution(tf.ones([1, 4, 4, 4, 2]), tf.ones([2, 2, 2, 3, 3])),
}


@pytest.mark.parametrize("name", CONVOLUTION_ERRORS)
def test_convolution_errors_like_tensorflow(name):
    same(CONVOLUTION_ERRORS[name])


@pytest.mark.parametrize("shapes,dilations", [(((2, 7, 2), (3, 2, 2)), 2), (((1, 5, 4, 2), (3, 2, 2, 2)), [2, 1]),
                                              (((1, 4, 5, 3, 2), (2, 3, 2, 2, 2)), [1, 2, 1])])
def test_dilated_same_convolution_matches_tensorflow(shapes, dilations):
    # Not a spec row: TensorFlow runs it through space_to_batch, whose paddings then depend on the window
    # size, so with unknown window sizes its static spatial sizes are unknown where those of the Conv2D and
    # Conv3D shape functions (ours) are known; values and gradients agree.
    rng = np.random.default_rng(7)
    x, w = (rng.normal(size=s) for s in shapes)
    fmt = {3: "NWC", 4: "NHWC", 5: "NDHWC"}[len(shapes[0])]

    def program(tf):
        xs, ws = tf.constant(x), tf.constant(w)
        with tf.GradientTape() as tape:
            tape.watch([xs, ws])
            y = tf.nn.convolution(xs, ws, padding="SAME", dilations=dilations, data_format=fmt)
            loss = tf.reduce_sum(y * y)
        return [y] + tape.gradient(loss, [xs, ws])

    ours = same(program, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ours[0].numpy(), np_convolution(x, w, padding="SAME", dilations=(
        (dilations,) * (len(shapes[0]) - 2) if isinstance(dilations, int) else tuple(dilations))), rtol=1e-12)


def test_conv3d_batch_dims_and_channels_first():
    rng = np.random.default_rng(8)
    x, w = rng.normal(size=(2, 4, 3, 4, 2)), rng.normal(size=(2, 2, 2, 2, 3))
    ndhwc = tf.nn.convolution(x, w, padding="SAME").numpy()
    ncdhw = tf.nn.convolution(np.moveaxis(x, -1, 1), w, padding="SAME", data_format="NCDHW").numpy()
    np.testing.assert_allclose(ncdhw, np.moveaxis(ndhwc, -1, 1), rtol=1e-12)
    batched = tf.nn.convolution(np.stack([x, 2 * x]), w, padding="SAME").numpy()
    np.testing.assert_allclose(batched[1], 2 * ndhwc, rtol=1e-12)


# -- vectorization: every batched/shared pattern of the convolution and pooling ops --------------

_VMAP_CONVS = {
    "conv2d": (lambda x, w: tf.nn.conv2d(x, w, [2, 1], "SAME"), (1, 5, 4, 2), (3, 2, 2, 3)),
    "conv2d_dilated": (lambda x, w: tf.nn.conv2d(x, w, 1, "VALID", dilations=[2, 1]), (2, 6, 5, 2), (2, 2, 2, 1)),
    "conv2d_explicit": (lambda x, w: tf.nn.conv2d(x, w, 1, [[0, 0], [1, 0], [2, 1], [0, 0]]), (1, 4, 3, 2),
                        (3, 3, 2, 2)),
    "conv3d": (lambda x, w: tf.nn.convolution(x, w, strides=[2, 1, 1], padding="SAME"), (1, 4, 3, 3, 2),
               (2, 2, 2, 2, 2)),
    "conv2d_empty": (lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), (0, 4, 4, 2), (3, 3, 2, 2)),
}


@pytest.mark.parametrize("name", _VMAP_CONVS)
@pytest.mark.parametrize("pattern", ["x", "w", "dy", "x,w", "x,dy", "w,dy", "x,w,dy"])
def test_vectorized_convolution_and_its_gradients(name, pattern):
    # One batched backprop per pattern: conv(x, w) and, through a tape inside the function,
    # Conv*BackpropInput(sizes, w, dy) and Conv*BackpropFilter(x, sizes, dy) with each of x, w, dy
    # batched (stacked) or shared, against a loop over the examples; no op may fall back.
    fn, xshape, wshape = _VMAP_CONVS[name]
    rng = np.random.default_rng(31)
    batch = 3
    x, w = rng.normal(size=(batch,) + xshape), rng.normal(size=(batch,) + wshape)
    dy = rng.normal(size=(batch,) + tuple(fn(tf.constant(x[0]), tf.constant(w[0])).shape))
    mapped = pattern.split(",")

    def example(args):
        vals = {"x": x[0], "w": w[0], "dy": dy[0]}
        vals.update(zip(mapped, args))
        xs, ws, dys = (tf.convert_to_tensor(vals[k]) for k in ("x", "w", "dy"))
        with tf.GradientTape() as tape:
            tape.watch([xs, ws])
            y = fn(xs, ws)
        return [y] + tape.gradient(y, [xs, ws], output_gradients=dys)

    stacked = {"x": x, "w": w, "dy": dy}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Op '.*' has no batching rule")
        got = tf.vectorized_map(example, [tf.constant(stacked[k]) for k in mapped])
        traced = tf.function(lambda *a: tf.vectorized_map(example, list(a)))(*[tf.constant(stacked[k]) for k in mapped])
    want = [example([stacked[k][b] for k in mapped]) for b in range(batch)]
    for k in range(3):
        expected = np.stack([wb[k].numpy() for wb in want])
        np.testing.assert_allclose(got[k].numpy(), expected, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(traced[k].numpy(), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("pool", ["max", "avg"])
@pytest.mark.parametrize("pattern", ["x", "dy", "x,dy"])
def test_vectorized_pooling_and_its_gradients(pool, pattern):
    fn = {"max": lambda x: tf.nn.max_pool2d(x, [3, 2], [1, 2], "SAME"),
          "avg": lambda x: tf.nn.avg_pool2d(x, 2, 1, "VALID")}[pool]
    rng = np.random.default_rng(32)
    x = rng.permutation(3 * 2 * 4 * 5 * 2).reshape(3, 2, 4, 5, 2).astype(np.float64)
    dy = rng.normal(size=(3,) + tuple(fn(tf.constant(x[0])).shape))
    mapped = pattern.split(",")

    def example(args):
        vals = {"x": x[0], "dy": dy[0]}
        vals.update(zip(mapped, args))
        xs, dys = tf.convert_to_tensor(vals["x"]), tf.convert_to_tensor(vals["dy"])
        with tf.GradientTape() as outer:
            outer.watch(dys)
            with tf.GradientTape() as tape:
                tape.watch(xs)
                y = fn(xs)
            dx = tape.gradient(y, xs, output_gradients=dys)
            loss = tf.reduce_sum(dx * dx)
        return [y, dx, outer.gradient(loss, dys)]      # MaxPoolGrad, then MaxPoolGradGrad

    stacked = {"x": x, "dy": dy}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Op '.*' has no batching rule")
        got = tf.vectorized_map(example, [tf.constant(stacked[k]) for k in mapped])
    want = [example([stacked[k][b] for k in mapped]) for b in range(3)]
    for k in range(3):
        np.testing.assert_allclose(got[k].numpy(), np.stack([wb[k].numpy() for wb in want]), rtol=1e-12)


def test_conv_hessian_is_vectorized():
    # The pfor Jacobian of a gradient meets BackpropInput/BackpropFilter with batched filters and gradients.
    rng = np.random.default_rng(33)
    x, w = tf.constant(rng.normal(size=(1, 4, 4, 2))), tf.constant(rng.normal(size=(2, 2, 2, 2)))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch([x, w])
        with tf.GradientTape() as inner:
            inner.watch([x, w])
            loss = tf.reduce_sum(tf.tanh(tf.nn.conv2d(x, w, 1, "SAME")))
        grads = tf.concat([tf.reshape(g, [-1]) for g in inner.gradient(loss, [x, w])], 0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Op '.*' has no batching rule")
        fast = outer.jacobian(grads, [x, w])
    slow = outer.jacobian(grads, [x, w], experimental_use_pfor=False)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pattern", ["x", "w", "x,w", "x,w,dy"])
def test_vectorized_convolution_with_sizes_known_when_the_graph_runs(pattern):
    # unknown batch and spatial sizes: the windows of the both-batched case come from the one-hot filter
    rng = np.random.default_rng(34)
    x, w = rng.normal(size=(3, 1, 5, 4, 2)), rng.normal(size=(3, 3, 2, 2, 3))
    dy = rng.normal(size=(3, 1, 3, 4, 3))
    stacked = {"x": x, "w": w, "dy": dy}
    mapped = pattern.split(",")

    def example(args):
        vals = {"x": x[0], "w": w[0], "dy": dy[0]}
        vals.update(zip(mapped, args))
        xs, ws, dys = (tf.convert_to_tensor(vals[k]) for k in ("x", "w", "dy"))
        with tf.GradientTape() as tape:
            tape.watch([xs, ws])
            y = tf.nn.conv2d(xs, ws, [2, 1], "SAME")
        return [y] + tape.gradient(y, [xs, ws], output_gradients=dys)

    specs = {"x": tf.TensorSpec([None, None, None, None, 2], tf.float64),
             "w": tf.TensorSpec([None, 3, 2, 2, 3], tf.float64),
             "dy": tf.TensorSpec([None, None, None, None, 3], tf.float64)}
    run = tf.function(lambda *a: tf.vectorized_map(example, list(a)), input_signature=[specs[k] for k in mapped])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Op '.*' has no batching rule")
        got = run(*[tf.constant(stacked[k]) for k in mapped])
    want = [example([stacked[k][b] for k in mapped]) for b in range(3)]
    for k in range(3):
        np.testing.assert_allclose(got[k].numpy(), np.stack([wb[k].numpy() for wb in want]), rtol=1e-10, atol=1e-10)
