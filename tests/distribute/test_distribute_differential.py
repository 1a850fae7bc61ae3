"""tapeflow's tf.distribute against TensorFlow 2.21's: every program of dist_scenarios.py, eagerly
and inside `tf.function`, under MirroredStrategy on two CPU devices (and the default and
one-device strategies), gives the same values, structures (PerReplica, Mirrored, mirrored
variables' components) and exception classes; for misuse, the same messages.

TensorFlow runs the programs in a subprocess (dist_oracle.py), which must split its CPU
into two logical devices before it initializes; its results are cached by pytest
(keyed by the programs' source and TensorFlow's version).
"""

import base64
import hashlib
import importlib.metadata
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import tapeflow
import dist_scenarios

HERE = os.path.dirname(os.path.abspath(__file__))

# misuse whose message is TensorFlow's own (after the lines AutoGraph adds in a function)
MESSAGES_CHECKED = {
    "reduce_unknown_op_string", "reduce_unknown_op_with_axis", "all_reduce_unknown_op", "nested_run",
    "nested_run_of_another_strategy", "nested_scopes_of_two_strategies", "scope_inside_run",
    "reduce_in_replica_context", "merge_call_outside_run", "merge_call_in_cross_replica_context",
    "all_reduce_in_cross_replica_context", "merge_call_counts_differ", "variable_of_another_strategy",
    "mean_aggregation_of_integers", "synchronization_none_under_strategy", "update_with_python_value_sum",
    "average_loss_in_cross_replica_context", "keras_optimizer_made_outside_scope",
}


def _tf_version():
    for dist in ("tensorflow", "tensorflow-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@pytest.fixture(scope="module")
def oracle(request):
    pytest.importorskip("tensorflow")
    digest = hashlib.sha256()
    for name in ("dist_scenarios.py", "dist_oracle.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            digest.update(f.read())
    digest.update(str(_tf_version()).encode())
    key = f"tapeflow/distribute_oracle/{digest.hexdigest()[:24]}"
    cache = getattr(request.config, "cache", None)        # (absent under -p no:cacheprovider)
    cached = None if cache is None else cache.get(key, None)
    if cached is not None:
        return pickle.loads(base64.b64decode(cached))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "oracle.pkl")
        done = subprocess.run([sys.executable, os.path.join(HERE, "dist_oracle.py"), out], capture_output=True,
                              text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        assert done.returncode == 0, done.stderr[-3000:]
        with open(out, "rb") as f:
            data = f.read()
    if cache is not None:
        cache.set(key, base64.b64encode(data).decode())
    return pickle.loads(data)


@pytest.fixture(scope="module")
def env():
    return dist_scenarios.make_env(tapeflow)


def _core(message):
    """The message without the lines AutoGraph puts before it inside a function."""
    if "in user code:" in message:
        message = message.rstrip().rsplit("Error: ", 1)[-1]
    return message.strip()


def _compare(ours, theirs, path):
    if isinstance(theirs, tuple) and theirs[:1] == ("raises",) or isinstance(ours, tuple) and ours[:1] == ("raises",):
        assert isinstance(ours, tuple) and ours[:1] == ("raises",), f"{path}: tapeflow gave {ours!r}, TF raised {theirs!r}"
        assert isinstance(theirs, tuple) and theirs[:1] == ("raises",), f"{path}: tapeflow raised {ours!r}, TF gave {theirs!r}"
        assert ours[1] == theirs[1], f"{path}: tapeflow raised {ours[1]}: {ours[2]}; TF raised {theirs[1]}: {theirs[2]}"
        return
    if _is(ours, "Mirrored") and _is(theirs, "value"):     # TF returns a Mirrored from a function as its tensor
        for i, component in enumerate(ours[1]):
            _compare(component, theirs, f"{path}.values[{i}]")
        return
    assert type(ours) is type(theirs), f"{path}: tapeflow gave {ours!r}, TF {theirs!r}"
    if not isinstance(ours, tuple):
        assert ours == theirs, f"{path}: tapeflow gave {ours!r}, TF {theirs!r}"
        return
    kind = ours[0]
    assert kind == theirs[0], f"{path}: tapeflow gave a {kind} ({ours!r}), TF a {theirs[0]} ({theirs!r})"
    if kind == "value":
        assert ours[1] == theirs[1], f"{path}: dtype {ours[1]} vs TF's {theirs[1]}"
        a, b = ours[2], theirs[2]
        assert a.shape == b.shape, f"{path}: shape {a.shape} vs TF's {b.shape}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=path)
        else:
            np.testing.assert_array_equal(a, b, err_msg=path)
    elif kind == "dict":
        assert sorted(ours[1]) == sorted(theirs[1]), f"{path}: keys {sorted(ours[1])} vs TF's {sorted(theirs[1])}"
        for k in ours[1]:
            _compare(ours[1][k], theirs[1][k], f"{path}[{k!r}]")
    elif kind == "IndexedSlices":
        _compare(ours[1], theirs[1], f"{path}.values")
        _compare(ours[2], theirs[2], f"{path}.indices")
    elif kind == "python":
        assert ours[1:] == theirs[1:], f"{path}: tapeflow gave {ours!r}, TF {theirs!r}"
    else:       # list, tuple, PerReplica, Mirrored, MirroredVariable, SyncOnReadVariable
        assert len(ours[1]) == len(theirs[1]), f"{path}: {len(ours[1])} items vs TF's {len(theirs[1])}"
        for i, (a, b) in enumerate(zip(ours[1], theirs[1], strict=True)):
            _compare(a, b, f"{path}[{i}]")


def _is(x, kind):
    return isinstance(x, tuple) and x[:1] == (kind,)


@pytest.mark.parametrize("name,mode", dist_scenarios.cases(), ids=[f"{n}-{m}" for n, m in dist_scenarios.cases()])
def test_same_as_tensorflow(oracle, env, name, mode):
    ours = dist_scenarios.run_case(tapeflow, env, name, mode)
    theirs = oracle[(name, mode)]
    _compare(ours, theirs, name)
    if name in MESSAGES_CHECKED:
        assert _core(ours[2]) == _core(theirs[2]), f"tapeflow's message {ours[2]!r}, TensorFlow's {theirs[2]!r}"
