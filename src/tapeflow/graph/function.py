"""`tf.function`: tracing Python functions into graphs, cached by input signature.

Which trace serves a call, how traces are relaxed (`reduce_retracing`) and how
a concrete function checks its arguments and prints its signature is decided
by the call's function type (Note [function types] in graph/function_type.py).

A traced function is a `ConcreteFunction`: a `FuncGraph` (placeholders for the
tensor arguments, captured outer values, the variables it reads) and a compiled
plan.  Calling it eagerly runs the plan; calling it while a graph is built adds
one "PartitionedCall" node.  Either way the call is one op to tapes and to
`tf.gradients`, whose gradient is another ConcreteFunction: the forward graph
inlined and differentiated with `gradients` (Note [call gradients]).

Variables: only the first trace of a `tf.function` may create variables; they
are initialized right after it (their initial values may be computed from the
arguments) and the function is traced again without creating any, as
TensorFlow does (Note [variables created by functions]).
"""

import collections
import functools
import inspect
import weakref

import numpy as np
import optree

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import settings, state
from tapeflow.framework.op_def import ALL, execute, op
from tapeflow.framework.tensor import Tensor, _next_id, convert_to_tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.ops.variables import Variable
from tapeflow.graph.executor import Plan
from tapeflow.graph.graph import Graph, Meta, SymbolicTensor, const, infer_metas
from tapeflow.graph import function_type
from tapeflow.graph.session import _placeholder
from tapeflow.framework.export import tf_export
from tapeflow.ops import grad_util
from tapeflow.ops import vectorization
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.graph.gradients import gradients


class FuncGraph(Graph):
    """The graph of one traced function.

    Values from outside that the function uses are captured: symbolic tensors
    of an outer graph and eager tensors that existed before tracing began
    become placeholders fed at call time (so tapes and `gradients` see them
    as inputs of the call); eager tensors made during tracing are constants.
    """

    building_function = True
    _created_variables = None   # a tf.function's trace: [(variable, initializer op or None)]
    _creation_error = None      # why that trace may not create variables (None: it may)

    def __init__(self, name, outer_graph=None):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.inputs = []          # placeholders of the tensor arguments
        self.captures = []        # (outer value, placeholder)
        self._capture_of = {}
        self.variables = []
        self._variable_ids = set()
        self._first_own_id = _next_id()   # eager tensors with smaller ids come from outside

    def _own(self, t):
        if isinstance(t, SymbolicTensor):
            return t if t.graph is self else self.capture(t)
        if isinstance(t, Variable):
            if t._id not in self._variable_ids:
                self._variable_ids.add(t._id)
                self.variables.append(t)
            return t
        if t._id < self._first_own_id:
            return self.capture(t)
        return t

    def _create_op(self, op_def, inputs, attrs, metas=None, name=None):
        var = attrs.get("var") if attrs else None
        if isinstance(var, Variable):   # a written variable is an input of the call too, so the
            self._own(var)              # caller orders it with the other reads and writes of var
        return super()._create_op(op_def, inputs, attrs, metas, name)

    _copies = None     # backward functions: forward tensor id -> its copy here

    def capture(self, t):
        # A gradient function's closure (custom_gradient's grad_fn) may hold tensors of
        # the forward graph; in a backward function, which runs a copy of that graph,
        # they stand for their copies (capturing them would feed their static Meta).
        if self._copies is not None and t._id in self._copies:
            return self._copies[t._id]
        placeholder = self._capture_of.get(t._id)
        if placeholder is None:
            _check_reachable(self, t)
            placeholder = self._new_placeholder(t._value.shape, t._value.dtype, "capture")
            self._capture_of[t._id] = placeholder
            self.captures.append((t, placeholder))
        return placeholder

    def _new_placeholder(self, shape, dtype, name):
        shape = None if shape is None else tuple(shape)       # None: unknown rank
        return self._create_op(_placeholder, [], {"dtype": np.dtype(dtype), "shape": shape, "name": name},
                               metas=[Meta(shape, np.dtype(dtype))])


def _check_reachable(graph, t):
    """A function may capture the tensors of the graphs it is built in, not those of a
    function traced inside one of them (a tensor a loop body appended to a Python list):
    ValueError, TensorFlow's InaccessibleTensorError.  (A tensor kept from a function
    traced on its own fails when the capture is fed: op_def's _check_escaped.)"""
    home = t.graph if isinstance(t, SymbolicTensor) else None
    if home is None or not home.building_function or home._copies is not None:
        return
    enclosing, g = set(), graph
    while g is not None:
        enclosing.add(id(g))
        g = getattr(g, "outer_graph", None)
    if id(home) in enclosing:
        return
    g = home.outer_graph
    while g is not None and id(g) not in enclosing:
        g = getattr(g, "outer_graph", None)
    if g is not None:
        raise ValueError(f"{t!r} is out of scope and cannot be used here. Use return values, explicit Python locals "
                         "or TensorFlow collections to access it.\nPlease see https://www.tensorflow.org/guide/"
                         "function#all_outputs_of_a_tffunction_must_be_return_values for more information.\n\n"
                         f"The tensor {t!r} cannot be accessed from {graph.name}, because it was defined in "
                         f"{home.name}, which is out of scope.")


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
    dys = [grad_util.zeros_of(t) if g is None else convert_to_tensor(g)
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
    # Note [functions in vectorized code] in ops/vectorization.py: a call of f on batched values
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
        flat = [Function._output(graph, o) for o in outs]
    vectorized = ConcreteFunction(graph, flat, flat)
    vectorized._out_batched = tuple(out_batched)
    vectorized._run_stateful = f._run_stateful
    return vectorized


class ConcreteFunction:
    """One trace of a `tf.function` for one input signature."""

    def __init__(self, graph, structured_outputs, flat_outputs):
        self.graph = graph
        self.structured_outputs = structured_outputs
        self._flat_outputs = flat_outputs                   # tensors (symbolic or eager) or Python values
        self._tensor_positions = [i for i, o in enumerate(flat_outputs) if isinstance(o, Tensor)]
        self._flat_tensor_outputs = [flat_outputs[i] for i in self._tensor_positions]
        self._plan = None           # the plan of plain calls; _plans: the others, by (fed, export)
        self._plans = {}
        self._backward = {}
        self._grad_mask = None
        self._slices = False        # IndexedSlices outputs are returned as their three parts
        self._side = None
        self._side_feeds = ()       # backward functions: copies of the forward's side tensors
        self._run_stateful = True   # backward functions run only what their outputs need
        self._vectorized = {}       # calls on batched values: (pattern, shapes) -> ConcreteFunction
        self._out_batched = None    # a vectorized function: which outputs are stacked

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

    _function_type = None       # what a tf.function traced it for (Note [function types] in function_type.py)

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
        new_outputs = inline(forward, new_inputs, graph._copies, skip_writes=True)
        new_trainable = [o for o, t in zip(new_outputs, outputs) if t._value.dtype in dtypes.TRAINABLE_NP]
        xs = new_inputs + list(forward.graph.variables)
        grads = gradients(new_trainable, xs, grad_ys=new_dys) if new_trainable else [None] * len(xs)
        if not keep_slices:
            grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g for g in grads]   # dense outputs
    present = [g for g in grads if g is not None]
    split = _split_slices(present)
    backward = ConcreteFunction(graph, split, nest.flatten(split))
    backward._slices = split is not present
    backward._grad_mask = [g is not None for g in grads]
    backward._side_feeds = [graph._copies[t._id] for t in forward._side_tensors()]
    backward._run_stateful = False
    return backward


def inline(function, inputs, mapping=None, skip_writes=False):
    """Copies `function`'s graph into the default graph with its inputs bound to `inputs`
    (`mapping`, when given, is filled with original tensor id -> copy).  With
    `skip_writes`, ops with effects only (variable writes) are left out."""
    graph = state.graphs[-1]
    mapping = {} if mapping is None else mapping
    mapping.update((p._id, t) for p, t in zip(function.inputs, inputs))
    for fop in function.graph._ops:
        if fop.op_def is _placeholder or skip_writes and fop.op_def.stateful and not fop.outputs:
            continue
        args = [mapping.get(t._id, t) if isinstance(t, SymbolicTensor) else t for t in fop.inputs]
        result = graph._create_op(fop.op_def, args, fop.attrs, metas=[t._value for t in fop.outputs])
        outs = (result,) if fop.op_def.num_outputs == 1 else result
        for old, new in zip(fop.outputs, outs):
            mapping[old._id] = new
    return [mapping.get(t._id, t) if isinstance(t, SymbolicTensor) else t for t in function._flat_tensor_outputs]


def run_body(function, inputs, side_values=None, export=False):
    """`function`'s body run op by op on `inputs` in the graph being built, the ops meeting
    batched values through their batching rules (Note [functions in vectorized code] in
    ops/vectorization.py); `side_values` feed its side tensors, `export` returns them too."""
    from tapeflow.ops import random_ops
    graph = state.graphs[-1]
    mapping = {p._id: t for p, t in zip(function.inputs, inputs, strict=True)}
    if side_values is not None:
        mapping.update((s._id, v) for s, v in zip(function._side_feeds, side_values, strict=True))
    fetches = function._flat_tensor_outputs + (function._side_tensors() if export else [])
    for fop in _body_ops(function, fetches, mapping):
        for t in fop.inputs:        # the body's own constants stay constants (not captures of this graph)
            if type(t) is Tensor and t._id not in mapping:
                mapping[t._id] = const(graph, t)
        args = [mapping.get(t._id, t) if isinstance(t, (SymbolicTensor, Tensor)) else t for t in fop.inputs]
        if any(a._is_batched for a in args):
            result = state.vmaps[-1].apply(fop.op_def, args, fop.attrs)
        elif fop.op_def in random_ops.DRAWS_PER_EXAMPLE:     # each example draws its own numbers
            result = random_ops.draw_per_example(fop.op_def, args, fop.attrs)
        else:
            result = graph._create_op(fop.op_def, args, fop.attrs, metas=[t._value for t in fop.outputs])
        for old, new in zip(fop.outputs, (result,) if fop.op_def.num_outputs == 1 else result):
            mapping[old._id] = new
    return [mapping.get(t._id, t) if isinstance(t, SymbolicTensor) else t for t in fetches]


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


# -- tf.function -------------------------------------------------------------------

def _spec_dims(shape):
    """A TensorSpec's TensorShape as a Meta shape: a tuple, or None for an unknown rank."""
    return None if shape.rank is None else tuple(shape.as_list())


_SIGNATURE = "input_signature"     # the cache key of the one trace of a function with an input_signature


def _replica_key():
    """Which strategy and replica a call is made in (Note [traces per replica]).

    Note [traces per replica]: as TensorFlow traces a function once per replica
    device, a `tf.function` called inside `strategy.run` keeps its traces per
    (strategy, replica), in a copy of itself per key (`_per_replica`): a trace
    bakes in its replica's id and its replica's copies of mirrored variables,
    and eager replicas running in threads never trace or look up one shared
    cache at the same moment.  Outside any strategy the cost is one test of the
    thread's strategy stack.
    """
    mode = state.strategies[-1]
    replica = mode.replica_context
    rid = None if replica is None else replica._replica_id_in_sync_group
    return id(mode.strategy), rid if rid is None or isinstance(rid, int) else id(rid)


class Function:
    """A Python function traced into graphs on first use for each input signature.

    >>> import tapeflow as tf
    >>> @tf.function
    ... def f(x):
    ...     return x * x + 1.0
    >>> float(f(tf.constant(2.0)))
    5.0
    """

    def __init__(self, python_function, input_signature=None, autograph=True, jit_compile=None,
                 reduce_retracing=False, experimental_relax_shapes=None, name=None, **unused):
        self._python_function = python_function
        self._autograph = autograph     # convert Python control flow on tensors (graph/autograph/)
        self._input_signature = None if input_signature is None else list(input_signature)
        self._cache = {}
        self._name = name or getattr(python_function, "__name__", "function")
        functools.update_wrapper(self, python_function)
        self._descriptor_cache = weakref.WeakKeyDictionary()
        self._traced = False        # whether a first trace has completed (Note [variables created by functions])
        self._creation_error = None
        self._trace_count = 0
        self._reduce_retracing = bool(reduce_retracing or experimental_relax_shapes)
        self._canonical = function_type.Canonicalizer(python_function)   # Note [function types]
        self._dispatched = {}       # call types served by a more general trace
        self._calls = {}            # call keys (function_type.call_key) -> their trace
        self._per_replica = {}      # replica key -> this function's copy; None in a copy (Note [traces per replica])

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def __get__(self, instance, owner):
        if instance is None:
            return self
        bound = self._descriptor_cache.get(instance)
        if bound is None:
            bound = Function(self._python_function.__get__(instance, owner), self._input_signature,
                             name=self._name, autograph=self._autograph, reduce_retracing=self._reduce_retracing)
            self._descriptor_cache[instance] = bound
        return bound

    def __call__(self, *args, **kwargs):
        if settings.functions_run_eagerly:          # tf.config.run_functions_eagerly(True): no tracing
            return self._python_function(*args, **kwargs)
        if state.strategies and self._per_replica is not None:
            return self._replica_copy()(*args, **kwargs)
        concrete, flat_args = self._concrete_for(args, kwargs)
        return concrete._structured(concrete._call_flat(flat_args))

    def _replica_copy(self):
        """This function's copy for the current strategy and replica (Note [traces per replica])."""
        key = _replica_key()
        copy = self._per_replica.get(key)
        if copy is None:
            copy = Function(self._python_function, self._input_signature, autograph=self._autograph,
                            name=self._name, reduce_retracing=self._reduce_retracing)
            copy._per_replica = None
            copy = self._per_replica.setdefault(key, copy)
        return copy

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (TensorSpecs allowed), tracing if needed;
        with an `input_signature`, no arguments stand for the signature itself."""
        if self._input_signature is not None and not args and not kwargs:
            args = tuple(self._input_signature)
        return self._concrete_for(args, kwargs)[0]

    def experimental_get_tracing_count(self):
        """How many times the Python function was traced (twice for a first trace making variables).

        >>> import tapeflow as tf
        >>> f = tf.function(lambda x: x + 1)
        >>> _ = f(tf.constant(1.0)), f(tf.constant(2.0)), f(tf.constant([1.0]))
        >>> f.experimental_get_tracing_count()
        2
        """
        copies = self._per_replica or {}       # (a copy has none)
        return self._trace_count + sum(c._trace_count for c in copies.values())

    def pretty_printed_concrete_signatures(self, verbose=True):
        """Each trace's `pretty_printed_signature`, in the order they were made.

        >>> import tapeflow as tf
        >>> f = tf.function(lambda x, b=2: x * b)
        >>> _ = f(tf.constant(1.0))
        >>> print(f.pretty_printed_concrete_signatures(verbose=False))
        (x: TensorSpec(shape=(), dtype=tf.float32, name=None), b: Literal[2]) -> TensorSpec(shape=(), dtype=tf.float32, name=None)
        """
        return ("\n\n" if verbose else "\n").join(c.pretty_printed_signature(verbose) for c in self._cache.values())

    def _concrete_for(self, args, kwargs):
        if self._input_signature is not None:
            args, kwargs = self._bind_signature(args, kwargs)
            flat = nest.flatten((args, kwargs))
            concrete = self._cache.get(_SIGNATURE)
            if concrete is None:
                concrete = self._cache[_SIGNATURE] = self._trace(args, kwargs)
                concrete._function_type = function_type.signature_type(self._input_signature, self._python_function)
        else:
            args, kwargs, params = self._canonical(args, kwargs)
            key, flat = function_type.call_key(args, kwargs)
            concrete = self._calls.get(key)
            if concrete is None:
                request = function_type.function_type(args, kwargs, params)[0]
                concrete = self._cache.get(request) or self._dispatched.get(request)
                if concrete is None:
                    concrete = self._lookup(request, args, kwargs)
                self._calls[key] = concrete
        tensor_args = [convert_to_tensor(v) for v in flat if isinstance(v, (Tensor, np.ndarray))]
        return concrete, tensor_args

    def _lookup(self, request, args, kwargs):
        """A trace serving a call of type `request`: the most specific traced supertype, or a new
        trace, for a generalized type under `reduce_retracing` (Note [function types])."""
        traced = function_type.dispatch(self._cache, request)
        if traced is not None:
            concrete = self._dispatched[request] = self._cache[traced]
            return concrete
        ftype = function_type.generalize(request, list(self._cache)) if self._reduce_retracing else request
        concrete = self._trace(args, kwargs, ftype.specs() if ftype is not request else None)
        concrete._function_type = ftype
        self._cache[ftype] = concrete
        return concrete

    def _bind_signature(self, args, kwargs):
        if kwargs:
            params = list(inspect.signature(self._python_function).parameters)
            args = tuple(args) + tuple(kwargs[p] for p in params[len(args):] if p in kwargs)
            kwargs = {}
        flat_sig = nest.flatten(self._input_signature)
        if len(args) != len(self._input_signature):
            reason = "too many positional arguments" if len(args) > len(self._input_signature) else (
                f"missing a required argument: '{self._signature_params()[len(args)]}'")
            raise function_type.binding_error(self._signature_type(), reason, args, kwargs)
        try:    # flattened up to the signature's leaves: a list may bind to one TensorSpec
            flat_args = optree.tree_structure(list(self._input_signature), none_is_leaf=True,
                                              namespace="tapeflow").flatten_up_to(list(args))
        except ValueError:
            raise ValueError(f"Structure of Python function inputs does not match input_signature: "
                             f"{args!r} vs {self._input_signature!r}")
        converted = []
        for value, spec in zip(flat_args, flat_sig):
            if isinstance(spec, TensorSpec) and not isinstance(value, TensorSpec):
                t = convert_to_tensor(value, dtype=spec.dtype) if not isinstance(value, Tensor) else value
                if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
                    raise function_type.binding_error(
                        self._signature_type(), f"Can not cast {function_type.leaf_type(t)!r} to "
                        f"{function_type.leaf_type(spec)!r}", tuple(args), kwargs)
                value = t
            converted.append(value)
        return nest.pack_sequence_as(list(self._input_signature), converted), {}

    def _signature_type(self):
        return function_type.signature_type(self._input_signature, self._python_function)

    def _signature_params(self):
        return [n for n, _ in self._signature_type().params]

    def _trace(self, args, kwargs, specs=None):
        """Traces for one signature.

        Note [variables created by functions]: only the first trace may create
        variables (TF's singleton variables).  When it does, they are initialized
        from that trace (lifted out of the function: `_initialize_variables`) and
        the function is traced again with creation forbidden, whose trace is the
        one kept.  Any later trace creating a variable raises ValueError.
        """
        if self._traced:
            return self._trace_graph(args, kwargs, self._creation_error, specs)[0]
        concrete, feed_values = self._trace_graph(args, kwargs, None, specs)
        created = concrete.graph._created_variables
        if created:
            _initialize_variables(concrete, [op_ for _, op_ in created if op_ is not None], feed_values)
        self._traced = True
        self._creation_error = _SINGLETON if created else _NON_FIRST_CALL
        return self._trace_graph(args, kwargs, _SINGLETON, specs)[0] if created else concrete

    def _trace_graph(self, args, kwargs, creation_error, relaxed=None):
        """One trace; returns the ConcreteFunction and, per input placeholder, the
        argument's NumPy value (None where it has none: specs, graph tensors).
        `relaxed`: per flat argument, the TensorSpec to trace it as (reduce_retracing)."""
        outer = state.graphs[-1] if state.graphs else None
        graph = FuncGraph(self._name, outer_graph=outer)
        graph._created_variables = []
        graph._creation_error = creation_error
        flat = nest.flatten((args, kwargs))
        specs = relaxed or (nest.flatten(self._input_signature) if self._input_signature is not None
                            else [None] * len(flat))
        new_flat, feed_values = [], []
        with vectorization.per_example_trace(), graph.as_default():     # Note [functions in vectorized code]
            for value, spec in zip(flat, specs):
                if isinstance(value, TensorSpec) or isinstance(value, (Tensor, np.ndarray)) and not isinstance(value, Variable):
                    if isinstance(spec, TensorSpec):
                        shape, dtype = _spec_dims(spec.shape), spec.dtype._np
                    elif isinstance(value, TensorSpec):
                        shape, dtype = _spec_dims(value.shape), value.dtype._np
                    elif isinstance(value, Tensor):     # eager or symbolic (a Meta): static shape and dtype
                        shape, dtype = value._value.shape, np.dtype(value._value.dtype)
                    else:
                        shape, dtype = value.shape, value.dtype
                    placeholder = graph._new_placeholder(shape, dtype, "arg")
                    graph.inputs.append(placeholder)
                    new_flat.append(placeholder)
                    feed_values.append(_eager_value(value))
                else:
                    new_flat.append(value)
            new_args, new_kwargs = nest.pack_sequence_as((args, kwargs), new_flat)
            if self._autograph:
                from tapeflow.graph.autograph import conversion     # imports control_flow, which imports us
                result = conversion.call_converted(self._python_function, new_args, new_kwargs)
            else:
                result = self._python_function(*new_args, **new_kwargs)
            split = _split_slices(result)
            flat_out = nest.flatten(split)
            flat_out = [self._output(graph, o) for o in flat_out]
        concrete = ConcreteFunction(graph, split, flat_out)
        concrete._slices = split is not result
        self._trace_count += 1
        return concrete, feed_values + [_eager_value(c) for c, _ in graph.captures]

    @staticmethod
    def _output(graph, value):
        if isinstance(value, IndexedSlices):
            value = convert_to_tensor(value)
        if isinstance(value, Variable):
            with graph.as_default():
                return value.value()
        if isinstance(value, SymbolicTensor) and value.graph is not graph:
            return graph.capture(value)
        if isinstance(value, Tensor) and not isinstance(value, SymbolicTensor):
            with graph.as_default():
                return const(graph, value) if value._id >= graph._first_own_id else graph.capture(value)
        if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
            with graph.as_default():     # Python and NumPy values are returned as tensors, like TF
                return convert_to_tensor(value)
        return value


_SINGLETON = ("tf.function only supports singleton tf.Variables created on the first call. Make sure the "
              "tf.Variable is only created once or created outside tf.function. See "
              "https://www.tensorflow.org/guide/function#creating_tfvariables for more information.")
_NON_FIRST_CALL = "Creating variables on a non-first call to a function decorated with tf.function."


def _eager_value(value):
    """The NumPy value of an argument or captured value, None for graph tensors and specs."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, Tensor) and not isinstance(value, SymbolicTensor):
        return value._value
    return None


def _initialize_variables(concrete, initializers, feed_values):
    """Runs the initializers the first trace made, before the function's first call
    (TF lifts them out of the function), on the first call's arguments."""
    if not initializers:
        return
    needed = set()
    stack = list(initializers)
    while stack:                  # the ops the initializers depend on
        op_ = stack.pop()
        if op_._id in needed:
            continue
        needed.add(op_._id)
        stack.extend(op_.control_inputs)
        stack.extend(t.op for t in op_.inputs if isinstance(t, SymbolicTensor))
    feeds, values = [], []
    for placeholder, value in zip(concrete.inputs, feed_values, strict=True):
        if placeholder.op._id in needed:
            if value is None:
                raise ValueError(f"The initial value of a tf.Variable created in tf.function '{concrete.graph.name}' "
                                 "depends on an argument or captured tensor that has no value yet (a TensorSpec "
                                 "or a graph tensor); call the function with eager tensors first, or create the "
                                 "variable outside the function.")
            feeds.append(placeholder)
            values.append(value)
    Plan(concrete.graph, initializers, feeds).run(values)


_Slices = collections.namedtuple("_Slices", ["values", "indices", "dense_shape"])


def _split_slices(structure):
    """`structure` with each IndexedSlices replaced by its parts (`structure` itself when it has none)."""
    leaves = nest.flatten(structure)
    if not any(isinstance(x, IndexedSlices) for x in leaves):
        return structure
    return optree.tree_map(lambda x: _Slices(x.values, x.indices, x.dense_shape) if isinstance(x, IndexedSlices) else x,
                           structure, none_is_leaf=True, namespace="tapeflow")


def _join_slices(structure):
    """Rebuilds the IndexedSlices that `_split_slices` took apart (TF returns them from functions)."""
    return optree.tree_map(lambda x: IndexedSlices(*x) if isinstance(x, _Slices) else x, structure,
                           is_leaf=lambda x: isinstance(x, _Slices), none_is_leaf=True, namespace="tapeflow")


@tf_export("function", names_op=False)
def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_relax_shapes=None, **kwargs):
    """Compiles a Python function into a callable graph (`tf.function`).

    Usable as `@tf.function`, `@tf.function(input_signature=[...])` or `tf.function(f)`.
    """
    def wrap(f):
        return Function(f, input_signature=input_signature, autograph=autograph, jit_compile=jit_compile,
                        reduce_retracing=reduce_retracing or bool(experimental_relax_shapes), **kwargs)
    return wrap if func is None else wrap(func)



def extract(inputs, outputs):
    """The part of the default graph computing `outputs` from `inputs`, as a ConcreteFunction.

    Ops that do not depend on `inputs` are not copied: the function captures
    their results, so calling it recomputes only what changes with the inputs.
    """
    graph = state.graphs[-1]
    depends = {t._id for t in inputs}
    needed = {t._id for t in outputs if isinstance(t, SymbolicTensor)}
    chosen = []
    for op_ in graph._ops:
        if any(t._id in depends for t in op_.inputs):
            depends.update(t._id for t in op_.outputs)
            chosen.append(op_)
    keep = []
    for op_ in reversed(chosen):                      # only what the outputs need
        if any(t._id in needed for t in op_.outputs):
            keep.append(op_)
            needed.update(t._id for t in op_.inputs)
    fgraph = FuncGraph("extracted", outer_graph=graph)
    with fgraph.as_default():
        mapping = {}
        for t in inputs:
            mapping[t._id] = fgraph._new_placeholder(t._value.shape, t._value.dtype, "input")
        fgraph.inputs = [mapping[t._id] for t in inputs]
        for op_ in reversed(keep):
            args = [mapping.get(t._id, t) for t in op_.inputs]
            result = fgraph._create_op(op_.op_def, args, op_.attrs, metas=[t._value for t in op_.outputs])
            for old, new in zip(op_.outputs, (result,) if op_.op_def.num_outputs == 1 else result):
                mapping[old._id] = new
        flat = [Function._output(fgraph, mapping.get(t._id, t)) for t in outputs]
    return ConcreteFunction(fgraph, flat, flat)
