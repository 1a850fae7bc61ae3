"""The op families, one module each: kernels, shape rules and gradients side by side.

Importing the package declares every op and exports its public names.
"""

# The order is the import order the families' own imports need (nn_ops before nn_losses).
from tapeflow.ops import array_ops, slicing_ops, constructor_ops, scatter_ops, einsum_ops  # noqa: F401,I001
from tapeflow.ops import sort_ops, math_ops, linalg_ops, nn_ops, operators  # noqa: F401,I001
from tapeflow.ops import (  # noqa: F401
    bitwise_ops, clip_ops, conv_ops, decomposition_ops, join_ops, logging_ops, nn_losses, norm_ops, random_ops, reduction_ops,
    segment_ops, sparse_ops, special_math_ops, static_value, string_ops, unary_ops, variables,
)
