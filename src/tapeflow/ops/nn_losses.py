"""Cross-entropy losses of `tf.nn`: the two softmax cross-entropies (primitives
with their own kernels and rules) and the sigmoid ones (composites).

Split from `nn_ops` by concern; this module imports what it needs from `nn_ops`.
"""

import numpy as np

from tapeflow.framework.dtypes import FLOATING_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.shape_rules import static_int
from tapeflow.framework.shapes.symbolic_tensors import known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import math_ops, unary_ops
from tapeflow.ops.core import batching, half, primitives
from tapeflow.ops.core.primitives import unbroadcast
from tapeflow.ops.nn_ops import (
    _FLOAT_NP, _log_normalizer, _log_softmax, _rows, _scalar_like, _softmax, _tensor, _unrows, _zeros_like, relu,
)
from tapeflow.ops.core import basic_ops

# -- softmax cross-entropies --------------------------------------------------------
# Note [cross-entropy second output]: both ops return (loss, backprop) where
# backprop = d loss / d logits is a by-product of the forward pass.  The first
# order gradient scales the saved backprop; when something downstream used
# the gradient (second order), the gradient flowing into `backprop` adds the
# softmax Hessian-vector product.  Both ops declare `accepts_none=(1,)`: the gradient of
# an unused backprop reaches the rule as None, so first order pays nothing for it.

def _col(v):
    return primitives.expand_dims(v, -1)


def _softmax_hvp(logits, dbackprop):
    """d backprop / d logits applied to `dbackprop`: the softmax Jacobian (symmetric)."""
    s = execute(_softmax, (logits,), {})
    return (dbackprop - primitives.reduce_sum(dbackprop * s, -1, keepdims=True)) * s


@op("SoftmaxCrossEntropyWithLogits", dtypes=FLOATING_TYPES, num_outputs=2, shape=shape_rules.softmax_xent_shape,
    accepts_none=(1,), half=half.in_float32)
def _softmax_xent(logits, labels):
    if logits.ndim != 2 or labels.ndim != 2:
        raise ValueError(f"logits and labels must be 2-D, got logits {list(logits.shape)} and "
                         f"labels {list(labels.shape)}")
    try:
        shape = np.broadcast_shapes(logits.shape, labels.shape)
    except ValueError:
        raise ValueError(f"logits and labels must be broadcastable: logits_size={list(logits.shape)} "
                         f"labels_size={list(labels.shape)}") from None
    if labels.shape != shape:
        labels = np.broadcast_to(labels, shape)
    if logits.shape != shape:
        logits = np.broadcast_to(logits, shape)
    a, axis = _rows(logits)
    lab, _ = _rows(labels.astype(a.dtype, copy=False))
    e, total = _log_normalizer(a, axis)
    with np.errstate(divide="ignore"):                      # no classes: log 0, summed over nothing
        loss = np.sum(lab * (np.log(total) - a), axis=axis)     # -sum(labels * log softmax)
    e /= total
    e -= lab
    return loss.astype(logits.dtype, copy=False), _unrows(e, axis, shape, logits.dtype)


@_softmax_xent.def_batch
def _softmax_xent_batch(xs, batched):
    # the examples' rows one after another: one [B*N, C] cross-entropy (a shared single row
    # of labels or logits broadcasts against all of them as it is)
    size = primitives.batch_size_of(xs[batched.index(True)])
    full = _broadcast_dims(*(x._value.shape[1:] if b else x._value.shape for x, b in zip(xs, batched)))
    rows = []
    for x, b in zip(xs, batched, strict=True):
        shape = x._value.shape[1:] if b else x._value.shape
        if not b and shape[0] == 1:
            rows.append(x)
            continue
        x = x if b else primitives.broadcast_batch(x, size)
        if shape != full:
            if None in full:
                raise batching.NotBatchable                 # broadcast known only when the graph runs
            x = primitives.broadcast_to(x, primitives.prepend(size, full))
        rows.append(_as_rows(x))
    loss, backprop = execute(_softmax_xent, rows, {})
    return (_unfold(loss, size, full[:1]), _unfold(backprop, size, full)), True


def _unfold(t, size, dims):
    """The [B*N, ...] rows `t` as [B, N, ...] (example dims `dims`, None where unknown: read from `t`)."""
    known = list(dims[1:]) if None not in dims[1:] else primitives.dims_of(t)[1:]
    return primitives.reshape(t, [size, -1 if dims[0] is None else dims[0]] + known)


@_softmax_xent.def_grad(reads_inputs=(0,), reads_outputs=True)
def _softmax_xent_grad(op, dloss, dbackprop):
    logits, labels = op.inputs
    dcol = _col(dloss)
    dlogits = dcol * op.outputs[1]                                   # dloss * (softmax - labels)
    dlabels = dcol * -execute(_log_softmax, (logits,), {})           # dloss * -log softmax
    if dbackprop is not None:                                        # Note [cross-entropy second output]
        dlogits = dlogits + _softmax_hvp(logits, dbackprop)
        dlabels = dlabels - dbackprop                                # d backprop / d labels = -I
    return (unbroadcast(dlogits, logits._value.shape, like=logits),
            unbroadcast(dlabels, labels._value.shape, like=labels))


@op("SparseSoftmaxCrossEntropyWithLogits", dtypes=FLOATING_TYPES, same_dtype=False, num_outputs=2,
    shape=shape_rules.sparse_softmax_xent_shape, accepts_none=(1,), fresh_outputs=True, half=half.in_float32)
def _sparse_softmax_xent(logits, labels):
    if logits.ndim != 2:
        raise ValueError(f"logits must be 2-D, but got shape {list(logits.shape)}")
    if labels.ndim != 1 or labels.shape[0] != logits.shape[0]:
        raise ValueError(f"logits and labels must have the same first dimension, got logits shape "
                         f"{list(logits.shape)} and labels shape {list(labels.shape)}")
    n, classes = logits.shape
    if classes == 0:
        raise ValueError(f"Must have at least one class, but got logits shape {list(logits.shape)}")
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        bad = (labels < 0) | (labels >= classes)
        raise ValueError(f"Received a label value of {int(labels[np.argmax(bad)])} which is outside the valid "
                         f"range of [0, {classes}).  Label values: {' '.join(map(str, labels.tolist()))}")
    a, axis = _rows(logits)
    e, total = _log_normalizer(a, axis)
    e /= total
    at = (labels, np.arange(n)) if axis == 0 else (np.arange(n), labels)
    loss = np.log(total).reshape(n) - a[at]                 # log-sum-exp - logit of the label
    e[at] -= 1
    return loss.astype(logits.dtype, copy=False), _unrows(e, axis, logits.shape, logits.dtype)


@_sparse_softmax_xent.def_batch
def _sparse_softmax_xent_batch(xs, batched):
    # the examples' rows one after another: one [B*N, C] cross-entropy with B*N labels
    size = primitives.batch_size_of(xs[batched.index(True)])
    logits, labels = primitives.stacked_all(xs, batched, size)
    dims = logits._value.shape[1:]
    rows = primitives.reshape(logits, [-1, primitives.dims_of(logits)[-1] if dims[1] is None else dims[1]])
    loss, backprop = execute(_sparse_softmax_xent, (rows, primitives.reshape(labels, (-1,))), {})
    return (_unfold(loss, size, dims[:1]), _unfold(backprop, size, dims)), True


@_sparse_softmax_xent.def_grad(reads_inputs=(0,), reads_outputs=True)
def _sparse_softmax_xent_grad(op, dloss, dbackprop):
    logits = op.inputs[0]
    dlogits = _col(dloss) * op.outputs[1]                            # dloss * (softmax - onehot)
    if dbackprop is not None:                                        # Note [cross-entropy second output]
        dlogits = dlogits + _softmax_hvp(logits, dbackprop)
    return dlogits, None


def _float_logits(logits):
    x = _tensor(logits)
    if x._value.dtype not in _FLOAT_NP:
        raise InvalidArgumentError(
            None, "SoftmaxCrossEntropyWithLogits",
            f"Value for attr 'T' of {x.dtype.name} is not in the list of allowed values: half, bfloat16, float, double")
    return x


@tf_export("nn.softmax_cross_entropy_with_logits")
def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """Cross-entropy between `labels` (a distribution per row) and softmax(`logits`) along `axis`.

    `labels` is cast to the dtype of `logits` and receives a gradient too.
    Half-precision logits are computed in float32.

    Returns:
      The loss, of the shape of `logits` without `axis`.

    >>> import tapeflow as tf
    >>> tf.nn.softmax_cross_entropy_with_logits(labels=[[0.0, 1.0]], logits=[[0.0, 0.0]]).numpy()
    array([0.6931472], dtype=float32)
    """
    logits = _float_logits(logits)
    labels = _tensor(labels)
    known_rank(logits, "SoftmaxCrossEntropyWithLogits")
    known_rank(labels, "SoftmaxCrossEntropyWithLogits")
    if labels._value.dtype != logits._value.dtype:
        labels = basic_ops.cast(labels, logits.dtype)
    rank = logits._value.ndim
    if rank == 0:
        logits, labels = primitives.reshape(logits, (1,)), primitives.reshape(labels, (1,))
        rank = 1
    if labels._value.ndim > rank:
        raise ValueError(f"labels of shape {list(labels._value.shape)} have a higher rank than logits of shape "
                         f"{list(logits._value.shape)}.")
    axis = static_int(axis, "axis", "SoftmaxCrossEntropyWithLogits")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(None, "SoftmaxCrossEntropyWithLogits",
                                   f"axis {axis} is out of range for logits of rank {rank}.")
    axis %= rank
    if axis != rank - 1:
        lab_rank = labels._value.ndim
        for _ in range(rank - lab_rank):
            labels = primitives.expand_dims(labels, 0)
        perm = [i for i in range(rank) if i != axis] + [axis]
        logits, labels = primitives.transpose(logits, perm), primitives.transpose(labels, perm)
    try:
        full = _broadcast_dims(logits._value.shape, labels._value.shape)
    except ValueError:
        raise InvalidArgumentError(
            None, "SoftmaxCrossEntropyWithLogits",
            f"logits and labels must be broadcastable: logits_size={list(logits._value.shape)} "
            f"labels_size={list(labels._value.shape)} [Op:SoftmaxCrossEntropyWithLogits]") from None
    if None in logits._value.shape or None in labels._value.shape:
        return _softmax_xent_unknown_dims(logits, labels)
    logits = _flatten_outer(logits, full)
    labels = _flatten_outer(labels, full)
    loss, _ = execute(_softmax_xent, (logits, labels), {})
    return loss if len(full) == 2 else primitives.reshape(loss, full[:-1])


def _softmax_xent_unknown_dims(logits, labels):
    """The cross-entropy of inputs with unknown dims (graphs), TensorFlow's way: both flattened
    to [rows, classes] (a single row of labels broadcasts), the loss shaped like logits without
    the class axis."""
    xshape, lshape = logits._value.shape, labels._value.shape
    dims = primitives.dims_of(logits)
    if len(xshape) > 2 and not all(d == 1 for d in lshape[:-1]):
        same = len(lshape) == len(xshape) and all(a is not None and a == b for a, b in zip(lshape, xshape[:-1]))
        if not same:                                 # labels' batch axes broadcast to the logits' ones
            labels = primitives.broadcast_to(labels, dims[:-1] + primitives.dims_of(labels)[-1:])
    logits2, labels2 = _as_rows(logits), _as_rows(labels)
    logits2, labels2 = _broadcast_ones(logits2, labels2), _broadcast_ones(labels2, logits2)
    loss, _ = execute(_softmax_xent, (logits2, labels2), {})
    return loss if len(xshape) == 2 else primitives.reshape(loss, dims[:-1])


def _broadcast_ones(t, other):
    """`t` broadcast on the axes where it has size 1 and `other` an unknown size (read when the
    graph runs).  TensorFlow's shape function merges such sizes into 1, a static shape its
    kernel contradicts when the unknown size is larger; broadcast first, the size stays unknown."""
    shape, other_shape = t._value.shape, other._value.shape
    if not any(d == 1 and o is None for d, o in zip(shape, other_shape, strict=True)):
        return t
    wanted = [od if d == 1 and o is None else td for d, o, td, od in
              zip(shape, other_shape, primitives.dims_of(t), primitives.dims_of(other), strict=True)]
    return primitives.broadcast_to(t, wanted)


def _as_rows(t):
    """`t` as a 2-D [rows, classes] tensor (its sizes read when a graph runs where unknown)."""
    shape = t._value.shape
    if len(shape) == 2:
        return t
    if not shape:
        return primitives.reshape(t, (1, 1))
    if all(d == 1 for d in shape[:-1]):
        return primitives.reshape(t, [1, primitives.dims_of(t)[-1]])
    return primitives.reshape(t, [-1, primitives.dims_of(t)[-1]])


def _flatten_outer(t, full):
    """`t` as a 2-D [rows, classes] tensor; broadcasts batch axes, keeps a single row for broadcasting."""
    shape = t._value.shape
    if len(full) == 2 and len(shape) == 2:
        return t
    if not shape:
        return primitives.reshape(t, (1, 1))
    if all(d == 1 for d in shape[:-1]):
        return primitives.reshape(t, (1, shape[-1]))
    if len(shape) != len(full) or any(a != b for a, b in zip(shape[:-1], full[:-1])):
        t = primitives.broadcast_to(t, full[:-1] + shape[-1:])
    return primitives.reshape(t, (-1, shape[-1]))


def _broadcast_dims(a, b):
    """NumPy broadcasting of two static shapes that may hold None (unknown) dimensions."""
    a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x is None or y is None:     # unknown against a known size other than 1: the known one
            out.append(y if x is None else x)
        else:
            raise ValueError(f"shapes {a} and {b} are not broadcastable")
    return tuple(out)


@tf_export("nn.sparse_softmax_cross_entropy_with_logits")
def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """Cross-entropy between integer class `labels` and softmax(`logits`) over the last axis.

    Args:
      labels: int32/int64 tensor of shape `logits.shape[:-1]`, values in [0, classes).
      logits: float tensor of shape [..., classes].

    Returns:
      The loss, of shape `labels.shape`, in the dtype of `logits`.

    Raises:
      ValueError: scalar logits, or label and logit shapes that do not match.
      InvalidArgumentError: a label out of range (on evaluation) or non-integer labels.

    >>> import tapeflow as tf
    >>> tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=[[0.0, 0.0]]).numpy()
    array([0.6931472], dtype=float32)
    """
    logits = _float_logits(logits)
    labels = _tensor(labels)
    known_rank(logits, "SparseSoftmaxCrossEntropyWithLogits")
    known_rank(labels, "SparseSoftmaxCrossEntropyWithLogits")
    if labels._value.dtype not in (np.int32, np.int64):
        raise InvalidArgumentError(
            None, "SparseSoftmaxCrossEntropyWithLogits",
            f"Value for attr 'Tlabels' of {labels.dtype.name} is not in the list of allowed values: int32, int64")
    lshape, xshape = labels._value.shape, logits._value.shape
    op_labels = labels
    if not xshape:
        raise ValueError(f"`logits` cannot be a scalar. Received logits={logits._value}`")
    if len(lshape) != len(xshape) - 1:
        raise ValueError(f"`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: labels.shape={lshape} "
                         f"of rank {len(lshape)} and logits.shape={xshape} of rank {len(xshape)}")
    if not shape_rules.compatible(lshape, xshape[:-1]):
        raise ValueError(f"`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
                         f"labels.shape={lshape} and logits.shape={xshape}")
    if len(xshape) != 2:
        logits = primitives.reshape(logits, [-1, xshape[-1] if xshape[-1] is not None else
                                            primitives.dims_of(logits)[-1]])
        labels = primitives.reshape(labels, (-1,))
    loss, _ = execute(_sparse_softmax_xent, (logits, labels), {})
    if len(xshape) == 2:
        return loss
    return primitives.reshape(loss, lshape if None not in lshape else primitives.dims_of(op_labels))


# -- sigmoid cross-entropies ------------------------------------------------------

def _same_shape_pair(labels, logits, fn):
    """labels and logits as tensors of one shape (their dtypes are checked by the arithmetic, like TF)."""
    if labels is None or logits is None:
        raise ValueError(f"Both labels and logits must be provided for {fn}.")
    logits, labels = _tensor(logits), _tensor(labels)
    if (labels._value.shape != logits._value.shape
            and not shape_rules.compatible(labels._value.shape, logits._value.shape)):
        raise ValueError(f"`logits` and `labels` must have the same shape, received "
                         f"({logits.shape} vs {labels.shape}).")
    return labels, logits


def _log1p_exp_neg_abs(x):
    """(relu(x), log(1 + exp(-|x|))) with the branches chosen at x >= 0, as TensorFlow does."""
    zeros = _zeros_like(x)
    nonneg = math_ops.greater_equal(x, zeros)
    relu_x = math_ops.where(nonneg, x, zeros)
    neg_abs = math_ops.where(nonneg, -x, x)
    return relu_x, unary_ops.log1p(unary_ops.exp(neg_abs))


@tf_export("nn.sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)), computed stably.

    Raises:
      ValueError: labels and logits of different shapes.

    >>> import tapeflow as tf
    >>> tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0], logits=[0.0]).numpy()
    array([0.6931472], dtype=float32)
    """
    labels, logits = _same_shape_pair(labels, logits, "sigmoid_cross_entropy_with_logits")
    relu_x, softplus_neg_abs = _log1p_exp_neg_abs(logits)
    return relu_x - logits * labels + softplus_neg_abs     # max(x, 0) - x z + log(1 + exp(-|x|))


@tf_export("nn.weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(labels, logits, pos_weight, name=None):
    """Sigmoid cross-entropy with the positive term weighted by `pos_weight`."""
    labels, logits = _same_shape_pair(labels, logits, "weighted_cross_entropy_with_logits")
    one = _scalar_like(1, logits)
    log_weight = one + (convert_to_tensor(pos_weight, dtype=logits.dtype) - one) * labels
    _, softplus_neg_abs = _log1p_exp_neg_abs(logits)
    # (1 - z) x + (1 + (q - 1) z) (log(1 + exp(-|x|)) + max(-x, 0))
    return (one - labels) * logits + log_weight * (softplus_neg_abs + relu(-logits))


@tf_export("nn.log_poisson_loss")
def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets, plus Stirling's term for targets > 1 when asked."""
    log_input = _tensor(log_input)
    targets = _tensor(targets, dtype=log_input.dtype) if not isinstance(targets, Tensor) else targets
    if targets._value.shape != log_input._value.shape and not shape_rules.compatible(targets._value.shape,
                                                                          log_input._value.shape):
        raise ValueError(f"log_input and targets must have the same shape ({log_input.shape} vs {targets.shape})")
    loss = unary_ops.exp(log_input) - log_input * targets
    if not compute_full_loss:
        return loss
    # z log z - z + 0.5 log(2 pi z), only where z > 1
    safe = math_ops.where(math_ops.greater(targets, _scalar_like(1, targets)), targets, math_ops.ones_like(targets))
    two_pi_z = _scalar_like(2 * np.pi, safe) * safe
    stirling = safe * math_ops.log(safe) - safe + _scalar_like(0.5, safe) * math_ops.log(two_pi_z)
    keep = math_ops.greater(targets, _scalar_like(1, targets))
    return loss + math_ops.where(keep, stirling, _zeros_like(stirling))
