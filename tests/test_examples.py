"""The runnable demos in tapeflow.examples: they train, and reach their accuracy."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")

from tapeflow.examples import digits  # noqa: E402


def test_digits_short_run_reaches_accuracy():
    acc = digits.main(epochs=3, seed=0, progress=False, verbose=False, plot_path=None)
    assert acc >= 0.9


@pytest.mark.parametrize("dtype,eager", [("float16", False), ("float32", True)])
def test_digits_modes_train(dtype, eager):
    acc = digits.main(epochs=2, seed=0, dtype=dtype, eager=eager, progress=False, verbose=False, plot_path=None)
    assert acc >= 0.85


def test_digits_float16_run_reports_overflows_and_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "run.png"
    digits.main(epochs=10, seed=0, progress=False, plot_path=str(path))
    out = capsys.readouterr().out
    assert path.stat().st_size > 0 and f"plot of loss and loss scale: {path}" in out
    retried = int(re.search(r"; (\d+) overflowing rounds", out).group(1))
    assert retried > 0                      # the scale doubles every 50 good steps until float16 overflows
    assert "in the gradient of BatchMatMulV2" in out and "digits.py:" in out


def test_digits_is_deterministic_for_a_seed():
    a = digits.main(epochs=1, seed=3, progress=False, verbose=False, plot_path=None)
    b = digits.main(epochs=1, seed=3, progress=False, verbose=False, plot_path=None)
    assert a == b


def test_digits_training_lowers_the_loss():
    x, y, _, _ = digits.load_data(seed=0)
    model = digits.MLP(seed=0)
    first = digits.train(model, x, y, epochs=1, progress=False)["final_loss"]
    second = digits.train(model, x, y, epochs=1, seed=1, progress=False)["final_loss"]
    assert second < first


def test_digits_command_line():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-m", "tapeflow.examples.digits", "--epochs", "1", "--seed", "0",
                           "--plot", ""],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"test accuracy: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout
    assert float(match.group(1)) >= 0.8


def _digits_accuracy(args, launcher=()):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([*launcher, sys.executable, "-m", "tapeflow.examples.digits", "--epochs", "2",
                           "--seed", "0", "--plot", "", "--no-progress", *args],
                          capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, float(re.search(r"test accuracy: ([0-9.]+)", proc.stdout).group(1))


def test_digits_with_two_mirrored_replicas_matches_one_replica():
    # The CPU must be split before the first tensor of a process: each run is its own process.
    one, acc_one = _digits_accuracy(["--dtype", "float32"])
    two, acc_two = _digits_accuracy(["--dtype", "float32", "--replicas", "2"])
    assert "2 replicas (MirroredStrategy)" in two
    assert acc_two == acc_one
    loss = [float(re.search(r"final train loss ([0-9.]+)", out).group(1)) for out in (one, two)]
    assert abs(loss[0] - loss[1]) < 1e-3


def test_digits_multi_worker_under_mpiexec_matches_one_replica():
    pytest.importorskip("mpi4py")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        pytest.skip("no mpiexec beside the Python executable (pip install -e '.[mpi]')")
    _, acc_one = _digits_accuracy(["--dtype", "float32"])
    out, acc_two = _digits_accuracy(["--dtype", "float32", "--multi-worker"], launcher=(mpiexec, "-n", "2"))
    assert "2 replicas (MultiWorkerMirroredStrategy)" in out
    assert out.count("test accuracy") == 1          # only the chief reports
    assert acc_two == acc_one
