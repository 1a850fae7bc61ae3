"""Cross-device reductions: how a strategy combines its replicas' values.

All replicas of a `MirroredStrategy` live in this process, so every implementation
TensorFlow offers (`ReductionToOneDevice`, `NcclAllReduce`, `HierarchicalCopyAllReduce`)
is the same in-process sum: dense values are added, `IndexedSlices` stay sparse (their
rows and indices concatenated, as TensorFlow's), MEAN divides by the number of replicas.
The results are copied to each destination device (a `Mirrored`).  The reductions are
tapeflow ops, so they run eagerly or become graph ops inside a `tf.function`.
`MultiWorkerMirroredStrategy` subclasses `CrossDeviceOps` to add the MPI collective
after `_reduce_local` (distribute/collective_all_reduce_strategy.py).

Note [reduction checks]: before adding, the replicas' values are checked to have one
dtype and compatible shapes (for `IndexedSlices`, their rows' shape), so that a replica
passing a value of another shape fails at once with a ValueError naming the value (its
position in the batch and, in a graph, its name) and the shape and dtype on each
replica, rather than broadcasting silently.
"""

from tapeflow.distribute import values as values_lib
from tapeflow.distribute.reduce_util import ReduceOp
from tapeflow.framework import device as device_lib
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import array_ops, join_ops, math_ops


def get_devices_from(destinations):
    """The canonical device names of `destinations` (distributed values, a variable or tensor, a string)."""
    if isinstance(destinations, values_lib.DistributedValues):
        return tuple(device_lib.canonical_name(d) for d in destinations._devices)
    if isinstance(destinations, str):
        return (device_lib.canonical_name(destinations),)
    return (device_lib.canonical_name(destinations.device),)


def validate_destinations(destinations):
    """Raises ValueError for destinations that are empty or of another kind."""
    if not isinstance(destinations, (values_lib.DistributedValues, Tensor, IndexedSlices, str)) and not getattr(
            destinations, "_is_variable", False):
        raise ValueError("destinations must be one of a `DistributedValues` object, a tf.Variable object, or a "
                         "device string.")
    if isinstance(destinations, str) and not destinations:
        raise ValueError("destinations can not be empty")


def reduce_non_distributed_value(reduce_op, value, destinations, num_replicas_in_graph):
    """A value that is the same on every replica, reduced: MEAN keeps it, SUM is refused on
    several replicas (which value would be meant is ambiguous), as TensorFlow does.

    Raises:
      ValueError: SUM of a plain value over several replicas.
    """
    if isinstance(value, values_lib.DistributedValues):
        raise ValueError("You are passing a `DistributedValues` to `reduce_non_distributed_value`, which is not "
                         "allowed.")
    if reduce_op is ReduceOp.MEAN:
        return value
    if num_replicas_in_graph != 1:
        raise ValueError(f"A non-DistributedValues value {value} cannot be reduced with the given reduce op "
                         f"{reduce_op}.")
    validate_destinations(destinations)
    return simple_broadcast(value, destinations)


def _copy(value, device):
    with device_lib.device(device):
        if isinstance(value, IndexedSlices):
            return IndexedSlices(array_ops.identity(value.values), array_ops.identity(value.indices),
                                 value.dense_shape)
        return array_ops.identity(value)


def simple_broadcast(value, destinations, always_mirrored=False):
    """`value` copied to each destination device: one tensor, or a `Mirrored` of the copies."""
    devices = get_devices_from(destinations)
    if len(devices) == 1 and not always_mirrored:
        return _copy(value, devices[0])
    return values_lib.Mirrored([_copy(value, d) for d in devices])


def _shape_text(shape):
    if shape.rank is None:
        return "[<unknown rank>]"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _describe(value):
    if isinstance(value, IndexedSlices):
        values = value.values
        return f"IndexedSlices of {values.dtype.name} rows {_shape_text(TensorShape(values.shape[1:]))}"
    return f"{value.dtype.name}{_shape_text(value.shape)}"


def _shape_key(value):
    return TensorShape(value.values.shape[1:]) if isinstance(value, IndexedSlices) else value.shape


def check_replica_values(values, name, reduce_op):
    """Raises ValueError unless the replicas' `values` have one dtype and compatible shapes
    (Note [reduction checks])."""
    first = values[0]
    sparse = isinstance(first, IndexedSlices)
    for v in values[1:]:
        if v.dtype != first.dtype or isinstance(v, IndexedSlices) != sparse or not _shape_key(
                v).is_compatible_with(_shape_key(first)):
            each = ", ".join(f"replica {i}: {_describe(x)}" for i, x in enumerate(values))
            raise ValueError(f"Cannot reduce ({reduce_op.value}) {name} across replicas: its shape or dtype differs "
                             f"between replicas ({each}). Every replica must pass values of the same shape and "
                             "dtype, in the same order.")


def _value_name(values, position, count):
    name = f"value {position}" + (f" of the {count} in the batch" if count > 1 else "")
    try:
        return f"{name} ('{values[0].name}')"
    except (AttributeError, ValueError):         # eager tensors have no name
        return name


def _add(values):
    """The sum of the replicas' values: dense added, IndexedSlices concatenated."""
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, IndexedSlices) for v in values):
        return IndexedSlices(join_ops.concat([v.values for v in values], 0),
                             join_ops.concat([v.indices for v in values], 0), values[0].dense_shape)
    return math_ops.add_n([convert_to_tensor(v) for v in values])


def divide_by_n(value, n):
    """`value` / n (IndexedSlices: their rows)."""
    if isinstance(value, IndexedSlices):
        return IndexedSlices(value.values / n, value.indices, value.dense_shape)
    return value / n


@tf_export("distribute.CrossDeviceOps")
class CrossDeviceOps:
    """How a strategy reduces and broadcasts values across its replicas' devices.

    >>> import tapeflow as tf
    >>> ops = tf.distribute.ReductionToOneDevice()
    >>> float(ops.reduce(tf.distribute.ReduceOp.SUM, tf.constant(2.0), "/cpu:0"))
    2.0
    """

    _num_between_graph_workers = 1

    def reduce(self, reduce_op, per_replica_value, destinations, options=None):
        """`per_replica_value` reduced onto `destinations` (cross-replica context).

        Raises:
          ValueError: `reduce_op` is not a ReduceOp; bad destinations; values whose
            shapes or dtypes differ across replicas.
        """
        per_replica_value = _as_per_replica(per_replica_value)
        validate_destinations(destinations)
        return self.reduce_implementation(_checked(reduce_op), per_replica_value, destinations, options)

    def batch_reduce(self, reduce_op, value_destination_pairs, options=None):
        """`reduce` of each (value, destinations) pair, in one batch; a list of the results."""
        pairs = []
        for pair in value_destination_pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError("Each element of `value_destination_pairs` should be a tuple of size 2.")
            validate_destinations(pair[1])
            pairs.append((_as_per_replica(pair[0]), pair[1]))
        return self.batch_reduce_implementation(_checked(reduce_op), pairs, options)

    def broadcast(self, tensor, destinations):
        """`tensor` copied to every device of `destinations`."""
        validate_destinations(destinations)
        return self.broadcast_implementation(tensor, destinations)

    def reduce_implementation(self, reduce_op, per_replica_value, destinations, options):
        return self.batch_reduce_implementation(reduce_op, [(per_replica_value, destinations)], options)[0]

    def batch_reduce_implementation(self, reduce_op, value_destination_pairs, options):
        results = []
        count = len(value_destination_pairs)
        for position, (value, destinations) in enumerate(value_destination_pairs):
            reduced = self._reduce_local(reduce_op, value.values, _value_name(value.values, position, count))
            if reduce_op is ReduceOp.MEAN:
                reduced = divide_by_n(reduced, len(value.values))
            results.append(simple_broadcast(reduced, destinations))
        return results

    def broadcast_implementation(self, tensor, destinations):
        return simple_broadcast(tensor, destinations, always_mirrored=True)

    def _reduce_local(self, reduce_op, values, name):
        """The sum of this process's replicas' `values` (checked: Note [reduction checks]); MEAN
        is not divided here."""
        check_replica_values(values, name, reduce_op)
        if any(isinstance(v, IndexedSlices) for v in values) and not all(isinstance(v, IndexedSlices) for v in values):
            values = [convert_to_tensor(v) for v in values]
        return _add(values)


def _checked(reduce_op):
    if reduce_op not in (ReduceOp.SUM, ReduceOp.MEAN):
        raise ValueError("`reduce_op` must be Reduce.SUM or Reduce.MEAN.")
    return reduce_op


def _as_per_replica(value):
    if isinstance(value, values_lib.DistributedValues):
        return value
    if not isinstance(value, (Tensor, IndexedSlices)):
        value = convert_to_tensor(value)
    return values_lib.PerReplica((value,))


@tf_export("distribute.ReductionToOneDevice")
class ReductionToOneDevice(CrossDeviceOps):
    """Reduces on one device, then copies the result to the destinations (here: the in-process sum)."""

    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn


class AllReduceCrossDeviceOps(CrossDeviceOps):
    """TensorFlow's all-reduce algorithms between GPUs; here the in-process sum."""

    def __init__(self, all_reduce_alg="nccl", num_packs=1):
        self._all_reduce_alg = all_reduce_alg
        self._num_packs = num_packs


@tf_export("distribute.NcclAllReduce")
class NcclAllReduce(AllReduceCrossDeviceOps):
    """NCCL all-reduce in TensorFlow; here the in-process sum."""

    def __init__(self, num_packs=1):
        if num_packs < 0:
            raise ValueError(f"NCCL all-reduce requires num_packs >= 0, but {num_packs} is specified")
        super().__init__("nccl", num_packs)


@tf_export("distribute.HierarchicalCopyAllReduce")
class HierarchicalCopyAllReduce(AllReduceCrossDeviceOps):
    """Hierarchical copy all-reduce in TensorFlow; here the in-process sum."""

    def __init__(self, num_packs=1):
        if num_packs < 0:
            raise ValueError(f"HierarchicalCopy requires num_packs >= 0, but {num_packs} is specified")
        super().__init__("hierarchical_copy", num_packs)
