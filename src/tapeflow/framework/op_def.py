"""Op definitions, the gradient registry and the one dispatch path.

An op is declared once, in its family's module: its kernel, dtype and shape
rules and other properties in the declaration, its gradient (with what the
gradient reads) beside it::

    @op("Exp", dtypes=FLOATING, shape=shape_rules.unchanged_shape, unknown_rank=True)
    def exp(x):
        return np.exp(x)

    @exp.def_grad(reads_inputs=False, reads_outputs=True)
    def _exp_grad(op, dy):
        return dy * math_ops.conj(op.outputs[0])   # d/dx e^x = e^x

Calling the op converts its inputs to tensors and hands them to `execute`,
which runs the kernel and lets every active tape record the call.
"""

import inspect

import numpy as np

from tapeflow.framework import dtypes as _dtypes, hooks
from tapeflow.framework.context import executing_eagerly, state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import call_named, tf_export
from tapeflow.framework.shapes.abstract_values import Meta
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape

_TRAINABLE = _dtypes.TRAINABLE_NP
_HALF = frozenset((np.dtype(_dtypes.float16._np), np.dtype(_dtypes.bfloat16._np)))
NOT_DIFFERENTIABLE = object()   # registered with no_gradient: inputs get None

_OPS = {}        # op type -> Op, the registry
_PENDING = {}    # gradients registered for op types not defined yet


# `Op` is one op type, declared once (the `op` decorator below) with everything
# the engines need to know about it.  The fields, all given at the declaration:
#
#   type            the TensorFlow op type name ("MatMul"), used by RegisterGradient
#                   and in messages.
#   kernel          `kernel(*arrays, **attrs) -> array | tuple of arrays`.
#   allowed         NumPy dtypes accepted for input 0 by `kernel` (None: any).
#   half            the kernel for float16 and bfloat16 inputs, or None; declared as a factory
#                   of ops/core/half.py that makes it from `kernel` (Note [half precision] there).
#                   Those dtypes move from `allowed` to `half_dtypes`, so `execute` picks it
#                   in its dtype check's failure branch and other dtypes pay nothing for it
#                   (with `allowed` None, `kernel` takes them too).  Code that runs kernels
#                   itself picks one with `kernel_for`.
#   same_dtype      whether all inputs must share input 0's dtype (TF's `T`).
#   num_outputs     outputs of the kernel (it returns a tuple when > 1).
#   stateful        never folded or pruned in graphs (variables, randomness).
#   shape_fn        the static shape rule: `rule(*input_metas, **attrs) -> [Meta]`, the
#                   way TensorFlow's C++ shape function works (unknown dims are None).
#   shape_reads_inputs  the shape rule gets the input tensors instead of their Metas
#                   (to read the known entries of size tensors: framework/shapes/known_values).
#   unknown_rank    the shape rule for inputs of unknown rank (True: `shape_fn` handles
#                   them; None: the op refuses them, Note [unknown rank] in
#                   framework/shapes/symbolic_tensors.py).
#   value_rule      partial constant evaluation of the op in a graph (framework/shapes/known_values).
#   grad            `grad(op, *output_grads) -> input grads`: None when none is
#                   declared, NOT_DIFFERENTIABLE for ops whose inputs get None.
#   grad_reads_inputs   True when the gradient reads every input's value, else the
#                   indices of those it reads (Note [saved inputs]).
#   grad_reads_outputs  whether the gradient reads the op's outputs (Note [saved outputs]).
#   accepts_none    output indices whose missing gradient reaches the rule as None
#                   rather than zeros (tape.h's FunctionsAcceptingNoneForIndicesMap).
#   accepts_indexed_slices  the rule takes IndexedSlices output gradients as they are;
#                   other rules get them as dense tensors (Note [sparse gradients] in
#                   ops/gradient_rules.py).
#   into            `into(*arrays, out)`: the kernel writing into a given buffer
#                   (Note [buffer reuse] in graph/executor.py).
#   fresh_outputs   the kernel always returns new arrays (plans may reuse them).
#   passes_through  the kernel returns its first inputs as they are, one per output (plans
#                   give the outputs the inputs' slots and run nothing, Note [pass-through ops]
#                   in graph/executor.py).
#   writes_variable the op's one effect is writing the variable in its `var` attr (it is
#                   stateful so that writes keep their order; Note [parallel lanes] in
#                   graph/lanes.py).
#   donates         the kernel takes a `donated` attr, the positions of the input arrays it may
#                   overwrite; plans pass it for inputs that die there (Note [donated inputs]
#                   in graph/executor.py), eager calls never do.
#   reads_variables_itself  the kernel gets None in place of its variable inputs
#                   (Note [in-place updates] in ops/variables.py).
#   jvp             the forward-mode rule: SELF_ADJOINT or LINEAR (see below), `jvp(inputs, outputs,
#                   attrs, tangents) -> output tangents`, or None to derive it
#                   from the gradient rule (Note [JVP by double transpose] in eager/forwardprop.py).
#   batch_rule      the vectorization rule: ELEMENTWISE, a rule, or None to run the op once per
#                   example (Note [batching rules] in ops/core/vectorization.py).

ALL = True      # `grad_reads_inputs=ALL`: the gradient reads every input

# `jvp=SELF_ADJOINT`: an elementwise op of one real input whose output has its dtype has a
# diagonal Jacobian, so its gradient rule applied to a tangent is the tangent's image
# (eager/forwardprop.py); other dtypes derive the JVP from the rule (Note [JVP by double transpose]).
SELF_ADJOINT = object()

# `jvp=LINEAR`: the op is linear in its floating-point inputs taken together (the others, indices
# and sizes, are parameters): its tangent is the op applied to the inputs' tangents (zeros for an
# input without one), e.g. reshape, transpose, sum, concat, gather of params.
LINEAR = object()


class Op:
    __slots__ = ("type", "kernel", "allowed", "same_dtype", "num_outputs", "stateful",
                 "shape_fn", "shape_reads_inputs", "unknown_rank", "value_rule",
                 "grad", "grad_reads_inputs", "grad_reads_outputs", "accepts_none",
                 "accepts_indexed_slices", "into", "fresh_outputs", "passes_through", "writes_variable",
                 "donates", "reads_variables_itself", "jvp", "batch_rule",
                 "half", "half_dtypes", "__name__", "__qualname__", "__doc__", "__wrapped__")

    def __init__(self, type_, kernel, allowed=None, same_dtype=True, num_outputs=1, stateful=False, *,
                 shape=None, shape_reads_inputs=False, unknown_rank=None, value_rule=None,
                 differentiable=True, accepts_none=(), accepts_indexed_slices=False, into=None,
                 fresh_outputs=False, passes_through=False, writes_variable=False, donates=False,
                 reads_variables_itself=False, jvp=None, batch=None, half=None):
        if type_ in _OPS:
            raise KeyError(f"Op type '{type_}' is defined twice.")
        self.type = type_
        self.kernel = kernel
        self.allowed = None if allowed is None else frozenset(np.dtype(d._np) for d in allowed)
        self.half = None if half is None else half(kernel)
        self.half_dtypes = frozenset() if half is None else _HALF if self.allowed is None else self.allowed & _HALF
        if half is not None and self.allowed is not None:
            self.allowed -= _HALF
        self.same_dtype = same_dtype
        self.num_outputs = num_outputs
        self.stateful = stateful
        self.shape_fn = shape
        self.shape_reads_inputs = shape_reads_inputs
        self.unknown_rank = shape if unknown_rank is True else unknown_rank
        self.value_rule = value_rule
        self.grad = None
        self.grad_reads_inputs = self.grad_reads_outputs = None
        # A gradient registered before the op existed (RegisterGradient) may read anything.
        _set_grad(self, _PENDING.pop(type_, None) if differentiable else NOT_DIFFERENTIABLE)
        self.accepts_none = ALL if accepts_none is ALL else frozenset(accepts_none)
        self.accepts_indexed_slices = accepts_indexed_slices
        self.into = into
        self.fresh_outputs = fresh_outputs
        self.passes_through = passes_through
        self.writes_variable = writes_variable
        self.donates = donates
        self.reads_variables_itself = reads_variables_itself
        self.jvp = jvp
        self.batch_rule = batch
        self.__name__ = kernel.__name__
        self.__qualname__ = kernel.__qualname__
        self.__doc__ = kernel.__doc__
        self.__wrapped__ = kernel
        _OPS[type_] = self

    @property
    def __module__(self):
        return self.kernel.__module__

    def __call__(self, *inputs, name=None, **attrs):
        if name is not None and state.graphs:     # Note [op names]
            return call_named(self.__call__, name, inputs, attrs)
        if not attrs:
            if len(inputs) == 1:
                if type(inputs[0]) is Tensor:
                    return execute_unary(self, inputs[0])
            elif len(inputs) == 2:                # fast path: binary ops on two tensors
                x, y = inputs
                if type(x) is Tensor and type(y) is Tensor:
                    return execute_binary(self, x, y)
        return execute(self, convert_inputs(inputs, self.same_dtype), attrs)

    def kernel_for(self, dtype):
        """The kernel for inputs whose first has NumPy dtype `dtype` (`half` or `kernel`)."""
        return self.half if dtype in self.half_dtypes else self.kernel

    def def_grad(self, fn=None, *, reads_inputs=ALL, reads_outputs=False):
        """Declares the gradient function of this op (decorator).

        Args:
          reads_inputs: ALL (True) when the gradient reads the values of all
            inputs; else the indices of those it reads (False or () for none).
            The tape keeps only those alive (Note [saved inputs]).
          reads_outputs: whether the gradient reads `op.outputs`.
        """
        def register(fn):
            reads = ALL if reads_inputs is True else frozenset(reads_inputs or ())
            most = _most_inputs(self.kernel)
            if reads is not ALL and most is not None and all(i in reads for i in range(most)):
                reads = ALL            # every input it can have: records skip the stand-in check
            self.grad = fn
            self.grad_reads_inputs = reads
            self.grad_reads_outputs = reads_outputs
            return fn
        return register if fn is None else register(fn)

    def def_batch(self, fn):
        """Declares the batching rule of this op (decorator; Note [batching rules] in
        ops/core/vectorization.py)."""
        self.batch_rule = fn
        return fn

    def __repr__(self):
        return f"<tapeflow op {self.type}>"


def _most_inputs(kernel):
    """An upper bound on the inputs `kernel` takes (its positional parameters; attrs
    may be among them); None for `*inputs` (no bound)."""
    count = 0
    for p in inspect.signature(kernel).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def op(type_, dtypes=None, same_dtype=True, num_outputs=1, stateful=False, **declared):
    """Decorator declaring a kernel as the op `type_`; `declared` holds the other
    fields of the record (see the comment above `Op`)."""
    def wrap(kernel):
        return Op(type_, kernel, dtypes, same_dtype, num_outputs, stateful, **declared)
    return wrap


def convert_inputs(values, same_dtype=True, list_of=None):
    """Converts op arguments to tensors; Python values take the dtype of the first tensor,
    or, when there is none, that of the first value (TF's args_to_matching_eager).

    `list_of`: the op type when `values` is the op's one list-typed input (Pack's and
    ConcatV2's `values`).  While a graph is built, TensorFlow's op builder reports any
    element that does not convert (None, a ragged list) as a TypeError naming the op;
    eagerly the conversion's own error stands.
    """
    if list_of is not None and state.graphs:
        try:
            return convert_inputs(values, same_dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Tensors in list passed to 'values' of '{list_of}' Op could not all be converted "
                            f"to tensors: {e} Pass tensors or values of one dtype and shape.") from None
    if not same_dtype:
        return [convert_to_tensor(v) for v in values]
    dtype = None
    for v in values:
        if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
            dtype = v.dtype
            break
    if dtype is None and values:
        first = convert_to_tensor(values[0])
        return [first] + [convert_like(v, first.dtype) for v in values[1:]]
    return [v if type(v) is Tensor else convert_like(v, dtype) for v in values]


def convert_like(value, dtype):
    """Converts an operand next to tensors of `dtype` (TF's eager op conversion).

    Python and NumPy values are converted to `dtype`; a Python value that does
    not fit it (2.5 next to an int32 tensor) raises TypeError like TensorFlow.
    NumPy values that cannot be converted, and tensors, keep their own dtype,
    and a mismatch is reported by the op as InvalidArgumentError.
    """
    if dtype is None or isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return convert_to_tensor(value)
    try:
        return convert_to_tensor(value, dtype=dtype)
    except (TypeError, ValueError):
        if not isinstance(value, (np.ndarray, np.generic)):
            raise
        return convert_to_tensor(value)


_NO_ATTRS = {}


class SavedInput:
    """An input of an eager record whose gradient reads no input values
    (Note [saved inputs]): its id, shape and dtype, like the tensor's."""

    __slots__ = ("_id", "_value")

    def __init__(self, t):
        self._id = t._id
        value = t._value
        self._value = Meta(value.shape, value.dtype)

    @property
    def dtype(self):
        return _dtypes.as_dtype(self._value.dtype)

    @property
    def shape(self):
        return TensorShape(self._value.shape)


SAVED_INPUT_MIN_BYTES = 4096     # Note [saved inputs]


class OpRecord:
    """One executed op as its gradient function sees it (TF's `op` argument).

    Note [saved outputs]: a record keeps its output tensors only when the op's
    gradient declared `reads_outputs`; otherwise it keeps their ids, shapes and
    dtypes, so an unused output can die and take its trace with it (tape.h
    DeleteTrace).

    Note [saved inputs]: likewise an eager record keeps an input tensor only
    when the gradient reads its value (`reads_inputs`, all by default).  The
    gradient of `x + b`, of a sum or a reshape needs only shapes, and those of
    relu or tanh only the outputs: their records hold `SavedInput`s (id, shape
    and dtype), so the activations they were applied to are freed as soon as
    nothing else needs them, as TensorFlow's tape does.  Graph records are
    Operations, whose gradients read only the tensors they use.  Inputs smaller
    than SAVED_INPUT_MIN_BYTES are kept as they are: a stand-in would cost more
    than it frees (the test suite sets it to 0, so every rule meets stand-ins).
    """

    __slots__ = ("op", "inputs", "outputs", "attrs", "input_ids", "output_ids", "out_specs",
                 "skip_input_indices")

    def __init__(self, op_, inputs, input_ids, outputs, attrs, skip):
        self.op = op_
        self.inputs = inputs
        self.attrs = attrs
        self.input_ids = input_ids
        # Inputs no recording tape traces: their gradients are never needed (TF's
        # skip_input_indices); rules may skip computing them.
        self.skip_input_indices = skip
        if len(outputs) == 1:      # a lone output never needs zeros: no spec kept
            self.output_ids = (outputs[0]._id,)
            self.out_specs = None
        else:
            self.output_ids = [t._id for t in outputs]
            self.out_specs = [(t._value.shape, t._value.dtype) for t in outputs]
        if outputs and type(outputs[0]) is not Tensor:
            self.outputs = outputs     # graph records keep their (symbolic) outputs: zeros for unknown shapes
            return
        self.outputs = outputs if op_.grad_reads_outputs else None
        if op_.grad_reads_inputs is not ALL:
            self._stand_in_unread(op_.grad_reads_inputs)

    def _stand_in_unread(self, reads):
        """Replaces the unread inputs worth it by `SavedInput`s (Note [saved inputs])."""
        small = SAVED_INPUT_MIN_BYTES
        inputs = self.inputs
        for i, t in enumerate(inputs):
            if i not in reads and t._value.nbytes >= small:
                self.inputs = [u if k in reads or u._value.nbytes < small else SavedInput(u)
                               for k, u in enumerate(inputs)]
                return

    @property
    def type(self):
        return self.op.type

    @property
    def name(self):
        return self.op.type

    def get_attr(self, name):
        return self.attrs[name]


# Note [kernel errors]: a kernel refuses input values it cannot compute with by raising
# one of KERNEL_ERRORS: NumPy's ValueError (shapes) and LinAlgError (a singular matrix),
# IndexError (an index out of range), ZeroDivisionError (integer arithmetic in Python).
# Every place that runs kernels catches exactly these around the call (free in CPython
# when nothing raises, where a helper wrapping the call would cost a frame per op): the
# eager dispatch here and graph plans (graph/executor.py, around the whole generated
# plan).  Each raises what `kernel_error` makes of the error: TensorFlow's
# InvalidArgumentError naming the op ("... [Op:MatMul]" eagerly, "[[node name (MatMul)]]"
# in a plan), or a ValueError for an op folded while a graph is built (the shape check of
# TF's op builder, Note [folded ops]).  A TypeError or AttributeError is the kernel's
# own bug unless a graph tensor reached it (`_check_escaped`).
KERNEL_ERRORS = (ValueError, IndexError, np.linalg.LinAlgError, ZeroDivisionError)


def kernel_error(error, op_type, node=None):
    """The error to raise for `error`, one of KERNEL_ERRORS raised by the kernel of an
    `op_type` op: eagerly or folded in a graph, or by the step of a plan running `node`
    (an Operation) (Note [kernel errors])."""
    if node is not None:
        return InvalidArgumentError(None, node, f"{error}\n\t [[node {node.name} ({op_type})]]")
    if state.graphs and type(error) is ValueError:      # computed while a graph is built: a shape
        return ValueError(f"{error} [Op:{op_type}]")     # check, ValueError as in TF's builder
    return InvalidArgumentError(None, op_type, f"{error} [Op:{op_type}]")


def execute(op_, inputs, attrs):
    """Runs `op_` on tensors `inputs` and records it on every active tape.

    This is the only path by which tensors are made from other tensors.
    """
    if state.vmaps:                  # inside a vectorized function (ops/core/vectorization.py)
        for t in inputs:
            if t._is_batched:
                return state.vmaps[-1].apply(op_, inputs, attrs)
    kernel = op_.kernel
    if len(inputs) == 1:
        values = (inputs[0]._value,)
        if op_.allowed is not None and values[0].dtype not in op_.allowed:
            kernel = _half_kernel(op_, inputs[0])
    else:
        values = [t._value for t in inputs]
        if op_.reads_variables_itself:
            values = [None if t._is_variable else v for t, v in zip(inputs, values)]
        if op_.allowed is not None and values and values[0].dtype not in op_.allowed:
            kernel = _half_kernel(op_, inputs[0])
        if op_.same_dtype:
            dt = values[0].dtype
            for i, v in enumerate(values):
                if v.dtype != dt:
                    raise_type_mismatch(op_.type, i, dt, v.dtype)
    if state.graphs:
        if _builds_node(op_, inputs):
            return _graph_op(op_, inputs, attrs)
        _check_folded(op_, inputs, attrs)
    elif kernel is op_.half and kernel.eager is not None and op_.num_outputs == 1:
        return _execute_wide(op_, kernel, inputs, values, attrs)
    try:
        out = kernel(*values, **attrs)
    except KERNEL_ERRORS as e:                  # Note [kernel errors]
        raise kernel_error(e, op_.type) from None
    except (TypeError, AttributeError):
        _check_escaped(inputs)
        raise
    if op_.num_outputs == 1:
        result = Tensor(out)
        if state.tapes:
            record(op_, inputs, (result,), attrs)
        return result
    result = tuple([Tensor(o) for o in out])
    if state.tapes:
        record(op_, inputs, result, attrs)
    return result


def _execute_wide(op_, kernel, inputs, values, attrs):
    """`execute`'s eager call of a half kernel: the result keeps its float32 value for the half
    kernels that read it (Note [wide values of eager tensors] in ops/core/half.py)."""
    try:
        out, wide = kernel.eager(inputs, values, attrs)
    except KERNEL_ERRORS as e:                  # Note [kernel errors]
        raise kernel_error(e, op_.type) from None
    except (TypeError, AttributeError):
        _check_escaped(inputs)
        raise
    result = Tensor(out)
    if wide is not None:
        result._wide = wide
    if state.tapes:
        record(op_, inputs, (result,), attrs)
    return result


def _check_escaped(inputs):
    """A graph tensor reaching a kernel left its graph (kept from a tf.function's trace, or
    a TF1 graph's tensor used eagerly): TypeError, as TensorFlow's."""
    for t in inputs:
        if t._is_symbolic:
            raise TypeError(f"{t!r} is out of scope and cannot be used here. Use return values, explicit Python "
                            "locals or TensorFlow collections to access it.\nPlease see https://www.tensorflow.org/"
                            "guide/function#all_outputs_of_a_tffunction_must_be_return_values for more information.")


def execute_unary(op_, x):
    """`execute` for one eager tensor and no attrs, the commonest call (same semantics)."""
    value = x._value
    if op_.allowed is not None and value.dtype not in op_.allowed:
        return execute(op_, (x,), _NO_ATTRS)        # a half kernel, or the dtype error
    if state.graphs or op_.num_outputs != 1:
        return execute(op_, (x,), _NO_ATTRS)
    try:
        result = Tensor(op_.kernel(value))
    except KERNEL_ERRORS as e:                  # Note [kernel errors]
        raise kernel_error(e, op_.type) from None
    if state.tapes:
        record(op_, (x,), (result,), _NO_ATTRS)
    return result


def execute_binary(op_, x, y):
    """`execute` for two eager tensors and no attrs (same semantics)."""
    xv, yv = x._value, y._value
    if op_.allowed is not None and xv.dtype not in op_.allowed:
        return execute(op_, (x, y), _NO_ATTRS)      # a half kernel, or the dtype error
    if op_.same_dtype and xv.dtype != yv.dtype:
        raise_type_mismatch(op_.type, 1, xv.dtype, yv.dtype)
    if state.graphs or op_.num_outputs != 1:
        return execute(op_, (x, y), _NO_ATTRS)
    try:
        result = Tensor(op_.kernel(xv, yv))
    except KERNEL_ERRORS as e:                  # Note [kernel errors]
        raise kernel_error(e, op_.type) from None
    if state.tapes:
        record(op_, (x, y), (result,), _NO_ATTRS)
    return result


hooks.fill(execute_unary=execute_unary, execute_binary=execute_binary)    # Tensor's operators' fast path


def _builds_node(op_, inputs):
    """In a graph, ops on symbolic tensors, variables or values captured from outside
    a function (eager tensors older than its tracing), and stateful ops, become nodes."""
    if op_.stateful:
        return True
    first_own = state.graphs[-1]._first_own_id
    for t in inputs:
        if type(t) is not Tensor or t._id < first_own:
            return True
    return False


def _check_folded(op_, inputs, attrs):
    """Note [folded ops]: inside a graph, an op on eager constants runs at once (constant
    folding) instead of becoming a node.  Its shape rule still runs first, so that what
    TensorFlow's op builder rejects (a pooling window larger than its input, say) raises
    the same ValueError whether the inputs are constants or not.  Trace time only."""
    rule = op_.shape_fn
    if rule is None:
        return
    try:
        if op_.shape_reads_inputs:
            rule(*inputs, **attrs)
        else:
            rule(*[Meta(t._value.shape, t._value.dtype) for t in inputs], **attrs)
    except InvalidArgumentError as e:       # like Graph._create_op: a shape check at build time
        raise ValueError(e.message) from None


def _graph_op(op_, inputs, attrs, metas=None):
    result = state.graphs[-1]._create_op(op_, inputs, attrs, metas)
    if state.tapes:
        record(op_, inputs, (result,) if op_.num_outputs == 1 else result, attrs)
    return result


def build_with_metas(op_, inputs, attrs, metas):
    """Adds `op_` to the graph being built with the output Metas its caller worked
    out (control-flow ops, from their traced functions), and records it on tapes."""
    if state.vmaps:                  # inside a vectorized function (ops/core/vectorization.py)
        for t in inputs:
            if t._is_batched:
                return state.vmaps[-1].apply(op_, inputs, attrs)
    return _graph_op(op_, [convert_to_tensor(t) if not isinstance(t, Tensor) and not t._is_variable else t
                           for t in inputs], attrs, metas)


def record(op_, inputs, outputs, attrs):
    """Offers one executed op to every active tape (tape.h RecordOperation).

    A tape records the op when it traces one of its inputs of a trainable dtype.
    The active recorders are GradientTapes' tapes and ForwardAccumulators'
    (eager/forwardprop.py): both trace tensor ids (`_tensor_tape`) and take an
    offered op (`_offer`); tapes share one record when there are several.
    """
    tapes = state.tapes
    if len(tapes) == 1 and 0 < len(inputs) <= 2:  # fast paths: one tape, unary or binary op
        tape = tapes[0]
        traced = tape._tensor_tape
        if len(inputs) == 1:
            t = inputs[0]
            if t._id in traced and t._value.dtype in _TRAINABLE:
                tape._offer(op_, inputs, (t._id,), outputs, attrs, ())
            return
        x, y = inputs
        xi, yi = x._id, y._id
        hx, hy = xi in traced, yi in traced
        if (hx and x._value.dtype in _TRAINABLE) or (hy and y._value.dtype in _TRAINABLE):
            skip = () if hx and hy else ((1,) if hx else (0,))
            tape._offer(op_, inputs, (xi, yi), outputs, attrs, skip)
        return
    rec = None
    input_ids = [t._id for t in inputs]
    for tape in tapes:
        tensor_tape = tape._tensor_tape
        traced = [i in tensor_tape for i in input_ids]
        if True not in traced:
            continue
        for t, hit in zip(inputs, traced):
            if hit and t._value.dtype in _TRAINABLE:
                break
        else:
            continue
        if tape.is_accumulator:            # a ForwardAccumulator computes tangents, keeps no record
            tape._offer(op_, inputs, input_ids, outputs, attrs, ())
            continue
        if rec is None:
            skip = tuple(k for k, hit in enumerate(traced) if not hit) if False in traced else ()
            rec = OpRecord(op_, inputs, input_ids, outputs, attrs, skip)
        elif rec.skip_input_indices:
            rec.skip_input_indices = tuple(k for k in rec.skip_input_indices if not traced[k])
        tape._record(rec)


def _half_kernel(op_, t):
    """The kernel for input `t` of a dtype outside `op_.allowed`: the half kernel, or the dtype error."""
    if t._value.dtype in op_.half_dtypes:
        return op_.half
    _raise_dtype(op_, t)


def _raise_dtype(op_, t):
    allowed = op_.allowed | op_.half_dtypes
    if len(allowed) == 1:      # an input of one fixed type (LogicalNot, the string ops): TF's mismatch error
        raise_type_mismatch(op_.type, 0, next(iter(allowed)), t._value.dtype)
    names = ", ".join(sorted(_dtypes._BY_NP[d].name for d in allowed))
    if state.graphs:        # graphs check types when an op is built: TypeError, as TF's op builder raises
        raise TypeError(f"Value passed to {op_.type} has DataType {t.dtype.name} not in list of allowed values: "
                        f"{names}")
    raise InvalidArgumentError(
        None, op_.type,
        f"Value for attr 'T' of {t.dtype.name} is not in the list of allowed values: {names} [Op:{op_.type}]")


def raise_type_mismatch(op_type, index, expected, got):
    """Input `index` of an `op_type` op has NumPy dtype `got` where `expected` was due:
    InvalidArgumentError eagerly (TF's kernel check), TypeError in graphs (its op builder's)."""
    if state.graphs:
        raise TypeError(f"Input #{index} of '{op_type}' Op has type {_dtypes._BY_NP[np.dtype(got)].name} that "
                        f"does not match expected type of {_dtypes._BY_NP[np.dtype(expected)].name}.")
    raise InvalidArgumentError(
        None, op_type,
        f"cannot compute {op_type} as input #{index}(zero-based) was expected to be a "
        f"{_tf_name(expected)} tensor but is a {_tf_name(got)} tensor [Op:{op_type}]")


_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _tf_name(np_dtype):
    """TensorFlow's kernel-level type name ("float" for float32), used in its messages."""
    name = _dtypes._BY_NP[np_dtype].name
    return _TF_TYPE_NAMES.get(name, name)


def get_op(op_type):
    """The Op registered under `op_type`; LookupError when there is none."""
    try:
        return _OPS[op_type]
    except KeyError:
        raise LookupError(f"No op of type '{op_type}' is defined.") from None


@tf_export("RegisterGradient")
class RegisterGradient:
    """Decorator registering the gradient function of an op type.

    Raises:
      KeyError: the op type already has a gradient (TensorFlow's behaviour).

    >>> import tapeflow as tf
    >>> tf.RegisterGradient("Exp")(lambda op, dy: dy)
    Traceback (most recent call last):
    ...
    KeyError: "Registering two gradient with name 'Exp'! (Previous registration was in _exp_grad)"
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        target = _OPS.get(self._op_type)
        previous = target.grad if target is not None else _PENDING.get(self._op_type)
        if previous is not None:
            where = getattr(previous, "__name__", "no_gradient")
            raise KeyError(f"Registering two gradient with name '{self._op_type}'! (Previous registration was in {where})")
        if target is None:
            _PENDING[self._op_type] = fn
        else:
            _set_grad(target, fn)
        return fn


@tf_export("no_gradient", "NotDifferentiable")
def no_gradient(op_type):
    """Declares `op_type` not differentiable: its inputs get `None` gradients."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    target = _OPS.get(op_type)
    if target is None:
        _PENDING[op_type] = NOT_DIFFERENTIABLE
    else:
        _set_grad(target, NOT_DIFFERENTIABLE)


def _set_grad(op_, fn):
    """Gives `op_` a gradient from outside its declaration (RegisterGradient, no_gradient, or one
    registered before the op existed): such a rule may read every input and output; an op that
    is not differentiable keeps none of them on a tape."""
    op_.grad = fn
    live = fn is not None and fn is not NOT_DIFFERENTIABLE
    op_.grad_reads_inputs = ALL if live else frozenset()
    op_.grad_reads_outputs = live


NotDifferentiable = no_gradient      # TensorFlow's older name, exported with no_gradient

tf_export("executing_eagerly")(executing_eagerly)      # context.py sits below the export module
