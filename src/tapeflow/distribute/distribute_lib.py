"""The strategy API: `Strategy`, `StrategyExtended`, `ReplicaContext`, and the default
one-replica strategy; the per-thread mode they run in is thread_mode.py's (Note [thread
modes]).

Outside any strategy all of this is a no-op with one replica, as in TensorFlow:
`get_replica_context()` is the default replica context, whose `merge_call` calls its
function in cross-replica context and whose `all_reduce` returns its input.
"""

import weakref

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, constant, convert_to_tensor
from tapeflow.ops import array_ops, join_ops, math_ops, slicing_ops
from tapeflow.ops.core import basic_ops, primitives
from tapeflow.ops.variable_creation import VariableAggregation, variable_creator_scope
from tapeflow.custom_gradient import custom_gradient
from tapeflow.distribute import reduce_util, values as values_lib
from tapeflow.distribute.reduce_util import ReduceOp
from tapeflow.distribute.thread_mode import ThreadMode, UpdateContext, current_mode, has_strategy


# -- the thread's mode, the default one built here (Note [thread modes]) ---------------------

def _mode():
    """The thread's mode; for an empty stack the default mode, whose objects live here."""
    return current_mode() or _default_mode()


@tf_export("distribute.get_replica_context")
def get_replica_context():
    """The current `ReplicaContext`: the default one outside any strategy, a replica's inside
    `strategy.run`, None in cross-replica context (Note [thread modes]).

    >>> import tapeflow as tf
    >>> tf.distribute.get_replica_context().num_replicas_in_sync
    1
    """
    return _mode().replica_context


def get_cross_replica_context():
    """The current strategy in cross-replica context, else None."""
    return _mode().cross_replica_context


@tf_export("distribute.get_strategy")
def get_strategy():
    """The current strategy: the one whose scope or `run` the thread is in, else the default strategy.

    >>> import tapeflow as tf
    >>> tf.distribute.get_strategy().num_replicas_in_sync
    1
    """
    return _mode().strategy


@tf_export("distribute.experimental_set_strategy")
def experimental_set_strategy(strategy):
    """Makes `strategy` current without a `with strategy.scope():` block (None: none).

    Raises:
      RuntimeError: called inside a strategy's scope.
    """
    old = state.scopes.pop("global_strategy_scope", None)
    if old is not None:
        old.__exit__(None, None, None)
    if has_strategy():
        raise RuntimeError("Must not be called inside a `tf.distribute.Strategy` scope.")
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        state.scopes["global_strategy_scope"] = scope


def _wrong_strategy_scope(strategy, mode):
    if not has_strategy():
        raise RuntimeError(f'Need to be inside "with strategy.scope()" for {strategy}')
    raise RuntimeError(f"Mixing different tf.distribute.Strategy objects: {mode.strategy} is not {strategy}")


def require_cross_replica_or_default_context(extended, message=None):
    """Raises TensorFlow's RuntimeError unless in `extended`'s cross-replica context or the default mode."""
    mode = _mode()
    cross = mode.cross_replica_context
    if cross is not None and cross.extended is extended or mode is _default_mode():
        return
    strategy = extended._container_strategy()
    if mode.strategy is not strategy:
        _wrong_strategy_scope(strategy, mode)
    raise RuntimeError(message or "Method requires being in cross-replica context, use "
                       "get_replica_context().merge_call()")


def require_replica_context(replica_ctx):
    """Raises TensorFlow's RuntimeError unless `replica_ctx` is the thread's replica context."""
    mode = _mode()
    if mode.replica_context is replica_ctx:
        return
    if mode.replica_context is None:
        raise RuntimeError("Need to be inside `call_for_each_replica()`")
    if mode.strategy is replica_ctx.strategy:
        raise RuntimeError("Mismatching ReplicaContext.")
    raise RuntimeError(f"Mismatching tf.distribute.Strategy objects: {mode.strategy} is not {replica_ctx.strategy}.")


def _require_strategy_scope_extended(extended):
    mode = _mode()
    if mode.strategy.extended is not extended:
        _wrong_strategy_scope(extended._container_strategy(), mode)


class _CurrentDistributionContext:
    """`strategy.scope()`: the strategy's cross-replica mode and its variable creator; entering
    the scope of the strategy already current (in cross-replica context) only counts."""

    def __init__(self, strategy, creator):
        self._mode = ThreadMode(strategy, strategy, None)
        self._creator_scope = variable_creator_scope(creator)
        self._again = 0

    def __enter__(self):
        if has_strategy():
            require_cross_replica_or_default_context(self._mode.strategy.extended)
            self._again += 1
        else:
            state.strategies.append(self._mode)
            self._creator_scope.__enter__()
        return self._mode.strategy

    def __exit__(self, *exc):
        if self._again:
            self._again -= 1
            return
        self._creator_scope.__exit__(*exc)
        state.strategies.pop()


# -- small public classes ----------------------------------------------------------------------

@tf_export("distribute.ValueContext")
class ValueContext:
    """What `experimental_distribute_values_from_function` tells its function: which replica."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id_in_sync_group

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    def __str__(self):
        return (f"tf.distribute.ValueContext(replica id {self._replica_id_in_sync_group},  total replicas in sync: "
                f"{self._num_replicas_in_sync})")


@tf_export("distribute.RunOptions")
class RunOptions:
    """Options of `Strategy.run`; accepted for compatibility (they concern TPUs and XLA)."""

    def __init__(self, experimental_enable_dynamic_batch_size=True, experimental_bucketizing_dynamic_shape=False,
                 experimental_xla_options=None):
        self.experimental_enable_dynamic_batch_size = experimental_enable_dynamic_batch_size
        self.experimental_bucketizing_dynamic_shape = experimental_bucketizing_dynamic_shape
        self.experimental_xla_options = experimental_xla_options


# -- Strategy ------------------------------------------------------------------------------------

@tf_export("distribute.Strategy")
class Strategy:
    """A way to run a computation on several replicas and keep their variables in sync.

    Subclasses (`MirroredStrategy`, `OneDeviceStrategy`, `MultiWorkerMirroredStrategy`)
    differ in their `extended` object.

    >>> import tapeflow as tf
    >>> strategy = tf.distribute.get_strategy()      # the default, one replica
    >>> float(strategy.run(lambda x: x + 1.0, args=(1.0,)))
    2.0
    """

    _is_default = False      # the default strategy: current where no other is (thread_mode.has_strategy)

    def __init__(self, extended):
        self._extended = extended

    @property
    def extended(self):
        """The `StrategyExtended` with the lower-level methods."""
        return self._extended

    @property
    def num_replicas_in_sync(self):
        """How many replicas run `run`'s function and take part in reductions."""
        return self._extended._num_replicas_in_sync

    @property
    def cluster_resolver(self):
        return None

    def scope(self):
        """A context manager making this strategy current (cross-replica context); variables
        made inside are distributed (mirrored on every replica's device)."""
        return self._extended._scope(self)

    def run(self, fn, args=(), kwargs=None, options=None):
        """Calls `fn(*args, **kwargs)` once per replica, in a replica context.

        `PerReplica` values among the arguments give each replica its own component.

        Returns:
          `fn`'s result with, at each position where the replicas' values differ, a
          `PerReplica` of them (one replica: the value itself).

        Raises:
          ValueError: `args` is not a list or tuple.
          RuntimeError: called in a replica context (`run` inside `run`) or in the
            scope of another strategy.
        """
        if not isinstance(args, (list, tuple)):
            raise ValueError(f"positional args must be a list or tuple, got {type(args)}")
        with self.scope():
            return self._extended.call_for_each_replica(fn, args=args, kwargs=kwargs)

    def reduce(self, reduce_op, value, axis):
        """Combines a per-replica `value` into one tensor (cross-replica context).

        Args:
          reduce_op: `ReduceOp.SUM` or `ReduceOp.MEAN` (or "SUM", "MEAN").
          value: a `PerReplica` (or a nest of them), or a tensor (one replica).
          axis: None, or the axis (or axes) each replica's value is first reduced
            over; MEAN then divides by the total number of elements reduced.

        Raises:
          ValueError: a `reduce_op` string that is no ReduceOp; an axis out of range.
          TypeError: another `reduce_op` with an axis, or an axis of another type.
          RuntimeError: called in a replica context.
        """
        require_cross_replica_or_default_context(self._extended)
        reduce_op = reduce_util.canonical(reduce_op)
        if axis is None:
            return self._extended._reduce(reduce_op, value)
        if isinstance(axis, (int, tuple, list)):
            for v in self._extended._local_results(value):
                _check_axis(v, axis)
        if reduce_op is ReduceOp.SUM:
            summed = values_lib.map_local(self._extended, lambda v: primitives.reduce_sum(v, axis=axis), value)
            return self._extended._reduce(reduce_op, summed)
        if reduce_op is not ReduceOp.MEAN:
            raise TypeError(f"Expected `reduce_op` to be a `tf.distribute.ReduceOp`, not: {reduce_op!r}")
        if not isinstance(axis, (int, tuple, list)):
            raise TypeError(f"Expected `axis` to be an integer, tuple or list not: {axis!r}")
        numer = values_lib.map_local(self._extended, lambda v: primitives.reduce_sum(v, axis=axis), value)
        denom = values_lib.map_local(self._extended, lambda v: _element_count(v, axis), value)
        numer = self._extended._reduce(ReduceOp.SUM, numer)
        denom = self._extended._reduce(ReduceOp.SUM, denom)
        return math_ops.truediv(numer, basic_ops.cast(denom, numer.dtype))

    def experimental_local_results(self, value):
        """The values of this worker's replicas in `value`, as a tuple (`(value,)` for a plain value)."""
        return self._extended._local_results(value)

    def experimental_distribute_values_from_function(self, value_fn):
        """A `PerReplica` of `value_fn(ValueContext)` called once per replica."""
        return self._extended._experimental_distribute_values_from_function(value_fn)

    def gather(self, value, axis):
        """The replicas' values of `value` concatenated along `axis` (cross-replica context).

        Raises:
          NotImplementedError: an `IndexedSlices` (TensorFlow gathers dense tensors only).
        """
        require_cross_replica_or_default_context(
            self._extended, "tf.distribute.Strategy.gather method requires cross-replica context, use "
            "get_replica_context().all_gather() instead")
        if isinstance(value, IndexedSlices):
            raise NotImplementedError("gather does not support IndexedSlices")
        if not isinstance(value, values_lib.DistributedValues):
            return value
        return join_ops.concat(list(self._extended._local_results(value)), axis)

    def __copy__(self):
        raise RuntimeError("Must only deepcopy DistributionStrategy.")


def _check_axis(v, axis):
    shape = getattr(v, "shape", None)
    rank = None if shape is None else shape.rank
    for a in (axis if isinstance(axis, (tuple, list)) else [axis]):
        if rank is not None and isinstance(a, int) and not -rank <= a < rank:
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} dimensions.")


def _element_count(v, axis):
    """The number of elements `reduce_sum(v, axis)` adds per output (an int64 tensor)."""
    rank = v.shape.rank
    count = 1
    for a in (axis if isinstance(axis, (tuple, list)) else [axis]):
        if rank is None:
            count = count * basic_ops.shape(v, out_type=dtypes.int64)[a]
            continue
        if not -rank <= a < rank:
            raise ValueError(f"`axis` = {a!r} out of range for `value` with rank {rank}")
        dim = v.shape[a]
        count = count * (dim if dim is not None else basic_ops.shape(v, out_type=dtypes.int64)[a])
    return convert_to_tensor(count, dtype=dtypes.int64) if isinstance(count, int) else count


# -- StrategyExtended ---------------------------------------------------------------------------

_OWNERS = {}        # id of a plain variable made in a scope -> weak reference to its strategy


@tf_export("distribute.StrategyExtended")
class StrategyExtended:
    """A strategy's lower-level API: cross-replica reductions, variable updates, devices."""

    def __init__(self, container_strategy):
        self._container_strategy_weakref = weakref.ref(container_strategy)
        self._cross_device_ops = None

    def _container_strategy(self):
        return self._container_strategy_weakref()

    def _scope(self, strategy):
        def creator(next_creator, **kwargs):
            _require_strategy_scope_extended(self)
            return self._create_variable(next_creator, **kwargs)
        return _CurrentDistributionContext(strategy, creator)

    def _create_variable(self, next_creator, **kwargs):
        variable = next_creator(**kwargs)
        _OWNERS[variable._id] = self._container_strategy_weakref
        return variable

    def variable_created_in_scope(self, v):
        """Whether `v` was made inside this strategy's scope."""
        return _owner(v) is self._container_strategy()

    def colocate_vars_with(self, colocate_with_variable):
        """A scope in which new variables are placed like `colocate_with_variable` (an
        optimizer's slots like their variable)."""
        def creator(next_creator, **kwargs):
            _require_strategy_scope_extended(self)
            kwargs["colocate_with"] = colocate_with_variable
            return next_creator(**kwargs)
        _require_strategy_scope_extended(self)
        self._validate_colocate_with_variable(colocate_with_variable)
        return variable_creator_scope(creator)

    def _validate_colocate_with_variable(self, colocate_with_variable):
        pass

    # -- reductions ------------------------------------------------------------------------
    def reduce_to(self, reduce_op, value, destinations, options=None):
        """`value` (per-replica) reduced with `reduce_op` onto `destinations` (cross-replica context).

        Raises:
          ValueError: a `reduce_op` string that is no ReduceOp; a plain value with SUM
            on several replicas.
          AssertionError: another `reduce_op`, or a list of destinations (as TensorFlow).
        """
        require_cross_replica_or_default_context(self)
        reduce_op = _checked_reduce_op(reduce_op)
        assert not isinstance(destinations, (list, tuple)), "destinations must be one device, value or variable"
        return self._reduce_to(reduce_op, value, destinations, options)

    def batch_reduce_to(self, reduce_op, value_destination_pairs, options=None):
        """`reduce_to` of each (value, destinations) pair, in one batch."""
        require_cross_replica_or_default_context(self)
        reduce_op = _checked_reduce_op(reduce_op)
        return self._batch_reduce_to(reduce_op, list(value_destination_pairs), options)

    def _reduce_to(self, reduce_op, value, destinations, options):
        return value

    def _batch_reduce_to(self, reduce_op, value_destination_pairs, options):
        return [self.reduce_to(reduce_op, v, destinations=d, options=options) for v, d in value_destination_pairs]

    def _reduce(self, reduce_op, value):
        return self._local_results(self.reduce_to(reduce_op, value, self._reduce_destination()))[0]

    def _reduce_destination(self):
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    def _replica_ctx_all_reduce(self, reduce_op, value, options=None):
        """All-reduce of a nest of tensors from a replica context, through one merge_call."""
        replica_context = get_replica_context()
        flat = nest.flatten(value)
        reduced = replica_context.merge_call(
            lambda _, flat_value: self.batch_reduce_to(reduce_op, [(v, v) for v in flat_value], options),
            args=(flat,))
        return nest.pack_sequence_as(value, reduced)

    # -- updates ---------------------------------------------------------------------------
    def update(self, var, fn, args=(), kwargs=None, group=True):
        """Runs `fn(component, *args, **kwargs)` on each component of the distributed
        variable `var`, with each replica's share of mirrored `args` (in a replica
        context: through a merge_call).

        Returns:
          With `group`, the results regrouped (a `Mirrored` where they differ); without,
          a tuple of the per-component results.
        """
        kwargs = {} if kwargs is None else kwargs
        replica_context = get_replica_context()
        if replica_context is None or replica_context is _default_replica_context():
            with self._container_strategy().scope():
                return self._update(var, fn, args, kwargs, group)
        return replica_context.merge_call(lambda _, *a, **k: self.update(var, fn, a, k, group=group),
                                          args=args, kwargs=kwargs)

    def _update(self, var, fn, args, kwargs, group):
        with UpdateContext(0):
            result = fn(var, *args, **kwargs)
        return result if group else values_lib.map_plain(self._local_results, result)

    # -- replicas and values -----------------------------------------------------------------
    def call_for_each_replica(self, fn, args=(), kwargs=None):
        """`fn` run once per replica (what `Strategy.run` does inside the scope)."""
        require_cross_replica_or_default_context(self)
        return self._call_for_each_replica(fn, tuple(args), {} if kwargs is None else kwargs)

    def _call_for_each_replica(self, fn, args, kwargs):
        with ReplicaContext(self._container_strategy(), replica_id_in_sync_group=0):
            return fn(*args, **kwargs)

    def _experimental_distribute_values_from_function(self, value_fn):
        return value_fn(ValueContext())

    def _local_results(self, value):
        return values_lib.local_results(value, self._num_local_replicas)

    def value_container(self, value):
        """The distributed variable a component belongs to (`value` itself otherwise)."""
        return values_lib.value_container(value)

    def broadcast_to(self, tensor, destinations):
        """`tensor` copied to `destinations` (a `Mirrored` with one copy per device)."""
        return tensor

    @property
    def _num_replicas_in_sync(self):
        return 1

    @property
    def _num_local_replicas(self):
        return 1

    @property
    def worker_devices(self):
        """The devices the replicas of this worker run on, one per replica."""
        raise RuntimeError("worker_devices() method unsupported by default tf.distribute.Strategy.")

    @property
    def parameter_devices(self):
        """The devices variables are placed on."""
        raise RuntimeError("parameter_devices() method unsupported by default tf.distribute.Strategy.")

    @property
    def experimental_between_graph(self):
        return False

    @property
    def experimental_should_init(self):
        return True

    @property
    def should_checkpoint(self):
        return True

    @property
    def should_save_summary(self):
        return True

    def _in_multi_worker_mode(self):
        return False

    def _get_local_replica_id(self, replica_id_in_sync_group):
        return replica_id_in_sync_group


def _owner(v):
    """The strategy in whose scope the variable `v` was made (None: none)."""
    owner = getattr(v, "_distribute_strategy", None)
    if owner is None:
        ref = _OWNERS.get(v._id)
        owner = ref() if ref is not None else None
    return owner


def _checked_reduce_op(reduce_op):
    assert not isinstance(reduce_op, VariableAggregation), "pass a tf.distribute.ReduceOp, not a VariableAggregation"
    reduce_op = reduce_util.canonical(reduce_op)
    assert reduce_op in (ReduceOp.SUM, ReduceOp.MEAN), (
        f"Expected `reduce_op` to be a `tf.distribute.ReduceOp` (SUM or MEAN), not: {reduce_op!r}")
    return reduce_op


# -- ReplicaContext -------------------------------------------------------------------------------

@tf_export("distribute.ReplicaContext")
class ReplicaContext:
    """Where `strategy.run`'s function runs: one replica's view, with `merge_call` into the
    cross-replica context and `all_reduce` across the replicas.

    >>> import tapeflow as tf
    >>> ctx = tf.distribute.get_replica_context()        # the default context
    >>> int(ctx.replica_id_in_sync_group), ctx.num_replicas_in_sync
    (0, 1)
    """

    def __init__(self, strategy, replica_id_in_sync_group):
        if not (replica_id_in_sync_group is None or isinstance(replica_id_in_sync_group, (int, Tensor))):
            raise ValueError("replica_id_in_sync_group can only be an integer, a Tensor or None.")
        self._strategy = strategy
        self._thread_mode = ThreadMode(strategy, None, self)
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._local_replica_id = strategy.extended._get_local_replica_id(replica_id_in_sync_group)

    def __enter__(self):
        state.strategies.append(self._thread_mode)

    def __exit__(self, *exc):
        state.strategies.pop()

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Calls `merge_fn(strategy, *args, **kwargs)` once, in cross-replica context, with
        every replica's `args` grouped (`PerReplica` where they differ); each replica gets
        its own share of the result back.  With several replicas this is a barrier.

        Raises:
          RuntimeError: not called in this replica context.
        """
        require_replica_context(self)
        return self._merge_call(merge_fn, tuple(args), {} if kwargs is None else kwargs)

    def _merge_call(self, merge_fn, args, kwargs):
        state.strategies.append(ThreadMode(self._strategy, self._strategy, None))
        try:
            return merge_fn(self._strategy, *args, **kwargs)
        finally:
            state.strategies.pop()

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """This replica's number among all replicas (an int32 tensor)."""
        if isinstance(self._replica_id_in_sync_group, Tensor):
            return self._replica_id_in_sync_group
        return constant(self._replica_id_in_sync_group, dtypes.int32)

    @property
    def _replica_id(self):
        return self._local_replica_id

    @property
    def strategy(self):
        return self._strategy

    @property
    def devices(self):
        require_replica_context(self)
        return self._strategy.extended._replica_devices(self._replica_id)

    def all_reduce(self, reduce_op, value, options=None):
        """`value` (a nest of tensors and `IndexedSlices`) reduced across all replicas; every
        replica gets the result.  Its gradient is the same all-reduce of the gradient.

        Raises:
          ValueError: a `reduce_op` string that is no ReduceOp; shapes or dtypes that
            differ across replicas.
          AttributeError: a Python value (pass tensors, as TensorFlow requires).
          RuntimeError: not called in this replica context.
        """
        reduce_op = reduce_util.canonical(reduce_op)
        flat = nest.flatten(value)
        for v in flat:
            if self.num_replicas_in_sync > 1 and not isinstance(v, (Tensor, IndexedSlices)) and not hasattr(
                    v, "_as_tensor"):
                raise AttributeError(f"'{type(v).__name__}' object has no attribute 'dtype': ReplicaContext.all_reduce "
                                     "reduces tensors; convert Python values with tf.constant first.")

        def batch_all_reduce(strategy, *value_flat):
            # every replica passing one object (a captured tensor) is a PerReplica of copies of it
            count = strategy.extended._num_local_replicas
            if count > 1:
                value_flat = [v if isinstance(v, values_lib.DistributedValues) else values_lib.PerReplica([v] * count)
                              for v in value_flat]
            return strategy.extended.batch_reduce_to(reduce_op, [(v, v) for v in value_flat], options)

        if any(isinstance(v, IndexedSlices) for v in flat):
            return nest.pack_sequence_as(value, self.merge_call(batch_all_reduce, args=flat))
        return nest.pack_sequence_as(value, _all_reduce_with_gradient(self, reduce_op, batch_all_reduce, flat))

    def all_gather(self, value, axis, options=None):
        """`value` (a nest of tensors) of every replica, concatenated along `axis` in replica
        order; every replica gets the result.  The replicas' tensors may differ in size along
        `axis` only.  The gradient of a replica's input is its slice of the summed gradients.

        Raises:
          NotImplementedError: an `IndexedSlices` (TensorFlow gathers dense tensors only).
          RuntimeError: not called in this replica context.

        >>> import tapeflow as tf
        >>> s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        >>> def step():
        ...     ctx = tf.distribute.get_replica_context()
        ...     return ctx.all_gather(tf.fill([1, 2], ctx.replica_id_in_sync_group), axis=0)
        >>> s.experimental_local_results(s.run(step))[1].numpy().tolist()
        [[0, 0], [1, 1]]
        """
        require_replica_context(self)
        flat = nest.flatten(value)
        if any(isinstance(v, IndexedSlices) for v in flat):
            raise NotImplementedError("all_gather does not support IndexedSlices")
        return nest.pack_sequence_as(value, _all_gather_with_gradient(self, axis, flat))


def _all_gather_with_gradient(ctx, axis, flat):
    """Every replica's tensors of `flat` concatenated along `axis` in replica order; the gradient
    of a replica's input is its own slice of the sum over replicas of the gradients."""

    def gather(strategy, *values, axis=axis):
        count = strategy.extended._num_local_replicas
        if count > 1:
            values = [v if isinstance(v, values_lib.DistributedValues) else values_lib.PerReplica([v] * count)
                      for v in values]
        return [strategy.gather(v, axis) for v in values]

    def grad(*dys, variables=None):
        summed = ctx.all_reduce(ReduceOp.SUM, list(dys))
        sizes = ctx.merge_call(gather, args=[primitives.reshape(basic_ops.shape(x)[axis], [1]) for x in xs],
                               kwargs={"axis": 0})
        rid = ctx.replica_id_in_sync_group
        dxs = []
        for x, size, dy in zip(xs, sizes, summed):
            start = primitives.reduce_sum(size[:rid])      # the rows of the replicas before this one
            begin = array_ops.one_hot(axis % x.shape.rank, x.shape.rank, dtype=start.dtype) * start
            dxs.append(slicing_ops.slice(dy, begin, basic_ops.shape(x)))
        return dxs if variables is None else (dxs, [None] * len(variables))

    grad._variables_optional = True
    xs = [convert_to_tensor(v) for v in flat]

    @custom_gradient
    def grad_wrapper(*xs):
        return list(ctx.merge_call(gather, args=xs)), grad

    return grad_wrapper(*xs)


def _all_reduce_with_gradient(ctx, reduce_op, batch_all_reduce, flat):
    """The dense all-reduce, whose gradient all-reduces the gradients the same way."""

    def grad(*dys, variables=None):
        dxs = ctx.all_reduce(reduce_op, list(dys))
        # (in a TF1 graph the walk back from the results also meets the other replicas' reads)
        return dxs if variables is None else (dxs, [None] * len(variables))

    grad._variables_optional = True

    @custom_gradient
    def grad_wrapper(*xs):
        return list(ctx.merge_call(batch_all_reduce, args=xs)), grad

    return grad_wrapper(*[convert_to_tensor(v) for v in flat])


# -- the default strategy ---------------------------------------------------------------------------

class _DefaultDistributionStrategy(Strategy):
    """The strategy in effect outside every scope: one replica, reductions return their input."""

    _is_default = True


class _DefaultDistributionExtended(StrategyExtended):

    def _scope(self, strategy):
        def creator(next_creator, **kwargs):
            return next_creator(**kwargs)
        return _DefaultDistributionContext(strategy, creator)

    def variable_created_in_scope(self, v):
        return _owner(v) is None

    def colocate_vars_with(self, colocate_with_variable):
        _require_strategy_scope_extended(self)
        return variable_creator_scope(lambda next_creator, **kwargs: next_creator(**kwargs))

    def _replica_devices(self, replica_id):
        return ("/job:localhost/replica:0/task:0/device:CPU:0",)


class _DefaultDistributionContext(_CurrentDistributionContext):
    """The default strategy's scope: it may not be nested in another scope."""

    def __enter__(self):
        if has_strategy():
            raise RuntimeError("Must not nest tf.distribute.Strategy scopes.")
        state.strategies.append(self._mode)
        self._creator_scope.__enter__()
        return self._mode.strategy


class _DefaultReplicaContext(ReplicaContext):
    """The replica context outside every strategy: replica 0 of 1."""

    @property
    def replica_id_in_sync_group(self):
        return 0


_DEFAULTS = {}


def _default_strategy():
    strategy = _DEFAULTS.get("strategy")
    if strategy is None:
        strategy = _DEFAULTS["strategy"] = _DefaultDistributionStrategy.__new__(_DefaultDistributionStrategy)
        strategy._extended = _DefaultDistributionExtended(strategy)
    return strategy


def _default_replica_context():
    ctx = _DEFAULTS.get("replica_context")
    if ctx is None:
        ctx = _DEFAULTS["replica_context"] = _DefaultReplicaContext(_default_strategy(), replica_id_in_sync_group=0)
    return ctx


def _default_mode():
    mode = _DEFAULTS.get("mode")
    if mode is None:
        mode = _DEFAULTS["mode"] = ThreadMode(_default_strategy(), None, _default_replica_context())
    return mode
