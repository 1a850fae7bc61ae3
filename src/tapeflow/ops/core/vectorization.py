"""Vectorization: running a function of tapeflow ops on a whole batch at once.

A `BatchedTensor` stands for one example of a batch while a vectorized
function runs (`tf.vectorized_map`, the batched backward pass of `jacobian`):
its static shape and dtype are the example's, and its `_stacked` tensor holds
every example along a new leading axis.  An op that meets a batched input runs
its batching rule (the op record's `batch_rule`) on the stacked values instead
of its kernel on one example, so the function runs once for the whole batch.

Note [batching rules]: a rule is `rule(xs, batched, **attrs) -> (out, out_batched)`.
`xs` are the op's inputs, each batched one replaced by its stacked tensor (batch
axis 0) and marked in the tuple `batched`; the others are plain tensors shared by
every example.  The rule computes the stacked outputs with tapeflow ops (so the
result is differentiable and works in graphs) and says which outputs it returns
stacked (`out_batched`: a bool, or one per output).  Attributes hold the
example's axes, so rules shift them past the batch axis.  `ELEMENTWISE` marks an
op that maps examples to examples elementwise with NumPy broadcasting: its
kernel runs on the stacked values once their ranks are aligned.  An op with no
rule runs once per example in a loop (with a warning naming it).

Note [batching levels]: vectorizations nest (the Jacobian of a vectorized map,
vectorized Hessians).  Each active vectorization is a level, innermost last on
`state.vmaps`; a batched tensor belongs to one level and its stacked tensor may
itself be batched at an outer level.  An op is rewritten for the innermost
level among its inputs, and the rule's own ops are rewritten again for the
outer ones.  Tapes follow the same order: a tape entered inside a vectorized
function records the op as the function wrote it (batched tensors in, batched
tensors out), so gradients taken inside are per example; tapes entered outside
see only the stacked computation.
"""

import sys
import warnings

from tapeflow.framework.context import state
from tapeflow.framework.op_def import execute, record
from tapeflow.framework.tensor import Tensor
from tapeflow.ops.core import primitives
from tapeflow.ops.core.batching import ELEMENTWISE, REDUCTION, SAME_SHAPE, BatchedTensor, FamilyRule, NotBatchable
from tapeflow.ops.core.primitives import align_ranks, batch_size_of, broadcast_batch, stacked_all


class _Level:
    """One active vectorization: its depth, its batch size (None when unknown while
    a graph is built) and how many recorders were active when it began."""

    __slots__ = ("depth", "size", "outer_recorders")

    def __init__(self, depth, size, outer_recorders):
        self.depth = depth
        self.size = size
        self.outer_recorders = outer_recorders

    apply = staticmethod(lambda op_, inputs, attrs: apply(op_, inputs, attrs))


class vectorizing:
    """Context manager: a new innermost batching level of `size` examples.

    `batch(stacked)` makes the batched tensor of this level standing for one row of
    `stacked`; `unbatch(value)` gives back the stacked value of a result.
    """

    __slots__ = ("level",)

    def __init__(self, size):
        self.level = _Level(len(state.vmaps), size, len(state.tapes))

    def __enter__(self):
        state.vmaps.append(self.level)
        return self

    def __exit__(self, *exc):
        state.vmaps.remove(self.level)

    def batch(self, stacked):
        return BatchedTensor(stacked, self.level.depth)

    def unbatch(self, value):
        """The stacked form of `value`: its stacked tensor if batched at this level, else
        the value repeated for every example."""
        if getattr(value, "_is_batched", False) and value._level == self.level.depth:
            return value._stacked
        return broadcast_batch(value, self.level.size)


def apply(op_, inputs, attrs):
    """Runs `op_` on inputs some of which are batched (called by op_def.execute)."""
    depth = max(t._level for t in inputs if t._is_batched)
    level = state.vmaps[depth]
    batched = tuple(t._is_batched and t._level == depth for t in inputs)
    xs = [t._stacked if b else t for t, b in zip(inputs, batched)]
    recorders = state.tapes
    inner = recorders[level.outer_recorders:]
    if inner:                                          # Note [batching levels]
        state.tapes = recorders[:level.outer_recorders]
    try:
        out, out_batched = _run_rule(op_, xs, batched, attrs, level)
    finally:
        if inner:
            state.tapes = recorders
    if op_.num_outputs == 1:
        result = BatchedTensor(out, depth) if out_batched else out
        outputs = (result,)
    else:
        if out_batched is True or out_batched is False:
            out_batched = (out_batched,) * len(out)
        result = tuple(BatchedTensor(o, depth) if b else o for o, b in zip(out, out_batched, strict=True))
        outputs = result
    if inner:
        state.tapes = inner
        try:
            record(op_, inputs, outputs, attrs)
        finally:
            state.tapes = recorders
    return result


def _run_rule(op_, xs, batched, attrs, level):
    rule = op_.batch_rule
    try:
        if rule is ELEMENTWISE:
            return execute(op_, align_ranks(xs, batched), attrs), True
        if rule is SAME_SHAPE:                         # the shared inputs broadcast to the batch (a view, eagerly)
            return execute(op_, stacked_all(xs, batched, batch_size_of(xs[batched.index(True)])), attrs), True
        if rule is REDUCTION and attrs["axis"] is None:    # every axis of examples of unknown rank
            return _reduce_flattened(op_, xs[0], attrs), True
        if type(rule) is FamilyRule:
            return rule.fn(op_, xs, batched, attrs)
        if rule is not None:
            return rule(xs, batched, **attrs)
    except NotBatchable:
        return _loop(op_, xs, batched, attrs, level, "has no batching rule for these inputs")
    return _loop(op_, xs, batched, attrs, level, "has no batching rule")


def _reduce_flattened(op_, x, attrs):
    """A reduction over every axis of each example (of unknown rank): over the examples flattened."""
    if attrs.get("keepdims"):
        raise NotBatchable                              # the kept shape has the example's unknown rank
    flat = primitives.reshape(x, [batch_size_of(x), -1])
    return execute(op_, (flat,), {**attrs, "axis": (1,)})


def _loop(op_, xs, batched, attrs, level, why):
    """The fallback for an op with no batching rule: the op once per example, stacked."""
    if state.scopes.get("vectorize_fallback") is False:
        raise ValueError(f"No vectorization rule for op '{op_.type}' (tf.vectorized_map with "
                         "fallback_to_while_loop=False). Allow the fallback or avoid the op.")
    n = level.size
    if isinstance(n, Tensor):
        raise ValueError(f"Op '{op_.type}' has no batching rule, and the batch size is unknown while the graph "
                         "is built, so it cannot run once per example. Give the batch a static size.")
    warnings.warn(f"Op '{op_.type}' {why}: it runs once per example in a Python loop.",
                  stacklevel=_user_stacklevel())
    rows = [primitives.unstack(x, num=n) if b else None for x, b in zip(xs, batched)]
    outs = [execute(op_, [r[i] if r is not None else x for r, x in zip(rows, xs)], attrs) for i in range(n)]
    if op_.num_outputs == 1:
        return primitives.stack(outs), True
    return tuple(primitives.stack(list(o)) for o in zip(*outs)), True


def _user_stacklevel():
    """The warning stack level of the first frame outside tapeflow."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tapeflow."):
        frame, level = frame.f_back, level + 1
    return level


# -- helpers for rules -----------------------------------------------------------------


# Note [functions in vectorized code]: a function traced while vectorizations are active
# (a tf.function called inside vectorized_map, the branches of tf.cond, a while_loop body)
# is traced per example: `per_example_trace` hides the levels, so the batched tensors the
# function uses become captures (placeholders of the example's shape) and reach the op
# calling it (PartitionedCall, If, While) as inputs.  That op's rule then runs the body on
# the whole batch with `run_vectorized`, in a level of its own, as TensorFlow's pfor
# converts the functions of the ops it meets.

class per_example_trace:
    """Context manager: no vectorization is active inside (Note [functions in vectorized code])."""

    __slots__ = ("_saved",)

    def __enter__(self):
        self._saved = state.vmaps
        state.vmaps = []
        return self

    def __exit__(self, *exc):
        state.vmaps = self._saved


def run_vectorized(fn, xs, batched):
    """`fn` (a list of example tensors -> a list of tensors) run once on the stacked `xs`
    (those marked in `batched`) in a new level; returns its stacked outputs and which of
    them are batched (Note [functions in vectorized code])."""
    if True not in batched:
        outs = fn(list(xs))
        return outs, [False] * len(outs)
    size = batch_size_of(next(x for x, b in zip(xs, batched) if b))
    with vectorizing(size) as scope:
        outs = fn([scope.batch(x) if b else x for x, b in zip(xs, batched)])
        flags = [getattr(o, "_is_batched", False) and o._level == scope.level.depth for o in outs]
        return [o._stacked if b else o for o, b in zip(outs, flags)], flags
