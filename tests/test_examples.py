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
    digits.main(epochs=6, seed=0, progress=False, plot_path=str(path))
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
