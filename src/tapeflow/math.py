"""`tf.math`: elementwise math, reductions and segment ops."""

from tapeflow.ops.math_ops import *  # noqa: F401,F403
