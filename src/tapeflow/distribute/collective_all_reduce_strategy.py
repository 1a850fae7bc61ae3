"""`MultiWorkerMirroredStrategy`: data parallelism across processes, one replica per MPI worker.

Launched as `mpiexec -n N python train.py`, each process is a worker running
one replica on its CPU (a `MirroredStrategy` of one local device whose
reductions continue across the workers): `num_replicas_in_sync` is N,
`replica_id_in_sync_group` the MPI rank, variables made in `scope()` start
from worker 0's initial value (broadcast), and every cross-replica reduction
(`reduce`, `ReplicaContext.all_reduce`, `merge_call`'s `reduce_to` /
`batch_reduce_to`, the optimizer's gradient all-reduce, SUM/MEAN variable
updates) sums locally and then across the workers with the MPI collectives of
distribute/mpi_ops.py: dense tensors fused into one all-reduce, `IndexedSlices`
all-gathered and kept sparse.  Eagerly and inside `tf.function` alike (Note
[collectives in graphs]).  Without MPI (no launcher, or mpi4py missing) the
strategy is one worker, as TensorFlow's without TF_CONFIG.  Faults end the
whole job (Note [MPI faults] in distribute/mpi.py): the strategy installs the
exception hooks when it has several workers.
"""

import enum

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import join_ops
from tapeflow.ops.core import primitives
from tapeflow.distribute import cluster_resolver as cluster_resolver_lib, mpi, mpi_ops
from tapeflow.distribute.cross_device_ops import CrossDeviceOps, divide_by_n
from tapeflow.distribute.distribute_lib import Strategy, require_cross_replica_or_default_context
from tapeflow.distribute.mirrored_strategy import MirroredExtended, MirroredStrategy
from tapeflow.distribute.reduce_util import ReduceOp


@tf_export("distribute.experimental.CommunicationImplementation",
           "distribute.experimental.CollectiveCommunication")
class CommunicationImplementation(enum.Enum):
    """The preferred collective implementation (a hint; tapeflow always uses MPI)."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


@tf_export("distribute.experimental.CommunicationOptions")
class CommunicationOptions:
    """Options of the cross-worker collectives.

    Args:
      bytes_per_pack: the most bytes of gradients sent in one MPI all-reduce (0: as
        many as fit, Note [MPI collectives] in distribute/mpi.py).
      timeout_seconds: how long a collective may wait for the other workers before
        failing (None or 0: forever); past it, TimeoutError (TensorFlow's
        DeadlineExceededError), and the strategy can run no more collectives.
      implementation: a `CommunicationImplementation` (or its name); a hint only.

    Raises:
      ValueError: a negative `bytes_per_pack`; an `implementation` of another type.

    >>> CommunicationOptions(bytes_per_pack=1024)
    Options(bytes_per_pack=1024,timeout_seconds=None, implementation=CommunicationImplementation.AUTO)
    """

    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"Argument `bytes_per_pack` must be >=0, Received {bytes_per_pack}.")
        if isinstance(implementation, str):
            implementation = CommunicationImplementation(implementation.upper())
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError("Argument `implementation` must be instance of "
                             "`tf.distribute.experimental.CommunicationImplementation`.")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def merge(self, options):
        """These options, overridden by the non-default values of `options`."""
        merged = CommunicationOptions(self.bytes_per_pack, self.timeout_seconds, self.implementation)
        if options is None:
            return merged
        if options.bytes_per_pack != 0:
            merged.bytes_per_pack = options.bytes_per_pack
        if options.timeout_seconds is not None:
            merged.timeout_seconds = options.timeout_seconds
        if options.implementation is not CommunicationImplementation.AUTO:
            merged.implementation = options.implementation
        return merged

    def __str__(self):
        return (f"Options(bytes_per_pack={self.bytes_per_pack},timeout_seconds={self.timeout_seconds}, "
                f"implementation={self.implementation})")

    __repr__ = __str__


class CollectiveAllReduce(CrossDeviceOps):
    """The reductions of `MultiWorkerMirroredStrategy`: this worker's replicas summed in process
    (`_reduce_local`), then across the workers by MPI: all the dense values of a batch in one
    fused all-reduce, all its `IndexedSlices` in one all-gather (kept sparse); MEAN divides by
    every worker's replicas."""

    def __init__(self, group, num_replicas_in_sync, options=None):
        self._group = group
        self._num_replicas_in_sync = num_replicas_in_sync
        self._options = CommunicationOptions() if options is None else options

    @property
    def _num_between_graph_workers(self):
        return self._group.size

    def batch_reduce_implementation(self, reduce_op, value_destination_pairs, options):
        options = self._options.merge(options)
        timeout = options.timeout_seconds or None
        if self._group.timeout != timeout:
            self._group.timeout = timeout
        count = len(value_destination_pairs)
        local, names = [], []
        for position, (value, destinations) in enumerate(value_destination_pairs):
            name = _name_of(value.values[0], destinations)
            label = f"value {position}" + (f" of the {count} in the batch" if count > 1 else "")
            local.append(self._reduce_local(reduce_op, value.values, label + (f" ('{name}')" if name else "")))
            names.append(name)
        reduced = list(local)
        dense = [i for i, v in enumerate(local) if not isinstance(v, IndexedSlices)]
        sparse = [i for i, v in enumerate(local) if isinstance(v, IndexedSlices)]
        if dense:
            summed = mpi_ops.all_reduce([local[i] for i in dense], self._group, names=[names[i] for i in dense],
                                        pack_bytes=options.bytes_per_pack)
            for i, s in zip(dense, summed, strict=True):
                reduced[i] = s
        if sparse:
            parts = mpi_ops.all_gather([t for i in sparse for t in (local[i].indices, local[i].values)], self._group,
                                       names=[f"{names[i] or f'value {i}'}.{part}" for i in sparse
                                              for part in ("indices", "values")])
            for k, i in enumerate(sparse):
                reduced[i] = IndexedSlices(parts[2 * k + 1], parts[2 * k], local[i].dense_shape)
        results = []
        for value, (_, destinations) in zip(reduced, value_destination_pairs, strict=True):
            if reduce_op is ReduceOp.MEAN:
                value = divide_by_n(value, self._num_replicas_in_sync)
            results.append(self.broadcast_implementation(value, destinations))
        return results


def _name_of(value, destinations):
    """A name for messages: the variable the value reduces onto, else a graph tensor's name."""
    for candidate in (destinations, value):
        if getattr(candidate, "_is_variable", False):
            name = getattr(candidate, "name", None)
            if name:
                return name
    if getattr(value, "_is_symbolic", False):
        return value.name
    return None


@tf_export("distribute.MultiWorkerMirroredStrategy")
class MultiWorkerMirroredStrategy(MirroredStrategy):
    """Synchronous training across processes launched by MPI: one replica per process, on its
    CPU; variables start from worker 0's values and gradients are all-reduced across workers.

    Run the training script under an MPI launcher, e.g. `mpiexec -n 2 python train.py`
    (`pip install "tapeflow[mpi]"` installs mpi4py and MPICH).  Without a launcher the
    strategy is a single worker.

    Args:
      cluster_resolver: None (the cluster comes from MPI), or a `ClusterResolver` that
        must describe the same cluster: as many "worker" (and "chief") tasks as MPI
        processes, this process's task_id its rank.
      communication_options: a `tf.distribute.experimental.CommunicationOptions`.

    Raises:
      ValueError: a cluster resolver that disagrees with MPI; options of another type.
      ImportError: launched with several processes but without mpi4py.

    >>> import tapeflow as tf
    >>> strategy = tf.distribute.MultiWorkerMirroredStrategy()      # no launcher: one worker
    >>> strategy.num_replicas_in_sync, strategy.cluster_resolver.task_type
    (1, None)
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        Strategy.__init__(self, CollectiveAllReduceExtended(self, cluster_resolver, communication_options))

    @property
    def cluster_resolver(self):
        """The cluster: `task_type` ("worker"), `task_id` (the MPI rank), `cluster_spec()`."""
        return self.extended._cluster_resolver

    def gather(self, value, axis):
        """The values of every replica of every worker, concatenated along `axis` in replica
        order (cross-replica context)."""
        require_cross_replica_or_default_context(
            self.extended, "tf.distribute.Strategy.gather method requires cross-replica context, use "
            "get_replica_context().all_gather() instead")
        if isinstance(value, IndexedSlices):
            raise NotImplementedError("gather does not support IndexedSlices")
        local = [convert_to_tensor(v) for v in self.extended._local_results(value)]
        joined = local[0] if len(local) == 1 else join_ops.concat(local, axis)
        return _gather_along(joined, axis, self.extended._group)


def _gather_along(tensor, axis, group):
    """`tensor` of every worker concatenated along `axis` (MPI all-gather along axis 0)."""
    rank = tensor.shape.rank
    if rank is None or rank == 0:
        raise ValueError(f"gather needs values of known rank >= 1; got shape {tensor.shape}.")
    axis = axis % rank
    if axis == 0:
        return mpi_ops.all_gather([tensor], group)[0]
    order = [axis] + [d for d in range(rank) if d != axis]
    moved = mpi_ops.all_gather([primitives.transpose(tensor, order)], group)[0]
    return primitives.transpose(moved, list(np.argsort(order)))


@tf_export("distribute.experimental.MultiWorkerMirroredStrategy")
class _CollectiveAllReduceStrategyExperimental(MultiWorkerMirroredStrategy):
    """TensorFlow's older name, with the collective implementation as first argument."""

    def __init__(self, communication=CommunicationImplementation.AUTO, cluster_resolver=None,
                 communication_options=None):
        if communication_options is None:
            communication_options = CommunicationOptions(implementation=communication)
        super().__init__(cluster_resolver, communication_options)


class CollectiveAllReduceExtended(MirroredExtended):
    """`MultiWorkerMirroredStrategy.extended`: a `MirroredExtended` of one local replica (this
    process's CPU) whose reductions are `CollectiveAllReduce` across the MPI workers."""

    def __init__(self, container_strategy, cluster_resolver=None, communication_options=None):
        if communication_options is None:
            communication_options = CommunicationOptions()
        elif not isinstance(communication_options, CommunicationOptions):
            raise ValueError("communication_options must be a tf.distribute.experimental.CommunicationOptions; got "
                             f"{communication_options!r}.")
        group = mpi.world()
        resolver = cluster_resolver_lib.MPIClusterResolver(group, mpi.launched())
        if cluster_resolver is not None:
            _check_resolver(cluster_resolver, group)
            resolver = cluster_resolver
        super().__init__(container_strategy, devices=["/cpu:0"],
                         cross_device_ops=CollectiveAllReduce(group, group.size, communication_options))
        self._group = group
        self._communication_options = communication_options
        self._cluster_resolver = resolver
        self._num_workers = group.size
        self._task_id = group.rank
        self._replica_offset = group.rank * len(self._devices)
        group.timeout = communication_options.timeout_seconds or None
        group.install_fault_hooks()

    def _in_multi_worker_mode(self):
        return self._num_workers > 1

    @property
    def experimental_between_graph(self):
        return True

    @property
    def should_checkpoint(self):
        return self._task_id == 0

    @property
    def should_save_summary(self):
        return self._task_id == 0

    def _broadcast_initial_value(self, value, dtype=None):
        """Worker 0's `value` on every worker, a collective: eagerly the same kind of value (a
        tensor, an array, Python numbers); while a graph is built, a tensor (of `dtype` for a
        Python value) broadcast when the graph runs: no collective at trace time, where workers
        may trace differently."""
        if self._group.size == 1:
            return value
        if state.graphs or isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
            return mpi_ops.broadcast([convert_to_tensor(value, dtype=dtype)], self._group)[0]
        array = np.asarray(value)
        if array.dtype.kind not in "biufc":
            return mpi_ops.broadcast([convert_to_tensor(value, dtype=dtype)], self._group)[0]
        out = self._group.broadcast([array])[0]
        return out if isinstance(value, (np.ndarray, np.generic)) else out.tolist()   # Python values stay Python

    def broadcast_to(self, tensor, destinations):
        """Worker 0's `tensor` (the job's first replica's) on every local device: a collective,
        so that ONLY_FIRST_REPLICA updates keep mirrored variables equal on every worker
        (TensorFlow takes each worker's own first replica, and they drift apart)."""
        dtype = getattr(destinations, "dtype", None) if isinstance(tensor, (bool, int, float, complex)) else None
        return super().broadcast_to(self._broadcast_initial_value(tensor, dtype), destinations)

    def _create_variable(self, next_creator, **kwargs):
        if state.graphs and self._group.size > 1:       # made inside a tf.function: broadcast in its graph
            initial = kwargs["initial_value"]
            dtype = kwargs.get("dtype")

            def broadcast_initial():
                value = initial() if callable(initial) else initial
                return mpi_ops.broadcast([convert_to_tensor(value, dtype=dtype)], self._group)[0]

            kwargs["initial_value"] = broadcast_initial
        return super()._create_variable(next_creator, **kwargs)


def _check_resolver(resolver, group):
    """ValueError unless a user's cluster resolver describes the MPI job this process is in:
    as many chief and worker tasks as processes, this one's index (chief first) its rank."""
    if not isinstance(resolver, cluster_resolver_lib.ClusterResolver):
        raise ValueError(f"cluster_resolver must be a tf.distribute.cluster_resolver.ClusterResolver; got "
                         f"{resolver!r}.")
    spec = resolver.cluster_spec().as_dict()
    chiefs, workers = len(spec.get("chief", ())), len(spec.get("worker", ()))
    if resolver.task_type is None:
        index = 0
    else:
        index = (resolver.task_id or 0) + (chiefs if resolver.task_type == "worker" else 0)
    if max(chiefs + workers, 1) != group.size or index != group.rank:
        raise ValueError(
            f"The cluster resolver describes {chiefs + workers} tasks (this one: {resolver.task_type!r} "
            f"{resolver.task_id!r}), but MPI started {group.size} processes and this is rank {group.rank}. tapeflow's "
            "MultiWorkerMirroredStrategy takes its cluster from MPI: pass no cluster_resolver, or one that matches.")
