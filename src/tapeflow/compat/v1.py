"""`tf.compat.v1`: TF1 graphs, placeholders, sessions and `gradients` with the v1 signature."""

from tapeflow.graph.gradients import gradients_v1 as gradients  # noqa: F401
from tapeflow.graph.gradients import hessians_v1 as hessians  # noqa: F401
from tapeflow.graph.graph import get_default_graph  # noqa: F401
from tapeflow.graph.session import Session, placeholder  # noqa: F401
