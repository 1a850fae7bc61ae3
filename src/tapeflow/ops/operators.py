"""What the Python operators of Tensor, Variable and Mirrored run (TF's operator overloads).

Tensor defines its operators itself (framework/tensor.py, Note [tensor operators]) and
runs the functions this module fills its operator hooks with (framework/hooks.py
lists every hook); Variable and Mirrored values get Tensor's operators applied to
their current value (`_install`).

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

from tapeflow.framework import hooks
from tapeflow.framework.context import executing_eagerly_outside_functions, state
from tapeflow.framework.op_def import convert_like
from tapeflow.framework.tensor import Tensor, convert_to_tensor, uses_equality
from tapeflow.ops import bitwise_ops, math_ops, scatter_ops, slicing_ops, unary_ops
from tapeflow.ops.core import primitives
from tapeflow.ops.variables import Variable
from tapeflow.ops.core import basic_ops


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


# name -> (the function the operator runs, the Op it runs directly on eager tensors or None);
# the names are Tensor's (framework/tensor.py, Note [tensor operators]).
_BINARY = {
    "add": (_hinted(math_ops.add_v2), math_ops.add_v2), "sub": (math_ops.subtract, math_ops.subtract),
    "mul": (math_ops.multiply, math_ops.multiply), "truediv": (_hinted(math_ops.truediv), None),
    "floordiv": (math_ops.floordiv, None), "mod": (math_ops.floormod, math_ops.floormod),
    "pow": (math_ops.pow, math_ops.pow), "matmul": (math_ops.matmul, None),
    "and": (_logical_or_bitwise(math_ops.logical_and, bitwise_ops.bitwise_and), None),
    "or": (_logical_or_bitwise(math_ops.logical_or, bitwise_ops.bitwise_or), None),
    "xor": (_logical_or_bitwise(math_ops.logical_xor, bitwise_ops.bitwise_xor), None),
}
_COMPARE = {name: (fn, fn.op) for name, fn in (("lt", math_ops.less), ("le", math_ops.less_equal),
                                               ("gt", math_ops.greater), ("ge", math_ops.greater_equal))}
_UNARY = {"neg": (math_ops.negative, math_ops.negative), "abs": (unary_ops.abs, None), "invert": (_invert, None)}
_EQUALITY = {"eq": (_eq, None), "ne": (_ne, None)}

hooks.fill_operators({**_BINARY, **_COMPARE, **_UNARY, **_EQUALITY})
hooks.fill(getitem=slicing_ops._getitem, unstack=primitives.unstack, pack=primitives.stack, cast=basic_ops.cast,
           segment_sum=scatter_ops.unsorted_segment_sum)


# -- Variable and Mirrored: Tensor's operators on their current value ------------------------

def _install(cls, convert):
    """Gives `cls` Tensor's operators, each wrapped by `convert` (`_reading`: applied to the
    value's current tensor); `+v` is `v` itself, and `==` compares by identity where TF1
    semantics hold (Note [tensor equality] in framework/tensor.py)."""
    names = [f"__{name}__" for name in (*_BINARY, *_COMPARE, *_UNARY)] + [f"__r{name}__" for name in _BINARY]
    for name in names + ["__getitem__"]:
        setattr(cls, name, convert(getattr(Tensor, name)))
    cls.__pos__ = lambda self: self
    cls.__eq__ = _unless_identity(convert(_eq), lambda x, y: x is y)
    cls.__ne__ = _unless_identity(convert(_ne), lambda x, y: x is not y)


def _unless_identity(compare, identity):
    """`==` / `!=` of a variable: elementwise, or by identity where TF1 semantics hold (Note [tensor equality])."""
    def method(x, y):
        if x._is_variable:
            if not (Tensor._USE_EQUALITY and executing_eagerly_outside_functions()):
                return identity(x, y)
        elif not uses_equality(x):
            return identity(x, y)
        return compare(x, y)
    return method


def _reading(fn):
    """Variable operators act on the variable's current value."""
    def method(self, *args):
        return fn(self.value(), *args)
    return method


_install(Variable, _reading)
