"""The runtime's per-thread state, in one place: `state`, a `threading.local`.

The two stacks of DESIGN's contract are here, the active tapes and the default
graphs, and beside them the other scoped settings of a thread (vectorizations,
device scopes, strategies' thread modes, variable creators, custom_gradient's
variable watchers, named scopes); `process_graph` is the process-wide default
graph while eager execution is disabled.  Each field is changed only through
the context managers of the module named beside it.  The op dispatch reads
`state.tapes` on every op, so it is a plain list attribute.
"""

import contextlib
import threading


class _ProcessGraph:
    """The process's default graph, made on first use (graph/default_graph.py); while eager
    execution is disabled it is the bottom of every thread's stack of default graphs
    (Note [eager disabled] there)."""

    graph = None
    eager_disabled = False


process_graph = _ProcessGraph()


class _State(threading.local):
    def __init__(self):
        self.tapes = []        # active GradientTapes, innermost last
        # default graphs, innermost last (graph mode)
        self.graphs = [process_graph.graph] if process_graph.eager_disabled else []
        self.scopes = {}       # scoped settings (strategy, name scope, ...)
        self.variable_watchers = []   # custom_gradient's watchers of variable reads
        self.vmaps = []        # active vectorizations, innermost last (ops/core/vectorization.py)
        self.device = None     # the eager device scope in effect, None outside any (framework/device.py)
        self.graph_devices = {}     # graph -> its device scopes in this thread (Note [graph device scopes])
        self.strategies = []   # tf.distribute thread modes, innermost last (distribute/thread_mode.py)
        self.variable_creators = []   # tf.variable_creator_scope creators, innermost last (ops/variables.py)


state = _State()


class _Settings:
    """Process-wide settings of `tf.config` (not per thread, as TensorFlow's); set only
    through their `tf.config` functions (config.py)."""

    functions_run_eagerly = False     # tf.config.run_functions_eagerly: tf.function calls the Python function


settings = _Settings()


def executing_eagerly():
    """True unless a graph is being built (inside `tf.function` tracing or `Graph.as_default`).

    >>> import tapeflow as tf
    >>> tf.executing_eagerly()
    True
    """
    return not state.graphs


def executing_eagerly_outside_functions():
    """True unless a graph other than a function's is being built (TF1 graphs, eager
    execution disabled): the test TensorFlow's tensor equality makes.

    >>> import tapeflow as tf
    >>> tf.compat.v1.executing_eagerly_outside_functions()
    True
    """
    return all(g.building_function for g in state.graphs)


def default_session(action, with_, fix):
    """The innermost default session (graph/session.py), for `Tensor.eval` and `Operation.run`.

    Raises:
      ValueError: there is none; the message says how to `action` (`with_` or `fix`).
    """
    sessions = state.scopes.get("sessions")
    if not sessions:
        raise ValueError(f"Cannot {action}: No default session is registered. Use `{with_}` or pass an explicit "
                         f"session to `{fix}`")
    return sessions[-1]


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
