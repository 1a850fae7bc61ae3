"""`tf.types`: type names for annotations (graph/public_types.py)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)

from tapeflow.types import experimental  # noqa: E402,F401
