"""GradientTape: TensorFlow 2's Python API over the tape of `tape.py`."""

import contextlib
import logging

import numpy as np

from tapeflow.framework import dtypes, nest
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor, convert_to_tensor, pop_recorder, push_recorder
from tapeflow.ops import math_ops
from tapeflow.ops.core import basic_ops
from tapeflow.ops.gradient_rules import UnconnectedGradients, unconnected_policy as _unconnected
from tapeflow.ops.variables import Variable
from tapeflow.eager import jacobians
from tapeflow.eager.tape import Tape

_log = logging.getLogger("tapeflow")


def _source_key(s):
    """The tape id and spec of a differentiation source (checked by `_check_arguments`)."""
    return s._id, (s._value.shape, s._value.dtype)


# Note [non-tensor arguments]: TensorFlow's GradientTape.gradient checks that each
# target, then each source, is of a trainable dtype before it backprops, reading
# the dtype with `tf.as_dtype(value)` when the value is no tensor; a value that
# names no dtype fails there with TypeError (None, "a", 1.5, -9, 0).  One that
# does name one (True and 1 are DataType 1, float32; 7 and 7.0 are DataType 7,
# string; a NumPy array has a dtype) goes on and fails with AttributeError: on
# reading `.dtype` when the dtype named is not trainable, else on reading the
# tensor id.  The same checks run inside `jacobian`.  Nothing is consumed before
# they run, so the tape stays usable after a failed call.

def _check_arguments(flat_targets, flat_sources):
    """Raises TypeError or AttributeError for a target or source that is no tensor
    (Note [non-tensor arguments])."""
    for role, values in (("target", flat_targets), ("source", flat_sources)):
        for i, v in enumerate(values):
            if not isinstance(v, _TENSOR_LIKE) and _named_dtype(v, role, i)._np not in dtypes.TRAINABLE_NP:
                raise AttributeError(f"'{type(v).__name__}' object has no attribute 'dtype': {role} {i} of "
                                     f"GradientTape.gradient is {v!r}; pass tf.Tensors or tf.Variables.")
    for role, values, allowed in (("target", flat_targets, _TENSOR_LIKE), ("source", flat_sources, (Tensor, Variable))):
        for i, v in enumerate(values):
            if not isinstance(v, allowed):
                raise AttributeError(f"'{type(v).__name__}' object has no attribute '_id': {role} {i} of "
                                     f"GradientTape.gradient is {v!r}; pass tf.Tensors or tf.Variables "
                                     "(sources watched by the tape).")


_TENSOR_LIKE = (Tensor, Variable, IndexedSlices)


def _named_dtype(value, role, index):
    """The dtype `tf.as_dtype(value)` reads from a non-tensor argument: a number equal
    to a DataType value (True, 1, 7.0), a dtype name, or the dtype of an array."""
    try:
        if isinstance(value, (bool, int, float, np.number)) and not isinstance(value, np.complexfloating):
            number = int(value)
            if number != value:
                raise TypeError
            return dtypes.as_dtype(number)
        return dtypes.as_dtype(value)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"Cannot convert the argument `type_value`: {value!r} to a TensorFlow DType: {role} "
                        f"{index} of GradientTape.gradient must be a tf.Tensor or tf.Variable.") from None


@tf_export("GradientTape", "autodiff.GradientTape")
class GradientTape:
    """Records operations for automatic differentiation.

    Args:
      persistent: when False (default) `gradient` may be called once and the
        recorded operations are released as it runs.
      watch_accessed_variables: when True (default), trainable variables read
        while the tape is active are watched automatically.

    >>> import tapeflow as tf
    >>> x = tf.constant(3.0)
    >>> with tf.GradientTape() as g:
    ...     g.watch(x)
    ...     y = x * x
    >>> float(g.gradient(y, x))
    6.0
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._tape = None
        self._recording = False
        self._watched_variables = ()

    def __enter__(self):
        self._push_tape()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop_tape()

    def _push_tape(self):
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter an already-active tape.")
        if self._tape is None:
            self._tape = Tape(self._persistent, self._watch_accessed_variables)
        push_recorder(self._tape)            # Note [trace deletion] in framework/tensor.py
        self._recording = True

    def _pop_tape(self):
        if not self._recording:
            raise ValueError("Tape is not recording.")
        pop_recorder(self._tape)
        self._recording = False

    def watch(self, tensor):
        """Ensures `tensor` (a tensor, variable or nested structure of them) is traced."""
        if self._tape is None:
            self._tape = Tape(self._persistent, self._watch_accessed_variables)
        for t in nest.flatten(tensor):
            if not isinstance(t, (Tensor, Variable)):
                raise ValueError(f"Passed in object of type {type(t).__name__}, not tf.Tensor or tf.Variable: {t!r}")
            if t._value.dtype not in dtypes.TRAINABLE_NP:
                _log.warning("The dtype of the watched tensor must be floating (e.g. tf.float32), got %r", t.dtype)
            if isinstance(t, Variable):
                self._tape.watch_variable(t)
            else:
                self._tape.watch(t._id)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stops recording operations on this tape.

        Raises:
          RuntimeError: the tape has no recording (never entered, or a one-shot
            tape already used).
          ValueError: the tape exists but its context has been exited.
        """
        if self._tape is None:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._pop_tape()
        try:
            yield
        finally:
            self._push_tape()

    def reset(self):
        """Clears everything recorded so far; the tape goes on recording."""
        self._pop_tape()
        self._tape = None
        self._push_tape()

    def watched_variables(self):
        """The variables watched by this tape, in creation order."""
        if self._tape is not None:
            self._watched_variables = self._tape.watched_variables()
        return self._watched_variables

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Computes the gradient of `target` with respect to `sources`.

        Args:
          target: a tensor or (nested) list of tensors; a list is summed.
          sources: a tensor, variable or nested structure of them.
          output_gradients: optional upstream gradients, one per flattened target.
          unconnected_gradients: `UnconnectedGradients.NONE` ("none") or `.ZERO` ("zero").

        Returns:
          Gradients in the structure of `sources`; None (or zeros) where unconnected.

        Raises:
          RuntimeError: a second call on a non-persistent tape.
          ValueError: an unknown `unconnected_gradients`, or fewer `output_gradients` than targets.
          TypeError, AttributeError: a target or source that is no tensor, as TensorFlow
            (Note [non-tensor arguments]).
        """
        if self._tape is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                               "of gradients (or jacobians). Create the tape with persistent=True.")
        if self._recording:
            if not self._persistent:
                self._pop_tape()
            else:
                _log.debug("Calling GradientTape.gradient on a persistent tape inside its context "
                           "records the gradient computation as well.")
        if target is None:
            raise TypeError("Argument `target` should be a list or nested structure of Tensors or "
                            "Variables to be differentiated, but received None.")
        unconnected = _unconnected(unconnected_gradients)
        flat_sources = nest.flatten(sources)
        flat_grads = self._compute(nest.flatten(target), flat_sources, output_gradients)
        if not self._persistent:
            self._watched_variables = self._tape.watched_variables()
            self._tape = None
        if unconnected is UnconnectedGradients.ZERO:
            flat_grads = [_zeros_like(s) if g is None else g for g, s in zip(flat_grads, flat_sources, strict=True)]
        return nest.pack_sequence_as(sources, flat_grads)

    def _compute(self, flat_targets, flat_sources, output_gradients):
        """One backprop over the tape; leaves the tape consumed if it is one-shot."""
        _check_arguments(flat_targets, flat_sources)
        target_ids, target_specs, targets = [], [], []
        for t in flat_targets:
            if isinstance(t, IndexedSlices):
                t = convert_to_tensor(t)
            targets.append(t)
            target_ids.append(t._id)
            target_specs.append((t._value.shape, t._value.dtype))
        source_keys = []
        for s in flat_sources:
            key = _source_key(s)
            if s._value.dtype not in dtypes.TRAINABLE_NP:   # its gradient is None (TF logs this at vlog 1)
                _log.debug("The dtype of the source tensor must be floating (e.g. tf.float32) when "
                           "calling GradientTape.gradient, got %r", s.dtype)
            source_keys.append(key)
        out_grads = None
        if output_gradients is not None:
            out_grads = [None if g is None else (g if isinstance(g, IndexedSlices) else convert_to_tensor(g))
                         for g in nest.flatten(output_gradients)]
            # Like TensorFlow's tape: an empty list seeds every target with ones, and
            # gradients beyond one per target are converted but not used.
            out_grads = out_grads[:len(target_ids)] or None
            if out_grads is not None and len(out_grads) != len(target_ids):
                raise ValueError(f"output_gradients has {len(out_grads)} entries; target has "
                                 f"{len(target_ids)} tensors. Pass one gradient (or None) per target.")
        for i, (shape, _) in enumerate(target_specs):
            if shape is None or None in shape:     # a graph target of unknown shape (or rank): ones made when run
                out_grads = out_grads or [None] * len(target_ids)
                if out_grads[i] is None:
                    out_grads[i] = math_ops.ones_like(convert_to_tensor(targets[i]))
        source_ids = [k[0] for k in source_keys]
        grads = self._tape.compute_gradient(target_ids, target_specs, source_ids, source_keys, out_grads)
        for i, (g, s) in enumerate(zip(grads, flat_sources, strict=True)):
            if g is not None and isinstance(g, Tensor) and s._value.dtype not in dtypes.TRAINABLE_NP:
                grads[i] = None
        return grads

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """The Jacobian of `target` with respect to each of `sources`.

        Each result has shape `target.shape + source.shape`.

        Raises:
          RuntimeError: called a second time on a non-persistent tape, or with
            `experimental_use_pfor=False` on a non-persistent tape.
        """
        if self._tape is not None and not experimental_use_pfor and not self._persistent:
            raise RuntimeError("GradientTape must be created with persistent=True to compute the "
                               "jacobian with eager execution enabled and with experimental_use_pfor "
                               "set to False.")
        return jacobians.jacobian(self, target, sources, _unconnected(unconnected_gradients), experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians: result[i] is d target[i] / d source[i].

        Raises:
          ValueError: target and source disagree on the batch (first) dimension.
        """
        return jacobians.batch_jacobian(self, target, source, _unconnected(unconnected_gradients),
                                        experimental_use_pfor)

    _check_arguments = staticmethod(_check_arguments)     # for jacobians.py, before it takes the tape

    @contextlib.contextmanager
    def _as_persistent(self):
        """Keeps the records through several backprops (jacobian rows), then releases a one-shot tape."""
        if self._tape is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                               "of gradients (or jacobians). Create the tape with persistent=True.")
        if self._recording and not self._persistent:
            self._pop_tape()
        self._tape.persistent = True
        try:
            yield
        finally:
            self._tape.persistent = self._persistent
            if not self._persistent:
                self._watched_variables = self._tape.watched_variables()
                self._tape = None


def _zeros_like(source):
    shape = source._value.shape
    if shape is None or None in shape:      # a graph tensor of unknown shape (or rank): made when run
        return basic_ops.zeros_like(source)
    return Tensor(np.zeros(shape, source._value.dtype))
