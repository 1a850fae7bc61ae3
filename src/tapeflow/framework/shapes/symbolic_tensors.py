"""Abstract values: what stands in for a tensor's value while a graph is built.

A symbolic tensor is a `Tensor` whose `_value` is a `Meta` (static shape with
`None` for unknown dimensions, NumPy dtype), so code that only reads
`x._value.shape` / `.dtype` / `.ndim` works unchanged on eager and symbolic
tensors.  The shape itself is None when even the rank is unknown (Note
[unknown rank]).  Graphs (`graph/graph.py`) make them; ops read them.
"""

import numpy as np

from tapeflow.framework import hooks
from tapeflow.framework.errors import OperatorNotAllowedInGraphError
from tapeflow.framework.context import default_session
from tapeflow.framework.shapes.abstract_values import Meta  # noqa: F401  (ops reach it here too)
from tapeflow.framework.op_def import op
from tapeflow.framework.tensor import Tensor, uses_equality
from tapeflow.framework.tensor_shape import TensorShape


class SymbolicTensor(Tensor):
    """An output of an Operation in a Graph; it has a static shape but no value."""

    __slots__ = ("_op", "_index")

    _is_symbolic = True

    def __init__(self, op, index, meta):
        Tensor.__init__(self, meta)
        self._op = op
        self._index = index

    op = property(lambda self: self._op)
    value_index = property(lambda self: self._index)
    graph = property(lambda self: self._op.graph)

    @property
    def name(self):
        return f"{self._op.name}:{self._index}"

    @property
    def shape(self):
        return TensorShape(self._value.shape)

    @property
    def device(self):
        return self._op.device

    def set_shape(self, shape):
        """Refines the static shape with what the caller knows (TF's `Tensor.set_shape`).

        Raises:
          ValueError: `shape` is not compatible with the shape known so far.
        """
        merged = self.shape.merge_with(shape)        # ValueError when incompatible
        if merged.rank is not None:
            self._value = Meta(tuple(merged.as_list()), self._value.dtype)   # Metas may be shared: replaced

    @property
    def numpy(self):
        # TensorFlow's graph tensors have no `numpy` attribute: AttributeError, as there
        raise AttributeError(
            f"'SymbolicTensor' object has no attribute 'numpy': {self.name} is a graph tensor, with no value "
            "while the graph is built. Return it from the tf.function, or fetch it with Session.run / .eval().")

    def eval(self, feed_dict=None, session=None):
        """The tensor's value computed by `session` or the default session (TF1 `Tensor.eval`).

        Raises:
          ValueError: no session is given and none is the default.
        """
        session = session or default_session("evaluate tensor using `eval()`", "with sess.as_default()", "eval(session=sess)")
        return session.run(self, feed_dict)

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic tf.Tensor ({self.name}) to a numpy array. This error may indicate that "
            "you're trying to pass a Tensor to a NumPy call, which is not supported.")

    def __bool__(self):
        raise OperatorNotAllowedInGraphError(f"Using a symbolic tf.Tensor ({self.name}) as a Python `bool` is not allowed: "
                        "use tf.cond for data-dependent control flow.")

    def __float__(self):
        raise TypeError("float() argument must be a string or a real number, not 'SymbolicTensor'")

    def __int__(self):
        raise TypeError("int() argument must be a string, a bytes-like object or a real number, not 'SymbolicTensor'")

    def __len__(self):
        n = self._value.shape[0] if self._value.shape else None
        if n is None:
            raise TypeError(f"len is not well defined for symbolic tensor {self.name} of shape {self.shape}.")
        return n

    def __iter__(self):
        if not self._value.shape or self._value.shape[0] is None:
            raise TypeError(f"Cannot iterate over tensor {self.name} of shape {self.shape}.")
        return iter(hooks.unstack(self))

    def __repr__(self):
        return f"<tf.Tensor '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("Symbolic tensors cannot be pickled.")

    # Note [tensor equality] in framework/tensor.py: TF1 graphs compare and hash tensors by
    # identity (feed_dict keys); inside tf.function `==` is elementwise like eager tensors.
    def __hash__(self):
        if Tensor._USE_EQUALITY and self._op.graph.building_function:
            raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")
        return id(self)

    def __eq__(self, other):
        if uses_equality(self):
            return Tensor.__eq__(self, other)
        return self is other

    def __ne__(self, other):
        if uses_equality(self):
            return Tensor.__ne__(self, other)
        return self is not other


def is_static(shape):
    """Whether a static shape (a tuple, or None for an unknown rank) is fully known."""
    return shape is not None and None not in shape


# Note [unknown rank]: a tensor whose rank is unknown while the graph is built
# (`compat.v1.placeholder(tf.float32)`, `tf.TensorSpec(None)`) has the Meta shape
# None.  Only ops that declare it take such inputs: their `unknown_rank` attribute
# is the shape rule used then (called like `shape_fn`, `shape_reads_inputs` included),
# usually one of the rules of `framework/shapes/shape_rules`.  `infer_metas` checks the inputs
# once, so every other op raises one clear ValueError, and nothing changes for
# known ranks.  Python wrappers that need the rank before building their op (to
# normalize an axis, say) ask `known_rank`, which raises the same error.

def unknown_rank_error(op_type, t, index=0):
    """The ValueError for an op that needs the rank of its input `t` (input `index`)."""
    what = f"{t.name}, " if isinstance(t, SymbolicTensor) else ""
    return ValueError(
        f"'{op_type}' needs inputs of known rank, but input {index} ({what}{np.dtype(t._value.dtype).name}) has "
        "unknown rank. Tensors of unknown rank support only elementwise ops, reductions, reshape, broadcast_to, "
        "squeeze without axis, shape/size/rank, matmul and softmax on the last axis; give the tensor a rank: "
        "compat.v1.placeholder(dtype, shape=[None, None]), tf.TensorSpec([None, None]) or t.set_shape([None, None]).")


def known_rank(t, op_type):
    """The rank of tensor `t` as an int, for Python code building an `op_type` op.

    Raises:
      ValueError: `t` has unknown rank (Note [unknown rank]).
    """
    rank = t._value.ndim
    if rank is None:
        raise unknown_rank_error(op_type, t)
    return rank


@op("Const", same_dtype=False, differentiable=False)
def _const(value):
    return value


def const(graph, tensor):
    """A Const node holding an eager tensor's value (graph-mode `tf.constant`)."""
    value = tensor._value
    return graph._create_op(_const, [], {"value": value}, metas=[Meta(tuple(np.shape(value)), np.asarray(value).dtype)])
