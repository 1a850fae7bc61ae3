"""LossScaleGradientTape: a GradientTape that scales the target and unscales the gradients.

Note [loss-scaled retries]: one call of `gradient` (or `jacobian`) runs
rounds of: read the loss scale, multiply the target by it while this tape
records (so the scaling is part of what is differentiated), differentiate,
multiply the gradients by 1/scale, hand them to `loss_scale.update`. The
first round always runs; another follows while `update` says the gradients
must not be applied and the scale is still above 1. So a `FixedLossScale`
takes one round, and a `DynamicLossScale` halves its way down from an
overflowing scale, counting the final finite round as a good step. The
internal tape is persistent so it survives the rounds; a one-shot tape is
released after the call. As TensorFlow's tape does, a source the target does
not reach stands in for its own gradient while `update` looks for infs and
NaNs, and its gradient is None (or zeros with `unconnected_gradients='zero'`)
in the result.

A rejected round is also counted and explained on the loss scale
(`skipped_steps`, `last_nonfinite`): the tape records where each op was
created and, only after `update` rejected a round, walks its records again to
find the op whose gradient overflowed (Note [no cost on finite steps] in
nonfinite.py).
"""

from tapeflow.eager.backprop import GradientTape
from tapeflow.framework import nest
from tapeflow.framework.context import executing_eagerly, state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.graph import control_flow
from tapeflow.graph.function import FuncGraph
from tapeflow.mixed_precision import nonfinite
from tapeflow.mixed_precision.loss_scale import LossScale
from tapeflow.ops import math_ops
from tapeflow.ops.gradient_rules import UnconnectedGradients

_SPENT = ("A non-persistent LossScaleGradientTape can only be used to compute one set of gradients "
          "(or jacobians). Create the tape with persistent=True.")


@tf_export("mixed_precision.experimental.LossScaleGradientTape")
class LossScaleGradientTape(GradientTape):
    """A GradientTape whose gradients are computed from the loss times a loss scale.

    The target is multiplied by `loss_scale()` and the gradients divided by
    it: no change mathematically, but float16 gradients too small to be
    represented survive. With a `DynamicLossScale`, gradients that overflow
    lower the scale and are computed again (Note [loss-scaled retries]).
    Do not combine it with a loss-scaling optimizer: both would update the
    loss scale.

    Beyond TensorFlow, a round whose gradients the loss scale rejects is
    explained: `skipped_steps` counts the rejected rounds and
    `last_nonfinite` is a `NonFiniteReport` naming the op whose gradient (or
    output) first became inf or NaN, its name and the line that created it.
    Both are the loss scale's, so they count across every tape (step) that
    shares it, eagerly and inside `tf.function` alike.  A `FixedLossScale`
    rejects nothing.  The tape notes where each op it records was created,
    which costs a little per recorded op; the search itself runs only after a
    rejected round.

    Args:
      loss_scale: a `tf.mixed_precision.experimental.LossScale`.
      persistent: whether `gradient`/`jacobian` may be called more than once.
      watch_accessed_variables: whether trainable variables read under the tape
        are watched automatically.

    Raises:
      ValueError: `loss_scale` is no LossScale, or the tape is made while a TF1
        graph is being built (eager execution and `tf.function` only).

    >>> import tapeflow as tf
    >>> scale = tf.mixed_precision.experimental.FixedLossScale(2 ** 15)
    >>> x = tf.constant(3.0)
    >>> with tf.mixed_precision.experimental.LossScaleGradientTape(scale) as tape:
    ...     tape.watch(x)
    ...     h = tf.cast(x, tf.float16) ** 2        # a float16 layer
    ...     y = tf.cast(h, tf.float32) * 1e-8      # dy/dh = 1e-8 is zero in float16 unscaled
    >>> print(f"{float(tape.gradient(y, x)):.2e}")
    6.00e-08

    A dynamic scale too high for a float16 gradient is lowered, and the
    rejected rounds are reported:

    >>> scale = tf.mixed_precision.experimental.DynamicLossScale()     # 2**15
    >>> w = tf.Variable(tf.constant(10.0, tf.float16))
    >>> with tf.mixed_precision.experimental.LossScaleGradientTape(scale) as tape:
    ...     y = tf.exp(w)                        # dy/dw = e^10 = 22032: times 2**15, inf
    >>> float(tape.gradient(y, w)), float(scale())
    (22032.0, 2.0)
    >>> tape.skipped_steps, tape.last_nonfinite.op_type, tape.last_nonfinite.cause
    (14, 'Exp', 'backward')
    """

    def __init__(self, loss_scale, persistent=False, watch_accessed_variables=True):
        if not isinstance(loss_scale, LossScale):
            raise ValueError(f"`loss_scale` must be an instance of LossScale, but got: {loss_scale!r}. "
                             "Pass a tf.mixed_precision.experimental.FixedLossScale or DynamicLossScale.")
        if state.graphs and not isinstance(state.graphs[0], FuncGraph):
            raise ValueError("LossScaleGradientTape is only supported in Eager mode (or inside "
                             "tf.function), not while a TF1 graph is being built.")
        super().__init__(persistent=True, watch_accessed_variables=watch_accessed_variables)
        self._outer_persistent = persistent
        self._loss_scale = loss_scale

    @property
    def skipped_steps(self):
        """How many rounds of gradients the loss scale has rejected (as not finite),
        counted over every tape and optimizer that shares it."""
        return nonfinite.skip_log(self._loss_scale).count

    @property
    def last_nonfinite(self):
        """The `NonFiniteReport` of the last rejected round, or None."""
        return nonfinite.skip_log(self._loss_scale).last

    def _push_tape(self):
        if self._tape is None:        # Note [creation sites] in nonfinite.py
            self._tape = nonfinite.SiteTape(True, self._watch_accessed_variables)
        super()._push_tape()

    def watch(self, tensor):
        if self._tape is None:
            self._tape = nonfinite.SiteTape(True, self._watch_accessed_variables)
        super().watch(tensor)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """The gradients of `target` with respect to `sources`, computed under the loss scale.

        Args and results as `GradientTape.gradient`; the loss scale is updated
        as Note [loss-scaled retries] describes.

        Raises:
          RuntimeError: a second call on a non-persistent tape.
          ValueError: called inside the tape's context, or an unknown `unconnected_gradients`.
        """
        flat_sources = nest.flatten(sources)

        def differentiate(scaled):
            return GradientTape.gradient(self, scaled, flat_sources, output_gradients, unconnected_gradients)
        return nest.pack_sequence_as(sources, self._scaled(differentiate, target, flat_sources, output_gradients))

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """`GradientTape.jacobian` computed under the loss scale (Note [loss-scaled retries]).

        Raises:
          RuntimeError: a second call on a non-persistent tape, or
            `experimental_use_pfor=False` on a non-persistent tape.
        """
        if self._tape is not None and not experimental_use_pfor and not self._outer_persistent:
            raise RuntimeError("GradientTape must be created with persistent=True to compute the "
                               "jacobian with eager execution enabled and with experimental_use_pfor "
                               "set to False.")
        flat_sources = nest.flatten(sources)

        def differentiate(scaled):
            return GradientTape.jacobian(self, scaled, flat_sources, unconnected_gradients)
        return nest.pack_sequence_as(sources, self._scaled(differentiate, target, flat_sources))

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """`GradientTape.batch_jacobian` computed under the loss scale (Note [loss-scaled retries])."""
        def differentiate(scaled):
            return [GradientTape.batch_jacobian(self, scaled, source, unconnected_gradients)]
        return self._scaled(differentiate, target, [source])[0]

    def _scaled(self, differentiate, target, flat_sources, output_gradients=None):
        """Rounds of scaled differentiation until `update` accepts the gradients
        (Note [loss-scaled retries]); releases a one-shot tape afterwards."""
        if self._tape is None:
            raise RuntimeError(_SPENT)
        loss_scale = self._loss_scale
        is_none = []

        def round_(grads, ready, first):
            scale = loss_scale()
            with self:         # re-entered so that the scaling is recorded
                scaled = nest.map_structure(lambda t: t * math_ops.cast(scale, t.dtype), target)
            raw = differentiate(scaled)
            is_none[:] = [g is None for g in raw]
            grads = [s if g is None else _unscale(g, scale) for g, s in zip(raw, flat_sources, strict=True)]
            _, ready = loss_scale.update(grads)
            nonfinite.explain_rejected_round(self._tape, nonfinite.skip_log(loss_scale), ready, scale, target,
                                             output_gradients, flat_sources, raw, grads)
            return grads, convert_to_tensor(ready), convert_to_tensor(False)

        def again(grads, ready, first):
            return math_ops.logical_or(first, math_ops.logical_and(math_ops.logical_not(ready), loss_scale() > 1))

        if executing_eagerly():
            grads, ready, first = round_(None, False, True)
            while bool(again(grads, ready, first)):
                grads, ready, first = round_(grads, ready, first)
        else:
            start = [convert_to_tensor(s) for s in flat_sources]
            grads, _, _ = control_flow.while_loop(again, round_, [start, convert_to_tensor(False),
                                                                  convert_to_tensor(True)])
        if not self._outer_persistent:
            self._watched_variables = self._tape.watched_variables()
            self._tape = None
        return [None if none else g for g, none in zip(grads, is_none, strict=True)]


def _unscale(grad, scale):
    """`grad / scale`, as the product with 1/scale in the gradient's dtype (sparse made dense)."""
    if isinstance(grad, IndexedSlices):
        grad = convert_to_tensor(grad)
    return grad * math_ops.cast(1.0 / scale, grad.dtype)
