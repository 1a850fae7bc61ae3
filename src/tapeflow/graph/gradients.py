"""Symbolic gradients of a graph (gradients_util in Python), `gradients` and `hessians`.

The algorithm, on the ops of the default graph:
  1. mark the ops reachable forward from `xs` (through trainable tensors);
  2. walk back from `ys` collecting the ops between both, counting for each
     how many of its consumers among them must still backprop (pending count);
  3. pop ready ops from a queue, aggregate the gradients of their outputs, call
     their gradient functions (which add gradient ops to the graph), hand each
     input its gradient and enqueue producers whose pending count drops to 0.
"""

import collections

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor, is_static
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import gradient_rules, math_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.core.vectorization import vectorizing
from tapeflow.ops.variables import Variable


@tf_export("AggregationMethod")
class AggregationMethod:
    """How gradient terms of one tensor are summed in `gradients`."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_VALID_AGGREGATION = (AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                      AggregationMethod.EXPERIMENTAL_ACCUMULATE_N)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _trainable(t):
    return t._value.dtype in dtypes.TRAINABLE_NP


def _producer(t):
    return t.op if isinstance(t, SymbolicTensor) else None


class _Consumers:
    """tensor id -> ops consuming it, in the graph and the outer graphs it captures from
    (built once per call).

    Note [gradients across captures]: inside a function, the placeholder of a
    captured outer tensor stands for that tensor, so the walk between xs and ys
    goes on through the outer graph's ops (their gradient ops are added to the
    current graph, which captures what they use), as gradients_util does.
    """

    def __init__(self, graph):
        self.alias = {}           # capture placeholder id -> the outer value it stands for
        graphs = []
        while graph is not None:
            graphs.append(graph)
            for outer, placeholder in getattr(graph, "captures", ()):
                self.alias[placeholder._id] = outer
            graph = graph.outer_graph
        self.by_tensor = collections.defaultdict(list)
        for g in graphs:
            for op in g._ops:
                for t in op.inputs:
                    self.by_tensor[self.resolve(t)._id].append(op)

    def resolve(self, t):
        while t._id in self.alias:
            t = self.alias[t._id]
        return t

    def producer(self, t):
        return _producer(self.resolve(t)) if self.alias else _producer(t)

    def of(self, t):
        return self.by_tensor.get(t._id, ())


def _pending_counts(ys, xs, consumers):
    """Steps 1 and 2: the ops between xs and ys and their pending counts."""
    reached = set()
    queue = collections.deque()
    for x in xs:     # from the ops making the xs (variables have none: from their readers)
        producer = consumers.producer(x)
        if producer is not None:
            queue.append(producer)
        else:
            queue.extend(consumers.of(x))
    while queue:
        op = queue.popleft()
        if op._id in reached:
            continue
        reached.add(op._id)
        for out in op.outputs:
            if _trainable(out):
                queue.extend(consumers.of(out))
    between, between_list = set(), []
    queue = collections.deque(op for op in (consumers.producer(y) for y in ys) if op is not None)
    while queue:
        op = queue.popleft()
        if op._id in reached:
            between.add(op._id)
            between_list.append(op)
            reached.discard(op._id)
            for t in op.inputs:
                producer = consumers.producer(t)
                if producer is not None:
                    queue.append(producer)
    pending = collections.defaultdict(int)
    for op in between_list:
        for t in op.inputs:
            producer = consumers.producer(t)
            if producer is not None and producer._id in between:
                pending[producer._id] += 1
    return between, pending


def _default_grad_ys(grad_ys, ys):
    """Ones for missing grad_ys, with gradients_util's type checks."""
    if len(grad_ys) != len(ys):
        raise ValueError(f"Length mismatch. Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    out = []
    for y, g in zip(ys, grad_ys):
        ydt = dtypes.from_numpy(y._value.dtype)
        if g is None:
            if ydt.is_complex:
                raise TypeError(f"Gradients of complex tensors ({y!r}) must set grad_ys (y.dtype = {ydt.name})")
            out.append(math_ops.ones_like(y))
            continue
        g = g if isinstance(g, IndexedSlices) else convert_to_tensor(g)
        gdt = g.dtype
        if (ydt.is_floating or ydt.is_integer) and not (gdt.is_floating or gdt.is_integer):
            raise TypeError(f"Gradient type {gdt.name} generated for real or integer-valued tensor {y!r} with "
                            f"type {ydt.name} must be real or integer")
        if ydt.is_complex and not gdt.is_complex:
            raise TypeError(f"Gradient type {gdt.name} generated for complex-valued tensor {y!r} with type "
                            f"{ydt.name} must be real")
        out.append(g)
    return out


def _aggregate(grad_list, method):
    """Sums the gradient terms of one tensor (None when there are none)."""
    terms = [g for g in grad_list if g is not None]
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    if method in (AggregationMethod.EXPERIMENTAL_TREE, AggregationMethod.EXPERIMENTAL_ACCUMULATE_N) and all(
            type(g) is not IndexedSlices and g._value.dtype != object for g in terms):
        total = terms[0]
        for g in terms[1:]:
            total = gradient_rules.aggregate([total, g])
        return total
    return gradient_rules.aggregate(terms)


def _check_shape(op, index, t_in, grad):
    if isinstance(grad, IndexedSlices) or isinstance(t_in, Variable):
        return
    if not TensorShape(t_in._value.shape).is_compatible_with(grad._value.shape):
        raise ValueError(
            f"Incompatible shapes between op input and calculated input gradient. Forward operation: {op.name}. "
            f"Input index: {index}. Original input shape: {TensorShape(t_in._value.shape)}. Calculated input "
            f"gradient shape: {TensorShape(grad._value.shape)}")
    if isinstance(grad, SymbolicTensor):
        grad.set_shape(t_in._value.shape)     # the gradient has its input's static shape, as in TF


def _gradients(ys, xs, grad_ys, stop_gradients, aggregation_method, unconnected_gradients):
    if not state.graphs:
        raise RuntimeError("tf.gradients is not supported when eager execution is enabled. "
                           "Use tf.GradientTape instead.")
    unconnected = gradient_rules.unconnected_policy(unconnected_gradients)
    if aggregation_method is None:
        aggregation_method = AggregationMethod.DEFAULT
    if aggregation_method not in _VALID_AGGREGATION:
        raise ValueError(f"Invalid `aggregation_method` specified {aggregation_method}. "
                         f"Accepted values are {list(_VALID_AGGREGATION)}.")
    ys = [y if isinstance(y, (Tensor, Variable)) else convert_to_tensor(y) for y in _as_list(ys)]
    ys = [y.value() if isinstance(y, Variable) else y for y in ys]
    xs = [x if isinstance(x, Variable) else convert_to_tensor(x) for x in _as_list(xs)]
    grad_ys = _default_grad_ys([None] * len(ys) if grad_ys is None else _as_list(grad_ys), ys)
    consumers = _Consumers(state.graphs[-1])      # Note [gradients across captures]
    xs = [consumers.resolve(x) for x in xs]
    between, pending = _pending_counts(ys, xs, consumers)
    stop_ids = {t.op._id for t in ([] if stop_gradients is None else _as_list(stop_gradients)) if isinstance(t, SymbolicTensor)}
    x_ids = {x._id for x in xs}
    for x in xs:   # ops making an x are stop ops unless another x feeds them (gradients_util _StopOps)
        op = consumers.producer(x)
        if op is not None and not any(consumers.producer(t) is not None and pending[consumers.producer(t)._id] > 0
                                      for t in op.inputs):
            stop_ids.add(op._id)
    grads = collections.defaultdict(list)     # tensor id -> gradient terms
    for y, g in zip(ys, grad_ys):
        grads[y._id].append(g)
    queue = collections.deque()
    queued = set()
    for y in ys:
        op = consumers.producer(y)
        if op is not None and op._id in between and pending[op._id] == 0 and op._id not in queued:
            queued.add(op._id)
            queue.append(op)
    while queue:
        op = queue.popleft()
        out_grads = [_aggregate(grads.get(t._id, ()), aggregation_method) for t in op.outputs]
        for t, g in zip(op.outputs, out_grads):
            if t._id in x_ids and g is not None:
                grads[t._id] = [g]
        in_grads = _op_gradients(op, out_grads, stop_ids)
        for i, (t_in, g) in enumerate(zip(op.inputs, in_grads)):
            if g is not None and not (type(t_in) is Tensor):
                _check_shape(op, i, t_in, g)
                grads[consumers.resolve(t_in)._id].append(g)
        for t in op.inputs:
            producer = consumers.producer(t)
            if producer is not None and producer._id in between:
                pending[producer._id] -= 1
                if pending[producer._id] == 0 and producer._id not in queued:
                    queued.add(producer._id)
                    queue.append(producer)
    result = []
    for x in xs:
        g = _aggregate(grads.get(x._id, ()), aggregation_method)
        if g is None and unconnected is gradient_rules.UnconnectedGradients.ZERO:
            g = gradient_rules.zeros_like(x)
        result.append(g)
    return result


def _op_gradients(op, out_grads, stop_ids):
    """Input gradients of one op (None for each input when it gets none)."""
    if op._id in stop_ids or all(g is None for g in out_grads):
        return [None] * len(op.inputs)
    in_grads = gradient_rules.apply_rule(op, out_grads)
    return [None] * len(op.inputs) if in_grads is None else in_grads


@tf_export("gradients", names_op=False)
def gradients(ys, xs, grad_ys=None, name="gradients", gate_gradients=False, aggregation_method=None,
              stop_gradients=None, unconnected_gradients="none"):
    """Symbolic derivatives of sum(ys) with respect to each x in xs (graph mode only).

    Args:
      ys: a tensor or list of tensors to differentiate.
      xs: a tensor, variable or list of them.
      grad_ys: optional initial gradients, one per y (ones by default; required for complex ys).
      stop_gradients: tensors held constant (partial instead of total derivatives).
      aggregation_method: an `AggregationMethod` value.
      unconnected_gradients: "none" or "zero" (or `tf.UnconnectedGradients`).

    Returns:
      A list with one gradient (or None) per x.

    Raises:
      RuntimeError: called while executing eagerly.
      LookupError: an op on the path has no gradient.
      ValueError: a bad aggregation method or a gradient of the wrong shape.
      TypeError: grad_ys of the wrong type.
    """
    return _gradients(ys, xs, grad_ys, stop_gradients, aggregation_method, unconnected_gradients)


@tf_export("compat.v1.gradients", names_op=False)
def gradients_v1(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
                 gate_gradients=False, aggregation_method=None, stop_gradients=None,
                 unconnected_gradients="none"):
    """`tf.compat.v1.gradients`: `gradients` with the TF1 signature."""
    return _gradients(ys, xs, grad_ys, stop_gradients, aggregation_method, unconnected_gradients)


def _hessian(x, gradient):
    """The Hessian block d gradient / d x: every Hessian-vector product at once, by
    differentiating `gradient` with a batched output gradient whose examples are
    the unit vectors (Note [vectorized Jacobians] in eager/jacobians.py).  TensorFlow
    builds one product per row in a loop; the result is the same."""
    shape = x._value.shape
    if not is_static(shape):
        raise ValueError(f"hessians needs a fully known static shape for {x!r}, got {TensorShape(shape)}.")
    n = int(np.prod(shape, dtype=np.int64))
    shape = tuple(shape)
    if n == 0:
        return gradient_rules.zeros(shape + shape, x._value.dtype)
    eye = gradient_rules.constant_node(np.eye(n, dtype=x._value.dtype).reshape((n,) + shape))
    with vectorizing(n) as level:
        hv = gradients(gradient, x, grad_ys=level.batch(eye))[0]
        rows = gradient_rules.zeros((n,) + shape, x._value.dtype) if hv is None else level.unbatch(
            convert_to_tensor(hv))
    return primitives.reshape(rows, shape + shape)


@tf_export("hessians", names_op=False)
def hessians(ys, xs, gate_gradients=False, aggregation_method=None, name="hessians"):
    """The Hessians of sum(ys) with respect to each x, of shape x.shape + x.shape (graph mode).

    Raises:
      RuntimeError: called while executing eagerly.
      ValueError: an x without a fully known static shape.
    """
    xs = _as_list(xs)
    grads = gradients(ys, xs, aggregation_method=aggregation_method)
    return [None if g is None else _hessian(x, convert_to_tensor(g)) for x, g in zip(xs, grads)]


@tf_export("compat.v1.hessians", names_op=False)
def hessians_v1(ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False,
                aggregation_method=None):
    """`tf.compat.v1.hessians`: `hessians` with the TF1 signature."""
    return hessians(ys, xs, gate_gradients, aggregation_method, name)
