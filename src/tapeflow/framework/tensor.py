"""The eager Tensor and the conversion of Python/NumPy values to tensors.

A Tensor wraps one NumPy array (or NumPy scalar) and a unique id, the key under
which tapes know it.  Its Python operators (`+`, `@`, `[]`, ...) run ops, which
live above the framework: they call the hooks that `ops/operators.py` fills (Note
[tensor operators]; framework/hooks.py lists every hook point).
"""

import itertools
import operator
import threading

import numpy as np

from tapeflow.framework import dtypes, hooks
from tapeflow.framework.context import executing_eagerly_outside_functions, state
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor_shape import TensorShape

_next_id = itertools.count(1).__next__


# Note [tensor operators]: a Tensor's Python operators run tapeflow ops, which sit
# above the framework.  Each operator is made here by a factory below and registered
# as a hook (framework/hooks.py); ops/operators.py fills it, once, with the function
# the operator runs and, for some, the Op it amounts to: `+` is `add` with
# TensorFlow's conversion of the other operand and AddV2, `&` LogicalAnd or
# BitwiseAnd by dtype and no single Op (Note [operator conversion] there).  A filled
# value lives in the operator's closure, so calling it costs what calling a module
# global does.  An operator declared `direct` runs its Op itself on two eager tensors,
# or on an eager floating tensor and a Python number (converted as `convert_like`
# would): the eager fast path, one call to op_def's `execute_binary` (`execute_unary`
# for `-x`).  When a binary operator's function fails on `x op y`, y's reflected
# operator has its chance before the error is raised, as in TensorFlow.

def _binary_operator(name, direct):
    """The methods `__<name>__` and `__r<name>__` of Tensor (Note [tensor operators])."""
    fn = op_ = execute_binary = None        # filled through `fill`
    reflected_name = f"__r{name}__"

    if direct:
        def forward(x, y):
            if type(x) is Tensor:
                kind = type(y)
                if kind is Tensor:
                    return execute_binary(op_, x, y)
                if (kind is float or kind is int) and x._value.dtype.kind in "fc" and not state.graphs:
                    return execute_binary(op_, x, Tensor(np.asarray(y, x._value.dtype)))
            try:
                return fn(x, y)
            except (TypeError, ValueError) as e:
                return _reflected(reflected_name, x, y, e)
    else:
        def forward(x, y):
            try:
                return fn(x, y)
            except (TypeError, ValueError) as e:
                return _reflected(reflected_name, x, y, e)

    def reflected(x, y):
        return fn(y, x)         # a failed conversion of y raises (Note [operator conversion])

    def fill(hook_fn, hook_op):
        nonlocal fn, op_, execute_binary
        fn, op_, execute_binary = hook_fn, _checked_op(name, hook_op, direct), hooks.execute_binary

    hooks.operator(name, fill)
    forward.__name__, reflected.__name__ = f"__{name}__", reflected_name
    return forward, reflected


def _reflected(reflected_name, x, y, error):
    """`y`'s own reflected operator, when it has one that accepts `x`; else `error` is raised."""
    r_op = getattr(type(y), reflected_name, None)
    if r_op is not None:
        try:
            out = r_op(y, x)
        except (TypeError, ValueError):
            out = NotImplemented
        if out is not NotImplemented:
            return out
    raise error


def _comparison_operator(name):
    """The method `__<name>__` of Tensor for an order comparison (Note [tensor operators]);
    direct on two eager tensors."""
    fn = op_ = execute_binary = None        # filled through `fill`

    def compare(x, y):
        if type(x) is Tensor and type(y) is Tensor:
            return execute_binary(op_, x, y)
        return fn(x, y)

    def fill(hook_fn, hook_op):
        nonlocal fn, op_, execute_binary
        fn, op_, execute_binary = hook_fn, _checked_op(name, hook_op, True), hooks.execute_binary

    hooks.operator(name, fill)
    compare.__name__ = f"__{name}__"
    return compare


def _unary_operator(name, direct):
    """The method `__<name>__` of Tensor for a unary operator (Note [tensor operators])."""
    fn = op_ = execute_unary = None         # filled through `fill`

    if direct:
        def apply(x):
            if type(x) is Tensor:
                return execute_unary(op_, x)
            return fn(x)
    else:
        def apply(x):
            return fn(x)

    def fill(hook_fn, hook_op):
        nonlocal fn, op_, execute_unary
        fn, op_, execute_unary = hook_fn, _checked_op(name, hook_op, direct), hooks.execute_unary

    hooks.operator(name, fill)
    apply.__name__ = f"__{name}__"
    return apply


def _equality_operator(name, identity):
    """`__eq__` or `__ne__` of Tensor: elementwise, or `identity(x, y)` where TF1 semantics
    hold (Note [tensor equality]; Note [tensor operators])."""
    fn = None                               # filled through `fill`

    def compare(x, y):
        if uses_equality(x):
            return fn(x, y)
        return identity(x, y)

    def fill(hook_fn, hook_op):
        nonlocal fn
        fn = hook_fn
        _checked_op(name, hook_op, False)

    hooks.operator(name, fill)
    compare.__name__ = f"__{name}__"
    return compare


def _checked_op(name, op_, direct):
    """`op_`, the Op given to operator `name`: one exactly when the operator is direct."""
    if (op_ is not None) != direct:
        expected = "an Op (it is direct)" if direct else "no Op (it is not direct)"
        raise ValueError(f"Tensor's operator '{name}' takes {expected} in framework/tensor.py; its hook was "
                         f"given {op_!r}.")
    return op_


@tf_export("Tensor")
class Tensor:
    """An immutable multi-dimensional array, the value every op takes and returns.

    >>> import tapeflow as tf
    >>> t = tf.constant([[1.0, 2.0]])
    >>> t.shape, t.dtype
    (TensorShape([1, 2]), tf.float32)
    """

    # _device: Note [recorded placement]; _wide: Note [wide values of eager tensors] in ops/core/half.py
    __slots__ = ("_value", "_id", "_device", "_wide", "__weakref__")

    _is_variable = False        # see Variable
    _is_symbolic = False        # see SymbolicTensor
    _is_batched = False         # see ops/core/vectorization.py
    __array_priority__ = 100

    def __init__(self, value):
        self._value = value
        self._id = _next_id()

    # While a construction hook is set, `__init__` also calls it with the new tensor
    # (`set_construction_hook`, Note [construction hook]).  While some tape records,
    # a dying tensor drops its trace from the tapes (`__del__`, Note [trace deletion]);
    # otherwise a Tensor has no `__del__`.

    # -- metadata ----------------------------------------------------------
    @property
    def dtype(self):
        return dtypes._BY_NP[self._value.dtype]

    @property
    def shape(self):
        return TensorShape(self._value.shape)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied shape {TensorShape(shape)}.")

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def device(self):
        try:
            return self._device     # set off the default device (Note [recorded placement] in device.py)
        except AttributeError:
            return "/job:localhost/replica:0/task:0/device:CPU:0"

    @property
    def name(self):
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")

    def numpy(self):
        """A copy of the value as a NumPy array (or NumPy scalar for rank 0); for
        strings, bytes or an object array of bytes (Note [string tensors])."""
        value = self._value
        if value.dtype.kind == "T":
            return string_to_bytes(value)
        return value.copy() if isinstance(value, np.ndarray) and value.ndim else value[()]

    def ref(self):
        return _Reference(self)

    experimental_ref = ref

    def eval(self, feed_dict=None, session=None):
        """TF1's `Tensor.eval`: an eager tensor has its value already (NotImplementedError, as
        TensorFlow's); one made while a TF1 graph is built is a constant, its value returned."""
        if not state.graphs:
            raise NotImplementedError("eval is not supported when eager execution is enabled, is .numpy() what "
                                      "you're looking for?")
        return self.numpy()

    # -- Python protocols ----------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        value = np.asarray(self._value)
        if value.dtype.kind == "T":
            value = np.asarray(string_to_bytes(value), object)
        return value if dtype is None else value.astype(dtype, copy=False)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError("Scalar tensor has no `len()`")
        return self._value.shape[0]

    def __iter__(self):
        if not self._value.ndim:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return iter(hooks.unstack(self))

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if self._value.dtype.kind not in "iu" or self._value.ndim:
            raise TypeError(f"Only integer scalar tensors can be used as an index, got {self.dtype.name}{list(self._value.shape)}.")
        return int(self._value)

    _USE_EQUALITY = True        # Note [tensor equality]

    def __hash__(self):
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    # -- operators (Note [tensor operators]) -----------------------------------
    __add__, __radd__ = _binary_operator("add", direct=True)                    # AddV2
    __sub__, __rsub__ = _binary_operator("sub", direct=True)                    # Sub
    __mul__, __rmul__ = _binary_operator("mul", direct=True)                    # Mul
    __truediv__, __rtruediv__ = _binary_operator("truediv", direct=False)       # RealDiv, integers cast
    __floordiv__, __rfloordiv__ = _binary_operator("floordiv", direct=False)    # FloorDiv
    __mod__, __rmod__ = _binary_operator("mod", direct=True)                    # FloorMod
    __pow__, __rpow__ = _binary_operator("pow", direct=True)                    # Pow
    __matmul__, __rmatmul__ = _binary_operator("matmul", direct=False)          # MatMul
    __and__, __rand__ = _binary_operator("and", direct=False)                   # LogicalAnd, BitwiseAnd
    __or__, __ror__ = _binary_operator("or", direct=False)                      # LogicalOr, BitwiseOr
    __xor__, __rxor__ = _binary_operator("xor", direct=False)                   # LogicalXor, BitwiseXor
    __lt__ = _comparison_operator("lt")                                         # Less
    __le__ = _comparison_operator("le")                                         # LessEqual
    __gt__ = _comparison_operator("gt")                                         # Greater
    __ge__ = _comparison_operator("ge")                                         # GreaterEqual
    __eq__ = _equality_operator("eq", operator.is_)                             # Equal
    __ne__ = _equality_operator("ne", operator.is_not)                          # NotEqual
    __neg__ = _unary_operator("neg", direct=True)                               # Neg
    __abs__ = _unary_operator("abs", direct=False)                              # Abs, ComplexAbs
    __invert__ = _unary_operator("invert", direct=False)                        # LogicalNot, Invert

    def __pos__(self):
        return self

    def __getitem__(self, key):
        """Indexing and slicing as NumPy's basic indexing (StridedSlice; ops/slicing_ops.py)."""
        return hooks.getitem(self, key)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return constant, (self.numpy(),)

    def __repr__(self):
        return f"<tf.Tensor: shape={_shape_str(self._value.shape)}, dtype={self.dtype.name}, numpy={_numpy_repr(self._value)}>"

    def __str__(self):
        text = str(np.asarray(self))
        if "\n" in text:
            text = "\n" + text
        return f"tf.Tensor({text}, shape={_shape_str(self._value.shape)}, dtype={self.dtype.name})"

    def __format__(self, format_spec):
        """`format(t, spec)` and f-strings format the value as NumPy does, as TensorFlow's
        eager tensors do: `f"{t:.3f}"` for a scalar, `f"{t}"` the bare value (`[1. 2.]`, not
        `str(t)`); a spec on a non-scalar raises NumPy's TypeError.  Tensors without a value
        (symbolic, vectorized) format as objects: `str(t)`, and TypeError for any spec."""
        if self._is_symbolic or self._is_batched:
            return object.__format__(self, format_spec)
        return self.numpy().__format__(format_spec)


# Note [tensor equality]: TF2 compares tensors elementwise (`t == 1.0` is a bool
# tensor), so they are unhashable; TF1 graphs compared them by identity and
# used them as dict keys (feed_dict).  As TensorFlow's, the choice is made per
# comparison (`uses_equality`): elementwise only while `Tensor._USE_EQUALITY`
# holds (tf.compat.v1.disable_tensor_equality clears it) and no TF1 graph is
# being built (executing_eagerly_outside_functions), and for a graph tensor only
# inside a function.  Hashes follow: eager tensors never hash, graph tensors hash
# by identity unless compared elementwise, variables unless they would be.

def uses_equality(t):
    """Whether `t == other` compares elementwise (Note [tensor equality])."""
    if not Tensor._USE_EQUALITY or not executing_eagerly_outside_functions():
        return False
    return not t._is_symbolic or t.graph.building_function


@tf_export("compat.v1.enable_tensor_equality")
def enable_tensor_equality():
    """Compares tensors and variables elementwise with `==` (TF2's default; they are unhashable).

    >>> import tapeflow as tf
    >>> tf.compat.v1.enable_tensor_equality()
    >>> (tf.constant([1, 2]) == 1).numpy()
    array([ True, False])
    """
    Tensor._USE_EQUALITY = True


@tf_export("compat.v1.disable_tensor_equality")
def disable_tensor_equality():
    """Compares tensors and variables by identity with `==`, as TF1 (variables and graph
    tensors become hashable; Note [tensor equality]).

    >>> import tapeflow as tf
    >>> t = tf.constant([1, 2])
    >>> tf.compat.v1.disable_tensor_equality()
    >>> t == t, t == tf.constant([1, 2])
    (True, False)
    >>> tf.compat.v1.enable_tensor_equality()
    """
    Tensor._USE_EQUALITY = False


def _shape_str(shape):
    return str(TensorShape(shape))


def _numpy_repr(value):
    """TensorFlow's `numpy=` text: the array's repr (on a new line when multi-line), a scalar's Python repr."""
    if value.dtype.kind == "T":
        value = np.asarray(string_to_bytes(value), object)
    if isinstance(value, np.ndarray) and value.ndim:
        text = repr(value)
        return "\n" + text if "\n" in text else text
    return repr(value.item())


class _Reference:
    """A hashable handle to a tensor (`Tensor.ref()`)."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __hash__(self):
        return id(self._tensor)

    def __eq__(self, other):
        return isinstance(other, _Reference) and other._tensor is self._tensor


# -- construction and deletion hooks ----------------------------------------

# Note [construction hook]: framework/device.py needs to see each new tensor for a
# while: until the runtime starts (Note [runtime initialization]) and while a device
# scope places off CPU:0 (Note [recorded placement]).  Every op makes tensors, and a
# test in `__init__` would cost each of them about 1% of a small op, so while no hook
# is set `Tensor.__init__` is the plain one above, and while one is,
# `set_construction_hook` makes it `_construct_and_hook`, which also calls the hook
# (the way Note [trace deletion] handles `__del__`; these two are the only attributes
# of Tensor that change at run time, and only here).

_plain_init = Tensor.__init__
_construction_hook = None


def _construct_and_hook(self, value):
    """`Tensor.__init__` while a construction hook is set (Note [construction hook])."""
    self._value = value
    self._id = _next_id()
    hook = _construction_hook
    if hook is not None:        # cleared by another thread meanwhile
        hook(self)


def set_construction_hook(fn):
    """Makes every new Tensor (and subclass instance) call `fn(tensor)` once its value and
    id are set; None removes the hook (Note [construction hook]).  Callers serialize their
    calls (framework/device.py holds its runtime lock)."""
    global _construction_hook
    _construction_hook = fn
    Tensor.__init__ = _plain_init if fn is None else _construct_and_hook


# Note [trace deletion]: when a tensor dies, each active tape drops one use of
# it (tape.h DeleteTrace), so ops whose outputs all died are forgotten and their
# saved inputs freed.  A finalizer costs every tensor that dies about 0.15 µs,
# taped or not, and CPython calls one whenever the class has a `__del__`, so
# `Tensor.__del__` exists only while some thread has an active tape: tapes and
# accumulators enter and leave the stack through `push_recorder` /
# `pop_recorder`, and the first and last of them set and delete it (the one
# attribute of Tensor that changes at run time, and only here).  A recorder
# plugs in with its `_delete_trace(tensor_id)` (eager/tape.py,
# eager/forwardprop.py).  A thread with no tape of its own finds `state.tapes`
# empty in it.

def _delete_traces(self):
    try:
        tapes = state.tapes
    except Exception:  # interpreter shutdown
        return
    if tapes:
        tid = self._id
        for tape in tapes:
            tape._delete_trace(tid)


_active_tapes = [0]         # tapes on the stacks of all threads (Note [trace deletion])
_active_lock = threading.Lock()


def push_recorder(recorder):
    """Puts a tape (or a forward accumulator) on this thread's stack of recorders."""
    state.tapes.append(recorder)
    with _active_lock:
        _active_tapes[0] += 1
        if _active_tapes[0] == 1:
            Tensor.__del__ = _delete_traces


def pop_recorder(recorder):
    """Takes `recorder` off this thread's stack (the innermost entry that is it)."""
    tapes = state.tapes
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is recorder:
            del tapes[i]
            break
    with _active_lock:
        _active_tapes[0] -= 1
        if _active_tapes[0] == 0:
            del Tensor.__del__



# -- conversion ------------------------------------------------------------

# Note [Python integers]: TensorFlow converts Python values straight to the
# dtypes of `_DIRECT`; to any other dtype it converts them as with no dtype and
# then casts, so `tf.constant(300, tf.uint8)` wraps to 44 (a cast, not a range
# check) while `tf.constant(True, tf.uint8)` and `tf.constant(1.5, tf.int8)`
# raise TypeError (no such cast).  Integers wrap to the width of an integer
# dtype; one beyond int64 (uint64 for a uint64 tensor) raises ValueError.
_DIRECT = frozenset(np.dtype(d) for d in (np.int32, np.int64, np.uint64, np.float16, np.float32, np.float64,
                                          np.complex128))


def _infer_python(value, direct=None):
    """NumPy array for a Python scalar/list with TensorFlow's dtype inference.

    `direct`: a NumPy dtype of `_DIRECT` that was requested: numbers keep full
    precision (no float32/int32 narrowing) for the cast to it.
    """
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "SUO" and _has_text(value):
        return _python_strings(value, arr.shape)
    first = _first_leaf(value)
    eager = not state.graphs        # Note [graph conversion]
    if direct is not None:
        if kind == "O" and direct.kind in "fc" and all(type(v) is int for v in _leaves(value)):
            try:                    # integers beyond 64 bits, as floats
                return np.asarray(value, direct)
            except OverflowError:
                _out_of_range(value)
        if kind in "fibc" or kind == "u" and direct.kind in "ufc":
            return arr
    elif eager and (type(first) is bool and kind in "iufc" or kind == "c" and not _is_complex(first)):
        _mixed(value)               # TF reads the first element's type: [True, 1], [1, 1j]
    if kind == "f" and arr.dtype == np.float64 and not isinstance(first, np.float64):
        if eager and type(first) is int and all(type(v) is int for v in _leaves(value)):
            _out_of_range(value)    # NumPy made floats of integers beyond int64
        return arr.astype(np.float32)
    if kind == "u" and type(first) is int:
        if eager:
            _out_of_range(value)   # a Python int >= 2**63 needs a uint64 tensor
        return arr                 # NumPy's uint64, as in TF's graphs
    if kind in "iu" and arr.dtype.itemsize == 8 and not isinstance(first, np.int64):
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            return arr.astype(np.int32)
        return arr.astype(np.int64)
    if kind == "O":   # None, mixed types, integers beyond 64 bits
        if first is not None and any(v is None for v in _leaves(value)):
            _mixed(value)
        if type(first) is int:
            _out_of_range(value)
        if not eager and value is not None:
            _mixed(value)
        raise ValueError(f"Attempt to convert a value ({value!r}) with an unsupported type to a Tensor.")
    if kind in "USV" and arr.dtype not in dtypes._BY_NP:
        raise TypeError(f"Failed to convert {type(value).__name__} {value!r} to a Tensor: unsupported element type {arr.dtype}.")
    return arr


# Note [graph conversion]: TensorFlow converts Python values in two ways.  Eagerly
# its C++ converter reads the type of the first element and refuses a list that
# mixes in another (ValueError: [True, 1], [1, 1j], [1, None], [1, "a"]); while a
# graph is built, `make_tensor_proto` hands the list to NumPy instead, so what
# NumPy can promote converts ([True, 1] is int32, [1, 1j] complex128) and what it
# cannot (None, text among numbers, integers beyond 64 bits) raises TypeError.
# Ragged lists and a bare None raise ValueError both ways.

def _mixed(value):
    if state.graphs:
        raise TypeError(f"Failed to convert elements of {value!r} to Tensor. Consider casting elements to a "
                        "supported type (all numbers, all strings, no None).")
    raise ValueError("Can't convert Python sequence with mixed types to Tensor.")


def _out_of_range(value):
    if state.graphs:
        _mixed(value)
    raise ValueError(f"Can't convert Python sequence with out-of-range integer to Tensor: {value!r}.")


def _is_complex(leaf):
    return isinstance(leaf, (complex, np.complexfloating))


def _first_leaf(value):
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return value


def _convert_python(value, dtype):
    """NumPy array for a Python or NumPy value, converted to `dtype` (a DType or None);
    None for a list holding tensors (see `_pack_list`)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return _convert_numpy(value, dtype)
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        return None
    direct = dtype._np if dtype is not None and dtype._np in _DIRECT else None
    arr = _infer_python(value, direct)
    if dtype is not None and arr.dtype != dtype._np:
        src, dst = arr.dtype.kind, dtype._np.kind
        lossy = arr.size and ((src == "f" and dst in "iub") or (src == "c" and dst != "c") or (
            src in "iu" and dst == "b") or (src == "b" and direct is None) or "T" in (src, dst))  # Note [Python integers]
        if lossy:
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        arr = arr.astype(dtype._np)
    return arr


def _convert_numpy(value, dtype):
    arr = np.array(value)
    if arr.dtype.kind in "SUOT":
        if dtype is not None and dtype is not dtypes.string and arr.dtype.kind in "SU":
            return arr.astype(dtype._np)          # numbers written as text are parsed
        arr = _numpy_strings(arr)
    if dtype is not None and arr.dtype != dtype._np:
        src, dst = arr.dtype.kind, dtype._np.kind
        if dst == "T":
            raise ValueError(f"Failed to convert a NumPy array to a Tensor (Unsupported object type "
                             f"{type(arr.reshape(-1)[:1].tolist()[0]).__name__ if arr.size else arr.dtype}).")
        if src == "T":
            raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
        if src == "c" and dst != "c":
            raise TypeError(f"Cannot convert a complex array to {dtype.name}.")
        arr = arr.astype(dtype._np)
    return arr


# -- strings (Note [string tensors] in framework/dtypes.py) ------------------------

_STRING = dtypes.string._np


def _has_text(value):
    return isinstance(value, (str, bytes)) or isinstance(value, (list, tuple)) and any(_has_text(v) for v in value)


def _leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _latin1(item):
    """One element's bytes as Latin-1 text (a str stands for its UTF-8 bytes); None if not text."""
    if isinstance(item, bytes):
        return item.decode("latin-1")
    if isinstance(item, str):
        return item.encode("utf-8").decode("latin-1")
    return None


def _python_strings(value, shape):
    items = [_latin1(v) for v in _leaves(value)]
    if None in items:
        _mixed(value)
    return np.array(items, dtype=_STRING).reshape(shape)


def _numpy_strings(arr):
    if arr.dtype.kind == "T":     # a StringDType array of the user's: text, written as UTF-8
        arr = arr.astype(object)
    flat = arr.reshape(-1).tolist()
    items = [_latin1(v) for v in flat]
    if None in items:
        bad = flat[items.index(None)]
        raise ValueError(f"Failed to convert a NumPy array to a Tensor (Unsupported object type {type(bad).__name__}).")
    return np.array(items, dtype=_STRING).reshape(arr.shape)


def string_to_bytes(value):
    """A string tensor's value as TensorFlow's `.numpy()` gives it: bytes at rank 0, else an
    object array of bytes."""
    out = np.array([v.encode("latin-1") for v in value.reshape(-1).tolist()], dtype=object)
    return out.reshape(value.shape) if value.ndim else out[0]


def _contains_tensor(value):
    for v in value:
        if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
            return True
        if isinstance(v, (list, tuple)) and _contains_tensor(v):
            return True
    return False


@tf_export("convert_to_tensor")
def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """Converts a Tensor, Variable, IndexedSlices, NumPy array or Python value to a Tensor.

    Python floats become float32 and Python ints int32 (int64 when they do not fit).

    Args:
      value: the value to convert.
      dtype: the required dtype; a Tensor of another dtype raises ValueError.
      dtype_hint: a preferred dtype, used when `value` has none of its own.
      name: unused in eager mode.

    Returns:
      A Tensor.

    Raises:
      ValueError: `value` is a tensor of a dtype other than `dtype`.
      TypeError: the value cannot be represented in `dtype`.

    >>> import tapeflow as tf
    >>> tf.convert_to_tensor([1, 2]).dtype
    tf.int32
    """
    if type(value) is Tensor:
        if dtype is not None and value._value.dtype != dtypes.as_dtype(dtype)._np:
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} "
                             f"for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    return _convert_slow(value, dtype, dtype_hint)


def _convert_slow(value, dtype, dtype_hint):
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        kind = type(value)
        if (kind is float or kind is int) and dtype._np.kind in "fc" or kind is int and dtype._np.kind in "iu":
            try:   # fast path: a Python number in an operator with a tensor
                return _in_graph(Tensor(np.asarray(value, dtype._np)))
            except OverflowError:
                pass        # wrapped or refused below (Note [Python integers])
    convert = getattr(value, "_as_tensor", None)
    if convert is not None:  # Variable, IndexedSlices, symbolic values
        return convert(dtype)
    if isinstance(value, Tensor):  # subclasses (graph tensors) handle their own dtype
        return value
    if dtype is None and dtype_hint is not None:
        try:
            return _convert_slow(value, dtypes.as_dtype(dtype_hint), None)
        except (TypeError, ValueError):
            pass
    arr = _convert_python(value, dtype)
    if arr is None:
        return _pack_list(value, dtype)
    return _in_graph(Tensor(arr))


# Note [list packing]: a list holding tensors converts as TensorFlow packs one.
# Every element takes one dtype: the one asked for, else that of the first tensor
# in the list (depth first).  Tensors of another dtype are cast to a dtype asked
# for, and refused (TypeError) when the dtype was inferred; Python values become
# constants of that dtype (`tf.constant(v, dtype)`: "a" beside a float tensor is a
# TypeError, 2 becomes 2.0), and each level of the list is packed with the Pack op.
# Eagerly a level made of tensors alone is packed as it is, so tensors of mixed
# dtypes there fail in the op (InvalidArgumentError).  `tf.constant` takes no
# tensors inside lists (`constant` below).

def _pack_list(value, dtype):
    inferred = _first_tensor_dtype(value)
    return _pack_level(value, inferred if dtype is None else dtype, dtype is not None and dtype != inferred)


def _first_tensor_dtype(value):
    for v in value:
        if isinstance(v, Tensor) or hasattr(v, "_as_tensor"):
            return dtypes.as_dtype(v.dtype)
        if isinstance(v, (list, tuple)):
            found = _first_tensor_dtype(v)
            if found is not None:
                return found
    return None


def _pack_level(items, dtype, cast):
    """One level of Note [list packing]: a Tensor, or the list itself when it holds no tensor."""
    parts = [convert_to_tensor(v) if isinstance(v, Tensor) or hasattr(v, "_as_tensor") else v for v in items]
    if cast:
        parts = [hooks.cast(v, dtype) if isinstance(v, Tensor) and v.dtype != dtype else v for v in parts]
    if not state.graphs and all(isinstance(v, Tensor) for v in parts):
        return hooks.pack(parts)
    packed = False
    for i, v in enumerate(parts):
        if isinstance(v, Tensor):
            if v.dtype != dtype:
                raise TypeError(f"Cannot convert a list containing a tensor of dtype {v.dtype.name} to "
                                f"{dtype.name} (Tensor is: {v!r}). Cast it with tf.cast first.")
            packed = True
        elif isinstance(v, (list, tuple)):
            parts[i] = v = _pack_level(v, dtype, cast)
            packed = packed or isinstance(v, Tensor)
    if not packed:
        return items
    return hooks.pack([v if isinstance(v, Tensor) else constant(v, dtype) for v in parts])


def _in_graph(t):
    """While a graph is being built, Python values become Const nodes of it (TF's graph mode)."""
    if state.graphs:
        return state.graphs[-1].constant_node(t)
    return t


@tf_export("constant")
def constant(value, dtype=None, shape=None, name="Const"):
    """Creates a constant tensor from a Python or NumPy value.

    Args:
      value: a scalar, nested list or NumPy array.
      dtype: the element type; inferred (floats -> float32, ints -> int32) when None.
      shape: optional shape; a scalar `value` is broadcast to it, otherwise the
        value is reshaped and must have the same number of elements.
      name: unused in eager mode.

    Returns:
      An eager Tensor.

    Raises:
      TypeError: the value cannot be represented in `dtype`.
      ValueError: the value cannot be reshaped to `shape`.

    >>> import tapeflow as tf
    >>> tf.constant(1.5, shape=[2]).numpy()
    array([1.5, 1.5], dtype=float32)
    """
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        t = convert_to_tensor(value)
        if dtype is not None and t._value.dtype != dtypes.as_dtype(dtype)._np:
            raise TypeError(f"Expected tensor {t.numpy()} with dtype {dtypes.as_dtype(dtype)!r}, but got "
                            f"dtype {t.dtype!r}. Use tf.cast to change a tensor's dtype.")
        arr = t._value
    else:
        arr = _convert_python(value, None if dtype is None else dtypes.as_dtype(dtype))
        if arr is None:
            _refuse_tensors(value)
    if shape is not None:
        shape = tuple(TensorShape(shape).as_list())
        if arr.size == 1 and arr.shape != shape:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif arr.shape != shape:
            if arr.size != int(np.prod(shape, dtype=np.int64)):
                raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {value!r} "
                                f"(converted from {arr.shape}) has {arr.size} elements, but got `shape` "
                                f"{shape} with {int(np.prod(shape))} elements).")
            arr = arr.reshape(shape)
    return _in_graph(Tensor(arr))


def _refuse_tensors(value):
    """`tf.constant` of a list holding tensors: TensorFlow's eager converter refuses it
    (ValueError) and so does its graph builder (TypeError)."""
    message = (f"tf.constant takes Python and NumPy values, but {value!r} holds tensors. "
               "Pack them with tf.stack or tf.convert_to_tensor instead.")
    raise (TypeError if state.graphs else ValueError)(message)


@tf_export("is_tensor")
def is_tensor(x):
    """True for tapeflow tensors and tensor-like objects (Variables, IndexedSlices, SparseTensors)."""
    return isinstance(x, Tensor) or hasattr(x, "_as_tensor") or getattr(x, "_is_composite_tensor", False)
