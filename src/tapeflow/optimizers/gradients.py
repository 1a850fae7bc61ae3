"""The gradients of a Keras `apply_gradients`: the pairs checked, missing gradients
dropped with a warning, clipping, and the two helpers that give sparse gradients
Keras's numbers.

Note [sparse updates]: an `IndexedSlices` gradient goes through each update
exactly as Keras 3's TensorFlow backend takes it, since that is what fixes the
numbers.  Elementwise products with a scalar keep it sparse (its values are
scaled), subtracting it from or adding it to a dense tensor densifies it (rows
with repeated indices summed, `tf.convert_to_tensor`), and a sparse delta is
written with `scatter_add`/`scatter_sub`, repeated rows one after the other.
So plain SGD changes only the touched rows, while SGD with momentum and Adam
decay every row of their slots and move every row whose slot is non-zero, as
TensorFlow's Keras does; Adam's second moment sums the squares of repeated
rows' gradients (not the square of their sum).  The TF1 optimizers
(v1_optimizers.py) follow their own, different rules.
"""

import warnings

from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import clip_ops, math_ops, scatter_ops, unary_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.variables import Variable


def checked_pairs(grads_and_vars):
    """The (gradient, variable) pairs of `apply_gradients`, checked."""
    pairs = list(grads_and_vars)
    if not pairs:
        raise ValueError("apply_gradients got no (gradient, variable) pairs: `grads_and_vars` is empty. Pass "
                         "zip(gradients, variables) with at least one pair.")
    for i, pair in enumerate(pairs):
        if isinstance(pair, (Tensor, Variable, IndexedSlices)) or not hasattr(pair, "__len__"):
            raise TypeError(f"grads_and_vars[{i}] is {pair!r}, not a (gradient, variable) pair; pass "
                            "zip(gradients, variables).")
        if len(pair) != 2:
            raise ValueError(f"grads_and_vars[{i}] has {len(pair)} items; each must be a (gradient, variable) pair.")
        if not isinstance(pair[1], Variable):
            raise AttributeError(f"grads_and_vars[{i}] pairs a gradient with {pair[1]!r}, which is not a tf.Variable; "
                                 "the optimizer can only update variables.")
    return [tuple(p) for p in pairs]


def without_missing(grads, variables):
    """The pairs with a gradient; a warning names the variables without one."""
    kept = [(g, v) for g, v in zip(grads, variables, strict=True) if g is not None]
    if not kept:
        raise ValueError("No gradients provided for any variable.")
    missing = [v.name for g, v in zip(grads, variables, strict=True) if g is None]
    if missing:
        warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss. If using "
                      "`model.compile()`, did you forget to provide a `loss` argument?", stacklevel=4)
    return [g if isinstance(g, IndexedSlices) else convert_to_tensor(g) for g, _ in kept], [v for _, v in kept]


def clipped(grads, clipnorm, global_clipnorm, clipvalue):
    """The gradients clipped as Keras does: each to norm `clipnorm`, all to global norm
    `global_clipnorm`, or each to [-clipvalue, clipvalue] (at most one is set)."""
    if clipnorm and clipnorm > 0:
        return [clip_ops.clip_by_norm(g, clipnorm) for g in grads]
    if global_clipnorm and global_clipnorm > 0:
        return _clip_by_global_norm(grads, global_clipnorm)
    if clipvalue and clipvalue > 0:
        return [_clip_value(g, clipvalue) for g in grads]
    return grads


def _clip_value(g, value):
    if isinstance(g, IndexedSlices):
        return IndexedSlices(clip_ops.clip_by_value(g.values, -value, value), g.indices, g.dense_shape)
    return clip_ops.clip_by_value(g, -value, value)


def _clip_by_global_norm(grads, clip_norm):
    """Keras's global-norm clipping: every gradient times clip_norm * min(1/norm, 1/clip_norm)."""
    squares = [primitives.reduce_sum(math_ops.square(g.values if isinstance(g, IndexedSlices) else g))
               for g in grads]
    norm = unary_ops.sqrt(primitives.reduce_sum(primitives.stack(squares)))
    scale = clip_norm * math_ops.minimum(1.0 / norm, 1.0 / clip_norm)
    scale = scale + (norm - norm)       # NaN when the norm is not finite
    return [scaled(g, scale) for g in grads]


def scaled(g, factor):
    """g * factor for a tensor or an IndexedSlices (its values; Note [sparse updates])."""
    if isinstance(g, IndexedSlices):
        return IndexedSlices(g.values * factor, g.indices, g.dense_shape)
    return g * factor


def dense(g, variable):
    """A gradient of `variable` as a dense tensor: an IndexedSlices' rows summed into the
    variable's shape (as `tf.convert_to_tensor` does; its dense_shape may be unknown while
    tracing), a tensor as it is."""
    if not isinstance(g, IndexedSlices):
        return g
    return scatter_ops.unsorted_segment_sum(g.values, g.indices, variable.shape[0])
