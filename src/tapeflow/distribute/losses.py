"""`tf.nn.compute_average_loss` and `tf.nn.scale_regularization_loss`: losses whose shares
on the replicas add up to the loss of the whole (global) batch, so that gradients summed
across replicas are the gradients of one replica on the concatenated batch."""

from tapeflow.framework import dtypes
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor as _Symbolic
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import array_ops, math_ops
from tapeflow.ops.core import basic_ops, primitives
from tapeflow.distribute.distribute_lib import get_strategy
from tapeflow.distribute.thread_mode import has_strategy, in_cross_replica_context

@tf_export("nn.compute_average_loss")
def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """The sum of `per_example_loss` (weighted by `sample_weight`) divided by the global batch
    size: by default this replica's batch times the number of replicas in sync, so the
    replicas' losses add up to the mean over the whole batch.

    Raises:
      ValueError: a scalar `per_example_loss`, or a `global_batch_size` that is not a scalar.
      TypeError: a `global_batch_size` that is not an integer.
      InvalidArgumentError: a negative `global_batch_size`.
      RuntimeError: called in cross-replica context without `global_batch_size`.

    >>> import tapeflow as tf
    >>> float(tf.nn.compute_average_loss(tf.constant([1.0, 2.0, 3.0])))
    2.0
    >>> float(tf.nn.compute_average_loss(tf.constant([1.0, 2.0]), global_batch_size=4))
    0.75
    """
    loss = convert_to_tensor(per_example_loss)
    dtype = loss.dtype
    if loss.shape.rank == 0:
        raise ValueError("Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1. "
                         f"Received per_example_loss={loss} with rank 0")
    if sample_weight is not None:
        loss = basic_ops.cast(_weighted(loss, convert_to_tensor(sample_weight)), dtype)
    if global_batch_size is None:
        if has_strategy() and in_cross_replica_context():
            raise RuntimeError("You are calling `compute_average_loss` in cross replica context, while it was "
                               "expected to be called in replica context.")
        global_batch_size = basic_ops.shape(loss)[0] * get_strategy().num_replicas_in_sync
    size = convert_to_tensor(global_batch_size)
    if size.shape.rank != 0:
        raise ValueError(f"global_batch_size must be scalar. Expected scalar shape, saw shape: {size.shape}.")
    if not size.dtype.is_integer:
        raise TypeError(f"global_batch_size must be an integer. Found: tensor of dtype {size.dtype.name}")
    if not isinstance(size, _Symbolic) and int(size) < 0:
        raise InvalidArgumentError(None, None, f"global_batch_size must be non-negative. Got {int(size)}.")
    return math_ops.div_no_nan(primitives.reduce_sum(loss), basic_ops.cast(size, dtype))


def _weighted(loss, weight):
    """`loss * weight` in float32, a weight of one rank more or less squeezed or expanded (TF's rule)."""
    loss, weight = basic_ops.cast(loss, dtypes.float32), basic_ops.cast(weight, dtypes.float32)
    rank, weight_rank = loss.shape.rank, weight.shape.rank
    if rank is not None and weight_rank:
        if weight_rank - rank == 1:
            weight = array_ops.squeeze(weight, [-1])
        elif rank - weight_rank == 1:
            weight = primitives.expand_dims(weight, -1)
    return loss * weight


@tf_export("nn.scale_regularization_loss")
def scale_regularization_loss(regularization_loss):
    """The sum of `regularization_loss` divided by the number of replicas in sync, so that the
    replicas' shares add up to it once.

    Raises:
      RuntimeError: called in cross-replica context.

    >>> import tapeflow as tf
    >>> float(tf.nn.scale_regularization_loss(tf.constant([1.0, 2.0])))
    3.0
    """
    if has_strategy() and in_cross_replica_context():
        raise RuntimeError("You are calling `scale_regularization_loss` in cross replica context, while it was "
                           "expected to be called in replica context.")
    return primitives.reduce_sum(regularization_loss) / get_strategy().num_replicas_in_sync
