"""`tf.compat.v1`: TF1 graphs, placeholders, sessions, variable collections and
initializers, and `gradients` with the v1 signature."""

from tapeflow.framework import variables as _variables
from tapeflow.graph.gradients import gradients_v1 as gradients  # noqa: F401
from tapeflow.graph.gradients import hessians_v1 as hessians  # noqa: F401
from tapeflow.graph.graph import get_default_graph  # noqa: F401
from tapeflow.graph.session import (Session, global_variables, global_variables_initializer,  # noqa: F401
                                    placeholder, trainable_variables, variables_initializer)


class _VariableV1Type(type):
    """`tf.compat.v1.Variable(...)` makes a `tf.Variable` (TF1's extra arguments accepted)."""

    def __call__(cls, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None, synchronization=None, aggregation=None,
                 shape=None):
        return _variables.Variable(initial_value, trainable=trainable, validate_shape=validate_shape,
                                   caching_device=caching_device, name=name, variable_def=variable_def,
                                   dtype=dtype, import_scope=import_scope, constraint=constraint,
                                   synchronization=synchronization, aggregation=aggregation, shape=shape)


class Variable(metaclass=_VariableV1Type):
    """TF1's `tf.compat.v1.Variable`: construction makes a `tf.Variable`."""


def initialize_all_variables():
    """Deprecated alias of `global_variables_initializer`."""
    return global_variables_initializer()


def all_variables():
    """Deprecated alias of `global_variables`."""
    return global_variables()
