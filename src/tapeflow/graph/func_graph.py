"""The graph of a traced function: `FuncGraph`, its captures and its outputs.

Every traced function (a `tf.function`'s trace, a cond branch, a loop body, a
backward or vectorized function) is built in a FuncGraph; concrete_function.py
makes one callable.
"""

import numpy as np

from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, const
from tapeflow.framework.tensor import Tensor, _next_id, convert_to_tensor
from tapeflow.ops.variables import Variable
from tapeflow.graph.graph import Graph, _placeholder


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


def output_of(graph, value):
    """`value` as an output of the function traced in `graph`: a tensor of `graph` (a variable
    read, a capture, a Const of an eager tensor made while tracing), or a Python value as is."""
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
