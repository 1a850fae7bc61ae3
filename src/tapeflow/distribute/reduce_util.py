"""`tf.distribute.ReduceOp`: how values from the replicas are combined."""

import enum

from tapeflow.framework.export import tf_export
from tapeflow.ops.variable_creation import VariableAggregation


@tf_export("distribute.ReduceOp")
class ReduceOp(enum.Enum):
    """SUM adds the replicas' values; MEAN adds them and divides by the number of replicas.

    >>> import tapeflow as tf
    >>> tf.distribute.ReduceOp("SUM") is tf.distribute.ReduceOp.SUM
    True
    >>> tf.distribute.ReduceOp.from_variable_aggregation(tf.VariableAggregation.MEAN)
    <ReduceOp.MEAN: 'MEAN'>
    """

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        """The ReduceOp of a variable aggregation (SUM or MEAN).

        Raises:
          ValueError: NONE or ONLY_FIRST_REPLICA, which reduce nothing.
        """
        found = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}.get(aggregation)
        if found is None:
            raise ValueError(f"Could not convert from `tf.VariableAggregation` {aggregation} to"
                             "`tf.distribute.ReduceOp` type")
        return found


def canonical(reduce_op):
    """`reduce_op` as a ReduceOp: strings are upper-cased ("sum"); other objects are returned
    as they are, for the caller to reject as TensorFlow does.

    Raises:
      ValueError: a string that names no ReduceOp ("MAX").
    """
    if isinstance(reduce_op, str):
        return ReduceOp(reduce_op.upper())
    return reduce_op
