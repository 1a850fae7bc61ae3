"""Collective ops across MPI workers: the MPI layer (distribute/mpi.py) as tapeflow ops.

Each collective is one op of N inputs and N outputs whose kernel makes one
fused call of the communicator held in its `group` attr, so it runs eagerly,
inside `tf.function` (when the plan runs) and under tapes alike:

  MpiAllReduce      each output the sum of its input over the workers; gradient: the
                    all-reduce (SUM) of the output gradients.  MEAN is this op and a
                    division, so its gradient is the mean of the gradients.
  MpiAllGather      each output its input's rows of every worker, in rank order (the first
                    dimension may differ); gradient: MpiReduceScatter (the adjoint).
  MpiReduceScatter  the sum over the workers of each input, cut into the workers' blocks of
                    rows; this worker's block (the gradient of MpiAllGather; gradient:
                    MpiAllGather).
  MpiBroadcast      root's inputs on every worker (initial values); not differentiable.

Note [collectives in graphs]: MPI needs every worker to start the same
collectives in the same order.  In a graph these ops are stateful, so a plan
never folds them, never merges two of them (CSE) and always runs them in a
function, even when nothing reads their outputs; plans run ops in creation
order (Note [plan order] in graph/executor.py), and every worker traces the
same program, so the order is the same everywhere.  A backward function runs
only what its outputs need, but that set follows from the graph alone, so it
is again the same on every worker; the forward collectives' outputs reach it
as fed side values (Note [call side outputs] in graph/concrete_function.py) and never
run twice.  Eagerly, a collective whose inputs are all plain tensors checks
the workers' dtypes and shapes before the op runs, so a mismatch raises the
ValueError of Note [MPI collectives] itself; in a graph the kernel checks when
the plan runs, and the plan reports it as InvalidArgumentError naming the
node, as TensorFlow reports kernel errors.  In a plan, MpiAllReduce sums the
inputs that die there in place (Note [donated inputs] in graph/executor.py).
"""

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import LINEAR, execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.abstract_values import Meta
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core import batching, primitives


def _rows_free(*xs, **_):
    """Outputs of the inputs' dtypes and trailing dimensions, first dimension unknown."""
    return [Meta(None if x.shape is None else (None,) + tuple(x.shape[1:]), x.dtype) for x in xs]


def _scattered(*xs, n, **_):
    return _rows_free(*xs[:n])


@op("MpiAllReduce", same_dtype=False, num_outputs=-1, stateful=True, shape=shape_rules.unchanged_shapes,
    unknown_rank=True, jvp=LINEAR, batch=batching.PASSING, donates=True)
def _mpi_all_reduce(*xs, group, names, checked, pack_bytes, donated=()):
    return tuple(group.all_reduce(xs, names, checked, pack_bytes, donated))


@_mpi_all_reduce.def_grad(reads_inputs=False)
def _mpi_all_reduce_grad(op, *dys):
    # d/dx_w of sum over workers of x = the sum over workers of the output gradients
    float_dys = [(i, dy) for i, (x, dy) in enumerate(zip(op.inputs, dys, strict=True)) if _differentiable(x)]
    grads = [None] * len(dys)
    if float_dys:
        summed = all_reduce([dy for _, dy in float_dys], op.get_attr("group"), pack_bytes=op.get_attr("pack_bytes"))
        for (i, _), g in zip(float_dys, summed, strict=True):
            grads[i] = g
    return grads


@op("MpiAllGather", same_dtype=False, num_outputs=-1, stateful=True, shape=_rows_free, unknown_rank=True,
    jvp=LINEAR)
def _mpi_all_gather(*xs, group, names, checked):
    return tuple(group.all_gather(xs, names, checked))


@_mpi_all_gather.def_grad(reads_inputs=False)
def _mpi_all_gather_grad(op, *dys):
    # the adjoint of concatenating every worker's rows: sum over workers, keep this worker's rows
    pairs = [(x, dy) for x, dy in zip(op.inputs, dys, strict=True) if _differentiable(x)]
    if not pairs:
        return [None] * len(dys)
    blocks = iter(reduce_scatter([dy for _, dy in pairs], [x for x, _ in pairs], op.get_attr("group")))
    return [next(blocks) if _differentiable(x) else None for x in op.inputs]


@op("MpiReduceScatter", same_dtype=False, num_outputs=-1, stateful=True, shape=_scattered, unknown_rank=True,
    jvp=LINEAR)
def _mpi_reduce_scatter(*xs, n, group, names, checked):
    rows = [int(np.asarray(s).reshape(-1)[0]) for s in xs[n:]]
    return tuple(group.reduce_scatter(xs[:n], rows, names, checked))


@_mpi_reduce_scatter.def_grad(reads_inputs=False)
def _mpi_reduce_scatter_grad(op, *dys):
    # the adjoint of reduce-scatter is all-gather (the row counts get no gradient)
    n = op.get_attr("n")
    gathered = all_gather(list(dys), op.get_attr("group"))
    return list(gathered) + [None] * n


@op("MpiBroadcast", same_dtype=False, num_outputs=-1, stateful=True, shape=shape_rules.unchanged_shapes,
    unknown_rank=True, differentiable=False, batch=batching.PASSING)
def _mpi_broadcast(*xs, group, root, names, checked):
    return tuple(group.broadcast(xs, root, names, checked))


def _differentiable(t):
    dtype = t.dtype
    return dtype.is_floating or dtype.is_complex


def _names(tensors, names):
    """A name per tensor for error messages: those given, else graph tensors' own names."""
    if names is not None:
        return tuple(None if n is None else str(n) for n in names)
    return tuple(t.name if getattr(t, "_is_symbolic", False) else None for t in tensors)


def _run(op_, tensors, group, what, names, leading_free=False, **attrs):
    """Runs the collective `op_` on `tensors`: eagerly after checking the workers agree, so
    that a mismatch is the ValueError itself (Note [collectives in graphs])."""
    tensors = [convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    names = _names(tensors, names)
    checked = False
    if not state.graphs and all(type(t) is Tensor for t in tensors):
        group.check(what, [t._value for t in tensors], names, leading_free)
        checked = True
    return list(execute(op_, tensors, dict(attrs, group=group, names=names, checked=checked)))


def all_reduce(tensors, group, names=None, pack_bytes=0):
    """The sum over the workers of each tensor (one fused collective; differentiable).

    Args:
      tensors: a list of numeric tensors, the same dtypes and shapes on every worker.
      group: the communicator (`mpi.world()`).
      names: a name per tensor (or None entries) for error messages.
      pack_bytes: the most bytes sent in one message (0: no limit).

    Returns:
      A list of tensors.

    Raises:
      ValueError: the workers' tensors differ in number, dtype or shape (eagerly; in a
        `tf.function`, InvalidArgumentError with the same message).

    >>> import tapeflow as tf
    >>> from tapeflow.distribute import mpi
    >>> [t.numpy().tolist() for t in all_reduce([tf.constant([1.0, 2.0])], mpi.Communicator(None))]   # one worker
    [[1.0, 2.0]]
    """
    return _run(_mpi_all_reduce, tensors, group, "all-reduce", names, pack_bytes=pack_bytes)


def all_gather(tensors, group, names=None):
    """Each tensor's rows of every worker, concatenated in rank order (differentiable)."""
    return _run(_mpi_all_gather, tensors, group, "all-gather", names, leading_free=True)


def reduce_scatter(tensors, like, group, names=None):
    """The sum over the workers of each tensor, cut into blocks of rows as the tensors `like`
    (this worker's part of an all-gather) are: this worker's block."""
    rows = [primitives.shape_tensor(x, np.int64) for x in like]
    tensors = [convert_to_tensor(t) for t in tensors]
    names = _names(tensors, names)
    checked = False
    if not state.graphs and all(type(t) is Tensor for t in tensors):
        group.check("reduce-scatter", [t._value for t in tensors], names)
        checked = True
    out = execute(_mpi_reduce_scatter, tensors + rows,
                  {"n": len(tensors), "group": group, "names": names, "checked": checked})
    return list(out)


def broadcast(tensors, group, root=0, names=None):
    """Worker `root`'s tensors on every worker (one message for all of them)."""
    return _run(_mpi_broadcast, tensors, group, "broadcast", names, root=root)


def all_reduce_indexed_slices(slices, group, name=None):
    """The sum over the workers of `IndexedSlices`, kept sparse: every worker's indices and
    values concatenated in rank order (TensorFlow's CollectiveAllReduce does the same)."""
    indices, values = all_gather([slices.indices, slices.values], group,
                                 names=None if name is None else (f"{name}.indices", f"{name}.values"))
    return IndexedSlices(values, indices, slices.dense_shape)
