"""Devices: the runtime's device list, `tf.DeviceSpec`, and `tf.device` scopes.

tapeflow computes everything on the host CPU with NumPy.  What it keeps of
TensorFlow's devices is their bookkeeping: the physical CPU, the logical
devices it is split into (`tf.config.set_logical_device_configuration`, the
devices a `MirroredStrategy` places its replicas on), and where each op was
asked to run (`tf.device`), recorded on tensors, variables and graph ops.

Note [runtime initialization]: TensorFlow fixes its device list when its
runtime starts, and refuses later changes to it (and to its thread settings)
with a RuntimeError.  A TF user sees the runtime start at the first eager
tensor (any op, constant or variable, and tracing a `tf.function`), at
`tf.config.list_logical_devices`, at entering `tf.device` eagerly and at
creating a strategy; building a TF1 graph does not start it.  tapeflow starts
its runtime at the same events (`ensure_initialized`) at no cost per op: until
it has started, each new tensor calls `_start_runtime` (the construction hook,
Note [construction hook] in tensor.py), which starts it unless a TF1 graph is
being built; starting removes the hook.

Note [recorded placement]: an eager tensor's `.device` is the canonical name
of the device in effect when it was made (`/job:localhost/replica:0/task:0/
device:CPU:1`).  Tensors keep a `_device` slot that stays unset on the default
device (the property falls back to CPU:0), so ops pay nothing for placement
outside device scopes: while some thread is inside an eager scope naming
another device, the construction hook is `_place`, which records the device of
this thread's innermost scope (`state.device`) on each new tensor, and the
last such scope to close removes it (`_set_construction_hook`).  As in
TensorFlow with soft placement (the
default), a device type or index that does not exist places on CPU:0; another
job, replica or task raises InvalidArgumentError when an op runs there, and so
does a missing device under `tf.config.set_soft_device_placement(False)`.
Graph ops instead record the device string requested by the graph's scopes
(`op_device`), merged but not canonicalized (`/device:CPU:1`), "" without
scope, as TensorFlow's `Operation.device`.

Note [graph device scopes]: a graph's device scopes are kept per thread
(`state.graph_devices`), so that replicas tracing one function in several
threads (MirroredStrategy) each see their own.  A function graph starts with
none: as in TensorFlow, ops in a `tf.function` carry only the devices named
inside it, and the function runs where it is called.  Inside a function,
`tf.device` also sets the eager device, where the variables it creates live.
"""

import collections
import contextlib
import threading

from tapeflow.framework import tensor
from tapeflow.framework.context import executing_eagerly_outside_functions, state
from tapeflow.framework.errors import InvalidArgumentError, NotFoundError
from tapeflow.framework.export import tf_export

DEFAULT_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_HOST = ("localhost", 0, 0)          # job, replica, task of this process's devices


# -- DeviceSpec --------------------------------------------------------------------------------

_SHORT_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})   # types also written "/GPU:0"
_PARSED = {}        # spec string -> its five fields (device specs repeat: parse each once)


def _parse(spec):
    """The fields (job, replica, task, device_type, device_index) of a device string."""
    fields = _PARSED.get(spec)
    if fields is not None:
        return fields
    named = {"job": None, "replica": None, "task": None}
    device_type = index = None
    for part in (spec or "").split("/"):
        items = part.split(":")
        head, count = items[0], len(items)
        if count == 2 and head in named:
            named[head] = items[1]
        elif count <= 2 and head.upper() in _SHORT_TYPES or count == 3 and head == "device":
            if device_type is not None:
                raise ValueError(f"Multiple device types are not allowed while parsing the device spec: {spec}.")
            if head == "device":                     # "/device:GPU:1"
                device_type, index = items[1], items[2]
            else:                                    # "/gpu:1", "/GPU"
                device_type, index = head.upper(), items[1] if count == 2 else "*"
            index = None if index == "*" else index
        elif head:
            raise ValueError(f"Unknown attribute '{head}' is encountered while parsing the device spec: "
                             f"'{spec}'.")
    job, replica, task = named["job"], named["replica"], named["task"]
    fields = _PARSED[spec] = (job, replica, task, device_type, index)
    return fields


def _as_int(value, field):
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"invalid literal for int() with base 10: {value!r} (the device {field} must be "
                         "an integer)") from None


def _spec_string(job, replica, task, device_type, index):
    parts = [] if job is None else [f"/job:{job}"]
    if replica is not None:
        parts.append(f"/replica:{replica}")
    if task is not None:
        parts.append(f"/task:{task}")
    if device_type is not None:
        parts.append(f"/device:{device_type}:{'*' if index is None else index}")
    return "".join(parts)


@tf_export("DeviceSpec")
class DeviceSpec:
    """A device name, possibly partial: job, replica, task, device type and index.

    Fields left None are unspecified; `make_merged_spec` fills them from another
    spec, as nested `tf.device` scopes do.  Device types "cpu" and "gpu" are
    upper-cased.

    Args:
      job: the job name (str), or None.
      replica: the replica index (int), or None.
      task: the task index (int), or None.
      device_type: "CPU", "GPU", ..., or None.
      device_index: the device's index (int), or None for any.

    Raises:
      ValueError: an index that is not an integer.

    >>> import tapeflow as tf
    >>> spec = tf.DeviceSpec.from_string("/job:worker/task:1/cpu:0")
    >>> spec.job, spec.task, spec.device_type, spec.device_index
    ('worker', 1, 'CPU', 0)
    >>> spec.to_string()
    '/job:worker/task:1/device:CPU:0'
    >>> tf.DeviceSpec(job="ps").make_merged_spec(tf.DeviceSpec(device_type="GPU")).to_string()
    '/job:ps/device:GPU:*'
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index", "_string")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self._job = None if job is None else str(job)
        self._replica = _as_int(replica, "replica")
        self._task = _as_int(task, "task")
        self._device_type = device_type.upper() if device_type in ("cpu", "gpu") else (
            None if device_type is None else str(device_type))
        self._device_index = _as_int(device_index, "index")
        self._string = None

    @classmethod
    def from_string(cls, spec):
        """The spec of a device string such as "/job:w/replica:0/task:1/device:GPU:2" or "/CPU:0"
        (every part optional; None or "" is the empty spec).

        Raises:
          ValueError: an unknown part, two device types, or an index that is not an integer.
        """
        return cls(*_parse(spec))

    def parse_from_string(self, spec):
        """The spec of `spec` (TF2 specs are immutable: `self` is unchanged)."""
        return self.from_string(spec)

    def to_string(self):
        """The device string, "/job:<name>/replica:<i>/task:<i>/device:<type>:<i>" with the
        unspecified parts left out ("" for the empty spec; an unspecified index is "*")."""
        if self._string is None:
            self._string = _spec_string(self._job, self._replica, self._task, self._device_type,
                                        self._device_index)
        return self._string

    def make_merged_spec(self, dev):
        """A new spec with the fields `dev` specifies, and this spec's for the others."""
        mine = (self.job, self.replica, self.task, self.device_type, self.device_index)
        theirs = (dev.job, dev.replica, dev.task, dev.device_type, dev.device_index)
        return self.__class__(*[t if t is not None else m for m, t in zip(mine, theirs, strict=True)])

    def replace(self, **kwargs):
        """A new spec with the fields given as keyword arguments replaced (None unsets one)."""
        fields = dict(job=self.job, replica=self.replica, task=self.task, device_type=self.device_type,
                      device_index=self.device_index)
        fields.update(kwargs)
        return self.__class__(**fields)

    job = property(lambda self: self._job)
    replica = property(lambda self: self._replica)
    task = property(lambda self: self._task)
    device_type = property(lambda self: self._device_type)
    device_index = property(lambda self: self._device_index)

    def __eq__(self, other):
        return isinstance(other, self.__class__) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return (f"<DeviceSpec(job={self.job}, replica={self.replica}, task={self.task}, "
                f"device_type={self.device_type}, device_index={self.device_index})>")


def _setter(field, convert):
    def set_field(self, value):
        setattr(self, field, convert(value))
        self._string = None
    return set_field


@tf_export("compat.v1.DeviceSpec")
class DeviceSpecV1(DeviceSpec):
    """TF1's `DeviceSpec`: the same, but mutable (fields can be set; `merge_from` and
    `parse_from_string` change it in place).

    >>> import tapeflow as tf
    >>> spec = tf.compat.v1.DeviceSpec(job="ps")
    >>> spec.device_type = "gpu"
    >>> spec.merge_from(tf.DeviceSpec(task=1))
    >>> spec.to_string()
    '/job:ps/task:1/device:GPU:*'
    """

    __slots__ = ()

    job = DeviceSpec.job.setter(_setter("_job", lambda v: None if v is None else str(v)))
    replica = DeviceSpec.replica.setter(_setter("_replica", lambda v: _as_int(v, "replica")))
    task = DeviceSpec.task.setter(_setter("_task", lambda v: _as_int(v, "task")))
    device_type = DeviceSpec.device_type.setter(
        _setter("_device_type", lambda v: DeviceSpec(device_type=v).device_type))
    device_index = DeviceSpec.device_index.setter(_setter("_device_index", lambda v: _as_int(v, "index")))

    def parse_from_string(self, spec):
        """Sets every field from the device string `spec`; returns this spec."""
        self.job, self.replica, self.task, self.device_type, self.device_index = _parse(spec)
        return self

    def merge_from(self, dev):
        """Sets the fields that `dev` specifies from it."""
        merged = self.make_merged_spec(dev)
        self.job, self.replica, self.task = merged.job, merged.replica, merged.task
        self.device_type, self.device_index = merged.device_type, merged.device_index


def _as_spec(name):
    """The DeviceSpec of a device string, DeviceSpec or LogicalDevice."""
    if isinstance(name, DeviceSpec):
        return name
    if isinstance(name, LogicalDevice):
        name = name.name
    return DeviceSpec.from_string(name)


def canonical_name(name):
    """The full name of the device `name` (a string, DeviceSpec or LogicalDevice), its
    unspecified parts taken from this process's default device.

    >>> from tapeflow.framework.device import canonical_name
    >>> canonical_name("/cpu:1")
    '/job:localhost/replica:0/task:0/device:CPU:1'
    """
    return _DEFAULT_SPEC.make_merged_spec(_as_spec(name)).to_string()


# -- the runtime's devices -----------------------------------------------------------------------

@tf_export("config.PhysicalDevice")
class PhysicalDevice(collections.namedtuple("PhysicalDevice", ["name", "device_type"])):
    """A device of the machine (`tf.config.list_physical_devices`): its name and type.

    >>> import tapeflow as tf
    >>> tf.config.list_physical_devices("CPU")
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    """

    __slots__ = ()


@tf_export("config.LogicalDevice")
class LogicalDevice(collections.namedtuple("LogicalDevice", ["name", "device_type"])):
    """A device ops are placed on (`tf.config.list_logical_devices`): its name and type.

    >>> import tapeflow as tf
    >>> tf.config.list_logical_devices("CPU")[0]
    LogicalDevice(name='/device:CPU:0', device_type='CPU')
    """

    __slots__ = ()


@tf_export("config.LogicalDeviceConfiguration", "config.experimental.VirtualDeviceConfiguration")
class LogicalDeviceConfiguration(collections.namedtuple(
        "LogicalDeviceConfiguration", ["memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """One logical device to make of a physical one (`set_logical_device_configuration`).

    All fields must stay None for the CPU (they configure GPU memory in TensorFlow).

    >>> import tapeflow as tf
    >>> tf.config.LogicalDeviceConfiguration()
    LogicalDeviceConfiguration(memory_limit=None, experimental_priority=None, experimental_device_ordinal=None)
    """

    __slots__ = ()

    def __new__(cls, memory_limit=None, experimental_priority=None, experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority, experimental_device_ordinal)


PHYSICAL_DEVICES = (PhysicalDevice("/physical_device:CPU:0", "CPU"),)
_DEFAULT_SPEC = DeviceSpec.from_string(DEFAULT_DEVICE)


class _Runtime:
    """The process's device settings (TensorFlow's eager context), changed through tf.config
    (config.py) until the runtime starts (Note [runtime initialization])."""

    def __init__(self):
        self.lock = threading.RLock()
        self.visible = list(PHYSICAL_DEVICES)  # tf.config.set_visible_devices
        self.virtual = {}                      # PhysicalDevice -> [LogicalDeviceConfiguration]
        self.logical = None                    # [LogicalDevice], fixed when the runtime starts
        self.canonical = ()                    # their full names
        self.soft_placement = True             # tf.config.set_soft_device_placement
        self.intra_op_threads = None           # tf.config.threading: None until set
        self.inter_op_threads = None
        self.thread_limits = None              # the threadpoolctl limiter holding the pools' own limits

    @property
    def initialized(self):
        return self.logical is not None


runtime = _Runtime()


def ensure_initialized():
    """Starts the runtime (once): fixes the logical devices, after which tf.config refuses
    to change them (Note [runtime initialization]).

    Raises:
      NotFoundError: the CPU was hidden (`set_visible_devices`) or split into no devices.
    """
    if runtime.logical is not None:
        return
    with runtime.lock:
        if runtime.logical is not None:
            return
        cpu = PHYSICAL_DEVICES[0]
        configs = runtime.virtual.get(cpu)
        count = 0 if cpu not in runtime.visible else 1 if configs is None else len(configs)
        if count == 0:
            raise NotFoundError(None, None, "No CPU devices are available in this process")
        logical = [LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(count)]
        runtime.canonical = tuple(canonical_name(d.name) for d in logical)
        runtime.logical = logical
        _set_construction_hook()


def _start_runtime(t):
    """The construction hook until the runtime starts (Note [runtime initialization])."""
    if executing_eagerly_outside_functions():
        ensure_initialized()


def _set_construction_hook():
    """Gives new tensors the hook this module needs now, if any (Note [runtime initialization],
    Note [recorded placement]); the caller holds `runtime.lock` (or imports this module)."""
    tensor.set_construction_hook(_start_runtime if runtime.logical is None else _place if _placing[0] else None)


# -- eager placement -----------------------------------------------------------------------------

class _Placement:
    """An eager device scope's device: the merged full name, its spec, and where ops run
    (None: CPU:0; a canonical name; or the (class, message) of the error ops raise)."""

    __slots__ = ("name", "spec", "placed")

    def __init__(self, name, spec, placed):
        self.name, self.spec, self.placed = name, spec, placed


_PLACEMENTS = {}     # (outer name, requested name, soft placement) -> _Placement
_placing = [0]       # eager scopes placing off CPU:0, in all threads (Note [recorded placement])


def _placement(outer, name):
    """The _Placement of scope `name` (a string or None) inside `outer` (a _Placement or None)."""
    key = (None if outer is None else outer.name, name, runtime.soft_placement)
    found = _PLACEMENTS.get(key)
    if found is not None:
        return found
    if name is None:
        found = _Placement("", _as_spec(""), None)
    else:
        base = _DEFAULT_SPEC if outer is None or not outer.name else outer.spec
        spec = base.make_merged_spec(DeviceSpec.from_string(name))
        found = _Placement(spec.to_string(), spec, _resolve(spec))
    _PLACEMENTS[key] = found
    return found


def _resolve(spec):
    """Where ops run under the full `spec`: None for CPU:0, a logical device's canonical
    name, or the error (class, message) TensorFlow's placer gives."""
    name = spec.to_string()
    if (spec.job, spec.replica, spec.task) != _HOST:
        return InvalidArgumentError, f"{name} unknown device."
    if name in runtime.canonical:
        return None if name == DEFAULT_DEVICE else name
    if runtime.soft_placement:
        return None
    return InvalidArgumentError, (
        f"Could not satisfy device specification '{name}'. enable_soft_placement=0. Supported device types "
        f"[CPU]. All available devices [{', '.join(runtime.canonical)}].")


def _place(t):
    """The construction hook while a scope places off CPU:0 (Note [recorded placement])."""
    placement = state.device
    if placement is not None and placement.placed is not None and not t._is_symbolic:
        placed = placement.placed
        if type(placed) is not str:
            raise placed[0](None, None, placed[1])
        t._device = placed


_set_construction_hook()       # _start_runtime, until the runtime starts


def current_device():
    """The canonical name of the eager device in effect, None for the default (CPU:0).

    Raises:
      InvalidArgumentError: the device does not exist (Note [recorded placement]).
    """
    placement = state.device
    if placement is None or placement.placed is None:
        return None
    placed = placement.placed
    if type(placed) is not str:
        raise placed[0](None, None, placed[1])
    return placed


def _count_placing(step):
    with runtime.lock:
        _placing[0] += step
        if _placing[0] == (1 if step == 1 else 0):       # the first to open, the last to close
            _set_construction_hook()


class _EagerDeviceScope:
    """`tf.device` executing eagerly: sets this thread's eager device (`state.device`)."""

    __slots__ = ("_name", "_stack")

    def __init__(self, name):
        self._name = name
        self._stack = []

    def __enter__(self):
        name = self._name
        if isinstance(name, LogicalDevice):
            name = name.name
        elif isinstance(name, DeviceSpec):
            name = name.to_string()
        elif name is not None and not isinstance(name, str):
            raise ValueError(f"Expecting a string device name. Got {type(name)}({name})")
        outer = state.device
        inner = _placement(outer, name)
        state.device = inner
        if inner.placed is not None:
            _count_placing(1)
        self._stack.append((outer, inner))

    def __exit__(self, *exc_info):
        outer, inner = self._stack[-1]
        if state.device is not inner:
            raise RuntimeError("Exiting device scope without proper scope nesting")
        del self._stack[-1]
        state.device = outer
        if inner.placed is not None:
            _count_placing(-1)


# -- graph placement -------------------------------------------------------------------------

class _GraphDevice:
    """One device scope of a graph: a spec to merge, a function of the op, or None (clears)."""

    __slots__ = ("spec", "function", "clears")

    def __init__(self, device_name_or_function):
        self.spec = self.function = None
        self.clears = device_name_or_function is None
        if isinstance(device_name_or_function, (DeviceSpec, LogicalDevice, str)):
            self.spec = _as_spec(device_name_or_function)
        elif callable(device_name_or_function):
            self.function = device_name_or_function
        elif not self.clears:
            raise AttributeError(
                f"A device must be a device name string, a DeviceSpec, a function of the op or None; got "
                f"{type(device_name_or_function).__name__} {device_name_or_function!r}.")


@contextlib.contextmanager
def graph_scope(graph, device_name_or_function):
    """`Graph.device`: ops made in `graph` inside are placed on the device (Note [graph device scopes]).

    Raises:
      ValueError: a malformed device string.
      RuntimeError: scopes not exited in the order entered.
    """
    entry = _GraphDevice(device_name_or_function)
    stack = state.graph_devices.setdefault(graph, [])
    stack.append(entry)
    try:
        yield
    finally:
        if not stack or stack[-1] is not entry:
            raise RuntimeError("Exiting device scope without proper scope nesting.")
        stack.pop()
        if not stack:
            del state.graph_devices[graph]


def op_device(graph, op):
    """The device string of `op`, just made in `graph` in this thread's device scopes.

    The innermost scope decides first; each scope further out fills the fields the
    device lacks so far (a function scope replaces it with its result, given the op
    with the device so far), and a None scope ends the walk, as TensorFlow's graphs.
    """
    device = ""
    for entry in reversed(state.graph_devices[graph]):
        if entry.clears:
            break
        if entry.function is None:
            device = entry.spec.make_merged_spec(DeviceSpec.from_string(device)).to_string()
            continue
        op._device = device
        result = entry.function(op)
        if isinstance(result, DeviceSpec):
            device = result.to_string()
        elif isinstance(result, str):
            device = result
        else:
            raise TypeError(f"The device function {entry.function!r} returned {result!r} for op '{op.name}'; "
                            "it must return a device name string or a DeviceSpec.")
    return device


@contextlib.contextmanager
def _function_scope(graph, device_name):
    """`tf.device` in a function graph: the graph's device and the eager one (TF's combined scope)."""
    with graph_scope(graph, device_name), _EagerDeviceScope(device_name):
        yield


# -- tf.device ----------------------------------------------------------------------------------

@tf_export("device")
def device(device_name):
    """A context in which ops are placed on the device `device_name`.

    Executing eagerly, tensors made inside record the full name of the device
    (`.device`; a device that does not exist places on CPU:0 under soft
    placement, the default).  While a graph is built, its ops record the
    requested device string.  Nested scopes merge: the fields an inner name
    specifies override the outer ones, the others are kept; None clears the
    scopes around it.  Computation stays on the CPU.

    Args:
      device_name: a device string ("/CPU:1", "/job:localhost/device:CPU:0"), a
        `tf.DeviceSpec`, a `tf.config.LogicalDevice`, or None.

    Returns:
      A context manager.

    Raises:
      RuntimeError: `device_name` is a function (see `tf.compat.v1.device`).
      ValueError: on entering, a malformed device string.

    >>> import tapeflow as tf
    >>> with tf.device("/CPU:0"):
    ...     x = tf.constant(1.0) + 1.0
    >>> x.device
    '/job:localhost/replica:0/task:0/device:CPU:0'
    >>> g = tf.Graph()
    >>> with g.as_default(), tf.device("/job:worker"), tf.device("/cpu:1"):
    ...     c = tf.constant(1.0)
    >>> c.device
    '/job:worker/device:CPU:1'
    """
    if callable(device_name):
        raise RuntimeError("tf.device does not support functions.")
    return device_v1(device_name)


@tf_export("compat.v1.device")
def device_v1(device_name_or_function):
    """TF1's `tf.device`: as `tf.device`, and in a graph also a function of the Operation
    returning its device string (`Graph.device`).

    Args:
      device_name_or_function: a device string, `tf.DeviceSpec`, function or None.

    Returns:
      A context manager.

    Raises:
      RuntimeError: a function while executing eagerly.

    >>> import tapeflow as tf
    >>> g = tf.Graph()
    >>> with g.as_default(), tf.compat.v1.device(lambda op: "/cpu:0" if op.type == "Const" else "/cpu:1"):
    ...     c = tf.constant(1.0)
    ...     d = c * 2.0
    >>> c.device, d.device
    ('/cpu:0', '/cpu:1')
    """
    if not state.graphs:
        if callable(device_name_or_function):
            raise RuntimeError("tf.device does not support functions when eager execution is enabled.")
        ensure_initialized()
        return _EagerDeviceScope(device_name_or_function)
    graph = state.graphs[-1]
    if executing_eagerly_outside_functions() and not callable(device_name_or_function):
        ensure_initialized()                    # as tracing a function does
        return _function_scope(graph, device_name_or_function)
    return graph_scope(graph, device_name_or_function)
