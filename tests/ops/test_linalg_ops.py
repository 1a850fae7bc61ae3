"""Spec rows for tf.linalg ops (and tf.norm); the harness runs forward, gradient,
second order and TensorFlow checks. Decompositions are checked through
functions invariant to the sign/phase of eigen- and singular vectors."""

import numpy as np
import pytest

import tapeflow
from op_harness import OpSpec, any_real, complex_of, define_tests, tf_module

# -- samplers -----------------------------------------------------------------


def well_conditioned(rng, shape, dtype):
    """Square (batches of) matrices with a dominant diagonal of random sign."""
    x = rng.uniform(-1.0, 1.0, shape)
    if len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1]:
        n = shape[-1]
        signs = rng.choice([-1.0, 1.0], shape[:-1])
        x = x + (n + 1.0) * signs[..., None] * np.eye(n)
    return x.astype(dtype)


def spread(rng, shape, dtype):
    """Matrices with well separated singular values / eigenvalues (stable decomposition gradients)."""
    x = rng.uniform(-1.0, 1.0, shape)
    if len(shape) >= 2:
        k = min(shape[-2:])
        idx = np.arange(k)
        x[..., idx, idx] += 1.5 * (idx + 1) * rng.choice([-1.0, 1.0], shape[:-2] + (k,))
    return x.astype(dtype)


# -- helpers used inside spec functions (they run with tapeflow and with TensorFlow) --

def spd(tf, x):
    """x x^H + n I: Hermitian positive definite from any square x."""
    n = x.shape[-1]
    return tf.matmul(x, x, adjoint_b=True) + tf.constant(n * np.eye(n), dtype=x.dtype)


def weights(tf, n, dtype):
    return tf.constant(np.linspace(1.0, 2.0, n), dtype=dtype)


def projector(tf, v):
    """v diag(w) v^H with fixed w: invariant to the sign/phase of each column of v."""
    return tf.matmul(v * weights(tf, v.shape[-1], v.dtype), v, adjoint_b=True)


def np_spd(x):
    n = x.shape[-1]
    return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)


def np_projector(v):
    w = np.linspace(1.0, 2.0, v.shape[-1])
    return (v * w) @ np.conj(np.swapaxes(v, -1, -2))


def np_diag(v, k=0):
    n = v.shape[-1] + abs(k)
    out = np.zeros(v.shape[:-1] + (n, n), v.dtype)
    idx = np.arange(v.shape[-1])
    out[..., idx + max(-k, 0), idx + max(k, 0)] = v
    return out


def np_mt(x):
    return np.swapaxes(x, -1, -2)


def np_norm(x, ord, axis, keepdims=False):
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def eigh_parts(tf, x):
    e, v = tf.linalg.eigh(x)
    return e, projector(tf, v)


def np_eigh_parts(x):
    e, v = np.linalg.eigh(x)
    return e, np_projector(v)


def svd_parts(tf, x, full_matrices=False):
    s, u, v = tf.linalg.svd(x, full_matrices=full_matrices)
    k = s.shape[-1]
    scaled = tf.matmul(u[..., :, :k], tf.linalg.diag(tf.cast(s, u.dtype)))
    return s, projector(tf, u), projector(tf, v), tf.matmul(scaled, v[..., :, :k], adjoint_b=True)


def np_svd_parts(x, full_matrices=False):
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    v = np.conj(np_mt(vh))
    k = s.shape[-1]
    return s, np_projector(u), np_projector(v), (u[..., :, :k] * s[..., None, :]) @ np.conj(np_mt(v[..., :, :k]))


SQUARE = [((3, 3),), ((2, 2, 2),), ((1, 1),), ((0, 0),), ((2, 0, 0),)]
SQUARE_NONEMPTY = [((3, 3),), ((2, 2, 2),), ((1, 1),)]
SOLVE = [((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 1)), ((1, 1), (1, 1)), ((0, 0), (0, 2)), ((2, 2), (2, 0))]
TRI = [((3, 3), (3, 2)), ((2, 3, 3), (3, 1)), ((3, 3), (2, 3, 2)), ((1, 1), (1, 1)), ((0, 0), (0, 2))]
cplx = complex_of(well_conditioned)

SPECS = [
    # structure
    OpSpec("matvec", lambda tf, a, b: tf.linalg.matvec(a, b), lambda a, b: (a @ b[..., None])[..., 0],
           [((3, 4), (4,)), ((2, 3, 4), (4,)), ((3, 4), (2, 4)), ((0, 4), (4,)), ((1, 1), (1,))]),
    OpSpec("matvec_transpose_a", lambda tf, a, b: tf.linalg.matvec(a, b, transpose_a=True),
           lambda a, b: (np_mt(a) @ b[..., None])[..., 0], [((4, 3), (4,)), ((2, 4, 3), (2, 4))]),
    OpSpec("matvec_adjoint_a", lambda tf, a, b: tf.linalg.matvec(a, b, adjoint_a=True),
           lambda a, b: (np.conj(np_mt(a)) @ b[..., None])[..., 0], [((4, 3), (4,))], sampler=complex_of(any_real)),
    OpSpec("matrix_transpose", lambda tf, x: tf.linalg.matrix_transpose(x), np_mt, [((2, 3),), ((2, 3, 4),), ((0, 3),)]),
    OpSpec("adjoint", lambda tf, x: tf.linalg.adjoint(x), lambda x: np.conj(np_mt(x)), [((2, 3),), ((2, 2, 1),)],
           sampler=complex_of(any_real)),
    OpSpec("matrix_transpose_conjugate", lambda tf, x: tf.linalg.matrix_transpose(x, conjugate=True),
           lambda x: np.conj(np_mt(x)), [((2, 3),)], sampler=complex_of(any_real)),
    OpSpec("diag", lambda tf, x: tf.linalg.diag(x), np_diag, [((3,),), ((2, 3),), ((1,),), ((0,),), ((2, 0),)]),
    OpSpec("diag_k", lambda tf, x: tf.linalg.diag(x, k=1), lambda x: np_diag(x, 1), [((3,),), ((2, 2),)]),
    OpSpec("diag_k_negative", lambda tf, x: tf.linalg.diag(x, k=-2), lambda x: np_diag(x, -2), [((2,),)]),
    OpSpec("diag_part", lambda tf, x: tf.linalg.diag_part(x), lambda x: np.diagonal(x, 0, -2, -1),
           [((3, 3),), ((2, 3, 4),), ((4, 2),), ((1, 1),), ((0, 3),)]),
    OpSpec("diag_part_k", lambda tf, x: tf.linalg.diag_part(x, k=1), lambda x: np.diagonal(x, 1, -2, -1),
           [((3, 4),), ((2, 3, 3),)]),
    OpSpec("set_diag", lambda tf, x, d: tf.linalg.set_diag(x, d),
           lambda x, d: _np_set_diag(x, d),
           [((3, 3), (3,)), ((2, 3, 4), (2, 3)), ((1, 1), (1,))]),
    OpSpec("band_part", lambda tf, x: tf.linalg.band_part(x, 1, 0), lambda x: np.tril(np.triu(x, -1)),
           [((3, 3),), ((2, 3, 4),), ((2, 0),)]),
    OpSpec("band_part_upper", lambda tf, x: tf.linalg.band_part(x, 0, -1), lambda x: np.triu(x),
           [((3, 4),), ((2, 4, 3),)]),
    OpSpec("trace", lambda tf, x: tf.linalg.trace(x), lambda x: np.trace(x, axis1=-2, axis2=-1),
           [((3, 3),), ((2, 3, 4),), ((1, 1),), ((0, 0),)]),
    # inverse and determinants
    OpSpec("inv", lambda tf, x: tf.linalg.inv(x), np.linalg.inv, SQUARE, sampler=well_conditioned),
    OpSpec("inv_adjoint", lambda tf, x: tf.linalg.inv(x, adjoint=True), lambda x: np_mt(np.linalg.inv(x)),
           SQUARE_NONEMPTY, sampler=well_conditioned),
    OpSpec("inv_complex", lambda tf, x: tf.linalg.inv(x), np.linalg.inv, [((2, 2),), ((2, 3, 3),)], sampler=cplx),
    OpSpec("inv_complex_adjoint", lambda tf, x: tf.linalg.inv(x, adjoint=True),
           lambda x: np.conj(np_mt(np.linalg.inv(x))), [((3, 3),)], sampler=cplx),
    OpSpec("det", lambda tf, x: tf.linalg.det(x), np.linalg.det, SQUARE, sampler=well_conditioned, rtol=1e-5),
    # TensorFlow's complex determinant gradient misses a conjugate; ours matches central differences.
    OpSpec("det_complex", lambda tf, x: tf.linalg.det(x), np.linalg.det, [((2, 2),), ((2, 3, 3),)], sampler=cplx,
           rtol=1e-5, check_tf_grad=False),
    OpSpec("slogdet", lambda tf, x: tf.linalg.slogdet(x), lambda x: list(np.linalg.slogdet(x)), SQUARE,
           sampler=well_conditioned),
    OpSpec("logdet", lambda tf, x: tf.linalg.logdet(spd(tf, x)), lambda x: np.linalg.slogdet(np_spd(x))[1],
           SQUARE, rtol=1e-5),
    # Cholesky and solves
    OpSpec("cholesky", lambda tf, x: tf.linalg.cholesky(spd(tf, x)), lambda x: np.linalg.cholesky(np_spd(x)),
           SQUARE, rtol=1e-5),
    OpSpec("cholesky_complex", lambda tf, x: tf.linalg.cholesky(spd(tf, x)),
           lambda x: np.linalg.cholesky(np_spd(x)), [((2, 2),), ((2, 3, 3),)], sampler=complex_of(any_real),
           rtol=1e-5),
    OpSpec("cholesky_solve", lambda tf, c, b: tf.linalg.cholesky_solve(c, b),
           lambda c, b: np.linalg.solve(np.tril(c) @ np_mt(np.tril(c)), b), TRI, sampler=well_conditioned,
           rtol=1e-5),
    OpSpec("solve", lambda tf, a, b: tf.linalg.solve(a, b), np.linalg.solve, SOLVE, sampler=well_conditioned),
    OpSpec("solve_adjoint", lambda tf, a, b: tf.linalg.solve(a, b, adjoint=True),
           lambda a, b: np.linalg.solve(np_mt(a), b), SOLVE[:3], sampler=well_conditioned),
    OpSpec("solve_complex", lambda tf, a, b: tf.linalg.solve(a, b, adjoint=True),
           lambda a, b: np.linalg.solve(np.conj(np_mt(a)), b), [((3, 3), (3, 2))], sampler=cplx),
    OpSpec("triangular_solve", lambda tf, a, b: tf.linalg.triangular_solve(a, b),
           lambda a, b: np.linalg.solve(np.tril(a), b), TRI, sampler=well_conditioned),
    OpSpec("triangular_solve_upper", lambda tf, a, b: tf.linalg.triangular_solve(a, b, lower=False),
           lambda a, b: np.linalg.solve(np.triu(a), b), TRI[:3], sampler=well_conditioned),
    OpSpec("triangular_solve_adjoint", lambda tf, a, b: tf.linalg.triangular_solve(a, b, adjoint=True),
           lambda a, b: np.linalg.solve(np_mt(np.tril(a)), b), TRI[:3], sampler=well_conditioned),
    OpSpec("triangular_solve_upper_adjoint",
           lambda tf, a, b: tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
           lambda a, b: np.linalg.solve(np_mt(np.triu(a)), b), TRI[:2], sampler=well_conditioned),
    OpSpec("triangular_solve_complex", lambda tf, a, b: tf.linalg.triangular_solve(a, b, adjoint=True),
           lambda a, b: np.linalg.solve(np.conj(np_mt(np.tril(a))), b), [((3, 3), (3, 2))], sampler=cplx),
    OpSpec("lstsq_tall", lambda tf, a, b: tf.linalg.lstsq(a, b), lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
           [((4, 3), (4, 2))], sampler=spread, rtol=1e-5),
    OpSpec("lstsq_wide_l2", lambda tf, a, b: tf.linalg.lstsq(a, b, l2_regularizer=0.5), None,
           [((2, 3), (2, 2)), ((2, 3, 2), (2, 3, 1))], sampler=spread),
    # decompositions
    OpSpec("eigh", eigh_parts, np_eigh_parts, SQUARE, sampler=spread, rtol=1e-5),
    OpSpec("eigh_complex", lambda tf, x: eigh_parts(tf, x + tf.linalg.adjoint(x)),
           lambda x: np_eigh_parts(x + np.conj(np_mt(x))), [((2, 2),), ((3, 3),)], sampler=complex_of(spread),
           rtol=1e-5),
    OpSpec("eigvalsh", lambda tf, x: tf.linalg.eigvalsh(x), np.linalg.eigvalsh, SQUARE, sampler=spread, rtol=1e-5),
    OpSpec("svd_values", lambda tf, x: tf.linalg.svd(x, compute_uv=False), lambda x: np.linalg.svd(x, compute_uv=False),
           [((3, 2),), ((2, 3),), ((2, 3, 3),), ((1, 1),), ((0, 3),)], sampler=spread, rtol=1e-5),
    OpSpec("svd", svd_parts, np_svd_parts, [((4, 3),), ((3, 4),), ((3, 3),), ((2, 4, 3),), ((1, 1),), ((0, 2),)],
           sampler=spread, rtol=1e-5),
    OpSpec("svd_full", lambda tf, x: svd_parts(tf, x, full_matrices=True), lambda x: np_svd_parts(x, True),
           [((3, 2),), ((2, 3),), ((3, 3),)], sampler=spread, rtol=1e-5, grad_tol=3e-5),
    OpSpec("svd_complex", svd_parts, np_svd_parts, [((3, 2),), ((2, 3),)], sampler=complex_of(spread), rtol=1e-5),
    OpSpec("qr", lambda tf, x: tf.linalg.qr(x), lambda x: list(np.linalg.qr(x)),
           [((4, 3),), ((3, 3),), ((3, 4),), ((2, 4, 3),), ((1, 1),), ((0, 2),)], sampler=spread, rtol=1e-5),
    OpSpec("qr_full_wide", lambda tf, x: tf.linalg.qr(x, full_matrices=True),
           lambda x: list(np.linalg.qr(x, mode="complete")), [((3, 4),), ((3, 3),)], sampler=spread, rtol=1e-5),
    OpSpec("qr_complex", lambda tf, x: tf.linalg.qr(x), lambda x: list(np.linalg.qr(x)),
           [((3, 2),), ((2, 2),), ((2, 3),)], sampler=complex_of(spread), rtol=1e-5),
    # norms
    OpSpec("norm", lambda tf, x: tf.norm(x), lambda x: np.linalg.norm(x.ravel()), [((3,),), ((2, 3),), ((1,),)]),
    OpSpec("norm_axis_keepdims", lambda tf, x: tf.norm(x, axis=1, keepdims=True),
           lambda x: np_norm(x, None, 1, True), [((2, 3),), ((2, 3, 2),)]),
    OpSpec("linalg_norm_1", lambda tf, x: tf.linalg.norm(x, ord=1, axis=-1), lambda x: np_norm(x, 1, -1),
           [((2, 3),), ((3,),)]),
    OpSpec("norm_inf", lambda tf, x: tf.norm(x, ord=np.inf, axis=0), lambda x: np_norm(x, np.inf, 0),
           [((3,),), ((3, 2),)]),
    OpSpec("norm_p", lambda tf, x: tf.norm(x, ord=3), lambda x: np_norm(x.ravel(), 3, 0), [((4,),), ((2, 2),)]),
    OpSpec("norm_fro", lambda tf, x: tf.norm(x, ord="fro", axis=[-2, -1]), lambda x: np_norm(x, "fro", (-2, -1)),
           [((2, 3),), ((2, 2, 3),)]),
    OpSpec("norm_matrix_1", lambda tf, x: tf.norm(x, ord=1, axis=(0, 1)), lambda x: np_norm(x, 1, (0, 1)),
           [((2, 3),), ((3, 2, 2),)]),
    OpSpec("norm_matrix_inf", lambda tf, x: tf.norm(x, ord=np.inf, axis=[-1, -2], keepdims=True),
           lambda x: np_norm(x, np.inf, (-1, -2), True), [((2, 3),), ((2, 3, 2),)]),
    OpSpec("norm_matrix_2", lambda tf, x: tf.norm(x, ord=2, axis=[1, 2]), lambda x: np_norm(x, 2, (1, 2)),
           [((2, 3, 2),), ((1, 2, 2),)], sampler=spread, rtol=1e-5),
    OpSpec("norm_complex", lambda tf, x: tf.math.real(tf.norm(x, axis=-1)), lambda x: np_norm(x, None, -1),
           [((2, 3),)], sampler=complex_of(any_real)),
    OpSpec("l2_normalize", lambda tf, x: tf.linalg.l2_normalize(x, axis=-1),
           lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True), [((3,),), ((2, 3),), ((2, 0),)]),
    OpSpec("l2_normalize_all", lambda tf, x: tf.linalg.l2_normalize(x), lambda x: x / np.linalg.norm(x),
           [((2, 3),)]),
    OpSpec("l2_normalize_complex", lambda tf, x: tf.linalg.l2_normalize(x, axis=0),
           lambda x: x / np.linalg.norm(x, axis=0, keepdims=True), [((3, 2),)], sampler=complex_of(any_real)),
]


def _np_set_diag(x, d):
    out = x.copy()
    k = min(x.shape[-2:])
    out[..., np.arange(k), np.arange(k)] = d
    return out


define_tests(SPECS, globals())
