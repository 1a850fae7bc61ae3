"""`tf.compat.v1`: TF1 graphs, placeholders, sessions, variable collections and
initializers, and `gradients` with the v1 signature."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
