"""`tf.linalg`: matrix ops."""

import importlib as _importlib

from tapeflow.ops.decomposition_ops import eigh, eigvalsh, qr, svd  # noqa: F401
from tapeflow.ops.linalg_ops import (  # noqa: F401
    adjoint, band_part, cholesky, cholesky_solve, det, diag, diag_part, inv, l2_normalize, logdet, lstsq,
    matrix_transpose, matvec, norm, set_diag, slogdet, solve, trace, triangular_solve,
)
from tapeflow.ops.math_ops import matmul  # noqa: F401

# `eye`, `einsum` and `tensordot` belong to other op families; each is
# re-exported here once its family defines it.
_module = _name = None
for _module_name in ("constructor_ops", "einsum_ops", "array_ops", "math_ops"):
    try:
        _module = _importlib.import_module(f"tapeflow.ops.{_module_name}")
    except ImportError:
        continue
    for _name in ("eye", "einsum", "tensordot"):
        if _name not in globals() and hasattr(_module, _name):
            globals()[_name] = getattr(_module, _name)
del _importlib, _module_name, _module, _name
