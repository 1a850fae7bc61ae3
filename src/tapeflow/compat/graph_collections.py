"""TF1's graph collections: `tf.compat.v1.get_collection`, `add_to_collection`, `GraphKeys`.

Note [graph collections]: a TF1 graph is a bag of named lists.  tapeflow keeps
the variable ones itself (`global_variables`, `trainable_variables`: the
variables made in the graph, graph/session.py; the global step of
optimizers/training_util.py) and any other list a program adds to
(`add_to_collection`) in the graph's `_collections`.  Keys name the same
lists as TensorFlow's (`GraphKeys.TRAINABLE_VARIABLES == "trainable_variables"`);
executing eagerly the process's default graph holds them, as TensorFlow's.
"""

import re

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.ops.variables import graph_variables
from tapeflow.graph.default_graph import get_default_graph


@tf_export("compat.v1.GraphKeys")
class GraphKeys:
    """The names of TF1's standard collections."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    VARIABLES = GLOBAL_VARIABLES


def _graph():
    return next((g for g in reversed(state.graphs) if not g.building_function), None) or get_default_graph()


def _collection(graph, name):
    """The list of the collection `name` of `graph` that programs add to."""
    return graph.__dict__.setdefault("_collections", {}).setdefault(name, [])


def _kept(graph, key):
    """The collections tapeflow keeps itself (Note [graph collections])."""
    if key == GraphKeys.GLOBAL_VARIABLES:
        return graph_variables(graph)
    if key == GraphKeys.TRAINABLE_VARIABLES:
        return graph_variables(graph, trainable=True)
    if key == GraphKeys.GLOBAL_STEP:
        step = graph.__dict__.get("_global_step", {}).get("global_step")
        return [] if step is None else [step]
    return []


@tf_export("compat.v1.get_collection")
def get_collection(key, scope=None):
    """The items of the collection `key` of the default graph (a copy), those whose `name`
    matches the regular expression `scope` from its start when given.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Variable(1.0, name="w")
    ...     tf.compat.v1.add_to_collection("mine", 3)
    ...     [x.name for x in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)], \\
    ...         tf.compat.v1.get_collection("mine")
    (['w:0'], [3])
    """
    graph = _graph()
    items = _kept(graph, key) + list(graph.__dict__.get("_collections", {}).get(key, ()))
    if scope is None:
        return items
    return [x for x in items if hasattr(x, "name") and re.match(scope, x.name)]


@tf_export("compat.v1.get_collection_ref")
def get_collection_ref(key):
    """The list of the collection `key` that programs add to, itself (changes stay).

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     tf.compat.v1.get_collection_ref("mine").append(1)
    ...     tf.compat.v1.get_collection("mine")
    [1]
    """
    return _collection(_graph(), key)


@tf_export("compat.v1.add_to_collection", names_op=False)
def add_to_collection(name, value):
    """Appends `value` to the collection `name` of the default graph.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, "op")
    ...     tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    ['op']
    """
    _collection(_graph(), name).append(value)


@tf_export("compat.v1.add_to_collections", names_op=False)
def add_to_collections(names, value):
    """Appends `value` to each collection of `names` (one name or several).

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     tf.compat.v1.add_to_collections(["a", "b"], 1)
    ...     tf.compat.v1.get_collection("b")
    [1]
    """
    for name in [names] if isinstance(names, str) else set(names):
        add_to_collection(name, value)
