"""What the eager tape and `tf.gradients` share: making and summing gradients,
and the one path by which an op's gradient rule is applied.

Each engine keeps only its scheduling (the tape's usage counts and stack, the
graph's pending counts and queue); for one ready op both call
`apply_rule(op, out_grads)`, where `op` is an eager `OpRecord` or a graph
`Operation` (both have `op`, `inputs`, `outputs`, `out_specs`, `name`, `type`).

Note [zeros for missing gradients]: when some outputs of a multi-output op got
gradients and others did not, the rule gets zeros for the others, except for
the outputs its op declares `accepts_none` and for outputs of a non-trainable
dtype (integer indices, say), which stay None.  That is gradients_util's
policy; the tape follows it too, so both engines hand a rule the same
arguments.

Note [sparse gradients]: an output gradient may be an IndexedSlices (the
gradient of an axis-0 gather, or of a variable's sparse read).  Only the ops
declared `accepts_indexed_slices` (identities, reads, casts, function calls and
control flow, which pass it on) get it as it is; every other rule gets it summed
into a dense tensor, as TensorFlow's rules convert it when they first use it.
So a gather after any op works, and the IndexedSlices-or-dense kind of each
gradient is TensorFlow's.

Note [no kernels at trace]: tracing a function runs no kernel on its data path.
An op whose inputs are all eager constants runs at once (constant folding), so a
gradient seed made as an eager constant (the ones of `tape.gradient`) would have
the whole chain of rules applied to it folded eagerly: a mean's gradient
broadcasting it to the input's full size, say.  Made as a Const node of the
graph, the seed makes those rules graph ops.
"""

import enum

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import ALL, NOT_DIFFERENTIABLE
from tapeflow.ops.core import basic_ops
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import join_ops, math_ops

_TRAINABLE = dtypes.TRAINABLE_NP


@tf_export("UnconnectedGradients")
class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


def unconnected_policy(value):
    """`value` ("none", "zero" or an `UnconnectedGradients`) as an `UnconnectedGradients`.

    Raises:
      ValueError: any other value.
    """
    try:
        return UnconnectedGradients(value)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}; "
                         "use tf.UnconnectedGradients.NONE or .ZERO ('none' or 'zero').") from None


# -- making and summing gradients (tape.h's VSpace) ------------------------------

def _made(value):
    """A gradient made from scratch: a Const node while a graph is built, so the ops
    applied to it are graph ops rather than folded at once (Note [no kernels at trace])."""
    t = Tensor(value)
    return state.graphs[-1].constant_node(t) if state.graphs else t


def constant_node(value):
    """A NumPy value as a tensor made from scratch (a Const node while a graph is built)."""
    return _made(value)


def ones(shape, np_dtype):
    return _made(np.ones(shape, np_dtype))


def zeros(shape, np_dtype):
    return _made(np.zeros(shape, np_dtype))


def zeros_like(t):
    return basic_ops.zeros_like(t)


def num_elements(grad):
    """Elements of a gradient (0 when unknown in a graph, as TensorFlow counts it)."""
    value = grad.values._value if type(grad) is IndexedSlices else grad._value
    size = np.size(value)
    return 0 if size is None else int(size)


_variant_sum = []      # how gradient lists of TensorArrays are summed (graph/tensor_array registers it)


def register_variant_sum(fn):
    """Declares `fn(grads)` as the sum of gradients of dtype variant (TensorArray flows)."""
    _variant_sum[:] = [fn]
    return fn


def aggregate(grads):
    """Sums the gradient terms of one tensor: dense ones with add_n, all-IndexedSlices
    ones by concatenation, a mix by densifying."""
    if all(type(g) is not IndexedSlices for g in grads):
        if grads[0]._value.dtype == object:
            return _variant_sum[0](grads)
        return math_ops.add_n(grads)
    if any(type(g) is not IndexedSlices for g in grads):
        return math_ops.add_n([convert_to_tensor(g) for g in grads])
    return IndexedSlices(join_ops.concat([g.values for g in grads], 0),
                         join_ops.concat([g.indices for g in grads], 0), grads[0].dense_shape)


# -- applying one rule ------------------------------------------------------------

def missing_gradient_error(op):
    """The LookupError for an op with no gradient rule."""
    parts = [f"input {i}: {t.dtype.name}{list(t.shape) if t.shape.rank is not None else '[<unknown>]'}"
             for i, t in enumerate(op.inputs)]
    return LookupError(
        f"No gradient defined for operation '{op.name}' (op type: {op.type}; {', '.join(parts) or 'no inputs'}). "
        f"Register one with tapeflow.RegisterGradient('{op.type}') or wrap the input in tf.stop_gradient.")


def fill_missing(op, out_grads):
    """`out_grads` (a list, changed in place) with zeros where the rule wants them
    (Note [zeros for missing gradients])."""
    accepts = op.op.accepts_none
    if accepts is ALL:
        return out_grads
    specs = None
    for i, g in enumerate(out_grads):
        if g is None and i not in accepts:
            specs = specs or op.out_specs
            shape, dtype = specs[i]
            if dtype in _TRAINABLE:
                static = shape is not None and None not in shape
                out_grads[i] = zeros(shape, dtype) if static else zeros_like(op.outputs[i])
    return out_grads


def apply_rule(op, out_grads):
    """The input gradients of `op` given its output gradients (at least one not None).

    Returns:
      A list with one gradient or None per input; None when the op is
      declared not differentiable.

    Raises:
      LookupError: the op has no gradient rule.
      ValueError: the rule returned a gradient count other than the op's input count.
    """
    grad_fn = op.op.grad
    if grad_fn is NOT_DIFFERENTIABLE:
        return None
    if grad_fn is None:
        raise missing_gradient_error(op)
    if len(out_grads) > 1:
        fill_missing(op, out_grads)
        if not op.op.accepts_indexed_slices:
            for i, g in enumerate(out_grads):
                if type(g) is IndexedSlices:
                    out_grads[i] = convert_to_tensor(g)
    elif type(out_grads[0]) is IndexedSlices and not op.op.accepts_indexed_slices:
        out_grads[0] = convert_to_tensor(out_grads[0])     # Note [sparse gradients]
    in_grads = grad_fn(op, *out_grads)
    if type(in_grads) is not list and type(in_grads) is not tuple:
        in_grads = (in_grads,)
    n = len(op.inputs)
    if len(in_grads) != n:
        raise ValueError(f"Gradient function for '{op.type}' returned {len(in_grads)} "
                         f"value{'s' if len(in_grads) != 1 else ''}; the op has {n} input{'s' if n != 1 else ''}.")
    return in_grads
