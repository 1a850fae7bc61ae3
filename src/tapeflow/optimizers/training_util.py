"""The TF1 global step: `tf.compat.v1.train.get_or_create_global_step` and friends.

A TF1 graph keeps its global step (an int64 variable named "global_step") as
an attribute, as it keeps its variable collections; a `tf.function` sees the
one of the graph or eager context it is traced in.  Executing eagerly there is
one global step per process, held here, like TensorFlow's eager default-graph
collection.
"""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.ops.variables import Variable

_EAGER = {}     # "global_step" -> the eager global step


def _home(graph):
    """The TF1 graph whose global step applies (None: the eager one)."""
    if graph is None:
        graph = state.graphs[-1] if state.graphs else None
    while graph is not None and graph.building_function:
        graph = graph.outer_graph
    return graph


def _store(graph):
    return _EAGER if graph is None else graph.__dict__.setdefault("_global_step", {})


@tf_export("compat.v1.train.get_global_step")
def get_global_step(graph=None):
    """The global step variable of `graph` (the default graph; eagerly, the process's), or None.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     tf.compat.v1.train.get_global_step() is None
    True
    """
    return _store(_home(graph)).get("global_step")


@tf_export("compat.v1.train.create_global_step")
def create_global_step(graph=None):
    """Creates the global step: an int64 scalar variable "global_step" equal to 0, not trainable.

    Args:
      graph: the graph (the default graph by default).

    Returns:
      The new variable.

    Raises:
      ValueError: the graph has a global step already.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     tf.compat.v1.train.create_global_step().name
    'global_step:0'
    """
    home = _home(graph)
    store = _store(home)
    if "global_step" in store:
        raise ValueError('"global_step" already exists.')
    if home is not None and (not state.graphs or state.graphs[-1] is not home):
        with home.as_default():
            return create_global_step(home)
    store["global_step"] = Variable(np.int64(0), trainable=False, dtype=dtypes.int64, name="global_step")
    return store["global_step"]


@tf_export("compat.v1.train.get_or_create_global_step")
def get_or_create_global_step(graph=None):
    """The global step of `graph`, created when it has none.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     step = tf.compat.v1.train.get_or_create_global_step()
    ...     step is tf.compat.v1.train.get_or_create_global_step()
    True
    """
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step
