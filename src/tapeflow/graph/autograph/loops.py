"""AutoGraph's loops: `while_stmt` and `for_stmt` (called by converted code as `ag__`).

A loop over a tensor, or whose test gives a tensor, becomes one `while_loop`
whose loop variables are the loop's state (the variables its body changes and
that are read before being written, or after the loop); any other loop runs in
Python.  Staged loops check their variables after one traced iteration and
report changes of dtype, shape or structure by variable name, as TensorFlow's
AutoGraph does.
"""

import numpy as np

from tapeflow.framework import nest
from tapeflow.framework.context import state
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import constructor_ops, math_ops, scatter_ops
from tapeflow.ops.core import basic_ops
from tapeflow.ops.variables import Variable
from tapeflow.graph import control_flow
from tapeflow.graph.autograph.operators import (
    Undefined, UndefinedReturnValue, condition, dtype_of, is_undefined, runtime_assert, staged,
)
from tapeflow.graph.func_graph import FuncGraph

_LEGAL_LOOP_TYPES = "Tensor, int, float, bool or a list, tuple or dict thereof"
_LIMITATIONS = ("\nSee https://github.com/tensorflow/tensorflow/blob/master/tensorflow/python/autograph/g3doc/"
                "reference/limitations.md#consistency-of-control-flow-types for more info.")


def _scratch_graph():
    """A graph whose ops are thrown away: for looking at what a test or a body gives."""
    return FuncGraph("autograph_scratch", outer_graph=state.graphs[-1]).as_default()


# -- while ------------------------------------------------------------------------------

def while_stmt(test, body, inputs, names, opts):
    """`while test(*state): state = body(*state)`; returns the final state.

    Args:
      test: the loop test as a function of the state.
      body: the loop body, returning the new state.
      inputs: the state entering the loop (`Undefined` for variables not yet assigned).
      names: the state's variable names, for error messages.
      opts: `tf.autograph.experimental.set_loop_options` arguments.
    """
    inputs = tuple(inputs)
    if not state.graphs:
        return _python_while(test, body, inputs, staged_test=False)
    with _scratch_graph():
        first = test(*inputs)           # looked at once to choose the loop's kind, as TensorFlow does
    if staged(first):
        return _staged_while(test, body, inputs, names, opts)
    if not first:
        return inputs
    return _python_while(test, body, tuple(body(*inputs)), staged_test=True)


def _python_while(test, body, values, staged_test):
    while True:
        result = test(*values)
        if staged_test and staged(result):
            raise NotImplementedError(
                "The condition of while loop started as non-Tensor, then changed to Tensor. This may happen either "
                "because variables changed type, or when a break or return statement inside the loop depends on a "
                "Tensor condition. In both cases, changing to a TF loop should remove the error." + _LIMITATIONS)
        if not result:
            return values
        values = tuple(body(*values))


def _staged_while(test, body, inputs, names, opts):
    """The loop as one `while_loop`.  Variables not yet assigned before the loop take
    the type the first traced iteration gives them, and the loop must then run at least
    once (checked when the graph runs)."""
    invariants = _invariants(opts, inputs)
    nulls = [v is None or is_undefined(v) for v in inputs]
    once = any(nulls)
    original = inputs
    if once:
        inputs, invariants = _define_undefined(body, inputs, nulls, names, invariants)
    else:
        _check_inputs(inputs, names)
    init = inputs
    # a leading loop variable: whether an iteration ran (when one must), or a stand-in for a
    # loop whose state is empty (its body only has effects: variable writes, prints)
    lead = [False] if once else [0] if not inputs else []

    def loop_test(*values):
        return condition(test(*values[len(lead):]), "while loop")

    def loop_body(*values):
        entry = values[len(lead):]
        out = tuple(body(*entry))
        _check_iteration(init, entry, out, names, invariants)
        return ([True] if once else lead) + list(out)

    flat_invariants = None
    if any(i is not None for i in invariants):
        flat_invariants = [None] * len(lead) + [
            inv if inv is not None else [None] * len(nest.flatten(v)) for v, inv in zip(inputs, invariants)]
    out = control_flow.while_loop(loop_test, loop_body, lead + list(inputs), shape_invariants=flat_invariants,
                                  maximum_iterations=opts.get("maximum_iterations"))
    out = tuple(out)
    if once:
        undefined = ", ".join("the function return value" if isinstance(v, UndefinedReturnValue) else n
                              for n, v, null in zip(names, original, nulls) if null)
        runtime_assert(out[0], f"loop must iterate at least once to initialize {undefined}")
    return out[len(lead):]


def _invariants(opts, inputs):
    """The shape invariant of each state value (`set_loop_options`, matched by identity)."""
    given = {id(v): TensorShape(s) for v, s in opts.get("shape_invariants", ())}
    return [given.get(id(v)) for v in inputs]


def _check_inputs(inputs, names, first=None, note=None):
    """TensorFlow's checks of the values entering a staged loop."""
    first = (None,) * len(inputs) if first is None else first
    for name, value, after in zip(names, inputs, first):
        if isinstance(value, UndefinedReturnValue):
            if after is not None:
                raise ValueError(f"the return value from a TensorFlow loop may only be a {_LEGAL_LOOP_TYPES}; got "
                                 f"{type(after)}")
            raise NotImplementedError("a return statement cannot be placed inside this TensorFlow loop; this may "
                                      "happen if a return statement depends on a static Python condition such as "
                                      "a hyperparameter")
        if value is None:
            raise ValueError(f"'{name}' is not allowed to be None before the loop")
        if isinstance(value, Undefined):
            message = f"'{name}' must be defined before the loop"
            raise ValueError(message + ("\n" + note if note else ""))


def _define_undefined(body, inputs, nulls, names, invariants):
    """Traces one iteration on a scratch graph to learn the type of the variables the
    loop assigns first; they enter the loop as zeros of that type (TensorFlow's rule)."""
    first, note, described = None, None, None
    try:
        with _scratch_graph():
            first = tuple(body(*[_stand_in(v) for v in inputs]))
            described = [_placeholder(after, inv) if null else (value, inv)
                         for value, after, null, inv in zip(inputs, first, nulls, invariants)]
    except (UnboundLocalError, TypeError, ValueError, KeyError) as e:
        note = f"Note: AutoGraph tried to define it automatically, but ran into a {type(e).__name__}: {e}"
    if described is not None:
        inputs = tuple(_materialize(value) for value, _ in described)
        invariants = [invariant for _, invariant in described]
    _check_inputs(inputs, names, first, note)
    return inputs, invariants


class _Zeros:
    """The description of a placeholder value: zeros of a shape and dtype."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _stand_in(value):
    """A loop variable's value as the traced body sees it: Python values become tensors."""
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        t = convert_to_tensor(value)
        graph = state.graphs[-1]
        return graph._new_placeholder(t._value.shape, t._value.dtype, "stand_in")
    return value


def _placeholder(like, invariant):
    """(a description of zeros like `like`, the shape invariant it needs); `like` itself
    when it cannot be described (still undefined: the checks then report it)."""
    if like is None or is_undefined(like):
        return like, None
    if isinstance(like, (bool, int, float)):
        return type(like)(0), None
    if isinstance(like, (Tensor, Variable)):
        shape = invariant if invariant is not None else like.shape
        if shape.rank is None:
            return _Zeros((), like.dtype), shape
        dims = [d if d is not None else (w if w is not None else 0)
                for d, w in zip(like.shape.as_list(), shape.as_list())]
        dynamic = None in like.shape.as_list()
        return _Zeros(tuple(dims), like.dtype), (shape if dynamic else None)
    if isinstance(like, (list, tuple, dict)):
        pairs = [_placeholder(v, None) for v in nest.flatten(like)]
        return (nest.pack_sequence_as(like, [p[0] for p in pairs]),
                nest.pack_sequence_as(like, [p[1] for p in pairs]))
    raise TypeError(f"Found an unsupported type '{type(like).__name__}' while creating placeholder for {like}. "
                    "Supported types include Tensor, int, float, bool, list, tuple or dict.")


def _materialize(value):
    return nest.map_structure(
        lambda v: constructor_ops.zeros(v.shape, v.dtype) if isinstance(v, _Zeros) else v, value)


def _check_iteration(init, entry, out, names, invariants):
    """TensorFlow's checks of one traced iteration: structure, None, dtype and shape by name."""
    for name, before, value, after, invariant in zip(names, init, entry, out, invariants):
        try:
            nest.assert_same_structure(_plain(value), _plain(after))
        except ValueError as e:
            raise TypeError(f"'{name}' does not have the same nested structure after one iteration.\n\n{e}") from None
        leaves = zip(nest.flatten(before), nest.flatten(value), nest.flatten(after),
                     nest.flatten(invariant) if invariant is not None else [None] * len(nest.flatten(value)))
        for start, x, y, shape in leaves:
            _check_value(name, start, x, y, shape)


def _plain(value):
    return nest.map_structure(lambda v: v.value() if isinstance(v, Variable) else v, value)


def _check_value(name, init, entry, exit_, invariant):
    if exit_ is None:
        raise ValueError(f"'{name}' is None at the end of the iteration.")
    before, after = dtype_of(entry), dtype_of(exit_)
    if before is None or after is None:
        return
    if before != after:
        raise TypeError(f"'{name}' has dtype {before.name} before the loop, but dtype {after.name} after one "
                        "iteration")
    exit_shape = _shape(exit_)
    if invariant is None:
        if not _is_subshape(exit_shape, _shape(entry)):
            raise ValueError(f"'{name}' has shape {_shape(entry)} before the loop, but shape {exit_shape} after one "
                             "iteration. Use tf.autograph.experimental.set_loop_options to set shape invariants.")
        return
    if not _is_subshape(_shape(init), invariant):
        raise ValueError(f"'{name}' has shape {_shape(init)} before the loop, which does not conform with the shape "
                         f"invariant {invariant}.")
    if not _is_subshape(exit_shape, invariant):
        raise ValueError(f"'{name}' has shape {exit_shape} after one iteration, which does not conform with the "
                         f"shape invariant {invariant}.")


def _shape(value):
    if isinstance(value, (Tensor, Variable)):
        return value.shape
    return convert_to_tensor(value).shape


def _is_subshape(left, right):
    """Whether `left` is at least as specific as `right`."""
    if right.rank is None:
        return True
    if left.rank != right.rank:
        return False
    return all(r is None or l == r for l, r in zip(left.as_list(), right.as_list()))


# -- for ---------------------------------------------------------------------------------

def for_stmt(iterable, extra_test, body, inputs, names, opts):
    """`for target in iterable: state = body(target, *state)`, stopping early once
    `extra_test(*state)` is false (`break` and `return` inside the loop); returns the
    final state.

    A tensor iterates over its first axis in one `while_loop` (a `tf.range` without
    materializing the range); anything else is a Python loop.
    """
    inputs = tuple(inputs)
    if staged(iterable):
        value = iterable.value() if isinstance(iterable, Variable) else iterable
        if isinstance(value, SymbolicTensor) and value.op.op_def is basic_ops._range:
            return _range_for(value, extra_test, body, inputs, names, opts)
        return _tensor_for(value, extra_test, body, inputs, names, opts)
    return _python_for(iterable, extra_test, body, inputs)


def _python_for(iterable, extra_test, body, values):
    def go_on():
        result = extra_test(*values)
        if staged(result):
            raise NotImplementedError(
                "break and return statements which depend on a TF condition are not supported in Python for loops. "
                "Did you intend to make it a TF loop?" + _LIMITATIONS)
        return result

    if extra_test is not None and not go_on():
        return values
    for item in iterable:
        values = tuple(body(item, *values))
        if extra_test is not None and not go_on():
            break
    return values


def _with_extra(main, extra_test, values):
    if extra_test is None:
        return main
    return control_flow.cond(main, lambda: extra_test(*values), lambda: False)


def _range_for(rng, extra_test, body, inputs, names, opts):
    """A loop over `tf.range(start, limit, delta)`: the iterate is a loop variable."""
    start, limit, delta = rng.op.inputs
    target = opts.get("iterate_names")
    inputs = tuple(start if n == target and isinstance(v, Undefined) else v for n, v in zip(names, inputs))
    step = None if isinstance(delta, SymbolicTensor) else float(np.asarray(delta._value))

    def test(i, *values):
        if step is None:
            main = math_ops.logical_or(math_ops.logical_and(delta >= 0, i < limit),
                                       math_ops.logical_and(delta < 0, i > limit))
        else:
            main = i < limit if step >= 0 else i > limit
        return _with_extra(main, extra_test, values)

    def loop_body(i, *values):
        return (i + delta,) + tuple(body(i, *values))

    out = _staged_while(test, loop_body, (start,) + inputs, ("<internal iterate>",) + tuple(names), opts)
    return out[1:]


def _tensor_for(tensor, extra_test, body, inputs, names, opts):
    """A loop over the first axis of a tensor."""
    tensor = convert_to_tensor(tensor)
    shape = tensor._value.shape
    if shape is not None and not shape:
        raise ValueError(f"len requires a non-scalar tensor, got one of shape {tensor.shape}")
    n = shape[0] if shape is not None and shape[0] is not None else basic_ops.shape(tensor)[0]

    def test(i, *values):
        return _with_extra(i < n, extra_test, values)

    def loop_body(i, *values):
        return (i + 1,) + tuple(body(scatter_ops.gather(tensor, i), *values))

    out = _staged_while(test, loop_body, (0,) + inputs, ("<internal iterate>",) + tuple(names), opts)
    return out[1:]

