"""`tf.distribute`: distribution strategies.

distribute_lib.py holds the strategy API (Strategy, StrategyExtended, ReplicaContext and
the default strategy); thread_mode.py the per-thread mode they run in (Note [thread
modes]), which the strategies and values.py read; values.py the distributed values and
variables; cross_device_ops.py the reductions; mirrored_strategy.py MirroredStrategy
(replicas in threads); one_device_strategy.py OneDeviceStrategy; reduce_util.py ReduceOp;
losses.py the losses averaged over the global batch (tf.nn.compute_average_loss).
"""

from tapeflow.distribute import reduce_util, thread_mode, distribute_lib, values, cross_device_ops  # noqa: F401,I001
from tapeflow.distribute import mirrored_strategy, one_device_strategy, losses  # noqa: F401
# MultiWorkerMirroredStrategy on MPI (mpi.py, mpi_ops.py), tf.distribute.cluster_resolver, .experimental
from tapeflow.distribute import collective_all_reduce_strategy, cluster_resolver, experimental  # noqa: F401
from tapeflow.framework.export import populate as _populate

_populate(__name__)
