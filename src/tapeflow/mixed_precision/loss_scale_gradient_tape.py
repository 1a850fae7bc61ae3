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

Note [loss-scaled retries under a strategy]: as in TensorFlow, `gradient`
is called in each replica (inside `strategy.run`, one tape per replica) and
hands over to the cross-replica context with a `merge_call`; there the
rounds run once for all replicas: each round runs every replica's scaled
differentiation (`strategy.run`, so each replica re-enters its own tape), and
`loss_scale.update` judges all replicas' gradients together (Note [loss
scales under a strategy] in loss_scale.py), so every replica, in threads or
MPI processes, retries or stops together under the same scale.  Outside any
strategy the default strategy makes the merge_call and the runs plain calls.
In a graph the rounds are a while_loop whose state holds each local
replica's gradients.

A rejected round is also counted and explained on the loss scale
(`skipped_steps`, `last_nonfinite`): the tape records where each op was
created and, only after `update` rejected a round, walks its records again to
find the op whose gradient overflowed (Note [no cost on finite steps] in
nonfinite.py).
"""

from tapeflow.framework import nest
from tapeflow.framework.context import executing_eagerly, state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import math_ops
from tapeflow.ops.core import basic_ops
from tapeflow.ops.gradient_rules import UnconnectedGradients
from tapeflow.eager.backprop import GradientTape
from tapeflow.graph import control_flow
from tapeflow.graph.func_graph import FuncGraph
from tapeflow.distribute import distribute_lib, values
from tapeflow.distribute.thread_mode import in_cross_replica_context
from tapeflow.mixed_precision import nonfinite
from tapeflow.mixed_precision.loss_scale import LossScale

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
        self._round = None     # the last round's (None flags, scale, raw, unscaled gradients)
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
        as Note [loss-scaled retries] describes (under a strategy, once for all
        replicas: Note [loss-scaled retries under a strategy]).

        Raises:
          RuntimeError: a second call on a non-persistent tape.
          ValueError: called inside the tape's context, or an unknown
            `unconnected_gradients`, or in a strategy's cross-replica context.
        """
        flat_sources = nest.flatten(sources)
        grads = self._scaled(_gradient, unconnected_gradients, target, flat_sources, output_gradients)
        return nest.pack_sequence_as(sources, grads)

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
        return nest.pack_sequence_as(sources, self._scaled(_jacobian, unconnected_gradients, target, flat_sources))

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """`GradientTape.batch_jacobian` computed under the loss scale (Note [loss-scaled retries])."""
        return self._scaled(_batch_jacobian, unconnected_gradients, target, [source])[0]

    def _scaled(self, differentiate, unconnected, target, flat_sources, output_gradients=None):
        """Rounds of scaled differentiation until `update` accepts the gradients, run in the
        cross-replica context (Note [loss-scaled retries under a strategy]); releases a
        one-shot tape afterwards."""
        if self._tape is None:
            raise RuntimeError(_SPENT)
        if in_cross_replica_context():
            raise ValueError("LossScaleGradientTape.gradient() must be called in a replica context.")
        grads = distribute_lib.get_replica_context().merge_call(
            _until_finite, args=(self, differentiate, unconnected, target, flat_sources, output_gradients))
        is_none, self._round = self._round[0], None
        if not self._outer_persistent:
            self._watched_variables = self._tape.watched_variables()
            self._tape = None
        return [None if none else g for g, none in zip(grads, is_none, strict=True)]


def _gradient(tape, scaled, sources, output_gradients, unconnected):
    return GradientTape.gradient(tape, scaled, sources, output_gradients, unconnected)


def _jacobian(tape, scaled, sources, output_gradients, unconnected):
    return GradientTape.jacobian(tape, scaled, sources, unconnected)


def _batch_jacobian(tape, scaled, sources, output_gradients, unconnected):
    return [GradientTape.batch_jacobian(tape, scaled, sources[0], unconnected)]


def _until_finite(strategy, tapes, differentiate, unconnected, target, flat_sources, output_gradients):
    """The rounds of Note [loss-scaled retries], in the cross-replica context: every replica
    differentiates its own tape's target in each round, and the loss scale judges all the
    replicas' gradients at once (Note [loss-scaled retries under a strategy]).

    Args:
      strategy: the current strategy (the default one outside any).
      tapes, target, output_gradients: each replica's (PerReplica values under a strategy).
      differentiate: `_gradient`, `_jacobian` or `_batch_jacobian`.

    Returns:
      The unscaled gradients (sources' stand-ins where unconnected), one list per replica
      (PerReplica leaves); each tape's `_round` holds the None flags of its replica.
    """
    local_tapes = strategy.experimental_local_results(tapes)
    loss_scale = local_tapes[0]._loss_scale
    reports = nonfinite.ReplicaReports(nonfinite.skip_log(loss_scale), len(local_tapes))

    def replica_round(tape, target, output_gradients):
        scale = loss_scale()
        with tape:         # re-entered so that the scaling is recorded
            scaled = nest.map_structure(lambda t: t * basic_ops.cast(scale, t.dtype), target)
        raw = differentiate(tape, scaled, flat_sources, output_gradients, unconnected)
        grads = [convert_to_tensor(s) if g is None else _unscale(g, scale)
                 for g, s in zip(raw, flat_sources, strict=True)]
        tape._round = ([g is None for g in raw], scale, raw, grads)
        return grads

    def explain(tape, target, output_gradients, ready):
        _, scale, raw, grads = tape._round
        nonfinite.explain_rejected_round(tape._tape, reports, ready, scale, target, output_gradients,
                                         flat_sources, raw, grads)

    def round_(grads, ready, first):
        grads = strategy.run(replica_round, args=(tapes, target, output_gradients))
        _, ready = loss_scale.update(grads)
        if ready is not True and not (executing_eagerly() and bool(ready)):     # nothing to explain
            strategy.run(explain, args=(tapes, target, output_gradients, ready))
        return grads, convert_to_tensor(ready), convert_to_tensor(False)

    def again(grads, ready, first):
        return math_ops.logical_or(first, math_ops.logical_and(math_ops.logical_not(ready), loss_scale() > 1))

    if executing_eagerly():
        grads, ready, first = round_(None, False, True)
        while bool(again(grads, ready, first)):
            grads, ready, first = round_(grads, ready, first)
        return grads

    # In a graph the rounds are a while_loop whose state holds every local replica's
    # gradients as plain tensors: [source][replica].
    def body(grads, ready, first):
        grads, ready, first = round_(grads, ready, first)
        return [list(strategy.experimental_local_results(g)) for g in grads], ready, first

    start = [[convert_to_tensor(s)] * len(local_tapes) for s in flat_sources]
    grads, _, _ = control_flow.while_loop(again, body, [start, convert_to_tensor(False), convert_to_tensor(True)])
    return [values.regroup(tuple(per_replica)) for per_replica in grads]


def _unscale(grad, scale):
    """`grad / scale`, as the product with 1/scale in the gradient's dtype (sparse made dense)."""
    if isinstance(grad, IndexedSlices):
        grad = convert_to_tensor(grad)
    return grad * basic_ops.cast(1.0 / scale, grad.dtype)
