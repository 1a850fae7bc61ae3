"""Python operators on Tensor and Variable, mapped to tapeflow ops (TF's operator overloads)."""

from tapeflow.framework.op_def import Op, execute_binary
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variables import Variable
from tapeflow.ops import array_ops, math_ops


def _binary(fn):
    if isinstance(fn, Op):                  # fast path: both operands are tensors
        def forward(x, y):
            if type(y) is Tensor and type(x) is Tensor:
                return execute_binary(fn, x, y)
            try:
                return fn(x, y)
            except TypeError:
                return NotImplemented
    else:
        def forward(x, y):
            try:
                return fn(x, y)
            except TypeError:
                return NotImplemented

    def reverse(x, y):
        try:
            return fn(y, x)
        except TypeError:
            return NotImplemented
    return forward, reverse


def _logical_or_bitwise(logical, name):
    def fn(x, y):
        x, y = math_ops._binary_inputs(x, y)
        if x._value.dtype.kind != "b":
            raise TypeError(f"operator {name} is defined for bool tensors only, got {x.dtype.name}")
        return logical(x, y)
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
    import numpy as np
    try:
        np.broadcast_shapes(x._value.shape, y._value.shape)
    except ValueError:
        return False
    return True


def _scalar_bool(value):
    import numpy as np
    return Tensor(np.asarray(value))


def _invert(x):
    if x.dtype.is_bool:
        return math_ops.logical_not(x)
    raise TypeError(f"operator ~ is defined for bool tensors only, got {x.dtype.name}")


_BINARY = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.truediv, "floordiv": math_ops.floordiv, "mod": math_ops.floormod,
    "pow": math_ops.pow, "matmul": math_ops.matmul,
    "and": _logical_or_bitwise(math_ops.logical_and, "&"),
    "or": _logical_or_bitwise(math_ops.logical_or, "|"),
    "xor": _logical_or_bitwise(math_ops.logical_xor, "^"),
}
_COMPARE = {"lt": math_ops.less, "le": math_ops.less_equal, "gt": math_ops.greater, "ge": math_ops.greater_equal}
_UNARY = {"neg": math_ops.negative, "abs": math_ops.abs, "invert": _invert}


def _install(cls, convert):
    for name, fn in _BINARY.items():
        forward, reverse = _binary(fn)
        setattr(cls, f"__{name}__", convert(forward))
        setattr(cls, f"__r{name}__", convert(reverse))
    for name, fn in _COMPARE.items():
        setattr(cls, f"__{name}__", convert(fn))
    for name, fn in _UNARY.items():
        setattr(cls, f"__{name}__", convert(fn))
    cls.__pos__ = lambda self: self
    cls.__eq__ = convert(_eq)
    cls.__ne__ = convert(_ne)
    cls.__getitem__ = convert(lambda x, key: array_ops._getitem(x, key))


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
