"""`tf.compat`: the TF1 API subset (`tf.compat.v1`)."""

from tapeflow.compat import graph_collections, initializers, v1_functions, variable_scope  # noqa: F401  (compat.v1)
from tapeflow.compat import v1  # noqa: F401
