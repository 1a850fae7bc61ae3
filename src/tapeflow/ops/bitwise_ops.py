"""Bitwise ops (`tf.bitwise`): and, or, xor, invert and shifts of integer tensors.

Like TensorFlow's, they accept the eight integer dtypes only (floats and bools
raise InvalidArgumentError), broadcast their two inputs, and are not
differentiable.  The `&`, `|`, `^` and `~` operators of integer tensors use them
(see `operators.py`).
"""

import numpy as np

from tapeflow.framework.dtypes import INTEGER_TYPES
from tapeflow.framework.op_def import no_gradient, op
from tapeflow.ops import shape_fns


@op("BitwiseAnd", dtypes=INTEGER_TYPES)
def bitwise_and(x, y):
    """x & y elementwise, for integer tensors of one dtype (broadcasting).

    >>> import tapeflow as tf
    >>> tf.bitwise.bitwise_and(tf.constant([12, 10]), 6).numpy()
    array([4, 2], dtype=int32)
    """
    return np.bitwise_and(x, y)


@op("BitwiseOr", dtypes=INTEGER_TYPES)
def bitwise_or(x, y):
    """x | y elementwise, for integer tensors of one dtype (broadcasting)."""
    return np.bitwise_or(x, y)


@op("BitwiseXor", dtypes=INTEGER_TYPES)
def bitwise_xor(x, y):
    """x ^ y elementwise, for integer tensors of one dtype (broadcasting)."""
    return np.bitwise_xor(x, y)


@op("Invert", dtypes=INTEGER_TYPES)
def invert(x):
    """~x elementwise: every bit of an integer tensor flipped (-x - 1 for signed types)."""
    return np.invert(x)


bitwise_and.into = np.bitwise_and       # Note [buffer reuse] in graph/executor.py
bitwise_or.into = np.bitwise_or
bitwise_xor.into = np.bitwise_xor
invert.into = np.invert


def _shift_amount(x, y):
    """Shift amounts clamped to [0, bits - 1], as TensorFlow's kernels do (NumPy gives
    0 or -1 for shifts past the width)."""
    return np.clip(y, 0, x.dtype.itemsize * 8 - 1).astype(y.dtype, copy=False)


@op("LeftShift", dtypes=INTEGER_TYPES)
def left_shift(x, y):
    """x << y elementwise; bits shifted past the width are lost (two's complement wrap).

    Shift amounts below 0 count as 0 and those past the width as width - 1.

    >>> import tapeflow as tf
    >>> tf.bitwise.left_shift(tf.constant([1, 3], tf.int8), [2, 7]).numpy()
    array([   4, -128], dtype=int8)
    """
    return np.left_shift(x, _shift_amount(x, y))


@op("RightShift", dtypes=INTEGER_TYPES)
def right_shift(x, y):
    """x >> y elementwise: arithmetic (sign-filling) for signed types, logical for unsigned.

    Shift amounts below 0 count as 0 and those past the width as width - 1.
    """
    return np.right_shift(x, _shift_amount(x, y))


# Integer results: no gradient, as in TensorFlow.
for _type in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift"):
    no_gradient(_type)
del _type

# Note [unknown rank] in graph/graph.py: every op of this module is elementwise.
shape_fns.mark_elementwise(globals())

__all__ = []   # reached as tf.bitwise.*, none at top level (as in TensorFlow)
