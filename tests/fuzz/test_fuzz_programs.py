"""The program fuzzer in CI: random programs of spec rows, tapeflow against TensorFlow.

fuzz_programs.py draws the programs, fuzz_checks.py runs and compares them (values,
first-order gradients of leaves and intermediates, tape in tape, tf.function, central
differences), known_differences.py lists what is accepted.  Here hypothesis draws a fixed
(derandomized) set of programs, so CI is deterministic; a failure prints the shrunk program.

    python -m pytest -q -p no:cacheprovider tests/fuzz                       # CI
    TAPEFLOW_FUZZ_EXAMPLES=1000 python -m pytest -q -p no:cacheprovider tests/fuzz   # more programs
    python tests/fuzz/run_long.py --minutes 12                              # long run, summary table
    python tests/fuzz/run_long.py --seed 1234 --shrink                      # replay one long-run seed
"""

import contextlib
import os
import signal
import threading

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import fuzz_checks
import fuzz_programs
import known_differences

# About 55 s on two shared cores (0.2 s a program with TensorFlow installed); the whole file about 70 s.
EXAMPLES = int(os.environ.get("TAPEFLOW_FUZZ_EXAMPLES", "250"))
PROGRAM_SECONDS = 120

settings.register_profile("tapeflow-fuzz-ci", derandomize=True, deadline=None, max_examples=EXAMPLES,
                          database=None, print_blob=False, suppress_health_check=list(HealthCheck),
                          phases=[Phase.explicit, Phase.generate, Phase.shrink])    # no patch files written


class Hang(BaseException):
    """A program ran past PROGRAM_SECONDS (a BaseException: the checks' handlers let it through)."""


@contextlib.contextmanager
def time_limit(seconds):
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"the program ran for more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.filterwarnings("ignore")
@settings(settings.get_profile("tapeflow-fuzz-ci"))
@given(program=fuzz_programs.hypothesis_programs())
def test_random_programs_match_tensorflow(program):
    with time_limit(PROGRAM_SECONDS):
        report = fuzz_checks.check_program(program)
    assert not report.failures(), report.describe()


def _entries(entries):
    return [pytest.param(e, id=f"{e.kind}-{e.stage}-{'+'.join(e.rows)}") for e in entries if e.seed is not None]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("entry", _entries(known_differences.OPEN_BUGS))
def test_open_bugs_still_fail(entry):
    """An open bug's seed still shows it (remove the entry once the bug is fixed)."""
    if not fuzz_checks.HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    report = fuzz_checks.check_program(fuzz_programs.program_from_seed(entry.seed))
    assert any(f.category == "open-bug" and entry.reason in f.detail for f in report.findings), \
        f"no longer reproduces (fixed? then remove the entry from OPEN_BUGS):\n{report.describe()}"


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("entry", _entries(known_differences.KNOWN))
def test_known_differences_still_differ(entry):
    """A known difference's seed still shows it (an entry that matches nothing hides nothing)."""
    if not fuzz_checks.HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    report = fuzz_checks.check_program(fuzz_programs.program_from_seed(entry.seed))
    assert any(f.category == "known" and entry.reason in f.detail for f in report.findings), report.describe()


def test_programs_are_reproducible():
    """A seed gives the same program each time (the long run's repros are seeds)."""
    assert fuzz_programs.program_from_seed(7).source() == fuzz_programs.program_from_seed(7).source()
