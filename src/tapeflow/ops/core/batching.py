"""Batching kinds and batched tensors: what an op record says about vectorizing it.

An op declares how it runs on a batch with its record's `batch` field: one of the
kinds below (a `FamilyRule` shared by a family's preset) or a rule of its own
(Note [batching rules] in ops/core/vectorization.py, which runs them).  This module
holds what those declarations need and nothing that builds ops, so the presets
and every family can import it.
"""

from tapeflow.framework.errors import OperatorNotAllowedInGraphError
from tapeflow.framework.op_def import execute
from tapeflow.framework.shapes.abstract_values import Meta
from tapeflow.framework.tensor import Tensor


class FamilyRule:
    """A batching rule shared by an op family's preset: `fn(op_, xs, batched, attrs)`
    gets the op it runs for (Note [batching rules])."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


def _passing(op_, xs, batched, attrs):
    """Ops whose outputs are their inputs, one to one (IdentityN)."""
    return execute(op_, xs, attrs), batched


def _reduction(op_, xs, batched, attrs):
    """Ops of one input reducing (or scanning) over the example axes in attr `axis` (None: every
    axis of an example of unknown rank, which the driver reduces over the flattened example)."""
    return execute(op_, xs, {**attrs, "axis": shift_axes(attrs["axis"])}), True


# The two elementwise kinds are run by the vectorization driver itself (`_run_rule` in
# ops/core/vectorization.py), which may use ops: they carry no function.
ELEMENTWISE = FamilyRule(None)             # elementwise with NumPy broadcasting: ranks aligned, kernel once


SAME_SHAPE = FamilyRule(None)              # elementwise over inputs of one shape: shared inputs broadcast


REDUCTION = FamilyRule(_reduction)         # one input, example axes in the attr `axis`


PASSING = FamilyRule(_passing)             # output i is input i


class BatchedTensor(Tensor):
    """One example of a batch inside a vectorized function (Note [batching rules])."""

    __slots__ = ("_stacked", "_level")

    _is_batched = True

    def __init__(self, stacked, level):
        shape = stacked._value.shape
        Tensor.__init__(self, Meta(None if shape is None else tuple(shape[1:]), stacked._value.dtype))
        self._stacked = stacked
        self._level = level

    def numpy(self):
        raise NotImplementedError(
            "Cannot read the value of a tensor inside a vectorized function (tf.vectorized_map, a pfor "
            "Jacobian): it stands for every example of the batch at once. Return it from the function instead.")

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __bool__(self):
        raise OperatorNotAllowedInGraphError(
            "Using a tensor inside a vectorized function as a Python `bool` is not allowed: its value "
            "differs from example to example. Use tf.where or tf.cond.")

    def __repr__(self):
        return f"<tf.Tensor (vectorized) shape={self.shape} dtype={self.dtype.name}>"

    __str__ = __repr__


class NotBatchable(Exception):
    """Raised by a rule for inputs it cannot vectorize (a batched size argument): the op
    then runs once per example, as if it had no rule."""


def example_rank(x, is_batched):
    """The rank of one example of `x` (None when unknown)."""
    ndim = x._value.ndim
    return None if ndim is None else ndim - 1 if is_batched else ndim


def shift_axes(axes, count=1):
    """Example axes (ints, or one int) as axes of the stacked tensor: the batch axes come first,
    so a non-negative axis moves by `count`, and one counted from the end (examples of unknown
    rank) stays."""
    if isinstance(axes, int):
        return axes + count if axes >= 0 else axes
    return tuple(a + count if a >= 0 else a for a in axes)


def sized_by_values(xs, batched, **attrs):
    """Where and Unique: each example's output has its own length, read from its values."""
    raise NotBatchable
