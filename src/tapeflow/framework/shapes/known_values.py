"""What a graph tensor's value is known to be while the graph is built.

Ops whose sizes come from a tensor (`tf.reshape(x, [n * 3])`, `tf.zeros(tf.shape(x))`,
`tf.pad(x, [[0, n], [1, 1]])`...) still have static output shapes: each entry of
the size tensor that can be worked out from constants and static shapes is
known, the others are unknown (TensorFlow's `constant_value_as_shape` and the
partial shapes of its shape inference).

The evaluation walks back from the size tensor through a few kinds of ops:

* `Const` gives its value; an eager tensor is its own value;
* `Shape` gives its input's static dimensions (unknown where None), `Size` its
  element count when the shape is fully known;
* `Pack`, `Unpack`, `ConcatV2`, `StridedSlice`, `Cast` and `Identity` combine
  known and unknown entries (so `tf.shape(x)[1:]` or `tf.stack([n, 3])` are
  partly known);
* any other pure op runs its kernel when all its inputs are fully known
  (elementwise arithmetic on known scalars: `tf.shape(x)[1] * 2`).

Only small tensors are evaluated (Note [small shape tensors]), so the walk
never goes through the data path of a model.
"""

import numpy as np

from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, _const, is_static
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_shape import TensorShape

# Note [small shape tensors]: a tensor takes part only when its static size is
# known and at most _MAX_SIZE elements, and the walk goes at most _MAX_DEPTH
# ops deep; anything else is unknown.  Shape tensors are tiny, and the limits
# keep the evaluation from ever walking (or running) the data path of a model.
_MAX_SIZE = 64
_MAX_DEPTH = 32


def constant_value(t):
    """The value of `t` when it is known while the graph is built, else None.

    Args:
      t: a tensor (eager or symbolic) or any other value (None is returned).

    Returns:
      A NumPy array, or None when some entry is known only when the graph runs.
    """
    v = _evaluate(t, {}, 0)
    if v is None or v.dtype != object:
        return v
    return None


def partial_value(t):
    """The entries of `t` known while the graph is built.

    Returns:
      An object array of `t`'s static shape holding Python ints (or other
      scalars) where the entry is known and None where it is not; None when
      `t`'s static shape itself is not fully known.
    """
    shape = _static_shape(t)
    if shape is None:
        return None
    v = _evaluate(t, {}, 0)
    if v is None:
        return np.full(shape, None, dtype=object)
    return _as_object(v)


def constant_value_as_shape(t):
    """The static shape described by the 1-D int tensor `t` (TensorFlow's helper).

    Entries known while building become dimensions, the others (and -1) are
    unknown dimensions.

    Raises:
      ValueError: `t` is not a vector of known length.
    """
    return TensorShape([None if d is None or d == -1 else int(d) for d in shape_vector(t, "shape")])


def shape_vector(t, what, op_type=None):
    """The entries of the 1-D size tensor `t` as a list of ints and Nones (-1 kept).

    Raises:
      ValueError: `t` is not 1-D, or its length is unknown (the output rank of
        the op would be unknown).
    """
    shape = _static_shape(t)
    where = f" of {op_type}" if op_type else ""
    if shape is None or len(shape) != 1:
        got = "of unknown length" if shape is None else f"of shape {list(shape)}"
        raise ValueError(f"`{what}`{where} must be a 1-D int tensor of known length (the rank of the result), "
                         f"got one {got}.")
    return [None if v is None else int(v) for v in partial_value(t).tolist()]


def _static_shape(t):
    value = getattr(t, "_value", None)
    if type(value) is Meta:
        return tuple(value.shape) if is_static(value.shape) else None
    if value is None:
        return None
    return tuple(np.shape(value))


def _as_object(v):
    """A value as an object array of Python scalars (known entries) and Nones."""
    if v.dtype == object:
        return v
    out = np.empty(v.shape, dtype=object)
    out[...] = v.tolist() if v.ndim else v.item()
    return out


def _evaluate(t, memo, depth):
    """`t`'s value: a NumPy array (fully known), an object array with Nones (partly known) or None."""
    if type(t) is Tensor:
        return np.asarray(t._value)
    if not isinstance(t, SymbolicTensor):
        return None
    size = t._value.size
    if size is None or size > _MAX_SIZE or depth > _MAX_DEPTH:
        return None
    key = t._id
    if key not in memo:
        memo[key] = None
        op_def = t.op.op_def
        rule = _const_value if op_def is _const else op_def.value_rule or run_kernel
        try:
            memo[key] = rule(t, lambda u: _evaluate(u, memo, depth + 1))
        except Exception:          # noqa: BLE001 - best effort: what cannot be worked out is unknown
            memo[key] = None
    return memo[key]


def fully_known(v):
    return v is not None and v.dtype != object


def known(v):
    """A partly known value with its known entries as a NumPy array when all are known."""
    if v is None or v.dtype != object:
        return v
    items = v.ravel().tolist()
    if any(e is None for e in items):
        return v
    return np.asarray(items).reshape(v.shape)


# -- value rules (an op declares its own as `value_rule`) ----------------------------

def _const_value(t, ev):
    return np.asarray(t.op.attrs["value"])


def shape_value(t, ev):
    """Shape: the input's static dims, unknown where None."""
    x = t.op.inputs[0]
    dims = tuple(x._value.shape)
    out_type = t.op.attrs["out_type"]
    if None not in dims:
        return np.asarray(dims, out_type)
    return _as_object(np.asarray(dims, dtype=object))


def size_value(t, ev):
    """Size: the element count of a fully known static shape."""
    dims = t.op.inputs[0]._value.shape
    if not is_static(dims):
        return None
    return np.asarray(int(np.prod(dims, dtype=np.int64)), t.op.attrs["out_type"])


def _join_rule(join):
    """The rule of an op joining its inputs along its `axis` attr with `join` (np.stack, np.concatenate)."""
    def rule(t, ev):
        axis = t.op.attrs["axis"]
        parts = []
        for x in t.op.inputs:
            v = ev(x)
            if v is None:
                shape = _static_shape(x)
                if shape is None:
                    return None
                v = np.full(shape, None, dtype=object)
            parts.append(v)
        if all(fully_known(p) for p in parts):
            return join(parts, axis=axis)
        return known(join([_as_object(p) for p in parts], axis=axis))
    return rule


pack_value = _join_rule(np.stack)
concat_value = _join_rule(np.concatenate)


def unpack_value(t, ev):
    """Unpack: one slice of the input's (partly) known value."""
    v = ev(t.op.inputs[0])
    if v is None:
        return None
    return known(np.asarray(np.take(v, t._index, axis=t.op.attrs["axis"]), dtype=v.dtype))


def cast_value(t, ev):
    """Cast: known entries converted, unknown ones kept unknown."""
    v = ev(t.op.inputs[0])
    if v is None or fully_known(v):
        return run_kernel(t, ev)
    return v                               # unknown entries stay unknown, known ints stay ints


def identity_value(t, ev):
    """Identity and StopGradient: the input's value."""
    return ev(t.op.inputs[0])


def run_kernel(t, ev):
    """A pure op on fully known inputs: its kernel runs on them now."""
    op = t.op
    op_def = op.op_def
    if op_def.stateful or not op.inputs:
        return None
    values = []
    for x in op.inputs:
        v = ev(x)
        if not fully_known(v) or v.size > _MAX_SIZE:
            return None
        values.append(v)
    with np.errstate(all="ignore"):
        out = op_def.kernel_for(values[0].dtype)(*values, **op.attrs)
    out = out if op_def.num_outputs == 1 else out[t._index]
    return np.asarray(out)
