"""`tf.config`: runtime settings.

The settings live in `framework/context.py` (`settings`), below every layer that
reads them; the functions here are the public way to change and read them.
Exports of `config.*` made elsewhere are imported before `populate` at the end.
"""

import operator
import sys
import types

import threadpoolctl

from tapeflow.framework.context import settings
from tapeflow.framework.device import PHYSICAL_DEVICES, ensure_initialized, runtime
from tapeflow.framework.export import populate as _populate, tf_export


# -- tf.function ---------------------------------------------------------------------------

@tf_export("config.run_functions_eagerly", "config.experimental_run_functions_eagerly")
def run_functions_eagerly(run_eagerly):
    """Makes every `tf.function` call its Python function directly (True) or trace it (False).

    A setting of the whole process, as TensorFlow's, for debugging: inside the
    function Python `print`, breakpoints and `.numpy()` then work, and `tf.print`
    prints at once.

    Args:
      run_eagerly: whether functions run eagerly (converted with `bool`).

    >>> import tapeflow as tf
    >>> @tf.function
    ... def f(x):
    ...     return x.numpy() * 2        # a NumPy value: only possible eagerly
    >>> tf.config.run_functions_eagerly(True)
    >>> f(tf.constant(2.0))
    np.float32(4.0)
    >>> tf.config.run_functions_eagerly(False)
    """
    settings.functions_run_eagerly = bool(run_eagerly)


@tf_export("config.functions_run_eagerly", "config.experimental_functions_run_eagerly")
def functions_run_eagerly():
    """Whether `tf.function`s run eagerly (`run_functions_eagerly`).

    Returns:
      A bool, False unless `run_functions_eagerly(True)` was called.

    >>> import tapeflow as tf
    >>> tf.config.functions_run_eagerly()
    False
    """
    return settings.functions_run_eagerly


# -- devices and threads -------------------------------------------------------------------
# (the distribution issue's part of tf.config: physical and logical devices, threading).
# The settings are the runtime's (framework/device.py); they can change until it starts
# (Note [runtime initialization] there), as TensorFlow's.

def _namespace(path, doc):
    """A namespace module `tf.<path>` without a file of its own, filled by its exports."""
    module = types.ModuleType(f"tapeflow.{path}", doc)
    sys.modules[module.__name__] = module
    return tf_export(path)(module)


_namespace("config.experimental", "`tf.config.experimental`: the older names of the device settings.")
_namespace("config.threading", "`tf.config.threading`: the sizes of the thread pools ops use.")


def _types(devices, device_type):
    return [d for d in devices if device_type is None or d.device_type == device_type]


def _check_physical(device):
    if device not in PHYSICAL_DEVICES:
        raise ValueError(f"Unrecognized device: {device!r}")


@tf_export("config.list_physical_devices", "config.experimental.list_physical_devices")
def list_physical_devices(device_type=None):
    """The devices of this machine: one CPU (tapeflow computes on the host with NumPy).

    Does not start the runtime.

    Args:
      device_type: "CPU", "GPU", ... to list only that type (case-sensitive), or None.

    Returns:
      A list of `tf.config.PhysicalDevice`.

    >>> import tapeflow as tf
    >>> tf.config.list_physical_devices()
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    >>> tf.config.list_physical_devices("GPU")
    []
    """
    return _types(PHYSICAL_DEVICES, device_type)


@tf_export("config.list_logical_devices", "config.experimental.list_logical_devices")
def list_logical_devices(device_type=None):
    """The devices ops can be placed on (`tf.device`): "/device:CPU:0", and more CPUs when the
    CPU was split by `set_logical_device_configuration`.  Starts the runtime.

    Args:
      device_type: "CPU", "GPU", ... to list only that type (case-sensitive), or None.

    Returns:
      A list of `tf.config.LogicalDevice`.

    Raises:
      NotFoundError: no CPU is left to start the runtime with (`set_visible_devices`).

    >>> import tapeflow as tf
    >>> [d.name for d in tf.config.list_logical_devices("CPU")][:1]
    ['/device:CPU:0']
    """
    ensure_initialized()
    return _types(runtime.logical, device_type)


@tf_export("config.get_visible_devices", "config.experimental.get_visible_devices")
def get_visible_devices(device_type=None):
    """The physical devices the runtime uses (all unless `set_visible_devices` hid some).

    Args:
      device_type: "CPU", "GPU", ... to list only that type, or None.

    Returns:
      A list of `tf.config.PhysicalDevice`.

    >>> import tapeflow as tf
    >>> tf.config.get_visible_devices("CPU")
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    """
    return _types(runtime.visible, device_type)


@tf_export("config.set_visible_devices", "config.experimental.set_visible_devices")
def set_visible_devices(devices, device_type=None):
    """Chooses the physical devices the runtime uses (before it starts).

    Args:
      devices: a `tf.config.PhysicalDevice` or a list of them.
      device_type: when given, only devices of this type are replaced; the others
        stay visible.

    Raises:
      ValueError: a device that is not one of `list_physical_devices`, or not of
        `device_type`.
      RuntimeError: the visible devices change after the runtime started.

    >>> import tapeflow as tf
    >>> tf.config.set_visible_devices(tf.config.list_physical_devices("CPU"), "CPU")   # as they are
    """
    devices = devices if isinstance(devices, list) else [devices]
    for d in devices:
        _check_physical(d)
        if device_type is not None and d.device_type != device_type:
            raise ValueError(f"Unrecognized device: {d!r}")
    visible = [d for d in runtime.visible if d.device_type != device_type] if device_type is not None else []
    visible += devices
    with runtime.lock:
        if visible == runtime.visible:
            return
        if runtime.initialized:
            raise RuntimeError("Visible devices cannot be modified after being initialized")
        runtime.visible = visible


@tf_export("config.get_logical_device_configuration", "config.experimental.get_virtual_device_configuration")
def get_logical_device_configuration(device):
    """How a physical device is split into logical devices.

    Args:
      device: a `tf.config.PhysicalDevice`.

    Returns:
      The list of `tf.config.LogicalDeviceConfiguration` set for it, or None.

    Raises:
      ValueError: `device` is not one of `list_physical_devices`.

    >>> import tapeflow as tf
    >>> cpu = tf.config.list_physical_devices("CPU")[0]
    >>> configs = tf.config.get_logical_device_configuration(cpu)   # None unless the CPU was split
    """
    _check_physical(device)
    return runtime.virtual.get(device)


@tf_export("config.set_logical_device_configuration", "config.experimental.set_virtual_device_configuration")
def set_logical_device_configuration(device, logical_devices):
    """Splits a physical device into logical devices, one per configuration, before the runtime
    starts.  Splitting the CPU into N gives the logical devices "/device:CPU:0" to
    "/device:CPU:N-1" (a `MirroredStrategy` can then run a replica on each); they all
    compute on the same CPU.  Run it first thing, as in TensorFlow::

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    Args:
      device: a `tf.config.PhysicalDevice`.
      logical_devices: a list of `tf.config.LogicalDeviceConfiguration` (all fields None
        for the CPU).

    Raises:
      ValueError: an unknown device, or a CPU configuration with a field set.
      RuntimeError: the configuration changes after the runtime started (the first
        tensor, `list_logical_devices`, `tf.device`...).

    >>> import tapeflow as tf
    >>> cpu = tf.config.list_physical_devices("CPU")[0]
    >>> _ = tf.constant(1.0)        # the runtime has started
    >>> tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 7)
    Traceback (most recent call last):
    RuntimeError: Virtual devices cannot be modified after being initialized
    """
    _check_physical(device)
    for config in logical_devices:
        for field, what in (("memory_limit", "memory limit"), ("experimental_priority", "experimental_priority"),
                            ("experimental_device_ordinal", "experimental_device_ordinal")):
            if getattr(config, field) is not None:
                raise ValueError(f"Setting {what} on CPU virtual devices is currently not supported")
    with runtime.lock:
        if runtime.virtual.get(device) == logical_devices:
            return
        if runtime.initialized:
            raise RuntimeError("Virtual devices cannot be modified after being initialized")
        runtime.virtual[device] = logical_devices


@tf_export("config.get_soft_device_placement")
def get_soft_device_placement():
    """Whether ops asked for a device that does not exist run on the CPU instead (True,
    the default) rather than raise InvalidArgumentError.

    >>> import tapeflow as tf
    >>> tf.config.get_soft_device_placement()
    True
    """
    return runtime.soft_placement


@tf_export("config.set_soft_device_placement")
def set_soft_device_placement(enabled):
    """Sets whether ops asked for a missing device run on the CPU (True) or raise (False);
    allowed at any time.

    Args:
      enabled: a bool.

    >>> import tapeflow as tf
    >>> tf.config.set_soft_device_placement(True)
    """
    runtime.soft_placement = bool(enabled)


def _thread_count(num_threads):
    count = operator.index(num_threads)     # TypeError for '2', 2.5
    if count < 0:
        raise ValueError(f"The number of threads must be 0 (the system default) or positive; got {count}.")
    return count


def _set_threads(field, what, num_threads):
    """Sets runtime.<field>, refused after the runtime started unless unchanged (as TensorFlow)."""
    value = None if num_threads is None else _thread_count(num_threads)
    with runtime.lock:
        if getattr(runtime, field) == value:
            return False
        if runtime.initialized:
            raise RuntimeError(f"{what} parallelism cannot be modified after initialization.")
        setattr(runtime, field, value)
        return True


@tf_export("config.threading.set_intra_op_parallelism_threads")
def set_intra_op_parallelism_threads(num_threads):
    """Sets how many threads one op may use: the limit of the BLAS and OpenMP thread pools
    that NumPy and SciPy compute with (through threadpoolctl).  0 restores the limits the
    pools had.  Allowed until the runtime starts (the first tensor), as in TensorFlow.

    Args:
      num_threads: an int, 0 for the system default.

    Raises:
      RuntimeError: after the runtime started, a number other than the one set
        before (TensorFlow's rule: even 0 when none was set).
      TypeError: not an integer.
      ValueError: a negative number.

    >>> import tapeflow as tf
    >>> _ = tf.constant(1.0)        # the runtime has started
    >>> tf.config.threading.set_intra_op_parallelism_threads(7)
    Traceback (most recent call last):
    RuntimeError: Intra op parallelism cannot be modified after initialization.
    """
    if not _set_threads("intra_op_threads", "Intra op", num_threads):
        return
    if runtime.intra_op_threads:
        limiter = threadpoolctl.threadpool_limits(limits=runtime.intra_op_threads)
        if runtime.thread_limits is None:       # the first limiter keeps the pools' own limits
            runtime.thread_limits = limiter
    elif runtime.thread_limits is not None:
        runtime.thread_limits.restore_original_limits()
        runtime.thread_limits = None


@tf_export("config.threading.get_intra_op_parallelism_threads")
def get_intra_op_parallelism_threads():
    """How many threads one op may use (`set_intra_op_parallelism_threads`); 0 for the
    system default.

    >>> import tapeflow as tf
    >>> tf.config.threading.get_intra_op_parallelism_threads()
    0
    """
    return runtime.intra_op_threads or 0


@tf_export("config.threading.set_inter_op_parallelism_threads")
def set_inter_op_parallelism_threads(num_threads):
    """Sets how many independent ops may run at once.  The number is recorded and read back,
    and checked as TensorFlow does, but has no effect: tapeflow runs ops one after another
    in the calling thread, and has no inter-op pool.

    Args:
      num_threads: an int, 0 for the system default.

    Raises:
      RuntimeError: after the runtime started, a number other than the one set
        before (even 0 when none was set).
      TypeError: not an integer.
      ValueError: a negative number.

    >>> import tapeflow as tf
    >>> _ = tf.constant(1.0)        # the runtime has started
    >>> tf.config.threading.set_inter_op_parallelism_threads(7)
    Traceback (most recent call last):
    RuntimeError: Inter op parallelism cannot be modified after initialization.
    """
    _set_threads("inter_op_threads", "Inter op", num_threads)


@tf_export("config.threading.get_inter_op_parallelism_threads")
def get_inter_op_parallelism_threads():
    """The number set by `set_inter_op_parallelism_threads`, 0 for the system default.

    >>> import tapeflow as tf
    >>> tf.config.threading.get_inter_op_parallelism_threads()
    0
    """
    return runtime.inter_op_threads or 0



_populate(__name__)
