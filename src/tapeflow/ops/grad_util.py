"""Helpers shared by gradient rules: the one place broadcasting is undone.

Shapes are static tuples; in graphs they may hold None (unknown until run
time), or be None (unknown rank, Note [unknown rank] in framework/shapes/symbolic_tensors.py).  Then
the shape-of ops below take the tensor whose shape is wanted as an input and
read it when the graph runs.
"""

import numpy as np

from tapeflow.framework.op_def import execute, op
from tapeflow.ops import vectorization
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.shapes.symbolic_tensors import Meta, is_static
from tapeflow.ops.core import batching


def _sum_to(g, shape):
    """NumPy: sums array g down to `shape` (the inverse of broadcasting)."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
    return np.sum(g, axis=axes, keepdims=True, dtype=g.dtype).reshape(shape) if axes else g.reshape(shape)


def _like_shape(g, like):
    """The *ToShapeOf ops have like's static shape (any rank, unknown included)."""
    return [Meta(None if like.shape is None else tuple(like.shape), g.dtype)]


def _broadcast_like_shape(g, like):
    """BroadcastToShapeOf: like's static shape, unknown dims filled by g's sizes above 1."""
    if like.shape is None or g.shape is None:
        return _like_shape(g, like)
    dims = list(like.shape)
    for i in range(1, min(len(dims), len(g.shape)) + 1):
        if dims[-i] is None and g.shape[-i] is not None and g.shape[-i] > 1:
            dims[-i] = g.shape[-i]
    return [Meta(tuple(dims), g.dtype)]


@op("BroadcastToShapeOf", same_dtype=False, shape=_broadcast_like_shape, unknown_rank=True)
def broadcast_like(g, like):
    return np.broadcast_to(g, np.shape(like))


@broadcast_like.def_batch
def _broadcast_like_batch(xs, batched):
    g, like = xs
    if not batched[1]:
        like = vectorization.broadcast_batch(like, vectorization.batch_size_of(g))
    gap = _rank_gap(like, g) if batched[0] else 0
    if gap:                                          # g's examples lined up with like's
        g = vectorization.insert_axes(g, 1, gap)
    return broadcast_like(g, like), True


def _rank_gap(big, small):
    """How many more dims the examples of stacked `big` have than those of stacked `small`."""
    if big._value.ndim is None or small._value.ndim is None:
        raise batching.NotBatchable                  # unknown rank: the examples cannot be lined up
    return big._value.ndim - small._value.ndim


@broadcast_like.def_grad(reads_inputs=False)
def _broadcast_like_grad(op, dy):
    g = op.inputs[0]                                 # broadcasting's adjoint sums
    return unbroadcast(dy, g._value.shape, g), None


@op("SumToShapeOf", same_dtype=False, shape=_like_shape, unknown_rank=True)
def sum_like(g, like):
    return _sum_to(np.asarray(g), np.shape(like))


@sum_like.def_batch
def _sum_like_batch(xs, batched):
    g, like = vectorization.stacked_all(xs, batched, vectorization.batch_size_of(xs[batched.index(True)]))
    gap = _rank_gap(g, like)
    if not gap:
        return sum_like(g, like), True
    # the examples' leading dims summed too, not the batch axis: sum to like with size-1 axes after the batch
    return reshape_like(sum_like(g, vectorization.insert_axes(like, 1, gap)), like), True


@sum_like.def_grad(reads_inputs=False)
def _sum_like_grad(op, dy):
    g = op.inputs[0]                                 # summing's adjoint broadcasts
    if is_static(g._value.shape):
        # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
        from tapeflow.ops import array_ops
        return array_ops.broadcast_to(dy, g._value.shape), None
    return broadcast_like(dy, g), None


@op("ReshapeToShapeOf", same_dtype=False, shape=_like_shape, unknown_rank=True)
def reshape_like(g, like):
    return np.reshape(g, np.shape(like))


@reshape_like.def_batch
def _reshape_like_batch(xs, batched):
    g, like = vectorization.stacked_all(xs, batched, vectorization.batch_size_of(xs[batched.index(True)]))
    return reshape_like(g, like), True


@reshape_like.def_grad(reads_inputs=False)
def _reshape_like_grad(op, dy):
    g = op.inputs[0]                                 # reshape back
    if is_static(g._value.shape):
        # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
        from tapeflow.ops import array_ops
        return array_ops.reshape(dy, g._value.shape), None
    return reshape_like(dy, g), None


# Note [static shapes in gradients]: a rule that needs only an input's shape reads
# `x._value.shape`, which eager records keep even for inputs whose values they drop
# (Note [saved inputs] in framework/op_def.py).  It builds ops from the static shape
# when it is fully known (always when executing eagerly) and takes a Shape op (or
# a *ToShapeOf op) of the input only in graphs, where dims may be unknown.

def shape_tensor(x, out_type=np.int32):
    """x's shape as a 1-D int tensor: a constant when static, else read when the graph runs."""
    shape = x._value.shape
    if is_static(shape):
        return Tensor(np.asarray(shape, out_type))
    # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
    from tapeflow.ops import constructor_ops
    return constructor_ops.shape(x, out_type=out_type)


def zeros_of(x):
    """Zeros of x's shape and dtype (Note [static shapes in gradients])."""
    shape = x._value.shape
    if is_static(shape):
        return Tensor(np.zeros(shape, x._value.dtype))
    # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
    from tapeflow.ops import math_ops
    return math_ops.zeros_like(x)


def shape_of(t):
    """The static shape tuple of a tensor (or variable)."""
    return t._value.shape


def unbroadcast(grad, shape, like=None):
    """Sums `grad` down to `shape`, undoing NumPy-style broadcasting.

    With unknown dimensions or rank (graphs), `like` (a tensor of the target
    shape) is required and the reduction happens when the graph runs.

    >>> import tapeflow as tf
    >>> from tapeflow.ops.grad_util import unbroadcast
    >>> unbroadcast(tf.ones([2, 3]), (3,)).numpy()
    array([2., 2., 2.], dtype=float32)
    """
    gshape = grad._value.shape if isinstance(grad, Tensor) else tuple(grad.shape)
    if gshape == shape and shape is not None and None not in shape:      # (inline: the eager hot path)
        return grad
    if gshape is None or shape is None or None in gshape or None in shape:
        if like is None:
            raise ValueError(f"unbroadcast of a gradient of shape {gshape} to {shape} needs `like`")
        return sum_like(grad, like)
    # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
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
    return (None if dx is None or 0 in skip else unbroadcast(dx, x._value.shape, x),
            None if dy is None or 1 in skip else unbroadcast(dy, y._value.shape, y))


def reduction_grad(dy, x, axes, keepdims):
    """Spreads the gradient of a reduction over `axes` of `x` back to x's shape."""
    # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
    from tapeflow.ops import array_ops
    shape = x._value.shape
    if shape is None:                   # unknown rank: axes None (all) or not normalized
        return broadcast_like(dy if keepdims else keep_reduced_dims(dy, x, axes), x)
    if None not in shape:
        if not keepdims:
            dy = array_ops.reshape(dy, tuple(1 if i in axes else d for i, d in enumerate(shape)))
        return array_ops.broadcast_to(dy, shape)
    if not keepdims:
        kept = tuple(1 if i in axes else (-1 if d is None else d) for i, d in enumerate(shape))
        if kept.count(-1) <= 1:
            dy = array_ops.reshape(dy, kept)
        else:
            for a in sorted(axes):
                dy = array_ops.expand_dims(dy, a)
    return broadcast_like(dy, x)


def keep_reduced_dims(t, x, axes):
    """`t`, the result of a reduction of `x` (of unknown rank) over `axes` without keepdims, with
    the reduced axes back as size-1 axes: the shape is computed when the graph runs (TF's
    reduced_shape).  `axes` None means all axes (`t` is a scalar: it broadcasts as it is);
    else the axes may be negative."""
    # deferred: the ops import circle (Note [the ops circle], tests/test_import_structure.py)
    from tapeflow.ops import array_ops, constructor_ops
    if axes is None:
        return t
    return array_ops.reshape(t, execute(_reduced_shape, [constructor_ops.shape(x)], {"axes": tuple(axes)}))


@op("ReducedShape", differentiable=False, shape=lambda shape, axes: [Meta(shape.shape, shape.dtype)])
def _reduced_shape(shape, axes):
    """A shape vector with 1 at `axes` (negative ones count from the end): the shape a reduction
    over `axes` keeps its result in before it is broadcast back (TF's reduced_shape)."""
    kept = np.array(shape)
    kept[..., np.asarray(axes, np.int64) % kept.shape[-1]] = 1
    return kept


@_reduced_shape.def_batch
def _reduced_shape_batch(xs, batched, axes):
    return execute(_reduced_shape, xs, {"axes": axes}), True       # a shape per example: the last axis
