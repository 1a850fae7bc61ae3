"""Loss-scale optimizers: Keras's `LossScaleOptimizer` and TF1's `MixedPrecisionLossScaleOptimizer`.

Both multiply the loss by a loss scale, divide the gradients by it, and skip
a step whose gradients are not finite (the variables untouched) while the
dynamic scale is lowered; after a run of good steps the scale doubles.  Both
count the skipped steps and report each (`skipped_steps`, `last_nonfinite`:
mixed_precision/nonfinite.py).  An optimizer sees only gradients, so its
report names the first variable whose gradient is not finite, the dtype, the
loss scale and the step, but no op: the op is known to
LossScaleGradientTape, which walks its own records.

Note [two Keras APIs]: TensorFlow 2.21's `tf.keras.mixed_precision.
LossScaleOptimizer` is Keras 3's by default and tf_keras's (Keras 2) with
TF_USE_LEGACY_KERAS=1, and they disagree on what `apply_gradients` takes:

* Keras 3: `scaled_loss = opt.scale_loss(loss)`, then `apply_gradients` of
  the *scaled* gradients, which it checks, divides by the scale (in the
  promoted dtype: float16 gradients become float32) and applies.  A
  non-finite step halves the scale, with no floor, and leaves `iterations`
  as it was.
* Keras 2: `opt.get_scaled_loss(loss)`, `opt.get_unscaled_gradients(grads)`
  (`g * (1/scale)` in the gradient's dtype), then `apply_gradients` of the
  *unscaled* gradients.  A non-finite step halves the scale but not below 1
  and still increments `iterations`; `dynamic=False` gives a fixed scale.

Both grow the scale after `dynamic_growth_steps` good steps in a row and
reset the count on any scale change.  tapeflow's one class runs either
program with its own numbers: it follows Keras 3 until the program calls
`get_unscaled_gradients` (which Keras 3 does not have, and which a Keras 2
program must call before `apply_gradients`) or asks for `dynamic=False`, and
from then on follows Keras 2.  A gradient is never divided twice.

Note [loss-scale optimizers under a strategy]: `apply_gradients` called in
the replicas of `strategy.run` moves to the cross-replica context with a
merge_call, as Keras's does.  There each replica tests its own gradients, the
flags are summed across replicas (and MPI processes) and the step is finite
only when every replica's is; then every replica hands its gradients to the
inner optimizer (which sums them across replicas) or the step is skipped on
all of them, and the scale, mirrored, changes once.  (Keras 3 takes the first
replica's verdict, which lets another replica's inf reach the summed
gradients; tapeflow's verdict covers all of them.)
"""
from tapeflow.ops.core import basic_ops

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import executing_eagerly
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.graph import control_flow
from tapeflow.graph.scopes import control_dependencies
from tapeflow.graph.session import group_ops
from tapeflow.mixed_precision import nonfinite
from tapeflow.mixed_precision.loss_scale import (LossScale, DynamicLossScale, FixedLossScale, _all_finite,
                                                 finite_on_every_replica)
from tapeflow.ops import math_ops, unary_ops
from tapeflow.ops.variables import Variable
from tapeflow.optimizers.optimizer import Optimizer as KerasOptimizer, _strategy_replica
from tapeflow.optimizers.v1_optimizer import Optimizer as V1Optimizer

_DEFAULT_SCALE = 2.0 ** 15
_DEFAULT_GROWTH_STEPS = 2000
_UNSET = object()


def _skip_report(log, scale, step, grads, names):
    """Counts a skipped step on `log` and records its report (the first non-finite
    gradient's variable and dtype) when `should_apply` is False (Note [skip reports in
    graphs] in nonfinite.py)."""
    kept = [(g, n) for g, n in zip(grads, names, strict=True) if g is not None]
    extra = [scale] + ([] if step is None else [step])

    def callback(values):
        bad = values[len(extra):]
        labels = [n for _, n in kept]
        dtype = next((nonfinite.dtype_name(v) for v in bad if nonfinite.is_bad(v)), None)
        log.add(nonfinite.NonFiniteReport(None, None, None, None, dtype, float(values[0]),
                                          None if step is None else int(values[1]),
                                          nonfinite.first_bad(bad, labels)))
    return extra + [g for g, _ in kept], callback


@tf_export("keras.mixed_precision.LossScaleOptimizer", "keras.optimizers.LossScaleOptimizer")
class LossScaleOptimizer:
    """An optimizer wrapper that scales the loss and skips steps whose gradients overflow.

    Runs Keras 3 programs (`scale_loss`, then `apply_gradients` of the scaled
    gradients) and Keras 2 programs (`get_scaled_loss`,
    `get_unscaled_gradients`, then `apply_gradients` of the unscaled ones),
    each with its own TensorFlow 2.21 numbers (Note [two Keras APIs]).

    Args:
      inner_optimizer: the `tf.keras.optimizers.Optimizer` to wrap.
      initial_scale: the first loss scale (2**15).  Keras 2's positional order
        `(inner_optimizer, dynamic, initial_scale, dynamic_growth_steps)` is
        accepted too: a bool second argument is `dynamic`.
      dynamic_growth_steps: good steps in a row after which the scale doubles.
      name: the optimizer's name.
      dynamic: False for a fixed loss scale (Keras 2 only; `initial_scale` required).

    Beyond TensorFlow: `skipped_steps` counts the steps skipped and
    `last_nonfinite` reports the last one (a `NonFiniteReport`: the step, the
    loss scale, the first variable whose gradient is not finite and its dtype;
    no op, since an optimizer sees only gradients; LossScaleGradientTape names
    the op).

    Raises:
      TypeError: `inner_optimizer` is no Keras optimizer, or a LossScaleOptimizer.
      ValueError: an unknown argument, `dynamic=False` without `initial_scale`,
        or `dynamic_growth_steps` with `dynamic=False`.

    >>> import tapeflow as tf
    >>> opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.5), initial_scale=4.0)
    >>> w = tf.Variable(1.0)
    >>> with tf.GradientTape() as tape:
    ...     loss = opt.scale_loss(w * w)
    >>> _ = opt.apply_gradients([(tape.gradient(loss, w), w)])
    >>> float(w), float(opt.dynamic_scale), int(opt.step_counter)
    (0.0, 4.0, 1)
    >>> _ = opt.apply_gradients([(tf.constant(float("inf")), w)])     # skipped
    >>> float(w), float(opt.dynamic_scale), opt.skipped_steps
    (0.0, 2.0, 1)
    """

    def __init__(self, inner_optimizer, *args, **kwargs):
        if args and isinstance(args[0], bool):        # Keras 2's order
            names = ("dynamic", "initial_scale", "dynamic_growth_steps")
        else:
            names = ("initial_scale", "dynamic_growth_steps", "name")
        if len(args) > len(names):
            raise TypeError(f"LossScaleOptimizer takes at most {len(names) + 1} positional arguments.")
        for key, value in zip(names, args):
            if key in kwargs:
                raise TypeError(f"LossScaleOptimizer got multiple values for argument '{key}'")
            kwargs[key] = value
        dynamic = kwargs.pop("dynamic", True)
        initial_scale = kwargs.pop("initial_scale", _UNSET)
        growth_steps = kwargs.pop("dynamic_growth_steps", _UNSET)
        self.name = kwargs.pop("name", None) or "loss_scale_optimizer"
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: `{'`, `'.join(kwargs)}`.")
        _check_inner(inner_optimizer, KerasOptimizer, "tf.keras.optimizers.Optimizer")
        if not isinstance(dynamic, bool):
            raise TypeError(f'"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, but got: {dynamic!r}')
        if not dynamic:
            if initial_scale in (_UNSET, None):
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if growth_steps not in (_UNSET, None):
                raise ValueError(f'"dynamic_growth_steps" must be None if "dynamic" is False, but got: {growth_steps}')
        self.inner_optimizer = inner_optimizer
        inner_optimizer.loss_scale_factor = None        # Keras 3: the inner optimizer must not scale again
        self.initial_scale = _DEFAULT_SCALE if initial_scale in (_UNSET, None) else initial_scale
        self.dynamic_growth_steps = None if not dynamic else (
            _DEFAULT_GROWTH_STEPS if growth_steps in (_UNSET, None) else growth_steps)
        self._dynamic = dynamic
        self._keras2 = not dynamic          # Note [two Keras APIs]
        self._built = False                 # Keras 3 scales by the Python initial_scale until built
        self.step_counter = Variable(np.int64(0), trainable=False, name="step_counter")
        self.dynamic_scale = Variable(np.float32(self.initial_scale), trainable=False, name="dynamic_scale")

    # -- state ------------------------------------------------------------------------------
    @property
    def dynamic(self):
        """Whether the loss scale changes (False only for Keras 2's `dynamic=False`)."""
        return self._dynamic

    @property
    def loss_scale(self):
        """The current loss scale, a float32 scalar tensor (Keras 2)."""
        return convert_to_tensor(self.dynamic_scale)

    @property
    def dynamic_counter(self):
        """Good steps since the scale last changed (the `step_counter` variable; None
        for a fixed scale) (Keras 2)."""
        return self.step_counter if self._dynamic else None

    @property
    def iterations(self):
        """The inner optimizer's `iterations`."""
        return self.inner_optimizer.iterations

    @property
    def learning_rate(self):
        """The inner optimizer's learning rate (settable)."""
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    @property
    def variables(self):
        """The loss-scale variables, then the inner optimizer's."""
        return [self.step_counter, self.dynamic_scale] + list(self.inner_optimizer.variables)

    @property
    def skipped_steps(self):
        """How many steps were skipped because their gradients were not finite (tapeflow)."""
        return nonfinite.skip_log(self).count

    @property
    def last_nonfinite(self):
        """The `NonFiniteReport` of the last skipped step, or None (tapeflow)."""
        return nonfinite.skip_log(self).last

    def build(self, var_list):
        """Creates the inner optimizer's slots for `var_list`; from now on `scale_loss` uses the
        dynamic scale (build before tracing a step that calls `scale_loss`, as in Keras 3)."""
        if not self.inner_optimizer.built:
            self.inner_optimizer.build(list(var_list))
        self._built = True

    @property
    def built(self):
        """Whether `build` (or a first `apply_gradients`) has run."""
        return self._built

    # -- scaling ------------------------------------------------------------------------------
    def scale_loss(self, loss):
        """`loss` times the loss scale (Keras 3): by the Python `initial_scale` in the loss's
        dtype until the first `apply_gradients`, then by the float32 scale (a float16 loss
        becomes float32)."""
        loss = convert_to_tensor(loss)
        if not self._built:
            return loss * basic_ops.cast(self.initial_scale, loss.dtype)
        dtype = _promoted(loss.dtype)
        return basic_ops.cast(loss, dtype) * basic_ops.cast(self.dynamic_scale, dtype)

    def get_scaled_loss(self, loss):
        """`loss` (a tensor, or a callable returning one) times the loss scale, in the
        loss's dtype (Keras 2)."""
        if callable(loss):
            def scaled():
                value = loss()
                return value * basic_ops.cast(self.loss_scale, value.dtype)
            return scaled
        loss = convert_to_tensor(loss)
        return loss * basic_ops.cast(self.loss_scale, loss.dtype)

    def get_unscaled_gradients(self, grads):
        """Each gradient times 1/loss scale in its own dtype (None kept) (Keras 2); from
        now on `apply_gradients` takes unscaled gradients (Note [two Keras APIs])."""
        self._keras2 = True
        reciprocal = 1.0 / self.loss_scale
        return [None if g is None else _times(g, basic_ops.cast(reciprocal, g.dtype)) for g in grads]

    def check_finite(self, grads):
        """A scalar bool tensor: no gradient holds an inf or NaN (None ignored)."""
        return _all_finite(grads)

    # -- applying -------------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Applies a step's gradients unless one is not finite, then updates the loss scale.

        Args:
          grads_and_vars: (gradient, variable) pairs: scaled gradients in a Keras 3
            program, unscaled ones once `get_unscaled_gradients` has been used.

        Returns:
          The inner optimizer's `iterations`.
        """
        pairs = [tuple(p) for p in grads_and_vars]
        grads, variables = [g for g, _ in pairs], [v for _, v in pairs]
        replica = _strategy_replica()
        if replica is not None:        # Note [loss-scale optimizers under a strategy]
            if self._keras2 and all(g is None for g in grads):
                raise ValueError(f"No gradients provided for any variable: {[v.name for v in variables]}.")
            replica.merge_call(self._apply_across_replicas, args=(grads, variables))
            return self.iterations
        if not self.inner_optimizer.built:      # slots exist before the conditional update
            self.inner_optimizer.build(variables)
        self._built = True
        if not self._dynamic:
            self.inner_optimizer.apply_gradients(pairs)
            return self.iterations
        if self._keras2 and all(g is None for g in grads):
            raise ValueError(f"No gradients provided for any variable: {[v.name for v in variables]}.")
        finite = self.check_finite(grads)
        scale = convert_to_tensor(self.dynamic_scale)          # read before the update (the step's scale)
        step = convert_to_tensor(self.iterations)
        report_inputs, callback = _skip_report(nonfinite.skip_log(self), scale, step, grads,
                                               [v.name for v in variables])

        def apply():
            self.inner_optimizer.apply_gradients(zip(self._applied(grads, scale), variables))

        self._apply_or_skip(finite, apply, report_inputs, callback)
        return self.iterations

    def _apply_or_skip(self, finite, apply, report_inputs, callback):
        """Runs `apply` and updates the scale for a finite step; else skips it, lowers the
        scale and reports the skip: eagerly, or as a cond in a graph."""
        def applied():
            apply()
            self._update_scale(True)
            return convert_to_tensor(True)

        def skip():
            if self._keras2:                    # Keras 2 counts a skipped step as an iteration
                self.iterations.assign_add(1)
            self._update_scale(False)
            nonfinite.report_now(report_inputs, callback)
            return convert_to_tensor(False)

        if executing_eagerly():
            applied() if bool(finite) else skip()
        else:
            control_flow.cond(finite, applied, skip)

    def _applied(self, grads, scale):
        """The gradients the inner optimizer applies: Keras 3's scaled ones divided by `scale`."""
        return grads if self._keras2 else [None if g is None else _divided(g, scale) for g in grads]

    def _apply_across_replicas(self, strategy, grads, variables):
        """`apply_gradients` in the cross-replica context: one verdict on every replica's
        gradients, then every replica applies, or the step is skipped everywhere
        (Note [loss-scale optimizers under a strategy])."""
        if not self.inner_optimizer.built:
            self.inner_optimizer.build(variables)
        self._built = True
        scale = convert_to_tensor(self.dynamic_scale)

        def apply():
            strategy.extended.call_for_each_replica(
                lambda g: self.inner_optimizer.apply_gradients(zip(self._applied(g, scale), variables)),
                args=(grads,))

        if not self._dynamic:
            apply()
            return
        finite = finite_on_every_replica(strategy, grads, self.check_finite)
        per_replica = strategy.experimental_local_results(grads)
        reported = per_replica[0]
        if executing_eagerly() and not bool(finite):   # report the first replica whose gradients overflowed
            reported = next((g for g in per_replica if not bool(self.check_finite(g))), reported)
        report_inputs, callback = _skip_report(nonfinite.skip_log(self), scale, convert_to_tensor(self.iterations),
                                               reported, [v.name for v in variables])
        self._apply_or_skip(finite, apply, report_inputs, callback)

    def _update_scale(self, finite):
        """The dynamic scale after a finite (or skipped) step: Keras 2's or Keras 3's rule
        (Note [two Keras APIs])."""
        scale, counter = convert_to_tensor(self.dynamic_scale), convert_to_tensor(self.step_counter)
        if not finite:
            lowered = math_ops.maximum(scale / 2.0, 1.0) if self._keras2 else scale * 0.5
            self.step_counter.assign(np.int64(0))
            self.dynamic_scale.assign(lowered)
            return
        if self._keras2:
            grow = math_ops.greater_equal(counter + 1, self.dynamic_growth_steps)
            raised = scale * 2.0
            raised = math_ops.where(unary_ops.is_finite(raised), raised, scale)
        else:
            grow = math_ops.equal(counter, self.dynamic_growth_steps - 1)
            raised = scale * 2.0
        self.step_counter.assign(math_ops.where(grow, basic_ops.cast(0, dtypes.int64), counter + 1))
        self.dynamic_scale.assign(math_ops.where(grow, raised, scale))

    def apply(self, grads, trainable_variables=None):
        """`apply_gradients(zip(grads, trainable_variables))` (Keras 3); the variables default
        to those the inner optimizer was built with."""
        if trainable_variables is None:
            trainable_variables = self.inner_optimizer._trainable_variables
        return self.apply_gradients(zip(grads, trainable_variables, strict=True))

    def get_config(self):
        """Keras 3's config: the name, the inner optimizer's class and config, the scale settings."""
        inner = self.inner_optimizer
        return {"name": self.name,
                "inner_optimizer": {"module": "keras.optimizers", "class_name": type(inner).__name__,
                                    "config": inner.get_config(), "registered_name": None},
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    def __repr__(self):
        return f"<LossScaleOptimizer name={self.name} inner={type(self.inner_optimizer).__name__}>"


def _check_inner(inner, base, what):
    if not isinstance(inner, base):
        raise TypeError(f'"inner_optimizer" must be an instance of `{what}`, but got: {inner!r}.')
    if isinstance(inner, (LossScaleOptimizer, MixedPrecisionLossScaleOptimizer)):
        raise TypeError(f"LossScaleOptimizer cannot wrap another LossScaleOptimizer, but got: {inner!r}")


def _promoted(dtype):
    """Keras 3's result dtype of `dtype` with float32 (the scale): float16 and bfloat16 widen."""
    return dtypes.float64 if dtype == dtypes.float64 else dtypes.float32


def _times(g, factor):
    if isinstance(g, IndexedSlices):
        return IndexedSlices(g.values * factor, g.indices, g.dense_shape)
    return g * factor


def _divided(g, scale):
    """Keras 3's `ops.divide(g, scale)`: in the promoted dtype (an IndexedSlices' values)."""
    values = g.values if isinstance(g, IndexedSlices) else convert_to_tensor(g)
    dtype = _promoted(values.dtype)
    out = basic_ops.cast(values, dtype) / basic_ops.cast(scale, dtype)
    return IndexedSlices(out, g.indices, g.dense_shape) if isinstance(g, IndexedSlices) else out


@tf_export("mixed_precision.MixedPrecisionLossScaleOptimizer")
class MixedPrecisionLossScaleOptimizer(V1Optimizer):
    """TF1's loss-scaling wrapper of a `tf.compat.v1.train` optimizer.

    `compute_gradients` (and so `minimize`) multiplies the loss by the loss
    scale and the gradients by its reciprocal; with a dynamic scale,
    `apply_gradients` updates the scale and applies the gradients only when
    all are finite (the skipped step does not increment `global_step`).

    Args:
      opt: the `tf.compat.v1.train.Optimizer` to wrap.
      loss_scale: "dynamic" (a `DynamicLossScale()`), a number (a
        `FixedLossScale`) or a `LossScale`.

    Beyond TensorFlow: `skipped_steps` and `last_nonfinite` are the loss
    scale's (mixed_precision/nonfinite.py); the report names the first
    variable whose gradient is not finite and, with `global_step`, the step.

    Raises:
      ValueError: `opt` is not a TF1 optimizer, or `loss_scale` is None or not understood.

    >>> import tapeflow as tf
    >>> w = tf.Variable(3.0)
    >>> opt = tf.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer(
    ...     tf.compat.v1.train.GradientDescentOptimizer(0.25), "dynamic")
    >>> opt.minimize(lambda: w * w)
    >>> float(w), opt.skipped_steps
    (1.5, 0)
    """

    def __init__(self, opt, loss_scale):
        if not isinstance(opt, V1Optimizer):
            raise ValueError(f'"opt" must be an instance of Optimizer, but got: {type(opt)}')
        super().__init__(opt._use_locking, opt.get_name())
        self._optimizer = opt
        self._loss_scale = _loss_scale_from(loss_scale)
        if self._loss_scale is None:
            raise ValueError("loss_scale cannot be None")

    @property
    def skipped_steps(self):
        """How many steps the loss scale skipped (tapeflow; the loss scale's count)."""
        return self._loss_scale.skipped_steps

    @property
    def last_nonfinite(self):
        """The `NonFiniteReport` of the last skipped step, or None (tapeflow)."""
        return self._loss_scale.last_nonfinite

    def compute_gradients(self, loss, var_list=None, gate_gradients=V1Optimizer.GATE_OP, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """The inner optimizer's gradients of `loss` times the loss scale, each times 1/scale."""
        pairs = self._optimizer.compute_gradients(
            self._scale_loss(loss), var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method, colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss)
        reciprocal = 1 / self._loss_scale()
        return [(None if g is None else _times(g, reciprocal), v) for g, v in pairs]

    def _scale_loss(self, loss):
        scale = self._loss_scale()
        if callable(loss):
            def scaled():
                value = loss()
                return value * basic_ops.cast(scale, value.dtype)
            return scaled
        return loss * basic_ops.cast(scale, loss.dtype)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Updates the loss scale and, when the gradients are finite, applies them.

        Returns:
          The op running both (graphs), None eagerly.
        """
        if not isinstance(self._loss_scale, DynamicLossScale):
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)
        pairs = tuple(grads_and_vars)
        grads = [g for g, _ in pairs]
        scale = self._loss_scale()                        # the step's scale, read before the update
        step = None if global_step is None else convert_to_tensor(global_step)
        update_op, should_apply = self._loss_scale.update(grads)
        report_inputs, callback = _skip_report(nonfinite.skip_log(self._loss_scale), scale, step,
                                               grads, [v.name for _, v in pairs])
        name = name if name is not None else self.get_name()
        if executing_eagerly():
            if bool(should_apply):
                self._optimizer.apply_gradients(pairs, global_step, name + "-wrapped")
            else:
                nonfinite.report_now(report_inputs, callback)
            return None
        self._optimizer._create_slots([v for g, v in pairs if g is not None])   # outside the cond's branch

        def apply():
            with control_dependencies([self._optimizer.apply_gradients(pairs, global_step, name + "-wrapped")]):
                return convert_to_tensor(True)

        def skip():
            nonfinite.report_now(report_inputs, callback)
            return convert_to_tensor(False)
        applied = control_flow.cond(should_apply, apply, skip)
        return group_ops([applied, update_op], name)

    def variables(self):
        """The inner optimizer's variables and the loss scale's."""
        extra = []
        if isinstance(self._loss_scale, DynamicLossScale):
            extra = [self._loss_scale._current_loss_scale, self._loss_scale._num_good_steps]
        return self._optimizer.variables() + extra


def _loss_scale_from(identifier):
    """TensorFlow's `loss_scale.get`: a number, "dynamic", a LossScale, or None."""
    if isinstance(identifier, (int, float)) and not isinstance(identifier, bool):
        return FixedLossScale(identifier)
    if isinstance(identifier, str) and identifier == "dynamic":
        return DynamicLossScale()
    if isinstance(identifier, LossScale) or identifier is None:
        return identifier
    raise ValueError(f"Could not interpret loss scale identifier: {identifier}")
