"""Helpers shared by gradient rules: the one place broadcasting is undone."""

from tapeflow.framework.tensor import Tensor


def shape_of(t):
    """The static shape tuple of a tensor (or variable)."""
    return t._value.shape


def unbroadcast(grad, shape):
    """Sums `grad` down to `shape`, undoing NumPy-style broadcasting.

    >>> import tapeflow as tf
    >>> from tapeflow.ops.grad_util import unbroadcast
    >>> unbroadcast(tf.ones([2, 3]), (3,)).numpy()
    array([2., 2., 2.], dtype=float32)
    """
    gshape = grad._value.shape if type(grad) is Tensor else tuple(grad.shape)
    if gshape == shape:
        return grad
    from tapeflow.ops import array_ops, math_ops
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and gshape[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        grad = math_ops.reduce_sum(grad, axes)
    return array_ops.reshape(grad, shape)


def binary_grads(op, dx, dy):
    """Unbroadcasts the gradients of a broadcasting binary op to its input shapes."""
    x, y = op.inputs
    skip = op.skip_input_indices
    return (None if dx is None or 0 in skip else unbroadcast(dx, x._value.shape),
            None if dy is None or 1 in skip else unbroadcast(dy, y._value.shape))
