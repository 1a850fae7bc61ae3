"""Fixtures for the eager tests."""

import pytest

from tapeflow.framework import op_def


@pytest.fixture(autouse=True)
def _forget_test_ops():
    """Unregisters the throwaway ops a test declares (so the op registry, which the
    coverage test reads, holds only tapeflow's own ops)."""
    ops, pending = set(op_def._OPS), set(op_def._PENDING)
    yield
    for name in set(op_def._OPS) - ops:
        del op_def._OPS[name]
    for name in set(op_def._PENDING) - pending:
        del op_def._PENDING[name]
