"""The TF1 optimizer base (`tf.compat.v1.train.Optimizer`): `compute_gradients`,
`apply_gradients`, `minimize` and slot variables.

Subclasses give `_create_slots`, `_prepare` (the hyperparameters as tensors),
`_resource_apply_dense(grad, var)`, `_resource_apply_sparse(values, var,
indices)` and optionally `_finish`: TensorFlow's hooks for resource variables,
which every TF2 variable is.  The same code runs
eagerly (updates happen at once; `apply_gradients` returns None), inside a
`tf.function` and in a TF1 graph, where `apply_gradients` returns the op to
`Session.run`.  In a TF1 graph nothing orders a read after a write of the same
variable unless a control dependency says so, so the subclasses read a written
variable through the write's result (reads of an `_UnreadVariable` wait for its
write) and put explicit `control_dependencies` where TensorFlow's kernels would
update in place.

Slots are created for the variables that get a gradient, the first time they
do, named "<variable>/<optimizer name>" ("w/Adam", "w/Adam_1"); in a TF1 graph
they are variables of that graph, initialized by
`global_variables_initializer()` like the model's, so `minimize` must be called
before it.

Note [duplicate indices]: a sparse gradient's repeated indices are summed first
(`unique` + `unsorted_segment_sum`, TF's `_deduplicate_indexed_slices`) before
`_resource_apply_sparse`, which then updates each touched row once; an
optimizer whose update is linear in the gradient (gradient descent) overrides
`_resource_apply_sparse_duplicate_indices` to scatter the rows as they come.
"""

import contextlib

import numpy as np

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import scatter_ops
from tapeflow.ops.core import basic_ops
from tapeflow.ops.variables import Variable
from tapeflow.eager.backprop import GradientTape
from tapeflow.graph.gradients import gradients_v1
from tapeflow.graph.scopes import control_dependencies
from tapeflow.graph.session import group_ops, trainable_variables

_VALID_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


@tf_export("compat.v1.train.Optimizer")
class Optimizer:
    """Base class of the TF1 optimizers; use GradientDescentOptimizer, MomentumOptimizer or AdamOptimizer.

    Args:
      use_locking: accepted for compatibility (updates never race here).
      name: the name of the ops `apply_gradients` makes and the slots' suffix.

    Raises:
      ValueError: `name` is empty.

    >>> import tapeflow as tf
    >>> tf.compat.v1.train.GradientDescentOptimizer(0.1).get_name()
    'GradientDescent'
    """

    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}          # slot name -> {variable id: slot variable}
        self._non_slot = {}       # (name, graph or None) -> variable

    def get_name(self):
        return self._name

    # -- gradients ----------------------------------------------------------------------
    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                 colocate_gradients_with_ops=False, name=None, grad_loss=None):
        """`compute_gradients` then `apply_gradients`.

        Args:
          loss: the tensor to minimize (graphs) or a callable returning it (required eagerly).
          global_step: an integer variable incremented after the update, or None.
          var_list: the variables to update; by default the graph's trainable
            variables (graphs) or those the callable reads (eagerly).
          name: the name of the returned op.

        Returns:
          The update op (graphs), None eagerly.

        Raises:
          ValueError: no variable gets a gradient.
          RuntimeError: `loss` is not callable while executing eagerly.

        >>> import tapeflow as tf
        >>> w = tf.Variable(3.0)
        >>> tf.compat.v1.train.GradientDescentOptimizer(0.25).minimize(lambda: w * w)
        >>> float(w)
        1.5
        """
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, gate_gradients=gate_gradients,
                                                aggregation_method=aggregation_method, grad_loss=grad_loss)
        if not any(g is not None for g, _ in grads_and_vars):
            raise ValueError("No gradients provided for any variable, check your graph for ops that do not support "
                             f"gradients, between variables {[str(v) for _, v in grads_and_vars]} and loss {loss}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """The gradients of `loss` for the variables, as (gradient, variable) pairs.

        Args:
          loss: a tensor (graphs, differentiated with `tf.compat.v1.gradients`) or
            a no-argument callable returning it (required eagerly; a GradientTape
            records it).
          var_list: the variables; by default the graph's trainable variables
            (graphs) or those the callable reads (eagerly).
          gate_gradients, aggregation_method, colocate_gradients_with_ops: as in TF1.
          grad_loss: the gradient of `loss` to start from (ones by default).

        Returns:
          A list of (gradient, variable) pairs; the gradient is None where `loss`
          does not depend on the variable, an IndexedSlices after a gather.

        Raises:
          RuntimeError: `loss` is not callable while executing eagerly.
          ValueError: a bad `gate_gradients`, a loss of a non-float dtype, or no variables.

        >>> import tapeflow as tf
        >>> w = tf.Variable(3.0)
        >>> [(float(g), v is w) for g, v in
        ...  tf.compat.v1.train.GradientDescentOptimizer(0.1).compute_gradients(lambda: w * w)]
        [(6.0, True)]
        """
        if callable(loss):
            with GradientTape() as tape:
                if var_list is not None:
                    tape.watch(var_list)
                value = loss()
            if var_list is None:
                var_list = tape.watched_variables()
            var_list = list(var_list)
            return list(zip(tape.gradient(value, var_list, grad_loss), var_list, strict=True))
        if not state.graphs:
            raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a function when eager "
                               "execution is enabled.")
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                             f"Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        _check_dtypes([loss] + ([grad_loss] if grad_loss is not None else []))
        var_list = trainable_variables() if var_list is None else nest.flatten(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients_v1(loss, var_list, grad_ys=grad_loss, aggregation_method=aggregation_method)
        pairs = list(zip(grads, var_list, strict=True))
        _check_dtypes([v for g, v in pairs if g is not None])
        return pairs

    # -- updates ------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Applies the gradients; increments `global_step` after the updates when given.

        Args:
          grads_and_vars: (gradient, variable) pairs, as `compute_gradients` returns.
          global_step: an integer variable incremented by one, or None.
          name: the name of the returned op (the optimizer's name by default).

        Returns:
          The op running the updates (graphs), None eagerly.

        Raises:
          ValueError: no pairs, or no gradient at all.
          TypeError: a gradient is neither a tensor, IndexedSlices nor None.
          NotImplementedError: a pair's second item is not a variable.

        >>> import tapeflow as tf
        >>> with tf.Graph().as_default() as g:
        ...     w = tf.Variable(1.0)
        ...     step = tf.compat.v1.train.get_or_create_global_step()
        ...     train = tf.compat.v1.train.GradientDescentOptimizer(0.5).apply_gradients(
        ...         [(tf.constant(2.0), w)], global_step=step)
        ...     init = tf.compat.v1.global_variables_initializer()
        >>> with tf.compat.v1.Session(graph=g) as sess:
        ...     _ = sess.run(init)
        ...     _ = sess.run(train)
        ...     sess.run([w, step])
        [np.float32(0.0), np.int64(1)]
        """
        pairs = []
        for g, v in tuple(grads_and_vars):
            if g is not None and not isinstance(g, IndexedSlices):
                try:
                    g = convert_to_tensor(g)
                except (TypeError, ValueError):
                    raise TypeError("Gradient must be convertible to a Tensor or IndexedSlices, or None: "
                                    f"{g!r}") from None
            if not isinstance(v, Variable):
                raise NotImplementedError(f"Trying to update {v!r}, which is not a tf.Variable: TF1 optimizers "
                                          "update variables only.")
            pairs.append((g, v))
        if not pairs:
            raise ValueError("No variables provided.")
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in pairs]}.")
        self._create_slots(var_list)
        graph = state.graphs[-1] if state.graphs else None
        with _name_scope(graph, name or self._name) as scope:
            self._prepare()
            updates = [self._resource_apply_sparse_duplicate_indices(g.values, v, g.indices)
                       if isinstance(g, IndexedSlices) else self._resource_apply_dense(g, v)
                       for g, v in pairs if g is not None]
            if global_step is None:
                return _named(self._finish(updates, None), scope)
            with control_dependencies([op for op in [self._finish(updates, "update")] if op is not None]):
                return _named(global_step.assign_add(1, read_value=False), scope)

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        """Sums the rows of repeated indices, then `_resource_apply_sparse` (Note [duplicate indices])."""
        unique, positions = scatter_ops.unique(indices)
        rows = scatter_ops.unsorted_segment_sum(grad, positions, _length(unique))
        return self._resource_apply_sparse(rows, handle, unique)

    def _resource_apply_dense(self, grad, handle):
        """The update of variable `handle` from a dense gradient; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define _resource_apply_dense(grad, var).")

    def _resource_apply_sparse(self, grad, handle, indices):
        """The update of the rows `indices` (unique) of variable `handle`; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define _resource_apply_sparse(grad, var, indices).")

    def _finish(self, update_ops, name):
        return group_ops(update_ops, name)

    def _create_slots(self, var_list):
        pass

    def _prepare(self):
        pass

    # -- slots --------------------------------------------------------------------------
    def _zeros_slot(self, var, slot_name, op_name):
        """The slot `slot_name` of `var`, created as zeros the first time ("<var>/<op_name>")."""
        slots = self._slots.setdefault(slot_name, {})
        if var._id not in slots:
            base = var.name[:-2] if var.name.endswith(":0") else var.name
            in_graph = bool(state.graphs) and not state.graphs[-1].building_function
            count = sum(1 for table in self._slots.values() if var._id in table)
            suffix = "" if in_graph or count == 0 else f"_{count}"     # a TF1 graph makes names unique itself
            shape = var.shape.as_list() if var.shape.is_fully_defined() else var._value.shape
            slots[var._id] = Variable(np.zeros(shape, var.dtype._np), trainable=False, name=f"{base}/{op_name}{suffix}")
        return slots[var._id]

    def _non_slot_variable(self, name, initial_value=None):
        """The optimizer-wide variable `name` of the current graph (eager: one), made with `initial_value`."""
        graph = _home_graph()
        key = (name, graph)
        if key not in self._non_slot and initial_value is not None:
            saved = state.graphs          # made in the home graph, not inside a cond branch or function
            state.graphs = saved[:saved.index(graph) + 1] if graph is not None else []
            try:
                self._non_slot[key] = Variable(initial_value, trainable=False, name=name)
            finally:
                state.graphs = saved
        return self._non_slot.get(key)

    def get_slot(self, var, name):
        """The slot variable `name` of `var`, or None."""
        return self._slots.get(name, {}).get(var._id)

    def get_slot_names(self):
        """The sorted names of the slots this optimizer has created."""
        return sorted(self._slots)

    def variables(self):
        """The optimizer's variables of the current graph (slots and others), sorted by name."""
        graph = _home_graph()
        found = [v for (_, g), v in self._non_slot.items() if g is graph]
        found += [v for table in self._slots.values() for v in table.values() if _graph_of(v) is graph]
        return sorted(found, key=lambda v: v.name)


def _home_graph():
    """The graph the optimizer's own variables live in: the innermost graph that is not a
    function or control-flow branch being built (None when that is the eager context)."""
    graph = state.graphs[-1] if state.graphs else None
    while graph is not None and graph.building_function:
        graph = graph.outer_graph
    return graph if graph in state.graphs else None


def _graph_of(var):
    return var._graph_info.graph if var._graph_info is not None else None


def _check_dtypes(tensors):
    for t in tensors:
        if t.dtype not in _VALID_DTYPES:
            raise ValueError(f"Invalid type {t.dtype!r} for {t.name}, expected: {list(_VALID_DTYPES)}.")


def _length(t):
    """The length of a 1-D tensor: static when known, else a tensor."""
    n = t.shape[0] if t.shape.rank else None
    return n if n is not None else basic_ops.shape(t)[0]


@contextlib.contextmanager
def _name_scope(graph, name):
    """The optimizer's name scope in a graph (its name, made unique; yields "Adam/"); None eagerly."""
    if graph is None:
        yield None
        return
    with graph.name_scope(name) as scope:
        yield scope


def _named(op, scope):
    """The op `apply_gradients` returns, named as its scope ("Adam", "Adam_1") in a graph."""
    if op is not None and scope:
        op.name = scope.rstrip("/")
    return op


def as_tensor(value):
    """A hyperparameter as a tensor, called first when callable (TF1's `_prepare`)."""
    if callable(value) and not isinstance(value, (Tensor, Variable)):
        value = value()
    return convert_to_tensor(value)
