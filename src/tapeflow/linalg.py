"""`tf.linalg`: matrix ops."""

from tapeflow.ops.linalg_ops import *  # noqa: F401,F403
from tapeflow.ops.math_ops import matmul  # noqa: F401
