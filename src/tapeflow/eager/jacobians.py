"""Full and batch Jacobians from a tape: one backprop per target element (row).

Each row seeds the backprop with a one-hot output gradient, so nothing new is
recorded on the tape; the rows are stacked with tapeflow ops, so a Jacobian
computed under an outer tape can be differentiated again.
"""

import numpy as np

from tapeflow.framework import nest
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor


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
    from tapeflow.eager.backprop import UnconnectedGradients
    from tapeflow.ops import array_ops
    sshape = source._value.shape
    if all(r is None for r in rows):
        if unconnected is UnconnectedGradients.NONE:
            return None
    zeros = Tensor(np.zeros(sshape, source._value.dtype))
    rows = [zeros if r is None else r for r in rows]
    if not rows:
        return Tensor(np.zeros(shape, source._value.dtype))
    return array_ops.reshape(array_ops.stack(rows, axis=axis), shape)


def jacobian(tape, target, sources, unconnected):
    target = convert_to_tensor(target)
    flat_sources = nest.flatten(sources)
    tshape, tdtype = target._value.shape, target._value.dtype
    n = int(np.prod(tshape, dtype=np.int64))
    seeds = []
    for i in range(n):
        seed = np.zeros(n, tdtype)
        seed[i] = 1
        seeds.append(seed.reshape(tshape))
    rows = _rows(tape, target, flat_sources, seeds)
    out = [_assemble([r[k] for r in rows], s, tshape + s._value.shape, unconnected)
           for k, s in enumerate(flat_sources)]
    return nest.pack_sequence_as(sources, out)


def batch_jacobian(tape, target, source, unconnected):
    target = convert_to_tensor(target)
    tshape, sshape = target._value.shape, source._value.shape
    if not tshape or not sshape:
        raise ValueError("batch_jacobian needs target and source of rank >= 1 (the batch dimension first).")
    if tshape[0] != sshape[0]:
        raise ValueError(f"Need first dimension of target shape ({tshape}) and source shape ({sshape}) to match.")
    batch, inner = tshape[0], tshape[1:]
    n = int(np.prod(inner, dtype=np.int64))
    seeds = []
    for j in range(n):
        seed = np.zeros((batch, n), target._value.dtype)
        seed[:, j] = 1
        seeds.append(seed.reshape(tshape))
    rows = _rows(tape, target, [source], seeds)
    return _assemble([r[0] for r in rows], source, (batch,) + inner + sshape[1:], unconnected, axis=1)
