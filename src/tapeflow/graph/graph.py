"""Graphs: Operations over symbolic tensors, built by the same op functions as eager mode.

While a graph is the default (`Graph.as_default()`, or tracing a `tf.function`),
`op_def.execute` hands any op with a symbolic or variable input (and every
stateful op) to `Graph.create_op` instead of running its kernel.  Ops whose
inputs are all eager constants still run at once: the graph never sees them
(constant folding at build time).

The Operation's outputs are symbolic tensors (framework/shapes/symbolic_tensors.py) whose
static shapes come from the op's declared shape rule (`infer_metas`); no
kernel runs while a graph is built.
"""

import contextlib
import re

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.context import default_session, state
from tapeflow.framework.device import graph_scope, op_device
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import op as declare_op
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor, const, unknown_rank_error
from tapeflow.framework.tensor import _next_id
from tapeflow.framework.tensor_shape import TensorShape


# A graph input: TF1 placeholders (graph/session.py) and the arguments and captures of traced
# functions (graph/func_graph.py).  It is fed; its kernel runs only when a feed is missing.
@declare_op("Placeholder", same_dtype=False)
def _placeholder(dtype, shape, name):
    raise ValueError(f"You must feed a value for placeholder tensor '{name}' with dtype "
                     f"{_dtypes.from_numpy(dtype).name} and shape {TensorShape(shape)}")


class Operation:
    """A node of a Graph: an op type applied to input tensors with attributes.

    Gradient functions receive Operations exactly as they receive eager
    `OpRecord`s: `inputs`, `outputs`, `type`, `name`, `get_attr`.
    """

    __slots__ = ("graph", "op_def", "name", "inputs", "attrs", "outputs", "control_inputs",
                 "_id", "_device", "__weakref__")

    skip_input_indices = ()

    def __init__(self, graph, op_def, name, inputs, attrs, metas, control_inputs):
        self.graph = graph
        self.op_def = op_def
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.control_inputs = tuple(control_inputs)
        self._id = _next_id()      # unique across graphs (gradients may span a function and its outer graphs)
        self.outputs = tuple(SymbolicTensor(self, i, m) for i, m in enumerate(metas))

    @property
    def type(self):
        return self.op_def.type

    @property
    def device(self):
        """The device string requested for this op by device scopes, "" for none."""
        try:
            return self._device     # set only in device scopes (Note [recorded placement] in framework/device.py)
        except AttributeError:
            return ""

    @property
    def op(self):     # what gradient functions call `op.op` in the eager record
        return self.op_def

    @property
    def out_specs(self):
        return [(t._value.shape, t._value.dtype) for t in self.outputs]

    def run(self, feed_dict=None, session=None):
        """Runs this op in `session` or the default session (TF1 `Operation.run`); returns None.

        Raises:
          ValueError: no session is given and none is the default.
        """
        session = session or default_session("execute operation using `run()`", "with sess.as_default():", "run(session=sess)")
        session.run(self, feed_dict)

    def get_attr(self, name):
        try:
            return self.attrs[name]
        except KeyError:
            raise ValueError(f"Operation '{self.name}' has no attr named '{name}'.") from None

    def __repr__(self):
        return f"<tf.Operation '{self.name}' type={self.type}>"


def _unknown_rank_metas(op_def, inputs, attrs):
    """Output Metas of an op with an input of unknown rank: its `unknown_rank` rule."""
    rule = op_def.unknown_rank
    if rule is None:
        index = next(i for i, t in enumerate(inputs) if t._value.shape is None)
        raise unknown_rank_error(op_def.type, inputs[index], index)
    if op_def.shape_reads_inputs:
        return rule(*inputs, **attrs)
    return rule(*[t._value for t in inputs], **attrs)


def infer_metas(op_def, inputs, attrs):
    """Output Metas of `op_def` on `inputs`, from its declared shape rule.

    The rule gets the input Metas, or the input tensors themselves when the op
    declares `shape_reads_inputs` (to read the known entries of size inputs).
    No kernel runs (Note [no kernels at trace] in ops/gradient_rules.py).  An
    input of unknown rank is handled by the op's `unknown_rank` rule, or raises
    ValueError (Note [unknown rank] in framework/shapes/symbolic_tensors.py).
    """
    for t in inputs:
        if t._value.shape is None:
            return _unknown_rank_metas(op_def, inputs, attrs)
    rule = op_def.shape_fn
    if rule is None:
        raise ValueError(f"Op '{op_def.type}' declares no shape rule, so it cannot be used while a graph is built; "
                         f"give it one: @op('{op_def.type}', shape=...).")
    if op_def.shape_reads_inputs:
        return rule(*inputs, **attrs)
    return rule(*[t._value for t in inputs], **attrs)


@tf_export("Graph", "compat.v1.Graph")
class Graph:
    """A dataflow graph of Operations.

    >>> import tapeflow as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    ...     y = tf.reduce_sum(x * 2.0, axis=1)
    >>> y.shape, y.graph is g
    (TensorShape([None]), True)
    """

    building_function = False
    _first_own_id = 0     # eager tensors older than this are captured (FuncGraph) rather than folded

    def __init__(self):
        self._ops = []
        self._names = {}
        self._name_stack = ""
        self._control_inputs = []
        self._stateful_ops = []     # in creation order: run even when not fetched
        self._last_access = {}      # variable id -> last op reading or writing it
        self.outer_graph = None

    # -- building ----------------------------------------------------------------
    def constant_node(self, tensor):
        """A Const node of this graph holding an eager tensor's value."""
        return const(self, tensor)

    def _create_op(self, op_def, inputs, attrs, metas=None, name=None):
        inputs = [self._own(t) for t in inputs]
        if metas is None:
            try:
                metas = infer_metas(op_def, inputs, attrs)
            except InvalidArgumentError as e:      # like TF's op builder: a shape check at build time
                raise ValueError(e.message) from None
        elif op_def.unknown_rank is None:          # Metas worked out by the caller: ranks still checked
            for i, t in enumerate(inputs):
                if t._value.shape is None:
                    raise unknown_rank_error(op_def.type, t, i)
        name = self.unique_name(name or op_def.type)
        touched = self._variables_touched(inputs, attrs) if self.building_function else ()
        deps = self._control_inputs_now()
        for var_id in touched:        # Note [variable order]
            last = self._last_access.get(var_id)
            if last is not None:
                deps.append(last)
        op = Operation(self, op_def, name, inputs, attrs, metas, deps)
        if self in state.graph_devices:
            op._device = op_device(self, op)
        self._ops.append(op)
        for var_id in touched:
            self._last_access[var_id] = op
        if op_def.stateful:
            self._stateful_ops.append(op)
        if op_def.num_outputs == 1:
            return op.outputs[0]
        return op.outputs

    @staticmethod
    def _variables_touched(inputs, attrs):
        """Ids of the variables an op reads (as inputs) or writes (the `var` attr).

        Note [variable order]: in functions, ops touching a variable run in the
        order they were created (TF's automatic control dependencies), so a read
        placed after an assignment sees the new value.  TF1 graphs order only
        what `control_dependencies` says, as TensorFlow.
        """
        ids = [t._id for t in inputs if t._is_variable]
        var = attrs.get("var") if attrs else None
        if var is not None:
            ids.append(var._id)
        return ids

    def _own(self, t):
        """An input usable in this graph: own tensors, eager values and variables as is."""
        if isinstance(t, SymbolicTensor) and t.graph is not self:
            return self.capture(t)
        return t

    def capture(self, t):
        raise InvalidArgumentError(None, None, f"Tensor {t.name} belongs to another graph and cannot be "
                                   "used here; pass it as an input or fetch it from its own graph.")

    def _control_inputs_now(self):
        deps = []
        for group in self._control_inputs:
            deps.extend(group)
        return deps

    def unique_name(self, name, mark_as_used=True):
        name = (self._name_stack + "/" + name) if self._name_stack else name
        count = self._names.get(name, 0)
        if mark_as_used:
            self._names[name] = count + 1
        return name if count == 0 else f"{name}_{count}"

    @contextlib.contextmanager
    def as_default(self):
        """Makes this graph the one new ops are added to."""
        state.graphs.append(self)
        try:
            yield self
        finally:
            state.graphs.pop()

    def device(self, device_name_or_function):
        """A context in which new ops of this graph are placed on a device (recorded as `op.device`).

        Args:
          device_name_or_function: a device string or `tf.DeviceSpec`, merged with the
            enclosing scopes (inner fields win); a function of the Operation returning
            its device; or None, which ignores the enclosing scopes.

        >>> import tapeflow as tf
        >>> g = tf.Graph()
        >>> with g.as_default(), g.device("/cpu:1"):
        ...     c = tf.constant(1.0)
        >>> c.op.device
        '/device:CPU:1'
        """
        return graph_scope(self, device_name_or_function)

    @contextlib.contextmanager
    def name_scope(self, name):
        old = self._name_stack
        if name and name.endswith("/"):     # a scope made before (a tf.Module's), re-entered as it is
            self._name_stack = name[:-1]
        elif name:
            name = re.sub(r"[^A-Za-z0-9_.\-/]", "_", name)
            self._name_stack = self.unique_name(name)
        try:
            yield (self._name_stack + "/") if self._name_stack else ""
        finally:
            self._name_stack = old

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            saved, self._control_inputs = self._control_inputs, []
            try:
                yield
            finally:
                self._control_inputs = saved
            return
        ops = []
        for c in control_inputs:
            if isinstance(c, SymbolicTensor) or isinstance(getattr(c, "op", None), Operation):
                c = c.op        # a tensor's op, a variable write's result (_UnreadVariable)'s write
            if isinstance(c, Operation):
                ops.append(c)
        self._control_inputs.append(ops)
        try:
            yield
        finally:
            self._control_inputs.pop()

    def get_operations(self):
        return list(self._ops)

    def get_operation_by_name(self, name):
        for op in self._ops:
            if op.name == name:
                return op
        raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")

    def get_tensor_by_name(self, name):
        op_name, _, index = name.rpartition(":")
        return self.get_operation_by_name(op_name).outputs[int(index)]

    def finalize(self):
        pass
