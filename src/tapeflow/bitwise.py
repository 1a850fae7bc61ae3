"""`tf.bitwise`: bitwise ops on integer tensors."""

from tapeflow.ops.bitwise_ops import (  # noqa: F401
    bitwise_and, bitwise_or, bitwise_xor, invert, left_shift, right_shift,
)
