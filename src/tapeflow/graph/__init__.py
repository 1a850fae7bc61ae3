"""Graphs: tf.function, TF1 graphs and sessions, tf.gradients, control flow."""

from tapeflow.graph import (  # noqa: F401
    control_flow, default_graph, executor, function, gradients, graph, scopes, session, tensor_array,
)
from tapeflow.graph import autograph  # noqa: E402,F401  (after control_flow, which it stages into)
from tapeflow.graph import public_types  # noqa: E402,F401
