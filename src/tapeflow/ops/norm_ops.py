"""`tf.norm`: vector and matrix norms, the spectral norm by singular values (ops/decomposition_ops.py)."""

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.shapes.symbolic_tensors import known_rank
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import array_ops, join_ops, math_ops, reduction_ops, unary_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.decomposition_ops import svd
from tapeflow.ops.core import basic_ops

_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ["euclidean", "fro", 1, 2, np.inf]


@tf_export("norm", "linalg.norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector or matrix norm.

    Args:
      tensor: the input.
      ord: 'euclidean', 1, 2, np.inf or any p > 0 for vectors; 'euclidean',
        'fro', 1, 2 (largest singular value) or np.inf for matrices.
      axis: None (all entries as one vector), an int (vectors) or a pair of
        ints (matrices).
      keepdims: keep the reduced axes with size 1.

    Raises:
      ValueError: an unsupported `ord` or a malformed `axis`.

    >>> import tapeflow as tf
    >>> float(tf.norm(tf.constant([3.0, 4.0])))
    5.0
    """
    keepdims = bool(keepdims)
    is_matrix = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix:
        axis = tuple(axis)
        if not all(isinstance(a, int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in _MATRIX_ORDS:
            raise ValueError(f"'ord' must be a supported matrix norm in {_MATRIX_ORDS}, got {ord}")
    else:
        if not (axis is None or isinstance(axis, int)):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if ord not in _VECTOR_ORDS and (isinstance(ord, str) or not np.isreal(ord) or ord <= 0):
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        axis = None if axis is None else (axis,)
    x = convert_to_tensor(tensor)
    rank = known_rank(x, "norm")
    for a in axis or ():
        if not -rank <= a < rank:
            message = f"Invalid reduction dimension {a} for input with {rank} dimensions."
            if state.graphs:          # TensorFlow's shape functions raise ValueError while a graph is built
                raise ValueError(message)
            raise InvalidArgumentError(None, "Sum", message + " [Op:Sum]")
    axes = tuple(range(rank)) if axis is None else tuple(a % rank for a in axis)
    if is_matrix and ord == 2:
        result = _spectral_norm(x, axes)
    elif ord in ("fro", "euclidean", 2):
        result = unary_ops.sqrt(primitives.reduce_sum(x * basic_ops.conj(x), axes, keepdims=True))
    else:
        result = unary_ops.abs(x)
        if ord == 1:          # vectors: sum |x|; matrices: largest column sum
            result = primitives.reduce_sum(result, axes[:1] if is_matrix else axes, keepdims=True)
            if is_matrix:
                result = reduction_ops.reduce_max(result, axes[1], keepdims=True)
        elif ord == np.inf:   # vectors: max |x|; matrices: largest row sum
            if is_matrix:
                result = primitives.reduce_sum(result, axes[1], keepdims=True)
            result = reduction_ops.reduce_max(result, axes[:1] if is_matrix else axes, keepdims=True)
        else:
            result = math_ops.pow(primitives.reduce_sum(math_ops.pow(result, ord), axes, keepdims=True), 1.0 / ord)
    return result if keepdims else array_ops.squeeze(result, axes)


def _spectral_norm(x, axes):
    """The largest singular value over the matrix axes `axes`, kept with size 1."""
    rank = x._value.ndim
    rest = tuple(i for i in range(rank) if i not in axes)
    moved = primitives._transpose_op(x, rest + axes)
    s = svd(moved, compute_uv=False)
    k = s._value.shape[-1]
    if not k:                  # unknown until run time, or no singular values: max (-inf when empty)
        top = reduction_ops.reduce_max(s, -1, keepdims=True)
    else:
        top = join_ops._split_op(s, (1, k - 1), s._value.ndim - 1)[0] if k > 1 else s     # s is descending
    return primitives._transpose_op(primitives.expand_dims(top, -1), tuple(np.argsort(rest + axes).tolist()))
