"""`tf.test`: gradient checking."""

from tapeflow.testing import compute_gradient  # noqa: F401
