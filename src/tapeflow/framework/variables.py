"""Variable: mutable state whose reads a tape can differentiate.

A Variable carries `_value` and `_id` like a tensor, so it is itself the
"resource handle" input of the ops that read it (`ReadVariableOp`,
`ResourceGather`): a tape watches the variable's id and gradients with
respect to the variable are gradients with respect to that input.
Assignments rebind `_value` to a new array, never writing into the old one,
so tensors read earlier keep their values.
"""

import sys

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import eager_mode, state
from tapeflow.framework.op_def import execute, no_gradient, op
from tapeflow.framework.tensor import Tensor, _next_id, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape


@op("ReadVariableOp", same_dtype=False)
def _read_variable(value):
    return value


@_read_variable.def_grad
def _read_variable_grad(op, dy):
    return dy   # a read is the identity on the variable's value


@op("AssignVariableOp", same_dtype=False, stateful=True)
def _write_variable(value, var, mode):
    if mode == "assign":
        var._value = np.array(value, dtype=var._value.dtype)
    else:       # in place when unshared, see Note [in-place updates]
        var._update(np.add if mode == "assign_add" else np.subtract, value)
    return var._value


def _write_variable_shape(value, var, mode):
    # Graphs infer this op's output from the variable: running the kernel on
    # sample values would overwrite the variable while tracing.
    from tapeflow.graph.graph import Meta
    return [Meta(tuple(var._value.shape), var._value.dtype)]


_write_variable.shape_fn = _write_variable_shape
no_gradient("AssignVariableOp")


class Variable:
    """A mutable tensor-like value; trainable variables are watched automatically by tapes.

    >>> import tapeflow as tf
    >>> v = tf.Variable(2.0)
    >>> with tf.GradientTape() as tape:
    ...     y = v * v
    >>> float(tape.gradient(y, v))
    4.0
    """

    __slots__ = ("_value", "_id", "_trainable", "_name", "_shape", "_constraint", "__weakref__")
    __array_priority__ = 100

    def __init__(self, initial_value=None, trainable=None, validate_shape=True, caching_device=None,
                 name=None, variable_def=None, dtype=None, import_scope=None, constraint=None,
                 synchronization=None, aggregation=None, shape=None, experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("The `initial_value` arg (None) must be specified.")
        with eager_mode():     # a variable's value exists at once, also when made in a graph
            if callable(initial_value):
                initial_value = initial_value()
            # Python and NumPy values are converted to `dtype`; a tensor of another
            # dtype is a ValueError, as in TensorFlow (cast it first).
            value = convert_to_tensor(initial_value, dtype=dtype)
        if not isinstance(value._value, (np.ndarray, np.generic)):
            raise ValueError("A Variable's initial value must be computable eagerly; got a graph tensor "
                             f"{value!r}. Create the variable outside the graph function.")
        self._value = np.array(value._value)
        self._id = _next_id()
        self._trainable = True if trainable is None else bool(trainable)
        self._name = (name or "Variable") + ":0"
        self._shape = TensorShape(self._value.shape)
        if shape is not None:   # a less specific shape lets assignments change the value's shape
            shape = TensorShape(shape)
            if not shape.is_compatible_with(self._shape):
                raise ValueError(f"In this `tf.Variable` creation, the initial value's shape ({self._shape}) is "
                                 f"not compatible with the explicitly supplied `shape` argument ({shape}).")
            self._shape = shape
        self._constraint = constraint

    # -- reads --------------------------------------------------------------
    def _note_access(self):
        """Lets every active tape that auto-watches see this variable (TF's variable_accessed)."""
        if self._trainable:
            for tape in state.tapes:
                if tape.watch_accessed:
                    tape.watch_variable(self)
            for watcher in state.variable_watchers:
                watcher.setdefault(self._id, self)

    def value(self):
        if not state.tapes and not state.graphs:
            if state.variable_watchers:
                self._note_access()
            return Tensor(self._value)
        self._note_access()
        return execute(_read_variable, (self,), {})

    def read_value(self):
        return self.value()

    def _as_tensor(self, dtype=None):
        if dtype is not None and dtypes.as_dtype(dtype)._np != self._value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for "
                             f"variable {self._name} with dtype {self.dtype.name}.")
        return self.value()

    def numpy(self):
        return self.value().numpy()

    def __array__(self, dtype=None, copy=None):
        value = np.array(self._value)
        return value if dtype is None else value.astype(dtype, copy=False)

    # -- metadata -------------------------------------------------------------
    @property
    def dtype(self):
        return dtypes._BY_NP[self._value.dtype]

    @property
    def shape(self):
        return self._shape

    def get_shape(self):
        return self._shape

    @property
    def name(self):
        return self._name

    @property
    def trainable(self):
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    @property
    def device(self):
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    @property
    def ndim(self):
        return self._value.ndim

    def ref(self):
        from tapeflow.framework.tensor import _Reference
        return _Reference(self)

    experimental_ref = ref

    # -- writes ---------------------------------------------------------------
    def assign(self, value, use_locking=None, name=None, read_value=True):
        if state.graphs:
            return self._graph_write(value, "assign")
        new = self._checked(value, "assign")
        self._value = np.array(new, copy=True)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        if state.graphs:
            return self._graph_write(delta, "assign_add")
        self._update(np.add, self._checked(delta, "assign_add"))
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        if state.graphs:
            return self._graph_write(delta, "assign_sub")
        self._update(np.subtract, self._checked(delta, "assign_sub"))
        return self if read_value else None

    def _update(self, ufunc, delta):
        """self = ufunc(self, delta), in place when no tensor shares the array.

        Note [in-place updates]: reads share the variable's array, so a tensor
        read earlier must keep its value; when the variable's own reference is
        the only one (refcount 2: the attribute and the call's argument), nobody
        can observe the write and the array is updated in place.
        """
        if type(self._value) is np.ndarray and sys.getrefcount(self._value) <= 2 and np.shape(delta) == self._value.shape:
            ufunc(self._value, delta, out=self._value)
        else:
            self._value = np.asarray(ufunc(self._value, delta))

    def _graph_write(self, value, mode):
        """In a graph, a write is a stateful node run when the graph runs."""
        t = convert_to_tensor(value, dtype=_cast_ok(value, self.dtype))
        if t._value.dtype != self._value.dtype:
            raise TypeError(f"Variable.{mode}: cannot use a {t.dtype.name} value with variable "
                            f"'{self._name}' of dtype {self.dtype.name}.")
        if mode == "assign" and not TensorShape(t._value.shape).is_compatible_with(self._shape):
            raise ValueError(f"Cannot assign to variable '{self._name}': the variable shape "
                             f"{self._shape} and the assigned value shape "
                             f"{TensorShape(t._value.shape)} are incompatible.")
        return execute(_write_variable, (t,), {"var": self, "mode": mode})

    def _checked(self, value, what):
        """The new value's array: Python/NumPy values take the variable's dtype, a tensor
        of another dtype is a ValueError, and the shapes must be equal (ValueError
        for `assign`, InvalidArgumentError for the updates, like TensorFlow)."""
        t = convert_to_tensor(value, dtype=self.dtype)
        if what == "assign":
            if not self._shape.is_compatible_with(t._value.shape):
                raise ValueError(f"Cannot assign to variable '{self._name}': the variable shape {self._shape} "
                                 f"and the assigned value shape {_shape_str(t._value.shape)} are incompatible.")
        elif t._value.shape != self._value.shape:
            message = (f"Cannot {what} to variable '{self._name}': the variable shape "
                       f"{_shape_str(self._value.shape)} and the value shape "
                       f"{_shape_str(t._value.shape)} must be equal.")
            from tapeflow.framework.errors import InvalidArgumentError
            raise InvalidArgumentError(None, "AssignAddVariableOp" if what == "assign_add" else "AssignSubVariableOp",
                                       message)
        return t._value

    def _scatter(self, sparse_delta, combine, what):
        from tapeflow.framework.indexed_slices import IndexedSlices
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: {sparse_delta!r}")
        values = np.asarray(convert_to_tensor(sparse_delta.values, dtype=self.dtype)._value)
        indices = np.asarray(convert_to_tensor(sparse_delta.indices)._value)
        n = self._value.shape[0] if self._value.ndim else 0
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            from tapeflow.framework.errors import InvalidArgumentError
            raise InvalidArgumentError(None, what, f"{what}: indices {indices.tolist()} out of range [0, {n}).")
        new = np.array(self._value, copy=True)
        combine(new, indices, values)
        self._value = new
        return self

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, _set_at, "ResourceScatterUpdate")

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, np.add.at, "ResourceScatterAdd")

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, np.subtract.at, "ResourceScatterSub")

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, np.multiply.at, "ResourceScatterMul")

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, _divide_at, "ResourceScatterDiv")

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, np.maximum.at, "ResourceScatterMax")

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter(sparse_delta, np.minimum.at, "ResourceScatterMin")

    def scatter_nd_update(self, indices, updates, name=None):
        return self._scatter_nd(indices, updates, _set_at)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter_nd(indices, updates, np.add.at)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter_nd(indices, updates, np.subtract.at)

    def _scatter_nd(self, indices, updates, combine):
        idx = np.asarray(convert_to_tensor(indices)._value)
        upd = np.asarray(convert_to_tensor(updates, dtype=self.dtype)._value)
        new = np.array(self._value, copy=True)
        combine(new, tuple(np.moveaxis(idx, -1, 0)), upd)
        self._value = new
        return self

    def __repr__(self):
        from tapeflow.framework.tensor import _numpy_repr
        return (f"<tf.Variable '{self._name}' shape={self._shape} "
                f"dtype={self.dtype.name}, numpy={_numpy_repr(self._value)}>")

    __hash__ = None   # TF2: use variable.ref() as a key

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __index__(self):
        return self.value().__index__()

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return Variable(np.array(self._value), trainable=self._trainable, name=self._name[:-2])


def _cast_ok(value, dtype):
    """Python values convert to the requested dtype; tensors are checked instead."""
    if dtype is None or isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return None
    return dtype


def _shape_str(shape):
    return str(TensorShape(shape))


def _set_at(array, indices, values):
    array[indices] = values


def _divide_at(array, indices, values):
    np.divide.at(array, indices, values)
