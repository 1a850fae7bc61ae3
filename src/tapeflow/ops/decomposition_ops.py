"""Matrix decompositions (`tf.linalg.eigh`, `eigvalsh`, `svd`, `qr`) and their gradients.

Batched over the leading axes like TensorFlow. Eigenvectors and singular
vectors are defined only up to sign (phase, for complex inputs); NumPy's LAPACK
choice may differ from TensorFlow's, so compare functions invariant to it.
The gradient rules use tapeflow ops only (second order works) and divide by
eigenvalue or singular value gaps, so they are unstable for (nearly)
repeated values, as in TensorFlow.
"""

import collections

import numpy as np

from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.matrix_shape_rules import (
    matrix_rank_at_least_2, merge_dims, meta as _meta, min_dim, square_dims,
)
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import join_ops, math_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.linalg_ops import (
    LAPACK_TYPES, MATRIX_BATCH, _band_op, _diag_op, _diag_part_op, _set_diag_op, adjoint, check_matrix, lapack_input,
    safe_reciprocal, triangular_solve,
)
from tapeflow.ops.core import basic_ops

Qr = collections.namedtuple("Qr", ["q", "r"])


def _mm(a, b, adjoint_a=False, adjoint_b=False):
    return math_ops.matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)


def _split_columns(x, count, total=None):
    """The first `count` columns of x and the rest (either may be empty); x has `total` columns."""
    total = x._value.shape[-1] if total is None else total
    if count == total:
        return x, None
    return join_ops._split_op(x, (count, total - count), x._value.ndim - 1)


def _gaps(values):
    """G[..., i, j] = values[..., j] - values[..., i]."""
    return primitives.expand_dims(values, -2) - primitives.expand_dims(values, -1)


def _scale_columns(x, values):
    """x @ diag(values), without forming the diagonal matrix."""
    return x * primitives.expand_dims(values, -2)


def _scale_rows(x, values):
    """diag(values) @ x."""
    return x * primitives.expand_dims(values, -1)


def _cast_like(x, like):
    return basic_ops.cast(x, like.dtype) if x.dtype != like.dtype else x


# -- eigh -------------------------------------------------------------------

def _self_adjoint_eig_shape(a, compute_v):
    """e [..., M] and v [..., M, M] (v [0] without compute_v) for [..., M, M] input."""
    batch, n = square_dims("SelfAdjointEigV2", [a])
    return [_meta(batch + (n,), a.dtype), _meta(batch + (n, n) if compute_v else (0,), a.dtype)]


@op("SelfAdjointEigV2", dtypes=LAPACK_TYPES, num_outputs=2, shape=_self_adjoint_eig_shape)
def _self_adjoint_eig(a, compute_v):
    check_matrix(a)
    x = lapack_input(a)
    if compute_v:
        e, v = np.linalg.eigh(x)            # reads the lower triangle, like TensorFlow
        return e.astype(a.dtype), v.astype(a.dtype, copy=False)
    return np.linalg.eigvalsh(x).astype(a.dtype), np.zeros((0,), a.dtype)


@_self_adjoint_eig.def_batch
def _self_adjoint_eig_batch(xs, batched, compute_v):
    out = execute(_self_adjoint_eig, xs, {"compute_v": compute_v})
    return out, (True, compute_v)                       # without compute_v, v is an empty placeholder


@_self_adjoint_eig.def_grad(reads_inputs=True, reads_outputs=True)
def _self_adjoint_eig_grad(op, de, dv):
    # A = V diag(e) V^H:  A_bar = V (diag(e_bar) + F o (V^H V_bar)) V^H,  F_ij = 1 / (e_j - e_i), F_ii = 0
    a = op.inputs[0]
    e, v = op.outputs
    inner = _diag_op(de)
    if op.get_attr("compute_v"):
        f = _set_diag_op(safe_reciprocal(_gaps(e)), basic_ops.zeros_like(e))
        inner = inner + f * _mm(v, dv, adjoint_a=True)
    else:
        v = eigh(a)[1]
    grad = _mm(v, _mm(inner, v, adjoint_b=True))
    # The kernel reads only the lower triangle: fold the upper part onto it.
    grad = _band_op(grad + adjoint(grad), -1, 0)
    return grad - 0.5 * _diag_op(_diag_part_op(grad))


@tf_export("linalg.eigh")
def eigh(tensor, name=None):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices.

    Only the lower triangle of `tensor` is read. For complex input the
    eigenvalues have the input's (complex) dtype, like TensorFlow.

    Returns:
      `(e, v)` with `tensor = v @ diag(e) @ adjoint(v)`.

    Raises:
      InvalidArgumentError: the matrices are not square.

    >>> import tapeflow as tf
    >>> e, v = tf.linalg.eigh(tf.constant([[2.0, 1.0], [1.0, 2.0]]))
    >>> e.numpy()
    array([1., 3.], dtype=float32)
    """
    return execute(_self_adjoint_eig, (convert_to_tensor(tensor),), {"compute_v": True})


@tf_export("linalg.eigvalsh")
def eigvalsh(tensor, name=None):
    """The eigenvalues (ascending) of Hermitian matrices (lower triangle read)."""
    return execute(_self_adjoint_eig, (convert_to_tensor(tensor),), {"compute_v": False})[0]


# -- svd ----------------------------------------------------------------------

def _svd_shape(a, compute_uv, full_matrices):
    """s [..., P], u [..., M, P] and v [..., N, P] (P = min(M, N); M and N with full_matrices)."""
    matrix_rank_at_least_2("Svd", [a])
    batch, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    p = min_dim(m, n)
    s = _meta(batch + (p,), np.zeros((), a.dtype).real.dtype)
    if not compute_uv:
        return [s, _meta((0,), a.dtype), _meta((0,), a.dtype)]
    return [s, _meta(batch + (m, m if full_matrices else p), a.dtype),
            _meta(batch + (n, n if full_matrices else p), a.dtype)]


@op("Svd", dtypes=LAPACK_TYPES, num_outputs=3, shape=_svd_shape)
def _svd(a, compute_uv, full_matrices):
    check_matrix(a, square=False)
    x = lapack_input(a)
    real = np.zeros((), a.dtype).real.dtype
    if not compute_uv:
        empty = np.zeros((0,), a.dtype)
        return np.linalg.svd(x, compute_uv=False).astype(real), empty, empty
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return s.astype(real), u.astype(a.dtype, copy=False), np.conj(np.swapaxes(vh, -1, -2)).astype(a.dtype, copy=False)


@_svd.def_batch
def _svd_batch(xs, batched, compute_uv, full_matrices):
    out = execute(_svd, xs, {"compute_uv": compute_uv, "full_matrices": full_matrices})
    return out, (True, compute_uv, compute_uv)          # without compute_uv, u and v are empty placeholders


@_svd.def_grad(reads_inputs=True, reads_outputs=True)
def _svd_grad(op, ds, du, dv):
    a = op.inputs[0]
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, full_matrices=False, compute_uv=True)
        return _mm(_scale_columns(u, _cast_like(ds, a)), v, adjoint_b=True)   # d s_i = Re u_i^H dA v_i
    s, u, v = op.outputs
    rows = merge_dims("Svd", [a._value], a._value.shape[-2], u._value.shape[-2])
    cols = merge_dims("Svd", [a._value], a._value.shape[-1], v._value.shape[-2])
    if rows is None or cols is None:
        raise NotImplementedError("The SVD gradient is not implemented for matrices of unknown size (input "
                                  f"shape {list(a._value.shape)}); give the matrix dimensions static sizes.")
    wide = rows <= cols
    if not wide:                      # work with A^H = V S U^H and take the adjoint at the end
        u, v, du, dv, rows, cols = v, u, dv, du, cols, rows
    if op.get_attr("full_matrices") and cols - rows > 1:
        raise NotImplementedError("The SVD gradient is not implemented for full_matrices=True when the two "
                                  f"matrix dimensions differ by more than 1 (input shape {list(a._value.shape)}); "
                                  "use full_matrices=False.")
    grad = _svd_grad_wide(a, s, u, v, ds, du, dv, rows)
    return grad if wide else adjoint(grad)


def _svd_grad_wide(a, s, u, v, ds, du, dv, rows):
    """The SVD gradient for rows <= cols: U square, V1 = V[..., :rows]."""
    v1, v2 = _split_columns(v, rows)
    dv1, dv2 = _split_columns(dv, rows)
    sc = _cast_like(s, a)
    # F_ij = 1 / (s_j^2 - s_i^2) off the diagonal: how U and V rotate as A moves.
    f = _cast_like(_set_diag_op(safe_reciprocal(_gaps(s * s)), basic_ops.zeros_like(s)), a)
    j = f * _mm(u, du, adjoint_a=True)
    k = f * _mm(v1, dv1, adjoint_a=True)
    j, k = j + adjoint(j), k + adjoint(k)
    #  A_bar = U (diag(s_bar) + (J + J^H) S + S (K + K^H)) V1^H
    core = _diag_op(_cast_like(ds, a)) + _scale_columns(j, sc) + _scale_rows(k, sc)
    grad = _mm(u, _mm(core, v1, adjoint_b=True))
    u_sinv = _scale_columns(u, safe_reciprocal(sc))
    if v._value.shape[-2] > rows:
        # The part of V1_bar outside span(V1): U S^-1 V1_bar^H (I - V1 V1^H) [- (V1^H V2_bar) V2^H, full V]
        outside = adjoint(dv1) - _mm(_mm(dv1, v1, adjoint_a=True), v1, adjoint_b=True)
        if dv2 is not None:
            outside = outside - _mm(_mm(v1, dv2, adjoint_a=True), v2, adjoint_b=True)
        grad = grad + _mm(u_sinv, outside)
    if a.dtype.is_complex:
        # The phase shared by u_i and v_i: 1/2 U S^-1 (L^H - L) V1^H, L = I o (V1^H V1_bar).
        ell = _diag_op(_diag_part_op(_mm(v1, dv1, adjoint_a=True)))
        grad = grad + 0.5 * _mm(u_sinv, _mm(adjoint(ell) - ell, v1, adjoint_b=True))
    return grad


@tf_export("linalg.svd")
def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular value decomposition `tensor = u @ diag(s) @ adjoint(v)`.

    Args:
      tensor: [..., M, N] matrices.
      full_matrices: return square u ([..., M, M]) and v ([..., N, N]).
      compute_uv: return the singular vectors too.

    Returns:
      `s` (descending, real) if not `compute_uv`, else `(s, u, v)`; note that
      `v` is not adjointed.

    >>> import tapeflow as tf
    >>> tf.linalg.svd(tf.constant([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).numpy()
    array([4., 3.], dtype=float32)
    """
    x = convert_to_tensor(tensor)
    s, u, v = execute(_svd, (x,), {"compute_uv": bool(compute_uv), "full_matrices": bool(full_matrices)})
    return (s, u, v) if compute_uv else s


# -- qr -----------------------------------------------------------------------

def _qr_shape(a, full_matrices):
    """q [..., M, P] and r [..., P, N] (P = min(M, N); M with full_matrices)."""
    matrix_rank_at_least_2("Qr", [a])
    batch, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    p = m if full_matrices else min_dim(m, n)
    return [_meta(batch + (m, p), a.dtype), _meta(batch + (p, n), a.dtype)]


@op("Qr", dtypes=LAPACK_TYPES, num_outputs=2, shape=_qr_shape, batch=MATRIX_BATCH)
def _qr(a, full_matrices):
    check_matrix(a, square=False)
    q, r = np.linalg.qr(lapack_input(a), mode="complete" if full_matrices else "reduced")
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


@_qr.def_grad(reads_inputs=True, reads_outputs=True)
def _qr_grad(op, dq, dr):
    a = op.inputs[0]
    q, r = op.outputs
    rows, cols = r._value.shape[-2:]          # R is [P, N]: P < N exactly when A is wide
    if rows is None or cols is None:
        raise NotImplementedError(f"The QR gradient is not implemented for matrices of unknown size (R has "
                                  f"shape {list(r._value.shape)}); give the matrix dimensions static sizes.")
    if rows > cols and op.get_attr("full_matrices"):
        raise NotImplementedError(f"The QR gradient is not implemented for full_matrices=True with more rows "
                                  f"than columns (input shape {list(a._value.shape)}); use full_matrices=False.")
    if rows >= cols:
        return _qr_grad_tall(q, r, dq, dr)
    # Wide A = [X | Y]: R = [U | W] with X = Q U a square QR and Y = Q W.
    _, y = _split_columns(a, rows, cols)
    u, _ = _split_columns(r, rows)
    du, dw = _split_columns(dr, rows, cols)
    dx = _qr_grad_tall(q, u, dq + _mm(y, dw, adjoint_b=True), du)
    return join_ops.concat([dx, _mm(q, dw)], -1)


def _qr_grad_tall(q, r, dq, dr):
    """QR gradient for rows >= cols (reduced): A_bar = (Q_bar + Q copyltu(M)) R^-H, M = R R_bar^H - Q_bar^H Q."""
    m = _mm(r, dr, adjoint_b=True) - _mm(dq, q, adjoint_a=True)
    lower = _band_op(m, -1, 0)
    sym = lower + adjoint(lower) - _diag_op(_diag_part_op(m))
    if q.dtype.is_complex:
        # only the real part of the diagonal is determined (R has a real diagonal)
        d = _diag_part_op(m)
        sym = sym + _diag_op(d - basic_ops.cast(math_ops.real(d), q.dtype))
    b = dq + _mm(q, sym)
    return adjoint(triangular_solve(r, adjoint(b), lower=False))       # B R^-H


@tf_export("linalg.qr")
def qr(input, full_matrices=False, name=None):  # noqa: A002
    """QR decomposition `input = q @ r`, q with orthonormal columns, r upper triangular.

    Returns:
      `Qr(q, r)`: q [..., M, P] and r [..., P, N] with P = min(M, N), or
      q [..., M, M] and r [..., M, N] when `full_matrices`.
    """
    return Qr(*execute(_qr, (convert_to_tensor(input),), {"full_matrices": bool(full_matrices)}))

