"""Full and batch Jacobians from a tape.

Note [vectorized Jacobians]: with `experimental_use_pfor=True` (the default)
the backprop runs once, seeded with a batched output gradient (ops/core/vectorization.py)
whose examples are the rows of the identity: each gradient rule then runs
once on all rows through the batching rules of the ops it uses, and the
stacked source gradients are the Jacobian.  With `experimental_use_pfor=False`
each row seeds its own backprop with a one-hot output gradient.  Either way
nothing new is recorded on the tape, and the work is done with tapeflow ops,
so a Jacobian computed under an outer tape can be differentiated again.
"""

import numpy as np

from tapeflow.framework import nest
from tapeflow.framework.context import state
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import constructor_ops, join_ops, math_ops
from tapeflow.ops.core import basic_ops, primitives
from tapeflow.ops.core.vectorization import vectorizing
from tapeflow.ops.gradient_rules import UnconnectedGradients
from tapeflow.ops.variables import Variable


def _rows(tape, target, sources, seeds):
    """Gradients of `target` against `sources` for each output-gradient seed."""
    rows = []
    with tape._as_persistent():
        for seed in seeds:
            grads = tape._compute([target], sources, [Tensor(seed)])
            rows.append([convert_to_tensor(g) if isinstance(g, IndexedSlices) else g for g in grads])
    return rows


def _assemble(rows, source, shape, unconnected, axis=0):
    """Stacks the per-row gradients of one source and reshapes them to `shape`."""
    if all(r is None for r in rows) and unconnected is UnconnectedGradients.NONE:
        return None
    if 0 in shape:   # nothing to stack (an empty target or source)
        return Tensor(np.zeros(shape, source._value.dtype))
    zeros = Tensor(np.zeros(source._value.shape, source._value.dtype))
    rows = [zeros if r is None else r for r in rows]
    return primitives.reshape(primitives.stack(rows, axis=axis), shape)


def _one_hot_seeds(rows, cols, dtype, shape):
    """`cols` seeds of `shape`, made one at a time: seed j is one at column j of a
    (rows, cols) view and zero elsewhere."""
    for j in range(cols):
        seed = np.zeros((rows, cols), dtype)
        seed[:, j] = 1
        yield seed.reshape(shape)


def _as_target(target, method):
    """A variable is its own target (d v / d v is the identity); a tensor is itself.

    Raises:
      AttributeError: anything else (TensorFlow reads `target.shape` first).
    """
    if isinstance(target, (Tensor, Variable)):
        return target
    raise AttributeError(f"'{type(target).__name__}' object has no attribute 'shape': the target of "
                         f"GradientTape.{method} must be a tf.Tensor or tf.Variable computed under the tape.")


def _stacked_rows(tape, target, sources, seed, n):
    """The gradients of `target` against `sources` for every one of the `n` examples of
    the stacked output gradient `seed`, in one batched backprop (Note [vectorized
    Jacobians]); each stacked, or None where unconnected."""
    if not isinstance(seed, Tensor):
        seed = state.graphs[-1].constant_node(Tensor(seed)) if state.graphs else Tensor(seed)
    with tape._as_persistent(), vectorizing(n) as level:
        grads = tape._compute([target], sources, [level.batch(seed)])
        return [None if g is None else level.unbatch(convert_to_tensor(g)) for g in grads]


def _static(shape):
    return shape is not None and None not in shape


def jacobian(tape, target, sources, unconnected, use_pfor=True):
    target = _as_target(target, "jacobian")
    flat_sources = nest.flatten(sources)
    tape._check_arguments([target], flat_sources)     # Note [non-tensor arguments] in backprop.py
    tshape, tdtype = target._value.shape, target._value.dtype
    if use_pfor and not _static(tshape) and state.graphs:
        return nest.pack_sequence_as(sources, _dynamic_jacobian(tape, target, flat_sources, unconnected))
    n = int(np.prod(tshape, dtype=np.int64))
    if use_pfor and n:
        seed = np.eye(n, dtype=tdtype).reshape((n,) + tuple(tshape))
        stacked = _stacked_rows(tape, target, flat_sources, seed, n)
        out = [_assemble_stacked(g, s, tuple(tshape) + tuple(s._value.shape), unconnected)
               for g, s in zip(stacked, flat_sources, strict=True)]
        return nest.pack_sequence_as(sources, out)
    # An empty target still takes one (empty) backprop, which tells connected
    # sources (empty Jacobians) from unconnected ones (None), as in TensorFlow.
    seeds = _one_hot_seeds(1, n, tdtype, tshape) if n else [np.zeros(tshape, tdtype)]
    rows = _rows(tape, target, flat_sources, seeds)
    out = [_assemble([r[k] for r in rows], s, tshape + s._value.shape, unconnected)
           for k, s in enumerate(flat_sources)]
    return nest.pack_sequence_as(sources, out)


def _dynamic_jacobian(tape, target, sources, unconnected):
    """The vectorized Jacobian of a graph target whose shape is known only when the graph
    runs: the identity seed and the result shapes are computed in the graph."""
    n = constructor_ops.size(target)
    steps = basic_ops.range(n)
    eye = basic_ops.cast(math_ops.equal(primitives.expand_dims(steps, 1), primitives.expand_dims(steps, 0)),
                        target.dtype)
    seed = primitives.reshape(eye, join_ops.concat([primitives.reshape(n, [1]), basic_ops.shape(target)], 0))
    out = []
    for g, s in zip(_stacked_rows(tape, target, sources, seed, n), sources, strict=True):
        shape = join_ops.concat([basic_ops.shape(target), basic_ops.shape(s)], 0)
        if g is None:
            out.append(None if unconnected is UnconnectedGradients.NONE else constructor_ops.zeros(shape, s.dtype))
        else:
            out.append(primitives.reshape(g, shape))
    return out


def _assemble_stacked(g, source, shape, unconnected):
    """One source's stacked gradient rows reshaped to the Jacobian's `shape`."""
    if g is None:
        if unconnected is UnconnectedGradients.NONE:
            return None
        return Tensor(np.zeros(shape, source._value.dtype))
    return primitives.reshape(g, shape)


def batch_jacobian(tape, target, source, unconnected, use_pfor=True):
    target = _as_target(target, "batch_jacobian")
    if not isinstance(source, (Tensor, Variable)):
        raise AttributeError(f"'{type(source).__name__}' object has no attribute 'shape': the source of "
                             "GradientTape.batch_jacobian must be one tf.Tensor or tf.Variable.")
    tshape, sshape = target._value.shape, source._value.shape
    for what, shape in (("target", tshape), ("source", sshape)):
        if len(shape) < 2:
            raise ValueError(f"batch_jacobian needs a {what} of rank at least 2 ([batch, ...]); "
                             f"got shape {list(shape)}. Use GradientTape.jacobian for lower ranks.")
    if tshape[0] != sshape[0]:
        raise ValueError(f"Need first dimension of target shape ({list(tshape)}) and source shape "
                         f"({list(sshape)}) to match.")
    batch, inner = tshape[0], tshape[1:]
    n = int(np.prod(inner, dtype=np.int64))
    if use_pfor and n and batch and _static(tshape):
        return _batch_jacobian_pfor(tape, target, source, unconnected, n)
    seeds = _one_hot_seeds(batch, n, target._value.dtype, tshape)
    rows = _rows(tape, target, [source], seeds)
    out_shape = (batch,) + inner + sshape[1:]
    if all(r[0] is None for r in rows):
        # Like TensorFlow, an unconnected source gives zeros (of the target's
        # dtype) whatever `unconnected_gradients` says.
        return Tensor(np.zeros(out_shape, target._value.dtype))
    return _assemble([r[0] for r in rows], source, out_shape, unconnected, axis=1)


def _batch_jacobian_pfor(tape, target, source, unconnected, n):
    """batch_jacobian in one batched backprop: example j of the seed is one at inner
    position j of every row of the batch (Note [vectorized Jacobians])."""
    tshape, sshape = target._value.shape, source._value.shape
    batch, dtype = tshape[0], target._value.dtype
    seed = np.broadcast_to(np.eye(n, dtype=dtype)[:, None, :], (n, batch, n)).reshape((n,) + tuple(tshape))
    (g,) = _stacked_rows(tape, target, [source], np.ascontiguousarray(seed), n)
    out_shape = (batch,) + tuple(tshape[1:]) + tuple(sshape[1:])
    if g is None:
        return Tensor(np.zeros(out_shape, dtype))      # as TensorFlow: zeros whatever `unconnected` says
    rows = primitives.reshape(g, (n, batch, -1))       # [inner target, batch, inner source]
    return primitives.reshape(primitives.transpose(rows, (1, 0, 2)), out_shape)
