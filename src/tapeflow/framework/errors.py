"""TensorFlow's exception classes (`tf.errors`)."""


class OpError(Exception):
    """An error raised while running an op; carries the op type when known."""

    def __init__(self, node_def=None, op=None, message="", *args):
        if not message and isinstance(node_def, str) and op is None:
            node_def, message = None, node_def
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op


class InvalidArgumentError(OpError):
    pass


class NotFoundError(OpError):
    pass


class UnimplementedError(OpError):
    pass


class InternalError(OpError):
    pass


class OutOfRangeError(OpError):
    pass


class FailedPreconditionError(OpError):
    pass


class ResourceExhaustedError(OpError):
    pass


class UnknownError(OpError):
    pass
