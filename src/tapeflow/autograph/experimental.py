"""`tf.autograph.experimental`: `do_not_convert`, `set_loop_options`."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
