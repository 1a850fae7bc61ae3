"""The only global state: per-thread stacks of active tapes and default graphs.

Both are changed only through context managers (`GradientTape`, `stop_recording`,
`Graph.as_default`).  The op dispatch reads `state.tapes` on every op, so it
is a plain list attribute on a `threading.local`.
"""

import contextlib
import threading


class _State(threading.local):
    def __init__(self):
        self.tapes = []        # active GradientTapes, innermost last
        self.graphs = []       # default graphs, innermost last (graph mode)
        self.scopes = {}       # scoped settings (strategy, name scope, ...)
        self.variable_watchers = []   # custom_gradient's watchers of variable reads
        self.vmaps = []        # active vectorizations, innermost last (ops/batching.py)


state = _State()


def executing_eagerly():
    """True unless a graph is being built (inside `tf.function` tracing or `Graph.as_default`).

    >>> import tapeflow as tf
    >>> tf.executing_eagerly()
    True
    """
    return not state.graphs


@contextlib.contextmanager
def eager_mode():
    """Runs ops eagerly inside, even while a graph is being built (variable initial values)."""
    saved, state.graphs = state.graphs, []
    try:
        yield
    finally:
        state.graphs = saved


@contextlib.contextmanager
def tapes_paused():
    """No tape records inside (TF's `tape.stop_recording()` for all tapes)."""
    saved, state.tapes = state.tapes, []
    try:
        yield
    finally:
        state.tapes = saved
