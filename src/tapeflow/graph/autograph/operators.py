"""The run-time half of AutoGraph: what converted code calls as `ag__.<name>`.

Each operator decides while the function is traced (Note [staging by type]):
a condition, test or iterable that is a tensor makes a graph op (`cond`,
`while_loop`); anything else runs as the Python statement it replaced.  The
statement forms hand their state explicitly: a branch or loop body is a
function of the variables it may change, returning their new values
(transformer.py builds them), so staging needs no access to the caller's frame.

Loops live in loops.py, `call` (converting the functions converted code
calls) in conversion.py, which binds all three into the `ag__` namespace
(Note [the ag__ namespace] in conversion.py).
"""

import builtins

import numpy as np

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import math_ops
from tapeflow.ops.core import basic_ops, primitives
from tapeflow.ops.variables import Variable
from tapeflow.graph import control_flow


class Undefined:
    """The value of a variable that was not assigned yet where a statement reads its state."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def __repr__(self):
        return f"<undefined {self.symbol_name}>"


class UndefinedReturnValue:
    """The return value of a converted function before any `return` ran."""

    __slots__ = ()


def is_undefined(value):
    return isinstance(value, (Undefined, UndefinedReturnValue))


def ld(frame_locals, name):
    """The value of local `name`, or `Undefined(name)` when it is not bound yet."""
    return frame_locals[name] if name in frame_locals else Undefined(name)


def retval(value):
    """What a converted function returns: None when no `return` statement ran."""
    return None if isinstance(value, UndefinedReturnValue) else value


def staged(value):
    """Note [staging by type]: while a graph is built, a tensor (symbolic, or an eager
    constant such as a folded `tf.range(3)`) or a variable stages control flow; a
    Python value never does.  Executing eagerly nothing is staged: eager tensors
    run the plain Python statement, which is what the staged op would do."""
    return bool(state.graphs) and isinstance(value, (Tensor, Variable))


def condition(value, statement):
    """`value` as the scalar boolean tensor a staged `statement` needs.

    Raises:
      ValueError: it is not boolean, or holds more than one element.
    """
    value = convert_to_tensor(value.value() if isinstance(value, Variable) else value)
    hint = "to check for None, use `is not None`"
    if value.dtype != dtypes.bool:
        raise ValueError(f"condition of {statement} expected to be `tf.bool` scalar, got {value!r}; to use as "
                         f"boolean Tensor, use `tf.cast`; {hint}")
    shape = value._value.shape
    if shape is None:
        return primitives.reshape(value, ())
    if shape:
        if np.prod([d for d in shape if d is not None]) > 1:
            raise ValueError(f"condition of {statement} expected to be `tf.bool` scalar, got {value!r}; {hint}")
        return primitives.reshape(value, ())
    return value


# -- if statements -------------------------------------------------------------------

def if_stmt(cond, true_fn, false_fn, inputs, names):
    """`if cond:` with branches `true_fn(*inputs)` / `false_fn(*inputs)`, each returning
    the new values of the variables `names` (those used after the statement)."""
    if staged(cond):
        return _staged_if(cond, true_fn, false_fn, inputs, names)
    return true_fn(*inputs) if cond else false_fn(*inputs)


def _staged_if(cond, true_fn, false_fn, inputs, names):
    pred = condition(cond, "if statement")
    done = {}

    def branch(fn, label, other):
        def traced():
            out = tuple(fn(*inputs))
            _check_branch(out, names, label)
            if other in done:
                main, orelse = (out, done[other]) if label == "main" else (done[other], out)
                _check_branches_agree(main, orelse, names)
            done[label] = out
            return out or (0,)          # a branch without outputs still runs its ops
        return traced
    out = control_flow.cond(pred, branch(true_fn, "main", "else"), branch(false_fn, "else", "main"))
    return tuple(out)[:len(names)]


def _check_branch(values, names, branch):
    for name, value in zip(names, values, strict=True):
        if isinstance(value, Undefined):
            raise ValueError(f"'{name}' must also be initialized in the {branch} branch")
        if isinstance(value, UndefinedReturnValue):
            raise ValueError(f"the {branch} branch must also have a return statement.")


def _check_branches_agree(main, orelse, names):
    for name, a, b in zip(names, main, orelse, strict=True):
        try:
            nest.assert_same_structure(_plain(a), _plain(b))
        except ValueError as e:
            raise TypeError(f"'{name}' must have the same nested structure in the main and else branches:\n\n{e}") \
                from None
        for x, y in zip(nest.flatten(a), nest.flatten(b)):
            if x is None:
                raise ValueError(f"'{name}' is None at the end of the main branch.")
            if y is None:
                raise ValueError(f"'{name}' is None at the end of the else branch.")
            dx, dy = dtype_of(x), dtype_of(y)
            if dx is not None and dy is not None and dx != dy:
                raise TypeError(f"'{name}' has dtype {dx.name} in the main branch, but dtype {dy.name} in the "
                                "else branch")


def _plain(value):
    """`value` with variables read (a variable and a tensor have the same structure)."""
    return nest.map_structure(lambda v: v.value() if isinstance(v, Variable) else v, value)


def dtype_of(value):
    """The dtype a loop or branch value has as a tensor; None for values that are not tensors."""
    if isinstance(value, (Tensor, Variable)):
        return value.dtype
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return convert_to_tensor(value).dtype
    return None


def if_exp(cond, true_value, false_value):
    """`a if cond else b`, with `true_value`/`false_value` the thunks of a and b."""
    if staged(cond):
        return control_flow.cond(condition(cond, "if expression"), true_value, false_value)
    return true_value() if cond else false_value()


# -- and, or, not --------------------------------------------------------------------

def and_(*thunks):
    """`a and b and ...` (thunks, evaluated left to right while true); a tensor operand
    makes the rest a `cond`, as TensorFlow's lazy logical_and."""
    value = thunks[0]()
    for i, thunk in enumerate(thunks[1:], 1):
        if staged(value):
            rest = thunks[i:]
            return control_flow.cond(value, lambda: and_(*rest), lambda: value)
        if not value:
            return value
        value = thunk()
    return value


def or_(*thunks):
    """`a or b or ...` (thunks, evaluated left to right while false)."""
    value = thunks[0]()
    for i, thunk in enumerate(thunks[1:], 1):
        if staged(value):
            rest = thunks[i:]
            return control_flow.cond(value, lambda: value, lambda: or_(*rest))
        if value:
            return value
        value = thunk()
    return value


def not_(value):
    """`not value`; a tensor gives `tf.logical_not` (eagerly too, as in TensorFlow)."""
    if isinstance(value, (Tensor, Variable)):
        return math_ops.logical_not(value)
    return not value


# -- run-time checks ---------------------------------------------------------------------------

def _assert_shape(*metas, **attrs):
    return []


@op("Assert", same_dtype=False, num_outputs=-1, stateful=True, shape=_assert_shape, differentiable=False)
def _assert(condition_, message):
    if not np.all(condition_):
        raise InvalidArgumentError(None, "Assert", f"assertion failed: [{message}]")
    return ()


@_assert.def_batch
def _assert_batch(xs, batched, message):
    return execute(_assert, xs, {"message": message}), ()     # every example's condition must hold


def runtime_assert(value, message):
    """Raises InvalidArgumentError("assertion failed: [message]") where `value` is false:
    at once when executing eagerly, else when the graph being built runs."""
    execute(_assert, [convert_to_tensor(value)], {"message": str(message)})


# -- builtins that accept tensors ----------------------------------------------------------

def _range(*args):
    if any(staged(a) for a in args):
        return basic_ops.range(*args)
    return builtins.range(*args)


def _len(value):
    if isinstance(value, SymbolicTensor):
        shape = value._value.shape
        if shape is not None and not shape:
            raise ValueError(f"len requires a non-scalar tensor, got one of shape {value.shape}")
        if shape is None or shape[0] is None:
            return basic_ops.shape(value)[0]
    return builtins.len(value)


def _int(value, *args):
    if isinstance(value, SymbolicTensor) and not args:
        return basic_ops.cast(value, dtypes.int32)
    return builtins.int(value, *args)


def _float(value=0.0):
    if isinstance(value, SymbolicTensor):
        return basic_ops.cast(value, dtypes.float32)
    return builtins.float(value)


# Python builtins that converted code calls in their tensor-aware form.
BUILTINS = {builtins.range: _range, builtins.len: _len, builtins.int: _int, builtins.float: _float}
