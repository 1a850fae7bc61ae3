"""Convolutions and pooling (`tf.nn.convolution`, `conv2d`, `max_pool2d`, ...), channels last inside.

Kernels are im2col for any number of spatial dimensions: a strided window view
of the padded input (`sliding_window_view`), copied once into a
[positions, taps * channels] matrix and multiplied with the filter.  The
adjoint (col2im) adds the columns back with one vectorized slice-add per
kernel tap.

As in TensorFlow, the gradients of Conv2D (Conv3D) are the ops
Conv2DBackpropInput and Conv2DBackpropFilter (their V2 3-D forms), each with
its own gradient, so every order works; the same holds for MaxPool
(MaxPoolGrad, MaxPoolGradGrad) and AvgPool (AvgPoolGrad).
"""

import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tapeflow.framework.context import state
from tapeflow.framework.dtypes import FLOATING_TYPES, REAL_TYPES
from tapeflow.framework.errors import InvalidArgumentError, UnimplementedError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op, raise_type_mismatch
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import array_ops, join_ops, math_ops, reduction_ops, scatter_ops
from tapeflow.ops.core import basic_ops, batching, half, primitives
from tapeflow.ops.core.arguments import int_entries
from tapeflow.ops.core.half import computes_in_float32
from tapeflow.ops.core.primitives import shape_tensor as _sizes, zeros_of

_FLOAT_NP = frozenset(np.dtype(d._np) for d in FLOATING_TYPES)


# -- geometry -------------------------------------------------------------------------
# A spatial configuration is (size, ksize, stride, dilation, padding) per axis;
# `_geometry` turns it into (output size, pad before, pad after).  Arrays are
# channels last, [N, *spatial, C], with any number of spatial axes.

def _out_and_pads(size, k, stride, dilation, padding, type_):
    eff = (k - 1) * dilation + 1
    if isinstance(padding, tuple):
        before, after = padding
        out = (size + before + after - eff) // stride + 1
    elif padding == "VALID":
        before = after = 0
        out = (size - eff) // stride + 1
    else:  # SAME
        out = -(-size // stride)
        total = max((out - 1) * stride + eff - size, 0)
        before, after = total // 2, total - total // 2
    if out < 0:
        raise ValueError(f"Computed output size would be negative: {out} [input_size: {size}, "
                         f"effective_filter_size: {eff}, stride: {stride}]")
    return out, before, after


def _geometry(in_sizes, ks, strides, dilations, padding, type_):
    pads = padding if not isinstance(padding, str) else (padding,) * len(in_sizes)
    dims = [_out_and_pads(s, k, st, d, p, type_)
            for s, k, st, d, p in zip(in_sizes, ks, strides, dilations, pads, strict=True)]
    return tuple(d[0] for d in dims), tuple((d[1], d[2]) for d in dims)


def _windows(xp, ks, strides, dilations, out_sizes):
    """[N, *out, *k, C] strided view of the padded channels-last input."""
    n = len(ks)
    if 0 in out_sizes:
        return np.zeros((xp.shape[0], *out_sizes, *ks, xp.shape[-1]), xp.dtype)
    eff = [(k - 1) * d + 1 for k, d in zip(ks, dilations, strict=True)]
    v = sliding_window_view(xp, eff, axis=tuple(range(1, n + 1)))          # [N, *S', C, *EK]
    v = v[(slice(None),) + tuple(slice(None, o * st, st) for o, st in zip(out_sizes, strides, strict=True))
          + (slice(None),) + tuple(slice(None, None, d) for d in dilations)]
    return v.transpose(0, *range(1, n + 1), *range(n + 2, 2 * n + 2), n + 1)


def _pad(x, pads, value=0):
    if not any(p for pair in pads for p in pair):
        return x
    return np.pad(x, ((0, 0), *pads, (0, 0)), constant_values=value)


def _col2im(cols, in_shape, pads, strides, dilations):
    """Adjoint of `_windows`: adds cols [N, *out, *k, C] back into an [N, *in, C] array."""
    n = len(strides)
    out_sizes, ks = cols.shape[1:n + 1], cols.shape[n + 1:2 * n + 1]
    padded = [size + before + after for size, (before, after) in zip(in_shape[1:-1], pads, strict=True)]
    out = np.zeros((cols.shape[0], *padded, cols.shape[-1]), cols.dtype)
    for tap in itertools.product(*map(range, ks)):      # one vectorized add per kernel tap
        target = tuple(slice(t * d, t * d + st * (o - 1) + 1, st)
                       for t, d, st, o in zip(tap, dilations, strides, out_sizes, strict=True))
        out[(slice(None),) + target] += cols[(slice(None),) * (n + 1) + tap]
    return out[(slice(None),) + tuple(slice(before, before + size)
                                      for size, (before, _) in zip(in_shape[1:-1], pads, strict=True))]


def _attrs(op_):
    return {k: op_.get_attr(k) for k in ("strides", "padding", "dilations")}


# -- convolution ---------------------------------------------------------------------

def _check_conv(x_shape, w_shape, rank):
    """Raises ValueError unless x and w are a rank-`rank` input and filter of matching depth."""
    if len(x_shape) != rank:
        raise ValueError(f"convolution input must be {rank}-dimensional: {list(x_shape)}")
    if len(w_shape) != rank:
        raise ValueError(f"convolution filter must be {rank}-dimensional: {list(w_shape)}")
    if w_shape[-2] == 0 or x_shape[-1] % w_shape[-2]:
        raise ValueError(f"input depth must be evenly divisible by filter depth: {x_shape[-1]} vs {w_shape[-2]}")
    if x_shape[-1] != w_shape[-2]:
        raise ValueError(f"grouped convolutions (input depth {x_shape[-1]}, filter depth {w_shape[-2]}) are not "
                         f"supported; use a filter of depth {x_shape[-1]}")


def _conv_forward(x, w, strides, padding, dilations):
    _check_conv(x.shape, w.shape, len(strides) + 2)
    ks, (c, o) = w.shape[:-2], w.shape[-2:]
    out_sizes, pads = _geometry(x.shape[1:-1], ks, strides, dilations, padding, "")
    taps = int(np.prod(ks)) * c
    rows = x.shape[0] * int(np.prod(out_sizes))
    cols = _windows(_pad(x, pads), ks, strides, dilations, out_sizes)
    out = np.matmul(cols.reshape(rows, taps), w.reshape(taps, o))
    return out.reshape(x.shape[0], *out_sizes, o)


def _conv_backprop_input(input_sizes, w, dy, strides, padding, dilations, type_):
    in_shape = tuple(int(d) for d in input_sizes)
    _check_conv(in_shape, w.shape, len(strides) + 2)
    ks, (c, o) = w.shape[:-2], w.shape[-2:]
    out_sizes, pads = _geometry(in_shape[1:-1], ks, strides, dilations, padding, type_)
    if tuple(dy.shape[1:-1]) != out_sizes or dy.shape[0] != in_shape[0] or dy.shape[-1] != o:
        raise ValueError(f"{type_}: size of out_backprop {list(dy.shape)} doesn't match the computed "
                         f"{[in_shape[0], *out_sizes, o]} for input {list(in_shape)} and filter {list(w.shape)}")
    taps = int(np.prod(ks)) * c
    rows = in_shape[0] * int(np.prod(out_sizes))
    cols = np.matmul(dy.reshape(rows, o), w.reshape(taps, o).T)
    return _col2im(cols.reshape(in_shape[0], *out_sizes, *ks, c), in_shape, pads, strides, dilations)


def _conv_backprop_filter(x, filter_sizes, dy, strides, padding, dilations):
    w_shape = tuple(int(d) for d in filter_sizes)
    _check_conv(x.shape, w_shape, len(strides) + 2)
    ks, (c, o) = w_shape[:-2], w_shape[-2:]
    out_sizes, pads = _geometry(x.shape[1:-1], ks, strides, dilations, padding, "")
    taps = int(np.prod(ks)) * c
    rows = x.shape[0] * int(np.prod(out_sizes))
    cols = _windows(_pad(x, pads), ks, strides, dilations, out_sizes)
    dw = np.matmul(cols.reshape(rows, taps).T, dy.reshape(rows, o))
    return dw.reshape(w_shape)


# Graph shape rules (TensorFlow's shape functions): unknown input sizes give unknown
# output sizes; a SAME output size needs only the input size, a VALID or explicit one
# also the window size.

def _windowed_size(size, k, stride, dilation, padding):
    """One output size; a VALID or explicit window larger than the (padded) input is a ValueError
    (TF's GetWindowedOutputSize; eagerly the kernels give an empty output instead)."""
    if size is None or (padding != "SAME" and k is None):
        return None
    if padding == "SAME":
        return -(-size // stride)
    eff = (k - 1) * dilation + 1
    padded = size + (sum(padding) if isinstance(padding, tuple) else 0)
    if padded < eff:
        raise ValueError(f"Negative dimension size caused by subtracting {eff} from {padded}: the window does "
                         "not fit in the input; use padding='SAME' or a smaller window.")
    return _out_and_pads(size, k, stride, dilation, padding, "")[0]


def _windowed_sizes(in_sizes, ks, strides, dilations, padding):
    pads = padding if not isinstance(padding, str) else (padding,) * len(in_sizes)
    return tuple(_windowed_size(*args) for args in zip(in_sizes, ks, strides, dilations, pads, strict=True))


def _conv_shape(x, w, strides, padding, dilations):
    """[N, *in, C] and [*k, C, O] -> [N, *out, O] (TF's Conv2DShape, Conv3DShape)."""
    xs, ws = tuple(x.shape), tuple(w.shape)
    rank = len(strides) + 2
    if len(xs) != rank or len(ws) != rank or (xs[-1] is not None and ws[-2] is not None):
        _check_conv(xs, ws, rank)
    sizes = _windowed_sizes(xs[1:-1], ws[:-2], strides, dilations, padding)
    return [primitives.meta((xs[0], *sizes, ws[-1]), x.dtype)]


# Note [sizes inputs]: the backprop ops of convolutions and AvgPoolGrad take the
# shape of their output as an int32 input, as in TensorFlow.  When it is only
# known when a graph runs (`tf.shape(x)`), the static output shape has the entries
# known while building (framework/shapes/known_values); the rules get the input tensors
# (`shape_reads_inputs`).

def _shape_from_sizes(index, dtype_index, rank, what, batch_from=None):
    """The shape rule of an op whose output shape is its size input `index`, of `rank` entries; with
    `batch_from`, the batch size is that input's first dim instead (TF's Conv2DBackpropInput)."""
    def shape_fn(*inputs, **_):
        sizes = inputs[index]
        dims = primitives.output_dims(primitives.vector(sizes, what, "conv"), "conv")
        if len(dims) != rank:
            raise ValueError(f"`{what}` must hold {rank} values, got {len(dims)}.")
        if batch_from is not None:
            dims[0] = inputs[batch_from]._value.shape[0]
        return [primitives.meta(dims, inputs[dtype_index]._value.dtype)]
    return shape_fn


def _convolution_ops(n, conv_type, input_type, filter_type):
    """The ops of an n-D convolution (TF's Conv2D or Conv3D, with its two gradient ops) on
    channels-last arrays, each declared with its shape rule and gradient."""

    @op(conv_type, dtypes=FLOATING_TYPES, shape=_conv_shape, half=half.in_float32)
    def conv(x, w, strides, padding, dilations):
        return _conv_forward(x, w, strides, padding, dilations)

    @op(input_type, same_dtype=False, shape_reads_inputs=True,
        shape=_shape_from_sizes(0, 1, n + 2, "input_sizes", batch_from=2 if n == 2 else None))
    @computes_in_float32(dtype_of=1)
    def backprop_input(input_sizes, w, dy, strides, padding, dilations):
        return _conv_backprop_input(input_sizes, w, dy, strides, padding, dilations, input_type)

    @op(filter_type, same_dtype=False, shape_reads_inputs=True,
        shape=_shape_from_sizes(1, 0, n + 2, "filter_sizes"))
    @computes_in_float32
    def backprop_filter(x, filter_sizes, dy, strides, padding, dilations):
        return _conv_backprop_filter(x, filter_sizes, dy, strides, padding, dilations)

    @conv.def_grad(reads_inputs=True)
    def _conv_grad(op, dy):
        x, w = op.inputs                 # y = x * w:  dx = conv^T(dy, w),  dw = corr(x, dy)
        attrs = _attrs(op)
        skip = op.skip_input_indices
        return (None if 0 in skip else execute(backprop_input, (_sizes(x), w, dy), attrs),
                None if 1 in skip else execute(backprop_filter, (x, _sizes(w), dy), attrs))

    @backprop_input.def_grad(reads_inputs=(1, 2))
    def _backprop_input_grad(op, ddx):
        _, w, dy = op.inputs             # dx = conv^T(dy, w) is bilinear in (w, dy)
        attrs = _attrs(op)
        return None, execute(backprop_filter, (ddx, _sizes(w), dy), attrs), execute(conv, (ddx, w), attrs)

    @backprop_filter.def_grad(reads_inputs=(0, 2))
    def _backprop_filter_grad(op, ddw):
        x, _, dy = op.inputs             # dw = corr(x, dy) is bilinear in (x, dy)
        attrs = _attrs(op)
        return execute(backprop_input, (_sizes(x), ddw, dy), attrs), None, execute(conv, (x, ddw), attrs)

    return conv, backprop_input, backprop_filter


_conv2d, _conv2d_backprop_input, _conv2d_backprop_filter = _convolution_ops(
    2, "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter")
_conv3d, _conv3d_backprop_input, _conv3d_backprop_filter = _convolution_ops(
    3, "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2")


# -- batching rules (ops/core/vectorization.py) ---------------------------------------------------
# Note [batched convolutions]: examples sharing the filter are one convolution of B*N
# images (the batch folded into N).  B filters meeting one input are one convolution with
# B*O output channels (folded into O); likewise BackpropInput folds batched filters into
# C, and BackpropFilter a batched input into C and a batched gradient into O.  When the
# input (or gradient) and the filter are both batched, the examples share nothing (a
# grouped convolution would cost B times the work): the K taps of every window are cut
# out (one strided slice per tap; with spatial sizes known only when a graph runs, one
# convolution of each channel alone with a one-hot filter, K taps -> K channels) and meet
# each example's filter in one batched matmul, as the kernel's own im2col does;
# BackpropInput adds its columns back with the transposed convolution of that one-hot
# filter (col2im, exact for finite values).  A size input that differs per example (a
# shape per example) is NotBatchable.



def _dims(x):
    """x's dimensions: ints where known statically, scalar tensors where not."""
    shape = x._value.shape
    if None not in shape:
        return list(shape)
    dynamic = basic_ops.shape(x)
    return [dynamic[i] if d is None else d for i, d in enumerate(shape)]


def _reshaped(x, dims):
    return primitives.reshape(x, tuple(dims) if all(type(d) is int for d in dims) else list(dims))


def _prod(dims):
    out = 1
    for d in dims:
        out = out * d
    return out


def _merge(x, into):
    """Stacked `x` [B, d0, ...] as one example-shaped tensor whose axis `into` is B * d_into (batch-major)."""
    if into:
        rank = x._value.ndim
        x = primitives.transpose(x, tuple(range(1, into + 1)) + (0,) + tuple(range(into + 1, rank)))
    dims = _dims(x)
    return _reshaped(x, dims[:into] + [dims[into] * dims[into + 1]] + dims[into + 2:])


def _split(y, at, size, d):
    """The inverse of `_merge`: y's axis `at` (size * d, batch-major) split, the batch moved to the front."""
    dims = _dims(y)
    y = _reshaped(y, dims[:at] + [size, d] + dims[at + 1:])
    if at:
        y = primitives.transpose(y, (at,) + tuple(range(at)) + tuple(range(at + 1, len(dims) + 1)))
    return y


def _scaled(sizes, axis, factor):
    """A size input (an int vector) with entry `axis` multiplied by `factor` (the batch folded there)."""
    scale = [1] * sizes._value.shape[0]
    scale[axis] = basic_ops.cast(factor, sizes.dtype) if isinstance(factor, Tensor) else factor
    if isinstance(factor, Tensor):
        return math_ops.multiply(sizes, primitives.stack(scale))
    return math_ops.multiply(sizes, Tensor(np.asarray(scale, sizes._value.dtype)))


def _one_hot_filter(ks, dtype):
    """[*ks, 1, K]: tap j of the window to output channel j."""
    k = int(np.prod(ks))
    return Tensor(np.eye(k, dtype=dtype).reshape(tuple(ks) + (1, k)))


def _windows_of(conv, x, ks, attrs):
    """[M, *S, C] -> [M, *out, K, C]: the K taps of every window (Note [batched convolutions])."""
    n = len(ks)
    dims = _dims(x)
    if all(type(d) is int for d in dims[1:-1]):         # known sizes: one strided slice per tap
        strides, dilations = attrs["strides"], attrs["dilations"]
        out, pads = _geometry(dims[1:-1], ks, strides, dilations, attrs["padding"], "")
        if any(p for pair in pads for p in pair):
            x = join_ops.pad(x, [[0, 0]] + [list(p) for p in pads] + [[0, 0]])
        taps = [x[(slice(None),) + tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                                         for t, d, s, o in zip(tap, dilations, strides, out)) + (slice(None),)]
                for tap in itertools.product(*map(range, ks))]
        return primitives.stack(taps, axis=n + 1)
    per_channel = _reshaped(primitives.transpose(x, (0, n + 1) + tuple(range(1, n + 1))),
                            [dims[0] * dims[-1]] + dims[1:-1] + [1])
    taps = execute(conv, (per_channel, _one_hot_filter(ks, x._value.dtype)), attrs)      # [M*C, *out, K]
    out = _dims(taps)
    taps = _reshaped(taps, [dims[0], dims[-1]] + out[1:])
    return primitives.transpose(taps, (0,) + tuple(range(2, n + 3)) + (1,))


def _batch_convolution_ops(n, conv, backprop_input, backprop_filter):
    """The batching rules of an n-D convolution and its two gradient ops."""
    channels = n + 1                                    # the channel axis of an example

    @conv.def_batch
    def _conv_batch(xs, batched, **attrs):
        x, w = xs
        if not batched[1]:                              # shared filter: B*N images
            y = execute(conv, (_merge(x, 0), w), attrs)
            return _split(y, 0, primitives.batch_size_of(x), _dims(x)[1]), True
        size = primitives.batch_size_of(w)
        if not batched[0]:                              # one input, B filters: B*O channels
            y = execute(conv, (x, _merge(w, n + 1)), attrs)
            return _split(y, channels, size, _dims(w)[-1]), True
        ks = w._value.shape[1:n + 1]                    # both: windows times each example's filter
        if None in ks:
            raise batching.NotBatchable
        xd, wd = _dims(x), _dims(w)
        taps = _windows_of(conv, _merge(x, 0), ks, attrs)
        td = _dims(taps)
        cols = _reshaped(taps, [size, _prod(xd[1:2] + td[1:n + 1]), td[-2] * td[-1]])
        y = math_ops.matmul(cols, _reshaped(w, [size, _prod(wd[1:n + 2]), wd[-1]]))
        return _reshaped(y, [size, xd[1]] + td[1:n + 1] + [wd[-1]]), True

    @backprop_input.def_batch
    def _backprop_input_batch(xs, batched, **attrs):
        sizes, w, dy = xs
        if batched[0]:
            raise batching.NotBatchable                 # an input shape per example
        if not batched[1]:                              # shared filter: B*N gradients
            dx = execute(backprop_input, (_scaled(sizes, 0, primitives.batch_size_of(dy)), w, _merge(dy, 0)), attrs)
            return _split(dx, 0, primitives.batch_size_of(dy), _dims(dy)[1]), True
        size = primitives.batch_size_of(w)
        if not batched[2]:                              # B filters: B*C input channels
            dx = execute(backprop_input, (_scaled(sizes, channels, size), _merge(w, n), dy), attrs)
            return _split(dx, channels, size, _dims(w)[n + 1]), True
        ks = w._value.shape[1:n + 1]                    # both: each example's columns, then col2im
        if None in ks:
            raise batching.NotBatchable
        wd, dd = _dims(w), _dims(dy)
        cols = math_ops.matmul(_reshaped(dy, [size, _prod(dd[1:n + 2]), dd[-1]]),
                               _reshaped(w, [size, _prod(wd[1:n + 2]), wd[-1]]), transpose_b=True)   # [B, N*P, K*C]
        k, c = int(np.prod(ks)), wd[-2]
        cols = _reshaped(cols, [size * dd[1]] + dd[2:n + 2] + [k, c])
        cols = primitives.transpose(cols, (0, n + 2) + tuple(range(1, n + 2)))      # [B*N, C, *out, K]
        cd = _dims(cols)
        per_channel = _reshaped(cols, [cd[0] * cd[1]] + cd[2:])
        bnc = reduction_ops.reduce_prod(_scaled(scatter_ops.gather(sizes, [0, n + 1]), 0, size))
        spatial = scatter_ops.gather(sizes, list(range(1, n + 1)))
        col2im_sizes = join_ops.concat([primitives.reshape(bnc, [1]), spatial,
                                         Tensor(np.ones(1, sizes._value.dtype))], 0)
        dx = execute(backprop_input, (col2im_sizes, _one_hot_filter(ks, w._value.dtype), per_channel), attrs)
        xd = _dims(dx)                                  # [B*N*C, *S, 1]
        dx = _reshaped(dx, [size * dd[1], c] + xd[1:n + 1])
        dx = primitives.transpose(dx, (0,) + tuple(range(2, n + 2)) + (1,))
        return _reshaped(dx, [size, dd[1]] + xd[1:n + 1] + [c]), True

    @backprop_filter.def_batch
    def _backprop_filter_batch(xs, batched, **attrs):
        x, sizes, dy = xs
        if batched[1]:
            raise batching.NotBatchable                 # a filter shape per example
        if not batched[0]:                              # B gradients: B*O filter outputs
            size = primitives.batch_size_of(dy)
            dw = execute(backprop_filter, (x, _scaled(sizes, n + 1, size), _merge(dy, n + 1)), attrs)
            return _split(dw, n + 1, size, _dims(dy)[-1]), True
        size = primitives.batch_size_of(x)
        if not batched[2]:                              # B inputs: B*C filter inputs
            dw = execute(backprop_filter, (_merge(x, n + 1), _scaled(sizes, n, size), dy), attrs)
            return _split(dw, n, size, _dims(x)[-1]), True
        known = constant_value(sizes)                   # both: windows times each example's gradient
        if known is None:
            raise batching.NotBatchable
        ks = tuple(int(k) for k in known[:n])
        taps = _windows_of(conv, _merge(x, 0), ks, attrs)
        td, dd = _dims(taps), _dims(dy)
        cols = _reshaped(taps, [size, _prod(dd[1:n + 2]), td[-2] * td[-1]])
        dw = math_ops.matmul(cols, _reshaped(dy, [size, _prod(dd[1:n + 2]), dd[-1]]), transpose_a=True)
        return _reshaped(dw, [size] + list(ks) + [td[-1], dd[-1]]), True


_batch_convolution_ops(2, _conv2d, _conv2d_backprop_input, _conv2d_backprop_filter)
_batch_convolution_ops(3, _conv3d, _conv3d_backprop_input, _conv3d_backprop_filter)


# -- argument normalization -------------------------------------------------------------

def _spatial(value, what, n_spatial, channels_first, type_, default=None):
    """Normalizes strides/dilations/ksize (int, list of 1, n or n + 2) to an n-tuple."""
    if value is None:
        value = default
    if type(value) is int:
        vals = [value]
    elif type(value) in (list, tuple) and all(type(v) is int for v in value):
        vals = list(value)
    else:
        vals = _window_ints(value, what, (1, n_spatial, n_spatial + 2))
    if len(vals) == 1:
        return tuple(vals) * n_spatial
    if len(vals) == n_spatial:
        return tuple(vals)
    if len(vals) == n_spatial + 2:
        outer = (vals[0], vals[1]) if channels_first else (vals[0], vals[-1])
        if outer != (1, 1):
            raise UnimplementedError(None, type_, f"Current implementation does not yet support {what} in the batch "
                                                  f"and depth dimensions. [Op:{type_}]")
        return tuple(vals[2:]) if channels_first else tuple(vals[1:-1])
    raise ValueError(f"`{what}` should be of length 1, {n_spatial} or {n_spatial + 2}. Received: {what}={value}")


def _window_ints(value, what, lengths):
    """A strides/dilations/ksize argument other than ints, read as TensorFlow reads it: as a
    sequence (an int-like scalar is one entry) whose entries go through int().

    Raises:
      TypeError: a tensor (in graphs, iterating a tensor: TF's OperatorNotAllowedInGraphError, a
        TypeError; eagerly, a scalar one), or an entry int() rejects (text, None, NaN, a list).
      ValueError: a length not in `lengths` (checked before the entries).
      OverflowError: an infinite entry.
    """
    if isinstance(value, Tensor):
        if state.graphs:
            raise TypeError(f"Iterating over a symbolic `tf.Tensor` is not allowed (argument `{what}`); "
                            "give a Python list of ints.")
        if value._value.ndim == 0:
            raise TypeError(f"Cannot iterate over a scalar tensor (argument `{what}`).")
        value = list(value._value)
    entries = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if len(entries) not in lengths:
        raise ValueError(f"`{what}` should be of length {', '.join(map(str, lengths[:-1]))} or {lengths[-1]}. "
                         f"Received: {what}={value}")
    return int_entries(entries, what)


def _padding(padding, n_spatial, channels_first, type_, allow_explicit=True):
    """'SAME' / 'VALID', or explicit [[before, after], ...] per dimension -> per-spatial pairs."""
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            raise InvalidArgumentError(None, type_, f"Value for attr 'padding' of \"{padding}\" is not in the list "
                                                    f"of allowed values: \"SAME\", \"VALID\", \"EXPLICIT\"")
        return padding
    if not allow_explicit:
        raise TypeError(f"Expected string for argument 'padding' not {padding!r}.")
    pairs = [tuple(int(p) for p in pair) for pair in padding]
    if len(pairs) != n_spatial + 2:
        raise ValueError(f"When padding is a list, it must be of size {n_spatial + 2}. Received: "
                         f"padding={padding} of size {len(pairs)}")
    outer = (pairs[0], pairs[1]) if channels_first else (pairs[0], pairs[-1])
    if any(p for pair in outer for p in pair):
        raise InvalidArgumentError(None, type_, f"Nonzero explicit padding in the batch or depth dimensions is not "
                                                f"supported [Op:{type_}]")
    if any(p < 0 for pair in pairs for p in pair):
        raise InvalidArgumentError(None, type_, f"All elements of explicit_paddings must be nonnegative [Op:{type_}]")
    return tuple(pairs[2:]) if channels_first else tuple(pairs[1:-1])


def _check_positive(vals, what, type_):
    if any(v <= 0 for v in vals):
        raise InvalidArgumentError(None, type_, f"{what} should be larger than 0, got {list(vals)} [Op:{type_}]")


def _channels_first(data_format, allowed):
    if data_format is None:
        return False
    if data_format not in allowed:
        raise ValueError(f"`data_format` must be one of {allowed}. Received: data_format={data_format!r}")
    return data_format.startswith("NC")


def _to_channels_last(x, channels_first):
    """[N, C, *spatial] -> [N, *spatial, C] when `channels_first`."""
    rank = x._value.ndim
    return primitives.transpose(x, (0, *range(2, rank), 1)) if channels_first else x


def _from_channels_last(y, channels_first):
    """[N, *spatial, C] -> [N, C, *spatial] when `channels_first`."""
    rank = y._value.ndim
    return primitives.transpose(y, (0, rank - 1, *range(1, rank - 1))) if channels_first else y


def _same_dtype_pair(x, w, type_):
    """Input and filter as tensors of one floating dtype (TensorFlow's `T`)."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    w = w if type(w) is Tensor else convert_to_tensor(w, dtype=None if hasattr(w, "_as_tensor") else x.dtype)
    if x._value.dtype not in _FLOAT_NP:
        raise InvalidArgumentError(None, type_, f"Value for attr 'T' of {x.dtype.name} is not in the list of allowed "
                                                f"values: half, bfloat16, float, double [Op:{type_}]")
    if w._value.dtype != x._value.dtype:
        raise_type_mismatch(type_, 1, x._value.dtype, w._value.dtype)
    known_rank(x, type_)
    known_rank(w, type_)
    return x, w


# -- public convolutions ----------------------------------------------------------------

@tf_export("nn.conv2d")
def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """2-D convolution (cross-correlation) of NHWC `input` with HWIO `filters`.

    Args:
      input: [batch..., H, W, C] (or [N, C, H, W] with data_format "NCHW").
      filters: [KH, KW, C, O].
      strides, dilations: an int or a list of 1, 2 or 4 ints.
      padding: "SAME", "VALID" or explicit [[0, 0], [top, bottom], [left, right], [0, 0]].

    Raises:
      InvalidArgumentError: bad ranks, mismatched channels, non-positive strides.

    >>> import tapeflow as tf
    >>> tf.nn.conv2d(tf.ones([1, 4, 4, 2]), tf.ones([3, 3, 2, 5]), 1, "SAME").shape
    TensorShape([1, 4, 4, 5])
    """
    return _convolve(_conv2d, 2, input, filters, strides, padding, data_format, dilations)


_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}   # channels last, first


def _convolve(conv_op, n, input, filters, strides, padding, data_format, dilations):  # noqa: A002
    """The n-D convolution `conv_op` (Conv2D, Conv3D) of [batch..., *spatial, C] input (extra
    leading batch dims allowed) or [N, C, *spatial] input (a channels-first `data_format`)."""
    type_ = conv_op.type
    cf = _channels_first(data_format, _FORMATS[n])
    x, w = _same_dtype_pair(input, filters, type_)
    strides = _spatial(strides, "strides", n, cf, type_)
    dilations = _spatial(dilations, "dilations", n, cf, type_, default=1)
    _check_positive(strides, "Row and column strides" if n == 2 else "Strides", type_)
    _check_positive(dilations, "Dilation rates", type_)
    padding = _padding(padding, n, cf, type_)
    shape = x._value.shape
    batch = None
    if not cf and len(shape) > n + 2:    # extra leading batch dimensions
        dims = primitives.dims_of(x)  # ints, or scalar tensors for sizes known when a graph runs
        batch = dims[:-n - 1]
        x = primitives.reshape(x, [-1] + dims[-n - 1:])
    y = execute(conv_op, (_to_channels_last(x, cf) if len(shape) == n + 2 else x, w),
                {"strides": strides, "padding": padding, "dilations": dilations})
    if batch is not None:
        return primitives.reshape(y, batch + primitives.dims_of(y)[1:])
    return _from_channels_last(y, cf)


@tf_export("nn.convolution")
def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None,  # noqa: A002
                name=None):
    """N-D convolution (cross-correlation) over 1, 2 or 3 spatial dimensions, by the rank of `filters`.

    Args:
      input: [batch..., *spatial, C], or [N, C, *spatial] with a channels-first `data_format`.
      filters: [*window, C, O].
      strides, dilations: an int or a list of 1, n or n + 2 ints for n spatial dimensions;
        strides and dilations above 1 cannot be combined.
      padding: "VALID" or "SAME".
      data_format: None (channels last), "NWC", "NCW", "NHWC", "NCHW", "NDHWC" or "NCDHW".

    Returns:
      conv1d, conv2d, or the 3-D convolution (TensorFlow's Conv3D) of `input` and `filters`.

    Raises:
      ValueError: filters (or, when their rank is unknown, input) of a rank other than 3, 4 or 5;
        strides and dilations both above 1.
      TypeError: a padding that is not a string.

    >>> import tapeflow as tf
    >>> tf.nn.convolution(tf.ones([1, 4, 4, 4, 2]), tf.ones([3, 3, 3, 2, 5]), padding="SAME").shape
    TensorShape([1, 4, 4, 4, 5])
    """
    x = input if isinstance(input, Tensor) else convert_to_tensor(input)
    w = filters if isinstance(filters, Tensor) else convert_to_tensor(
        filters, dtype=None if hasattr(filters, "_as_tensor") else x.dtype)
    n = (known_rank(w, "Conv") if w._value.shape is not None else known_rank(x, "Conv")) - 2
    if not 1 <= n <= 3:
        raise ValueError(f"`num_spatial_dims` must be 1, 2, or 3. Received: num_spatial_dims={n}.")
    if not isinstance(padding, str):
        raise TypeError(f"Expected string for argument 'padding' not {padding!r}.")
    cf = data_format is not None and data_format.startswith("NC")
    strides = _spatial(strides, "strides", n, cf, "Conv", default=1)
    dilations = _spatial(dilations, "dilations", n, cf, "Conv", default=1)
    if max(strides) > 1 and max(dilations) > 1:
        raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                         f"strides={list(strides)} and dilation_rate={list(dilations)}")
    if n == 1:
        return conv1d(x, w, strides, padding, data_format or "NWC", dilations)
    return _convolve(_conv2d if n == 2 else _conv3d, n, x, w, strides, padding, data_format or _FORMATS[n][0],
                     dilations)


@tf_export("nn.conv1d")
def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):  # noqa: A002
    """1-D convolution of [N, W, C] `input` with [K, C, O] `filters` (a conv2d of height 1)."""
    cf = _channels_first(data_format, ("NWC", "NCW"))
    x, w = _same_dtype_pair(input, filters, "Conv2D")
    stride = _spatial(stride, "strides", 1, cf, "Conv2D")
    dilations = _spatial(dilations, "dilations", 1, cf, "Conv2D", default=1)
    if not isinstance(padding, str):
        padding = [[0, 0]] + [list(p) for p in padding] if len(padding) == 3 else padding
    xs, ws = x._value.shape, w._value.shape
    if len(xs) != 3:
        shown = [xs[0] if xs else 1, 1, *xs[1:]]
        raise InvalidArgumentError(None, "Conv2D", f"convolution input must be 4-dimensional: {shown} [Op:Conv2D]")
    if len(ws) != 3:
        raise InvalidArgumentError(None, "Conv2D", f"convolution filter must be 4-dimensional: {[1, *ws]} [Op:Conv2D]")
    if cf:
        x = primitives.transpose(x, (0, 2, 1))
        if not isinstance(padding, str):
            padding = [padding[0], padding[2], padding[1]]
        cf = False
    x4 = _insert_height(x)
    w4 = _insert_height(w, 0)
    pad4 = padding if isinstance(padding, str) else [[0, 0], [0, 0]] + [list(p) for p in padding[1:]]
    y = conv2d(x4, w4, [1, 1, stride[0], 1], pad4, dilations=[1, 1, dilations[0], 1])
    y = _drop_height(y)
    return primitives.transpose(y, (0, 2, 1)) if data_format == "NCW" else y


def _insert_height(t, axis=1):
    """`t` with a size-1 axis inserted at `axis` (1-D ops run as 2-D ones of height 1)."""
    shape = t._value.shape
    if None in shape:
        return primitives.expand_dims(t, axis)
    return primitives.reshape(t, shape[:axis] + (1,) + shape[axis:])


def _drop_height(t):
    """`t` without its size-1 axis 1 (the inverse of `_insert_height`)."""
    shape = t._value.shape
    if None in shape:
        return array_ops.squeeze(t, [1])
    return primitives.reshape(t, shape[:1] + shape[2:])


@tf_export("nn.conv2d_transpose")
def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",  # noqa: A002
                     dilations=None, name=None):
    """The transpose (gradient) of conv2d: maps [N, H, W, O] `input` to `output_shape` [N, H', W', C].

    `filters` is [KH, KW, C, O] (output channels third, as for conv2d's input).

    Raises:
      InvalidArgumentError: `input` is not the conv2d output size of `output_shape`.
    """
    cf = _channels_first(data_format, ("NHWC", "NCHW"))
    x, w = _same_dtype_pair(input, filters, "Conv2DBackpropInput")
    strides = _spatial(strides, "strides", 2, cf, "Conv2DBackpropInput")
    dilations = _spatial(dilations, "dilations", 2, cf, "Conv2DBackpropInput", default=1)
    _check_positive(strides, "Row and column strides", "Conv2DBackpropInput")
    padding = _padding(padding, 2, cf, "Conv2DBackpropInput")
    known = primitives.sizes_or_tensor(output_shape, "output_shape", "Conv2DBackpropInput")
    if isinstance(known, Tensor):        # graphs: sizes read when the graph runs (Note [sizes inputs])
        count = primitives.vector(known, "output_shape", "Conv2DBackpropInput")
        sizes = known
    else:
        value = output_shape if known is None else known
        out_shape = value._value.tolist() if isinstance(value, Tensor) else np.asarray(value).tolist()
        count, sizes = out_shape, None
    if len(count) != 4:
        raise InvalidArgumentError(None, "Conv2DBackpropInput", f"Conv2DBackpropInput requires input_sizes to contain "
                                   f"4 values or 2 values, but got: {len(count)} [Op:Conv2DBackpropInput]")
    if sizes is None:
        if cf:
            out_shape = [out_shape[0], out_shape[2], out_shape[3], out_shape[1]]
        sizes = Tensor(np.asarray(out_shape, np.int32))
    elif cf:
        sizes = scatter_ops.gather(sizes, [0, 2, 3, 1])
    y = execute(_conv2d_backprop_input, (sizes, w, _to_channels_last(x, cf)),
                {"strides": strides, "padding": padding, "dilations": dilations})
    return _from_channels_last(y, cf)


# -- pooling ------------------------------------------------------------------------------

_NO_DILATION = (1, 1)


def _pool_windows(x, ksize, strides, padding, fill, type_):
    if x.ndim != 4:
        raise ValueError(f"{type_} input must be 4-dimensional [N, H, W, C], got shape {list(x.shape)}")
    out_hw, pads = _geometry(x.shape[1:3], ksize, strides, _NO_DILATION, padding, type_)
    return _windows(_pad(x, pads, fill), ksize, strides, _NO_DILATION, out_hw), out_hw, pads


def _lowest(dtype):
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


def _argmax_flat(x, ksize, strides, padding):
    """Flat index into x of each window's first maximum, shaped [N, OH, OW, C] (MaxPoolGrad's routing)."""
    windows, (oh, ow), ((pt, _), (pl, _)) = _pool_windows(x, ksize, strides, padding, _lowest(x.dtype), "MaxPoolGrad")
    n, _, _, kh, kw, c = windows.shape
    k = windows.reshape(n, oh, ow, kh * kw, c).argmax(axis=3)
    h, w = x.shape[1], x.shape[2]
    rows = np.clip((np.arange(oh) * strides[0] - pt)[:, None, None] + k // kw, 0, h - 1)
    cols = np.clip((np.arange(ow) * strides[1] - pl)[:, None] + k % kw, 0, w - 1)
    return ((np.arange(n)[:, None, None, None] * h + rows) * w + cols) * c + np.arange(c)


# Pooling shape rules (TF's MaxPoolShape, AvgPoolShape): a 4-D input's windowed sizes.

def _pool_shape(x, *_, ksize, strides, padding):
    """[N, H, W, C] -> [N, OH, OW, C] (for MaxPoolGradGrad: the pooling of its input 0)."""
    xs = tuple(x.shape)
    if len(xs) != 4:
        raise ValueError(f"pooling input must be 4-dimensional [N, H, W, C], got shape {list(xs)}")
    return [primitives.meta((xs[0], *_windowed_sizes(xs[1:3], ksize, strides, _NO_DILATION, padding), xs[3]),
                               x.dtype)]


def _max_pool_grad_shape(x, *_, **__):
    """x's shape, of rank 4 (TF's UnchangedShapeWithRank 4)."""
    if len(x.shape) != 4:
        raise ValueError(f"MaxPoolGrad input must be 4-dimensional [N, H, W, C], got shape {list(x.shape)}")
    return [primitives.meta(x.shape, x.dtype)]


@op("MaxPool", dtypes=REAL_TYPES, shape=_pool_shape)
def _max_pool(x, ksize, strides, padding):
    windows, out_hw, _ = _pool_windows(x, ksize, strides, padding, _lowest(x.dtype), "MaxPool")
    if 0 in windows.shape[3:5] or 0 in out_hw:
        return np.zeros((x.shape[0], *out_hw, x.shape[3]), x.dtype)
    return windows.max(axis=(3, 4))


@op("MaxPoolGrad", dtypes=FLOATING_TYPES, shape=_max_pool_grad_shape)
def _max_pool_grad(x, y, dy, ksize, strides, padding):
    flat = _argmax_flat(x, ksize, strides, padding)
    dx = np.bincount(flat.ravel(), weights=dy.ravel(), minlength=x.size)
    return dx.reshape(x.shape).astype(x.dtype, copy=False)


@op("MaxPoolGradGrad", dtypes=FLOATING_TYPES, shape=_pool_shape)
def _max_pool_grad_grad(x, y, ddx, ksize, strides, padding):
    return ddx.ravel()[_argmax_flat(x, ksize, strides, padding)]


def _pool_attrs(op_):
    return {k: op_.get_attr(k) for k in ("ksize", "strides", "padding")}


@_max_pool.def_grad(reads_inputs=True, reads_outputs=True)
def _max_pool_grad_fn(op, dy):
    x, y = op.inputs[0], op.outputs[0]   # each window's gradient goes to its (first) maximum
    return execute(_max_pool_grad, (x, y, dy), _pool_attrs(op))


@_max_pool_grad.def_grad(reads_inputs=(0, 1))
def _max_pool_grad_grad_fn(op, ddx):
    x, y, _ = op.inputs                  # linear in dy: its adjoint gathers at the maxima
    return zeros_of(x), zeros_of(y), execute(_max_pool_grad_grad, (x, y, ddx), _pool_attrs(op))


@_max_pool_grad_grad.def_grad(reads_inputs=(0, 1))
def _max_pool_grad_grad_grad_fn(op, dy):
    x, y, _ = op.inputs                  # linear in ddx: its adjoint scatters to the maxima
    return zeros_of(x), zeros_of(y), execute(_max_pool_grad, (x, y, dy), _pool_attrs(op))


def _window_counts(in_hw, ksize, strides, padding):
    """[OH, OW] number of real (unpadded) elements in each window."""
    out_hw, pads = _geometry(in_hw, ksize, strides, _NO_DILATION, padding, "AvgPool")
    per_axis = []
    for size, k, st, o, (before, _) in zip(in_hw, ksize, strides, out_hw, pads, strict=True):
        start = np.arange(o) * st - before
        per_axis.append(np.minimum(start + k, size) - np.maximum(start, 0))
    return per_axis[0][:, None] * per_axis[1][None, :]


@op("AvgPool", dtypes=FLOATING_TYPES, shape=_pool_shape)
def _avg_pool(x, ksize, strides, padding):
    windows, out_hw, _ = _pool_windows(x, ksize, strides, padding, 0, "AvgPool")
    counts = _window_counts(x.shape[1:3], ksize, strides, padding)
    return (windows.sum(axis=(3, 4)) / counts[None, :, :, None].astype(x.dtype)).astype(x.dtype, copy=False)


@op("AvgPoolGrad", same_dtype=False, shape=_shape_from_sizes(0, 1, 4, "orig_input_shape"), shape_reads_inputs=True)
def _avg_pool_grad(input_shape, dy, ksize, strides, padding):
    shape = tuple(int(d) for d in input_shape)
    out_hw, pads = _geometry(shape[1:3], ksize, strides, _NO_DILATION, padding, "AvgPoolGrad")
    share = dy / _window_counts(shape[1:3], ksize, strides, padding)[None, :, :, None].astype(dy.dtype)
    cols = np.broadcast_to(share[:, :, :, None, None, :], (shape[0], *out_hw, *ksize, shape[3]))
    return _col2im(cols, shape, pads, strides, _NO_DILATION).astype(dy.dtype, copy=False)


@_avg_pool.def_grad(reads_inputs=False)
def _avg_pool_grad_fn(op, dy):
    x = op.inputs[0]                     # each window's gradient is shared by its real elements
    return execute(_avg_pool_grad, (_sizes(x), dy), _pool_attrs(op))


@_avg_pool_grad.def_grad(reads_inputs=False)
def _avg_pool_grad_grad_fn(op, ddx):
    return None, execute(_avg_pool, (ddx,), _pool_attrs(op))   # AvgPoolGrad is AvgPool's adjoint


def _pool_batch(kernel):
    """Pooling ops of images only (MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad): the batch folded
    into N, inputs shared by every example repeated (Note [batched convolutions])."""
    def rule(xs, batched, **attrs):
        size = primitives.batch_size_of(next(x for x, b in zip(xs, batched) if b))
        xs = primitives.stacked_all(xs, batched, size)
        y = execute(kernel, [_merge(x, 0) for x in xs], attrs)
        return _split(y, 0, size, _dims(xs[0])[1]), True
    return rule


for _kernel in (_max_pool, _max_pool_grad, _max_pool_grad_grad, _avg_pool):
    _kernel.def_batch(_pool_batch(_kernel))


@_avg_pool_grad.def_batch
def _avg_pool_grad_batch(xs, batched, **attrs):
    sizes, dy = xs
    if batched[0]:
        raise batching.NotBatchable                     # an input shape per example
    size = primitives.batch_size_of(dy)
    dx = execute(_avg_pool_grad, (_scaled(sizes, 0, size), _merge(dy, 0)), attrs)
    return _split(dx, 0, size, _dims(dy)[1]), True


def _pool(kernel, input, ksize, strides, padding, data_format, explicit_ok):  # noqa: A002
    type_ = kernel.type
    cf = _channels_first(data_format, ("NHWC", "NCHW"))
    x = input if type(input) is Tensor else convert_to_tensor(input)
    known_rank(x, type_)
    ksize = _spatial(ksize, "ksize", 2, cf, type_, default=1)
    strides = _spatial(strides, "strides", 2, cf, type_)
    if any(k <= 0 for k in ksize):
        raise InvalidArgumentError(None, type_, f"Sliding window ksize must be positive. The specified or inferred "
                                                f"ksize is: 1,{ksize[0]},{ksize[1]},1 [Op:{type_}]")
    if any(st <= 0 for st in strides):
        raise InvalidArgumentError(None, type_, f"Stride must be > 0, but got {min(strides)} [Op:{type_}]")
    padding = _padding(padding, 2, cf, type_, allow_explicit=explicit_ok)
    if not isinstance(padding, str):
        for (before, after), k in zip(padding, ksize, strict=True):
            if before >= k or after >= k:
                side, val = ("Left", before) if before >= k else ("Right", after)
                raise InvalidArgumentError(None, type_, f"{side} padding {val} needs to be smaller than the window "
                                                        f"size {k} [Op:{type_}]")
    if x._value.ndim != 4:
        raise InvalidArgumentError(None, type_, f"input must be 4-dimensional, got shape {list(x._value.shape)} "
                                                f"[Op:{type_}]")
    y = execute(kernel, (_to_channels_last(x, cf),), {"ksize": ksize, "strides": strides, "padding": padding})
    return _from_channels_last(y, cf)


@tf_export("nn.max_pool2d")
def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Maximum over ksize windows of an NHWC tensor.

    Args:
      ksize, strides: an int or a list of 1, 2 or 4 ints.
      padding: "SAME", "VALID" or explicit [[0, 0], [top, bottom], [left, right], [0, 0]].

    The gradient goes to the first maximum of each window.

    >>> import tapeflow as tf
    >>> tf.nn.max_pool2d(tf.reshape(tf.constant([1.0, 5.0, 3.0, 2.0]), [1, 2, 2, 1]), 2, 2, "VALID").numpy().ravel()
    array([5.], dtype=float32)
    """
    return _pool(_max_pool, input, ksize, strides, padding, data_format, explicit_ok=True)


@tf_export("nn.avg_pool2d")
def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Mean over ksize windows of an NHWC tensor; SAME windows average only real elements."""
    return _pool(_avg_pool, input, ksize, strides, padding, data_format, explicit_ok=False)


def _pool1d(fn, input, ksize, strides, padding, data_format):  # noqa: A002
    cf = _channels_first(data_format, ("NWC", "NCW"))
    x = input if type(input) is Tensor else convert_to_tensor(input)
    if known_rank(x, "MaxPool" if fn is max_pool2d else "AvgPool") != 3:
        raise ValueError(f"input must be 3-dimensional [N, W, C], got shape {list(x._value.shape)}")
    if cf:
        x = primitives.transpose(x, (0, 2, 1))
    if not isinstance(padding, str):
        padding = [[0, 0], [0, 0]] + [list(p) for p in (padding[1:] if not cf else [padding[2], padding[1]])]
    k = _spatial(ksize, "ksize", 1, cf, "MaxPool")
    st = _spatial(strides, "strides", 1, cf, "MaxPool")
    y = _drop_height(fn(_insert_height(x), (1, k[0]), (1, st[0]), padding))
    return primitives.transpose(y, (0, 2, 1)) if cf else y


@tf_export("nn.max_pool1d")
def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Maximum over windows of an NWC tensor (max_pool2d of height 1)."""
    return _pool1d(max_pool2d, input, ksize, strides, padding, data_format)


@tf_export("nn.avg_pool1d")
def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Mean over windows of an NWC tensor (avg_pool2d of height 1)."""
    return _pool1d(avg_pool2d, input, ksize, strides, padding, data_format)


def _pool_nd(fn2d, fn1d, input, ksize, strides, padding, data_format):  # noqa: A002
    rank = known_rank(input if isinstance(input, Tensor) else convert_to_tensor(input),
                      "MaxPool" if fn2d is max_pool2d else "AvgPool")
    if rank == 4:
        return fn2d(input, ksize, strides, padding, data_format or "NHWC")
    if rank == 3:
        return fn1d(input, ksize, strides, padding, data_format or "NWC")
    raise ValueError(f"`input.shape.rank` must be 3 or 4 (3-D pooling is not supported). Received: rank={rank}")


@tf_export("nn.max_pool")
def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """max_pool1d or max_pool2d, chosen by the rank of `input`."""
    return _pool_nd(max_pool2d, max_pool1d, input, ksize, strides, padding, data_format)


@tf_export("nn.avg_pool")
def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """avg_pool1d or avg_pool2d, chosen by the rank of `input`."""
    return _pool_nd(avg_pool2d, avg_pool1d, input, ksize, strides, padding, data_format)
