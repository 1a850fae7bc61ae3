"""`tf.linalg`: matrix ops."""

from tapeflow.ops import array_ops as _array_ops
from tapeflow.ops import math_ops as _math_ops
from tapeflow.ops.decomposition_ops import eigh, eigvalsh, qr, svd  # noqa: F401
from tapeflow.ops.linalg_ops import (  # noqa: F401
    adjoint, band_part, cholesky, cholesky_solve, det, diag, diag_part, inv, l2_normalize, logdet, lstsq,
    matrix_transpose, matvec, norm, set_diag, slogdet, solve, trace, triangular_solve,
)
from tapeflow.ops.math_ops import matmul  # noqa: F401

# Defined by the array/math families; re-exported here once they exist.
for _name in ("einsum", "eye", "tensordot"):
    for _module in (_array_ops, _math_ops):
        if hasattr(_module, _name):
            globals()[_name] = getattr(_module, _name)
            break
del _name, _module
