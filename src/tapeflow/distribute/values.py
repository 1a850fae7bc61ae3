"""Distributed values: one value per replica (`PerReplica`), one per replica known to be
equal (`Mirrored`), and distributed variables (`MirroredVariable`, `SyncOnReadVariable`),
with the helpers that group per-replica results and select one replica's share.

Note [distributed variables]: a distributed variable holds one component variable per
local replica, and is itself a `tf.Variable` whose identity (`_id`) and value (`_value`)
are those of the component the current context selects: the replica's own inside
`strategy.run` (or the one `extended.update` is updating), the first ("primary")
component in cross-replica context.  So ops, tapes and `tape.gradient(loss, var)` made
in a replica see that replica's component, while `watched_variables()` and optimizer
bookkeeping see the distributed variable (it watches itself first).  Its updates follow
its aggregation (TensorFlow 2.21's rules): in a replica context NONE updates the
replica's own component, SUM/MEAN reduce the replicas' values and ONLY_FIRST_REPLICA
takes replica 0's, then every component is updated with the result (a merge_call); in
cross-replica context every component gets the same update.

Note [per-replica structure]: `PerReplica` and `Mirrored` are registered with optree in
tapeflow's namespace (as `SparseTensor` is), so `tf.function` takes them as arguments
and returns them, flattened into their components.  Code here that must see them whole
(grouping, selecting, reducing) walks structures with `map_plain` / `flatten_plain`,
where they are leaves.
"""

import threading
import weakref

import optree

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import array_ops, operators
from tapeflow.ops.core import basic_ops
from tapeflow.ops.variable_creation import VariableAggregation, VariableSynchronization
from tapeflow.ops.variables import Variable, _read_variable
from tapeflow.distribute.reduce_util import ReduceOp
from tapeflow.distribute.thread_mode import (
    current_mode, current_replica_id, enter_or_assert_strategy, get_update_replica_id, in_cross_replica_context,
)


def map_plain(fn, structure):
    """`fn` on each leaf of `structure` (lists, tuples, dicts; distributed values are leaves)."""
    return optree.tree_map(fn, structure, none_is_leaf=True)


def flatten_plain(structure):
    return optree.tree_leaves(structure, none_is_leaf=True)


def _late_bound():
    """Whether a read should name the distributed variable itself, not a component.

    Note [late-bound reads]: a `tf.function` called by replicas running eagerly is traced
    once (by the first replica to call it) and run by every replica.  Its reads of a
    distributed variable are made with the variable itself as input, so that the graph
    reads, and the calling replica's tape differentiates, the component of whichever
    replica runs it (the variable's `_value` and `_id` are resolved when the op runs).
    Everywhere else a read names the component the context selects.
    """
    return bool(state.graphs) and getattr(threading.current_thread(), "eager_replica", False)


@tf_export("distribute.DistributedValues")
class DistributedValues:
    """One value per local replica (`values`, in replica order): the base of `PerReplica`,
    `Mirrored` and distributed variables (for `isinstance` tests, as TensorFlow's).

    >>> import tapeflow as tf
    >>> s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    >>> values = s.experimental_distribute_values_from_function(
    ...     lambda ctx: tf.constant(ctx.replica_id_in_sync_group))
    >>> isinstance(values, tf.distribute.DistributedValues), len(values.values)
    (True, 2)
    """

    _is_variable = False

    def __init__(self, values):
        self._values = tuple(values)

    @property
    def values(self):
        return self._values

    @property
    def _primary(self):
        return self._values[0]

    @property
    def _devices(self):
        return tuple(getattr(v, "device", None) for v in self._values)

    def _get(self):
        replica_id = current_replica_id()
        if replica_id is None:
            return self._get_cross_replica()
        return self._values[replica_id]

    def _get_on_device_or_primary(self):
        replica_id = current_replica_id()
        return self._values[0 if replica_id is None else replica_id]

    def _get_cross_replica(self):
        raise ValueError("It looks like you are using a PerReplica object while not inside a replica context, which "
                         "is not supported. Try running your op or function inside a replica context by using "
                         "`strategy.run`")

    def __str__(self):
        items = ",\n".join(f"  {i}: {v}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{items}\n}}"

    def __repr__(self):
        items = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{items}\n}}"


class PerReplica(DistributedValues):
    """The replicas' own values of one result (what `strategy.run` returns where they differ).

    >>> import tapeflow as tf
    >>> strategy = tf.distribute.get_strategy()
    >>> strategy.experimental_local_results(tf.constant(1.0))
    (<tf.Tensor: shape=(), dtype=float32, numpy=1.0>,)
    """


class Mirrored(DistributedValues):
    """The replicas' values of one result, equal on every replica; used as a tensor, it is
    the current replica's (or the first) value."""

    def _get_cross_replica(self):
        return self._values[0]

    def value(self):
        return convert_to_tensor(self._get())

    def _as_tensor(self, dtype=None):
        return convert_to_tensor(self._get(), dtype=dtype)

    @property
    def dtype(self):
        return self._primary.dtype

    @property
    def shape(self):
        return self._primary.shape


operators._install(Mirrored, operators._reading)      # Mirrored values act as their tensor


for _cls in (PerReplica, Mirrored):
    optree.register_pytree_node(_cls, lambda v: (v._values, None, None), lambda _, values, cls=_cls: cls(values),
                                namespace="tapeflow")


# -- distributed variables ------------------------------------------------------------------

_CONTAINERS = {}        # component variable id -> weak reference to its distributed variable


class DistributedVariable(DistributedValues, Variable):
    """A variable with one component per local replica (Note [distributed variables])."""

    _through_creators = False
    _is_variable = True

    def __init__(self, strategy, values, aggregation):
        DistributedValues.__init__(self, values)
        primary = self._values[0]
        self._distribute_strategy = strategy
        self._aggregation = aggregation
        self._synchronization = primary._synchronization
        self._trainable, self._constraint, self._graph_info = primary._trainable, primary._constraint, None
        ref = weakref.ref(self)
        for v in self._values:
            _CONTAINERS[v._id] = ref
            weakref.finalize(self, _CONTAINERS.pop, v._id, None)

    # what ops, tapes and graphs read (Note [distributed variables])
    _value = property(lambda self: self._get_on_device_or_primary()._value)
    _id = property(lambda self: self._get_on_device_or_primary()._id)
    _shape = property(lambda self: self._primary._shape)

    @_value.setter
    def _value(self, value):
        self._get_on_device_or_primary()._value = value

    @property
    def distribute_strategy(self):
        return self._distribute_strategy

    @property
    def name(self):
        return self._primary.name

    @property
    def _name(self):
        return self._primary._name

    @property
    def device(self):
        return self._get_on_device_or_primary().device

    def __getattr__(self, name):           # other attributes of the components (an optimizer variable's path)
        if name.startswith("__") or name in ("_values", "_distribute_strategy"):
            raise AttributeError(name)
        return getattr(self._get_on_device_or_primary(), name)

    # -- reads ---------------------------------------------------------------------------
    def value(self):
        self._note_access()       # first: tapes list the distributed variable, not the component
        if _late_bound():
            return execute(_read_variable, (self,), {})
        return self._get_on_device_or_primary().value()

    def read_value(self):
        with enter_or_assert_strategy(self._distribute_strategy):
            if _late_bound():
                return array_ops.identity(self.value())
            self._note_access()
            return array_ops.identity(self._get())

    def _as_tensor(self, dtype=None):
        if dtype is not None and dtype != self.dtype:
            return self._get_on_device_or_primary()._as_tensor(dtype)      # its error
        return self.value()

    def numpy(self):
        return self.read_value().numpy()

    def _get_cross_replica(self):
        return array_ops.identity(self._primary.value())

    # -- writes --------------------------------------------------------------------------
    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._update(lambda v, *a, **k: v.assign(*a, **k), value, read_value=read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._update(lambda v, *a, **k: v.assign_add(*a, **k), delta, read_value=read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._update(lambda v, *a, **k: v.assign_sub(*a, **k), delta, read_value=read_value)

    def _scatter(self, method, sparse_delta):
        return self._update(lambda v, delta: getattr(v, method)(delta), sparse_delta)

    def _scatter_nd(self, method, indices, updates):
        return self._update(lambda v, u, indices=indices: getattr(v, method)(indices, u), updates)

    def _update(self, update_fn, value, **kwargs):
        """`update_fn(component, value, **kwargs)` on the components the context calls for."""
        with enter_or_assert_strategy(self._distribute_strategy):
            if in_cross_replica_context():
                replica_id = get_update_replica_id()
                if replica_id is not None:
                    return update_fn(self._values[replica_id], value, **kwargs)
                return self._update_cross_replica(update_fn, value, **kwargs)
            ctx = current_mode().replica_context         # (a strategy is current: not the default mode)
            if ctx is None or ctx.strategy is not self._distribute_strategy:
                raise RuntimeError("Replica-local variables may only be assigned in a replica context.")
            return self._update_replica(update_fn, value, **kwargs)

    def _update_cross_replica(self, update_fn, value, **kwargs):
        return self._distribute_strategy.extended.update(self, update_fn, args=(value,), kwargs=kwargs, group=True)

    def __repr__(self):
        return DistributedValues.__repr__(self)

    __str__ = __repr__

    def __hash__(self):
        return Variable.__hash__(self)

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError(f"A {type(self).__name__} cannot be pickled; save its value instead.")


class MirroredVariable(DistributedVariable):
    """A variable kept equal on every replica (what `tf.Variable` makes under
    `MirroredStrategy.scope()`; Note [distributed variables])."""

    def _update_replica(self, update_fn, value, **kwargs):
        aggregation = self._aggregation
        if aggregation is VariableAggregation.NONE:      # this replica's component only (TensorFlow 2.21)
            return _update_own_component(self, update_fn, value, kwargs)
        if isinstance(value, DistributedValues):
            raise TypeError("Cannot use DistributedValues to update variables in replica context.")

        def merge_fn(strategy, value, **kwargs):
            if aggregation is VariableAggregation.MEAN and not self.dtype.is_floating and isinstance(
                    value, PerReplica):
                raise ValueError("Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation in "
                                 "replica context. Either change the variable dtype to float or update it in "
                                 "cross-replica context.")
            return self._update_cross_replica(update_fn, apply_aggregation(strategy, value, aggregation, self),
                                              **kwargs)

        return current_mode().replica_context.merge_call(merge_fn, args=(value,), kwargs=kwargs)

    def _scatter_checked(self, method, *args):
        if self._aggregation not in (VariableAggregation.NONE, VariableAggregation.ONLY_FIRST_REPLICA):
            raise NotImplementedError(f"{method} is only supported for mirrored variable (variable created within "
                                      "certain `tf.distribute.Strategy` scope) with NONE or `ONLY_FIRST_REPLICA` "
                                      f"aggregation, got: {self._aggregation}.")
        return DistributedVariable._scatter(self, method, *args)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        return self._scatter_checked("scatter_update", sparse_delta)

    def scatter_min(self, sparse_delta, use_locking=False, name=None):
        return self._scatter_checked("scatter_min", sparse_delta)

    def scatter_max(self, sparse_delta, use_locking=False, name=None):
        return self._scatter_checked("scatter_max", sparse_delta)


class SyncOnReadVariable(DistributedVariable):
    """A variable each replica updates on its own, aggregated when read in cross-replica
    context (what `synchronization=ON_READ` makes under a strategy's scope: metrics)."""

    def _get_cross_replica(self):
        if self._aggregation is VariableAggregation.ONLY_FIRST_REPLICA:
            return array_ops.identity(self._primary.value())
        with enter_or_assert_strategy(self._distribute_strategy):
            return self._distribute_strategy.reduce(ReduceOp.from_variable_aggregation(self._aggregation), self,
                                                    axis=None)

    def value(self):
        with enter_or_assert_strategy(self._distribute_strategy):
            if in_cross_replica_context() and get_update_replica_id() is None:
                return self._get_cross_replica()
            return DistributedVariable.value(self)

    def read_value(self):
        return array_ops.identity(self.value())

    def _as_tensor(self, dtype=None):
        return convert_to_tensor(self.value(), dtype=dtype)

    def _update_replica(self, update_fn, value, **kwargs):
        return _update_own_component(self, update_fn, value, kwargs)

    def _on_each(self, method, value, read_value):
        with enter_or_assert_strategy(self._distribute_strategy):
            if not in_cross_replica_context() or get_update_replica_id() is not None:
                return DistributedVariable.__dict__[method](self, value, read_value=read_value)
            if method != "assign" and self._aggregation is VariableAggregation.SUM:
                raise ValueError(f"SyncOnReadVariable does not support `{method}` in cross-replica context when "
                                 "aggregation is set to `tf.VariableAggregation.SUM`.")
            if method == "assign" and self._aggregation is VariableAggregation.SUM:
                # every replica (in every process) holds a share, so that a summed read gives `value`
                replicas = self._distribute_strategy.num_replicas_in_sync
                value = basic_ops.cast(convert_to_tensor(value, dtype=self.dtype) / replicas, self.dtype)
            for v in self._values:
                getattr(v, method)(value)
            return self.read_value() if read_value else None

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._on_each("assign", value, read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._on_each("assign_add", delta, read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._on_each("assign_sub", delta, read_value)

    def _scatter(self, method, *args):
        raise NotImplementedError(f"ON_READ variables doesn't support `{method}` in cross replica context")

    _scatter_nd = _scatter


def _update_own_component(var, update_fn, value, kwargs):
    """The update of this replica's component; its result read (as TensorFlow returns a read
    of the written variable, not the component)."""
    component = var._get_on_device_or_primary()
    result = update_fn(component, value, **kwargs)
    return array_ops.identity(result) if result is component else result


VARIABLE_CLASSES = {VariableSynchronization.ON_WRITE: MirroredVariable, VariableSynchronization.ON_READ: SyncOnReadVariable}


def apply_aggregation(strategy, value, aggregation, destinations):
    """`value` (from every replica) combined as `aggregation` says, onto `destinations`."""
    if aggregation is VariableAggregation.ONLY_FIRST_REPLICA:
        return strategy.extended.broadcast_to(strategy.experimental_local_results(value)[0], destinations)
    return strategy.extended.reduce_to(ReduceOp.from_variable_aggregation(aggregation), value, destinations)


# -- grouping and selecting --------------------------------------------------------------------

def value_container(value):
    """The distributed variable `value` is a component of, else `value` itself."""
    if getattr(value, "_is_variable", False) and not isinstance(value, DistributedVariable):
        ref = _CONTAINERS.get(value._id)
        container = ref() if ref is not None else None
        if container is not None:
            return container
    return value


def regroup(values, wrap_class=PerReplica, always_wrap=False):
    """One structure from the replicas' structures `values`, each leaf wrapped in
    `wrap_class` where the replicas' leaves differ (the same object: kept as it is)."""
    v0 = values[0]
    if isinstance(v0, list):
        return [regroup(tuple(v[i] for v in values), wrap_class, always_wrap) for i in range(len(v0))]
    if isinstance(v0, tuple):
        parts = tuple(regroup(tuple(v[i] for v in values), wrap_class, always_wrap) for i in range(len(v0)))
        return v0._make(parts) if hasattr(v0, "_fields") else parts
    if isinstance(v0, dict):
        return type(v0)({k: regroup(tuple(v[k] for v in values), wrap_class, always_wrap) for k in v0})
    same = all(v is v0 for v in values[1:])
    if same and isinstance(v0, DistributedVariable):
        return v0
    container = value_container(v0)
    if same and not always_wrap and container is v0:
        return v0
    if container is not v0 and all(value_container(v) is container for v in values[1:]):
        return container
    return wrap_class(values)


def select_replica(replica_id, structured):
    """Replica `replica_id`'s share of `structured` (distributed variables stay whole)."""
    def get(x):
        if isinstance(x, DistributedValues) and not isinstance(x, DistributedVariable):
            return x._values[replica_id]
        return x
    return map_plain(get, structured)


def local_results(value, num_local_replicas):
    """The per-replica values in `value`, one structure per local replica."""
    if isinstance(value, DistributedValues):
        return value._values
    leaves = flatten_plain(value)
    if len(leaves) == 1 and leaves[0] is value:
        return (value,)
    return tuple(select_replica(i, value) for i in range(num_local_replicas))


def map_local(extended, fn, value):
    """A PerReplica of `fn` on each local replica's share of `value` (a plain value counts
    once per replica, as `strategy.run` would pass it)."""
    if isinstance(value, DistributedValues):
        return PerReplica([fn(v) for v in value._values])
    return PerReplica([fn(value)] * extended._num_local_replicas)


def update_regroup(extended, updates, group):
    """The results of an update of each component: regrouped, variables read (group), or one
    tuple of per-replica results per position."""
    if not group:
        return map_plain(extended._local_results, regroup(updates, Mirrored))
    read = [map_plain(lambda v: array_ops.identity(v) if isinstance(v, (Tensor, Variable)) else v, u)
            for u in updates]
    return regroup(read, Mirrored)
