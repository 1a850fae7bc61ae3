"""`tf.vectorized_map`: a function of one example run once on a whole batch.

The function is called once with batched tensors standing for one example
each (ops/core/vectorization.py); every op it runs is rewritten by its batching rule, so
the whole batch goes through each kernel in one call.  Eagerly this needs no
tracing, and inside a graph the rewritten ops are graph ops.
"""

import warnings

from tapeflow.framework import nest
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops.core import basic_ops
from tapeflow.ops.core.vectorization import vectorizing


@tf_export("vectorized_map")
def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """`fn` applied to each row of `elems` (split along axis 0), results stacked.

    Unlike `tf.map_fn`, `fn` runs once: each op inside it runs on the whole
    batch through its batching rule.  An op with no rule runs once per example
    (with a warning naming it) unless `fallback_to_while_loop=False`.

    Args:
      fn: a function of one example (a structure like `elems`, each tensor
        without its first axis) returning a structure of tensors.
      elems: a tensor or nested structure of tensors sharing their first
        dimension, the batch; a tensor whose first dimension is 1 gives its
        one row to every example (broadcast, as TensorFlow's).
      fallback_to_while_loop: run ops without a batching rule once per
        example; if False they raise ValueError.
      warn: whether that fallback warns.

    Returns:
      `fn`'s results for every example, stacked along a new first axis.

    Raises:
      ValueError: `elems` is empty, its tensors are scalars or disagree on
        the batch size, or an op has no batching rule and the fallback is off.

    >>> import tapeflow as tf
    >>> x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    >>> tf.vectorized_map(lambda row: tf.reduce_sum(row * row), x).numpy()
    array([ 5., 25.], dtype=float32)
    """
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("vectorized_map needs at least one tensor in `elems`.")
    size = _batch_size(flat)
    with vectorizing(size) as level, _fallback_policy(fallback_to_while_loop, warn):
        examples = [e[0] if _broadcast(e, size) else level.batch(e) for e in flat]
        outputs = fn(nest.pack_sequence_as(elems, examples))
        flat_out = [level.unbatch(convert_to_tensor(o)) for o in nest.flatten(outputs)]
    return nest.pack_sequence_as(outputs, flat_out)


class _ScalarElems(ValueError, IndexError):
    """A scalar in `elems`: ValueError, and IndexError as TensorFlow raises (it indexes the shape)."""


def _batch_size(flat):
    """The batch size of `flat`: their first dimension, where those of size 1 are broadcast as
    TensorFlow's does (`_broadcast`); a scalar tensor when it is known only when a graph runs."""
    sizes = set()
    for e in flat:
        shape = e._value.shape
        if shape is not None and len(shape) == 0:
            raise _ScalarElems(f"vectorized_map needs tensors of rank at least 1 in `elems` (the batch is their "
                             f"first axis); got a scalar of dtype {e.dtype.name}.")
        sizes.add(None if shape is None else shape[0])
    wide = sizes - {None, 1}
    if len(wide) > 1:
        raise ValueError(f"The tensors in `elems` disagree on the batch size (first dimension): {sorted(wide)}.")
    if wide:
        return wide.pop()
    if None in sizes:
        return basic_ops.shape(next(e for e in flat if e._value.shape is None or e._value.shape[0] is None))[0]
    return 1


def _broadcast(e, size):
    """Whether `e` has a first dimension of 1 (known while building) for a larger batch: then its one
    row is every example's, as TensorFlow's vectorized_map gathers row 0 of such tensors."""
    shape = e._value.shape
    return shape is not None and shape[0] == 1 and not (isinstance(size, int) and size == 1)


class _fallback_policy:
    """Sets how ops without a batching rule are handled while `fn` runs."""

    __slots__ = ("_fallback", "_warn", "_saved", "_catcher")

    def __init__(self, fallback, warn):
        self._fallback, self._warn = fallback, warn

    def __enter__(self):
        self._saved = state.scopes.get("vectorize_fallback")
        state.scopes["vectorize_fallback"] = self._fallback
        self._catcher = None
        if not self._warn:
            self._catcher = warnings.catch_warnings()
            self._catcher.__enter__()
            warnings.filterwarnings("ignore", message="Op '.*' has no batching rule")
        return self

    def __exit__(self, *exc):
        state.scopes["vectorize_fallback"] = self._saved
        if self._catcher is not None:
            self._catcher.__exit__(*exc)

