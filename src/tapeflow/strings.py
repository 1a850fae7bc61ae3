"""`tf.strings`: joining, measuring, case, formatting and parsing of string tensors."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
