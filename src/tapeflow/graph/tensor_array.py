"""`tf.TensorArray`: a list of same-dtype tensors, written and read by index.

Eagerly it is a Python list of tensors (reads return the written tensors, so
tapes connect writes to reads with no op of their own).  In a graph its state
is a *flow* tensor of dtype variant holding an immutable `TList`; every
write makes a new flow, so a TensorArray can be a `while_loop` variable (it is
a pytree node whose one leaf is the flow).  The list ops have gradients that
are list ops again; a missing element of a gradient list means zeros.
"""

import numpy as np
import optree

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError, OutOfRangeError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.symbolic_tensors import Meta
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import gradient_rules, scatter_ops
from tapeflow.ops.core import primitives


def _list_shape(*metas, **attrs):
    """A TensorList op's output: one variant scalar (the list itself)."""
    return [Meta((), _VARIANT)]


def _item_shape(*metas, dtype, element_shape, strict=True):
    return [Meta(tuple(element_shape), np.dtype(dtype))]


def _stack_shape(*metas, dtype, element_shape, length=None):
    return [Meta((length,) + tuple(element_shape), np.dtype(dtype))]


def _gather_shape(flow, idx, dtype, element_shape, strict=True):
    count = int(np.prod(idx.shape)) if None not in idx.shape else None
    return [Meta((count,) + tuple(element_shape), np.dtype(dtype))]


def _length_shape(*metas):
    return [Meta((), np.dtype(np.int32))]

_VARIANT = np.dtype(object)


class TList(tuple):
    """The value of a flow tensor: elements (arrays, or None for "not written / zero")."""

    __slots__ = ()


def _as_list(value):
    """A flow value as a TList; a zero fill (the tape's "no gradient") is the empty list."""
    value = value[()] if isinstance(value, np.ndarray) and value.dtype == _VARIANT else value
    return value if isinstance(value, TList) else TList()


def _wrap(tlist):
    out = np.empty((), _VARIANT)
    out[()] = TList(tlist)
    return out


def _dense(tlist, dtype, element_shape):
    return [np.zeros(element_shape, dtype) if e is None else e for e in tlist]


def _check_index(i, n, what):
    if not 0 <= i < n:
        raise IndexError(f"Tried to {what} index {i} but the TensorArray has size {n}.")


def _item(items, i, strict, dtype, shape):
    """Element i; gradient lists (strict=False) read missing elements as zeros."""
    if strict:
        _check_index(i, len(items), "read from")
    item = items[i] if i < len(items) else None
    return np.zeros(shape, dtype) if item is None else item


@op("TensorListSetItem", same_dtype=False, shape=_list_shape)
def _set_item(flow, index, value, dynamic):
    items = list(_as_list(flow))
    i = int(index)
    if i >= len(items) and dynamic:
        items.extend([None] * (i + 1 - len(items)))
    _check_index(i, len(items), "write to")
    items[i] = np.asarray(value)
    return _wrap(items)


@op("TensorListGetItem", same_dtype=False, shape=_item_shape)
def _get_item(flow, index, dtype, element_shape, strict=True):
    return _item(_as_list(flow), int(index), strict, dtype, element_shape)


@op("TensorListStack", same_dtype=False, shape=_stack_shape)
def _stack(flow, dtype, element_shape, length=None):
    items = list(_as_list(flow))
    if length is not None:          # a gradient list: pad with zeros to the forward length
        items += [None] * (length - len(items))
    if not items:
        return np.zeros((0,) + tuple(element_shape), dtype)
    shape = next((e.shape for e in items if e is not None), element_shape)
    return np.stack(_dense(items, dtype, shape))


@op("TensorListFromTensor", same_dtype=False, shape=_list_shape)
def _from_tensor(value):
    return _wrap(list(np.asarray(value)))


@op("TensorListGather", same_dtype=False, shape=_gather_shape)
def _gather(flow, indices, dtype, element_shape, strict=True):
    items = _as_list(flow)
    rows = [_item(items, int(i), strict, dtype, element_shape) for i in np.asarray(indices).reshape(-1)]
    return np.stack(rows) if rows else np.zeros((0,) + tuple(element_shape), dtype)


@op("TensorListScatter", same_dtype=False, shape=_list_shape)
def _scatter(flow, indices, value, dynamic):
    items = list(_as_list(flow))
    idx = np.asarray(indices).reshape(-1)
    value = np.asarray(value)
    for row, i in enumerate(idx):
        i = int(i)
        if i >= len(items) and dynamic:
            items.extend([None] * (i + 1 - len(items)))
        _check_index(i, len(items), "write to")
        items[i] = value[row]
    return _wrap(items)


@op("TensorListLength", same_dtype=False, shape=_length_shape, differentiable=False)
def _length(flow):
    return np.int32(len(_as_list(flow)))


@op("TensorListAddN", same_dtype=False, shape=_list_shape)
def _add_lists(a, b):
    """The sum of two gradient lists (None elements are zeros)."""
    la, lb = _as_list(a), _as_list(b)
    n = max(len(la), len(lb))
    la, lb = list(la) + [None] * (n - len(la)), list(lb) + [None] * (n - len(lb))
    return _wrap([y if x is None else x if y is None else x + y for x, y in zip(la, lb)])


@op("TensorListReserve", same_dtype=False, shape=_list_shape, differentiable=False)
def _reserve(size):
    return _wrap([None] * int(size))




@_set_item.def_grad
def _set_item_grad(op, dflow):
    flow, index, value = op.inputs                       # the written element leaves the list's gradient
    dvalue = execute(_get_item, (dflow, index), {"dtype": value._value.dtype,
                                                 "element_shape": tuple(value._value.shape), "strict": False})
    return execute(_clear_item, (dflow, index), {}), None, dvalue


@_get_item.def_grad
def _get_item_grad(op, dy):
    flow, index = op.inputs                               # a list holding dy at the index read
    return execute(_set_item, (execute(_reserve, (Tensor(np.int32(0)),), {}), index, dy), {"dynamic": True}), None


@_stack.def_grad
def _stack_grad(op, dy):
    return execute(_from_tensor, (dy,), {})               # one row per element


@_from_tensor.def_grad
def _from_tensor_grad(op, dflow):
    value = op.inputs[0]                                  # stack the element gradients back
    return execute(_stack, (dflow,), {"dtype": value._value.dtype, "element_shape": tuple(value._value.shape[1:]),
                                      "length": value._value.shape[0]})


@_gather.def_grad
def _gather_grad(op, dy):
    flow, indices = op.inputs                             # rows of dy land on the gathered elements
    return execute(_scatter, (execute(_reserve, (Tensor(np.int32(0)),), {}), indices, dy), {"dynamic": True}), None


@_scatter.def_grad
def _scatter_grad(op, dflow):
    flow, indices, value = op.inputs                      # overwritten elements get no gradient
    dvalue = execute(_gather, (dflow, indices), {"dtype": value._value.dtype,
                                                 "element_shape": tuple(value._value.shape[1:]), "strict": False})
    cleared = dflow
    for i in range(value._value.shape[0]):
        cleared = execute(_clear_item, (cleared, _index_at(indices, i)), {})
    return cleared, None, dvalue


def _index_at(indices, i):
    return scatter_ops.gather(primitives.reshape(indices, (-1,)), i)


@gradient_rules.register_variant_sum
def add_all(lists):
    """The sum of gradient lists (flow tensors)."""
    total = lists[0]
    for g in lists[1:]:
        total = execute(_add_lists, (total, g), {})
    return total


@_add_lists.def_grad
def _add_lists_grad(op, dflow):
    return dflow, dflow                                   # d(a + b) = da + db


@op("TensorListClearItem", same_dtype=False, shape=_list_shape)
def _clear_item(flow, index):
    items = list(_as_list(flow))
    i = int(index)
    if 0 <= i < len(items):
        items[i] = None
    return _wrap(items)


@_clear_item.def_grad
def _clear_item_grad(op, dflow):
    return execute(_clear_item, (dflow, op.inputs[1]), {}), None


# -- the public class -----------------------------------------------------------------------

class _ShapeCell:
    """The element shape of a TensorArray and of the ones a loop derives from it.

    It is part of the TensorArray's pytree structure but compares equal to any
    other cell, so a write that first fixes the element shape inside a
    while_loop body does not change the loop's structure; the cell is shared,
    so the loop's results learn the shape too.
    """

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape

    def __eq__(self, other):
        return isinstance(other, _ShapeCell)

    def __hash__(self):
        return 0


@tf_export("TensorArray")
@tf_export("TensorArray")
class TensorArray:
    """A list of tensors of one dtype (`tf.TensorArray`).

    Writes return the TensorArray to use afterwards (`ta = ta.write(i, x)`).

    >>> import tapeflow as tf
    >>> ta = tf.TensorArray(tf.float32, size=2)
    >>> ta = ta.write(0, 1.0).write(1, 2.0)
    >>> ta.stack().numpy()
    array([1., 2.], dtype=float32)
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        self._dtype = dtypes.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        if isinstance(element_shape, _ShapeCell):
            self._cell = element_shape
        else:
            self._cell = _ShapeCell(None if element_shape is None else TensorShape(element_shape))
        self._infer_shape = infer_shape
        if flow is not None:
            self._flow, self._items = flow, None
        elif state.graphs:
            size = convert_to_tensor(0 if size is None else size, dtype=dtypes.int32)
            self._flow, self._items = execute(_reserve, (size,), {}), None
        else:
            n = 0 if size is None else int(size)
            self._flow, self._items = None, [None] * n

    dtype = property(lambda self: self._dtype)
    dynamic_size = property(lambda self: self._dynamic)
    flow = property(lambda self: self._flow)

    @property
    def _element_shape(self):
        return self._cell.shape

    @property
    def element_shape(self):
        return self._cell.shape if self._cell.shape is not None else TensorShape(None)

    def _like(self, flow, element_shape=None):
        if element_shape is not None:
            current = self._cell.shape
            self._cell.shape = element_shape if current is None else current.merge_with(element_shape)
        return TensorArray(self._dtype, dynamic_size=self._dynamic, flow=flow, infer_shape=self._infer_shape,
                           element_shape=self._cell)

    def _value(self, value):
        value = convert_to_tensor(value, dtype=self._dtype) if not isinstance(value, Tensor) else value
        if value.dtype != self._dtype:
            raise TypeError(f"TensorArray dtype is {self._dtype.name} but Op is trying to write dtype {value.dtype.name}.")
        shape = TensorShape(value._value.shape)
        if self._infer_shape and self._element_shape is not None and not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self._element_shape}")
        return value, shape

    def _shape_for_zeros(self):
        if self._element_shape is None or not self._element_shape.is_fully_defined():
            raise ValueError("Cannot build zeros for unwritten TensorArray elements without a known element_shape.")
        return tuple(self._element_shape.as_list())

    # -- writes ---------------------------------------------------------------------------
    def write(self, index, value, name=None):
        value, shape = self._value(value)
        if self._flow is None:
            i = int(index)
            if i >= len(self._items):
                if not self._dynamic:
                    raise OutOfRangeError(None, None, f"Tried to write to index {i} but array is not resizeable "
                                          f"and size is: {len(self._items)}")
                self._items.extend([None] * (i + 1 - len(self._items)))
            items = list(self._items)
            items[i] = value
            ta = TensorArray(self._dtype, dynamic_size=self._dynamic, element_shape=shape)
            ta._items = items
            return ta
        flow = execute(_set_item, (self._flow, convert_to_tensor(index, dtype=dtypes.int32), value),
                       {"dynamic": self._dynamic})
        return self._like(flow, shape)

    def unstack(self, value, name=None):
        value = convert_to_tensor(value, dtype=self._dtype)
        element = TensorShape(value._value.shape[1:])
        if self._flow is None:
            ta = TensorArray(self._dtype, dynamic_size=self._dynamic, element_shape=element)
            ta._items = list(primitives.unstack(value)) if value._value.shape[0] else []
            return ta
        return self._like(execute(_from_tensor, (value,), {}), element)

    def scatter(self, indices, value, name=None):
        value = convert_to_tensor(value, dtype=self._dtype)
        element = TensorShape(value._value.shape[1:])
        if self._flow is None:
            ta = self
            rows = primitives.unstack(value) if value._value.shape[0] else []
            for i, row in zip(np.asarray(convert_to_tensor(indices)._value).reshape(-1), rows):
                ta = ta.write(int(i), row)
            return ta
        flow = execute(_scatter, (self._flow, convert_to_tensor(indices, dtype=dtypes.int32), value),
                       {"dynamic": self._dynamic})
        return self._like(flow, element)

    # -- reads ----------------------------------------------------------------------------
    def read(self, index, name=None):
        if self._flow is None:
            i = int(index)
            if not 0 <= i < len(self._items):
                raise InvalidArgumentError(None, "TensorArrayRead", f"Tried to read from index {i} but array size "
                                           f"is: {len(self._items)}")
            item = self._items[i]
            return Tensor(np.zeros(self._shape_for_zeros(), self._dtype._np)) if item is None else item
        return execute(_get_item, (self._flow, convert_to_tensor(index, dtype=dtypes.int32)),
                       {"dtype": self._dtype._np, "element_shape": self._shape_for_zeros()})

    def stack(self, name=None):
        if self._flow is None:
            if not self._items:
                return Tensor(np.zeros((0,) + self._shape_for_zeros(), self._dtype._np))
            return primitives.stack([self.read(i) for i in range(len(self._items))])
        return execute(_stack, (self._flow,), {"dtype": self._dtype._np, "element_shape": self._shape_for_zeros()})

    def gather(self, indices, name=None):
        if self._flow is None:
            idx = np.asarray(convert_to_tensor(indices)._value).reshape(-1)
            if not len(idx):
                return Tensor(np.zeros((0,) + self._shape_for_zeros(), self._dtype._np))
            return primitives.stack([self.read(int(i)) for i in idx])
        return execute(_gather, (self._flow, convert_to_tensor(indices, dtype=dtypes.int32)),
                       {"dtype": self._dtype._np, "element_shape": self._shape_for_zeros()})

    def concat(self, name=None):
        stacked = self.stack()
        shape = stacked._value.shape
        return primitives.reshape(stacked, (-1,) + tuple(shape[2:]) if None not in shape[2:] else (-1,))

    def size(self, name=None):
        if self._flow is None:
            return Tensor(np.int32(len(self._items)))
        return execute(_length, (self._flow,), {})

    def close(self, name=None):
        return None

    def mark_used(self):
        return None

    def __repr__(self):
        return f"<TensorArray dtype={self._dtype.name} element_shape={self.element_shape}>"


def _flatten(ta):
    if ta._flow is None:                       # eager: no leaves, the object travels as is
        return (), ta, None
    return (ta._flow,), (ta._dtype, ta._dynamic, ta._cell, ta._infer_shape), None


def _unflatten(aux, children):
    if isinstance(aux, TensorArray):
        return aux
    dtype, dynamic, element_shape, infer = aux
    return TensorArray(dtype, dynamic_size=dynamic, flow=children[0], infer_shape=infer, element_shape=element_shape)


optree.register_pytree_node(TensorArray, _flatten, _unflatten, namespace="tapeflow")
