"""TensorFlow's exception classes (`tf.errors`)."""

from tapeflow.framework.export import tf_export


@tf_export("errors.OpError")
class OpError(Exception):
    """An error raised while running an op; carries the op type when known."""

    def __init__(self, node_def=None, op=None, message="", *args):
        if not message and isinstance(node_def, str) and op is None:
            node_def, message = None, node_def
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op


@tf_export("errors.InvalidArgumentError")
class InvalidArgumentError(OpError):
    pass


@tf_export("errors.NotFoundError")
class NotFoundError(OpError):
    pass


@tf_export("errors.UnimplementedError")
class UnimplementedError(OpError):
    pass


@tf_export("errors.InternalError")
class InternalError(OpError):
    pass


@tf_export("errors.OutOfRangeError")
class OutOfRangeError(OpError):
    pass


@tf_export("errors.FailedPreconditionError")
class FailedPreconditionError(OpError):
    pass


@tf_export("errors.ResourceExhaustedError")
class ResourceExhaustedError(OpError):
    pass


@tf_export("errors.UnknownError")
class UnknownError(OpError):
    pass


@tf_export("errors.OperatorNotAllowedInGraphError")
class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation on a graph tensor that needs its value (`bool`, iteration) while
    the graph is built: use `tf.cond`/`tf.while_loop`, or let AutoGraph convert the code."""
