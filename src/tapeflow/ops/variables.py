"""Variable: mutable state whose reads a tape can differentiate.

A Variable carries `_value` and `_id` like a tensor, so it is itself the
"resource handle" input of the ops that read it (`ReadVariableOp`,
`ResourceGather`): a tape watches the variable's id and gradients with
respect to the variable are gradients with respect to that input.
Assignments rebind `_value` to a new array (or update it in place when no
tensor shares it, Note [in-place updates]), so tensors read earlier keep
their values.

Writes are ops of their own (`AssignVariableOp`, `AssignAddVariableOp`,
`ResourceScatterAdd`, ...; stateful, no outputs, the written variable in
their `var` attr): eagerly their kernel runs at once, in a graph they are
nodes run when the graph runs, ordered with the other reads and writes of the
variable (Note [variable order] in graph/graph.py).  A graph write returns an
`_UnreadVariable` (read when used, so after the write) or, with
`read_value=False`, the write Operation, as in TensorFlow.

Note [graph variables]: a variable made while a TF1 `Graph` is the default
has no value until its initializer (`v.initializer`, an `AssignVariableOp` of
its initial value) runs in a Session; until then its `_value` is an
`_Uninitialized` placeholder array (shape and dtype, no data), reads raise
FailedPreconditionError and updates NotFoundError.  Each Session keeps its own
values of the graph's variables (graph/session.py).  A variable made while a
`tf.function` traces for the first time is initialized right after that trace
(graph/function.py): its initial value may depend on the function's arguments.
"""

import sys

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import default_session, eager_mode, executing_eagerly_outside_functions, state
from tapeflow.framework.device import DEFAULT_DEVICE, current_device
from tapeflow.framework.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, _const, known_rank
from tapeflow.framework.tensor import Tensor, _next_id, _numpy_repr, _Reference, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import join_ops, scatter_ops
from tapeflow.ops.core import half, primitives
from tapeflow.ops.scatter_ops import _gather, _indexed_slices_grad
from tapeflow.ops.variable_creation import _sync_aggregation_trainable, _VariableCreation


class _Uninitialized(np.ndarray):
    """The value of a graph variable before its initializer has run (Note [graph variables]):
    the right shape and dtype, no data (a zero-strided view), and the variable's name."""


def _uninitialized(shape, dtype, name):
    value = np.broadcast_to(np.zeros((), dtype), tuple(1 if d is None else d for d in shape)).view(_Uninitialized)
    value.var_name = name
    return value


def _written_value(var, op_type):
    """The array a write updates; NotFoundError when the variable is not initialized yet."""
    return found_value(var._value, op_type)


def found_value(value, op_type):
    """`value`, a variable's array that an op other than a read uses (a write, a
    gather); NotFoundError when the variable is not initialized yet, like TF's
    resource lookup (reads raise FailedPreconditionError instead)."""
    if type(value) is _Uninitialized:
        raise NotFoundError(None, op_type, f"Could not find resource: localhost/{value.var_name}. The variable "
                            f"is not initialized: run its initializer first "
                            f"(tf.compat.v1.global_variables_initializer()). [Op:{op_type}]")
    return value


# -- reads ----------------------------------------------------------------------------

def _read_variable_shape(var):
    """A read has the variable's declared shape (`shape=[None, 2]` reads as [None, 2])."""
    shape = var._shape
    dims = tuple(shape.as_list()) if shape.rank is not None else tuple(var._value.shape)
    return [Meta(dims, var._value.dtype)]


@op("ReadVariableOp", same_dtype=False, shape=_read_variable_shape, shape_reads_inputs=True,
    accepts_indexed_slices=True, half=half.any_width)     # a plan may read a half variable into float32
def _read_variable(value):
    if type(value) is _Uninitialized:
        raise FailedPreconditionError(
            None, "ReadVariableOp", f"Could not find variable {value.var_name}. This could mean that the variable "
            "has been deleted. In TF1, it can also mean the variable is uninitialized: run its initializer "
            "first (sess.run(tf.compat.v1.global_variables_initializer())). [Op:ReadVariableOp]")
    return value


@_read_variable.def_grad
def _read_variable_grad(op, dy):
    return dy   # a read is the identity on the variable's value


# -- writes ---------------------------------------------------------------------------

def _no_outputs(*inputs, **attrs):
    return []


def _write_op(type_, half=None):
    """Declares a variable write: stateful, no outputs, not differentiable."""
    def wrap(kernel):
        return op(type_, same_dtype=False, num_outputs=-1, stateful=True, shape=_no_outputs,
                  differentiable=False, batch=_batched_write, half=half, writes_variable=True)(kernel)
    return wrap


def _batched_write(xs, batched, var, **_):
    """A write of values that differ per example (inside tf.vectorized_map or a pfor Jacobian) has
    no meaning: each example would write its own (TensorFlow's pfor fails too, with ValueError)."""
    raise ValueError(f"Cannot write a value that differs per example to variable '{var.name}' inside a "
                     "vectorized function (tf.vectorized_map, a vectorized Jacobian). Return the values from "
                     "the function and update the variable outside it (e.g. with their sum or mean).")


@_write_op("AssignVariableOp")
def _assign(value, var):
    var._value = np.array(value, dtype=var._value.dtype)
    return ()


def _check_update(var, value):
    if var._value.shape != np.shape(value):
        raise ValueError(f"Cannot update variable with shape {_shape_str(var._value.shape)} using a Tensor with "
                         f"shape {_shape_str(np.shape(value))}, shapes must be equal.")


@_write_op("AssignAddVariableOp", half=half.any_width)     # `_update` takes wide values too
def _assign_add(value, var):
    _written_value(var, "AssignAddVariableOp")
    _check_update(var, value)
    var._update(np.add, value)
    return ()


@_write_op("AssignSubVariableOp", half=half.any_width)
def _assign_sub(value, var):
    _written_value(var, "AssignSubVariableOp")
    _check_update(var, value)
    var._update(np.subtract, value)
    return ()


def _modify(var, fn, op_type):
    """fn(array) on the variable's array: in place when no tensor shares it (Note [in-place
    updates]), else on a copy that becomes the variable's value."""
    _written_value(var, op_type)
    if sys.getrefcount(var._value) <= 2 and var._value.flags.writeable:
        fn(var._value)
    else:
        new = np.array(var._value, copy=True)
        fn(new)
        var._value = new


def _set_at(array, indices, values):
    array[indices] = values


def _divide_at(array, indices, values):
    (np.divide if array.dtype.kind in "fc" else np.floor_divide).at(array, indices, values)


def _scatter_kernel(type_, combine):
    """ResourceScatter*: rows `indices` of the variable combined with `updates`."""
    def kernel(indices, updates, var):
        shape = _written_value(var, type_).shape
        if not shape:
            raise ValueError("Cannot scatter into a scalar variable: params must be at least 1-D.")
        idx = np.asarray(indices)
        bad = (idx < 0) | (idx >= shape[0])
        if bad.any():
            at = int(np.argmax(bad.ravel()))
            raise ValueError(f"indices[{at}] = {int(idx.ravel()[at])} is not in [0, {shape[0]})")
        if np.ndim(updates) and np.shape(updates) != idx.shape + shape[1:]:
            raise ValueError(f"Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], "
                             f"got updates.shape {_shape_str(np.shape(updates))}, indices.shape "
                             f"{_shape_str(idx.shape)}, params.shape {_shape_str(shape)}")
        _modify(var, lambda array: combine(array, idx, updates), type_)
        return ()
    kernel.__name__ = kernel.__qualname__ = "_" + type_
    return _write_op(type_)(kernel)


def _scatter_nd_kernel(type_, combine):
    """ResourceScatterNd*: the elements or slices at index rows `indices[..., :k]`."""
    def kernel(indices, updates, var):
        shape = _written_value(var, type_).shape
        idx = np.asarray(indices)
        if idx.ndim == 0 or idx.shape[-1] > len(shape):
            raise ValueError(f"Index innermost dimension length must be <= the variable's rank {len(shape)}; "
                             f"got indices of shape {_shape_str(idx.shape)}")
        k = idx.shape[-1]
        expected = idx.shape[:-1] + shape[k:]
        if np.shape(updates) != expected:
            raise ValueError(f"The updates of shape {_shape_str(np.shape(updates))} must have shape "
                             f"indices.shape[:-1] + params.shape[{k}:] = {_shape_str(expected)}")
        bad = ((idx < 0) | (idx >= np.asarray(shape[:k], np.int64))).any(-1)
        if bad.any():
            at = np.unravel_index(int(np.argmax(bad)), bad.shape)
            raise ValueError(f"indices[{','.join(map(str, at))}] = [{', '.join(str(int(i)) for i in idx[at])}] "
                             f"does not index into shape {_shape_str(shape)}")
        rows = tuple(np.moveaxis(idx, -1, 0))
        _modify(var, lambda array: combine(array, rows, updates), type_)
        return ()
    kernel.__name__ = kernel.__qualname__ = "_" + type_
    return _write_op(type_)(kernel)


_SCATTERS = {
    "scatter_update": _scatter_kernel("ResourceScatterUpdate", _set_at),
    "scatter_add": _scatter_kernel("ResourceScatterAdd", np.add.at),
    "scatter_sub": _scatter_kernel("ResourceScatterSub", np.subtract.at),
    "scatter_mul": _scatter_kernel("ResourceScatterMul", np.multiply.at),
    "scatter_div": _scatter_kernel("ResourceScatterDiv", _divide_at),
    "scatter_max": _scatter_kernel("ResourceScatterMax", np.maximum.at),
    "scatter_min": _scatter_kernel("ResourceScatterMin", np.minimum.at),
    "scatter_nd_update": _scatter_nd_kernel("ResourceScatterNdUpdate", _set_at),
    "scatter_nd_add": _scatter_nd_kernel("ResourceScatterNdAdd", np.add.at),
    "scatter_nd_sub": _scatter_nd_kernel("ResourceScatterNdSub", np.subtract.at),
}


def _off_chain(graph, var, make):
    """Runs `make()` (creating ops that touch `var`) without making them the variable's last
    access: later reads and writes of `var` do not wait for them (Note [variable order])."""
    before = graph._last_access.get(var._id)
    try:
        return make()
    finally:
        if before is None:
            graph._last_access.pop(var._id, None)
        else:
            graph._last_access[var._id] = before


@tf_export("Variable")
class Variable(metaclass=_VariableCreation):
    """A mutable tensor-like value; trainable variables are watched automatically by tapes.

    >>> import tapeflow as tf
    >>> v = tf.Variable(2.0)
    >>> with tf.GradientTape() as tape:
    ...     y = v * v
    >>> float(tape.gradient(y, v))
    4.0
    """

    __slots__ = ("_value", "_id", "_trainable", "_name", "_shape", "_constraint", "_graph_info", "_synchronization",
                 "_aggregation", "_device", "_wide_pair", "__weakref__")

    _is_variable = True         # ops read it themselves (op_def) and graphs order its accesses
    _through_creators = True    # Note [variable creators]
    _is_batched = False
    __array_priority__ = 100

    def __init__(self, initial_value=None, trainable=None, validate_shape=True, caching_device=None,
                 name=None, variable_def=None, dtype=None, import_scope=None, constraint=None,
                 synchronization=None, aggregation=None, shape=None, experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("The `initial_value` arg (None) must be specified.")
        self._id = _next_id()
        self._wide_pair = None      # (array, its wide value) of a half variable: Note [wide values of eager tensors]
        self._device = current_device()     # None: the default device (Note [recorded placement])
        self._synchronization, self._aggregation, self._trainable = _sync_aggregation_trainable(
            synchronization, aggregation, trainable, name)
        self._constraint = constraint
        self._graph_info = None
        home = _home_graph() if state.graphs else None
        if home is not None:
            _create_in_graph(self, home, initial_value, dtype, name, shape)
            return
        with eager_mode():     # a variable's value exists at once
            if callable(initial_value):
                initial_value = initial_value()
            # Python and NumPy values are converted to `dtype`; a tensor of another
            # dtype is a ValueError, as in TensorFlow (cast it first).
            value = convert_to_tensor(initial_value, dtype=dtype)
        if not isinstance(value._value, (np.ndarray, np.generic)):
            raise ValueError("A Variable's initial value must be computable eagerly; got a graph tensor "
                             f"{value!r}. Create the variable outside the graph function.")
        self._value = np.array(value._value)
        self._name = state.scopes.get("name_scope", "") + (name or "Variable") + ":0"   # Note [eager name scopes]
        self._shape = _declared_shape(TensorShape(self._value.shape), shape)

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
            read = Tensor(self._value)
        else:
            self._note_access()
            read = execute(_read_variable, (self,), {})
            if state.graphs:
                return read
        pair = self._wide_pair                  # a half value's wide value (ops/core/half.py)
        if pair is not None and pair[0] is read._value:
            read._wide = pair[1]
        return read

    def read_value(self):
        return self.value()

    def _as_tensor(self, dtype=None):
        if dtype is not None and dtypes.as_dtype(dtype)._np != self._value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for "
                             f"variable {self._name} with dtype {self.dtype.name}.")
        return self.value()

    def numpy(self):
        if self._graph_info is not None:
            raise NotImplementedError("numpy() is only available when eager execution is enabled.")
        return self.value().numpy()

    def eval(self, session=None):
        """TF1's `Variable.eval`: the value in `session` or the default session.

        Raises:
          RuntimeError: an eager variable (use `.numpy()`).
          ValueError: no session is given and none is the default.
        """
        if self._graph_info is None:
            raise RuntimeError("This operation is not supported when eager execution is enabled.")
        session = session or default_session("evaluate tensor using `eval()`", "with sess.as_default()", "eval(session=sess)")
        return session.run(self)

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
    def synchronization(self):
        return self._synchronization

    @property
    def aggregation(self):
        return self._aggregation

    @property
    def device(self):
        if self._graph_info is not None:            # TF1 graphs: the device its ops were given
            return self._graph_info.initializer.device
        return getattr(self, "_device", None) or DEFAULT_DEVICE     # unset in subclasses not made here

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def initializer(self):
        """The op assigning the initial value (TF1 graphs; None while executing eagerly)."""
        return None if self._graph_info is None else self._graph_info.initializer

    @property
    def initial_value(self):
        """The initial value tensor of a variable made in a TF1 graph."""
        if self._graph_info is None:
            raise RuntimeError("This property is not supported when eager execution is enabled.")
        return self._graph_info.initial_value

    @property
    def graph(self):
        if self._graph_info is None:
            raise AttributeError("Variable.graph is undefined when eager execution is enabled.")
        return self._graph_info.graph

    def ref(self):
        return _Reference(self)

    experimental_ref = ref

    # -- writes ---------------------------------------------------------------
    def assign(self, value, use_locking=None, name=None, read_value=True):
        if state.graphs:
            t = self._converted(value)
            if not self._shape.is_compatible_with(t._value.shape):
                raise ValueError(f"Cannot assign to variable '{self._name}': the variable shape {self._shape} "
                                 f"and the assigned value shape {_shape_str(t._value.shape)} are incompatible.")
            return self._write(_assign, (t,), read_value)
        new = self._checked(value, "assign")._value
        self._value = np.array(new, copy=True)
        return self if read_value else None

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        if state.graphs:
            return self._write(_assign_add, (self._converted_update(delta, "assign_add"),), read_value)
        t = self._checked(delta, "assign_add")
        self._update(np.add, t._value, t)
        return self if read_value else None

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        if state.graphs:
            return self._write(_assign_sub, (self._converted_update(delta, "assign_sub"),), read_value)
        t = self._checked(delta, "assign_sub")
        self._update(np.subtract, t._value, t)
        return self if read_value else None

    def _update(self, ufunc, delta, delta_tensor=None):
        """self = ufunc(self, delta), in place when no tensor shares the array.

        Note [in-place updates]: reads share the variable's array, so a tensor
        read earlier must keep its value; when the variable's own reference is
        the only one (refcount 2: the attribute and the call's argument), nobody
        can observe the write and the array is updated in place.

        `delta_tensor`: the eager tensor whose array `delta` is, if any (a half one may
        keep its wide value, Note [wide values of eager tensors] in ops/core/half.py).
        """
        if self._value.dtype in half.HALF_NP:          # Note [half precision] in ops/core/half.py
            self._update_half(ufunc, delta, getattr(delta_tensor, "_wide", None))
            return
        if type(self._value) is np.ndarray and sys.getrefcount(self._value) <= 2 and np.shape(delta) == self._value.shape:
            ufunc(self._value, delta, out=self._value)
        else:
            self._value = np.asarray(ufunc(self._value, delta))

    def _update_half(self, ufunc, delta, delta_wide):
        """`_update` of a half variable: computed in float32 from the wide values it has, the
        new value kept with its own (in place as Note [in-place updates] allows, for the wide
        value too: only reads, which hold both arrays, share it)."""
        pair, self._wide_pair = getattr(self, "_wide_pair", None), None
        wide = pair[1] if pair is not None and pair[0] is self._value else None
        del pair                                # its reference to the array would count below
        in_place = (type(self._value) is np.ndarray and sys.getrefcount(self._value) <= 2
                    and (wide is None or sys.getrefcount(wide) <= 2) and np.shape(delta) == self._value.shape)
        bits, wide = half.update(ufunc, self._value, wide, delta, delta_wide, in_place)
        self._value = bits
        self._wide_pair = (bits, wide) if wide is not None else None

    def _write(self, write, inputs, read_value=True):
        """Runs a write op now (eagerly) or adds it to the default graph.

        Returns what TensorFlow's write methods return: the variable (eagerly) or
        an `_UnreadVariable` (graphs), or with `read_value=False` None (eagerly)
        or the write Operation.
        """
        if state.vmaps and any(t._is_batched for t in inputs):
            _batched_write(inputs, None, self)
        if state.graphs:
            graph = state.graphs[-1]
            graph._create_op(write, list(inputs), {"var": self}, metas=[])
            write_op = graph._ops[-1]
            return _UnreadVariable(self, write_op, graph) if read_value else write_op
        try:
            write.kernel(*[t._value for t in inputs], var=self)
        except (ValueError, IndexError) as e:
            raise InvalidArgumentError(None, write.type, f"{e} [Op:{write.type}]") from None
        return self if read_value else None

    def _converted(self, value):
        """`value` as a tensor of the variable's dtype (Python values converted; a tensor of
        another dtype is a ValueError, as TensorFlow's conversion)."""
        t = convert_to_tensor(value, dtype=_cast_ok(value, self.dtype))
        if t._value.dtype != self._value.dtype:
            raise ValueError(f"Tensor conversion requested dtype {self.dtype.name} for Tensor with dtype "
                             f"{t.dtype.name}: {t!r}")
        return t

    def _converted_update(self, delta, what):
        t = self._converted(delta)
        if not TensorShape(self._value.shape if self._shape.rank is None else self._shape).is_compatible_with(
                t._value.shape):
            raise ValueError(f"Cannot {what} to variable '{self._name}': the variable shape {self._shape} and the "
                             f"value shape {_shape_str(t._value.shape)} are incompatible (shapes must be equal).")
        return t

    def _checked(self, value, what):
        """The new value's tensor: Python/NumPy values take the variable's dtype, a tensor
        of another dtype is a ValueError, and the shapes must be equal (ValueError
        for `assign`, InvalidArgumentError for the updates, like TensorFlow)."""
        t = convert_to_tensor(value, dtype=self.dtype)
        if t._is_batched and state.vmaps:
            _batched_write((t,), None, self)
        if what == "assign":
            if not self._shape.is_compatible_with(t._value.shape):
                raise ValueError(f"Cannot assign to variable '{self._name}': the variable shape {self._shape} "
                                 f"and the assigned value shape {_shape_str(t._value.shape)} are incompatible.")
        elif t._value.shape != self._value.shape:
            message = (f"Cannot {what} to variable '{self._name}': the variable shape "
                       f"{_shape_str(self._value.shape)} and the value shape "
                       f"{_shape_str(t._value.shape)} must be equal.")
            raise InvalidArgumentError(None, "AssignAddVariableOp" if what == "assign_add" else "AssignSubVariableOp",
                                       message)
        return t

    def _scatter(self, method, sparse_delta):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: {sparse_delta!r}")
        indices = _indices(sparse_delta.indices, _SCATTERS[method].type)
        updates = self._converted(sparse_delta.values)
        if state.graphs:
            _check_scatter_shapes(self._value.shape, indices._value.shape, updates._value.shape)
        return self._write(_SCATTERS[method], (indices, updates))

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_update", sparse_delta)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_add", sparse_delta)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_sub", sparse_delta)

    def scatter_mul(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_mul", sparse_delta)

    def scatter_div(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_div", sparse_delta)

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_max", sparse_delta)

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter("scatter_min", sparse_delta)

    def _scatter_nd(self, method, indices, updates):
        indices = _indices(indices, _SCATTERS[method].type)
        updates = self._converted(updates)
        if state.graphs:
            _check_scatter_nd_shapes(self._value.shape, indices._value.shape, updates._value.shape)
        return self._write(_SCATTERS[method], (indices, updates))

    def scatter_nd_update(self, indices, updates, name=None):
        return self._scatter_nd("scatter_nd_update", indices, updates)

    def scatter_nd_add(self, indices, updates, name=None):
        return self._scatter_nd("scatter_nd_add", indices, updates)

    def scatter_nd_sub(self, indices, updates, name=None):
        return self._scatter_nd("scatter_nd_sub", indices, updates)

    def _gather_rows(self, indices):
        """The ResourceGather of rows `indices` (int32/int64, checked by `tf.gather`)."""
        self._note_access()
        return execute(_resource_gather, (self, indices), {})

    def sparse_read(self, indices, name=None):
        """The rows `indices` of the variable (`tf.gather`; its gradient is an IndexedSlices)."""
        return scatter_ops.gather(self, indices)

    def gather_nd(self, indices, name=None):
        """The slices at the index rows `indices` (`tf.gather_nd`)."""
        return scatter_ops.gather_nd(self, indices)

    def batch_scatter_update(self, sparse_delta, use_locking=True, name=None):
        """Rows `sparse_delta.indices[b..., i]` of batch `b...` get `sparse_delta.values[b..., i]`.

        The leading axes of the indices are batch axes of the variable; this is
        `scatter_nd_update` with the batch coordinates prepended to each index.
        """
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"Argument `sparse_delta` must be a `tf.IndexedSlices`. Received arg: {sparse_delta!r}")
        indices = convert_to_tensor(sparse_delta.indices)
        ishape = tuple(indices._value.shape)
        if None in ishape:
            raise ValueError(f"batch_scatter_update needs indices of a static shape, got {TensorShape(ishape)}.")
        batch = np.moveaxis(np.indices(ishape, dtype=indices._value.dtype)[:-1], 0, -1)   # [..., rank - 1]
        rows = join_ops.concat([Tensor(batch), primitives.expand_dims(indices, -1)], axis=-1)
        return self.scatter_nd_update(rows, sparse_delta.values)

    def __repr__(self):
        if self._graph_info is not None or type(self) is not Variable:
            return f"<tf.Variable '{self._name}' shape={self._shape} dtype={self.dtype.name}>"
        return (f"<tf.Variable '{self._name}' shape={self._shape} "
                f"dtype={self.dtype.name}, numpy={_numpy_repr(self._value)}>")

    def __hash__(self):         # Note [tensor equality]: unhashable where `==` is elementwise
        if Tensor._USE_EQUALITY and executing_eagerly_outside_functions():
            raise TypeError(f"Variable is unhashable. Instead, use variable.ref() as the key. (Variable: {self})")
        return id(self)

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
        return Variable(np.array(self._value), trainable=self._trainable, name=self._name[:-2],
                        synchronization=self._synchronization, aggregation=self._aggregation)


class _UnreadVariable(Variable):
    """What a write returns in a graph: the written variable, read afresh wherever it
    is used (so the use sees the write, Note [variable order]); `op` is the write.

    In a TF1 graph it also holds a read right after the write, which a Session
    fetches (running the write first), as TensorFlow's `_UnreadVariable`.
    """

    __slots__ = ("_parent", "_op", "_graph_element")

    _is_variable = False        # a stand-in for reads after a write, not the variable
    _through_creators = False

    def __init__(self, parent, write_op, graph):
        self._parent = parent
        self._op = write_op
        self._id = parent._id
        self._trainable = parent._trainable
        self._synchronization, self._aggregation = parent._synchronization, parent._aggregation
        self._shape = parent._shape
        self._constraint = parent._constraint
        self._graph_info = parent._graph_info
        if graph.building_function:
            self._name = "UnreadVariable"
            self._graph_element = None
        else:
            self._name = write_op.name
            with graph.control_dependencies([write_op]):
                self._graph_element = graph._create_op(_read_variable, [parent], {})

    _value = property(lambda self: self._parent._value)

    @_value.setter
    def _value(self, value):
        self._parent._value = value

    @property
    def op(self):
        return self._op

    @property
    def device(self):
        return self._parent.device

    def value(self):
        graph = self._op.graph
        if self._graph_element is not None and state.graphs and state.graphs[-1] is graph:
            with graph.control_dependencies([self._op]):     # TF1 graphs: the read waits for the write
                return self._parent.value()
        return self._parent.value()

    def _note_access(self):
        self._parent._note_access()

    def _write(self, write, inputs, read_value=True):
        return self._parent._write(write, inputs, read_value)

    def numpy(self):
        raise NotImplementedError("numpy() is only available when eager execution is enabled.")

    def __bool__(self):
        return bool(self.value())


def _home_graph():
    """The graph a new variable belongs to: the tf.function trace creating it, a TF1
    graph, or None (eager: functions' backward graphs and the like).

    Raises ValueError when a tf.function may not create variables now (see
    graph/function.py: only its first trace may).
    """
    graph = state.graphs[-1]
    home = None
    while graph is not None and graph.building_function:
        if getattr(graph, "_created_variables", None) is not None:      # a tf.function trace
            if graph._creation_error:
                raise ValueError(graph._creation_error)
            home = home or graph
        graph = graph.outer_graph
    return home if home is not None else graph


class _GraphInfo:
    """What a variable made in a TF1 graph keeps (Note [graph variables])."""

    __slots__ = ("graph", "initial_value", "initializer", "read", "uninitialized")


def _create_in_graph(var, graph, initial_value, dtype, name, shape):
    """Makes `var` in `graph` (a tf.function's first trace or a TF1 graph).

    Its initial value is computed in the graph.  In a function, a value known
    while tracing initializes the variable at once, and a graph-computed one
    (from the arguments, other variables) gets an initializer that the function
    runs right after this trace.  In a TF1 graph the variable stays
    uninitialized until its initializer runs in a Session.
    """
    if state.graphs[-1] is not graph:
        raise ValueError("tf.Variable cannot be created inside control flow (tf.cond branches, tf.while_loop "
                         "bodies) of a tf.function or graph; create it before the control flow.")
    in_function = graph.building_function
    with graph.control_dependencies(None), graph.name_scope(None if in_function else (name or "Variable")) as scope:
        # in a function, as TF's init_scope: the scope at creation (not made unique), then the name
        var._name = (scope + (name or "Variable") if in_function else scope.rstrip("/")) + ":0"
        with graph.name_scope(None if in_function else "Initializer"):
            value = initial_value() if callable(initial_value) else initial_value
            t = convert_to_tensor(value, dtype=dtype)
            if dtype is not None and t._value.dtype != dtypes.as_dtype(dtype)._np:
                raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} for Tensor with "
                                 f"dtype {t.dtype.name}: {t!r}")
            if not in_function and not isinstance(t, SymbolicTensor):
                t = graph._create_op(_const, [], {"value": t._value}, name="initial_value",
                                     metas=[Meta(tuple(np.shape(t._value)), t._value.dtype)])
        known_rank(t, "Variable")
        var._shape = _declared_shape(TensorShape(t._value.shape), shape)
        if not isinstance(t, SymbolicTensor):       # known while tracing: the variable exists at once
            var._value = np.array(t._value)
            graph._created_variables.append((var, None))
            return
        var._value = _uninitialized(t._value.shape, t._value.dtype, var._name[:-2])
        _off_chain(graph, var, lambda: graph._create_op(_assign, [t], {"var": var}, metas=[],
                                                        name=None if in_function else "Assign"))
        initializer = graph._ops[-1]
        if in_function:
            graph._created_variables.append((var, initializer))
            return
        info = var._graph_info = _GraphInfo()
        info.graph, info.initial_value, info.initializer, info.uninitialized = graph, t, initializer, var._value
        with graph.name_scope("Read"):
            info.read = _off_chain(graph, var, lambda: graph._create_op(_read_variable, [var], {}))
    graph.__dict__.setdefault("_global_variables", []).append(var)
    if var._trainable:
        graph.__dict__.setdefault("_trainable_variables", []).append(var)


def graph_variables(graph, trainable=False):
    """The variables made in the TF1 graph `graph` (TF1's global or trainable collection)."""
    return list(getattr(graph, "_trainable_variables" if trainable else "_global_variables", ()))


def _declared_shape(value_shape, shape):
    """The variable's shape: its value's, or a compatible less specific `shape` (assignments
    may then change the value's shape)."""
    if shape is None:
        return value_shape
    shape = TensorShape(shape)
    if not shape.is_compatible_with(value_shape):
        raise ValueError(f"In this `tf.Variable` creation, the initial value's shape ({value_shape}) is "
                         f"not compatible with the explicitly supplied `shape` argument ({shape}).")
    return shape


def _indices(indices, op_type):
    t = convert_to_tensor(indices)
    if t._value.dtype not in (np.int32, np.int64):
        raise TypeError(f"Value passed to parameter 'indices' of {op_type} has DataType {t.dtype.name} not in list "
                        "of allowed values: int32, int64")
    return t


def _check_scatter_shapes(shape, ishape, ushape):
    """Graph build check of a scatter (eager kernels raise InvalidArgumentError instead)."""
    if not ushape or None in tuple(ushape) + tuple(ishape) + tuple(shape):
        return
    if tuple(ushape) != tuple(ishape) + tuple(shape[1:]):
        raise ValueError(f"Shapes must be equal: the updates shape {_shape_str(ushape)} must be indices.shape + "
                         f"params.shape[1:] = {_shape_str(tuple(ishape) + tuple(shape[1:]))} (or a scalar).")


def _check_scatter_nd_shapes(shape, ishape, ushape):
    if not ishape or None in tuple(ushape) + tuple(ishape) + tuple(shape):
        return
    k = ishape[-1]
    expected = tuple(ishape[:-1]) + tuple(shape[k:])
    if k > len(shape) or tuple(ushape) != expected:
        raise ValueError(f"The updates shape {_shape_str(ushape)} must be indices.shape[:-1] + params.shape[{k}:] "
                         f"= {_shape_str(expected)}.")


def _cast_ok(value, dtype):
    """Python values convert to the requested dtype; tensors are checked instead."""
    if dtype is None or isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        return None
    return dtype


def _shape_str(shape):
    return str(TensorShape(shape))


def _resource_gather_shape(var, indices):
    """indices.shape + the variable's declared shape past its first dim."""
    read = _read_variable_shape(var)[0]
    return [Meta(tuple(indices._value.shape) + read.shape[1:], read.dtype)]


@op("ResourceGather", same_dtype=False, shape=_resource_gather_shape, shape_reads_inputs=True)
def _resource_gather(params, indices):
    return _gather.kernel(found_value(params, "ResourceGather"), indices, 0, 0)


@_resource_gather.def_batch
def _resource_gather_batch(xs, batched):
    return execute(_resource_gather, xs, {}), True     # batched indices (a variable is shared): [B, I..., R...]


@_resource_gather.def_grad(reads_inputs=(1,))
def _resource_gather_grad(op, dy):
    var, indices = op.inputs                           # a sparse update of the variable's rows
    return _indexed_slices_grad(dy, indices, var._value.shape), None
