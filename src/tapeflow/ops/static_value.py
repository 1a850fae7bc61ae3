"""`tf.get_static_value`: a tensor's value when it is known while the graph is built.

Note [static values]: TensorFlow's `get_static_value` evaluates a fixed set of
ops only: Const, Shape, Size, Rank, Range, Cast, ConcatV2, Split, Fill, Equal,
NotEqual, the identities, and Pack and Unpack along axis 0, each when all it
reads is known; no arithmetic (`tf.shape(x)[0] + 1` is unknown).  tapeflow's
shape inference knows more (framework/shapes/known_values.py runs any small pure op), but
`get_static_value` keeps TensorFlow's set, so a program that branches on it
takes the branch it takes with TensorFlow.  With `partial=True`, a Pack of
partly known values is an object array with None for the unknown entries.
The set is keyed by op records, read here from their op modules.  One
difference remains: tapeflow runs ops on constants while a graph is built
(`tf.shape` of a fully known shape is a constant, and so is what is computed
from it), and those values are known here where TensorFlow's are not.
"""

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor, _const
from tapeflow.framework.tensor import Tensor, is_tensor
from tapeflow.ops import array_ops, constructor_ops, join_ops, math_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.core import basic_ops


@tf_export("get_static_value")
def get_static_value(tensor, partial=False):
    """The value of `tensor` if it is known without running the graph (Note [static values]).

    Args:
      tensor: a tensor (eager: its value; graph: worked out from constants and static
        shapes), or any other value (returned as it is).
      partial: whether a stacked vector of partly known entries (`tf.stack([n, 3])`)
        may be returned as an object array with None for the unknown ones.

    Returns:
      A NumPy array (or scalar), the value itself for non-tensors, or None when the
      value is known only when the graph runs (and for variables).

    >>> import tapeflow as tf
    >>> tf.get_static_value(tf.constant([1, 2]))
    array([1, 2], dtype=int32)
    >>> @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    ... def f(x):
    ...     print(tf.get_static_value(tf.shape(x)), tf.get_static_value(tf.shape(x)[1]))
    ...     return x
    >>> _ = f.get_concrete_function()
    None None
    """
    if type(tensor) is Tensor:         # in a graph, a value folded while building: an array, as a Const's
        return np.array(tensor._value) if state.graphs else tensor.numpy()
    if not is_tensor(tensor):
        return tensor
    if not isinstance(tensor, SymbolicTensor):
        return None                       # variables and composite tensors
    return _value(tensor, partial)


def _value(t, partial=False):
    if type(t) is Tensor:
        return np.asarray(t._value)
    if not isinstance(t, SymbolicTensor):
        return None
    op = t.op
    rule = _RULES.get(op.op_def)
    return None if rule is None else rule(t, op, partial)


def _static_dims(t):
    shape = t._value.shape
    return None if shape is None or None in shape else tuple(shape)


def _shape(t, op, partial):
    dims = _static_dims(op.inputs[0])
    return None if dims is None else np.array(dims, dtype=t._value.dtype)


def _size(t, op, partial):
    dims = _static_dims(op.inputs[0])
    return None if dims is None else np.prod(dims, dtype=np.int32)


def _rank(t, op, partial):
    shape = op.inputs[0]._value.shape
    return None if shape is None else np.asarray(len(shape), np.int32)


def _kernel(t, op, partial, inner_partial=False):
    """The op's own kernel on its inputs' values, when they are all known."""
    values = []
    for x in op.inputs:
        v = _value(x, inner_partial)
        if v is None or v.dtype == object:
            return None
        values.append(v)
    out = op.op_def.kernel(*values, **op.attrs)
    return np.asarray(out if op.op_def.num_outputs == 1 else out[t._index])


def _kernel_partial(t, op, partial):
    return _kernel(t, op, partial, partial)


def _fill(t, op, partial):
    dims = _static_dims(t)
    value = _value(op.inputs[0])
    return None if dims is None or value is None else np.full(dims, value, dtype=value.dtype)


def _pack(t, op, partial):
    if op.attrs["axis"] != 0 or not op.inputs:
        return None
    values = []
    for x in op.inputs:
        v = _value(x, partial)
        if v is None and not partial:
            return None
        values.append(v)
    try:
        return np.array(values)
    except ValueError:
        return np.array(values, dtype=object)


def _unpack(t, op, partial):
    if op.attrs["axis"] != 0:
        return None
    v = _value(op.inputs[0], partial)
    return None if v is None else v[t._index]


def _identity(t, op, partial):
    return _value(op.inputs[0], partial)


# op record -> its rule (t, op, partial) -> value or None
_RULES = {
    _const: lambda t, op, p: np.asarray(op.attrs["value"]),
    basic_ops._shape: _shape, constructor_ops._size: _size, constructor_ops._rank: _rank,
    basic_ops._range: _kernel, constructor_ops._fill: _fill, basic_ops._cast: _kernel,
    join_ops._concat: _kernel, join_ops._split_even: _kernel_partial, primitives._pack: _pack,
    primitives._unpack: _unpack, math_ops.equal.op: _kernel, math_ops.not_equal.op: _kernel,
    array_ops._identity: _identity, array_ops._stop_gradient: _identity,
}
