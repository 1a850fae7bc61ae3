"""The bad-input fuzzer in CI: tapeflow and TensorFlow raise the same exception classes.

bad_inputs.py draws the cases (an API with one bad argument, eagerly or traced, or a
misuse of a tape or variable); each runs with both libraries and is compared with
`differential.compare`: the call's exception class (or value), then a valid follow-up
with the same tape, variable or function.  Hypothesis draws a fixed (derandomized) set.

    python -m pytest -q -p no:cacheprovider tests/fuzz/test_fuzz_bad_inputs.py
    TAPEFLOW_FUZZ_BAD_EXAMPLES=2000 python -m pytest -q -p no:cacheprovider tests/fuzz/test_fuzz_bad_inputs.py
    TAPEFLOW_FUZZ_BAD_EXHAUSTIVE=1 python -m pytest -q -p no:cacheprovider tests/fuzz/test_fuzz_bad_inputs.py
"""

import os
import warnings

import pytest
from hypothesis import HealthCheck, given, settings

import bad_inputs
from differential import compare, run_both

# About 40 s on two shared cores; TAPEFLOW_FUZZ_EXAMPLES (the program fuzzer's knob) scales it too.
EXAMPLES = int(os.environ.get("TAPEFLOW_FUZZ_BAD_EXAMPLES", os.environ.get("TAPEFLOW_FUZZ_EXAMPLES", "900")))

def check(case):
    """Compares one case; a mismatch listed in `bad_inputs.KNOWN_MISMATCHES` (reported, owned by
    other files) passes, any other fails with both outcomes."""
    ours, theirs = run_both(case.program)
    try:
        compare(ours, theirs)
    except AssertionError:
        if not bad_inputs.known_mismatch(case):
            raise


@settings(derandomize=True, deadline=None, max_examples=EXAMPLES, database=None, print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(case=bad_inputs.cases())
def test_bad_inputs_match_tensorflow(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(case)


@pytest.mark.skipif(not os.environ.get("TAPEFLOW_FUZZ_BAD_EXHAUSTIVE"), reason="long run: set TAPEFLOW_FUZZ_BAD_EXHAUSTIVE=1")
def test_every_case():
    failures = []
    for case in bad_inputs.every_case():
        try:
            check(case)
        except AssertionError as e:
            failures.append(f"{case!r}: {str(e).splitlines()[0][:300]}")
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures)
