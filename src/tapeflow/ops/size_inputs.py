"""Size arguments known only when a graph runs: shapes, multiples, paddings, begin/size.

Eagerly, and in graphs whenever the sizes are Python values or known
constants, ops take their sizes as static attrs (the fast path).  When part of
a size argument is a symbolic tensor (`[tf.shape(x)[0] * 3]`, `tf.shape(x)`),
the op takes it as an int32/int64 tensor input instead, TensorFlow's encoding;
its kernel reads the sizes when the graph runs and its static output shape
comes from the entries known while building (`framework/shapes/known_values`).

Note [size inputs]: such an op has one more input than its static form (the
sizes), and its attrs lack the size attr.  Its kernel receives the sizes as a
NumPy array where the static form gets a tuple, its shape rule (declared with
`shape_reads_inputs=True`) receives the tensor where the static form gets the
tuple, and its gradient returns None for the sizes input (and declares it among
the inputs it reads when it needs the sizes).
"""

import numpy as np

from tapeflow.framework.tensor import Tensor
from tapeflow.framework.shapes.known_values import constant_value, partial_value, shape_vector
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor
from tapeflow.ops import array_ops
from tapeflow.ops import constructor_ops

_INT_TYPES = frozenset(np.dtype(d) for d in (np.int32, np.int64))


def has_symbolic(value):
    """Whether `value` is or holds (in nested lists) a symbolic tensor."""
    if isinstance(value, SymbolicTensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_symbolic(v) for v in value)
    return False


def _pack(value):
    """A nested list of ints and scalar tensors as one tensor (TF's auto-packing)."""
    if not isinstance(value, (list, tuple)) or not has_symbolic(value):
        return value
    return array_ops.stack([_pack(v) for v in value])


def sizes_or_tensor(value, what, op_type):
    """A size argument holding symbolic tensors: its value when known while building, else an int tensor.

    Returns:
      A NumPy int array when every entry is known (the op then takes the
      static path), else the int32/int64 tensor the op takes as an input;
      None when `value` holds no symbolic tensor (not a graph size argument).

    Raises:
      TypeError: the tensor is not of an integer type.
    """
    if not has_symbolic(value):
        return None
    t = _pack(value)
    if t._value.dtype not in _INT_TYPES:
        raise TypeError(f"`{what}` of {op_type} must be an int32 or int64 tensor, got {t.dtype.name}.")
    known = constant_value(t)
    return t if known is None else known


def ints_or_tensor(value, what, op_type, int_list):
    """A size argument as `int_list(value, what)` (a tuple of ints, the static
    path), or, in graphs where an entry is known only at run time, the int
    tensor the op takes as an input (Note [size inputs]).

    Raises:
      TypeError: `value` is not a size argument.
    """
    try:
        return int_list(value, what)
    except TypeError:
        known = sizes_or_tensor(value, what, op_type)
        if known is None:
            raise
        return known if isinstance(known, Tensor) else tuple(known.tolist())


def vector(sizes, what, op_type):
    """The entries of a size argument (tuple attr or 1-D tensor input) as ints, None where unknown."""
    if isinstance(sizes, Tensor):
        return shape_vector(sizes, what, op_type)
    return list(sizes)


def matrix(sizes, what, op_type):
    """The entries of a 2-D size argument (paddings) as rows of ints, None where unknown."""
    if not isinstance(sizes, Tensor):
        return [list(row) for row in sizes]
    known = partial_value(sizes)
    if known is None or known.ndim != 2:
        raise ValueError(f"`{what}` of {op_type} must be a matrix of known shape, got one of shape "
                         f"{sizes.shape}.")
    return known.tolist()


def entries(t, n):
    """The n entries of the 1-D int tensor `t`: Python ints where known, scalar tensors `t[i]` otherwise."""
    known = shape_vector(t, "sizes")
    return [t[i] if d is None else d for i, d in enumerate(known[:n])]


def dims_of(x, out_type=np.int32):
    """x's dimensions: Python ints where static, scalar tensors read when the graph runs otherwise."""
    shape = tuple(x._value.shape)
    if None not in shape:
        return list(shape)
    dynamic = constructor_ops.shape(x, out_type=out_type)
    return [dynamic[i] if d is None else d for i, d in enumerate(shape)]


def meta(shape, dtype):
    """A Meta of `shape` (a sequence, or None for an unknown rank) and `dtype`."""
    return Meta(None if shape is None else tuple(shape), np.dtype(dtype))


def unknown_length(sizes):
    """Whether a size argument is a tensor whose length is unknown while building (`tf.shape(x)`
    of an x of unknown rank): the op's output then has unknown rank (Note [unknown rank])."""
    if not isinstance(sizes, Tensor):
        return False
    shape = sizes._value.shape
    return shape is None or (len(shape) == 1 and shape[0] is None)


def output_dims(values, op_type):
    """Known sizes of a shape tensor as output dims: -1 (and None) unknown, other negatives an error."""
    out = []
    for d in values:
        if d is not None and d < -1:
            raise ValueError(f"Dimension {d} must be >= -1 (a size of {op_type}).")
        out.append(None if d is None or d == -1 else d)
    return out


def product(dims):
    """The product of sizes that are Python ints or scalar int tensors: an int when all are ints."""
    out = 1
    for d in dims:
        out = d * out if isinstance(d, Tensor) else out * d
    return out
