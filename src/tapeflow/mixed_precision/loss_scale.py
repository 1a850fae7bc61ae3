"""Loss scales: the number a loss is multiplied by (and its gradients divided by).

A float16 gradient smaller than 2**-24 flushes to zero; multiplying the loss
by a large constant moves every intermediate gradient up by the same factor,
and dividing the final gradients by it undoes the scaling exactly (the
factors are powers of two). `FixedLossScale` keeps one value;
`DynamicLossScale` lowers its value when a step's gradients overflow and
raises it again after a run of good steps.

The dynamic state lives in two non-trainable variables, updated with
branch-free tensor arithmetic, so `update` runs the same eagerly, inside
`tf.function` and in TF1 graphs.

Note [loss scales under a strategy]: a loss scale made under a strategy's
`scope()` keeps its variables mirrored, one copy per replica.  `update` is
meant for the cross-replica context (a `merge_call`, as LossScaleGradientTape
and the loss-scale optimizers do): there the replicas' gradients are
`PerReplica` values, each replica tests its own for infs and NaNs, the
answers are reduced across replicas (and MPI processes), and the one verdict
updates every copy of the scale at once.  So the scale and the good-step
count stay identical on every replica, and all replicas skip or apply a step
together.
"""

import abc

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import executing_eagerly
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import array_ops, math_ops, reduction_ops, unary_ops
from tapeflow.ops.core import basic_ops, primitives
from tapeflow.ops.variables import Variable
from tapeflow.graph.scopes import control_dependencies
from tapeflow.mixed_precision.nonfinite import skip_log


@tf_export("mixed_precision.experimental.LossScale", "mixed_precision.LossScale")
class LossScale(metaclass=abc.ABCMeta):
    """Base class of loss scales; use `FixedLossScale` or `DynamicLossScale`.

    Calling a loss scale returns its current value as a scalar float32
    tensor; `update(grads)` adjusts it from one step's (unscaled) gradients.
    """

    @abc.abstractmethod
    def __call__(self):
        """The current loss scale, a scalar float32 tensor."""

    @abc.abstractmethod
    def update(self, grads):
        """Adjusts the loss scale from one step's unscaled gradients.

        Args:
          grads: a nested structure of gradients (tensors, IndexedSlices or None;
            None is ignored).

        Returns:
          `(update_op, should_apply_gradients)`: `update_op` is None when
          executing eagerly (the update has happened) and, in a graph, the
          tensor that performs it; `should_apply_gradients` is a bool or a
          scalar bool tensor, False when the step's gradients must be skipped.
        """

    @abc.abstractmethod
    def get_config(self):
        """The constructor arguments, as a dict."""

    @property
    def skipped_steps(self):
        """How many steps (or LossScaleGradientTape rounds) the users of this loss scale
        skipped because their gradients were not finite: a tapeflow addition, counted
        only by them, never by `update` itself (mixed_precision/nonfinite.py)."""
        return skip_log(self).count

    @property
    def last_nonfinite(self):
        """The `NonFiniteReport` of the last skipped step, or None (a tapeflow addition)."""
        return skip_log(self).last

    @classmethod
    def from_config(cls, config):
        """A loss scale made from `get_config()`'s dict."""
        return cls(**config)


@tf_export("mixed_precision.experimental.FixedLossScale", "mixed_precision.FixedLossScale")
class FixedLossScale(LossScale):
    """A loss scale that never changes.

    Args:
      loss_scale_value: a Python int or float, at least 1.

    Raises:
      ValueError: `loss_scale_value` is not a Python number, or is below 1.

    >>> import tapeflow as tf
    >>> scale = tf.mixed_precision.experimental.FixedLossScale(128)
    >>> float(scale()), scale.update([tf.constant(float("inf"))])
    (128.0, (None, True))
    """

    def __init__(self, loss_scale_value):
        if not isinstance(loss_scale_value, (int, float)):
            raise ValueError(f"loss_scale_value must be a Python int or float; got "
                             f"{type(loss_scale_value).__name__} {loss_scale_value!r}.")
        if loss_scale_value < 1:
            raise ValueError(f"loss_scale_value must be at least 1; got {loss_scale_value!r}.")
        self._loss_scale_value = float(loss_scale_value)

    def __call__(self):
        return convert_to_tensor(self._loss_scale_value)

    def update(self, grads):
        return None, True

    def __repr__(self):
        return f"FixedLossScale({self._loss_scale_value})"

    def get_config(self):
        return {"loss_scale_value": self._loss_scale_value}


def _all_finite(grads):
    """A scalar bool tensor: no gradient of `grads` holds an inf or NaN (None ignored)."""
    values = [g.values if isinstance(g, IndexedSlices) else g for g in nest.flatten(grads) if g is not None]
    flags = [reduction_ops.reduce_all(unary_ops.is_finite(v)) for v in values]
    if not flags:
        return convert_to_tensor(True)
    return reduction_ops.reduce_all(primitives.stack(flags))


def _finite_everywhere(grads):
    """`_all_finite` of every replica's gradients together (Note [loss scales under a strategy]).

    Under a strategy the answer is one scalar shared by every replica: each replica tests
    its own gradients, the flags (as float32: booleans are not reduced) are summed across
    replicas (and processes), and the step is finite when the sum is the replica count.
    Called in a replica context, the test moves to the cross-replica context by a
    merge_call, so every replica gets the same answer.
    """
    from tapeflow.distribute import distribute_lib        # the strategy layer sits above this one
    if not distribute_lib.has_strategy():
        return _all_finite(grads)
    strategy = distribute_lib.get_cross_replica_context()
    if strategy is None:
        return distribute_lib.get_replica_context().merge_call(lambda _, g: _finite_everywhere(g), args=(grads,))
    return finite_on_every_replica(strategy, nest.flatten(grads))


def finite_on_every_replica(strategy, grads, check=_all_finite):
    """In `strategy`'s cross-replica context: a scalar bool tensor, `check` (a scalar bool
    of one replica's gradients) true on every replica of every process."""
    # distribute imports mixed_precision (loss scales under a strategy)
    from tapeflow.distribute.reduce_util import ReduceOp
    flags = strategy.extended.call_for_each_replica(lambda g: basic_ops.cast(check(g), dtypes.float32), args=(grads,))
    total = strategy.reduce(ReduceOp.SUM, flags, axis=None)
    return math_ops.equal(total, float(strategy.num_replicas_in_sync))


@tf_export("mixed_precision.experimental.DynamicLossScale", "mixed_precision.DynamicLossScale")
class DynamicLossScale(LossScale):
    """A loss scale that halves on overflow and doubles after a run of good steps.

    The rule applied by `update`: when any gradient is inf or NaN, the scale
    is divided by `multiplier` (never below 1), the count of good steps goes
    back to 0 and the gradients should be skipped. Otherwise the count grows
    by one; when it reaches `increment_period` the scale is multiplied by
    `multiplier` (kept as is if the product would be infinite) and the count
    restarts at 0.

    Args:
      initial_loss_scale: the starting scale (default 2**15, about half the
        largest float16: a scale too high falls quickly, one too low rises slowly).
      increment_period: good steps in a row before the scale rises.
      multiplier: the factor the scale rises and falls by.

    >>> import tapeflow as tf
    >>> scale = tf.mixed_precision.experimental.DynamicLossScale(8.0, increment_period=1)
    >>> _, ok = scale.update([tf.constant(float("nan"))])
    >>> bool(ok), float(scale())
    (False, 4.0)
    >>> _, ok = scale.update([tf.constant(1.0)])
    >>> bool(ok), float(scale())
    (True, 8.0)
    """

    def __init__(self, initial_loss_scale=2 ** 15, increment_period=2000, multiplier=2.0):
        self._initial_loss_scale = float(initial_loss_scale)
        self._increment_period = int(increment_period)
        self._multiplier = float(multiplier)
        self._current_loss_scale = Variable(self._initial_loss_scale, trainable=False,
                                            name="current_loss_scale", dtype=dtypes.float32)
        self._num_good_steps = Variable(0, trainable=False, name="good_steps", dtype=dtypes.int64)

    @property
    def initial_loss_scale(self):
        return self._initial_loss_scale

    @property
    def increment_period(self):
        return self._increment_period

    @property
    def multiplier(self):
        return self._multiplier

    def __call__(self):
        return convert_to_tensor(self._current_loss_scale)

    def update(self, grads):
        finite = _finite_everywhere(grads)
        scale = convert_to_tensor(self._current_loss_scale)
        good = convert_to_tensor(self._num_good_steps) + 1
        grow = math_ops.greater_equal(good, self._increment_period)
        raised = scale * self._multiplier
        raised = math_ops.where(unary_ops.is_finite(raised), raised, scale)
        lowered = math_ops.maximum(scale / self._multiplier, 1.0)
        new_scale = math_ops.where(finite, math_ops.where(grow, raised, scale), lowered)
        new_good = math_ops.where(math_ops.logical_and(finite, math_ops.logical_not(grow)),
                                  good, basic_ops.cast(0, dtypes.int64))
        writes = [self._current_loss_scale.assign(new_scale), self._num_good_steps.assign(new_good)]
        if executing_eagerly():
            return None, finite
        with control_dependencies(writes):
            return array_ops.identity(finite), finite

    def __repr__(self):
        if executing_eagerly():
            return (f"DynamicLossScale(current_loss_scale={self._current_loss_scale.numpy()}, "
                    f"num_good_steps={self._num_good_steps.numpy()}, "
                    f"initial_loss_scale={self.initial_loss_scale}, increment_period={self.increment_period}, "
                    f"multiplier={self.multiplier})")
        return (f"DynamicLossScale(initial_loss_scale={self.initial_loss_scale}, "
                f"increment_period={self.increment_period}, multiplier={self.multiplier})")

    def get_config(self):
        return {"initial_loss_scale": self.initial_loss_scale,
                "increment_period": self.increment_period,
                "multiplier": self.multiplier}
