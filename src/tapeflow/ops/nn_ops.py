"""Neural-network ops (`tf.nn`): activations, softmax and layers' helpers.

Primitives (own kernel and rule) where a composition would be slow or
unstable: Relu, Relu6, Elu, Selu, LeakyRelu, Softmax, LogSoftmax and BiasAdd.
The rest are built from other ops and need no rule.  The cross-entropies live
in `nn_losses` (re-exported here), convolutions and pooling in `conv_ops`.
"""

import math

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import executing_eagerly
from tapeflow.framework.dtypes import FLOATING_TYPES, REAL_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import (
    array_ops, join_ops, math_ops, random_ops, reduction_ops, scatter_ops, special_math_ops, unary_ops,
)
from tapeflow.ops.core import batching, half, primitives
from tapeflow.ops.core.batching import ELEMENTWISE, SAME_SHAPE
from tapeflow.ops.core.presets import unary_op
from tapeflow.ops.variables import Variable
from tapeflow.ops.core import basic_ops

_FLOAT_NP = dtypes.FLOAT_NP


def _tensor(x, dtype=None):
    return x if type(x) is Tensor and dtype is None else convert_to_tensor(x, dtype=dtype)


def _float_input(x, type_):
    """`x` as a floating tensor; other dtypes raise as TensorFlow's op `type_` does."""
    x = _tensor(x)
    if x._value.dtype not in _FLOAT_NP:
        raise InvalidArgumentError(None, type_, f"Value for attr 'T' of {x.dtype.name} is not in the list of allowed "
                                                f"values: half, bfloat16, float, double [Op:{type_}]")
    return x


def _scalar_like(value, t):
    return Tensor(np.asarray(value, t._value.dtype))


def _zeros_like(t):
    shape = t._value.shape
    return basic_ops.zeros_like(t) if shape is None or None in shape else Tensor(np.zeros(shape, t._value.dtype))


# -- rectifiers ------------------------------------------------------------------

# Activations are elementwise: x's shape, of any rank (presets.unary_op).  `into` writes
# into a given buffer (Note [buffer reuse] in graph/executor.py).  Relu and ReluGrad select
# and need no arithmetic: their half kernels work on the bits (Note [half precision]).

def _relu_into(x, out):
    return np.maximum(x, np.zeros((), x.dtype), out=out)


@unary_op("Relu", dtypes=REAL_TYPES, into=_relu_into, half=half.relu)
def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


@_relu.def_grad(reads_inputs=False, reads_outputs=True)
def _relu_grad(op, dy):
    return execute(_relu_grad_op, (dy, op.outputs[0]), {})   # dy where relu(x) > 0


def _relu_grad_into(dy, y, out):
    return np.multiply(dy, (y > 0).astype(dy.dtype), out=out)


@op("ReluGrad", dtypes=REAL_TYPES, shape=shape_rules.merge_both_shape, unknown_rank=True, into=_relu_grad_into,
    batch=SAME_SHAPE, half=half.relu_grad)
def _relu_grad_op(dy, y):
    # a masked product, like TF's kernel: inf/nan in dy give nan where y <= 0 (and ~10x faster than np.where)
    return dy * (y > 0).astype(dy.dtype)


@_relu_grad_op.def_grad(reads_inputs=(1,))
def _relu_grad_grad(op, ddx):
    y = op.inputs[1]                     # linear in dy with the same mask; y only selects
    return execute(_relu_grad_op, (ddx, y), {}), _zeros_like(y)


@tf_export("nn.relu")
def relu(features, name=None):
    """max(features, 0), elementwise; integers allowed.

    >>> import tapeflow as tf
    >>> tf.nn.relu([-1.0, 2.0]).numpy()
    array([0., 2.], dtype=float32)
    """
    return execute(_relu, (_tensor(features),), {})


@unary_op("Relu6", dtypes=REAL_TYPES)
def _relu6(x):
    return np.minimum(np.maximum(x, np.zeros((), x.dtype)), np.asarray(6, x.dtype))


@_relu6.def_grad(reads_inputs=False, reads_outputs=True)
def _relu6_grad(op, dy):
    y = op.outputs[0]                    # 1 where 0 < x < 6, that is where y > 0 and 6 - y > 0; 0 elsewhere
    # two ReluGrad masks: y stays connected, with a zero second derivative (TF's Relu6GradGrad)
    return execute(_relu_grad_op, (execute(_relu_grad_op, (dy, y), {}), _scalar_like(6, y) - y), {})


@tf_export("nn.relu6")
def relu6(features, name=None):
    """min(max(features, 0), 6), elementwise."""
    return execute(_relu6, (_tensor(features),), {})


@unary_op("LeakyRelu", dtypes=FLOATING_TYPES)
def _leaky_relu(x, alpha):
    return np.where(x > 0, x, x * np.asarray(alpha, x.dtype))


@_leaky_relu.def_grad(reads_inputs=(0,))
def _leaky_relu_grad(op, dy):
    x = op.inputs[0]                     # 1 where x > 0, alpha elsewhere
    alpha = _scalar_like(op.get_attr("alpha"), dy)
    # ReluGrad(dy, x) is dy where x > 0 and keeps x connected, with a zero second derivative (TF's LeakyReluGradGrad)
    positive = execute(_relu_grad_op, (dy, x), {})
    return math_ops.where(math_ops.greater(x, _zeros_like(x)), positive, dy * alpha)


@tf_export("nn.leaky_relu")
def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, alpha * features elsewhere; integers are computed in float32."""
    x = _tensor(features)
    if x._value.dtype.kind in "iu":
        x = basic_ops.cast(x, dtypes.float32)
    if isinstance(alpha, Tensor):
        alpha = alpha._value
    # alpha stays a Python float: TensorFlow rounds it to float32 (its attr type), so float64
    # inputs see 0.2 as 0.20000000298 there; tests/test_deliberate_differences.py.
    return execute(_leaky_relu, (x,), {"alpha": float(np.asarray(alpha))})


@unary_op("Elu", dtypes=FLOATING_TYPES)
def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, np.zeros((), x.dtype))))


# Note [negative-side select]: the Elu and Selu rules pick the exp branch where y < 0 and the
# linear one elsewhere, as TensorFlow's EluGrad/SeluGrad kernels do: at x = 0 the slope is the
# right-hand one (1 for elu, scale for selu) and the second derivative 0, and a NaN input
# (y = NaN, not < 0) takes the linear slope rather than NaN.

@_elu.def_grad(reads_inputs=False, reads_outputs=True)
def _elu_grad(op, dy):
    y = op.outputs[0]                    # exp(x) = elu(x) + 1 where x < 0, 1 elsewhere (Note [negative-side select])
    return math_ops.where(math_ops.less(y, _zeros_like(y)), dy * (y + _scalar_like(1, y)), dy)


@tf_export("nn.elu")
def elu(features, name=None):
    """x where x > 0, exp(x) - 1 elsewhere."""
    return execute(_elu, (_tensor(features),), {})


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@unary_op("Selu", dtypes=FLOATING_TYPES)
def _selu(x):
    neg = np.expm1(np.minimum(x, np.zeros((), x.dtype))) * np.asarray(_SELU_ALPHA, x.dtype)
    return np.asarray(_SELU_SCALE, x.dtype) * np.where(x > 0, x, neg)


@_selu.def_grad(reads_inputs=False, reads_outputs=True)
def _selu_grad(op, dy):
    y = op.outputs[0]                    # scale*alpha*exp(x) = y + scale*alpha where x < 0, scale elsewhere
    scale, shift = _scalar_like(_SELU_SCALE, y), _scalar_like(_SELU_SCALE * _SELU_ALPHA, y)
    return math_ops.where(math_ops.less(y, _zeros_like(y)), dy * (y + shift), dy * scale)   # Note [negative-side select]


@tf_export("nn.selu")
def selu(features, name=None):
    """Scaled ELU: scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    return execute(_selu, (_tensor(features),), {})


# -- softmax -------------------------------------------------------------------------

# Note [short rows]: NumPy reduces (and broadcasts over) a short contiguous
# last axis slowly, one inner loop per row.  Few classes per row is the common
# case for softmax, so short rows are processed class-major: on a transposed
# [classes, rows] copy, where every reduction and broadcast runs along long
# contiguous rows (several times faster), and transposed back at the end.

def _rows(x):
    """(array, axis): a fresh copy of x as 2-D [rows, classes] or, for short rows, class-major
    [classes, rows] (Note [short rows]); `axis` is the class axis.  (Half precision reaches the
    kernels as float32: Note [half precision] in ops/core/half.py.)"""
    c = x.shape[-1]
    x2 = x.reshape(math.prod(x.shape[:-1]), c)       # not -1, which a size-0 class axis leaves undetermined
    if c <= 32 and x2.shape[0] > 1:
        return np.array(x2.T, order="C"), 0      # always a copy: callers shift it in place
    return np.array(x2), 1


def _unrows(a, axis, shape, dtype):
    """Inverse of `_rows`: back to `shape` and `dtype`, C-contiguous."""
    a = np.ascontiguousarray(a.T) if axis == 0 else a
    return a.reshape(shape).astype(dtype, copy=False)


def _log_normalizer(a, axis):
    """Shifts `a` in place by its maximum along `axis`; returns (exp(a), sum of exp(a)) with kept dims."""
    if a.shape[axis]:
        a -= a.max(axis=axis, keepdims=True)
    e = np.exp(a)
    return e, e.sum(axis=axis, keepdims=True)


def _check_rank1(x):
    if x.ndim < 1:
        raise ValueError(f"logits must have >= 1 dimension, got {list(x.shape)}")


# Softmax and LogSoftmax work along the last axis: x's shape, at least a vector (TF's
# UnchangedShapeWithRankAtLeast 1); for an input of unknown rank, unknown rank.

@op("Softmax", dtypes=FLOATING_TYPES, shape=shape_rules.at_least_rank1_same_shape, unknown_rank=shape_rules.rank_unknown,
    batch=ELEMENTWISE, half=half.in_float32)     # along the last axis, which the batch axis leaves in place
def _softmax(x):
    _check_rank1(x)
    a, axis = _rows(x)
    e, total = _log_normalizer(a, axis)
    e /= total
    return _unrows(e, axis, x.shape, x.dtype)


@_softmax.def_grad(reads_outputs=True, reads_inputs=False)
def _softmax_grad(op, dy):
    y = op.outputs[0]                    # dx = (dy - <dy, y>) * y
    return (dy - primitives.reduce_sum(dy * y, -1, keepdims=True)) * y


@op("LogSoftmax", dtypes=FLOATING_TYPES, shape=shape_rules.at_least_rank1_same_shape,
    unknown_rank=shape_rules.rank_unknown, batch=ELEMENTWISE, half=half.in_float32)
def _log_softmax(x):
    _check_rank1(x)
    a, axis = _rows(x)
    _, total = _log_normalizer(a, axis)
    if a.size:                           # no classes: total is 0, and there is nothing to shift
        a -= np.log(total)
    return _unrows(a, axis, x.shape, x.dtype)


@_log_softmax.def_grad(reads_inputs=False, reads_outputs=True)
def _log_softmax_grad(op, dy):
    y = op.outputs[0]                    # dx = dy - sum(dy) * softmax(x)
    return dy - primitives.reduce_sum(dy, -1, keepdims=True) * unary_ops.exp(y)


def _along_axis(kernel, logits, axis):
    """Applies a last-axis op along `axis` by swapping that axis to the end and back."""
    x = _tensor(logits)
    rank = x._value.ndim
    if axis is None or axis == -1 or (rank and axis == rank - 1):
        return execute(kernel, (x,), {})
    rank = known_rank(x, kernel.type)                   # another axis: swapped to the end and back
    if isinstance(axis, Tensor):
        axis = shape_rules.static_int(axis, "axis", kernel.type)
    if not -rank <= axis < rank:
        raise InvalidArgumentError(
            None, kernel.type,
            f"`dim` must be in the range [{-rank}, {rank}) where {rank} is the number of dimensions in the input. "
            f"Received: dim={axis}")
    perm = list(range(rank))
    perm[axis % rank], perm[-1] = perm[-1], perm[axis % rank]
    swapped = primitives.transpose(x, perm)
    return primitives.transpose(execute(kernel, (swapped,), {}), perm)


@tf_export("nn.softmax", "math.softmax")
def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits)) along `axis` (default: the last).

    Raises:
      InvalidArgumentError: scalar logits, an axis out of range or a non-float dtype.

    >>> import tapeflow as tf
    >>> tf.nn.softmax([0.0, 0.0]).numpy()
    array([0.5, 0.5], dtype=float32)
    """
    return _along_axis(_softmax, logits, axis)


@tf_export("nn.log_softmax", "math.log_softmax")
def log_softmax(logits, axis=None, name=None):
    """logits - log(sum(exp(logits))) along `axis` (default: the last), computed stably."""
    return _along_axis(_log_softmax, logits, axis)


# -- smooth activations (composites) ------------------------------------------------

@tf_export("nn.gelu")
def gelu(features, approximate=False, name=None):
    """Gaussian error linear unit: x * Phi(x); `approximate` uses the tanh formula.

    >>> import tapeflow as tf
    >>> round(float(tf.nn.gelu(1.0)), 4)
    0.8413
    """
    x = _tensor(features)
    if x._value.dtype not in _FLOAT_NP:
        raise ValueError(f"`features.dtype` must be a floating point tensor. Received: features.dtype={x.dtype!r}")
    half = _scalar_like(0.5, x)
    if approximate:            # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        inner = _scalar_like(0.7978845608028654, x) * (x + _scalar_like(0.044715, x) * (x * x * x))
        return half * x * (_scalar_like(1, x) + unary_ops.tanh(inner))
    return half * x * (_scalar_like(1, x) + special_math_ops.erf(x * _scalar_like(0.7071067811865476, x)))


@tf_export("nn.silu", "nn.swish")
def silu(features, beta=1.0, name=None):
    """x * sigmoid(beta * x) (also `swish`)."""
    x = _tensor(features)
    if isinstance(beta, (int, float)) and beta == 1.0:
        return x * unary_ops.sigmoid(x)
    return x * unary_ops.sigmoid(x * convert_to_tensor(beta, dtype=x.dtype))


swish = silu


# -- layer helpers -------------------------------------------------------------------

@tf_export("nn.bias_add")
def bias_add(value, bias, data_format=None, name=None):
    """Adds the 1-D `bias` along the channel axis of `value` (last for N..C, 1 for NC..).

    Raises:
      ValueError: an unknown data_format or a value of rank < 2.
      InvalidArgumentError: a bias that is not 1-D or does not match the channels.
    """
    value = _tensor(value)
    # eagerly a tensor or variable bias keeps its dtype (a mismatch fails in the op); graphs convert
    # it to value's dtype, which fails with ValueError, as TensorFlow's bias_add does
    eager_tensor = executing_eagerly() and isinstance(bias, (Tensor, Variable))
    bias = convert_to_tensor(bias) if eager_tensor else _tensor(bias, dtype=value.dtype)
    if data_format is not None and not (data_format.startswith("NC")
                                        or data_format.startswith("N") and data_format.endswith("C")):
        raise ValueError(f"data_format must be of the form `N...C` or `NC...`, got {data_format!r}.")
    channels_first = data_format is not None and data_format.startswith("NC")
    known_rank(value, "BiasAdd")
    known_rank(bias, "BiasAdd")
    shape, bshape = value._value.shape, bias._value.shape
    if len(bshape) != 1:
        raise InvalidArgumentError(None, "BiasAdd", f"Biases must be 1D: {list(bshape)} [Op:BiasAdd]")
    if len(shape) < 2:
        raise InvalidArgumentError(None, "BiasAdd", f"Input tensor must be at least 2D: {list(shape)} [Op:BiasAdd]")
    axis = 1 if channels_first else len(shape) - 1
    if shape[axis] is not None and bshape[0] is not None and shape[axis] != bshape[0]:
        raise InvalidArgumentError(
            None, "BiasAdd", f"Must provide as many biases as the {'channel' if channels_first else 'last'} dimension "
                             f"of the input tensor: "
                             f"{list(bshape)} vs. {list(shape)} [Op:BiasAdd]")
    return execute(_bias_add, (value, bias), {"data_format": "NCHW" if channels_first else "NHWC"})


@op("BiasAdd", dtypes=dtypes.NUMERIC_TYPES, shape=shape_rules.bias_add_shape, accepts_indexed_slices=True,
    half=half.in_float32)
def _bias_add(value, bias, data_format):
    axis = 1 if data_format == "NCHW" else value.ndim - 1
    if bias.ndim != 1 or value.ndim < 2 or value.shape[axis] != bias.shape[0]:    # graphs: checked when run
        raise ValueError(f"Must provide as many biases as the {'channel' if axis == 1 else 'last'} dimension of "
                         f"the input tensor: {list(bias.shape)} vs. {list(value.shape)}")
    if axis == 1 and value.ndim > 2:
        bias = bias.reshape((-1,) + (1,) * (value.ndim - 2))
    return np.add(value, bias)


@_bias_add.def_batch
def _bias_add_batch(xs, batched, data_format):
    value, bias = xs
    if batched == (True, False) and data_format != "NCHW":
        return execute(_bias_add, xs, {"data_format": data_format}), True     # the channels stay last
    rank = batching.example_rank(value, batched[0])
    after = rank - 2 if data_format == "NCHW" else 0    # example axes after the channel axis
    if after:                                           # y = x + b, b's entries along the channel axis
        bias = primitives.insert_axes(bias, bias._value.ndim, after)
    if batched[1] and rank - 1 - after:                 # a batched b: its batch axis stays first
        bias = primitives.insert_axes(bias, 1, rank - 1 - after)
    return math_ops.add(value, bias), True


@_bias_add.def_grad(reads_inputs=False)
def _bias_add_grad(op, dy):
    # d(x + b) = dx + db, db summed over all but the channel axis.  dy may be an IndexedSlices
    # (a gather after the op): x gets it as it is, as in TensorFlow; its values hold every row.
    value = op.inputs[0]
    axis = 1 if op.get_attr("data_format") == "NCHW" else value._value.ndim - 1
    if 1 in op.skip_input_indices:
        return dy, None
    rows = dy.values if isinstance(dy, IndexedSlices) else dy
    return dy, primitives.reduce_sum(rows, [a for a in range(value._value.ndim) if a != axis])


@tf_export("nn.l2_loss")
def l2_loss(t, name=None):
    """sum(t ** 2) / 2.

    >>> import tapeflow as tf
    >>> float(tf.nn.l2_loss([1.0, 2.0]))
    2.5
    """
    t = _float_input(t, "L2Loss")
    return primitives.reduce_sum(t * t) * _scalar_like(0.5, t)


@tf_export("nn.moments")
def moments(x, axes, shift=None, keepdims=False, name=None):
    """Mean and variance of `x` over `axes`; half-precision inputs are reduced in float32.

    Returns:
      (mean, variance), with the reduced axes kept as size 1 when `keepdims`.
    """
    x = _tensor(x)
    y = basic_ops.cast(x, dtypes.float32) if x._value.dtype in (np.float16, dtypes.bfloat16._np) else x
    mean = reduction_ops.reduce_mean(y, axes, keepdims=True)
    # Note: unlike TensorFlow, the mean is not stop_gradient-ed here; first-order
    # gradients agree exactly and second-order ones are then correct.
    variance = reduction_ops.reduce_mean(math_ops.squared_difference(y, mean), axes, keepdims=True)
    if not keepdims:
        reduced = list(primitives._axes(axes, y._value.ndim))
        if reduced:
            mean, variance = array_ops.squeeze(mean, reduced), array_ops.squeeze(variance, reduced)
    if y is not x:
        mean, variance = basic_ops.cast(mean, x.dtype), basic_ops.cast(variance, x.dtype)
    return mean, variance


@tf_export("nn.batch_normalization")
def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, with broadcasting.

    `offset` and `scale` may be None (0 and 1).
    """
    x = _tensor(x)
    mean, variance = (_tensor(v, dtype=x.dtype) if not isinstance(v, Tensor) else v for v in (mean, variance))
    inv = unary_ops.rsqrt(variance + _scalar_like(variance_epsilon, variance))
    if scale is not None:
        inv = inv * (scale if isinstance(scale, Tensor) else convert_to_tensor(scale, dtype=inv.dtype))
    shift = -mean * inv
    if offset is not None:
        shift = (offset if isinstance(offset, Tensor) else convert_to_tensor(offset, dtype=inv.dtype)) + shift
    return x * basic_ops.cast(inv, x.dtype) + basic_ops.cast(shift, x.dtype)


@tf_export("nn.dropout")
def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zeroes elements of `x` with probability `rate` and scales the rest by 1 / (1 - rate).

    Args:
      x: a floating point tensor.
      rate: a float (or scalar tensor) in [0, 1).
      noise_shape: the shape of the keep/drop mask, broadcast against `x`; None
        entries take x's dimension.
      seed: an op-level seed for `tf.random`.

    Raises:
      ValueError: rate out of range or not a scalar, or x not floating point.

    >>> import tapeflow as tf
    >>> y = tf.nn.dropout(tf.ones([1000]), rate=0.5)
    >>> sorted(set(y.numpy().tolist()))
    [0.0, 2.0]
    """
    x = _tensor(x)
    if x._value.dtype not in _FLOAT_NP:
        raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be scaled. "
                         f"Received: x_dtype={x.dtype!r}")
    if isinstance(rate, SymbolicTensor) and rate._value.ndim == 0 and constant_value(rate) is None:
        rate_t = basic_ops.cast(rate, x.dtype)           # a rate known only when the graph runs
        scale, threshold = math_ops.reciprocal(_scalar_like(1, x) - rate_t), rate_t
    else:
        rate_value = constant_value(rate) if isinstance(rate, Tensor) else rate    # None: a non-scalar tensor
        if rate_value is None or np.ndim(rate_value):
            raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: rate={rate!r}")
        rate_value = float(np.asarray(rate_value))
        if not 0 <= rate_value < 1:
            raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). Received: rate={rate!r}")
        scale, threshold = _scalar_like(1.0 / (1.0 - rate_value), x), _scalar_like(rate_value, x)
    scaled = x * scale
    noise = random_ops.uniform(_noise_shape(x, noise_shape), dtype=x.dtype, seed=seed)
    keep = math_ops.greater_equal(noise, threshold)
    return math_ops.where(keep, scaled, _scalar_like(0, x))


def _noise_shape(x, noise_shape):
    """dropout's mask shape: x's, or `noise_shape` with None entries taken from x (read at run time if unknown)."""
    known_rank(x, "dropout")
    shape = x._value.shape
    if noise_shape is None:
        return shape if None not in shape else basic_ops.shape(x)
    if isinstance(noise_shape, SymbolicTensor):
        return noise_shape
    dims = noise_shape._value.tolist() if isinstance(noise_shape, Tensor) else list(noise_shape)
    if any(d is None for d in dims) and None in shape:
        x_dims = primitives.dims_of(x)
        dims = [x_dims[i] if d is None and i < len(shape) else d for i, d in enumerate(dims)]
    else:
        dims = [shape[i] if d is None and i < len(shape) else d for i, d in enumerate(dims)]
    static = tuple(None if isinstance(d, Tensor) else int(d) for d in dims)
    try:
        shape_rules.broadcast_shapes(static, shape)
    except ValueError:
        raise InvalidArgumentError(None, "SelectV2", f"condition {list(static)}, then {list(shape)}, and "
                                                     f"else [] must be broadcastable [Op:SelectV2]") from None
    return static if None not in static else dims


@tf_export("nn.embedding_lookup")
def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of `params` at `ids`.

    Args:
      params: a tensor or Variable, or a list of them holding one table split
        by rows with TensorFlow's "div" strategy (the first `total % n` parts
        have one row more).
      ids: integer ids into the (whole) table.
      max_norm: if set, embeddings with a larger l2 norm are scaled down to it.

    On Variables the gradient is an IndexedSlices (one per part).

    Raises:
      ValueError: an empty params list.
      InvalidArgumentError: an id out of range.
    """
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Length of params is currently 0. Need at least one param.")
        ids = _tensor(ids)
        if len(params) == 1:
            out = scatter_ops.gather(params[0], ids)
        elif isinstance(ids._value, np.ndarray) and None not in [_rows_of(p) for p in params]:
            out = _partitioned_lookup(params, ids)
        else:                            # ids known only when a graph runs: one concatenated table
            out = scatter_ops.gather(join_ops.concat([_tensor(p) for p in params], 0), ids)
    else:
        out = scatter_ops.gather(params, ids)
    if max_norm is None:
        return out
    # each embedding (the trailing axes taken from params) is scaled down to norm max_norm
    axes = tuple(range(_tensor(ids)._value.ndim, out._value.ndim))
    norm = unary_ops.sqrt(primitives.reduce_sum(out * out, axes, keepdims=True)) if axes else unary_ops.abs(out)
    limit = _scalar_like(max_norm, out)
    factor = math_ops.where(math_ops.greater(norm, limit), limit / norm, math_ops.ones_like(norm))
    return out * factor


def _rows_of(p):
    return p.shape[0] if isinstance(p, Variable) else _tensor(p)._value.shape[0]


def _partitioned_lookup(params, ids):
    """Lookup in a row-split ("div") table: gather from each part, then put rows back in id order."""
    flat = np.asarray(ids._value).reshape(-1).astype(np.int64)
    if not flat.size:
        return scatter_ops.gather(params[0], ids)
    sizes = [_rows_of(p) for p in params]
    total = int(sum(sizes))
    bad = (flat < 0) | (flat >= total)
    if bad.any():
        raise InvalidArgumentError(None, "GatherV2", f"indices[{int(np.argmax(bad))}] = {int(flat[np.argmax(bad)])} "
                                                     f"is not in [0, {total}) [Op:GatherV2]")
    per, extras = divmod(total, len(params))
    cut = extras * (per + 1)
    part = np.where(flat < cut, flat // (per + 1), extras + (flat - cut) // max(per, 1))
    local = np.where(flat < cut, flat % (per + 1), (flat - cut) % max(per, 1))
    rows, positions = [], []
    for p, table in enumerate(params):
        where_p = np.flatnonzero(part == p)
        if where_p.size:
            rows.append(scatter_ops.gather(table, Tensor(local[where_p].astype(ids._value.dtype))))
            positions.append(where_p)
    gathered = rows[0] if len(rows) == 1 else join_ops.concat(rows, 0)
    # Placing rows with a segment sum keeps each part's gradient dense, so a
    # Variable part still gets IndexedSlices from its own gather.
    order = Tensor(np.concatenate(positions).astype(np.int32))
    placed = scatter_ops.unsorted_segment_sum(gathered, order, flat.size)
    rest = placed._value.shape[1:]
    if None in rest:                     # graphs: row sizes read at run time
        return primitives.reshape(placed, list(ids._value.shape) + primitives.dims_of(placed)[1:])
    return primitives.reshape(placed, ids._value.shape + rest)
