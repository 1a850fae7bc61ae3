"""`OneDeviceStrategy`: one replica, on one device, run in the calling thread."""

from tapeflow.framework import device as device_lib
from tapeflow.framework.export import tf_export
from tapeflow.distribute import values as values_lib
from tapeflow.distribute.distribute_lib import ReplicaContext, Strategy, StrategyExtended
from tapeflow.distribute.thread_mode import UpdateContext


@tf_export("distribute.OneDeviceStrategy")
class OneDeviceStrategy(Strategy):
    """Places variables and computation on one device; `run` calls its function once, in
    a replica context, and reductions return their input.  Code written for several
    replicas runs unchanged on one.

    Args:
      device: the device name ("/cpu:0").

    >>> import tapeflow as tf
    >>> strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    >>> with strategy.scope():
    ...     v = tf.Variable(1.0)
    >>> float(strategy.run(lambda: v + 1.0))
    2.0
    >>> strategy.extended.worker_devices
    ('/job:localhost/replica:0/task:0/device:CPU:0',)
    """

    def __init__(self, device):
        super().__init__(OneDeviceExtended(self, device))


class OneDeviceExtended(StrategyExtended):
    """`OneDeviceStrategy.extended`."""

    def __init__(self, container_strategy, device):
        super().__init__(container_strategy)
        device_lib.ensure_initialized()
        self._device = device_lib.canonical_name(device)

    def _create_variable(self, next_creator, **kwargs):
        kwargs.pop("colocate_with", None)
        with device_lib.device(self._device):
            return super()._create_variable(next_creator, **kwargs)

    def _call_for_each_replica(self, fn, args, kwargs):
        with device_lib.device(self._device), ReplicaContext(self._container_strategy(), replica_id_in_sync_group=0):
            return fn(*args, **kwargs)

    def _update(self, var, fn, args, kwargs, group):
        with device_lib.device(self._device), UpdateContext(0):
            result = fn(var, *args, **kwargs)
        return result if group else values_lib.map_plain(self._local_results, result)

    def _replica_devices(self, local_replica_id):
        return (self._device,)

    def _reduce_destination(self):
        return self._device

    @property
    def worker_devices(self):
        return (self._device,)

    @property
    def parameter_devices(self):
        return (self._device,)
