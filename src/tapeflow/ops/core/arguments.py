"""Arguments as TensorFlow takes them: int inputs and attr lists, index dtypes, and the
shape strings and errors the ops' messages use.  No ops: every family may import it.

Note [int inputs] (in `int_input`) says how a size or index argument is converted.
"""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor
from tapeflow.framework.tensor import Tensor, _convert_python, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape


def _int_list(value, what, input_of=None, convert="input", eager_scalar=False):
    """A shape-like argument (int, list, TensorShape or int tensor) as a tuple of ints.

    `input_of` names the op when TensorFlow takes the argument as an int32/int64
    tensor input (Reshape's shape, Tile's multiples): it is converted as TensorFlow
    converts it (`convert`: Note [int inputs]) and must be 1-D; a scalar is a vector
    of one only eagerly and when `eager_scalar` (Reshape's kernel takes it, its shape
    function does not).

    Raises:
      ValueError: `value` is or holds None (TensorFlow cannot convert it).
    """
    if input_of is not None:
        array = int_input(value, what, input_of, convert)
        if array.ndim != 1 and not (array.ndim == 0 and eager_scalar and not state.graphs):
            raise shape_rules.shape_error(input_of, f"`{what}` must be 1-D, got shape {list(array.shape)}")
        return tuple(array.reshape(-1).tolist())
    if isinstance(value, TensorShape):
        value = value.as_list()
    if isinstance(value, Tensor):
        value = np.asarray(value._value).tolist()
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if value is None or (isinstance(value, (list, tuple)) and any(v is None for v in value)):
        raise ValueError("Attempt to convert a value (None) with an unsupported type (<class 'NoneType'>) to a "
                         f"Tensor (argument `{what}`).")
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{what} must be a list of integers, got {value!r}") from None


_MIXED = "Can't convert Python sequence with mixed types to Tensor."


def int_input(value, what, op_type, convert="input"):
    """`value` converted as TensorFlow converts the int tensor input `what` of `op_type`
    (Note [int inputs]), as an int64 NumPy array of any rank.

    Raises:
      TypeError: a symbolic tensor whose value is known only when the graph runs (the
        caller may take it as an input: `primitives.ints_or_tensor`), or TF's TypeErrors.
      ValueError, InvalidArgumentError: TF's conversion and dtype errors (see the note).
    """
    if type(value) in (list, tuple) and value and all(type(v) is int for v in value):
        return np.array(value, np.int64).reshape(-1)           # the common case: a list of ints
    if isinstance(value, TensorShape):
        value = value.as_list()
    if getattr(value, "_is_variable", False):
        value = value.read_value()
    if isinstance(value, Tensor):
        array = _tensor_value(value, what, op_type)
    elif isinstance(value, np.ndarray):
        truncate = value.dtype.kind == "f" and convert != "any"
        array = value.astype(np.int64) if truncate else value
    else:
        array = _python_value(value, what, op_type, convert)
    if array.dtype.kind not in "iub":                  # a bool tensor failed in `_tensor_value`
        raise int_input_error(_dtype_name(array.dtype), what, op_type)
    return array.astype(np.int64)


def _dtype_name(np_dtype):
    return "string" if np_dtype.kind in "SUO" else dtypes.as_dtype(np_dtype).name


def _tensor_value(t, what, op_type):
    """A tensor argument's value; a symbolic one must be known while the graph is built."""
    if t._value.dtype.kind not in "iu":
        raise int_input_error(_dtype_name(np.dtype(t._value.dtype)), what, op_type)
    if isinstance(t, SymbolicTensor):
        known = constant_value(t)
        if known is None:
            raise TypeError(f"`{what}` of {op_type} is known only when the graph runs: {t.name}")
        return np.asarray(known)
    return np.asarray(t._value)


def _leaves(value):
    """The entries of a nested list and its shape; ValueError when it is not rectangular."""
    if not isinstance(value, (list, tuple)):
        return [value], ()
    parts = [_leaves(v) for v in value]
    shapes = {shape for _, shape in parts}
    if len(shapes) > 1:
        raise ValueError("Can't convert non-rectangular Python sequence to Tensor.")
    inner = shapes.pop() if shapes else ()
    return [leaf for leaves, _ in parts for leaf in leaves], (len(value),) + inner


def _python_value(value, what, op_type, convert):
    """A Python argument (a number, string or nested list) converted as in Note [int inputs]."""
    if value is None:
        raise ValueError("Attempt to convert a value (None) with an unsupported type (<class 'NoneType'>) to a "
                         f"Tensor (argument `{what}` of {op_type}).")
    leaves, shape = _leaves(value)
    if any(isinstance(v, SymbolicTensor) for v in leaves):
        raise TypeError(f"`{what}` of {op_type} holds tensors known only when the graph runs")
    tensors = [v for v in leaves if isinstance(v, Tensor)]
    if tensors:                                         # the list takes its first tensor's dtype
        dtype = tensors[0]._value.dtype
        bad = next((v for v in leaves if v is None or isinstance(v, (str, bytes))), None)
        if bad is not None:
            raise TypeError(f"Cannot convert {bad!r} to EagerTensor of dtype {_dtype_name(np.dtype(dtype))}")
        values = [np.asarray(v._value) if isinstance(v, Tensor) else v for v in leaves]
        return np.array(values, dtype).reshape(shape)
    strings = any(isinstance(v, (str, bytes)) for v in leaves)
    numbers = any(isinstance(v, (int, float, np.number, np.bool_)) for v in leaves)
    if any(v is None for v in leaves) or (strings and numbers):
        raise TypeError(f"Failed to convert elements of {value!r} to Tensor.") if state.graphs else ValueError(_MIXED)
    if not leaves:                                     # an empty list: the default int32, else float32
        return np.zeros(shape, np.float32 if convert == "any" else np.int64)
    array = np.array(leaves, dtype=object).reshape(shape) if strings else np.array(leaves).reshape(shape)
    if array.dtype.kind in "iub":
        return array
    if convert == "int32" or (convert == "input" and array.dtype.kind == "f" and not shape and not state.graphs):
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype int32")
    return array


def int_input_error(kind, what, op_type):
    """The exception for an int32/int64 tensor input `what` of `op_type` given a `kind` tensor
    ('float'): InvalidArgumentError eagerly (TF's kernel lookup), TypeError in graphs (its op builder)."""
    message = f"Value for attr of {kind} is not in the list of allowed values: int32, int64 (argument `{what}`)"
    if state.graphs:
        return TypeError(f"{message} of {op_type}")
    return InvalidArgumentError(None, op_type, f"{message} [Op:{op_type}]")


def _int_input(op_type, convert="input", eager_scalar=False):
    """`_int_list` for an int tensor input of `op_type` (for `primitives.ints_or_tensor`)."""
    return lambda value, what: _int_list(value, what, op_type, convert, eager_scalar)


def _any_tensor(x):
    return x if isinstance(x, Tensor) or getattr(x, "_is_variable", False) else convert_to_tensor(x)


def typed_index(value, what, op_type, attr, allowed, default=None):
    """`value` as the input `what` of `op_type` whose type attr `attr` allows the NumPy dtypes
    `allowed` (`default`: the attr's default dtype), converted and checked like TensorFlow
    (Note [typed index inputs]).  Python and NumPy values become eager tensors, also in graphs.

    Raises:
      TypeError: eagerly, a Python float for an input with a default dtype; in graphs, a dtype
        not in `allowed`; TF's conversion errors (see `_python_entries`).
      ValueError: None, or a ragged list; eagerly, None or text among numbers.
      InvalidArgumentError: eagerly, a dtype not in `allowed`.
    """
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        t = convert_to_tensor(value)
    elif default is not None and isinstance(value, float) and not state.graphs:
        raise TypeError(f"Cannot convert {value!r} to EagerTensor of dtype {default.name}")
    else:
        if isinstance(value, (list, tuple)):
            check_list_entries(value)
        array = None
        if default is not None:
            try:
                empty = isinstance(value, (list, tuple)) and not value
                array = np.zeros((0,), default._np) if empty else _convert_python(value, default)
            except (TypeError, ValueError):
                pass
        if array is None:
            array = _convert_python(value, None)
        t = convert_to_tensor(value) if array is None else Tensor(array)     # None: tensors in the list
    if t._value.dtype not in allowed:
        raise typed_index_error(t.dtype.name, what, op_type, attr, allowed)
    return t


def check_list_entries(value):
    """Raises TensorFlow's conversion error for a list mixing tensors with None or text (TypeError),
    or, in graphs, None or text with numbers (TypeError: its graph conversion checks each entry)."""
    tensors = [v for v in value if isinstance(v, Tensor)]
    odd = next((v for v in value if v is None or isinstance(v, (str, bytes))), None)
    if tensors and odd is not None:
        raise TypeError(f"Cannot convert {odd!r} to EagerTensor of dtype {tensors[0].dtype.name}")
    text = sum(isinstance(v, (str, bytes)) for v in value)
    if state.graphs and (any(v is None for v in value) or 0 < text < len(value)):
        raise TypeError(f"Failed to convert elements of {value!r} to Tensor.")


def typed_index_error(dtype_name, what, op_type, attr, allowed):
    """The exception for a `dtype_name` tensor given to the input `what` of `op_type` whose type
    attr `attr` allows the NumPy dtypes `allowed` (Note [typed index inputs])."""
    names = ", ".join(sorted(dtypes.as_dtype(d).name for d in allowed))
    if state.graphs:
        return TypeError(f"Value passed to parameter '{what}' of {op_type} has DataType {dtype_name} not in list "
                         f"of allowed values: {names}")
    return InvalidArgumentError(None, op_type, f"Value for attr '{attr}' of {dtype_name} is not in the list of "
                                f"allowed values: {names} (argument `{what}`) [Op:{op_type}]")


def _shape_str(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


_shape_error = shape_rules.shape_error      # Note [build-time shape errors] in framework/shapes/shape_rules.py


def _known_count(dims):
    """The product of the known sizes and the positions of the unknown ones."""
    known, unknown = 1, []
    for i, d in enumerate(dims):
        if d is None:
            unknown.append(i)
        else:
            known *= d
    return known, unknown


def int_attr_list(value, what, op_name):
    """A list-of-ints attr (Squeeze's axis) as TensorFlow takes it: one int or a list, each entry
    truncated by int().

    Raises:
      TypeError: a tensor (not a list), or an entry int() rejects (a string, None, NaN).
      OverflowError: an infinite entry.
    """
    if (isinstance(value, Tensor) or getattr(value, "_is_variable", False)):
        raise TypeError(f"Expected list for '{what}' argument to '{op_name}' Op, not {value!r}.")
    return tuple(int_entries(value if isinstance(value, (list, tuple, np.ndarray)) else [value], what))


def int_entries(entries, what):
    """int() of each entry of an attr list (TensorFlow's _MakeInt): a string, None or NaN is a
    TypeError, an infinity an OverflowError."""
    out = []
    for v in entries:
        try:
            if isinstance(v, (str, bytes)):
                raise TypeError
            out.append(int(v))
        except (TypeError, ValueError):
            raise TypeError(f"Expected int for argument '{what}' not {v!r}.") from None
    return out
