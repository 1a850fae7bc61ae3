"""Bitwise ops (`tf.bitwise`): and, or, xor, invert and shifts of integer tensors.

Like TensorFlow's, they accept the eight integer dtypes only (floats and bools
raise InvalidArgumentError), broadcast their two inputs, and are not
differentiable (integer results: no gradient, as in TensorFlow).  The `&`, `|`,
`^` and `~` operators of integer tensors use them (see `operators.py`).  The
and/or/xor/invert kernels are plain ufuncs: a graph plan may compute them into a
dying input's buffer (`into`, Note [buffer reuse] in graph/executor.py).
"""

import numpy as np

from tapeflow.framework.dtypes import INTEGER_TYPES
from tapeflow.framework.export import tf_export
from tapeflow.ops.core.presets import binary_op, unary_op


@tf_export("bitwise.bitwise_and")
@binary_op("BitwiseAnd", dtypes=INTEGER_TYPES, into=np.bitwise_and, differentiable=False)
def bitwise_and(x, y):
    """x & y elementwise, for integer tensors of one dtype (broadcasting).

    >>> import tapeflow as tf
    >>> tf.bitwise.bitwise_and(tf.constant([12, 10]), 6).numpy()
    array([4, 2], dtype=int32)
    """
    return np.bitwise_and(x, y)


@tf_export("bitwise.bitwise_or")
@binary_op("BitwiseOr", dtypes=INTEGER_TYPES, into=np.bitwise_or, differentiable=False)
def bitwise_or(x, y):
    """x | y elementwise, for integer tensors of one dtype (broadcasting)."""
    return np.bitwise_or(x, y)


@tf_export("bitwise.bitwise_xor")
@binary_op("BitwiseXor", dtypes=INTEGER_TYPES, into=np.bitwise_xor, differentiable=False)
def bitwise_xor(x, y):
    """x ^ y elementwise, for integer tensors of one dtype (broadcasting)."""
    return np.bitwise_xor(x, y)


@tf_export("bitwise.invert")
@unary_op("Invert", dtypes=INTEGER_TYPES, into=np.invert, differentiable=False)
def invert(x):
    """~x elementwise: every bit of an integer tensor flipped (-x - 1 for signed types)."""
    return np.invert(x)


def _shift_amount(x, y):
    """Shift amounts clamped to [0, bits - 1], as TensorFlow's kernels do (NumPy gives
    0 or -1 for shifts past the width)."""
    return np.clip(y, 0, x.dtype.itemsize * 8 - 1).astype(y.dtype, copy=False)


@tf_export("bitwise.left_shift")
@binary_op("LeftShift", dtypes=INTEGER_TYPES, differentiable=False)
def left_shift(x, y):
    """x << y elementwise; bits shifted past the width are lost (two's complement wrap).

    Shift amounts below 0 count as 0 and those past the width as width - 1.

    >>> import tapeflow as tf
    >>> tf.bitwise.left_shift(tf.constant([1, 3], tf.int8), [2, 7]).numpy()
    array([   4, -128], dtype=int8)
    """
    return np.left_shift(x, _shift_amount(x, y))


@tf_export("bitwise.right_shift")
@binary_op("RightShift", dtypes=INTEGER_TYPES, differentiable=False)
def right_shift(x, y):
    """x >> y elementwise: arithmetic (sign-filling) for signed types, logical for unsigned.

    Shift amounts below 0 count as 0 and those past the width as width - 1.
    """
    return np.right_shift(x, _shift_amount(x, y))
