"""The op families, one module each: kernels, shape rules and gradients side by side.

Importing the package declares every op and exports its public names.
"""

from tapeflow.ops import (  # noqa: F401  (any order: the families import what they use)
    array_ops, bitwise_ops, clip_ops, constructor_ops, conv_ops, decomposition_ops, einsum_ops, join_ops, linalg_ops,
    logging_ops, math_ops, nn_losses, nn_ops, norm_ops, operators, random_ops, reduction_ops, scatter_ops, segment_ops,
    slicing_ops, sort_ops, sparse_ops, special_math_ops, static_value, string_ops, unary_ops, variables,
)
