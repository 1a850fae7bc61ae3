"""Python operators on Tensor and Variable, mapped to tapeflow ops (TF's operator overloads).

Note [operator conversion]: as in TensorFlow, a Python or NumPy operand takes the
dtype of the tensor beside it, and when that fails the error is raised (after the
operand's own reflected operator had its chance), not turned into NotImplemented:
`int_tensor * 2.5` raises TypeError "Cannot convert 2.5 to EagerTensor of dtype
int32".  `+` alone converts its right operand with the tensor's dtype as a hint
only (TF's `_add_dispatch`), so `int_tensor + 2.5` reaches AddV2 as a float32
tensor and fails there with InvalidArgumentError, and `/` likewise reaches
truediv's dtype check (TypeError "`x` and `y` must have the same dtype");
`2.5 + int_tensor` raises TypeError like the other operators.
"""

import numpy as np

from tapeflow.framework import tensor as tensor_module
from tapeflow.framework.context import executing_eagerly_outside_functions, state
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import Op, convert_like, execute_binary
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor, uses_equality
from tapeflow.ops import bitwise_ops, math_ops, scatter_ops, slicing_ops, unary_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.variables import Variable
from tapeflow.ops.core import basic_ops


def _binary(fn, name, op_=None):
    """Forward and reflected methods of one operator; `op_` (default: `fn` when it is an
    Op) runs directly on two tensors."""
    op_ = op_ or (fn if isinstance(fn, Op) else None)
    if op_ is not None:                     # fast paths: a tensor and a tensor or a Python number
        def forward(x, y):
            if type(x) is Tensor:
                kind = type(y)
                if kind is Tensor:
                    return execute_binary(op_, x, y)
                if (kind is float or kind is int) and x._value.dtype.kind in "fc" and not state.graphs:
                    return execute_binary(op_, x, Tensor(np.asarray(y, x._value.dtype)))   # convert_like's
            try:
                return fn(x, y)
            except (TypeError, ValueError) as e:
                return _reflected(name, x, y, e)
    else:
        def forward(x, y):
            try:
                return fn(x, y)
            except (TypeError, ValueError) as e:
                return _reflected(name, x, y, e)

    def reverse(x, y):
        return fn(y, x)                     # a failed conversion of y raises (Note [operator conversion])
    return forward, reverse


def _reflected(name, x, y, error):
    """`y`'s own reflected operator, when it has one that accepts `x`; else `error` is raised."""
    r_op = getattr(type(y), f"__r{name}__", None)
    if r_op is not None:
        try:
            out = r_op(y, x)
        except (TypeError, ValueError):
            out = NotImplemented
        if out is not NotImplemented:
            return out
    raise error


def _hinted(fn):
    """`fn(x, y)` with y converted with x's dtype as a hint only (Note [operator conversion])."""
    def hinted(x, y):
        if type(y) is not Tensor and isinstance(x, Tensor) and not state.graphs and not (
                isinstance(y, Tensor) or hasattr(y, "_as_tensor")):
            try:
                y = convert_like(y, x.dtype)
            except TypeError:
                own = convert_to_tensor(y)
                if own._value.dtype.kind in "iu" and x._value.dtype.kind in "iu":
                    raise          # an integer out of x's range: refused, not wrapped like TF
                y = own            # another kind: `fn` reports the dtype mismatch
        return fn(x, y)
    return hinted


def _logical_or_bitwise(logical, bitwise):
    """&, | and ^: logical ops on bool tensors, bitwise ops on the others (as in TensorFlow)."""
    def fn(x, y):
        x, y = math_ops._binary_inputs(x, y)
        return logical(x, y) if x._value.dtype.kind == "b" else bitwise(x, y)
    return fn


def _eq(x, y):
    if y is None:
        return False
    x, y = math_ops._binary_inputs(x, y)    # unconvertible operands raise, as in TensorFlow
    if not _broadcastable(x, y):            # TF 2: incompatible shapes compare unequal
        return _scalar_bool(False)
    return math_ops.equal(x, y)


def _ne(x, y):
    if y is None:
        return True
    x, y = math_ops._binary_inputs(x, y)
    if not _broadcastable(x, y):
        return _scalar_bool(True)
    return math_ops.not_equal(x, y)


def _broadcastable(x, y):
    if x._value.shape is None or y._value.shape is None:   # unknown rank (graphs): may broadcast
        return True
    try:            # an unknown dim (None, graphs) is compatible with any size
        np.broadcast_shapes(*[tuple(1 if d is None else d for d in t._value.shape) for t in (x, y)])
    except ValueError:
        return False
    return True


def _scalar_bool(value):
    return Tensor(np.asarray(value))


def _invert(x):
    return math_ops.logical_not(x) if x.dtype.is_bool else bitwise_ops.invert(x)


_FAST = {"add": math_ops.add_v2}            # ops of operators defined as functions
_BINARY = {
    "add": _hinted(math_ops.add_v2), "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": _hinted(math_ops.truediv), "floordiv": math_ops.floordiv, "mod": math_ops.floormod,
    "pow": math_ops.pow, "matmul": math_ops.matmul,
    "and": _logical_or_bitwise(math_ops.logical_and, bitwise_ops.bitwise_and),
    "or": _logical_or_bitwise(math_ops.logical_or, bitwise_ops.bitwise_or),
    "xor": _logical_or_bitwise(math_ops.logical_xor, bitwise_ops.bitwise_xor),
}
_COMPARE = {"lt": math_ops.less, "le": math_ops.less_equal, "gt": math_ops.greater, "ge": math_ops.greater_equal}
_UNARY = {"neg": math_ops.negative, "abs": unary_ops.abs, "invert": _invert}


def _install(cls, convert):
    for name, fn in _BINARY.items():
        forward, reverse = _binary(fn, name, _FAST.get(name))
        setattr(cls, f"__{name}__", convert(forward))
        setattr(cls, f"__r{name}__", convert(reverse))
    for name, fn in _COMPARE.items():
        setattr(cls, f"__{name}__", convert(fn))
    for name, fn in _UNARY.items():
        setattr(cls, f"__{name}__", convert(fn))
    cls.__pos__ = lambda self: self
    cls.__eq__ = _unless_identity(convert(_eq), lambda x, y: x is y)
    cls.__ne__ = _unless_identity(convert(_ne), lambda x, y: x is not y)
    cls.__getitem__ = convert(lambda x, key: slicing_ops._getitem(x, key))


def _unless_identity(compare, identity):
    """`==` / `!=`: elementwise, or by identity where TF1 semantics hold (Note [tensor equality])."""
    def method(x, y):
        if x._is_variable:
            if not (Tensor._USE_EQUALITY and executing_eagerly_outside_functions()):
                return identity(x, y)
        elif not uses_equality(x):
            return identity(x, y)
        return compare(x, y)
    return method


def _as_is(fn):
    """Ops are callable objects, not functions: wrap them so they bind as methods."""
    if not isinstance(fn, Op):
        return fn

    def method(*args):
        return fn(*args)
    return method


def _reading(fn):
    """Variable operators act on the variable's current value."""
    def method(self, *args):
        return fn(self.value(), *args)
    return method


_install(Tensor, _as_is)
_install(Variable, _reading)


# -- behaviours of framework classes that run ops (layers point down: framework
# defines the classes, this module gives them what needs ops) ----------------------

def _iter(t):
    if not t._value.ndim:
        raise TypeError("Cannot iterate over a scalar tensor.")
    return iter(primitives.unstack(t))


def _iter_symbolic(t):
    if not t._value.shape or t._value.shape[0] is None:
        raise TypeError(f"Cannot iterate over tensor {t.name} of shape {t.shape}.")
    return iter(primitives.unstack(t))


def _dense(slices, dtype=None):
    """An IndexedSlices as a dense tensor, rows with repeated indices summed (differentiable)."""
    if slices._dense_shape is None:
        raise ValueError("Cannot convert an IndexedSlices with an unknown dense_shape to a Tensor.")
    if dtype is not None and dtype != slices.dtype:
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices with dtype "
                         f"{slices.dtype.name}")
    rows = int(np.asarray(slices._dense_shape._value)[0])
    return scatter_ops.unsorted_segment_sum(slices._values, slices._indices, rows)


Tensor.__iter__ = _iter
SymbolicTensor.__iter__ = _iter_symbolic
IndexedSlices._as_tensor = _dense
IndexedSlices.__neg__ = lambda s: IndexedSlices(math_ops.negative(s._values), s._indices, s._dense_shape)
tensor_module._pack = primitives.stack
tensor_module._cast = basic_ops.cast
