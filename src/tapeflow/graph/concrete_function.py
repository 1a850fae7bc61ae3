"""Concrete functions: one traced graph, callable as one op.

A traced function is a `ConcreteFunction`: a `FuncGraph` (placeholders for the
tensor arguments, captured outer values, the variables it reads) and a compiled
plan.  Calling it eagerly runs the plan; calling it while a graph is built adds
one "PartitionedCall" node.  Either way the call is one op to tapes and to
`tf.gradients`, whose gradient is another ConcreteFunction: the forward graph
copied and differentiated with `gradients` (Note [call gradients]).
"""

import collections

import numpy as np
import optree

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import ALL, execute, op
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, const
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import random_ops
from tapeflow.ops.core import primitives, vectorization
from tapeflow.ops.variables import Variable
from tapeflow.graph import function_type
from tapeflow.graph.executor import Plan
from tapeflow.graph.func_graph import FuncGraph, output_of
from tapeflow.graph.gradients import gradients
from tapeflow.graph.graph import _placeholder, infer_metas


# -- the call op ------------------------------------------------------------------

def _call_shape(*metas, f, fed=False, export=False):
    outputs = f._flat_tensor_outputs + (f._side_tensors() if export else [])
    refined = _refined_metas(f, metas)
    return [refined.get(t._id, t._value) if isinstance(t, SymbolicTensor) else Meta(t._value.shape, t._value.dtype)
            for t in outputs]


def _refined_metas(f, metas):
    """Note [call shapes]: a function traced for unknown dims (an `input_signature`
    of None dims) called on tensors that know more gets TensorFlow's output
    shapes: the body's shapes inferred again from the caller's input shapes.

    Returns {body tensor id: Meta} for the tensors whose shapes the caller's
    inputs make more specific; {} when they add nothing, or when an op of the
    body cannot be inferred again (the traced shapes stand then).
    """
    placeholders = f.inputs + [p for _, p in f.graph.captures]
    known = {}
    for p, m in zip(placeholders, metas):
        if type(m) is Meta and m.shape != p._value.shape:
            sharper = _sharper(p._value.shape, m.shape)
            if sharper is not None:
                known[p._id] = Meta(sharper, p._value.dtype)
    if not known:
        return known
    for op_ in f.graph._ops:
        if not any(t._id in known for t in op_.inputs if isinstance(t, Tensor)):
            continue
        stand_ins = [SymbolicTensor(t._op, t._index, known[t._id]) if isinstance(t, Tensor) and t._id in known
                     else t for t in op_.inputs]
        try:
            out = infer_metas(op_.op_def, stand_ins, op_.attrs)
        except Exception:       # noqa: BLE001 -- any failure: keep the traced shapes
            return {}
        for t, m in zip(op_.outputs, out):
            sharper = _sharper(t._value.shape, m.shape)
            if sharper is not None and sharper != t._value.shape:
                known[t._id] = Meta(sharper, t._value.dtype)
    return known


def _sharper(traced, inferred):
    """`traced` with its unknown dims filled from `inferred`; None when they disagree (or when
    `inferred` has unknown rank: it adds nothing)."""
    if inferred is None:
        return None
    if traced is None:
        return tuple(inferred)
    traced, inferred = tuple(traced), tuple(inferred)
    if len(traced) != len(inferred):
        return None
    if any(a is not None and b is not None and a != b for a, b in zip(traced, inferred)):
        return None
    return tuple(b if a is None else a for a, b in zip(traced, inferred))


# Outputs without a gradient reach the rule as None, not zeros; the body reads variables itself.
@op("PartitionedCall", same_dtype=False, num_outputs=-1, stateful=True, shape=_call_shape, unknown_rank=True,
    accepts_none=ALL, reads_variables_itself=True)
def _call(*args, f, fed=False, export=False):
    return f._run(args, fed, export)


@_call.def_grad(reads_outputs=True)
def _call_grad(op, *dys):
    # Note [call gradients]: the gradient of a call is a call of the function's
    # backward function on (the call's inputs, the output gradients), fed with the
    # values the call's variable reads and stateful ops had when the call exported
    # them (Note [call side outputs]).  IndexedSlices gradients come back as such.
    f = op.get_attr("f")
    backward = f._backward_function(keep_slices=True)
    outputs = f._flat_tensor_outputs
    # zeros like the call's own outputs: the body's may have dims unknown when traced
    dys = [primitives.zeros_of(t) if g is None else convert_to_tensor(g)
           for g, t in zip(dys, op.outputs[:len(outputs)])]
    trainable = [i for i, t in enumerate(outputs) if t._value.dtype in dtypes.TRAINABLE_NP]
    n_inputs = len(f.inputs)        # the call's inputs: arguments, captures, [fed values,] variables
    side = list(op.outputs[len(outputs):]) if op.get_attr("export") else None
    flat = backward._call_flat(list(op.inputs[:n_inputs]) + [dys[i] for i in trainable], side)
    grads = iter(backward._structured(flat))
    per_input = [next(grads) if present else None for present in backward._grad_mask]
    n_fed = len(f._side_feeds) if op.get_attr("fed") else 0
    return per_input[:n_inputs] + [None] * n_fed + per_input[n_inputs:]


@_call.def_batch
def _call_batch(xs, batched, f, fed=False, export=False):
    # Note [functions in vectorized code] in ops/core/vectorization.py: a call of f on batched values
    # is a call of f's body vectorized, traced once per batched pattern and shapes
    n = len(xs) - len(f.graph.variables)                # the variables come last, never batched
    args, flags = xs[:n], tuple(batched[:n])
    key = (flags, tuple((x._value.shape, x._value.dtype.str) for x in args), fed, export)
    vectorized = f._vectorized.get(key)
    if vectorized is None:
        vectorized = f._vectorized[key] = _vectorize(f, args, flags, fed, export)
    outs = vectorized._call_flat(args)
    return tuple(outs[:len(vectorized._flat_tensor_outputs)]), vectorized._out_batched


def _vectorize(f, args, batched, fed, export):
    """The ConcreteFunction computing the call op's outputs (its side outputs too when `export`)
    for `args` stacked where `batched`: f's body run op by op through the batching rules."""
    graph = FuncGraph(f"{f.graph.name}_vectorized", outer_graph=state.graphs[-1] if state.graphs else None)
    n_inputs = len(f.inputs)
    with vectorization.per_example_trace(), graph.as_default():
        graph.inputs = [graph._new_placeholder(x._value.shape, x._value.dtype, "arg") for x in args]
        outs, out_batched = vectorization.run_vectorized(
            lambda ts: run_body(f, ts[:n_inputs], ts[n_inputs:] if fed else None, export), graph.inputs, batched)
        flat = [output_of(graph, o) for o in outs]
    return ConcreteFunction(graph, flat, flat, run_stateful=f._run_stateful, out_batched=tuple(out_batched))


class ConcreteFunction:
    """One traced function: a `tf.function`'s trace for one input signature, a cond
    branch or loop body, or a backward or vectorized function made from another.

    Args:
      graph: the FuncGraph traced.
      structured_outputs: what the Python function returned (IndexedSlices split, `slices`).
      flat_outputs: its leaves, tensors of `graph` or Python values.
      slices: IndexedSlices outputs were split into their three parts, joined again on return.
      function_type: what a `tf.function` traced it for (Note [function types] in
        function_type.py); None for the other kinds, which take flat tensors.
      grad_mask: a backward function: which of the forward's inputs have a gradient
        (one output each, in order).
      side_feeds: a backward function: the copies of the forward's side tensors it is
        fed (Note [call side outputs]).
      run_stateful: run every stateful op of the graph; a backward function runs only
        what its outputs need.
      out_batched: a vectorized function: which outputs are stacked per example.
    """

    __slots__ = ("graph", "structured_outputs", "_flat_outputs", "_tensor_positions", "_flat_tensor_outputs",
                 "_slices", "_function_type", "_grad_mask", "_side_feeds", "_run_stateful", "_out_batched",
                 "_plan", "_plans", "_side", "_backward", "_vectorized", "__weakref__")

    def __init__(self, graph, structured_outputs, flat_outputs, *, slices=False, function_type=None,
                 grad_mask=None, side_feeds=(), run_stateful=True, out_batched=None):
        self.graph = graph
        self.structured_outputs = structured_outputs
        self._flat_outputs = flat_outputs                   # tensors (symbolic or eager) or Python values
        self._tensor_positions = [i for i, o in enumerate(flat_outputs) if isinstance(o, Tensor)]
        self._flat_tensor_outputs = [flat_outputs[i] for i in self._tensor_positions]
        self._slices = slices
        self._function_type = function_type
        self._grad_mask = grad_mask
        self._side_feeds = tuple(side_feeds)
        self._run_stateful = run_stateful
        self._out_batched = out_batched
        # made on first use
        self._plan = None           # the plan of plain calls; _plans: the others, by (fed, export)
        self._plans = {}
        self._side = None           # _side_tensors()
        self._backward = {}         # keep_slices -> the backward function
        self._vectorized = {}       # calls on batched values: (pattern, shapes, fed, export) -> ConcreteFunction

    @property
    def inputs(self):
        return list(self.graph.inputs) + [p for _, p in self.graph.captures]

    @property
    def captured_inputs(self):
        return [c for c, _ in self.graph.captures]

    @property
    def variables(self):
        return tuple(self.graph.variables)

    @property
    def trainable_variables(self):
        return tuple(v for v in self.graph.variables if v.trainable)

    @property
    def outputs(self):
        return list(self._flat_tensor_outputs)

    def _side_tensors(self):
        """Note [call side outputs]: the outputs of the ops that read variables or are
        stateful (random ops, nested calls).  The backward function recomputes the
        forward, but must not recompute these: a variable may have changed since
        the call, a random op would draw again.  A call recorded by a tape exports
        their values as extra outputs (`export`), and its gradient feeds them to the
        backward function (`fed`); writes are never re-run there (`inline`)."""
        if self._side is None:
            self._side = [t for op_ in self.graph._ops if op_.outputs and _keeps_state(op_) for t in op_.outputs]
        return self._side

    def _run(self, arrays, fed=False, export=False):
        plan = self._plan if not (fed or export) else self._plans.get((fed, export))
        if plan is None:
            plan = self._make_plan(fed, export)
        return tuple(plan.run(arrays[:len(plan._feed_slots)]))

    def _make_plan(self, fed, export):
        fetches = self._flat_tensor_outputs + (self._side_tensors() if export else [])
        feeds = self.inputs + (list(self._side_feeds) if fed else [])
        plan = Plan(self.graph, fetches, feeds, run_stateful=self._run_stateful)
        if fed or export:
            self._plans[(fed, export)] = plan
        else:
            self._plan = plan
        return plan

    def _call_flat(self, args, side_values=None):
        """Calls on flat tensor arguments; returns the flat tensor outputs (then the
        exported side values, Note [call side outputs]).

        The call op's inputs are the arguments, the captured values, the fed side
        values (backward functions) and the variables the function reads, so tapes
        see them all.
        """
        variables = self.graph.variables
        for v in variables:
            v._note_access()
        export = bool(state.tapes) and bool(self._side_tensors())
        inputs = list(args) + self.captured_inputs
        if side_values is not None:
            inputs += side_values
        return execute(_call, inputs + variables, {"f": self, "fed": side_values is not None, "export": export})

    def __call__(self, *args, **kwargs):
        if self._function_type is not None:          # arguments checked as TensorFlow does
            return self._structured(self._call_flat(function_type.bind_concrete(self, args, kwargs)))
        flat = [convert_to_tensor(a) for a in nest.flatten((args, kwargs)) if isinstance(a, (Tensor, np.ndarray))]
        return self._structured(self._call_flat(flat))

    @property
    def structured_input_signature(self):
        """((positional TensorSpecs and Python values), {keyword: ...}) of the trace."""
        return function_type.structured_input_signature(self)

    def pretty_printed_signature(self, verbose=True):
        """The parameters' types, the output type and the captures, as TensorFlow prints them."""
        return function_type.pretty_signature(self, verbose)

    def __repr__(self):
        if self._function_type is None:
            return object.__repr__(self)
        return f"<ConcreteFunction {function_type.signature_text(self)} at 0x{id(self):X}>"

    def __str__(self):
        if self._function_type is None:
            return repr(self)
        return "ConcreteFunction " + self.pretty_printed_signature()

    def _structured(self, tensor_outputs):
        flat = list(self._flat_outputs)
        for pos, value in zip(self._tensor_positions, tensor_outputs):
            flat[pos] = value
        out = nest.pack_sequence_as(self.structured_outputs, flat)
        return _join_slices(out) if self._slices else out

    def _backward_function(self, keep_slices=False):
        """The ConcreteFunction mapping (inputs, output gradients) to input gradients;
        with `keep_slices`, IndexedSlices gradients are returned as such (three outputs)."""
        backward = self._backward.get(keep_slices)
        if backward is None:
            backward = self._backward[keep_slices] = _trace_backward(self, keep_slices)
        return backward


def _keeps_state(op_):
    """Whether an op's outputs depend on state: it reads variables or is stateful."""
    return op_.op_def.stateful or any(isinstance(t, Variable) for t in op_.inputs)


def _trace_backward(forward, keep_slices):
    inputs = forward.inputs
    outputs = forward._flat_tensor_outputs
    trainable = [t for t in outputs if t._value.dtype in dtypes.TRAINABLE_NP]
    graph = FuncGraph(f"{forward.graph.name}_backward", outer_graph=None)
    with vectorization.per_example_trace(), graph.as_default():
        new_inputs = [graph._new_placeholder(t._value.shape, t._value.dtype, "input") for t in inputs]
        new_dys = [graph._new_placeholder(t._value.shape, t._value.dtype, "grad") for t in trainable]
        graph.inputs = new_inputs + new_dys
        graph._copies = {}
        new_outputs = inline(forward, new_inputs, graph._copies)
        new_trainable = [o for o, t in zip(new_outputs, outputs) if t._value.dtype in dtypes.TRAINABLE_NP]
        xs = new_inputs + list(forward.graph.variables)
        grads = gradients(new_trainable, xs, grad_ys=new_dys) if new_trainable else [None] * len(xs)
        if not keep_slices:
            grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g for g in grads]   # dense outputs
    present = [g for g in grads if g is not None]
    split = split_slices(present)
    return ConcreteFunction(graph, split, nest.flatten(split), slices=split is not present,
                            grad_mask=[g is not None for g in grads],
                            side_feeds=[graph._copies[t._id] for t in forward._side_tensors()], run_stateful=False)


def copy_ops(ops, mapping, fetches, add_op):
    """Note [graph copies]: a function's graph is copied op by op into the graph being
    built in two places: a backward function copies its forward (`inline`), and the
    batching rules of calls, If and While run a function's body on batched values
    (`run_body`).  This is the one loop both use.  `add_op(op, inputs)` adds the copy
    of `op` on its inputs looked up in `mapping` (original tensor id -> copy; what is
    not in it, such as a captured outer value or a variable, is used as it is); the
    copy's outputs are recorded in `mapping`.  Returns `fetches` mapped to their copies."""
    for fop in ops:
        result = add_op(fop, [mapping.get(t._id, t) if isinstance(t, Tensor) else t for t in fop.inputs])
        for old, new in zip(fop.outputs, (result,) if fop.op_def.num_outputs == 1 else result):
            mapping[old._id] = new
    return [mapping.get(t._id, t) if isinstance(t, SymbolicTensor) else t for t in fetches]


def _same_op(graph, fop, inputs):
    """A copy of `fop` in `graph` on `inputs`, with its traced output shapes."""
    return graph._create_op(fop.op_def, inputs, fop.attrs, metas=[t._value for t in fop.outputs])


def inline(function, inputs, mapping):
    """Copies `function`'s graph into the default graph with its inputs bound to `inputs`,
    filling `mapping` (Note [graph copies]); ops with effects only (variable writes) are
    left out.  Returns the copies of its outputs."""
    graph = state.graphs[-1]
    mapping.update((p._id, t) for p, t in zip(function.inputs, inputs))
    ops = [fop for fop in function.graph._ops
           if fop.op_def is not _placeholder and (fop.outputs or not fop.op_def.stateful)]
    return copy_ops(ops, mapping, function._flat_tensor_outputs, lambda fop, args: _same_op(graph, fop, args))


def run_body(function, inputs, side_values=None, export=False):
    """`function`'s body run op by op on `inputs` in the graph being built, the ops meeting
    batched values through their batching rules (Note [functions in vectorized code] in
    ops/core/vectorization.py); `side_values` feed its side tensors, `export` returns them too."""
    graph = state.graphs[-1]
    mapping = {p._id: t for p, t in zip(function.inputs, inputs, strict=True)}
    if side_values is not None:
        mapping.update((s._id, v) for s, v in zip(function._side_feeds, side_values, strict=True))
    fetches = function._flat_tensor_outputs + (function._side_tensors() if export else [])
    ops = _body_ops(function, fetches, mapping)
    for fop in ops:             # the body's own constants stay constants (not captures of this graph)
        for t in fop.inputs:
            if type(t) is Tensor and t._id not in mapping:
                mapping[t._id] = const(graph, t)

    def add_op(fop, args):
        if any(a._is_batched for a in args):
            return state.vmaps[-1].apply(fop.op_def, args, fop.attrs)
        if fop.op_def in random_ops.DRAWS_PER_EXAMPLE:     # each example draws its own numbers
            return random_ops.draw_per_example(fop.op_def, args, fop.attrs)
        return _same_op(graph, fop, args)
    return copy_ops(ops, mapping, fetches, add_op)


def _body_ops(function, fetches, mapping):
    """The ops of `function` to run for `fetches` given the values in `mapping`: all of them
    (a forward function's writes run too), or only those the fetches need (backward functions)."""
    ops = [o for o in function.graph._ops
           if o.op_def is not _placeholder and not (o.outputs and all(t._id in mapping for t in o.outputs))]
    if function._run_stateful:
        return ops
    needed = {t._id for t in fetches if isinstance(t, SymbolicTensor)}
    keep = []
    for o in reversed(ops):
        if any(t._id in needed for t in o.outputs):
            keep.append(o)
            needed.update(t._id for t in o.inputs if isinstance(t, SymbolicTensor))
    return keep[::-1]


_Slices = collections.namedtuple("_Slices", ["values", "indices", "dense_shape"])


def split_slices(structure):
    """`structure` with each IndexedSlices replaced by its parts (`structure` itself when it has none)."""
    leaves = nest.flatten(structure)
    if not any(isinstance(x, IndexedSlices) for x in leaves):
        return structure
    return optree.tree_map(lambda x: _Slices(x.values, x.indices, x.dense_shape) if isinstance(x, IndexedSlices) else x,
                           structure, none_is_leaf=True, namespace="tapeflow")


def _join_slices(structure):
    """Rebuilds the IndexedSlices that `split_slices` took apart (TF returns them from functions)."""
    return optree.tree_map(lambda x: IndexedSlices(*x) if isinstance(x, _Slices) else x, structure,
                           is_leaf=lambda x: isinstance(x, _Slices), none_is_leaf=True, namespace="tapeflow")


