"""The eager tape: tape.h's data structures and its ComputeGradient in Python.

Terms: a *target* is a tensor being differentiated (dy in dy/dx), a *source*
is what it is differentiated with respect to (dx), an *op* is one record
(`OpRecord`) made by `op_def.record`.

Structures (all keyed by tensor id or op id):
  _tensor_tape   tensor id -> id of the op that made it; -1 for watched tensors
  _op_tape       op id -> OpRecord (its "backward function")
  _tensor_usage  tensor id -> how many live uses the tape knows of it
"""

from tapeflow.framework.errors import InternalError
from tapeflow.framework.op_def import OpRecord
from tapeflow.ops import gradient_rules
from tapeflow.ops.gradient_rules import apply_rule

# Note [early aggregation]: once more than _MIN_AGGREGATE_COUNT gradients for
# one tensor are pending and they would take over _MIN_AGGREGATE_BYTES, they
# are summed at once so the parts can be freed.
_MIN_AGGREGATE_COUNT = 4
_MIN_AGGREGATE_BYTES = 128 * 1024 * 1024


class Tape:
    """The recording half of a GradientTape (tape.h `GradientTape`)."""

    __slots__ = ("persistent", "watch_accessed", "_tensor_tape", "_op_tape", "_tensor_usage", "_next_op_id",
                 "_watched_variables", "_spent", "__weakref__")

    def __init__(self, persistent, watch_accessed):
        self.persistent = persistent
        self.watch_accessed = watch_accessed
        self._tensor_tape = {}
        self._op_tape = {}
        self._tensor_usage = {}
        self._next_op_id = 0
        self._watched_variables = {}   # variable id -> variable, in watch order
        self._spent = False            # a one-shot backprop has begun (Note [one-shot tape release])

    def watch(self, tensor_id):
        self._tensor_tape.setdefault(tensor_id, -1)

    def watch_variable(self, variable):
        if variable._id not in self._watched_variables:
            self._watched_variables[variable._id] = variable
        self._tensor_tape.setdefault(variable._id, -1)

    def watched_variables(self):
        return tuple(sorted(self._watched_variables.values(), key=lambda v: v._id))

    def is_watched(self, tensor_id):
        return tensor_id in self._tensor_tape

    is_accumulator = False     # see ForwardAccumulator (op_def.record)

    def _offer(self, op_, inputs, input_ids, outputs, attrs, skip):
        """Records one op (op_def.record's one-tape path)."""
        self._record(OpRecord(op_, inputs, input_ids, outputs, attrs, skip))

    def _record(self, rec):
        op_id = self._next_op_id
        self._next_op_id = op_id + 1
        usage = self._tensor_usage
        for i in rec.input_ids:
            usage[i] = usage.get(i, 0) + 1
        tensor_tape = self._tensor_tape
        for o in rec.output_ids:
            tensor_tape[o] = op_id
            usage[o] = 1
        self._op_tape[op_id] = rec

    def _delete_trace(self, tensor_id):
        """One use of `tensor_id` is gone: a dying tensor calls this on every active recorder
        (the deletion hook, Note [trace deletion] in framework/tensor.py)."""
        usage = self._tensor_usage
        count = usage.get(tensor_id)
        if count is None:
            return
        if count > 1:
            usage[tensor_id] = count - 1
            return
        del usage[tensor_id]
        op_id = self._tensor_tape.get(tensor_id)
        if op_id is None or op_id == -1:   # watched tensors stay
            return
        del self._tensor_tape[tensor_id]
        rec = self._op_tape.get(op_id)
        if rec is None:
            return
        for out in rec.output_ids:
            if out in usage:        # another output is still alive
                return
        del self._op_tape[op_id]
        for i in rec.input_ids:
            self._delete_trace(i)

    # -- ComputeGradient --------------------------------------------------
    def compute_gradient(self, target_ids, target_specs, source_ids, source_specs, output_gradients):
        """Backprop from targets to sources; returns one gradient (or None) per source.

        Note [reverse creation order]: op ids count up as ops run, and an op's
        inputs exist before it does, so visiting the records from the newest
        down is a reverse topological order: when a record is reached, every
        op that consumed its outputs has already passed its gradient back.
        No usage counts or ready queue are needed (tape.h's PrepareBackprop);
        a record whose outputs got no gradient is skipped, and records newer
        than the newest target's op cannot reach a target and are not visited.

        Note [one-shot tape release]: a non-persistent tape hands its records
        over to the backprop and forgets them, so each record (and the tensors
        it saved) is released right after its gradient has run.  If that backprop
        fails partway, the tape is spent all the same: a second call raises
        (InternalError, as TensorFlow's) rather than answer from what is left.
        """
        if self._spent:
            raise InternalError(None, None, "The gradient tape is spent: an earlier gradient() call on this "
                                "non-persistent tape failed after consuming its records. Record the computation "
                                "again, or use persistent=True.")
        tensor_tape = self._tensor_tape
        op_tape = self._op_tape
        sources = set(source_ids)
        grads = self._initial_gradients(target_ids, target_specs, source_specs, output_gradients, op_tape)
        last = -1
        for tid in target_ids:
            op_id = tensor_tape.get(tid, -1)
            if op_id > last:
                last = op_id
        records = [rec for op_id, rec in op_tape.items() if op_id <= last]
        if not self.persistent:      # Note [one-shot tape release]
            op_tape.clear()
            self._spent = True
        grad_sizes = {}
        pop = grads.pop
        while records:
            rec = records.pop()
            output_ids = rec.output_ids
            if len(output_ids) == 1:             # the common case, without the general loop
                oid = output_ids[0]
                g = pop(oid, None)
                if g is None:
                    continue
                if type(g) is list:
                    g = gradient_rules.aggregate(g)
                if oid in sources:
                    grads[oid] = g
                in_grads = apply_rule(rec, [g])
            else:
                in_grads = self._backward(rec, grads, sources)
            if in_grads is None:       # not differentiable, or no output got a gradient
                continue
            input_ids = rec.input_ids
            del rec   # Note [one-shot tape release]: the record dies here
            for tid, g in zip(input_ids, in_grads):
                if g is None:
                    continue
                pending = grads.get(tid)
                if pending is None:
                    # Kept for the tensors a recorded op made and the watched sources only.
                    producer = tensor_tape.get(tid)
                    if producer is not None and (producer != -1 or tid in sources):
                        grads[tid] = g
                elif type(pending) is list:
                    pending.append(g)
                    if len(pending) > _MIN_AGGREGATE_COUNT:
                        self._maybe_aggregate(tid, pending, grads, grad_sizes)
                else:
                    grads[tid] = [pending, g]
        result = []
        for sid in source_ids:
            g = grads.get(sid)
            result.append(gradient_rules.aggregate(g) if type(g) is list else g)
        return result

    def _initial_gradients(self, target_ids, target_specs, source_specs, output_gradients, op_tape):
        """The seeds: a dict tensor id -> gradient, or a list of gradients still to be summed."""
        grads = {}
        source_spec_of = dict(source_specs)
        tensor_tape = self._tensor_tape
        for i, tid in enumerate(target_ids):
            given = output_gradients[i] if output_gradients else None
            if given is None:
                op_id = tensor_tape.get(tid)
                if op_id is not None and op_id != -1 and op_id in op_tape:
                    given = gradient_rules.ones(*target_specs[i])
                elif tid in source_spec_of:   # a target that is also a source: d x / d x = 1
                    given = gradient_rules.ones(*source_spec_of[tid])
                else:
                    continue
            pending = grads.get(tid)
            if pending is None:
                grads[tid] = given
            elif type(pending) is list:
                pending.append(given)
            else:
                grads[tid] = [pending, given]
        return grads

    @staticmethod
    def _backward(rec, grads, sources):
        """Runs the gradient rule of a record with several outputs; None when none got a gradient."""
        out_grads = []
        for oid in rec.output_ids:
            g = grads.pop(oid, None)
            if g is not None:
                if type(g) is list:
                    g = gradient_rules.aggregate(g)
                if oid in sources:
                    grads[oid] = g
            out_grads.append(g)
        if out_grads.count(None) == len(out_grads):
            return None
        return apply_rule(rec, out_grads)

    @staticmethod
    def _maybe_aggregate(tid, pending, grads, grad_sizes):
        """See Note [early aggregation]."""
        size = grad_sizes.get(tid)
        if size is None:
            size = grad_sizes[tid] = gradient_rules.num_elements(pending[0])
        if len(pending) * size * 4 > _MIN_AGGREGATE_BYTES:
            grads[tid] = gradient_rules.aggregate(pending)

