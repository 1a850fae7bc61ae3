"""`tf.sparse`: SparseTensor and the ops on it (ops/sparse_ops.py)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
