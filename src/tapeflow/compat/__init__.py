"""`tf.compat`: the TF1 API subset (`tf.compat.v1`)."""

from tapeflow.compat import v1  # noqa: F401
