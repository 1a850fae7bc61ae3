"""The runnable demos in tapeflow.examples: they train, and reach their accuracy."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")

from tapeflow.examples import digits  # noqa: E402


def test_digits_short_run_reaches_accuracy():
    acc = digits.main(epochs=3, seed=0, progress=False, verbose=False)
    assert acc >= 0.9


def test_digits_is_deterministic_for_a_seed():
    a = digits.main(epochs=1, seed=3, progress=False, verbose=False)
    b = digits.main(epochs=1, seed=3, progress=False, verbose=False)
    assert a == b


def test_digits_training_lowers_the_loss():
    x, y, _, _ = digits.load_data(seed=0)
    model = digits.MLP(seed=0)
    first = digits.train(model, x, y, epochs=1, progress=False)
    second = digits.train(model, x, y, epochs=1, seed=1, progress=False)
    assert second < first


def test_digits_command_line():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-m", "tapeflow.examples.digits", "--epochs", "1", "--seed", "0"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"test accuracy: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout
    assert float(match.group(1)) >= 0.8
