"""Linear algebra ops (`tf.linalg`): matrix structure, inverses, determinants,
Cholesky and triangular solves, norms.

Every op works on the last two axes and is batched over the leading ones, like
TensorFlow. Kernels call NumPy/SciPy LAPACK routines; half-precision inputs are
computed in float32 and cast back. Gradients are written with tapeflow ops, so
they can be differentiated again. Decompositions (eigh, svd, qr) live in
`decomposition_ops`.

Only `norm` is a top-level TensorFlow name; the rest is reached through
`tf.linalg` (see `tapeflow/linalg.py`).
"""

import collections

import numpy as np
import scipy.linalg

from tapeflow.framework import dtypes
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import convert_inputs, execute, op
from tapeflow.framework.shapes.matrix_shape_rules import (
    broadcast_dims, matrix_rank_at_least_2, merge_dims, meta as _meta, per_matrix_shape, shapes_str, square_dims,
    square_matrix_shape,
)
from tapeflow.framework.shapes.symbolic_tensors import known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import array_ops, math_ops, unary_ops
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.primitives import binary_grads, zeros_of
from tapeflow.ops.core import basic_ops

# TensorFlow's allowed types for the LAPACK-backed kernels.
LAPACK_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128)
_HALF = frozenset((np.dtype(np.float16), dtypes.bfloat16._np))


# -- helpers shared with decomposition_ops ------------------------------------

def lapack_input(a):
    """`a` in a dtype LAPACK accepts (float32 for half precision)."""
    return a.astype(np.float32) if a.dtype in _HALF else a


def check_matrix(a, square=True, what="Input matrix"):
    """Raises ValueError (InvalidArgumentError at the op) unless `a` is a (square) batch of matrices."""
    if a.ndim < 2:
        raise ValueError(f"Input tensor 0 must have rank >= 2, got {a.ndim}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what} must be square. Got shape {list(a.shape)}.")


def swap_last(x):
    """Transposes the last two axes (a tapeflow op)."""
    rank = known_rank(x, "Transpose")
    if rank < 2:
        raise ValueError(f"Argument `a` should be a (batch) matrix with rank >= 2.  Received shape: {x._value.shape}")
    perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    return primitives._transpose_op(x, perm)


@tf_export("linalg.adjoint")
def adjoint(matrix, name=None):
    """The conjugate transpose of the last two axes.

    >>> import tapeflow as tf
    >>> tf.linalg.adjoint(tf.constant([[1 + 1j, 2], [3, 4]])).numpy()
    array([[1.-1.j, 3.-0.j],
           [2.-0.j, 4.-0.j]])
    """
    return basic_ops.conj(swap_last(convert_to_tensor(matrix)))


@tf_export("linalg.matrix_transpose")
def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Transposes the last two axes of `a` (conjugating too if `conjugate`).

    Raises:
      ValueError: `a` has rank below 2.
    """
    out = swap_last(convert_to_tensor(a))
    return basic_ops.conj(out) if conjugate else out


def safe_reciprocal(x, epsilon=1e-20):
    """x / (x^2 + epsilon): 1/x away from zero, 0 at zero (for eigenvalue gaps)."""
    return x * math_ops.reciprocal(x * x + epsilon)


def _mm(a, b, adjoint_a=False, adjoint_b=False):
    return math_ops.matmul(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)


def _over_leading_axes(op_, xs, batched, attrs):
    """One-input matrix ops: the kernel already maps the leading axes, the batch is one more."""
    return execute(op_, xs, attrs), True


MATRIX_BATCH = batching.FamilyRule(_over_leading_axes)      # the batching preset of one-input matrix ops


def _expand2(x):
    """x[..., None, None]: a per-matrix scalar broadcast over its matrix."""
    return primitives.expand_dims(primitives.expand_dims(x, -1), -1)


# -- diagonals and bands ------------------------------------------------------

def _scalar_k(k):
    """The diagonal offset `k` as an int; a (k, k) pair is accepted, a band is not."""
    if isinstance(k, Tensor):
        k = np.asarray(k._value).tolist()
    if isinstance(k, (list, tuple)):
        if len(k) == 1 or (len(k) == 2 and k[0] == k[1]):
            return int(k[0])
        raise NotImplementedError(f"Only a single diagonal is supported (k an integer); got the band k={list(k)}.")
    return int(k)


def _diag_index(rows, cols, k):
    """Row and column indices of the k-th diagonal of a rows x cols matrix."""
    r0, c0 = max(-k, 0), max(k, 0)
    steps = np.arange(max(min(rows - r0, cols - c0), 0))
    return r0 + steps, c0 + steps


def _check_k(shape, k):
    rows, cols = shape[-2], shape[-1]
    if k != 0 and not -rows < k < cols:
        raise ValueError(f"The diagonal offset k={k} is out of bounds for matrices of shape [{rows}, {cols}]; "
                         f"it must satisfy {-rows} < k < {cols}.")


def _matrix_diag_shape(diagonal, k, num_rows, num_cols, padding_value):
    """[..., L] -> [..., num_rows, num_cols], the sizes -1 worked out from L and k."""
    if len(diagonal.shape) < 1:
        raise ValueError(f"diagonal must be at least 1-dim, received shape: {list(diagonal.shape)}")
    length = diagonal.shape[-1]
    min_rows, min_cols = (None, None) if length is None else (length + max(-k, 0), length + max(k, 0))
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = None if length is None else max(min_rows, min_cols)
    dims = (min_rows if num_rows == -1 else num_rows, min_cols if num_cols == -1 else num_cols)
    if None not in dims and length is not None and _diag_index(*dims, k)[0].size != length:
        raise ValueError(f"The diagonal of length {length} does not fit diagonal k={k} of a {list(dims)} matrix.")
    return [_meta(tuple(diagonal.shape[:-1]) + dims, diagonal.dtype)]


@op("MatrixDiagV3", shape=_matrix_diag_shape, batch=MATRIX_BATCH)
def _matrix_diag(diagonal, k, num_rows, num_cols, padding_value):
    if diagonal.ndim < 1:
        raise ValueError(f"diagonal must be at least 1-dim, received shape: {list(diagonal.shape)}")
    length = diagonal.shape[-1]
    min_rows, min_cols = length + max(-k, 0), length + max(k, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    num_rows = min_rows if num_rows == -1 else num_rows
    num_cols = min_cols if num_cols == -1 else num_cols
    rows, cols = _diag_index(num_rows, num_cols, k)
    if rows.size != length:
        raise ValueError(f"The diagonal of length {length} does not fit diagonal k={k} of a "
                         f"[{num_rows}, {num_cols}] matrix (which has {rows.size} entries).")
    out = np.full(diagonal.shape[:-1] + (num_rows, num_cols), padding_value, diagonal.dtype)
    out[..., rows, cols] = diagonal
    return out


@_matrix_diag.def_grad(reads_inputs=False)
def _matrix_diag_grad(op, dy):
    return _diag_part_op(dy, op.get_attr("k"))          # each diagonal entry lands in one place


def _diag_length(shape, k):
    """The length of diagonal k of [..., rows, cols] matrices (None when a size is unknown)."""
    rows, cols = shape[-2], shape[-1]
    if rows is None or cols is None:
        return None
    _check_k(shape, k)
    return int(_diag_index(rows, cols, k)[0].size)


def _matrix_diag_part_shape(x, k):
    """[..., M, N] -> [..., length of diagonal k]."""
    if len(x.shape) < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {list(x.shape)}")
    return [_meta(tuple(x.shape[:-2]) + (_diag_length(x.shape, k),), x.dtype)]


@op("MatrixDiagPartV3", shape=_matrix_diag_part_shape, batch=MATRIX_BATCH)
def _matrix_diag_part(x, k):
    if x.ndim < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {list(x.shape)}")
    _check_k(x.shape, k)
    rows, cols = _diag_index(x.shape[-2], x.shape[-1], k)
    return x[..., rows, cols]


@_matrix_diag_part.def_grad(reads_inputs=False)
def _matrix_diag_part_grad(op, dy):
    x = op.inputs[0]                                     # scatter back onto the diagonal
    return _set_diag_op(zeros_of(x), dy, op.get_attr("k"))


def _matrix_set_diag_shape(x, diagonal, k):
    """x's shape; unknown batch dims taken from the diagonal's (sizes are checked when the graph runs)."""
    if len(x.shape) < 2 or len(diagonal.shape) != len(x.shape) - 1:
        raise ValueError(f"input must be at least 2-dim and diagonal one rank lower, received shapes: "
                         f"{list(x.shape)} and {list(diagonal.shape)}")
    batch = tuple(x.shape[:-2])
    if None in x.shape:
        batch = tuple(merge_dims("MatrixSetDiagV3", [x, diagonal], a, b) for a, b in zip(batch, diagonal.shape[:-1]))
    return [_meta(batch + tuple(x.shape[-2:]), x.dtype)]


@op("MatrixSetDiagV3", shape=_matrix_set_diag_shape)
def _matrix_set_diag(x, diagonal, k):
    if x.ndim < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {list(x.shape)}")
    _check_k(x.shape, k)
    rows, cols = _diag_index(x.shape[-2], x.shape[-1], k)
    if diagonal.shape != x.shape[:-2] + (rows.size,):
        raise ValueError(f"diagonal must have shape {list(x.shape[:-2] + (rows.size,))} for input of shape "
                         f"{list(x.shape)} and k={k}, got {list(diagonal.shape)}")
    out = np.array(x, copy=True)
    out[..., rows, cols] = diagonal
    return out


@_matrix_set_diag.def_batch
def _matrix_set_diag_batch(xs, batched, k):
    x, d = primitives.stacked_all(xs, batched, primitives.batch_size_of(xs[batched.index(True)]))
    return _set_diag_op(x, d, k), True                 # the batch dims of x and the diagonal must agree


@_matrix_set_diag.def_grad(reads_inputs=False)
def _matrix_set_diag_grad(op, dy):
    k = op.get_attr("k")                                 # the diagonal comes from `diagonal`, the rest from x
    diagonal = op.inputs[1]
    return _set_diag_op(dy, zeros_of(diagonal), k), _diag_part_op(dy, k)


def _diag_op(diagonal, k=0, num_rows=-1, num_cols=-1, padding_value=0):
    return execute(_matrix_diag, (diagonal,), {"k": k, "num_rows": num_rows, "num_cols": num_cols,
                                               "padding_value": padding_value})


def _diag_part_op(x, k=0):
    return execute(_matrix_diag_part, (x,), {"k": k})


def _set_diag_op(x, diagonal, k=0):
    return execute(_matrix_set_diag, (x, diagonal), {"k": k})


def _scalar_value(v):
    if isinstance(v, Tensor):
        return v._value.item()
    return v


@tf_export("linalg.diag")
def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """Batched diagonal matrices: `diagonal[..., i]` placed on the k-th diagonal.

    Only a single diagonal `k` is supported (not a band of diagonals); `align`
    matters only for bands and is accepted and ignored.

    >>> import tapeflow as tf
    >>> tf.linalg.diag(tf.constant([1.0, 2.0])).numpy()
    array([[1., 0.],
           [0., 2.]], dtype=float32)
    """
    x = convert_to_tensor(diagonal)
    return _diag_op(x, _scalar_k(k), int(_scalar_value(num_rows)), int(_scalar_value(num_cols)),
                    _scalar_value(padding_value))


@tf_export("linalg.diag_part")
def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    """The k-th diagonal of each matrix in `input` (shape `[..., min(M, N)]` for k=0)."""
    return _diag_part_op(convert_to_tensor(input), _scalar_k(k))


@tf_export("linalg.set_diag")
def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """`input` with its k-th diagonal replaced by `diagonal`."""
    x, d = convert_inputs((input, diagonal))
    return _set_diag_op(x, d, _scalar_k(k))


def _matrix_band_part_shape(x, num_lower, num_upper):
    """x's shape: TensorFlow checks the rank and the band against the sizes when the graph runs."""
    return [_meta(x.shape, x.dtype)]


@op("MatrixBandPart", shape=_matrix_band_part_shape, batch=MATRIX_BATCH)
def _matrix_band_part(x, num_lower, num_upper):
    if x.ndim < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {list(x.shape)}")
    rows, cols = x.shape[-2:]
    if num_lower > rows:
        raise ValueError(f"num_lower must be negative or less or equal to number of rows ({rows}) got: {num_lower}")
    if num_upper > cols:
        raise ValueError(f"num_upper must be negative or less or equal to number of columns ({cols}) got: {num_upper}")
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]       # j - i
    keep = ((num_lower < 0) | (-offset <= num_lower)) & ((num_upper < 0) | (offset <= num_upper))
    return np.where(keep, x, np.zeros((), x.dtype))


@_matrix_band_part.def_grad(reads_inputs=False)
def _matrix_band_part_grad(op, dy):
    return _band_op(dy, op.get_attr("num_lower"), op.get_attr("num_upper"))   # a mask: keep the same band


def _band_op(x, num_lower, num_upper):
    return execute(_matrix_band_part, (x,), {"num_lower": num_lower, "num_upper": num_upper})


@tf_export("linalg.band_part")
def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """Zeroes everything outside a band: keeps `num_lower` subdiagonals and
    `num_upper` superdiagonals (a negative count keeps the whole triangle).

    >>> import tapeflow as tf
    >>> tf.linalg.band_part(tf.ones([3, 3]), 0, -1).numpy()
    array([[1., 1., 1.],
           [0., 1., 1.],
           [0., 0., 1.]], dtype=float32)
    """
    return _band_op(convert_to_tensor(input), int(_scalar_value(num_lower)), int(_scalar_value(num_upper)))


@tf_export("linalg.trace")
def trace(x, name=None):
    """The sum of the main diagonal of each matrix (shape `x.shape[:-2]`)."""
    return primitives.reduce_sum(diag_part(x), axis=-1)


@tf_export("linalg.matvec")
def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """Matrix-vector product `a @ b[..., None]` without the trailing axis (batch axes broadcast).

    >>> import tapeflow as tf
    >>> tf.linalg.matvec(tf.eye(2) * 2.0, tf.constant([1.0, 3.0])).numpy()
    array([2., 6.], dtype=float32)
    """
    a, b = convert_inputs((a, b))
    out = math_ops.matmul(a, primitives.expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return array_ops.squeeze(out, -1)


# -- inverse and determinants -------------------------------------------------

@op("MatrixInverse", dtypes=LAPACK_TYPES, shape=square_matrix_shape("MatrixInverse"), batch=MATRIX_BATCH)
def _matrix_inverse(a, adjoint):
    check_matrix(a)
    try:
        out = np.linalg.inv(lapack_input(a)).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise ValueError("Input is not invertible.") from None
    return np.conj(np.swapaxes(out, -1, -2)) if adjoint else out


@_matrix_inverse.def_grad(reads_inputs=False, reads_outputs=True)
def _matrix_inverse_grad(op, dy):
    y = op.outputs[0]                   # Y = A^-1: dY = -Y dA Y;  Y = A^-H: dY = -Y dA^H Y
    if op.get_attr("adjoint"):
        return -_mm(y, _mm(dy, y, adjoint_a=True))
    return -_mm(y, _mm(dy, y, adjoint_b=True), adjoint_a=True)


@tf_export("linalg.inv")
def inv(input, adjoint=False, name=None):  # noqa: A002
    """The inverse (or, with `adjoint`, the inverse's adjoint) of each square matrix.

    Raises:
      InvalidArgumentError: the matrices are not square, or one is singular.

    >>> import tapeflow as tf
    >>> tf.linalg.inv(tf.constant([[2.0, 0.0], [0.0, 4.0]])).numpy()
    array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    return execute(_matrix_inverse, (convert_to_tensor(input),), {"adjoint": bool(adjoint)})


@op("MatrixDeterminant", dtypes=LAPACK_TYPES, shape=per_matrix_shape("MatrixDeterminant"), batch=MATRIX_BATCH)
def _matrix_determinant(a):
    check_matrix(a)
    return np.asarray(np.linalg.det(lapack_input(a))).astype(a.dtype, copy=False)


@_matrix_determinant.def_grad(reads_inputs=True, reads_outputs=True)
def _matrix_determinant_grad(op, dy):
    c = op.outputs[0]                                       # d det A = det A tr(A^-1 dA)
    return _expand2(dy * basic_ops.conj(c)) * inv(op.inputs[0], adjoint=True)


@tf_export("linalg.det")
def det(input, name=None):  # noqa: A002
    """The determinant of each square matrix (1 for 0x0 matrices).

    >>> import tapeflow as tf
    >>> float(tf.linalg.det(tf.constant([[1.0, 2.0], [3.0, 4.0]])))
    -2.0
    """
    return execute(_matrix_determinant, (convert_to_tensor(input),), {})


LogMatrixDeterminant = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


@op("LogMatrixDeterminant", dtypes=LAPACK_TYPES, num_outputs=2, shape=per_matrix_shape("LogMatrixDeterminant", 2),
    batch=MATRIX_BATCH)
def _log_matrix_determinant(a):
    check_matrix(a)
    sign, logabs = np.linalg.slogdet(lapack_input(a))
    return np.asarray(sign).astype(a.dtype), np.asarray(logabs).astype(a.dtype)


@_log_matrix_determinant.def_grad(reads_inputs=True)
def _log_matrix_determinant_grad(op, dsign, dlogabs):
    x = op.inputs[0]                         # d log|det A| = Re tr(A^-1 dA); the sign is piecewise constant
    return _expand2(dlogabs) * inv(x, adjoint=True)


@tf_export("linalg.slogdet")
def slogdet(input, name=None):  # noqa: A002
    """Sign and log of the absolute determinant of each square matrix.

    Returns:
      `(sign, log_abs_determinant)`; singular matrices give sign 0 and -inf.
    """
    return LogMatrixDeterminant(*execute(_log_matrix_determinant, (convert_to_tensor(input),), {}))


@tf_export("linalg.logdet")
def logdet(matrix, name=None):
    """log det of Hermitian positive definite matrices, via Cholesky (real result).

    >>> import tapeflow as tf
    >>> round(float(tf.linalg.logdet(tf.constant([[2.0, 1.0], [1.0, 2.0]]))), 5)
    1.09861
    """
    chol = cholesky(matrix)
    return 2.0 * primitives.reduce_sum(math_ops.log(math_ops.real(diag_part(chol))), axis=-1)


# -- Cholesky and solves -----------------------------------------------------

@op("Cholesky", dtypes=LAPACK_TYPES, shape=square_matrix_shape("Cholesky"), batch=MATRIX_BATCH)
def _cholesky(a):
    check_matrix(a)
    x = lapack_input(a)
    try:
        return np.linalg.cholesky(x).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        pass
    # TensorFlow fills the factor of a matrix that is not positive definite with
    # NaN and still factors the others; find them one by one (error path only).
    flat = x.reshape((-1,) + x.shape[-2:])
    out = np.empty_like(flat)
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return out.reshape(a.shape).astype(a.dtype, copy=False)


@_cholesky.def_grad(reads_inputs=False, reads_outputs=True)
def _cholesky_grad(op, dl):
    # A = L L^H:  A_bar = sym(L^-H Phi(L^H L_bar) L^-1), Phi = lower triangle with halved diagonal.
    chol = op.outputs[0]
    middle = _mm(chol, dl, adjoint_a=True)
    middle = _band_op(middle, -1, 0) - 0.5 * _diag_op(_diag_part_op(middle))
    left = triangular_solve(chol, middle, lower=True, adjoint=True)              # L^-H Phi
    grad = adjoint(triangular_solve(chol, adjoint(left), lower=True, adjoint=True))  # L^-H Phi L^-1
    return 0.5 * (grad + adjoint(grad))


@tf_export("linalg.cholesky")
def cholesky(input, name=None):  # noqa: A002
    """The lower Cholesky factor L (A = L L^H) of each Hermitian positive definite matrix.

    Only the lower triangle of `input` is read. Like TensorFlow, a matrix that
    is not positive definite gets a factor full of NaN (no error is raised).

    Raises:
      InvalidArgumentError: the matrices are not square.
    """
    return execute(_cholesky, (convert_to_tensor(input),), {})


def _matrix_solve_shape(a, b, adjoint):
    """[..., M, M] and [..., M, K] (same batch dims) -> [..., M, K]."""
    metas = [a, b]
    batch, m = square_dims("MatrixSolve", metas)
    matrix_rank_at_least_2("MatrixSolve", metas, 1)
    if len(b.shape) != len(a.shape):
        raise ValueError(f"Shapes must be equal rank, but are {len(a.shape) - 2} and {len(b.shape) - 2} for "
                         f"'MatrixSolve' with input shapes: {shapes_str(metas)}.")
    batch = tuple(merge_dims("MatrixSolve", metas, x, y) for x, y in zip(batch, b.shape[:-2]))
    return [_meta(batch + (merge_dims("MatrixSolve", metas, m, b.shape[-2]), b.shape[-1]), a.dtype)]


@op("MatrixSolve", dtypes=LAPACK_TYPES, shape=_matrix_solve_shape)
def _matrix_solve(a, b, adjoint):
    if a.ndim != b.ndim:
        raise ValueError(f"All input tensors must have the same rank. Got matrix {list(a.shape)} and rhs "
                         f"{list(b.shape)}; give rhs a trailing axis of size 1 for a single right-hand side.")
    check_matrix(a, what="First input (lhs)")
    if a.shape[-2] != b.shape[-2]:
        raise ValueError(f"Input matrix and rhs are incompatible: {list(a.shape)} and {list(b.shape)}.")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"All input tensors must have the same outer dimensions: {list(a.shape)} and {list(b.shape)}.")
    x = lapack_input(a)
    if adjoint:
        x = np.conj(np.swapaxes(x, -1, -2))
    try:
        return np.linalg.solve(x, lapack_input(b)).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise ValueError("Input matrix is not invertible.") from None


@_matrix_solve.def_batch
def _matrix_solve_batch(xs, batched, adjoint):
    a, b = xs
    if batched[0]:                                      # the batch dims of matrix and rhs must agree
        a, b = primitives.stacked_all(xs, batched, primitives.batch_size_of(a))
        return execute(_matrix_solve, (a, b), {"adjoint": adjoint}), True
    return _solve_columns(a, b, adjoint), True


def _solve_columns(a, b, adjoint):
    """A shared matrix against a batch of right-hand sides [B, ..., M, K]: one solve of the examples'
    columns side by side, [..., M, B * K] (one factorization)."""
    n = b._value.ndim - 1                               # the example rank
    dims = tuple(primitives.dims_of(b))              # ints, or scalar tensors where unknown (graphs)
    cols = primitives._transpose_op(b, tuple(range(1, n)) + (0, n))                   # [..., M, B, K]
    out = execute(_matrix_solve, (a, primitives.reshape(cols, dims[1:n] + (dims[0] * dims[n],))), {"adjoint": adjoint})
    out = primitives.reshape(out, dims[1:n] + (dims[0], dims[n]))
    return primitives._transpose_op(out, (n - 1,) + tuple(range(n - 1)) + (n,))


@_matrix_solve.def_grad(reads_inputs=(0,), reads_outputs=True)
def _matrix_solve_grad(op, dx):
    a = op.inputs[0]
    x = op.outputs[0]
    adj = op.get_attr("adjoint")             # X = A^-1 B:  B_bar = A^-H X_bar,  A_bar = -B_bar X^H
    db = solve(a, dx, adjoint=not adj)
    if 0 in op.skip_input_indices:           # no outer products for a constant matrix (a Jacobian's rows)
        return None, db
    da = -_mm(x, db, adjoint_b=True) if adj else -_mm(db, x, adjoint_b=True)
    return da, db


@tf_export("linalg.solve")
def solve(matrix, rhs, adjoint=False, name=None):
    """Solves `matrix @ x = rhs` (or `adjoint(matrix) @ x = rhs`) for x.

    `matrix` is [..., M, M] and `rhs` [..., M, K] with the same batch shape.

    Raises:
      InvalidArgumentError: shapes are incompatible or a matrix is singular.
    """
    a, b = convert_inputs((matrix, rhs))
    return execute(_matrix_solve, (a, b), {"adjoint": bool(adjoint)})


def _matrix_triangular_solve_shape(a, b, lower, adjoint):
    """[..., M, M] and [..., M, K] (batch dims broadcast) -> [..., M, K]."""
    metas = [a, b]
    batch, m = square_dims("MatrixTriangularSolve", metas)
    matrix_rank_at_least_2("MatrixTriangularSolve", metas, 1)
    batch = broadcast_dims("MatrixTriangularSolve", metas, batch, b.shape[:-2])
    return [_meta(batch + (merge_dims("MatrixTriangularSolve", metas, m, b.shape[-2]), b.shape[-1]), a.dtype)]


@op("MatrixTriangularSolve", dtypes=LAPACK_TYPES + (dtypes.bfloat16,), shape=_matrix_triangular_solve_shape)
def _matrix_triangular_solve(a, b, lower, adjoint):
    if a.ndim < 2:
        raise ValueError(f"In[0] ndims must be >= 2: {a.ndim}")
    if b.ndim < 2:
        raise ValueError(f"In[1] ndims must be >= 2: {b.ndim}")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"In[0] matrices in the last dimensions must be square ({a.shape[-2]} =/= {a.shape[-1]})")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"In[0] mismatch In[1] shape: {a.shape[-1]} vs. {b.shape[-2]}: "
                         f"{list(a.shape)} {list(b.shape)}")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    tri = np.tril(lapack_input(a)) if lower else np.triu(lapack_input(a))
    rhs = lapack_input(b)
    if adjoint:
        tri, lower = np.conj(np.swapaxes(tri, -1, -2)), not lower
    try:
        out = _solve_2d(tri, rhs, lower) if tri.ndim == 2 else np.linalg.solve(tri, rhs)
    except np.linalg.LinAlgError:
        out = _substitute(tri, rhs, lower, batch)
    return out.astype(a.dtype, copy=False)


def _solve_2d(tri, rhs, lower):
    """One triangular matrix against a batch of right-hand sides: a single LAPACK call."""
    n, k = rhs.shape[-2:]
    if rhs.size == 0:
        return np.zeros(rhs.shape, np.result_type(tri, rhs))
    cols = np.moveaxis(rhs, -2, 0).reshape(n, -1)
    out = scipy.linalg.solve_triangular(tri, cols, lower=lower, check_finite=False)
    return np.moveaxis(out.reshape((n,) + rhs.shape[:-2] + (k,)), 0, -2)


def _substitute(tri, rhs, lower, batch):
    """Forward/back substitution, row by row; gives inf/nan for singular matrices like TensorFlow."""
    n = tri.shape[-1]
    out = np.zeros(batch + rhs.shape[-2:], np.result_type(tri, rhs))
    with np.errstate(all="ignore"):
        for i in (range(n) if lower else range(n - 1, -1, -1)):
            partial = np.einsum("...j,...jk->...k", tri[..., i, :], out)
            out[..., i, :] = (rhs[..., i, :] - partial) / tri[..., i, i][..., None]
    return out


@_matrix_triangular_solve.def_batch
def _matrix_triangular_solve_batch(xs, batched, lower, adjoint):
    a, b = primitives.align_ranks(xs, batched)            # batch dims broadcast: a shared 2-D matrix is one solve
    if a._value.ndim > b._value.ndim:                   # (NumPy 1.x reads an rhs of one rank less as vectors)
        b = primitives.insert_axes(b, 0, a._value.ndim - b._value.ndim)
    return execute(_matrix_triangular_solve, (a, b), {"lower": lower, "adjoint": adjoint}), True


@_matrix_triangular_solve.def_grad(reads_inputs=(0,), reads_outputs=True)
def _matrix_triangular_solve_grad(op, dx):
    a = op.inputs[0]
    x = op.outputs[0]
    lower, adj = op.get_attr("lower"), op.get_attr("adjoint")
    # X = T^-1 B:  B_bar = T^-H X_bar,  T_bar = -B_bar X^H (the transposes for adjoint), kept triangular
    db = triangular_solve(a, dx, lower=lower, adjoint=not adj)
    if 0 in op.skip_input_indices:           # no outer products for a constant matrix (a Jacobian's rows)
        return binary_grads(op, None, db)
    da = -_mm(x, db, adjoint_b=True) if adj else -_mm(db, x, adjoint_b=True)
    da = _band_op(da, -1, 0) if lower else _band_op(da, 0, -1)
    return binary_grads(op, da, db)


@tf_export("linalg.triangular_solve")
def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """Solves `T @ x = rhs` for a triangular T (the lower or upper triangle of `matrix`).

    Batch axes broadcast. A singular T gives inf/nan, like TensorFlow.

    >>> import tapeflow as tf
    >>> tf.linalg.triangular_solve(tf.constant([[2.0, 0.0], [1.0, 1.0]]), tf.constant([[2.0], [3.0]])).numpy()
    array([[1.],
           [2.]], dtype=float32)
    """
    a, b = convert_inputs((matrix, rhs))
    return execute(_matrix_triangular_solve, (a, b), {"lower": bool(lower), "adjoint": bool(adjoint)})


@tf_export("linalg.cholesky_solve")
def cholesky_solve(chol, rhs, name=None):
    """Solves `A x = rhs` given the Cholesky factor `chol` of A (two triangular solves)."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


@tf_export("linalg.lstsq")
def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least-squares solution of `matrix @ x = rhs` by the regularized normal equations.

    Uses the Cholesky factor of `A^H A + l2 I` (tall A) or `A A^H + l2 I`
    (wide A, minimum-norm solution), like TensorFlow's `fast` path.

    Raises:
      NotImplementedError: `fast=False` (the complete orthogonal decomposition path).
    """
    if not fast:
        raise NotImplementedError("lstsq(fast=False) is not implemented; use fast=True (the Cholesky path).")
    a, b = convert_inputs((matrix, rhs))
    rows, cols = a._value.shape[-2:]
    if rows is not None and cols is not None:
        return (_overdetermined if rows >= cols else _underdetermined)(a, b, l2_regularizer)
    # Note [lstsq of unknown size]: which normal equations apply is known only when the
    # graph runs.  Both are formed, each on a Gram matrix replaced by the identity when
    # it is not the one used (so the unused side stays finite, and its zero gradient
    # stays zero, even where its Gram matrix is singular), and the used result is selected.
    dims = basic_ops.shape(a)
    tall = math_ops.greater_equal(dims[-2], dims[-1])
    over = _overdetermined(a, b, l2_regularizer, used=tall)
    under = _underdetermined(a, b, l2_regularizer, used=math_ops.logical_not(tall))
    return math_ops.where(tall, over, under)


def _overdetermined(a, b, l2, used=None):
    """(A^H A + l2 I)^-1 A^H b."""
    return cholesky_solve(_regularized_gram_cholesky(a, l2, True, used), _mm(a, b, adjoint_a=True))


def _underdetermined(a, b, l2, used=None):
    """A^H (A A^H + l2 I)^-1 b, the minimum-norm solution."""
    return _mm(a, cholesky_solve(_regularized_gram_cholesky(a, l2, False, used), b), adjoint_a=True)


def _regularized_gram_cholesky(a, l2, first_kind, used=None):
    """The Cholesky factor of A^H A + l2 I (`first_kind`) or A A^H + l2 I; with `used` (a bool
    scalar known when the graph runs), of the identity where `used` is false (Note [lstsq of
    unknown size])."""
    gram = _mm(a, a, adjoint_a=first_kind, adjoint_b=not first_kind)
    if isinstance(l2, Tensor) or l2 != 0:          # l2 added to the diagonal
        gram = _set_diag_op(gram, _diag_part_op(gram) + basic_ops.cast(l2, a.dtype))
    if used is not None:
        diagonal = _diag_part_op(gram)
        identity = _set_diag_op(basic_ops.zeros_like(gram), math_ops.ones_like(diagonal))
        gram = math_ops.where(used, gram, identity)
    return cholesky(gram)


# -- normalizing (norms: ops/norm_ops.py) ----------------------------------------

@tf_export("linalg.l2_normalize", "math.l2_normalize", "nn.l2_normalize")
def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(|x|^2, axis), epsilon)).

    Raises:
      TypeError: `x` is not floating point or complex.

    >>> import tapeflow as tf
    >>> tf.linalg.l2_normalize(tf.constant([3.0, 4.0])).numpy()
    array([0.6, 0.8], dtype=float32)
    """
    if axis is None:
        axis = dim
    x = convert_to_tensor(x)
    if not (x.dtype.is_floating or x.dtype.is_complex):
        raise TypeError(f"l2_normalize needs a floating point or complex tensor, got {x.dtype.name}; cast it first.")
    if x.dtype.is_complex:
        re, im = math_ops.real(x), math_ops.imag(x)
        inv_norm = _inverse_norm(primitives.reduce_sum(re * re + im * im, axis, keepdims=True), epsilon)
        return math_ops.complex(re * inv_norm, im * inv_norm)
    return x * _inverse_norm(primitives.reduce_sum(x * x, axis, keepdims=True), epsilon)


def _inverse_norm(square_sum, epsilon):
    floor = Tensor(np.asarray(epsilon, square_sum._value.dtype))
    return math_ops.reciprocal(unary_ops.sqrt(math_ops.maximum(square_sum, floor)))
