"""`tf.errors`: TensorFlow's exception classes."""

from tapeflow.framework.errors import *  # noqa: F401,F403
from tapeflow.framework.errors import OpError, InvalidArgumentError  # noqa: F401
