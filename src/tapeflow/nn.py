"""`tf.nn`: neural-network ops."""

from tapeflow.ops.nn_ops import *  # noqa: F401,F403
