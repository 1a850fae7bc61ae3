"""TF1-style graphs: `compat.v1.placeholder`, `compat.v1.Session` and variable initializers.

Each Session holds its own values of the graph's variables (as TensorFlow's
per-session resource containers): they are in the variables while the Session
runs and kept by the Session between runs (Note [graph variables] in
ops/variables.py).
"""

import contextlib
import re

import numpy as np

from tapeflow.framework import dtypes as _dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import op
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops.variables import _UnreadVariable, Variable, graph_variables
from tapeflow.graph.default_graph import get_default_graph
from tapeflow.graph.executor import Plan
from tapeflow.graph.graph import Operation, _placeholder


@tf_export("compat.v1.placeholder", names_op=False)
def placeholder(dtype, shape=None, name=None):
    """A graph input to be fed when the graph runs (TF1 `tf.compat.v1.placeholder`).

    Without `shape` (or with `shape=None`) the rank is unknown and values of any
    shape can be fed; only some ops take such tensors (Note [unknown rank] in
    framework/shapes/symbolic_tensors.py).

    Raises:
      RuntimeError: called while executing eagerly.
    """
    if not state.graphs:
        raise RuntimeError("tf.placeholder() is not compatible with eager execution.")
    graph = state.graphs[-1]
    dtype = _dtypes.as_dtype(dtype)
    shape = TensorShape(shape)
    dims = None if shape.rank is None else tuple(shape.as_list())
    op_name = graph.unique_name(name or "Placeholder", mark_as_used=False)
    return graph._create_op(_placeholder, [], {"dtype": dtype._np, "shape": dims, "name": op_name},
                            metas=[Meta(dims, dtype._np)], name=name or "Placeholder")


def _with_default_shape(x, dtype, shape):
    return [Meta(shape, x.dtype)]


@op("PlaceholderWithDefault", same_dtype=False, shape=_with_default_shape, unknown_rank=True)
def _placeholder_with_default(x, dtype, shape):
    return x


@_placeholder_with_default.def_batch
def _placeholder_with_default_batch(xs, batched, dtype, shape):
    return xs[0], True          # a batched default is never fed (it is made inside vectorized code): itself


@_placeholder_with_default.def_grad(reads_inputs=False)
def _placeholder_with_default_grad(op, dy):
    return dy                                            # the default passes through: d x = dy


@tf_export("compat.v1.placeholder_with_default", names_op=False)
def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """A graph input that is `input` unless a value is fed for it (TF1).

    Args:
      input: the default value (a tensor or anything `convert_to_tensor` takes).
      shape: the static shape of the result: `input`'s or less specific ([None]).
      name: the op's name (graph mode).

    Returns:
      A tensor of `shape`; executing eagerly, `input` itself as a tensor.

    Raises:
      ValueError: `shape` is not compatible with `input`'s shape.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.compat.v1.placeholder_with_default([1.0, 2.0], shape=[None])
    ...     y = x * 2.0
    ...     sess = tf.compat.v1.Session()
    ...     x.shape, sess.run(y), sess.run(y, {x: [3.0]})
    (TensorShape([None]), array([2., 4.], dtype=float32), array([6.], dtype=float32))
    """
    t = convert_to_tensor(input)
    declared = TensorShape(shape)
    if not declared.is_compatible_with(t.shape):
        raise ValueError(f"Dimensions must be compatible: the shape of `input` {t.shape} is not compatible with "
                         f"the `shape` argument {declared} of placeholder_with_default.")
    if not state.graphs:
        return t
    graph = state.graphs[-1]
    dims = None if declared.rank is None else tuple(declared.as_list())
    return graph._create_op(_placeholder_with_default, [t], {"dtype": t.dtype._np, "shape": dims},
                            metas=[Meta(dims, t._value.dtype)], name=name or "PlaceholderWithDefault")


@op("NoOp", same_dtype=False, num_outputs=-1, shape=lambda **attrs: [], differentiable=False)
def _no_op():
    return ()


def group_ops(ops, name):
    """A NoOp in the default graph that runs `ops` first (None while executing eagerly)."""
    if not state.graphs:
        return None
    graph = state.graphs[-1]
    with graph.control_dependencies(list(ops)):
        graph._create_op(_no_op, [], {}, metas=[], name=name)
    return graph._ops[-1]


@tf_export("group", names_op=False)
def group(*inputs, name=None):
    """An op that runs `inputs` (ops, tensors, nested lists of them) when it runs, in a
    graph; None executing eagerly, where everything ran already.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Variable(1.0)
    ...     step = tf.group(v.assign_add(1.0), v.assign_add(2.0))
    ...     sess = tf.compat.v1.Session()
    ...     _ = sess.run(v.initializer)
    ...     _ = sess.run(step)
    ...     float(sess.run(v))
    4.0
    """
    return group_ops([x for x in nest.flatten(list(inputs)) if x is not None], name or "group_deps")


@tf_export("no_op", names_op=False)
def no_op(name=None):
    """An op doing nothing (a target for control dependencies); None executing eagerly.

    >>> import tapeflow as tf
    >>> tf.no_op() is None
    True
    """
    return group_ops([], name)


@tf_export("compat.v1.variables_initializer", "compat.v1.initializers.variables")
def variables_initializer(var_list, name="init"):
    """An op running the initializers of `var_list` (TF1; None while executing eagerly)."""
    return group_ops([v.initializer for v in var_list if v.initializer is not None], name)


@tf_export("compat.v1.global_variables_initializer", "compat.v1.initializers.global_variables")
def global_variables_initializer():
    """An op running the initializers of all variables of the default graph (TF1)."""
    if not state.graphs:
        return None
    return variables_initializer(graph_variables(state.graphs[-1]))


@tf_export("compat.v1.local_variables_initializer", "compat.v1.initializers.local_variables")
def local_variables_initializer():
    """An op initializing the local variables of the default graph (TF1).  tapeflow makes no
    local variables (metrics' counters are TF1 locals), so it runs nothing; None eagerly."""
    return group_ops([], "init")


@tf_export("compat.v1.local_variables")
def local_variables(scope=None):
    """TF1's local-variables collection: always empty in tapeflow (see local_variables_initializer)."""
    return []


@tf_export("compat.v1.global_variables")
def global_variables(scope=None):
    """The variables made in the default graph ([] while executing eagerly), those whose
    name matches the regular expression `scope` when given."""
    return _filtered(graph_variables(state.graphs[-1]) if state.graphs else [], scope)


@tf_export("compat.v1.trainable_variables")
def trainable_variables(scope=None):
    """The trainable variables made in the default graph ([] while executing eagerly)."""
    return _filtered(graph_variables(state.graphs[-1], trainable=True) if state.graphs else [], scope)


def _filtered(variables, scope):
    if scope is None:
        return variables
    return [v for v in variables if re.match(scope, v.name)]


def _check_feed(tensor, value):
    """The fed value as an array of the tensor's dtype, converted by NumPy as TF does
    (1.5 fed to an int32 placeholder is 1); ValueError when it does not convert."""
    meta = tensor._value
    if isinstance(value, Tensor):
        raise TypeError(f"The value of a feed cannot be a tf.Tensor object ({value!r}); feed Python scalars, "
                        "lists or NumPy arrays (use .numpy() on an eager tensor).")
    try:
        array = np.asarray(value, dtype=meta.dtype)
    except (TypeError, ValueError):
        raise ValueError(f"Cannot feed value {value!r} for Tensor {tensor.name}, which has dtype "
                         f"{_dtypes.from_numpy(meta.dtype).name}") from None
    if not TensorShape(array.shape).is_compatible_with(meta.shape):
        raise ValueError(f"Cannot feed value of shape {array.shape} for Tensor {tensor.name}, which has shape "
                         f"{TensorShape(meta.shape)}")
    return array


def _message(error):
    return error.args[0] if error.args else str(error)


def _fetched(value):
    """Fetched values as TF returns them: NumPy arrays, NumPy scalars for rank 0, None for ops."""
    if value is None:
        return None
    value = np.asarray(value)
    return value[()] if value.ndim == 0 else value


@tf_export("compat.v1.Session")
class Session:
    """Runs fetches of a graph with fed values (TF1 `tf.compat.v1.Session`).

    >>> import tapeflow as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     x = tf.compat.v1.placeholder(tf.float32, [2])
    ...     y = x * 3.0
    >>> with tf.compat.v1.Session(graph=g) as sess:
    ...     sess.run(y, feed_dict={x: [1.0, 2.0]})
    array([3., 6.], dtype=float32)
    """

    def __init__(self, target="", graph=None, config=None):
        self.graph = get_default_graph() if graph is None else graph
        self._plans = {}
        self._closed = False
        self._variable_values = {}    # variable id -> its value in this session

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Evaluates `fetches` (a nested structure of tensors, ops or their names).

        Raises:
          ValueError: a fed value has the wrong shape or dtype, or a fetch is not in the graph.
          RuntimeError: the session is closed.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        feeds, values = [], []
        for key, value in (feed_dict or {}).items():
            try:
                t = self._as_fetch(key)
            except (KeyError, ValueError) as e:
                raise TypeError(f"Cannot interpret feed_dict key as Tensor: {_message(e)}") from None
            if not isinstance(t, SymbolicTensor):
                raise TypeError(f"The key of a feed_dict must be a graph tensor, got {key!r}")
            feeds.append(t)
            values.append(_check_feed(t, value))
        try:
            flat = [self._as_fetch(f) for f in nest.flatten(fetches)]
        except (KeyError, ValueError) as e:
            raise ValueError(f"A fetch argument cannot be interpreted as a Tensor: {_message(e)}") from None
        key = (tuple(id(f) for f in flat), tuple(t._id for t in feeds))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = Plan(self.graph, flat, feeds)
        variables = graph_variables(self.graph)
        for v in variables:         # this session's values (popped: Note [in-place updates])
            v._value = self._variable_values.pop(v._id, v._graph_info.uninitialized)
        try:
            results = [_fetched(r) for r in plan.run(values)]
        finally:
            for v in variables:
                self._variable_values[v._id] = v._value
                v._value = v._graph_info.uninitialized
        return nest.pack_sequence_as(fetches, results)

    def _as_fetch(self, f):
        if isinstance(f, Variable):     # its value: a read (after the write, for a write's result)
            element = f._graph_element if isinstance(f, _UnreadVariable) else (
                f._graph_info and f._graph_info.read)
            if element is None:
                raise TypeError(f"Fetch argument {f!r} cannot be interpreted as a Tensor: it is not a variable of "
                                "a TF1 graph (eager variables have their value already: use .numpy()).")
            f = element
        if isinstance(f, str):
            return self.graph.get_tensor_by_name(f) if ":" in f else self.graph.get_operation_by_name(f)
        if isinstance(f, SymbolicTensor):
            if f.graph is not self.graph:
                raise ValueError(f"Tensor {f.name} is not an element of this graph.")
            return f
        if isinstance(f, (Operation, Tensor)):
            return f
        raise TypeError(f"Fetch argument {f!r} has invalid type {type(f).__name__}; must be a tensor, an "
                        "operation or their name.")

    def close(self):
        self._closed = True
        self._variable_values = {}

    @contextlib.contextmanager
    def as_default(self):
        """Makes this the default session inside: `Tensor.eval()` and `Operation.run()` use it.

        >>> import tapeflow as tf
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     y = tf.constant(2.0) * 3.0
        >>> sess = tf.compat.v1.Session(graph=g)
        >>> with sess.as_default():
        ...     float(y.eval())
        6.0
        """
        sessions = state.scopes.setdefault("sessions", [])
        sessions.append(self)
        try:
            yield self
        finally:
            _remove_last(sessions, self)

    def __enter__(self):
        self._entered = [self.graph.as_default(), self.as_default()]     # as TF: the default graph and session
        for context in self._entered:
            context.__enter__()
        return self

    def __exit__(self, *exc):
        for context in reversed(self._entered):
            context.__exit__(*exc)
        self.close()


def _remove_last(stack, item):
    """Removes the innermost `item` from `stack` (interactive sessions may close out of order)."""
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is item:
            del stack[i]
            return


@tf_export("compat.v1.get_default_session")
def get_default_session():
    """The innermost default session of this thread (`Session.as_default`, `with Session()`,
    `InteractiveSession`), or None.

    >>> import tapeflow as tf
    >>> tf.compat.v1.get_default_session() is None
    True
    """
    sessions = state.scopes.get("sessions")
    return sessions[-1] if sessions else None


@tf_export("compat.v1.InteractiveSession")
class InteractiveSession(Session):
    """A Session that makes itself and its graph the defaults until it is closed, so
    `Tensor.eval()` and `Operation.run()` need no session (TF1 `tf.InteractiveSession`).

    >>> import tapeflow as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     sess = tf.compat.v1.InteractiveSession()
    ...     y = tf.constant([1.0, 2.0]) * 2.0
    ...     y.eval()
    ...     sess.close()
    array([2., 4.], dtype=float32)
    """

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        state.graphs.append(self.graph)
        state.scopes.setdefault("sessions", []).append(self)

    def close(self):
        if not self._closed:
            _remove_last(state.graphs, self.graph)
            _remove_last(state.scopes.get("sessions", []), self)
        super().close()


# -- TF1 names ------------------------------------------------------------------

class _VariableV1Type(type):
    """`tf.compat.v1.Variable(...)` makes a `tf.Variable` (TF1's extra arguments accepted)."""

    def __call__(cls, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None, synchronization=None, aggregation=None,
                 shape=None):
        return Variable(initial_value, trainable=trainable, validate_shape=validate_shape,
                                   caching_device=caching_device, name=name, variable_def=variable_def,
                                   dtype=dtype, import_scope=import_scope, constraint=constraint,
                                   synchronization=synchronization, aggregation=aggregation, shape=shape)


@tf_export("compat.v1.Variable")
class VariableV1(metaclass=_VariableV1Type):
    """TF1's `tf.compat.v1.Variable`: construction makes a `tf.Variable`."""


@tf_export("compat.v1.initialize_all_variables")
def initialize_all_variables():
    """Deprecated alias of `global_variables_initializer`."""
    return global_variables_initializer()


@tf_export("compat.v1.all_variables")
def all_variables():
    """Deprecated alias of `global_variables`."""
    return global_variables()
