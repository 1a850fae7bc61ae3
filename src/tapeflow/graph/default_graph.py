"""The process's default graph and TF1's switch off eager execution.

Note [eager disabled]: `tf.compat.v1.disable_eager_execution()` makes TF1
programs build graphs, as TensorFlow 1 did: ops go into the process's default
graph (`tf.compat.v1.get_default_graph()`, one Graph made on first use), which
`Session()` without a graph runs.  The graph becomes the bottom of the stack of
default graphs (`state.graphs`) of the calling thread, and of every thread
whose state is made afterwards (framework/context.py), so `executing_eagerly()`
is False and every op builds a node, with no other change to the op dispatch.
`Graph.as_default()` and `tf.function` stack their graphs above it as usual.
While eager execution is enabled the default graph exists too, unused by ops,
as TensorFlow's.  Turning eager execution back on after it was disabled is
refused, as TensorFlow refuses it.
"""

from tapeflow.framework.context import process_graph, state, executing_eagerly_outside_functions
from tapeflow.framework.export import tf_export
from tapeflow.graph.graph import Graph

tf_export("compat.v1.executing_eagerly_outside_functions")(executing_eagerly_outside_functions)


def process_default_graph():
    """The process's default graph (made on first use)."""
    if process_graph.graph is None:
        process_graph.graph = Graph()
    return process_graph.graph


@tf_export("compat.v1.disable_eager_execution")
def disable_eager_execution():
    """Makes ops build the process's default graph from now on (Note [eager disabled]).

    Returns:
      None.

    >>> import tapeflow as tf
    >>> tf.executing_eagerly()
    True
    """
    graph = process_default_graph()
    process_graph.eager_disabled = True
    if graph not in state.graphs:
        state.graphs.insert(0, graph)


@tf_export("compat.v1.enable_eager_execution")
def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Eager execution, on by default; a no-op unless it was disabled.

    Raises:
      ValueError: eager execution was disabled (it must be chosen at program startup).

    >>> import tapeflow as tf
    >>> tf.compat.v1.enable_eager_execution()
    """
    if process_graph.eager_disabled:
        raise ValueError("tf.enable_eager_execution must be called at program startup.")


@tf_export("compat.v1.reset_default_graph")
def reset_default_graph():
    """Replaces the process's default graph with a new, empty one.

    Raises:
      AssertionError: called inside `Graph.as_default()` or a function being traced.

    >>> import tapeflow as tf
    >>> g = tf.compat.v1.get_default_graph()
    >>> tf.compat.v1.reset_default_graph()
    >>> tf.compat.v1.get_default_graph() is g
    False
    """
    base = 1 if process_graph.eager_disabled else 0
    if len(state.graphs) > base:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you need a cleared "
                             "graph, exit the nesting and create a new graph.")
    process_graph.graph = Graph()
    if base:
        state.graphs[0] = process_graph.graph


@tf_export("compat.v1.get_default_graph")
def get_default_graph():
    """The graph new ops go into: the innermost default graph, else the process's one.

    Returns:
      A Graph (while executing eagerly, the process's default graph, which ops do not use).

    >>> import tapeflow as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     tf.compat.v1.get_default_graph() is g
    True
    """
    return state.graphs[-1] if state.graphs else process_default_graph()
