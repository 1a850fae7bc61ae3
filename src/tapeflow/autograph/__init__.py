"""`tf.autograph`: `to_graph`, `to_code` and the `experimental` directives."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)

from tapeflow.autograph import experimental  # noqa: E402,F401
