"""Graph shape rules and static-argument helpers of the math, reduction, nn and conv families.

A shape rule (declared as `@op(..., shape=rule)`) gives an op's static output
shapes and dtypes in a graph the way TensorFlow's C++ shape function does; no
kernel runs while a graph is built.  Rules receive the inputs' Metas (shape
tuples with None for unknown dims, or None for an unknown rank) and the op's
attrs.  The family presets (`unary_op`, `binary_op`, `comparison_op`,
`reduction_op`) declare an op with its family's rules in one decorator.
"""

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor
from tapeflow.framework.tensor import Tensor


# Note [build-time shape errors]: TensorFlow checks an op's shapes and static
# arguments twice: its shape function while a graph is built (a failure is a
# ValueError at trace time) and its kernel when the op runs (InvalidArgumentError).
# Shape rules (`shape=` in `@op`) run only while a graph is built and raise
# ValueError; `Graph._create_op` turns an InvalidArgumentError escaping one into
# ValueError too.  The Python wrappers that normalize static arguments (axes,
# perms, paddings, sizes) before the op exists make, for the checks TensorFlow's
# shape function also makes, their exception with `shape_error`, the one place
# that picks the class by mode; checks only TensorFlow's kernel makes (duplicate
# reduction axes, negative multiples, indices out of range) stay
# InvalidArgumentError in both modes.  Eager ops never reach this: no cost there.

def shape_error(op_type, message):
    """The exception for a failed check of known shapes or static arguments of an `op_type` op
    (Note [build-time shape errors]): ValueError while a graph is built, InvalidArgumentError eagerly."""
    if state.graphs:
        return ValueError(f"{message} [Op:{op_type}]")
    return InvalidArgumentError(None, op_type, f"{message} [Op:{op_type}]")


MAX_RANK = 64        # NumPy's limit on dimensions (TensorFlow's is 254)


def check_rank(rank, op_type):
    """Raises InvalidArgumentError when an `op_type` result would have more dimensions than a
    NumPy array can: tapeflow cannot hold it (TensorFlow fails the same way, with the same class,
    when such a tensor is converted to NumPy)."""
    if rank > MAX_RANK:
        raise InvalidArgumentError(
            None, op_type, f"{op_type} would make a tensor of rank {rank}, but tapeflow holds tensors as NumPy "
            f"arrays, which have at most {MAX_RANK} dimensions; reshape to fewer dimensions. [Op:{op_type}]")


def static_int(value, what, op_type):
    """An int argument that may be a tensor (`axis=tf.constant(1)`) as a Python int.

    In graphs the tensor must be known while the graph is built (a constant,
    or computed from static shapes).

    Raises:
      ValueError: a symbolic tensor whose value is known only when the graph runs.
      TypeError: a value that is not a single integer.
    """
    if type(value) is int:
        return value
    if isinstance(value, SymbolicTensor):
        known = constant_value(value)
        if known is None:
            raise ValueError(f"`{what}` of {op_type} must be known while the graph is built (a constant or a "
                             f"value computed from static shapes), got {value.name}.")
        value = known
    elif isinstance(value, Tensor):
        value = value._value
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise TypeError(f"`{what}` of {op_type} must be a single integer, got {value!r}.")
    return int(array.reshape(()))


def _merge(a, b, what):
    """Two dims that must agree: the known one; ValueError when both are known and differ."""
    if a is None:
        return b
    if b is not None and a != b:
        raise ValueError(f"{what}: dimensions {a} and {b} are not equal.")
    return a


def merge_shapes(shapes, what):
    """Shapes that must be equal (AddN's inputs), merged dim by dim.

    Raises:
      ValueError: ranks differ or known dims differ.
    """
    first = tuple(shapes[0])
    for s in shapes[1:]:
        if len(s) != len(first):
            raise ValueError(f"{what}: shapes {list(first)} and {list(s)} must have the same rank.")
        first = tuple(_merge(a, b, what) for a, b in zip(first, s))
    return first


def add_n_shape(*xs):
    """AddN: the inputs' shapes merged (TensorFlow checks the rest when the graph runs); inputs
    of unknown rank add nothing (the result has unknown rank when all have)."""
    shapes = [x.shape for x in xs if x.shape is not None]
    return [Meta(merge_shapes(shapes, "Inputs to AddN") if shapes else None, xs[0].dtype)]


def _broadcast_dim(a, b):
    """One dim of a broadcast of batch dims that may be unknown (TF's BroadcastBinaryOpOutputShapeFn)."""
    if a == 1:
        return b
    if b == 1:
        return a
    if a is None or b is None:            # unknown against a size > 1: that size
        known = a if b is None else b
        return known if known is not None and known > 1 else None
    if a != b:
        raise ValueError(f"dimensions {a} and {b} are not broadcastable")
    return a


def broadcast_shapes(a, b):
    """NumPy broadcasting of two static shapes holding None for unknown dims (TF's rule: an
    unknown dim against 1 stays unknown, against a known size > 1 takes it)."""
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(_broadcast_dim(x, y) for x, y in zip(a, b))


def matmul_shape(a, b, transpose_a, transpose_b):
    """BatchMatMulV2: [..., m, k] @ [..., k, n] -> [broadcast batch..., m, n]; the inner dims must agree."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"In[0] and In[1] must be at least rank 2, got shapes {list(sa)} and {list(sb)}")
    m, ka = (sa[-1], sa[-2]) if transpose_a else (sa[-2], sa[-1])
    kb, n = (sb[-1], sb[-2]) if transpose_b else (sb[-2], sb[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(sa)}, In[1]: {list(sb)}")
    try:
        batch = broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError as e:
        raise ValueError(f"In[0] and In[1] must have broadcastable batch dimensions: {list(sa)} vs {list(sb)} "
                         f"({e})") from None
    return [Meta(batch + (m, n), a.dtype)]


def _broadcast_checked(*shapes):
    """The broadcast of static shapes (TF's BroadcastBinaryOpOutputShapeFn): None (an unknown
    rank) when one of them has an unknown rank."""
    if any(s is None for s in shapes):
        return None
    out = tuple(shapes[0])
    for s in shapes[1:]:
        try:
            out = broadcast_shapes(out, s)
        except ValueError:
            raise ValueError("Incompatible shapes for broadcasting: "
                             + " and ".join(str(list(t)) for t in shapes)) from None
    return out


def broadcast_shape(x, y, **_):
    """A broadcasting binary op whose output has x's dtype (AddV2, Mul, Maximum, ...)."""
    return [Meta(_broadcast_checked(x.shape, y.shape), x.dtype)]


def compare_shape(x, y, **_):
    """A broadcasting comparison or logical op: a bool output."""
    return [Meta(_broadcast_checked(x.shape, y.shape), np.dtype(np.bool_))]


def complex_shape(re, im, **_):
    """Complex: the parts broadcast; float32 parts give complex64, float64 ones complex128."""
    dtype = np.dtype(np.complex64 if re.dtype == np.float32 else np.complex128)
    return [Meta(_broadcast_checked(re.shape, im.shape), dtype)]


def select_shape(condition, x, y, **_):
    """SelectV2: condition, x and y broadcast together; x's dtype."""
    return [Meta(_broadcast_checked(condition.shape, x.shape, y.shape), x.dtype)]


# -- Note [unknown rank] (graph/graph.py): the rules of ops taking inputs of unknown rank --

def rank_unknown(x, *_, **__):
    """An op whose output has unknown rank when an input has (MatMul, Softmax): x's dtype."""
    return [Meta(None, x.dtype)]


def compatible(a, b):
    """Whether two static shapes (None for unknown dims, or for an unknown rank) can describe the same tensor."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def unchanged_shape(x, *_, **__):
    """TF's UnchangedShape (elementwise ops of one input, scans, Identity): x's shape, of
    any rank, unknown included, and dtype."""
    return [Meta(None if x.shape is None else tuple(x.shape), x.dtype)]


def at_least_rank1_same_shape(x, *_, **__):
    """Softmax and LogSoftmax: x's shape; a scalar is an error."""
    if not x.shape:
        raise ValueError(f"logits must have >= 1 dimension, got {list(x.shape)}")
    return unchanged_shape(x)


def reduction_unknown_rank(x, axis, keepdims, **_):
    """A reduction of an input of unknown rank (`axis` None: all axes, else axes not yet
    normalized): a scalar for all axes without keepdims, else unknown rank (TensorFlow's rule)."""
    return [Meta(() if axis is None and not keepdims else None, x.dtype)]


def reduction_shape(x, axis, keepdims, **_):
    """A reduction over the (normalized) `axis` attr: those dims dropped, or kept as 1.

    The attr of a reduction built for an input of unknown rank (None, or negative
    axes) is normalized here: such a body may be inferred again for known
    input shapes (Note [call shapes] in graph/concrete_function.py)."""
    if axis is None or any(a < 0 for a in axis):
        rank = len(x.shape)
        axis = range(rank) if axis is None else {a % rank for a in axis}
    if keepdims:
        dims = tuple(1 if i in axis else d for i, d in enumerate(x.shape))
    else:
        dims = tuple(d for i, d in enumerate(x.shape) if i not in axis)
    return [Meta(dims, x.dtype)]


def arg_reduction_shape(x, axis, output_type):
    """ArgMax/ArgMin: `axis` dropped, the indices' dtype."""
    return [Meta(tuple(d for i, d in enumerate(x.shape) if i != axis), np.dtype(output_type))]


def top_k_shape(x, k, sorted, index_type):  # noqa: A002
    """TopKV2: [..., k] values and indices; k must not exceed a known last dim."""
    if not x.shape:
        raise ValueError(f"input must be >= 1-D, got shape {list(x.shape)}")
    if type(k) is Meta:                   # k is an input known only when the graph runs
        return [Meta(tuple(x.shape[:-1]) + (None,), x.dtype), Meta(tuple(x.shape[:-1]) + (None,), np.dtype(index_type))]
    k = int(k)
    if k < 0:
        raise ValueError(f"Need k >= 0, got {k}")
    last = x.shape[-1]
    if last is not None and k > last:
        raise ValueError(f"input must have last dimension >= k = {k} but is {last}")
    dims = tuple(x.shape[:-1]) + (k,)
    return [Meta(dims, x.dtype), Meta(dims, np.dtype(index_type))]


def in_top_k_shape(predictions, targets, k):
    """InTopKV2: one bool per row of the [batch, classes] predictions."""
    if len(predictions.shape) != 2 or len(targets.shape) != 1:
        raise ValueError(f"predictions must be 2-D and targets 1-D, got shapes {list(predictions.shape)} and "
                         f"{list(targets.shape)}")
    batch = _merge(predictions.shape[0], targets.shape[0], "First dimension of predictions and targets")
    return [Meta((batch,), np.dtype(np.bool_))]


def softmax_xent_shape(logits, labels):
    """SoftmaxCrossEntropyWithLogits: loss [batch], backprop [batch, classes].  Fully known shapes
    broadcast; otherwise, like TensorFlow, an unknown dim takes the other input's size (even 1)."""
    if len(logits.shape) != 2 or len(labels.shape) != 2:
        raise ValueError(f"logits and labels must be 2-D, got logits {list(logits.shape)} and labels "
                         f"{list(labels.shape)}")
    dims = _broadcast_checked(logits.shape, labels.shape)
    if None in logits.shape or None in labels.shape:
        dims = tuple(b if a is None else a if b is None else d for a, b, d in zip(logits.shape, labels.shape, dims))
    return [Meta(dims[:1], logits.dtype), Meta(dims, logits.dtype)]


def sparse_softmax_xent_shape(logits, labels):
    """SparseSoftmaxCrossEntropyWithLogits: [batch, classes] logits, [batch] labels."""
    if len(logits.shape) != 2 or len(labels.shape) != 1:
        raise ValueError(f"logits must be 2-D and labels 1-D, got logits {list(logits.shape)} and labels "
                         f"{list(labels.shape)}")
    batch = _merge(logits.shape[0], labels.shape[0], "logits and labels must have the same first dimension")
    return [Meta((batch,), logits.dtype), Meta((batch, logits.shape[1]), logits.dtype)]


def bias_add_shape(value, bias, data_format):
    """BiasAdd: value's shape, its channel dim merged with the bias's size."""
    dims = list(value.shape)
    axis = 1 if data_format == "NCHW" else len(dims) - 1
    dims[axis] = _merge(dims[axis], bias.shape[0], "Must provide as many biases as the channel dimension")
    return [Meta(tuple(dims), value.dtype)]


# -- the math family's presets: each declares its ops' static shapes and dtypes, unknown rank included
# (Note [unknown rank] in framework/shapes/symbolic_tensors.py); no kernel runs while a graph is built. --

def _elementwise_meta(shape, dtype):
    """A Meta of an elementwise result: `shape` (None for an unknown rank) and `dtype`."""
    return Meta(None if shape is None else tuple(shape), np.dtype(dtype))


def unary_bool_shape(x, **_):
    """A predicate of one input (IsNan, LogicalNot): x's shape, bool."""
    return [_elementwise_meta(x.shape, np.bool_)]


_REAL_PART = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def unary_real_shape(x, **_):
    """Real, Imag, Angle, ComplexAbs: x's shape; complex64 gives float32, complex128 float64."""
    return [_elementwise_meta(x.shape, _REAL_PART.get(np.dtype(x.dtype), x.dtype))]


def cast_shape(x, DstT):
    """Cast: x's shape, the `DstT` attr's dtype."""
    return [_elementwise_meta(x.shape, DstT)]


def fill_like_shape(like, value, dtype):
    """FillLike (zeros_like/ones_like of a partly known shape): like's shape, the `dtype` attr."""
    return [_elementwise_meta(like.shape, dtype)]


def merge_both_shape(x, y, **_):
    """TanhGrad, SigmoidGrad (TF's MergeBothInputsShapeFn): the two shapes merged, x's dtype."""
    shapes = [s.shape for s in (x, y) if s.shape is not None]
    return [Meta(merge_shapes(shapes, "Both inputs") if shapes else None, x.dtype)]


# -- the array family (array_ops, join_ops, slicing_ops, scatter_ops, constructor_ops) --

def unchanged_shapes(*xs, **_):
    """IdentityN: each output has its input's shape and dtype."""
    return [Meta(x.shape, x.dtype) for x in xs]
