"""TF1 functions of `tf.compat.v1` that are not a TF2 function under v1 parameters.

The v1 versions here differ from their TF2 functions in what they compute, so
Note [v1 signatures] (framework/v1_signatures.py) cannot derive them: `cond`
unpacks a branch's one-element list, `while_loop` returns a one-variable loop's
variable bare, `nn.dropout` takes `keep_prob`, `softmax_cross_entropy_with_logits`
passes no gradient to its labels, `where` selects rows by a vector condition and
does not broadcast.  The rest are TF1's own names (`to_float`, `assign`,
`set_random_seed`, `disable_v2_behavior`...).
"""

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import convert_to_tensor, disable_tensor_equality, enable_tensor_equality
from tapeflow.ops import array_ops, math_ops, nn_losses, nn_ops, random_ops
from tapeflow.ops.core import basic_ops, primitives
from tapeflow.graph import control_flow
from tapeflow.graph.default_graph import disable_eager_execution, enable_eager_execution


class _Switches:
    """TF1's process-wide switch of control flow versions (TF2's `cond` in graphs by default)."""

    control_flow_v2 = True


_switches = _Switches()


@tf_export("compat.v1.enable_control_flow_v2")
def enable_control_flow_v2():
    """`compat.v1.cond` in graphs returns what the branches return, as TF2's (the default).

    >>> import tapeflow as tf
    >>> tf.compat.v1.enable_control_flow_v2(); tf.compat.v1.control_flow_v2_enabled()
    True
    """
    _switches.control_flow_v2 = True


@tf_export("compat.v1.disable_control_flow_v2")
def disable_control_flow_v2():
    """`compat.v1.cond` in graphs unpacks one-element branch results too, as TF1's did.

    >>> import tapeflow as tf
    >>> callable(tf.compat.v1.disable_control_flow_v2)
    True
    """
    _switches.control_flow_v2 = False


@tf_export("compat.v1.control_flow_v2_enabled")
def control_flow_v2_enabled():
    """Whether TF2 control flow is on (see enable_control_flow_v2).

    >>> import tapeflow as tf
    >>> tf.compat.v1.control_flow_v2_enabled()
    True
    """
    return _switches.control_flow_v2


@tf_export("compat.v1.cond", names_op=False)
def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """TF1's `cond`: as `tf.cond`, but unless `strict`, a branch result that is a list or
    tuple of one element is that element when executing eagerly (in graphs too once
    control flow v2 is disabled, as TensorFlow's); `fn1`/`fn2` are the old names of the branches.

    Raises:
      TypeError: a branch is missing or given twice (as `true_fn` and `fn1`).

    >>> import tapeflow as tf
    >>> int(tf.compat.v1.cond(tf.constant(True), lambda: [tf.constant(1)], lambda: [tf.constant(2)]))
    1
    """
    true_fn = _one_of(true_fn, fn1, "true_fn", "fn1")
    false_fn = _one_of(false_fn, fn2, "false_fn", "fn2")
    unpack = not strict and (not state.graphs or not _switches.control_flow_v2)
    out = control_flow.cond(pred, true_fn, false_fn, name=name)
    if unpack and isinstance(out, (list, tuple)) and len(out) == 1:
        return out[0]
    return out


def _one_of(new, old, new_name, old_name):
    if new is not None and old is not None:
        raise TypeError(f"cond(): {new_name} and {old_name} may not be set simultaneously.")
    return new if new is not None else old


@tf_export("compat.v1.while_loop", names_op=False)
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, name=None, maximum_iterations=None, return_same_structure=False):
    """TF1's `while_loop`: as `tf.while_loop`, but the body of a loop over one variable may
    return it bare, and unless `return_same_structure` that loop returns it bare (in a graph,
    any one-tensor result is returned bare).

    >>> import tapeflow as tf
    >>> int(tf.compat.v1.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)]))
    3
    """
    single = isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 1
    packed = []

    def packing_body(*args):
        out = body(*args)
        if single and not nest.is_nested(out) and (state.graphs or not return_same_structure):
            packed.append(True)
            return [out]
        return out

    out = control_flow.while_loop(cond, packing_body, loop_vars, shape_invariants, parallel_iterations, back_prop,
                                  swap_memory, maximum_iterations, name=name)
    if return_same_structure:
        return out
    if state.graphs:
        flat = nest.flatten(out)
        return flat[0] if len(flat) == 1 else out
    return out[0] if packed else out


@tf_export("compat.v1.nn.dropout")
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TF1's `nn.dropout`: keeps each element with probability `keep_prob` (or drops it with
    probability `rate`), scaling the kept ones by 1 / keep_prob.

    Raises:
      ValueError: both or neither of `keep_prob` and `rate` are given.

    >>> import tapeflow as tf
    >>> tf.compat.v1.nn.dropout(tf.ones([3]), keep_prob=1.0).numpy()
    array([1., 1., 1.], dtype=float32)
    """
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
    if keep_prob is not None:
        rate = 1 - keep_prob
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    return nn_ops.dropout(x, rate, noise_shape=noise_shape, seed=seed)


@tf_export("compat.v1.nn.softmax_cross_entropy_with_logits")
def softmax_cross_entropy_with_logits(labels=None, logits=None, dim=-1, name=None, axis=None):
    """TF1's softmax cross-entropy: as TF2's, but no gradient flows into `labels` (`dim` is
    the old name of `axis`).

    >>> import tapeflow as tf
    >>> round(float(tf.compat.v1.nn.softmax_cross_entropy_with_logits(labels=[[0., 1.]], logits=[[1., 2.]])[0]), 4)
    0.3133
    """
    if axis is not None and dim != -1:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = dim if axis is None else axis
    labels = array_ops.stop_gradient(convert_to_tensor(labels))
    return nn_losses.softmax_cross_entropy_with_logits(labels, logits, axis=axis)


@tf_export("compat.v1.nn.softmax_cross_entropy_with_logits_v2")
def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """TF1's name for TF2's softmax cross-entropy (gradients flow into `labels` too); `dim`
    is the old name of `axis` (default -1).

    >>> import tapeflow as tf
    >>> round(float(tf.compat.v1.nn.softmax_cross_entropy_with_logits_v2([[0., 1.]], [[1., 2.]])[0]), 4)
    0.3133
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'.")
    axis = -1 if axis is None and dim is None else (dim if axis is None else axis)
    return nn_losses.softmax_cross_entropy_with_logits(labels, logits, axis=axis)


@tf_export("compat.v1.where")
def where(condition, x=None, y=None, name=None):
    """TF1's `where`: `x` and `y` of one shape, `condition` of that shape or a vector choosing
    whole rows (first dimension); no broadcasting.  With x and y None, the true coordinates.

    Raises:
      InvalidArgumentError (ValueError while a graph is built): the shapes differ.

    >>> import tapeflow as tf
    >>> tf.compat.v1.where([True, False], [[1, 2], [3, 4]], [[5, 6], [7, 8]]).numpy()
    array([[1, 2],
           [7, 8]], dtype=int32)
    """
    if x is None and y is None:
        return math_ops.where(condition)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    condition, x, y = convert_to_tensor(condition), convert_to_tensor(x), convert_to_tensor(y)
    cs, xs, ys = condition.shape, x.shape, y.shape
    rows = cs.rank == 1 and xs.rank is not None and xs.rank > 1
    for index, shape in ((2, ys), (0, cs)):
        if index == 0 and rows:
            if not cs.is_compatible_with(xs[:1]):
                _select_mismatch(cs, xs, "Input 0's size must match the first dimension of input 1")
            continue
        if not shape.is_compatible_with(xs):
            _select_mismatch(cs if index == 0 else ys, xs, f"Input 0: {cs} != input {index}: {shape}" if index == 0
                             else f"Input 1: {xs} != input 2: {ys}")
    if rows:
        condition = primitives.reshape(condition, [-1] + [1] * (xs.rank - 1))
    return math_ops.where(condition, x, y, name=name)


def _select_mismatch(a, b, detail):
    if state.graphs:
        raise ValueError(f"Shapes must be equal rank and compatible for 'Select': {detail}.")
    raise InvalidArgumentError(None, "Select", "Inputs to operation Select of type Select must have the same size "
                               f"and shape.  {detail} [Op:Select]")


def _caster(dtype):
    def cast(x, name="ToFloat"):
        return basic_ops.cast(x, dtype)
    cast.__name__ = f"to_{dtype.name}"
    cast.__doc__ = (f"`tf.cast(x, tf.{dtype.name})` (TF1's `to_{dtype.name}`).\n\n    >>> import tapeflow as tf\n"
                    f"    >>> tf.compat.v1.to_{dtype.name}(tf.constant([1, 2])).dtype\n    tf.{dtype.name}\n")
    return cast


for _path, _dtype in (("to_float", dtypes.float32), ("to_double", dtypes.float64), ("to_int32", dtypes.int32),
                      ("to_int64", dtypes.int64), ("to_bfloat16", dtypes.bfloat16),
                      ("to_complex64", dtypes.complex64), ("to_complex128", dtypes.complex128)):
    tf_export(f"compat.v1.{_path}")(_caster(_dtype))


@tf_export("compat.v1.assign")
def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """TF1's `assign`: `ref.assign(value)`.

    >>> import tapeflow as tf
    >>> float(tf.compat.v1.assign(tf.Variable(1.0), 2.0))
    2.0
    """
    return ref.assign(value)


@tf_export("compat.v1.assign_add")
def assign_add(ref, value, use_locking=None, name=None):
    """TF1's `assign_add`: `ref.assign_add(value)`.

    >>> import tapeflow as tf
    >>> float(tf.compat.v1.assign_add(tf.Variable(1.0), 2.0))
    3.0
    """
    return ref.assign_add(value)


@tf_export("compat.v1.assign_sub")
def assign_sub(ref, value, use_locking=None, name=None):
    """TF1's `assign_sub`: `ref.assign_sub(value)`.

    >>> import tapeflow as tf
    >>> float(tf.compat.v1.assign_sub(tf.Variable(1.0), 2.0))
    -1.0
    """
    return ref.assign_sub(value)


tf_export("compat.v1.set_random_seed")(random_ops.set_seed)


@tf_export("compat.v1.disable_v2_behavior")
def disable_v2_behavior():
    """TF1 behaviour where tapeflow has it: graphs instead of eager execution, tensors
    compared by identity, TF1's `cond` (resource variables, TF2's other switch, have no
    TF1 counterpart here).

    >>> import tapeflow as tf
    >>> callable(tf.compat.v1.disable_v2_behavior)
    True
    """
    disable_tensor_equality()
    disable_control_flow_v2()
    disable_eager_execution()


@tf_export("compat.v1.enable_v2_behavior")
def enable_v2_behavior():
    """TF2 behaviour: eager execution (refused after it was disabled), elementwise `==`, TF2's `cond`.

    >>> import tapeflow as tf
    >>> tf.compat.v1.enable_v2_behavior()
    """
    enable_tensor_equality()
    enable_control_flow_v2()
    enable_eager_execution()
