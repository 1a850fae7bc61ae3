"""Clipping: `tf.clip_by_value` and `tf.clip_by_norm`, built from elementwise ops (no rules of their own)."""

from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import math_ops, unary_ops
from tapeflow.ops.array_ops import identity
from tapeflow.ops.core import primitives
from tapeflow.ops.core import basic_ops


@tf_export("clip_by_value")
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips `t` to [clip_value_min, clip_value_max] as `maximum(minimum(t, max), min)`.

    The bounds may broadcast against `t` but not enlarge it. Gradients follow
    TensorFlow: `t` gets the gradient where min <= t <= max (ties included),
    a bound gets it where `t` lies strictly beyond it.

    Raises:
      ValueError: the bounds would broadcast `t` to a larger shape.
      InvalidArgumentError: incompatible shapes or dtypes.
    """
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_value(t.values, clip_value_min, clip_value_max), t.indices, t.dense_shape)
    values = convert_to_tensor(t)
    out = math_ops.maximum(math_ops.minimum(values, clip_value_max), clip_value_min)
    if out._value.shape != values._value.shape:
        raise ValueError(f"Shapes {TensorShape(values._value.shape)} and {TensorShape(out._value.shape)} "
                         "are incompatible")
    return out


@tf_export("clip_by_norm")
def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t * clip_norm / max(norm, clip_norm)`, `norm` the L2 norm of `t` over `axes` (all by default):
    `t` unchanged where its norm is at most `clip_norm`, else rescaled to that norm.

    The norm is taken through a square root guarded where it is 0, so the
    gradient there is finite, as in TensorFlow.  IndexedSlices keep their
    indices (the norm is that of their values).

    Raises:
      ValueError: `clip_norm` would broadcast `t` to a larger shape.

    >>> import tapeflow as tf
    >>> tf.clip_by_norm(tf.constant([3.0, 4.0]), 1.0).numpy()
    array([0.6, 0.8], dtype=float32)
    """
    if isinstance(t, IndexedSlices):
        return IndexedSlices(clip_by_norm(t.values, clip_norm, axes), t.indices, t.dense_shape)
    values = convert_to_tensor(t)
    clip_norm = basic_ops.cast(clip_norm, values.dtype)
    squares = primitives.reduce_sum(values * values, axes, keepdims=True)
    nonzero = squares > 0
    safe = math_ops.where(nonzero, squares, math_ops.ones_like(squares))      # sqrt'(0) never reached
    norm = math_ops.where(nonzero, unary_ops.sqrt(safe), squares)
    scaled = values * clip_norm
    if not values.shape.is_compatible_with(scaled.shape):
        raise ValueError(f"Shapes {values.shape} and {scaled.shape} are incompatible")
    return identity(scaled / math_ops.maximum(norm, clip_norm))
