"""Devices and runtime settings: tf.config's devices and threads, tf.device, tf.DeviceSpec.

What depends on the runtime not having started (logical devices, thread settings)
runs in fresh processes: `_fresh` runs code in processes forked from one that has
imported tapeflow but made no tensor, `_script` runs a whole program under
tapeflow or TensorFlow.  TensorFlow 2.21 is the oracle where it can run.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import tapeflow as tf
from tapeflow.framework import device as device_lib
from tapeflow.framework.tensor import Tensor

DEFAULT = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "OPENBLAS_NUM_THREADS": "2"}


def _script(code, lib="tapeflow", timeout=180):
    """Runs `code` (with `tf` imported as `lib`) in a new process; returns its stdout lines."""
    program = f"import {lib} as tf\n" + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=timeout, env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


_FORKING_DRIVER = """
import json, os, sys, traceback
import tapeflow as tf
cases = json.loads(sys.stdin.read())
for code in cases:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            exec(code, {"tf": tf})
        except BaseException as e:
            print(json.dumps(["raised", type(e).__name__, str(e)]))
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
"""


def _fresh(*cases):
    """Runs each piece of code in its own process where tapeflow was imported but the runtime
    has not started; each prints one JSON value.  Returns their values in order."""
    done = subprocess.run([sys.executable, "-c", _FORKING_DRIVER],
                          input=json.dumps([textwrap.dedent(c) for c in cases]),
                          capture_output=True, text=True, timeout=180, env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == len(cases), done.stdout + done.stderr[-3000:]
    return [json.loads(line) for line in lines]


# -- tf.DeviceSpec ----------------------------------------------------------------------------

SPEC_STRINGS = ["", "/job:worker/replica:1/task:2/device:GPU:3", "/cpu:0", "/CPU:0", "CPU:1", "/device:cpu:1",
                "/GPU", "/gpu:*", "/device:CPU:*", "/job:ps", "/task:3", "/replica:2/device:CPU:*", "job:a/CPU:1",
                "/device:XLA_CPU:0", "/device:tpu:0", "/tpu:0", "/epu", "/job:localhost/replica:0/task:0/device:CPU:1",
                "//job:a//", "/job:"]


@pytest.mark.parametrize("spec", SPEC_STRINGS)
def test_device_spec_parses_as_tensorflow(spec):
    tf_ = pytest.importorskip("tensorflow")
    ours, theirs = tf.DeviceSpec.from_string(spec), tf_.DeviceSpec.from_string(spec)
    fields = ("job", "replica", "task", "device_type", "device_index")
    assert [getattr(ours, f) for f in fields] == [getattr(theirs, f) for f in fields]
    assert ours.to_string() == theirs.to_string()
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("spec", ["foo", "/CPU:0/GPU:1", "/task:x", "/CPU:x", "/job:a:b", "/device:CPU"])
def test_bad_device_specs_raise_value_error_as_tensorflow(spec):
    tf_ = pytest.importorskip("tensorflow")
    with pytest.raises(ValueError):
        tf_.DeviceSpec.from_string(spec)
    with pytest.raises(ValueError):
        tf.DeviceSpec.from_string(spec)


def test_device_spec_messages_name_the_bad_part():
    with pytest.raises(ValueError, match="Unknown attribute 'foo' is encountered while parsing the device spec: 'foo'"):
        tf.DeviceSpec.from_string("foo")
    with pytest.raises(ValueError, match="Multiple device types are not allowed"):
        tf.DeviceSpec.from_string("/CPU:0/GPU:1")
    with pytest.raises(ValueError, match="task must be an integer"):
        tf.DeviceSpec(task="x")


def test_device_spec_construct_merge_replace():
    spec = tf.DeviceSpec(job=0, device_type="gpu")
    assert (spec.job, spec.device_type, spec.device_index) == ("0", "GPU", None)
    assert spec.to_string() == "/job:0/device:GPU:*"
    merged = tf.DeviceSpec(job="ps", task=1, device_type="CPU", device_index=0).make_merged_spec(
        tf.DeviceSpec(device_type="GPU", task=None))
    assert merged.to_string() == "/job:ps/task:1/device:GPU:0"
    assert merged.replace(job=None, device_index=2).to_string() == "/task:1/device:GPU:2"
    assert tf.DeviceSpec().to_string() == "" and tf.DeviceSpec.from_string(None).to_string() == ""
    same = tf.DeviceSpec.from_string("/CPU:0")
    assert same == tf.DeviceSpec.from_string("/device:CPU:0") and hash(same) == hash("/device:CPU:0")
    assert same != "/device:CPU:0"
    assert same.parse_from_string("/GPU:1").to_string() == "/device:GPU:1" and same.to_string() == "/device:CPU:0"
    with pytest.raises(AttributeError):
        same.job = "w"                      # TF2 specs are immutable


def test_device_spec_v1_is_mutable():
    spec = tf.compat.v1.DeviceSpec(job="a")
    assert spec is not tf.DeviceSpec and isinstance(spec, tf.DeviceSpec)
    spec.device_type = "gpu"
    spec.merge_from(tf.DeviceSpec(task=1))
    assert spec.to_string() == "/job:a/task:1/device:GPU:*"
    assert spec.parse_from_string("/cpu:2") is spec and spec.to_string() == "/device:CPU:2"
    assert repr(spec) == "<DeviceSpec(job=None, replica=None, task=None, device_type=CPU, device_index=2)>"


def test_device_spec_pickles_and_copies():
    import copy
    import pickle
    spec = tf.DeviceSpec.from_string("/job:w/task:2/device:GPU:1")
    assert pickle.loads(pickle.dumps(spec)) == spec and copy.copy(spec) == spec


def test_canonical_name():
    assert device_lib.canonical_name("/cpu:1") == CPU1
    assert device_lib.canonical_name(tf.DeviceSpec(device_index=1)) == CPU1
    assert device_lib.canonical_name(tf.config.LogicalDevice("/device:CPU:1", "CPU")) == CPU1
    assert device_lib.canonical_name("") == DEFAULT


# -- tf.config: devices ------------------------------------------------------------------------

def test_config_names_are_tensorflows():
    tf_ = pytest.importorskip("tensorflow")
    for namespace, names in [
            ("config", ["LogicalDevice", "LogicalDeviceConfiguration", "PhysicalDevice",
                        "get_logical_device_configuration",
                        "get_soft_device_placement", "get_visible_devices", "list_logical_devices",
                        "list_physical_devices", "set_logical_device_configuration", "set_soft_device_placement",
                        "set_visible_devices"]),
            ("config.experimental", ["VirtualDeviceConfiguration", "get_virtual_device_configuration",
                                     "get_visible_devices", "list_logical_devices", "list_physical_devices",
                                     "set_virtual_device_configuration", "set_visible_devices"]),
            ("config.threading", ["get_inter_op_parallelism_threads", "get_intra_op_parallelism_threads",
                                  "set_inter_op_parallelism_threads", "set_intra_op_parallelism_threads"])]:
        for prefix in ("", "compat.v1."):
            ours, theirs = tf, tf_
            for part in (prefix + namespace).split("."):
                ours, theirs = getattr(ours, part), getattr(theirs, part)
            for name in names:
                assert hasattr(theirs, name), (namespace, name)
                assert hasattr(ours, name), (prefix + namespace, name)
    # the aliases are the same objects, as TensorFlow's
    assert tf.config.experimental.VirtualDeviceConfiguration is tf.config.LogicalDeviceConfiguration
    assert tf.config.experimental.set_virtual_device_configuration is tf.config.set_logical_device_configuration
    assert tf.config.experimental.get_virtual_device_configuration is tf.config.get_logical_device_configuration
    assert tf.config.experimental.list_physical_devices is tf.config.list_physical_devices
    assert tf.compat.v1.device is not tf.device


def test_device_records_are_named_tuples_as_tensorflow():
    tf_ = pytest.importorskip("tensorflow")
    for name in ("PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration"):
        ours, theirs = getattr(tf.config, name), getattr(tf_.config, name)
        assert ours._fields == theirs._fields and issubclass(ours, tuple)
    assert repr(tf.config.LogicalDeviceConfiguration()) == repr(tf_.config.LogicalDeviceConfiguration())
    assert tf.config.LogicalDeviceConfiguration(memory_limit=5).memory_limit == 5
    assert repr(tf.config.list_physical_devices()) == repr(tf_.config.list_physical_devices())
    assert tf.config.LogicalDevice("/device:CPU:0", "CPU") == tf.config.list_logical_devices()[0]


def test_physical_and_visible_devices():
    cpu = tf.config.list_physical_devices("CPU")[0]
    assert cpu == tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")
    assert tf.config.list_physical_devices("GPU") == [] and tf.config.list_physical_devices("cpu") == []
    assert tf.config.get_visible_devices() == [cpu] and tf.config.get_visible_devices("TPU") == []
    tf.config.set_visible_devices(cpu)              # unchanged: allowed after the runtime started
    tf.config.set_visible_devices([cpu], "CPU")
    tf.config.set_visible_devices([], "GPU")
    with pytest.raises(ValueError, match="Unrecognized device: 'x'"):
        tf.config.set_visible_devices(["x"])
    with pytest.raises(ValueError, match="Unrecognized device: PhysicalDevice"):
        tf.config.set_visible_devices([cpu], "GPU")
    with pytest.raises(ValueError, match="Unrecognized device: 'CPU'"):
        tf.config.get_logical_device_configuration("CPU")


def test_device_settings_refused_after_the_runtime_started():
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.constant(1.0)
    assert device_lib.runtime.initialized
    with pytest.raises(RuntimeError, match="^Virtual devices cannot be modified after being initialized$"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 7)
    with pytest.raises(RuntimeError, match="^Visible devices cannot be modified after being initialized$"):
        tf.config.set_visible_devices([], "CPU")
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None:                         # the same configuration again is allowed
        tf.config.set_logical_device_configuration(cpu, current)
    with pytest.raises(ValueError, match="^Setting memory limit on CPU virtual devices is currently not supported$"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration(memory_limit=10)])
    with pytest.raises(ValueError, match="experimental_priority on CPU"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration(experimental_priority=1)])
    with pytest.raises(ValueError, match="Unrecognized device: 'cpu'"):
        tf.config.set_logical_device_configuration("cpu", [])


# Which events start the runtime: checked against TensorFlow 2.21 case by case (the first
# eager tensor, variable, list_logical_devices, tf.device, tracing a function do; listing
# physical devices, TF1 graphs and Sessions, settings do not).
INIT_EVENTS = {
    "": False,
    "tf.constant(1.0)": True,
    "tf.Variable(1.0)": True,
    "import numpy as np; tf.convert_to_tensor(np.ones(2))": True,
    "tf.config.list_physical_devices(); tf.config.get_visible_devices()": False,
    "tf.config.get_logical_device_configuration(cpu)": False,
    "tf.config.list_logical_devices()": True,
    "tf.device('/CPU:0')": True,
    "tf.device(None)": True,
    "tf.DeviceSpec.from_string('/CPU:0'); tf.TensorSpec([2])": False,
    "g = tf.Graph()\nwith g.as_default():\n    tf.constant(1.0) + 1": False,
    ("g = tf.Graph()\nwith g.as_default():\n    c = tf.constant(1.0) + 1\n"
     "with tf.compat.v1.Session(graph=g) as s:\n    s.run(c)"): False,
    "tf.function(lambda x: x + 1).get_concrete_function(tf.TensorSpec([], tf.float32))": True,
    "tf.config.threading.set_intra_op_parallelism_threads(1); tf.config.get_soft_device_placement()": False,
    "tf.compat.v1.disable_eager_execution()\ntf.constant(1.0)": False,
}


def test_what_starts_the_runtime():
    probe = ("\ntry:\n"
             "    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
             "    print('false')\nexcept RuntimeError:\n    print('true')\n")
    cases = ["cpu = tf.config.list_physical_devices('CPU')[0]\n" + event + probe for event in INIT_EVENTS]
    assert dict(zip(INIT_EVENTS, _fresh(*cases), strict=True)) == INIT_EVENTS


def test_logical_devices_split_the_cpu_before_the_runtime_starts():
    (result,) = _fresh("""
        import json
        cpu = tf.config.list_physical_devices("CPU")[0]
        assert tf.config.get_logical_device_configuration(cpu) is None
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        configs = tf.config.get_logical_device_configuration(cpu)
        devices = tf.config.list_logical_devices()
        try:
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
        except RuntimeError as e:
            error = str(e)
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)   # unchanged
        print(json.dumps([len(configs), [list(d) for d in devices], tf.config.list_logical_devices("GPU"), error]))
        """)
    assert result == [2, [["/device:CPU:0", "CPU"], ["/device:CPU:1", "CPU"]], [],
                      "Virtual devices cannot be modified after being initialized"]


def test_no_cpu_left_raises_not_found_as_tensorflow():
    results = _fresh(*[f"""
        cpu = tf.config.list_physical_devices("CPU")[0]
        {hide}
        tf.config.list_logical_devices()
        """ for hide in ("tf.config.set_visible_devices([], 'CPU')",
                         "tf.config.set_logical_device_configuration(cpu, [])")])
    assert results == [["raised", "NotFoundError", "No CPU devices are available in this process"]] * 2


# -- tf.config.threading -------------------------------------------------------------------------

def test_intra_op_threads_limit_the_blas_pools():
    (result,) = _fresh("""
        import json, threadpoolctl
        def pools():
            return sorted(p["num_threads"] for p in threadpoolctl.threadpool_info())
        original = pools()
        tf.config.threading.set_intra_op_parallelism_threads(1)
        limited, got = pools(), tf.config.threading.get_intra_op_parallelism_threads()
        tf.config.threading.set_intra_op_parallelism_threads(0)
        restored = pools()
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.constant(1.0)                # the runtime starts with the limit in place
        after = pools()
        try:
            tf.config.threading.set_intra_op_parallelism_threads(2)
        except RuntimeError as e:
            error = str(e)
        tf.config.threading.set_intra_op_parallelism_threads(1)     # unchanged: allowed
        print(json.dumps([original, limited, got, restored, after, error]))
        """)
    original, limited, got, restored, after, error = result
    assert original and limited == [1] * len(original) and after == limited and got == 1
    assert restored == original
    assert error == "Intra op parallelism cannot be modified after initialization."


def test_inter_op_threads_are_recorded_and_refused_after_start():
    (result,) = _fresh("""
        import json
        before = tf.config.threading.get_inter_op_parallelism_threads()
        tf.config.threading.set_inter_op_parallelism_threads(3)
        got = tf.config.threading.get_inter_op_parallelism_threads()
        tf.constant(1.0)
        tf.config.threading.set_inter_op_parallelism_threads(3)      # unchanged: allowed
        errors = []
        for n in (0, 4):
            try:
                tf.config.threading.set_inter_op_parallelism_threads(n)
            except RuntimeError as e:
                errors.append(str(e))
        try:                            # as TensorFlow: 0 is a change when nothing was set
            tf.config.threading.set_intra_op_parallelism_threads(0)
        except RuntimeError as e:
            errors.append(str(e))
        print(json.dumps([before, got, errors]))
        """)
    assert result == [0, 3, ["Inter op parallelism cannot be modified after initialization."] * 2
                      + ["Intra op parallelism cannot be modified after initialization."]]


def test_thread_settings_after_start_and_bad_values():
    tf.constant(1.0)
    n = tf.config.threading.get_intra_op_parallelism_threads()
    with pytest.raises(RuntimeError, match="^Intra op parallelism cannot be modified after initialization.$"):
        tf.config.threading.set_intra_op_parallelism_threads(n + 1)
    with pytest.raises(TypeError):
        tf.config.threading.set_intra_op_parallelism_threads("2")
    with pytest.raises(TypeError):
        tf.config.threading.set_inter_op_parallelism_threads(2.5)
    with pytest.raises(ValueError, match="0 .* or positive"):
        tf.config.threading.set_intra_op_parallelism_threads(-1)


# -- tf.device eagerly ---------------------------------------------------------------------------

def test_eager_tensors_record_the_device():
    x = tf.constant(1.0)
    assert x.device == DEFAULT and (x + 1).device == DEFAULT
    with tf.device("/CPU:0"):
        assert tf.constant(2.0).device == DEFAULT
    with tf.device("/GPU:0"):                       # soft placement: no GPU, the CPU
        assert (x * 2).device == DEFAULT and tf.zeros([2]).device == DEFAULT
    v = tf.Variable([1.0, 2.0])
    assert v.device == DEFAULT and v.read_value().device == DEFAULT


def test_device_scope_costs_nothing_outside_it():
    plain = Tensor.__dict__["__init__"]
    tf.constant(1.0)
    assert Tensor.__dict__["__init__"] is plain
    with tf.device("/CPU:0"):                       # the default device: nothing to record
        assert Tensor.__dict__["__init__"] is plain
    assert Tensor.__dict__["__init__"] is plain
    with pytest.raises(tf.errors.InvalidArgumentError):
        with tf.device("/job:elsewhere"):
            assert Tensor.__dict__["__init__"] is not plain
            tf.constant(1.0)
    assert Tensor.__dict__["__init__"] is plain


def test_device_that_does_not_exist_raises_as_tensorflow():
    with tf.device("/job:foo"):                     # entering is fine; making a tensor there is not
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="^/job:foo/replica:0/task:0/device:CPU:0 unknown device.$"):
            tf.constant(1.0)
        with pytest.raises(tf.errors.InvalidArgumentError, match="unknown device"):
            tf.Variable(1.0)
    with tf.device("/task:1"), pytest.raises(tf.errors.InvalidArgumentError,
                                             match="^/job:localhost/replica:0/task:1/device:CPU:0 unknown device"):
        tf.ones([2]) + 1.0
    tf.config.set_soft_device_placement(False)
    try:
        assert tf.config.get_soft_device_placement() is False
        with tf.device("/GPU:0"), pytest.raises(tf.errors.InvalidArgumentError, match=(
                r"^Could not satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:0'. "
                r"enable_soft_placement=0. Supported device types \[CPU\]. All available devices \[/job:localhost/")):
            tf.constant(1.0)
    finally:
        tf.config.set_soft_device_placement(True)
    with tf.device("/GPU:0"):
        assert tf.constant(1.0).device == DEFAULT


def test_bad_device_arguments():
    with pytest.raises(RuntimeError, match="^tf.device does not support functions.$"):
        tf.device(lambda op: "/cpu:0")
    with pytest.raises(RuntimeError, match="when eager execution is enabled"):
        tf.compat.v1.device(lambda op: "/cpu:0")
    with pytest.raises(ValueError, match=r"^Expecting a string device name. Got <class 'int'>\(1\)$"):
        with tf.device(1):
            pass
    with pytest.raises(ValueError, match="Expecting a string device name. Got .*PhysicalDevice"):
        with tf.device(tf.config.list_physical_devices()[0]):
            pass
    with pytest.raises(ValueError, match="Unknown attribute 'foo'"):
        with tf.device("foo"):
            pass
    outer, inner = tf.device("/CPU:1"), tf.device("/CPU:0")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Exiting device scope without proper scope nesting"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert tf.constant(1.0).device == DEFAULT


def test_device_scopes_are_per_thread():
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def other():
        with tf.device("/job:elsewhere"):
            entered.set()
            release.wait(10)
            try:
                tf.constant(1.0)
            except tf.errors.InvalidArgumentError:
                seen["other"] = "raised"

    worker = threading.Thread(target=other)
    worker.start()
    entered.wait(10)
    seen["main"] = tf.constant(1.0).device          # this thread: no scope
    release.set()
    worker.join(10)
    assert seen == {"main": DEFAULT, "other": "raised"}


# A program run under TensorFlow and tapeflow with two logical CPUs: every line must agree
# (TensorFlow's placement errors end in " [Op:AddV2] name: ", which tapeflow's lack).
PLACEMENT_PROGRAM = """
import numpy as np
cpu = tf.config.list_physical_devices('CPU')[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
def show(label, f):
    try:
        print(label, "->", f())
    except Exception as e:
        print(label, "!!", type(e).__name__, str(e).split(" [Op:")[0])
x = tf.constant(1.0)
print("default", x.device, tf.config.list_logical_devices())
for d in ['/CPU:1', 'CPU:1', '/device:CPU:1', '/cpu:1', '/GPU:0', '/CPU:5', '/job:localhost', '/job:foo', '/task:1',
          '/job:localhost/replica:0/task:0/device:CPU:1', '', None, '/device:XLA_CPU:0', 'foo', '/TPU:0', 'cpu',
          '/CPU:*', '/CPU', tf.DeviceSpec(device_type='CPU', device_index=1), tf.config.list_logical_devices()[1]]:
    def scoped(d=d):
        with tf.device(d):
            return tf.constant(2.0).device, (x + 1).device, tf.zeros([2]).device
    show(repr(d), scoped)
tf.config.set_soft_device_placement(False)
for d in ['/GPU:0', '/CPU:5', '/CPU:1']:
    def scoped(d=d):
        with tf.device(d):
            return (x + 1).device
    show("hard " + repr(d), scoped)
tf.config.set_soft_device_placement(True)
with tf.device('/CPU:1'):
    y = tf.constant(3.0)
    v = tf.Variable(1.0)
    with tf.device('/CPU:0'):
        print("nested", tf.constant(1.0).device)
    with tf.device(None):
        print("None", tf.constant(1.0).device)
    with tf.device(''):
        print("empty", tf.constant(1.0).device)
    with tf.device('/job:localhost'):
        print("partial", tf.constant(1.0).device)
    print("convert", tf.convert_to_tensor(np.ones(2)).device, tf.identity(x).device)
print("outside", y.device, (y + 1).device, v.device, (v + 1).device, v.read_value().device)
with tf.device('/CPU:1'):
    with tf.GradientTape() as tape:
        w = tf.Variable([1.0, 2.0])
        loss = tf.reduce_sum(tf.gather(w, [0]) * 3.0)
    grad = tape.gradient(loss, w)
    print("sparse gradient", type(grad).__name__, grad.device, grad.values.device)
@tf.function
def f(x):
    with tf.device('/CPU:1'):
        y = x + 1
        with tf.device('/job:localhost'):
            z = y * 2
        with tf.device(None):
            w = y * 3
        with tf.device('/cpu:*'):
            u = y * 4
        with tf.device(tf.DeviceSpec(device_type='GPU')):
            q = y * 5
    print("function", [t.device for t in (x, y, z, w, u, q, x * 2)], y.op.device)
    return y, w
print("function outputs", [t.device for t in f(tf.constant(1.0))])
with tf.device('/CPU:1'):
    print("function outputs in a scope", [t.device for t in f(tf.constant(1.0))])
made = []
@tf.function
def make():
    if not made:
        with tf.device('/CPU:1'):
            made.append(tf.Variable(1.0))
        with tf.device('/GPU:0'):
            made.append(tf.Variable(1.0))
    return made[0].read_value()
make()
print("function variables", [m.device for m in made])
"""


def test_placement_matches_tensorflow_on_two_logical_cpus():
    pytest.importorskip("tensorflow")
    ours = _script(PLACEMENT_PROGRAM)
    theirs = [line for line in _script(PLACEMENT_PROGRAM, lib="tensorflow") if not line.startswith("Cause:")]
    assert ours == theirs
    assert "'/CPU:1' -> ('{0}', '{0}', '{0}')".format(CPU1) in ours       # the program did place on CPU:1


# -- tf.device in graphs -------------------------------------------------------------------------

def _graph_devices(tf_):
    """Device strings of ops made in a TF1 graph and a tf.function under `tf_`."""
    g = tf_.Graph()
    with g.as_default():
        with g.device("/cpu:1"):
            a = tf_.constant(1.0, name="a")
            with g.device(lambda op: "/job:w" if op.type == "Mul" else ""):
                b = a * 2.0
                c = a + 2.0
            with tf_.compat.v1.device("/task:3"):
                d = a + 1.0
            with g.device(None):
                e = a + 3.0
            with tf_.device(tf_.DeviceSpec(device_type="GPU")):
                f = a + 7.0
            v = tf_.compat.v1.Variable(1.0)
        with g.device(lambda op: "/cpu:2"):
            with g.device("/job:x"):
                h = a + 4.0
        with g.device(lambda op: tf_.DeviceSpec(job="y")):
            i = a + 5.0
        with g.device(lambda op: "/gpu:0"):
            with g.device(lambda op: "/cpu:0" if op.device == "" else "wrong"):
                k = a + 6.0
        with g.device(""):
            m = a + 8.0
        graph = [t.device for t in (a, b, c, d, e, f, h, i, k, m)] + [a.op.device, v.device]

    traced = []

    @tf_.function
    def fn(x):
        with tf_.device("/CPU:1"):
            y = x + 1.0
            with tf_.device("/job:localhost"):
                z = y * 2.0
            with tf_.device(None):
                w = y * 3.0
            with tf_.compat.v1.device(lambda op: "/cpu:7"):
                u = y * 4.0
        traced.extend([t.device for t in (x, y, z, w, u)] + [y.op.device])
        return x

    fn(tf_.constant(1.0))
    return graph, traced


def test_graph_device_strings_match_tensorflow():
    tf_ = pytest.importorskip("tensorflow")
    assert _graph_devices(tf) == _graph_devices(tf_)
    graph, function = _graph_devices(tf)
    assert graph[:3] == ["/device:CPU:1", "/job:w/device:CPU:1", "/device:CPU:1"]
    assert function[:3] == ["", "/device:CPU:1", "/job:localhost/device:CPU:1"]


def test_graph_device_errors_and_nesting():
    g = tf.Graph()
    with g.as_default():
        with pytest.raises(ValueError, match="Unknown attribute 'foo'"):
            with g.device("foo"):
                pass
        with pytest.raises(AttributeError, match="device name string"):
            with g.device(3):
                pass
        with pytest.raises(TypeError, match="returned None"):
            with g.device(lambda op: None):
                tf.constant(1.0)
        with pytest.raises(RuntimeError, match="^tf.device does not support functions.$"):
            tf.device(lambda op: "")
        with tf.device("/cpu:1"):
            t = tf.constant(1.0)
        assert tf.constant(2.0).device == ""
    assert t.device == "/device:CPU:1" and t.op.device == "/device:CPU:1"
    from tapeflow.framework.context import state
    assert g not in state.graph_devices             # stacks emptied on exit


def test_graph_device_scopes_are_per_thread():
    g = tf.Graph()
    devices = {}

    def build(name, index):
        with g.as_default(), g.device(f"/cpu:{index}"):
            barrier.wait(10)
            devices[name] = tf.constant(float(index)).device
            barrier.wait(10)

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=build, args=(f"t{i}", i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert devices == {"t0": "/device:CPU:0", "t1": "/device:CPU:1"}


def test_variables_and_indexed_slices_record_the_device():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.compat.v1.Variable(1.0)
        w = tf.compat.v1.Variable(2.0)
    assert v.device == "/job:ps/task:0" and w.device == ""
    slices = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]), tf.constant([2, 1]))
    assert slices.device == DEFAULT
    x = tf.Variable([1.0, 2.0])
    assert x.assign_add([1.0, 1.0]).device == DEFAULT
