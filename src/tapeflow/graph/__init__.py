"""Graphs: tf.function, TF1 graphs and sessions, tf.gradients, control flow."""

from tapeflow.graph import (  # noqa: F401
    control_flow, default_graph, executor, function, gradients, graph, scopes, session, tensor_array,
)
from tapeflow.graph import autograph, public_types  # noqa: F401
