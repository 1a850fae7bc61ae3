"""Forward-mode autodiff: `tf.autodiff.ForwardAccumulator`.

An accumulator watches primals with their tangents and, while it is active,
computes the tangent of every op output that depends on a watched tensor, as
the op runs (Jacobian-vector products).  It sits on the same stack as the
tapes (`state.tapes`) and answers the same protocol (`_tensor_tape`, `_offer`,
`_delete_trace`), so op dispatch needs no second check.

Note [JVP by double transpose]: an op's tangent comes from its gradient rule.
The rule maps output cotangents u to input cotangents J^T u, linearly; under a
tape watching u, the gradient of sum_i <J_i^T u, t_i> with respect to u is
sum_i J_i t_i, the output tangent.  The rules are differentiable tapeflow code,
so this works for every op with a gradient, at the cost of a small backward
pass per op; an op may declare a cheaper `jvp` rule in its record instead.
u is ones rather than zeros, so rules that special-case a zero upstream
gradient (Reciprocal's, Sqrt's) stay on their general branch.

Note [forward nesting]: while an accumulator computes a JVP, only the tapes
and accumulators entered before it (outside it) see that work.  So an outer
accumulator gets tangents of an inner one's tangents (higher order), an outer
tape differentiates them (reverse over forward), and an accumulator active
during a tape's backward pass gets tangents of the gradients (forward over
reverse: Hessian-vector products).
"""

import logging

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import LINEAR, SELF_ADJOINT, OpRecord, execute
from tapeflow.framework.tensor import Tensor, convert_to_tensor, pop_recorder, push_recorder
from tapeflow.ops import math_ops
from tapeflow.ops.core import basic_ops
from tapeflow.ops.gradient_rules import (
    UnconnectedGradients, apply_rule, missing_gradient_error, unconnected_policy as _unconnected,
)
from tapeflow.ops.variables import Variable
from tapeflow.eager.backprop import GradientTape

_log = logging.getLogger("tapeflow")
_TRAINABLE = dtypes.TRAINABLE_NP


class _Accumulator:
    """The recording half of a ForwardAccumulator: tensor id -> tangent."""

    __slots__ = ("_tensor_tape", "_unchecked", "__weakref__")

    is_accumulator = True
    watch_accessed = False        # variables are primals only when given as such
    persistent = True

    def __init__(self):
        self._tensor_tape = {}    # tensor (or variable) id -> its tangent
        self._unchecked = {}      # primal id -> primal, whose tangent's shape an op has not checked yet

    def is_watched(self, tensor_id):
        return tensor_id in self._tensor_tape

    def _delete_trace(self, tensor_id):
        self._tensor_tape.pop(tensor_id, None)

    def _offer(self, op_, inputs, input_ids, outputs, attrs, skip):
        """Computes the tangents of one op's outputs from its inputs' (Note [JVP by double transpose])."""
        tangents = self._tensor_tape
        if self._unchecked:
            self._check_shapes(inputs, input_ids)
        in_tangents = [tangents.get(i) for i in input_ids]
        saved = state.tapes
        outer = []
        for recorder in saved:        # Note [forward nesting]
            if recorder is self:
                break
            outer.append(recorder)
        state.tapes = outer
        try:
            out_tangents = _jvp(op_, inputs, input_ids, outputs, attrs, in_tangents)
        finally:
            state.tapes = saved
        for o, t in zip(outputs, out_tangents):
            if t is not None:
                tangents[o._id] = t

    def _check_shapes(self, inputs, input_ids):
        for t, i in zip(inputs, input_ids):
            if self._unchecked.pop(i, None) is not None:
                tangent = self._tensor_tape[i]
                if tuple(tangent._value.shape) != tuple(t._value.shape):
                    raise ValueError(f"Tangent shape {list(tangent._value.shape)} does not match the shape "
                                     f"{list(t._value.shape)} of the primal it was given for.")


def _jvp(op_, inputs, input_ids, outputs, attrs, in_tangents):
    """The output tangents of one op (None where an output has none)."""
    if op_.jvp is SELF_ADJOINT:
        x, y, t = inputs[0]._value, outputs[0]._value, in_tangents[0]
        if t is not None and x.dtype == y.dtype and x.dtype.kind == "f":
            rec = OpRecord(op_, inputs, input_ids, outputs, attrs, ())
            rec.outputs = outputs
            tangents = apply_rule(rec, [t])
            return [None if tangents is None else tangents[0]]
    elif op_.jvp is LINEAR:
        return _linear_jvp(op_, inputs, outputs, attrs, in_tangents)
    elif op_.jvp is not None:
        return op_.jvp(inputs, outputs, attrs, in_tangents)
    wanted = [i for i, o in enumerate(outputs) if o._value.dtype in _TRAINABLE]
    if not wanted or op_.grad is None:
        if op_.grad is None and wanted:
            raise missing_gradient_error(OpRecord(op_, inputs, input_ids, outputs, attrs, ()))
        return [None] * len(outputs)
    rec = OpRecord(op_, inputs, input_ids, outputs, attrs, ())
    rec.outputs = outputs             # the rule may read them (kept here whatever it declares)
    with GradientTape() as tape:
        dummies = []
        for i in wanted:
            u = math_ops.ones_like(outputs[i])
            tape.watch(u)
            dummies.append(u)
        cotangents = [None] * len(outputs)
        for i, u in zip(wanted, dummies):
            cotangents[i] = u
        in_cotangents = apply_rule(rec, cotangents)
        if in_cotangents is None:         # not differentiable: no tangent flows through
            return [None] * len(outputs)
        in_cotangents = [convert_to_tensor(g) if type(g) is IndexedSlices else g for g in in_cotangents]
    targets, seeds = [], []
    for g, t in zip(in_cotangents, in_tangents):
        if g is not None and t is not None:
            targets.append(g)
            seeds.append(t)
    result = [None] * len(outputs)
    if targets:
        for i, t in zip(wanted, tape.gradient(targets, dummies, output_gradients=seeds)):
            result[i] = convert_to_tensor(t) if type(t) is IndexedSlices else t     # tangents are dense
    return result


def _linear_jvp(op_, inputs, outputs, attrs, tangents):
    """The tangents of a LINEAR op: the op itself on the tangents (op_def.LINEAR)."""
    args = []
    for x, t in zip(inputs, tangents):
        if t is not None:
            args.append(t)
        elif x._value.dtype in _TRAINABLE:
            args.append(basic_ops.zeros_like(x.value() if isinstance(x, Variable) else x))
        else:
            args.append(x)
    out = execute(op_, args, attrs)
    outs = out if type(out) is tuple else (out,)
    return [t if o._value.dtype in _TRAINABLE else None for o, t in zip(outputs, outs)]


@tf_export("autodiff.ForwardAccumulator")
class ForwardAccumulator:
    """Computes Jacobian-vector products of everything computed from `primals`.

    Inside the `with` block each op on a watched tensor (or on a tensor computed
    from one) also computes its output's tangent: the directional derivative
    along `tangents`.  `jvp(t)` reads it.  Accumulators nest with each other
    (higher-order forward mode) and with `GradientTape` in both orders
    (forward-over-reverse Hessian-vector products; reverse over forward).

    Args:
      primals: a tensor or variable, or a nested structure of them.
      tangents: the same structure: one tangent per primal, of its shape.

    Raises:
      ValueError: a primal given twice, or tangents of another structure.

    >>> import tapeflow as tf
    >>> x = tf.constant([1.0, 2.0])
    >>> with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0])) as acc:
    ...     y = x * x
    >>> acc.jvp(y).numpy()
    array([2., 0.], dtype=float32)
    """

    def __init__(self, primals, tangents):
        self._acc = _Accumulator()
        self._recording = False
        seen = set()
        for p in nest.flatten(primals):
            if id(p) in seen:
                raise ValueError(f"Tensor {p!r} was specified as a primal multiple times. This may indicate an "
                                 "error. If it was intended, please sum the corresponding tangents.")
            seen.add(id(p))
        self._watch(primals, tangents)

    def __enter__(self):
        self._push()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop()

    def _push(self):
        if self._recording:
            raise ValueError("Accumulator is already recording.")
        push_recorder(self._acc)
        self._recording = True

    def _pop(self):
        pop_recorder(self._acc)
        self._recording = False

    def _watch(self, primals, tangents):
        nest.assert_same_structure(primals, tangents)
        for p, t in zip(nest.flatten(primals), nest.flatten(tangents)):
            if not isinstance(p, (Tensor, Variable)):
                p = convert_to_tensor(p)
            if p._value.dtype not in _TRAINABLE:
                _log.warning("The dtype of the watched primal must be floating (e.g. tf.float32), got %r", p.dtype)
            t = convert_to_tensor(t, dtype=p.dtype)
            self._acc._tensor_tape[p._id] = t
            self._acc._unchecked[p._id] = p

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangents of `primals` (a tensor or a nested structure of them).

        A tensor not computed from a watched primal while the accumulator was
        active has no tangent: None, or zeros with `unconnected_gradients="zero"`.
        """
        unconnected = _unconnected(unconnected_gradients)

        def fetch(t):
            tangent = self._acc._tensor_tape.get(t._id)
            if tangent is None and unconnected is UnconnectedGradients.ZERO:
                return basic_ops.zeros_like(t.value() if isinstance(t, Variable) else t)
            return tangent
        return nest.map_structure(fetch, primals)


def accumulating():
    """Whether a ForwardAccumulator is active on this thread."""
    return any(recorder.is_accumulator for recorder in state.tapes)
