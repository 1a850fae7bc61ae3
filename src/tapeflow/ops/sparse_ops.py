"""`tf.sparse`: ops on SparseTensors (framework/sparse_tensor.py).

Three ops take a SparseTensor as its three tensors (indices, values, dense_shape)
and give a dense result: SparseToDense (`tf.sparse.to_dense`),
SparseTensorDenseMatMul (`tf.sparse.sparse_dense_matmul`) and SparseReduceSum
(`tf.sparse.reduce_sum`).  Their gradients go to the values (and to the dense
operand, the default value); indices and shapes get None, as in TensorFlow.
`tf.sparse.from_dense` is made of dense ops, so its gradient is theirs.
"""

import numpy as np
import scipy.sparse

from tapeflow.framework import dtypes, sparse_tensor
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError, NotFoundError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import convert_like, execute, op, raise_type_mismatch
from tapeflow.framework.shapes.known_values import constant_value, partial_value
from tapeflow.framework.shapes.symbolic_tensors import Meta
from tapeflow.framework.sparse_tensor import SparseTensor
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import (
    array_ops, constructor_ops, join_ops, linalg_ops, math_ops, reduction_ops, scatter_ops, sort_ops,
)
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.half import computes_in_float32
from tapeflow.ops.core import basic_ops

_INT64 = np.dtype(np.int64)


def _shape_of(dense_shape):
    """A SparseTensor's static shape: the known entries of its dense_shape (TF's constant_value_as_shape)."""
    shape = dense_shape._value.shape
    if shape is None or len(shape) != 1 or shape[0] is None:
        return TensorShape(None)
    known = partial_value(dense_shape)
    return TensorShape([None if d is None or d < 0 else int(d) for d in known.tolist()])


sparse_tensor._static_shape = _shape_of


def _dims_from(shape_tensor):
    """Output dims from a 1-D shape tensor (known entries, None elsewhere); None for an unknown rank."""
    shape = _shape_of(shape_tensor)
    return None if shape.rank is None else tuple(shape.as_list())


def _index_text(row):
    return "[" + ",".join(str(int(i)) for i in row) + "]"


# -- to_dense ---------------------------------------------------------------------------------

def _check_default(values, default):
    if default.dtype != values.dtype:
        raise_type_mismatch("SparseToDense", 3, values.dtype, default.dtype)


def _to_dense_shape(sparse_indices, output_shape, sparse_values, default_value, validate_indices=True):
    _check_default(sparse_values._value, default_value._value)
    return [Meta(_dims_from(output_shape), sparse_values._value.dtype)]


def _validate(indices, shape):
    """TensorFlow's check of sorted, unique, in-bounds indices: the message for the first bad row."""
    bad = np.any((indices < 0) | (indices >= shape), axis=1)
    step = indices[1:] - indices[:-1]
    first = np.argmax(step != 0, axis=1)
    sign = np.sign(step[np.arange(len(step)), first]) if len(step) else np.zeros(0)
    bad[1:] |= sign <= 0
    if not bad.any():
        return
    i = int(np.argmax(bad))
    where = f"indices[{i}] = {_index_text(indices[i])}"
    if np.any((indices[i] < 0) | (indices[i] >= shape)):
        raise InvalidArgumentError(None, "SparseToDense", f"{where} is out of bounds: need 0 <= index < "
                                   f"{_index_text(shape)} [Op:SparseToDense]")
    if sign[i - 1] < 0:
        raise InvalidArgumentError(None, "SparseToDense", f"{where} is out of order. Many sparse ops require "
                                   "sorted indices.\n    Use `tf.sparse.reorder` to create a correctly ordered "
                                   "copy.\n\n [Op:SparseToDense]")
    raise InvalidArgumentError(None, "SparseToDense", f"{where} is repeated [Op:SparseToDense]")


@op("SparseToDense", same_dtype=False, shape=_to_dense_shape, shape_reads_inputs=True, unknown_rank=True)
def _sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value, validate_indices=True):
    _check_default(sparse_values, default_value)
    shape = np.asarray(output_shape, np.int64).reshape(-1)
    indices = np.asarray(sparse_indices, np.int64).reshape(-1, shape.size) if shape.size else \
        np.zeros((np.size(sparse_indices), 0), np.int64)
    if validate_indices:
        _validate(indices, shape)
    elif np.any((indices < 0) | (indices >= shape)):
        raise InvalidArgumentError(None, "SparseToDense", f"Indices are not valid (out of bounds).  Shape: "
                                   f"{_index_text(shape)} [Op:SparseToDense]")
    out = np.full(tuple(shape), default_value, dtype=sparse_values.dtype)
    out[tuple(indices.T)] = sparse_values
    return out


@_sparse_to_dense.def_grad(reads_inputs=(0, 1, 2))
def _sparse_to_dense_grad(op, dy):
    # d out[i] / d values[k] = 1 where i = indices[k]; the default fills every other entry
    indices, output_shape, values = op.inputs[0], op.inputs[1], op.inputs[2]
    rows = primitives.reshape(indices, join_ops.concat([[-1], basic_ops.shape(output_shape)], 0))
    dvalues = scatter_ops.gather_nd(dy, rows)
    ddefault = primitives.reduce_sum(dy) - primitives.reduce_sum(dvalues)
    if values.shape.rank == 0:
        dvalues = primitives.reduce_sum(dvalues)
    return None, None, dvalues, ddefault


def _batch_rows(indices, size):
    """The indices of a batch of `size` SparseTensors sharing `indices` ([N, rank]) as one of rank + 1:
    each row prefixed by its example's number, example after example."""
    n = basic_ops.shape(indices, out_type=dtypes.int64)[0]
    example = basic_ops.range(basic_ops.cast(size, dtypes.int64))
    example = primitives.reshape(array_ops.tile(primitives.expand_dims(example, 1), primitives.stack([1, n])), [-1, 1])
    return join_ops.concat([example, array_ops.tile(indices, primitives.stack([size, 1]))], 1)


def _batch_shape(size, dense_shape):
    return join_ops.concat([primitives.reshape(basic_ops.cast(size, dtypes.int64), [1]), dense_shape], 0)


@_sparse_to_dense.def_batch
def _sparse_to_dense_batch(xs, batched, validate_indices=True):
    # B examples sharing indices and shape are one SparseTensor with a leading batch axis
    indices, output_shape, values, default = xs
    rank = output_shape._value.shape[0] if output_shape._value.shape else None
    if batched[0] or batched[1] or rank is None:
        raise batching.NotBatchable          # positions or shapes differ per example
    size = primitives.batch_size_of(values if batched[2] else default)
    indices = primitives.reshape(indices, [-1, rank])
    n = basic_ops.shape(indices)[0]
    values = values if batched[2] else primitives.broadcast_batch(values, size)
    values = primitives.reshape(primitives.broadcast_to(primitives.reshape(values, primitives.stack([size, -1])),
                                                      primitives.stack([size, n])), [-1])
    rows, shape = _batch_rows(indices, size), _batch_shape(size, output_shape)
    attrs = {"validate_indices": validate_indices}
    if not batched[3]:
        return execute(_sparse_to_dense, [rows, shape, values, default], attrs), True
    # a default per example: the entries no index hits take it
    zero = basic_ops.zeros_like(default[0])
    dense = execute(_sparse_to_dense, [rows, shape, values, zero], attrs)
    hit = execute(_sparse_to_dense, [rows, shape, math_ops.ones_like(values), zero], {"validate_indices": False})
    return dense + (math_ops.ones_like(hit) - hit) * primitives.reshape(default, [-1] + [1] * rank), True


@tf_export("sparse.to_dense")
def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor a SparseTensor stands for: its values at its indices, `default_value` elsewhere.

    Args:
      sp_input: a SparseTensor (indices sorted in row-major order, no repeats, unless
        `validate_indices` is False).
      default_value: the value of the other entries (0 by default); a Python value is
        converted to the values' dtype.
      validate_indices: check that the indices are sorted, unique and in bounds.
      name: a name for the op.

    Returns:
      A tensor of shape `sp_input.dense_shape`.

    Raises:
      TypeError: `sp_input` is not a SparseTensor.
      InvalidArgumentError: an index is out of bounds, out of order or repeated.

    >>> import tapeflow as tf
    >>> sp = tf.SparseTensor([[0, 1], [1, 0]], [5, 6], [2, 3])
    >>> tf.sparse.to_dense(sp, default_value=-1).numpy()
    array([[-1,  5, -1],
           [ 6, -1, -1]], dtype=int32)
    """
    sp_input = _sparse(sp_input)
    if default_value is None:
        default_value = constructor_ops.zeros([], dtype=sp_input.dtype)
    return execute(_sparse_to_dense, [sp_input.indices, sp_input.dense_shape, sp_input.values,
                                      convert_like(default_value, sp_input.dtype)],
                   {"validate_indices": validate_indices})


def _sparse(x):
    if not isinstance(x, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {type(x).__name__}. Make one with tf.SparseTensor or "
                        "tf.sparse.from_dense.")
    return x


@tf_export("sparse.from_dense")
def from_dense(tensor, name=None):
    """The SparseTensor of the nonzero entries of a dense tensor (in row-major order).

    Args:
      tensor: a tensor of rank 1 or more.
      name: a name for the ops.

    Returns:
      A SparseTensor of `tensor`'s shape; gradients flow to `tensor` through its values.

    >>> import tapeflow as tf
    >>> sp = tf.sparse.from_dense(tf.constant([[0.0, 1.5], [2.0, 0.0]]))
    >>> sp.indices.numpy().tolist(), sp.values.numpy().tolist()
    ([[0, 1], [1, 0]], [1.5, 2.0])
    """
    tensor = convert_to_tensor(tensor)
    indices = math_ops.where(math_ops.not_equal(tensor, basic_ops.zeros_like(tensor)))
    return SparseTensor(indices, scatter_ops.gather_nd(tensor, indices),
                        basic_ops.shape(tensor, out_type=dtypes.int64))


@tf_export("sparse.reorder")
def reorder(sp_input, name=None):
    """The SparseTensor with its entries in row-major order of their indices (what `to_dense` wants).

    Args:
      sp_input: a SparseTensor.
      name: a name for the ops.

    Returns:
      A SparseTensor of the same entries; gradients flow back to `sp_input.values`.

    >>> import tapeflow as tf
    >>> sp = tf.sparse.reorder(tf.SparseTensor([[1, 0], [0, 1]], [1.0, 2.0], [2, 2]))
    >>> sp.indices.numpy().tolist(), sp.values.numpy().tolist()
    ([[0, 1], [1, 0]], [2.0, 1.0])
    """
    sp_input = _sparse(sp_input)
    strides = reduction_ops.cumprod(sp_input.dense_shape, exclusive=True, reverse=True)
    order = sort_ops.argsort(primitives.reduce_sum(sp_input.indices * strides, axis=1), stable=True)
    return SparseTensor(scatter_ops.gather(sp_input.indices, order), scatter_ops.gather(sp_input.values, order),
                        sp_input.dense_shape)


# -- sparse_dense_matmul ----------------------------------------------------------------------

_MATMUL_TYPES = frozenset(d._np for d in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                                          dtypes.complex64, dtypes.complex128, dtypes.int32))


def _check_matmul_dtypes(a_values, b):
    if a_values.dtype not in _MATMUL_TYPES:
        name = dtypes.as_dtype(a_values.dtype).name
        if state.graphs:
            raise TypeError(f"Value passed to parameter 'a_values' has DataType {name} not in list of allowed "
                            "values: float32, float64, int32, complex64, complex128, float16, bfloat16")
        raise NotFoundError(None, "SparseTensorDenseMatMul", f"Could not find a kernel for SparseTensorDenseMatMul "
                            f"with values of type {name} [Op:SparseTensorDenseMatMul]")
    if b.dtype != a_values.dtype:
        raise_type_mismatch("SparseTensorDenseMatMul", 3, a_values.dtype, b.dtype)


def _matmul_shape(a_indices, a_values, a_shape, b, adjoint_a=False, adjoint_b=False):
    _check_matmul_dtypes(a_values._value, b._value)
    a_dims = _dims_from(a_shape)
    a_dims = (None, None) if a_dims is None or len(a_dims) != 2 else a_dims
    b_dims = b._value.shape
    if b_dims is not None and len(b_dims) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(b_dims)} for '{{node SparseTensorDenseMatMul}} = "
                         f"SparseTensorDenseMatMul' with input shapes: {list(b_dims)}.")
    b_dims = (None, None) if b_dims is None else b_dims
    rows, inner = a_dims[::-1] if adjoint_a else a_dims
    inner_b, cols = b_dims[::-1] if adjoint_b else b_dims
    if inner is not None and inner_b is not None and inner != inner_b:
        raise ValueError(f"Dimensions must be equal, but are {inner} and {inner_b} for '{{node "
                         "SparseTensorDenseMatMul}} = SparseTensorDenseMatMul'.")
    return [Meta((rows, cols), b._value.dtype)]


@op("SparseTensorDenseMatMul", same_dtype=False, shape=_matmul_shape, shape_reads_inputs=True, fresh_outputs=True)
def _sparse_dense_matmul(a_indices, a_values, a_shape, b, adjoint_a=False, adjoint_b=False):
    _check_matmul_dtypes(a_values, b)
    return _sparse_dense_product(a_indices, a_values, a_shape, b, adjoint_a, adjoint_b)


@computes_in_float32(dtype_of=1)
def _sparse_dense_product(a_indices, a_values, a_shape, b, adjoint_a, adjoint_b):
    fail = lambda message: InvalidArgumentError(None, "SparseTensorDenseMatMul",  # noqa: E731
                                                f"{message} [Op:SparseTensorDenseMatMul]")
    if b.ndim != 2:
        raise fail("Tensor 'b' is not a matrix")
    if np.size(a_shape) != 2:
        raise fail("Tensor 'a_shape' must have 2 elements")
    if a_indices.ndim != 2 or a_indices.shape[1] != 2 or a_indices.shape[0] != np.size(a_values):
        raise fail("Tensor 'a_indices' must be a matrix of 2 columns, one row per entry of 'a_values'")
    shape = [int(d) for d in a_shape]
    rows, inner = shape[::-1] if adjoint_a else shape
    op_b = b.conj().T if adjoint_b else b
    if inner != op_b.shape[0]:
        raise fail(f"Cannot multiply A and B because inner dimension does not match: {inner} vs. {op_b.shape[0]}.  "
                   f"Did you forget a transpose?  Dimensions of A: [{shape[0]}, {shape[1]}).  Dimensions of B: "
                   f"[{b.shape[0]},{b.shape[1]}]")
    r, k = (1, 0) if adjoint_a else (0, 1)
    for what, column, bound in (("m", r, rows), ("k", k, inner)):
        bad = np.flatnonzero((a_indices[:, column] < 0) | (a_indices[:, column] >= bound))
        if bad.size:
            i = int(bad[0])
            raise fail(f"{what} ({int(a_indices[i, column])}) from index[{i},{column}] out of bounds (>={bound})")
    values = a_values.conj() if adjoint_a else a_values
    a = scipy.sparse.csr_matrix((values, (a_indices[:, r], a_indices[:, k])), shape=(rows, inner))
    return np.asarray(a @ op_b, dtype=b.dtype)


@_sparse_dense_matmul.def_grad(reads_inputs=(0, 1, 2, 3))
def _sparse_dense_matmul_grad(op, dy):
    # C = op(A) op(B): dB = op(A)^H dy (transposed back for adjoint_b); dA at its entries only,
    # dA[r, c] = sum_k dy[r, k] conj(op(B))[c, k] (r and c swapped and conjugated for adjoint_a)
    indices, values, shape, b = op.inputs
    adjoint_a, adjoint_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    db = execute(_sparse_dense_matmul, [indices, values, shape, dy], {"adjoint_a": not adjoint_a,
                                                                       "adjoint_b": False})
    if adjoint_b:
        db = linalg_ops.matrix_transpose(db, conjugate=True)
    rows, cols = indices[:, 0], indices[:, 1]
    op_b = primitives.transpose(b) if adjoint_b else basic_ops.conj(b)
    dvalues = primitives.reduce_sum(scatter_ops.gather(dy, cols if adjoint_a else rows)
                                       * scatter_ops.gather(op_b, rows if adjoint_a else cols), axis=-1)
    if adjoint_a:
        dvalues = basic_ops.conj(dvalues)
    return None, dvalues, None, db


@_sparse_dense_matmul.def_batch
def _sparse_dense_matmul_batch(xs, batched, adjoint_a=False, adjoint_b=False):
    # Note [batched sparse matmul]: B products A_i op(B_i) sharing A's indices and shape are one
    # product: A_1..A_B on the diagonal of one sparse matrix, times the op(B_i) stacked by rows.
    indices, values, shape, b = xs
    if batched[0] or batched[2]:
        raise batching.NotBatchable          # the positions differ per example
    size = primitives.batch_size_of(values if batched[1] else b)
    values = values if batched[1] else primitives.broadcast_batch(values, size)
    offsets = primitives.expand_dims(basic_ops.range(basic_ops.cast(size, dtypes.int64)), 1)
    rows = primitives.reshape(offsets * shape[0] + indices[:, 0], [-1])
    cols = primitives.reshape(offsets * shape[1] + indices[:, 1], [-1])
    big_shape = primitives.stack([basic_ops.cast(size, dtypes.int64) * shape[0], basic_ops.cast(size, dtypes.int64)
                                * shape[1]])
    b = b if batched[3] else primitives.broadcast_batch(b, size)
    if adjoint_b:       # op(B_i) = B_i^H stacked by rows: the B_i side by side
        big_b = primitives.reshape(primitives.transpose(b, [1, 0, 2]), primitives.stack([basic_ops.shape(b)[1], -1]))
    else:
        big_b = primitives.reshape(b, primitives.stack([-1, basic_ops.shape(b)[2]]))
    out = execute(_sparse_dense_matmul, [primitives.stack([rows, cols], 1), primitives.reshape(values, [-1]),
                                         big_shape, big_b], {"adjoint_a": adjoint_a, "adjoint_b": adjoint_b})
    return primitives.reshape(out, primitives.stack([size, -1, basic_ops.shape(out)[1]])), True


@tf_export("sparse.sparse_dense_matmul")
def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The matrix product op(sp_a) @ op(b) of a sparse and a dense matrix (op: the adjoint when asked).

    Either operand may be the SparseTensor (a dense `sp_a` times a SparseTensor `b`
    is computed through transposes, as TensorFlow does).

    Args:
      sp_a: a SparseTensor of rank 2 (or a dense matrix when `b` is sparse).
      b: a dense matrix of the values' dtype (or a SparseTensor).
      adjoint_a: use the conjugate transpose of `sp_a`.
      adjoint_b: use the conjugate transpose of `b`.
      name: a name for the op.

    Returns:
      A dense matrix.

    Raises:
      InvalidArgumentError: the inner dimensions differ, an index is out of bounds, or the
        dtypes differ.

    >>> import tapeflow as tf
    >>> sp = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
    >>> tf.sparse.sparse_dense_matmul(sp, tf.ones([3, 2])).numpy()
    array([[1., 1.],
           [2., 2.]], dtype=float32)
    """
    if isinstance(b, SparseTensor):     # A B = (B^T A^T)^T, the adjoints folded in
        if adjoint_a != adjoint_b:
            return primitives.transpose(sparse_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return primitives.transpose(sparse_dense_matmul(b, sp_a, adjoint_a=not adjoint_a, adjoint_b=not adjoint_b))
    sp_a = _sparse(sp_a)
    return execute(_sparse_dense_matmul, [sp_a.indices, sp_a.values, sp_a.dense_shape, convert_to_tensor(b)],
                   {"adjoint_a": adjoint_a, "adjoint_b": adjoint_b})


# -- reduce_sum ---------------------------------------------------------------------------------

def _reduction_axes(axes, rank, op_type):
    """The reduction axes as non-negative ints (sorted, unique), checked against `rank`."""
    out = set()
    for a in np.asarray(axes).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise InvalidArgumentError(None, op_type, f"Invalid reduction dimension {a}, for input with {rank} "
                                       f"dimensions. [Op:{op_type}]")
        out.add(a % rank)
    return sorted(out)


def _reduce_sum_shape(input_indices, input_values, input_shape, reduction_axes, keep_dims=False):
    # known when the shape and the axes are (TensorFlow's shape function), else of unknown rank
    shape, axes = constant_value(input_shape), constant_value(reduction_axes)
    if shape is None or axes is None:
        return [Meta(None, input_values._value.dtype)]
    shape = shape.reshape(-1).tolist()
    axes = _reduction_axes(axes, len(shape), "SparseReduceSum")
    dims = [1 if i in axes else d for i, d in enumerate(shape)] if keep_dims else \
        [d for i, d in enumerate(shape) if i not in axes]
    return [Meta(tuple(dims), input_values._value.dtype)]


def _kept_coordinates(indices, shape, axes):
    """Each entry's coordinates in the result kept with size-1 reduced axes (zeros there)."""
    kept = np.array(indices, np.int64).reshape(-1, len(shape))
    kept[:, axes] = 0
    return kept


@op("SparseReduceSum", same_dtype=False, shape=_reduce_sum_shape, shape_reads_inputs=True, unknown_rank=True)
@computes_in_float32(dtype_of=1)
def _sparse_reduce_sum(input_indices, input_values, input_shape, reduction_axes, keep_dims=False):
    shape = np.asarray(input_shape, np.int64).reshape(-1)
    axes = _reduction_axes(reduction_axes, shape.size, "SparseReduceSum")
    kept_shape = tuple(1 if i in axes else int(d) for i, d in enumerate(shape))
    out = np.zeros(kept_shape, input_values.dtype)
    np.add.at(out, tuple(_kept_coordinates(input_indices, shape, axes).T), input_values)
    return out if keep_dims else out.reshape([d for i, d in enumerate(kept_shape) if i not in axes])


@_sparse_reduce_sum.def_grad(reads_inputs=(0, 2, 3))
def _sparse_reduce_sum_grad(op, dy):
    # each value's gradient is dy at its coordinates with the reduced axes dropped
    indices, shape, axes = op.inputs[0], op.inputs[2], op.inputs[3]
    rank = constructor_ops.size(shape)
    positions = primitives.reshape(math_ops.floormod(axes, rank), [-1, 1])
    kept = scatter_ops.tensor_scatter_nd_update(shape, positions, basic_ops.cast(math_ops.ones_like(
        primitives.reshape(axes, [-1])), dtypes.int64))
    scale = math_ops.floordiv(shape, kept)
    return None, scatter_ops.gather_nd(primitives.reshape(dy, kept), math_ops.floordiv(indices, scale)), None, None


@_sparse_reduce_sum.def_batch
def _sparse_reduce_sum_batch(xs, batched, keep_dims=False):
    # B examples sharing indices, shape and axes: one SparseTensor with a batch axis, reduced past it
    indices, values, shape, axes = xs
    if batched[0] or batched[2] or batched[3]:
        raise batching.NotBatchable
    size = primitives.batch_size_of(values)
    rank = constructor_ops.size(shape)
    shifted = math_ops.floormod(axes, rank) + 1
    return execute(_sparse_reduce_sum, [_batch_rows(indices, size), primitives.reshape(values, [-1]),
                                        _batch_shape(size, shape), shifted], {"keep_dims": keep_dims}), True


@op("SparseReduceSumSparse", same_dtype=False, num_outputs=3, shape_reads_inputs=True, unknown_rank=True,
    shape=lambda input_indices, input_values, input_shape, reduction_axes, keep_dims=False: [
        Meta((None, None), _INT64), Meta((None,), input_values._value.dtype), Meta((None,), _INT64)])
@computes_in_float32(dtype_of=1)
def _sparse_reduce_sum_sparse(input_indices, input_values, input_shape, reduction_axes, keep_dims=False):
    # the entries of the sum at the coordinates some entry reaches, in row-major order; no gradient (TF's)
    shape = np.asarray(input_shape, np.int64).reshape(-1)
    axes = _reduction_axes(reduction_axes, shape.size, "SparseReduceSumSparse")
    kept = _kept_coordinates(input_indices, shape, axes)
    coordinates, where = np.unique(kept, axis=0, return_inverse=True)
    sums = np.zeros(len(coordinates), input_values.dtype)
    np.add.at(sums, where.reshape(-1), input_values)
    keep = [i for i in range(shape.size) if keep_dims or i not in axes]
    out_shape = np.array([1 if i in axes else d for i, d in enumerate(shape)], np.int64)[keep]
    return coordinates[:, keep].reshape(len(coordinates), len(keep)), sums, out_shape


def _axes_of(sp, axis):
    """TensorFlow's reduction axes of a SparseTensor: all of them when `axis` is None."""
    if axis is not None:
        return convert_to_tensor(axis, dtype=dtypes.int32)
    rank = sp.shape.rank
    if rank is not None:
        return convert_to_tensor(np.arange(rank, dtype=np.int32))
    return basic_ops.range(0, basic_ops.cast(constructor_ops.size(sp.dense_shape), dtypes.int32))


@tf_export("sparse.reduce_sum")
def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """The sum of a SparseTensor's entries over `axis` (all axes when None), missing entries being 0.

    Args:
      sp_input: a SparseTensor (its indices in any order; repeated ones add up).
      axis: an int or a list of ints, negative ones counting from the end.
      keepdims: keep the reduced axes with size 1.
      output_is_sparse: return a SparseTensor of the sums at the coordinates some entry
        reaches (not differentiable, as TensorFlow's).
      name: a name for the op.

    Returns:
      A dense tensor (a SparseTensor with `output_is_sparse`).

    Raises:
      InvalidArgumentError: an axis is out of range.

    >>> import tapeflow as tf
    >>> sp = tf.SparseTensor([[0, 0], [1, 2], [1, 3]], [1.0, 2.0, 3.0], [2, 4])
    >>> tf.sparse.reduce_sum(sp, axis=1).numpy()
    array([1., 5.], dtype=float32)
    """
    sp_input = _sparse(sp_input)
    inputs = [sp_input.indices, sp_input.values, sp_input.dense_shape, _axes_of(sp_input, axis)]
    attrs = {"keep_dims": bool(keepdims)}
    if output_is_sparse:
        return SparseTensor(*execute(_sparse_reduce_sum_sparse, inputs, attrs))
    return execute(_sparse_reduce_sum, inputs, attrs)


# -- SparseTensor operators ---------------------------------------------------------------------

def _times_dense(sp, y, combine):
    """`sp` with each value combined with the dense `y` (broadcast to sp's shape) at its index:
    TensorFlow's SparseTensor * and / (a SparseTensor of the same indices)."""
    y = convert_like(y, sp.dtype)
    at = y if y.shape.rank == 0 else scatter_ops.gather_nd(primitives.broadcast_to(y, sp.dense_shape), sp.indices)
    return SparseTensor(sp.indices, combine(sp.values, at), sp.dense_shape)


SparseTensor.__mul__ = lambda self, y: _times_dense(self, y, math_ops.multiply)
SparseTensor.__truediv__ = lambda self, y: _times_dense(self, y, math_ops.truediv)
SparseTensor.__div__ = SparseTensor.__truediv__
