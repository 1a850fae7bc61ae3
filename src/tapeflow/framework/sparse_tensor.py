"""`tf.SparseTensor`: a tensor given by the coordinates and values of its nonzero entries.

A SparseTensor is three tensors: `indices` (int64, [N, rank]: one row per entry),
`values` ([N]: the entries) and `dense_shape` (int64, [rank]).  It is no tensor
itself: ops take it through `tf.sparse` (ops/sparse_ops.py), and gradients flow
to its `values` (a tape watching them, or the tensors they were computed from).

Nested structures (framework/nest.py) see its three tensors, as TensorFlow's
do with `expand_composites=True`, so `tf.function` takes SparseTensors as
arguments and returns them (each of the three a placeholder, then an output).
"""

import optree

from tapeflow.framework import dtypes
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import convert_to_tensor


def _static_shape(dense_shape):
    """The static shape `dense_shape` describes (replaced by ops/sparse_ops.py with the
    partial evaluation of shape tensors, which lives above this layer)."""
    raise NotImplementedError


@tf_export("SparseTensor", "sparse.SparseTensor", names_op=False)
class SparseTensor:
    """A sparse tensor: the `values` at `indices` of a tensor of shape `dense_shape`, zeros elsewhere.

    Args:
      indices: int64 coordinates of the entries, [N, rank] (any order; most ops want the
        row-major order `tf.sparse.reorder` gives).
      values: the entries, [N].
      dense_shape: the int64 shape of the dense tensor, [rank].

    Raises:
      ValueError: the ranks or sizes of the three do not fit together, or `indices`
        or `dense_shape` is a tensor of another dtype than int64.
      TypeError: `indices` or `dense_shape` holds non-integers.

    >>> import tapeflow as tf
    >>> sp = tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    >>> sp.shape, sp.dtype
    (TensorShape([3, 4]), tf.float32)
    >>> tf.sparse.to_dense(sp).numpy()
    array([[1., 0., 0., 0.],
           [0., 0., 2., 0.],
           [0., 0., 0., 0.]], dtype=float32)
    """

    __slots__ = ("_indices", "_values", "_dense_shape", "__weakref__")

    _is_composite_tensor = True     # tf.is_tensor is true for it (it is not converted to a tensor)

    def __init__(self, indices, values, dense_shape):
        self._indices = _int64(indices, "indices")
        self._values = convert_to_tensor(values)
        self._dense_shape = _int64(dense_shape, "dense_shape")
        indices_shape = self._indices.shape.with_rank(2)
        values_shape = self._values.shape.with_rank(1)
        shape_shape = self._dense_shape.shape.with_rank(1)
        _compatible(indices_shape.as_list()[0], values_shape.as_list()[0])
        _compatible(indices_shape.as_list()[1], shape_shape.as_list()[0])

    @classmethod
    def from_value(cls, sparse_tensor_value):
        """A SparseTensor of the three tensors of `sparse_tensor_value` (a SparseTensor or an object
        with `indices`, `values` and `dense_shape`)."""
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values, sparse_tensor_value.dense_shape)

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def shape(self):
        """The static shape of the dense tensor (dims unknown while a graph is built stay None)."""
        return _static_shape(self._dense_shape)

    def get_shape(self):
        return self.shape

    @property
    def op(self):
        return self._values.op

    @property
    def graph(self):
        return self._values.graph

    def with_values(self, new_values):
        """A SparseTensor of the same indices and shape with `new_values`."""
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def _print_parts(self):
        """The tensors tf.print shows for it (Note [print templates] in ops/logging_ops.py)."""
        return [self._indices, self._values, self._dense_shape]

    def __repr__(self):
        return (f"SparseTensor(indices={self._indices!s}, values={self._values!s}, "
                f"dense_shape={self._dense_shape!s})")

    __str__ = __repr__


def _compatible(a, b):
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions {a} and {b} are not compatible")


def _int64(value, what):
    try:
        return convert_to_tensor(value, dtype=dtypes.int64)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None


def is_sparse(x):
    """Whether `x` is a SparseTensor."""
    return isinstance(x, SparseTensor)



optree.register_pytree_node(
    SparseTensor, lambda sp: ((sp._indices, sp._values, sp._dense_shape), None, None),
    lambda _, parts: SparseTensor(*parts), namespace="tapeflow")
