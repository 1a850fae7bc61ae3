"""Why a loss-scaled step was skipped: the count of skipped steps and the op that overflowed.

TensorFlow only says that a step's gradients were not finite.  tapeflow also
says where: the op whose gradient first became inf or NaN in the backward
pass, its type, its name and the line of the user's program that created it,
as a `NonFiniteReport`.  Whoever owns the loss scale keeps the count and the
last report (a `SkipLog`): the `LossScale` object for LossScaleGradientTape
and MixedPrecisionLossScaleOptimizer (it is the state every step shares, and
the tape itself lives for one step, or only while a `tf.function` is traced),
the Keras LossScaleOptimizer for its own scale.  All of them show it as
`skipped_steps` and `last_nonfinite`.

Note [no cost on finite steps]: nothing here runs while gradients are finite,
except that a LossScaleGradientTape notes where each op it records was created
(Note [creation sites]).  When `update` rejects a round, the tape's records
are walked again in a checking mode (`locate`): the gradient rules are applied
once more, through `apply_rule` like every backprop, from the same seeds (the
output gradients times the round's scale), and each result is checked as it
is made.  The first rule, in backward order, that turns finite gradients into
inf or NaN names the op; only gradients on the way to the sources count.  Its
`cause` then says whether the op's own gradient overflowed ("backward") or the
forward values it holds were already non-finite, followed back to the op that
made them ("forward") or to a value no op made ("input"); a sum of finite
gradients that overflows is "sum", a seed that does is "seed".  The walk is a
function of its own over the records, not a flag tested in the tape's loop
(`eager/tape.py` and `ops/gradient_rules.py` are unchanged), so ordinary tapes
and finite steps pay nothing for it.

Note [creation sites]: an eager op cannot be re-run to learn where it was
made, so the site is taken when the op is recorded: `SiteTape`, the tape
class of LossScaleGradientTape only, walks up the Python stack to the first
frame outside tapeflow's library (its examples count as user code) and keeps
that frame's file and line, by op id, dropped with the record.  GradientTape's
tape is `Tape`, so the hot path of ordinary tapes is untouched: no flag, no
test.  The walk costs about 1.2 microseconds per recorded op (a chain of
multiplies on 16 floats: 3.2 microseconds per op under a persistent
GradientTape, 4.5 under a LossScaleGradientTape), nothing next to a float16
layer's arithmetic.  Inside `tf.function` the same records are made while the
function is traced, so there the sites cost trace time only.

Note [skip reports in graphs]: inside `tf.function` (and in TF1 sessions, for
the optimizers) a rejected step is known only when the graph runs.  The report
is then a stateful host op (`NonFiniteReport`) in the false branch of a `cond`
on `should_apply`: on a finite step the cond takes the other branch and the op
never runs.  For a LossScaleGradientTape it takes the seeds, the unscaled
gradients and the forward values the gradient rules read, only those the
traced backward pass already captured (so no value lives longer for it), and
at run time rebuilds eager records from them (`_replay`: the other inputs
become zero stand-ins of their static shape) and runs the same `locate` as
eager mode.  Ops inside a nested function or control flow are reported as the
call or loop op that holds them.
"""

import logging
import os
import sys
import typing

import numpy as np

from tapeflow.eager.tape import Tape
from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import eager_mode, executing_eagerly, state, tapes_paused
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import ALL, NOT_DIFFERENTIABLE, OpRecord, op
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.graph import control_flow
from tapeflow.ops import gradient_rules

_log = logging.getLogger("tapeflow")


class NonFiniteReport(typing.NamedTuple):
    """Why a loss-scaled step was skipped: what `last_nonfinite` returns (a tapeflow
    addition, so it has no `tf.` name).

    Fields:
      op_type: the type of the op located (`"Exp"`, `"MatMul"`), or None when
        it is not known (the loss-scale optimizers see only gradients).
      op_name: its name: the graph op's name inside `tf.function`, the op
        type when it ran eagerly.
      source: `"path/to/file.py:LINE"`, the line of the program that created
        the op (the first caller outside tapeflow).
      cause: `"backward"`: the op's gradient turned finite incoming gradients
        into inf or NaN (an overflow under the loss scale, the usual reason);
        `"forward"`: the op's own output was already inf or NaN;
        `"input"`: a value the op was given (a watched tensor, a variable or a
        constant, made by no recorded op) was already inf or NaN;
        `"sum"`: the gradients reaching the op's output (or, with no op, a
        source) from several consumers are finite but their sum is not;
        `"seed"`: the output gradient times the loss scale is itself not
        finite in the target's dtype; None: not located.
      dtype: the dtype name of the first non-finite value (`"float16"`).
      loss_scale: the loss scale of the rejected step.
      step: the optimizer's `iterations` (TF1: `global_step`) when the step ran, 0
        for the first; None for a tape, or TF1 without `global_step`.
      variable: the name of the first variable (or source) whose gradient is
        not finite.
    """

    op_type: typing.Optional[str]
    op_name: typing.Optional[str]
    source: typing.Optional[str]
    cause: typing.Optional[str]
    dtype: typing.Optional[str]
    loss_scale: float
    step: typing.Optional[int] = None
    variable: typing.Optional[str] = None

    def __str__(self):
        where = f"step {self.step}" if self.step is not None else "a step"
        head = f"{where} was skipped at loss scale {self.loss_scale:g}"
        if self.variable is not None:
            head += f": the gradient of {self.variable} is not finite"
        if self.cause == "seed":
            return f"{head}; the output gradient times the loss scale overflows {self.dtype}"
        if self.cause is None:
            return head
        if self.op_type is None:
            return f"{head}; first {self.dtype} inf/NaN: in the sum of its gradients"
        return (f"{head}; first {self.dtype} inf/NaN: {_CAUSES[self.cause]} {self.op_type} "
                f"'{self.op_name}' created at {self.source}")


_CAUSES = {"backward": "in the gradient of", "forward": "in the forward output of",
           "input": "in an input given to", "sum": "in the sum of the gradients of the output of"}


class SkipLog:
    """The count of skipped steps and the last report, kept by a loss scale."""

    __slots__ = ("count", "last")

    def __init__(self):
        self.count = 0
        self.last = None

    def add(self, report):
        self.count += 1
        self.last = report


class ReplicaReports:
    """A SkipLog's stand-in for one LossScaleGradientTape call under a strategy: each of
    the `replicas` local replicas reports every rejected round (they are rejected
    together), and the round is counted once, with the most telling report — the first
    that names an op, else the first whose own gradients were bad, else the first (the
    overflow happened in another process)."""

    __slots__ = ("log", "replicas", "pending")

    def __init__(self, log, replicas):
        self.log, self.replicas, self.pending = log, replicas, []

    def add(self, report):
        self.pending.append(report)
        if len(self.pending) < self.replicas:
            return
        pending, self.pending = self.pending, []
        best = (next((r for r in pending if r.op_type is not None), None)
                or next((r for r in pending if r.dtype is not None), pending[0]))
        self.log.add(best)


def skip_log(loss_scale):
    """The SkipLog of a loss scale or a Keras LossScaleOptimizer (made on first use, so any
    LossScale subclass has one)."""
    log = getattr(loss_scale, "_skip_log", None)
    if log is None:
        log = loss_scale._skip_log = SkipLog()
    return log


# -- creation sites (Note [creation sites]) ------------------------------------------------

_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_EXAMPLES = _LIBRARY + "examples" + os.sep


def creation_site():
    """(file, line) of the innermost caller outside tapeflow's library, or None."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_LIBRARY) or name.startswith(_EXAMPLES):
            return name, f.f_lineno
        f = f.f_back
    return None


class SiteTape(Tape):
    """The tape of a LossScaleGradientTape: a `Tape` that also keeps where each op was
    created (Note [creation sites])."""

    __slots__ = ("sites",)

    def __init__(self, persistent, watch_accessed):
        super().__init__(persistent, watch_accessed)
        self.sites = {}        # op id -> (file, line)

    def _record(self, rec):
        self.sites[self._next_op_id] = creation_site()
        Tape._record(self, rec)

    def _delete_trace(self, tensor_id):
        op_id = self._tensor_tape.get(tensor_id)
        Tape._delete_trace(self, tensor_id)
        if op_id is not None and op_id not in self._op_tape:
            self.sites.pop(op_id, None)


# -- the checking walk (Note [no cost on finite steps]) ---------------------------------------

def is_bad(t):
    """Whether a held value (tensor, variable, IndexedSlices) has an inf or NaN; stand-ins
    without data (SavedInput) and non-float values count as finite."""
    if t is None:
        return False
    if type(t) is IndexedSlices:
        t = t.values
    value = t if isinstance(t, (np.ndarray, np.generic)) else getattr(t, "_value", None)
    if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind not in "fc":
        return False
    return not np.isfinite(value).all()


def dtype_name(t):
    """The dtype name ("float16") of a tensor, IndexedSlices or array."""
    if type(t) is IndexedSlices:
        t = t.values
    value = t if isinstance(t, (np.ndarray, np.generic)) else t._value
    return dtypes._BY_NP[np.dtype(value.dtype)].name


def locate(records, seeds, source_ids):
    """Where the gradients of one backprop first become non-finite.

    Args:
      records: the op records from the tape, in creation order (OpRecords, or
        `_replay`ed graph records), ending with the targets' newest op.
      seeds: tensor id -> the gradient the backprop starts from (the scaled ones).
      source_ids: ids of the differentiation sources.

    Returns:
      `(index of the record or None, cause, dtype name)`, or None when every
      gradient on the way to the sources stays finite.
    """
    for g in seeds.values():
        if is_bad(g):
            return None, "seed", dtype_name(g)
    producer = {}
    reach = set(source_ids)          # tensors whose gradient reaches a source
    relevant = []
    for k, rec in enumerate(records):
        for oid in rec.output_ids:
            producer[oid] = k
        hit = any(i in reach for i in rec.input_ids)
        relevant.append(hit)
        if hit:
            reach.update(rec.output_ids)
    grads = {tid: [g] for tid, g in seeds.items()}
    for k in range(len(records) - 1, -1, -1):
        rec = records[k]
        out_grads = []
        for oid in rec.output_ids:
            parts = grads.pop(oid, None)
            g = None
            if parts is not None and relevant[k]:
                g = parts[0] if len(parts) == 1 else gradient_rules.aggregate(parts)
                if is_bad(g):              # finite parts summed to inf
                    return k, "sum", dtype_name(g)
            out_grads.append(g)
        if all(g is None for g in out_grads) or rec.op.grad is NOT_DIFFERENTIABLE:
            continue
        in_grads = gradient_rules.apply_rule(rec, out_grads)
        for tid, g in zip(rec.input_ids, in_grads or ()):
            if g is None or tid not in reach:
                continue
            if is_bad(g):
                return _cause(k, records, producer, dtype_name(g))
            grads.setdefault(tid, []).append(g)
    for sid in set(source_ids):
        parts = grads.get(sid)
        if parts is not None and len(parts) > 1:
            g = gradient_rules.aggregate(parts)
            if is_bad(g):
                return None, "sum", dtype_name(g)
    return None


def _cause(k, records, producer, dtype):
    """The record to blame when record `k`'s rule made a non-finite gradient from finite
    ones: itself ("backward") unless the forward values it holds are already non-finite,
    in which case the op that made them ("forward", or "input" for a value no op made)."""
    rec = records[k]
    bad_in = [i for i, t in enumerate(rec.inputs) if is_bad(t)]
    if not bad_in:
        if any(is_bad(t) for t in rec.outputs or ()):
            return k, "forward", dtype_name(next(t for t in rec.outputs if is_bad(t)))
        return k, "backward", dtype
    seen = set()
    while bad_in and k not in seen:     # follow the non-finite value to the op that made it
        seen.add(k)
        t = rec.inputs[bad_in[0]]
        made_by = producer.get(rec.input_ids[bad_in[0]])
        if made_by is None:
            return k, "input", dtype_name(t)
        k, rec = made_by, records[made_by]
        dtype = dtype_name(t)
        bad_in = [i for i, u in enumerate(rec.inputs) if is_bad(u)]
    return k, "forward", dtype


def first_bad(values, names):
    """The name beside the first non-finite value (arrays or tensors); None when all are finite."""
    for value, name in zip(values, names, strict=True):
        if is_bad(value):
            return name
    return None


def source_name(source, index):
    """How a report names a differentiation source: a variable's or graph tensor's name,
    else its position."""
    if getattr(source, "_is_variable", False) or getattr(source, "_is_symbolic", False):
        return source.name
    return f"sources[{index}]"


def scaled_seeds(targets, scale):
    """tensor id -> the gradient a scaled backprop starts from, for `targets`, a list of
    (tensor id, value, output gradient value or None): the output gradient (ones by
    default) times the loss scale cast to the target's dtype, as the product
    `target * cast(scale)` that the tape differentiates gives it."""
    seeds = {}
    for tid, value, given in targets:
        value = np.asarray(value)
        if value.dtype not in dtypes.TRAINABLE_NP:
            continue
        base = np.ones(value.shape, value.dtype) if given is None else np.asarray(given, value.dtype)
        seed = base * np.asarray(scale, np.float32).astype(value.dtype)
        seeds[tid] = Tensor(seed if tid not in seeds else seeds[tid]._value + seed)
    return seeds


# -- LossScaleGradientTape's rejected rounds ----------------------------------------------------

def explain_rejected_round(tape, log, ready, scale, target, output_gradients, flat_sources, raw, grads):
    """Counts a rejected round of a LossScaleGradientTape on `log` and locates the op behind
    it (Note [no cost on finite steps]): eagerly from the tape's records, in a graph from a
    host op that replays them (Note [skip reports in graphs]).

    Args:
      tape: the tape's `SiteTape`.
      ready: what `update` said (a bool or a scalar bool tensor).
      scale: the round's loss scale; target, output_gradients, flat_sources: as given to
        `gradient`; raw: the scaled gradients (None where unconnected); grads: the unscaled ones.
    """
    if ready is True or (executing_eagerly() and bool(ready)):
        return
    targets = [None if type(t) is IndexedSlices else t for t in nest.flatten(target)]
    given = [None] * len(targets) if output_gradients is None else list(nest.flatten(output_gradients))
    last = max([tape._tensor_tape.get(t._id, -1) for t in targets if t is not None] or [-1])
    op_ids = [i for i in tape._op_tape if i <= last]
    records = [tape._op_tape[i] for i in op_ids]
    ops = [(rec.type, _op_name(rec), _site(tape.sites.get(i))) for i, rec in zip(op_ids, records)]
    kept = [k for k, g in enumerate(raw) if g is not None]
    names = [source_name(flat_sources[k], k) for k in kept]
    source_ids = [s._id for s in flat_sources]
    if executing_eagerly():
        seeded = [(t, g) for t, g in zip(targets, given) if t is not None]

        def find(scale_value, fed):
            seeds = scaled_seeds([(t._id, t._value, None if g is None else convert_to_tensor(g)._value)
                                  for t, g in seeded], scale_value)
            return locate(records, seeds, source_ids)
        feeds = []
    else:
        graph = GraphRecords(records)
        slots = [(t._id, graph.feed(t), None if g is None else graph.feed(g))
                 for t, g in zip(targets, given) if t is not None and not t._is_variable]

        def find(scale_value, fed):
            seeds = scaled_seeds([(tid, fed[at], None if gat is None else fed[gat]) for tid, at, gat in slots],
                                 scale_value)
            return locate(graph.replay(fed), seeds, source_ids)
        feeds = graph.feeds

    def callback(values):
        scale_value, bad = values[0], values[1:1 + len(kept)]
        found = run_quietly(find, scale_value, values[1 + len(kept):])
        log.add(_tape_report(found, ops, float(scale_value), first_bad(bad, names), bad))
    when_rejected(ready, [scale] + [grads[k] for k in kept] + feeds, callback)


def _op_name(rec):
    """A graph record's op name (its Operation's); an eager record's is its type."""
    outputs = rec.outputs or ()
    if outputs and getattr(outputs[0], "_is_symbolic", False):
        return outputs[0].op.name
    return rec.name


def _site(site):
    return None if site is None else f"{site[0]}:{site[1]}"


def _tape_report(found, ops, scale, variable, grads):
    """The NonFiniteReport of `locate`'s answer (None fields where nothing was located)."""
    dtype = next((dtype_name(g) for g in grads if is_bad(g)), None)
    if found is None:
        return NonFiniteReport(None, None, None, None, dtype, scale, None, variable)
    index, cause, dtype = found
    op_type, op_name, source = (None, None, None) if index is None else ops[index]
    return NonFiniteReport(op_type, op_name, source, cause, dtype, scale, None, variable)


# -- graphs (Note [skip reports in graphs]) -----------------------------------------------------

def _no_outputs(*inputs, **attrs):
    return []


@op("NonFiniteReport", same_dtype=False, num_outputs=-1, stateful=True, shape=_no_outputs, differentiable=False)
def _nonfinite_report(*values, callback):
    callback([np.asarray(v) for v in values])
    return ()


def report_now(tensors, callback):
    """Calls `callback(values)` (NumPy arrays, one per tensor): at once when executing
    eagerly, else when the graph being built runs this point (a host op)."""
    tensors = [t.values if type(t) is IndexedSlices else convert_to_tensor(t) for t in tensors]
    if executing_eagerly():
        callback([np.asarray(t._value) for t in tensors])
    else:
        _nonfinite_report(*tensors, callback=callback)


def when_rejected(should_apply, tensors, callback):
    """Calls `callback(values)` (a list of NumPy arrays, one per tensor) when the step's
    `should_apply` is False: at once when executing eagerly, or, in a graph, from a host
    op in the false branch of a cond (Note [skip reports in graphs]).  Nothing is done
    for a Python True (a fixed loss scale)."""
    if should_apply is True:
        return None
    if executing_eagerly():
        if not bool(should_apply):
            report_now(tensors, callback)
        return None

    def report():
        report_now(tensors, callback)
        return convert_to_tensor(True)
    return control_flow.cond(should_apply, lambda: convert_to_tensor(False), report)


# -- replaying graph records eagerly --------------------------------------------------------------

def _replay(rec, inputs, outputs):
    """A graph record with values: an eager OpRecord (what a gradient rule sees) holding
    every input and output, under the graph record's ids."""
    replayed = OpRecord(rec.op, inputs, list(rec.input_ids), outputs, rec.attrs, rec.skip_input_indices)
    replayed.inputs, replayed.outputs, replayed.output_ids = inputs, outputs, list(rec.output_ids)
    return replayed


def _static(t):
    shape = t._value.shape
    return shape is not None and None not in shape


class GraphRecords:
    """Graph records (made while a function was traced) and the tensors whose values
    must be fed to replay them: those the rules read, and those of unknown shape.

    Built in the graph that holds the backward pass, after it: a value a rule declares
    it reads but that the traced backward did not capture is not read there (graph
    rules read only what they use), so it is replaced by zeros rather than kept alive
    longer for the report (Note [no cost on finite steps]).
    """

    def __init__(self, records):
        self.records = records
        self.feeds = []            # tensors the host op takes
        self._slot = {}            # tensor id -> position in feeds
        self._spec = {}            # tensor id -> how replay makes it (one tensor for all its uses)
        self._used = getattr(state.graphs[-1], "_capture_of", {})    # outer tensor id -> placeholder
        for rec in records:
            for i, t in enumerate(rec.inputs):
                self._note(t, _reads(rec, i))
            for t in rec.outputs:
                self._note(t, rec.op.grad_reads_outputs or len(rec.outputs) > 1)

    def feed(self, t):
        """The position of `t`'s value among the host op's inputs (replay uses that value)."""
        pos = self._slot.get(t._id)
        if pos is None:
            pos = self._slot[t._id] = len(self.feeds)
            self.feeds.append(t)
        self._spec[t._id] = ("feed", pos)
        return pos

    def _note(self, t, read):
        """Settles how replay makes `t`: fed when some rule reads it (and the backward
        captured it) or its shape is not static, a zero stand-in otherwise."""
        if self._spec.get(t._id, ("zeros",))[0] != "zeros":
            return
        if t._is_variable:                  # rules read a variable's shape, never its value
            self._spec[t._id] = ("zeros", tuple(t._value.shape), t._value.dtype)
        elif type(t) is Tensor:             # an eager value captured at trace time
            self._spec[t._id] = ("value", t)
        elif (read and t._id in self._used) or not _static(t):
            self.feed(t)
        else:
            self._spec[t._id] = ("zeros", tuple(t._value.shape), t._value.dtype)

    def replay(self, values):
        """The records with tensors of `values` (one per feed), keyed by the original ids."""
        made = {}
        for t_id, spec in self._spec.items():
            if spec[0] == "feed":
                made[t_id] = Tensor(values[spec[1]])
            elif spec[0] == "value":
                made[t_id] = spec[1]
            else:
                made[t_id] = Tensor(np.broadcast_to(np.zeros((), spec[2]), spec[1]))
        return [_replay(rec, [made[i] for i in rec.input_ids], [made[i] for i in rec.output_ids])
                for rec in self.records]


def _reads(rec, i):
    reads = rec.op.grad_reads_inputs
    return reads is ALL or (reads is not None and i in reads)


def run_quietly(fn, *args):
    """`fn(*args)` eagerly with no tape recording; a failure is logged and gives None (a
    diagnosis must never break the training step)."""
    try:
        with eager_mode(), tapes_paused(), np.errstate(all="ignore"):
            return fn(*args)
    except Exception:  # noqa: BLE001 - the report is best effort, the step goes on
        _log.warning("tapeflow could not locate the op behind a non-finite gradient", exc_info=True)
        return None
