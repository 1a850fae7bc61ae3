"""`tf.types.experimental`: TensorLike and the function types (graph/public_types.py)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
