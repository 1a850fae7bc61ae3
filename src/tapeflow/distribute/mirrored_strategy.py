"""`MirroredStrategy`: one replica per local device, each running in its own thread, with
variables mirrored on every device and reductions summed in process.

Note [replica threads]: `run(fn)` starts one thread per replica.  Each starts from a
copy of its caller's per-thread state (framework/context.py: default graphs, name scope,
strategy modes, variable creators...) except what TensorFlow keeps per thread and does
not hand to replica threads: tapes (a GradientTape opened outside `run` records nothing
of the replicas), control dependencies and device scopes.  It then enters its
ReplicaContext, its device and, for replicas after the first, the name scope
"replica_<i>/".  The threads meet at each `merge_call`: a replica posts its function
and arguments and waits; when every replica has posted (or finished), the calling
thread groups their arguments (`PerReplica` where they differ), calls the function
once in cross-replica context, and hands each replica its share of the result.

Executing eagerly, the replicas run concurrently between merge_calls, so NumPy's
kernels (which release the GIL) overlap; TensorFlow runs them one at a time.  While a
`tf.function` is traced, they run one at a time in replica order ("lock-step"), so the
one graph they build gets its ops in a deterministic order; when that graph runs, the
replicas' blocks of ops run at once again (Note [parallel lanes] in graph/lanes.py).  The graph's per-thread
parts that live on the graph object (its name stack and control dependencies) are
swapped in and out as the turn passes (`_GraphView`).

Faults: an exception in a replica (or in a merge function) stops the run: replicas
waiting at a merge_call are released with `_RequestedStop`, the others stop at their
next merge_call, and `run` raises the first exception as it was raised.  Replicas that
make different numbers of merge_calls raise TensorFlow's RuntimeError.  Nothing is
left behind: the next `run` starts afresh.
"""

import threading
import weakref

from tapeflow.framework import device as device_lib
from tapeflow.framework.context import eager_mode, state, tapes_paused
from tapeflow.framework.export import tf_export
from tapeflow.ops import array_ops
from tapeflow.ops.variable_creation import VariableAggregation, VariableSynchronization, _sync_aggregation_trainable
from tapeflow.graph.autograph import conversion
from tapeflow.graph.function import Function
from tapeflow.graph.scopes import name_scope
from tapeflow.distribute import values as values_lib
from tapeflow.distribute.cross_device_ops import CrossDeviceOps, reduce_non_distributed_value
from tapeflow.distribute.distribute_lib import ReplicaContext, Strategy, StrategyExtended, ValueContext
from tapeflow.distribute.reduce_util import ReduceOp
from tapeflow.distribute.thread_mode import UpdateContext


@tf_export("distribute.MirroredStrategy")
class MirroredStrategy(Strategy):
    """Synchronous training on the devices of this process: one replica per device, each in
    its own thread (Note [replica threads]); variables made in `scope()` are mirrored and
    kept equal, gradients are summed across the replicas.

    Args:
      devices: device names ("/cpu:0", "/cpu:1"); all logical CPU devices by default
        (split the CPU with `tf.config.set_logical_device_configuration` first).
      cross_device_ops: a `tf.distribute.CrossDeviceOps` (all reduce in process).

    Raises:
      AssertionError: a device given twice (as TensorFlow).
      TypeError: `cross_device_ops` is not a CrossDeviceOps.

    >>> import tapeflow as tf
    >>> strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    >>> with strategy.scope():
    ...     v = tf.Variable(1.0)
    >>> def step():
    ...     ctx = tf.distribute.get_replica_context()
    ...     return ctx.all_reduce("SUM", v * 2.0)
    >>> float(strategy.reduce("MEAN", strategy.run(step), axis=None))
    2.0
    """

    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__(MirroredExtended(self, devices=devices, cross_device_ops=cross_device_ops))


class MirroredExtended(StrategyExtended):
    """`MirroredStrategy.extended`: devices, mirrored variables, reductions, replica threads.

    Kept for subclasses (MultiWorkerMirroredStrategy): `_devices` (canonical names of the
    local devices), `_num_workers`, `_task_id`, `_replica_offset` (global id of the first
    local replica), `_cross_device_ops`, `_broadcast_initial_value`.
    """

    def __init__(self, container_strategy, devices=None, cross_device_ops=None):
        super().__init__(container_strategy)
        device_lib.ensure_initialized()
        if not devices:
            devices = [d.name for d in device_lib.runtime.logical if d.device_type == "CPU"]
        devices = tuple(device_lib.canonical_name(d) for d in devices)
        assert len(set(devices)) == len(devices), f"No duplicates allowed in `devices` argument: {devices}"
        if cross_device_ops is None:
            cross_device_ops = CrossDeviceOps()
        elif not isinstance(cross_device_ops, CrossDeviceOps):
            raise TypeError(f"`cross_device_ops` must be a tf.distribute.CrossDeviceOps (ReductionToOneDevice, "
                            f"NcclAllReduce, ...); got {cross_device_ops!r}.")
        self._devices = devices
        self._cross_device_ops = cross_device_ops
        self._num_workers = 1
        self._task_id = 0
        self._replica_offset = 0
        self._functions = weakref.WeakKeyDictionary()      # tf.function given to run -> its replicated version

    # -- devices and replicas ------------------------------------------------------------------
    @property
    def _num_replicas_in_sync(self):
        return len(self._devices) * self._num_workers

    @property
    def _num_local_replicas(self):
        return len(self._devices)

    @property
    def worker_devices(self):
        return self._devices

    @property
    def parameter_devices(self):
        return self._devices

    @property
    def worker_devices_by_replica(self):
        return [[d] for d in self._devices]

    def _replica_devices(self, local_replica_id):
        return [[self._devices[local_replica_id]]]

    def _get_local_replica_id(self, replica_id_in_sync_group):
        return replica_id_in_sync_group - self._replica_offset

    def _get_replica_id_in_sync_group(self, local_replica_id):
        return local_replica_id + self._replica_offset

    def _in_multi_worker_mode(self):
        return False

    def _reduce_destination(self):
        return device_lib.current_device() or device_lib.DEFAULT_DEVICE

    # -- variables -----------------------------------------------------------------------------
    def _broadcast_initial_value(self, value):
        """The initial value every component starts from (identity; MPI: rank 0's value)."""
        return value

    def _validate_colocate_with_variable(self, colocate_with_variable):
        if not isinstance(colocate_with_variable, values_lib.DistributedVariable) or (
                colocate_with_variable._distribute_strategy.extended is not self):
            raise ValueError("`colocate_vars_with` must only be passed a variable created in this "
                             f"tf.distribute.Strategy.scope(), not: {colocate_with_variable!r}")

    def _create_variable(self, next_creator, **kwargs):
        """A mirrored (or ON_READ: sync-on-read) variable: one component per device, all made
        from one initial value (Note [distributed variables] in values.py)."""
        colocate_with = kwargs.pop("colocate_with", None)
        devices = self._devices if colocate_with is None else colocate_with._devices
        name = kwargs.get("name")
        synchronization, aggregation, trainable = _sync_aggregation_trainable(
            kwargs.get("synchronization"), kwargs.get("aggregation"), kwargs.get("trainable"), name)
        if synchronization is VariableSynchronization.NONE:
            raise ValueError("`NONE` variable synchronization mode is not supported with tf.distribute strategy. "
                             f"Please change the `synchronization` for variable: {name}")
        if synchronization is VariableSynchronization.AUTO:
            synchronization = VariableSynchronization.ON_WRITE
        kwargs["synchronization"], kwargs["aggregation"] = synchronization, aggregation
        if "trainable" in kwargs:
            kwargs["trainable"] = trainable
        components = []
        with tapes_paused():
            initial = kwargs["initial_value"]
            if not state.graphs:
                with eager_mode():
                    initial = self._broadcast_initial_value(initial() if callable(initial) else initial)
            for i, device in enumerate(devices):
                with device_lib.device(device):
                    if i == 0:
                        components.append(next_creator(**dict(kwargs, initial_value=initial)))
                        continue
                    primary = components[0]
                    with _top_level_names():
                        components.append(next_creator(**dict(
                            kwargs, initial_value=initial if not state.graphs else _read_primary(primary),
                            name=f"{primary._name[:-2]}/replica_{i}")))
        if aggregation is VariableAggregation.MEAN and not components[0].dtype.is_floating:
            raise ValueError("creating distributed tf.Variable with aggregation=MEAN and a non-floating dtype is not "
                             "supported, please use a different aggregation or dtype")
        return values_lib.VARIABLE_CLASSES[synchronization](self._container_strategy(), components, aggregation)

    # -- reductions and updates ---------------------------------------------------------------
    def _reduce_to(self, reduce_op, value, destinations, options):
        if _is_mirrored(value):
            assert reduce_op is ReduceOp.MEAN, "A mirrored value can only be reduced with MEAN (its value)."
            return value

        def reduce_one(v):
            if not isinstance(v, values_lib.DistributedValues) and self._num_workers == 1:
                return reduce_non_distributed_value(reduce_op, v, destinations, self._num_replicas_in_sync)
            return self._cross_device_ops.reduce(reduce_op, v, destinations)

        return values_lib.map_plain(reduce_one, value)

    def _batch_reduce_to(self, reduce_op, value_destination_pairs, options):
        return self._cross_device_ops.batch_reduce(reduce_op, value_destination_pairs, options)

    def broadcast_to(self, tensor, destinations):
        if isinstance(tensor, (float, int)):
            return tensor
        if destinations is None:
            destinations = values_lib.Mirrored([_Placed(d) for d in self._devices])
        return self._cross_device_ops.broadcast(tensor, destinations)

    def _update(self, var, fn, args, kwargs, group):
        assert isinstance(var, values_lib.DistributedVariable), (
            f"{var!r} was not created in this strategy's scope(): create it inside `strategy.scope()` to update it "
            "through the strategy.")
        updates = []
        for i, component in enumerate(var._values):
            with device_lib.device(component.device), UpdateContext(i), _graph_name_scope(f"update_{i}"):
                updates.append(fn(component, *values_lib.select_replica(i, args),
                                  **values_lib.select_replica(i, kwargs)))
        return values_lib.update_regroup(self, updates, group)

    def _experimental_distribute_values_from_function(self, value_fn):
        per_replica = [value_fn(ValueContext(self._replica_offset + i, self._num_replicas_in_sync))
                       for i in range(len(self._devices))]
        return values_lib.regroup(per_replica, always_wrap=True)

    def value_container(self, value):
        return values_lib.value_container(value)

    # -- running replicas ------------------------------------------------------------------------
    def _call_for_each_replica(self, fn, args, kwargs):
        if isinstance(fn, Function):        # one trace holding every replica, as TensorFlow
            replicated = self._functions.get(fn)
            if replicated is None:
                python_function = fn.python_function

                def replicated_function(*a, **k):
                    return _run_replicas(self, python_function, a, k)

                replicated = self._functions[fn] = Function(
                    replicated_function, autograph=fn._autograph, reduce_retracing=fn._reduce_retracing,
                    name=fn._name)
            return replicated(*args, **kwargs)
        return _run_replicas(self, fn, args, kwargs)


def _is_mirrored(value):
    return isinstance(value, (values_lib.Mirrored, values_lib.MirroredVariable))


class _Placed:
    """A destination given by its device name only (broadcast to the strategy's devices)."""

    def __init__(self, device):
        self.device = device


def _read_primary(primary):
    """The initial value of a component after the first while a graph is built: the first's
    (its initial value in a TF1 graph, where it is not initialized yet)."""
    if primary._graph_info is not None:
        return lambda: array_ops.identity(primary._graph_info.initial_value)
    return lambda: primary.value()


class _top_level_names:
    """Names made inside are not prefixed by the current name scope (a component after the
    first is named "<first component's name>/replica_<i>")."""

    def __enter__(self):
        self._eager = state.scopes.get("name_scope", "")
        state.scopes["name_scope"] = ""
        self._graph = state.graphs[-1] if state.graphs else None
        if self._graph is not None:
            self._stack, self._graph._name_stack = self._graph._name_stack, ""

    def __exit__(self, *exc):
        state.scopes["name_scope"] = self._eager
        if self._graph is not None:
            self._graph._name_stack = self._stack


class _graph_name_scope:
    """`name_scope(name)` while a graph is built, nothing eagerly."""

    def __init__(self, name):
        self._scope = name_scope(name) if state.graphs else None

    def __enter__(self):
        if self._scope is not None:
            self._scope.__enter__()

    def __exit__(self, *exc):
        if self._scope is not None:
            self._scope.__exit__(*exc)


# -- replica threads (Note [replica threads]) -------------------------------------------------------

class _RequestedStop(Exception):
    """Raised in a replica waiting at a merge_call when the run stops (another replica failed)."""


class _MirroredReplicaContext(ReplicaContext):
    """A replica's context in a `MirroredStrategy` run: its merge_call is the barrier."""

    def _merge_call(self, fn, args, kwargs):
        thread = threading.current_thread()
        if not isinstance(thread, _ReplicaThread):
            raise RuntimeError("`merge_call` must be called in the thread `strategy.run` started for the replica.")
        current = state.graphs[-1] if state.graphs else None
        if current is not thread.graph:
            raise RuntimeError(
                "`merge_call` called while defining a new graph or a tf.function. This can often happen if the "
                "function `fn` passed to `strategy.run()` contains a nested `@tf.function`, and the nested "
                "`@tf.function` contains a synchronization point, such as aggregating gradients (e.g, "
                "optimizer.apply_gradients), or if the function `fn` uses a control flow statement which contains "
                "a synchronization point in the body. Such behaviors are not yet supported. Instead, please avoid "
                "nested `tf.function`s or control flow statements that may potentially cross a synchronization "
                "boundary, for example, wrap the `fn` passed to `strategy.run` or the entire `strategy.run` inside "
                "a `tf.function` or move the control flow out of `fn`.")
        thread.merge_fn, thread.merge_args, thread.merge_kwargs = fn, args, kwargs
        if current is not None:
            thread.merge_name_scope = current._name_stack
            thread.merge_control_inputs = current._control_inputs_now()
        else:
            thread.merge_name_scope = state.scopes.get("name_scope", "")
            thread.merge_control_inputs = []
        thread.run_state.pause(thread)
        if not thread.run_state.wait_turn(thread):
            raise _RequestedStop()
        result, thread.merge_result = thread.merge_result, None
        return result


class _GraphView:
    """The per-thread parts of graphs that live on the graph objects (Note [replica threads])."""

    def __init__(self, graphs):
        self.values = [(g, g._name_stack, g._control_inputs) for g in graphs]

    def restore(self):
        for g, names, control in self.values:
            g._name_stack, g._control_inputs = names, control


class _RunState:
    """One `run`: the turns of the replica threads, the stop flag and the first error."""

    def __init__(self, lockstep):
        self.cond = threading.Condition()
        self.lockstep = lockstep
        self.stopped = False
        self.error = None
        self.shared_variables = []        # variables replica 0 made inside fn, for the others

    def give_turn(self, threads):
        with self.cond:
            for t in threads:
                t.has_turn = True
            self.cond.notify_all()
            self.cond.wait_for(lambda: not any(t.has_turn for t in threads))

    def wait_turn(self, thread):
        """Waits for the thread's turn; False when the run stopped."""
        with self.cond:
            self.cond.wait_for(lambda: thread.has_turn or self.stopped)
            if self.stopped:
                return False
        if self.lockstep:
            thread.main_view = _GraphView(thread.graphs)
            thread.own_view.restore()
        return True

    def pause(self, thread):
        if self.lockstep and thread.main_view is not None:
            thread.own_view = _GraphView(thread.graphs)
            thread.main_view.restore()
            thread.main_view = None
        with self.cond:
            thread.has_turn = False
            self.cond.notify_all()

    def fail(self, error):
        with self.cond:
            if self.error is None:
                self.error = error
            self.stopped = True
            self.cond.notify_all()

    def stop(self):
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


class _ReplicaThread(threading.Thread):
    """Runs `fn` for one replica (Note [replica threads])."""

    def __init__(self, run_state, extended, index, fn, args, kwargs, parent_state):
        super().__init__(name=f"replica_{index}", daemon=True)
        self.run_state, self.extended, self.index = run_state, extended, index
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.parent_state = parent_state
        self.graphs = tuple(parent_state["graphs"])
        self.graph = self.graphs[-1] if self.graphs else None
        self.eager_replica = not self.graphs       # Note [late-bound reads] in values.py
        self.has_turn = False
        self.done = False
        self.result = None
        self.merge_fn = self.merge_args = self.merge_kwargs = self.merge_result = None
        self.merge_name_scope, self.merge_control_inputs = "", []
        self.main_view = None
        self.own_view = _GraphView(())
        if self.graphs:
            names = self.graph._name_stack
            self.own_view.values = [(g, g._name_stack, []) for g in self.graphs]   # no control dependencies
            self.replica_scope = (names + "/" if names else "") + (f"replica_{index}/" if index else "")
        else:
            scope = parent_state["scopes"].get("name_scope", "")
            self.replica_scope = scope + (f"replica_{index}/" if index else "")
        self.variables_made = 0

    def run(self):
        run_state = self.run_state
        try:
            if not run_state.wait_turn(self):
                return
            self._inherit_state()
            extended = self.extended
            strategy = extended._container_strategy()
            context = _MirroredReplicaContext(strategy, extended._get_replica_id_in_sync_group(self.index))
            with context, device_lib.device(extended._devices[self.index]), name_scope(self.replica_scope):
                self.result = self.fn(*self.args, **self.kwargs)
            self.done = True
        except _RequestedStop:
            pass
        except BaseException as e:      # noqa: BLE001 -- re-raised by the thread that called run
            run_state.fail(e)
        finally:
            run_state.pause(self)

    def _inherit_state(self):
        for name, value in self.parent_state.items():
            setattr(state, name, list(value) if type(value) is list else dict(value) if type(value) is dict else value)
        state.tapes, state.variable_watchers, state.vmaps = [], [], []
        state.device, state.graph_devices = None, {}
        if "sessions" in state.scopes:
            state.scopes["sessions"] = list(state.scopes["sessions"])
        state.scopes.pop("global_strategy_scope", None)
        state.variable_creators.append(self._shared_variable_creator)

    def _shared_variable_creator(self, next_creator, **kwargs):
        """Replica 0 makes the variables `fn` makes; the other replicas get the same ones, in order."""
        shared = self.run_state.shared_variables
        if self.index == 0:
            variable = next_creator(**kwargs)
            with self.run_state.cond:
                shared.append(variable)
                self.run_state.cond.notify_all()
            return variable
        k, self.variables_made = self.variables_made, self.variables_made + 1
        first = self.run_state.first_thread
        with self.run_state.cond:
            self.run_state.cond.wait_for(lambda: len(shared) > k or not first.has_turn or self.run_state.stopped)
            if len(shared) > k:
                return shared[k]
        if self.run_state.stopped:
            raise _RequestedStop()
        raise RuntimeError(f"Replica {self.index} created more variables than replica 0 in `strategy.run`: "
                           "every replica must create the same variables, in the same order.")


def _parent_state():
    return {name: value for name, value in vars(state).items()}


def _run_replicas(extended, fn, args, kwargs):
    """`fn` run by one thread per local replica (Note [replica threads]); returns the regrouped results."""
    lockstep = bool(state.graphs)
    if lockstep:
        fn = conversion.converted_callable(fn, warn=False)
    run_state = _RunState(lockstep)
    parent = _parent_state()
    threads = [_ReplicaThread(run_state, extended, i, fn, values_lib.select_replica(i, args),
                              values_lib.select_replica(i, kwargs), parent) for i in range(len(extended._devices))]
    run_state.first_thread = threads[0]
    for t in threads:
        t.start()
    finished = False
    try:
        while True:
            if lockstep:
                for t in threads:
                    run_state.give_turn([t])
                    if run_state.stopped:
                        break
            else:
                run_state.give_turn(threads)
            if run_state.error is not None:
                raise run_state.error
            done = [t.done for t in threads]
            if all(done):
                break
            if any(done):
                raise RuntimeError("Some replicas made a different number of replica_context().merge_call() calls.")
            _merge(extended, threads)
        finished = True
    finally:
        run_state.stop()
        for t in threads:
            if finished or not t.has_turn:      # (a replica still computing is left to stop by itself)
                t.join()
    return values_lib.regroup(tuple(t.result for t in threads))


def _merge(extended, threads):
    """The merge_call the replicas are waiting at: one call in cross-replica context."""
    strategy = extended._container_strategy()
    first = threads[0]
    merge_args = values_lib.regroup(tuple(t.merge_args for t in threads))
    merge_kwargs = values_lib.regroup(tuple(t.merge_kwargs for t in threads))
    control = [op for t in threads for op in t.merge_control_inputs]
    graph = state.graphs[-1] if state.graphs else None
    if graph is not None:
        saved = graph._name_stack
        graph._name_stack = first.merge_name_scope
        try:
            with graph.control_dependencies(control):
                result = first.merge_fn(strategy, *merge_args, **merge_kwargs)
        finally:
            graph._name_stack = saved
    else:
        saved = state.scopes.get("name_scope", "")
        state.scopes["name_scope"] = first.merge_name_scope
        try:
            result = first.merge_fn(strategy, *merge_args, **merge_kwargs)
        finally:
            state.scopes["name_scope"] = saved
    for i, t in enumerate(threads):
        t.merge_result = values_lib.select_replica(i, result)
