"""`tf.name_scope` and `tf.control_dependencies`: graph scopes; eagerly a name scope only names
variables, and control dependencies do nothing (eager code runs in order)."""

import contextlib

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export


@tf_export("name_scope", names_op=False)
class name_scope:
    """A context manager prefixing the names of what is made inside; entering it yields the scope.

    In a graph the scope is made unique ("layer", then "layer_1"); eagerly it is not, and it
    prefixes the names of the variables made inside.  A name ending in "/" is a whole scope,
    re-entered as it is (a `tf.Module`'s); "" is the top level.  The object can be entered
    again (`with scope:` twice), as TensorFlow's.

    Args:
      name: the scope's name.
      default_name: the name to use when `name` is None (TF1's signature).
      values: unused (TF1's signature).

    Raises:
      ValueError: the name is not a string.

    >>> import tapeflow as tf
    >>> with tf.name_scope("outer"):
    ...     with tf.name_scope("inner") as scope:
    ...         print(scope, tf.Variable(1.0, name="v").name)
    outer/inner/ outer/inner/v:0
    """

    def __init__(self, name, default_name=None, values=None):
        if name is None:
            name = default_name
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")
        self._name = name
        self._exits = []        # one per entry not yet left

    @property
    def name(self):
        return self._name

    # Note [eager name scopes]: executing eagerly, the scope is the string
    # `state.scopes["name_scope"]` ("outer/inner/", "" at the top level), which
    # variables made eagerly put before their names (ops/variables.py); in a graph
    # it is the graph's name stack, which ops and variables made there read.
    def __enter__(self):
        if state.graphs:
            scope = state.graphs[-1].name_scope(self._name)
            self._exits.append(scope.__exit__)
            return scope.__enter__()
        old = state.scopes.get("name_scope", "")
        name = self._name
        new = "" if not name else name if name.endswith("/") else f"{old}{name}/"
        state.scopes["name_scope"] = new
        self._exits.append(lambda *exc: state.scopes.__setitem__("name_scope", old))
        return new

    def __exit__(self, *exc):
        return self._exits.pop()(*exc)


@tf_export("control_dependencies")
@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Ops created inside run after `control_inputs` (graph mode); eager code runs in order anyway."""
    if not state.graphs:
        yield
        return
    with state.graphs[-1].control_dependencies(control_inputs):
        yield


@tf_export("init_scope")
@contextlib.contextmanager
def init_scope():
    """Lifts what is made inside out of function graphs being traced (TF's `tf.init_scope`).

    Inside, ops run in the outermost context that is not a function being traced:
    eagerly when the functions were called eagerly, else in that TF1 graph (with
    the current name scope).  Control dependencies are cleared and tapes do not
    record, so a function can make its variables and constants once, outside its graph.

    >>> import tapeflow as tf
    >>> @tf.function
    ... def f():
    ...     with tf.init_scope():
    ...         print("eager inside:", tf.executing_eagerly())
    ...     return tf.constant(1.0)
    >>> _ = f()
    eager inside: True
    """
    graphs = state.graphs
    outer = next((i for i in range(len(graphs) - 1, -1, -1) if not graphs[i].building_function), -1)
    scope = graphs[-1]._name_stack if graphs else state.scopes.get("name_scope", "").rstrip("/")
    saved_tapes, state.tapes = state.tapes, []          # tapes pause
    state.graphs = graphs[:outer + 1]
    try:
        if state.graphs:                                 # the current name scope, as an absolute one
            graph = state.graphs[-1]
            saved_scope, graph._name_stack = graph._name_stack, scope
            try:
                with graph.control_dependencies(None):
                    yield
            finally:
                graph._name_stack = saved_scope
        else:
            with name_scope(scope + "/" if scope else ""):
                yield
    finally:
        state.graphs = graphs
        state.tapes = saved_tapes
