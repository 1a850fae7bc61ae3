"""IndexedSlices: a sparse gradient, rows `values` at `indices` of a `dense_shape` tensor."""

import numpy as np

from tapeflow.framework import hooks
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor_shape import TensorShape


@tf_export("IndexedSlices")
class IndexedSlices:
    """A sparse slice representation: `dense[indices[i]] += values[i]`.

    >>> import tapeflow as tf
    >>> s = tf.IndexedSlices(tf.constant([[1.0], [2.0]]), tf.constant([0, 0]), tf.constant([3, 1]))
    >>> tf.convert_to_tensor(s).numpy().ravel()
    array([3., 0., 0.], dtype=float32)
    """

    __slots__ = ("_values", "_indices", "_dense_shape")

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def shape(self):
        if self._dense_shape is None:
            return TensorShape(None)
        return TensorShape([int(d) for d in np.asarray(self._dense_shape._value)])

    @property
    def device(self):
        return self._values.device

    def _as_tensor(self, dtype=None):
        """This value as a dense tensor, rows with repeated indices summed (differentiable;
        `convert_to_tensor` calls it).

        Raises:
          ValueError: the dense shape is unknown, or `dtype` is not this value's.
        """
        if self._dense_shape is None:
            raise ValueError("Cannot convert an IndexedSlices with an unknown dense_shape to a Tensor.")
        if dtype is not None and dtype != self.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices with dtype "
                             f"{self.dtype.name}")
        rows = int(np.asarray(self._dense_shape._value)[0])
        return hooks.segment_sum(self._values, self._indices, rows)

    def __neg__(self):
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __repr__(self):
        return (f"IndexedSlices(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")

