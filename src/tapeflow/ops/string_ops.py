"""String ops (`tf.strings`): join, length, case, number formatting and parsing, split.

A string tensor holds bytes (Note [string tensors] in framework/dtypes.py):
each element is a str whose characters are its bytes read as Latin-1, so a
kernel turns an element back into bytes with `.encode("latin-1")`.  The
kernels walk the elements in Python rather than use NumPy's string ufuncs,
which stop at a NUL byte.  No string op is differentiable; a tape never
records a string tensor, and numbers turned into strings (`as_string`) end
their gradient path.
"""

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import convert_inputs, execute, op
from tapeflow.framework.shapes.shape_rules import merge_shapes, shape_error
from tapeflow.framework.shapes.symbolic_tensors import Meta
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.batching import ELEMENTWISE
from tapeflow.ops.core import basic_ops

_STRING = dtypes.string._np
_STRING_ONLY = (dtypes.string,)


def _map(fn, x, out_dtype=_STRING):
    """`fn` of each element of the string array `x`, as an array of x's shape."""
    return np.array([fn(s) for s in x.reshape(-1).tolist()], dtype=out_dtype).reshape(x.shape)


def _text(s):
    """A Python str or bytes argument as an element (its UTF-8 bytes as Latin-1)."""
    return s.decode("latin-1") if isinstance(s, bytes) else s.encode("utf-8").decode("latin-1")


def _like(dtype):
    """A shape rule: the input's shape, an output of `dtype` (an attr name or a NumPy dtype)."""
    def rule(x, **attrs):
        out = attrs[dtype] if isinstance(dtype, str) else dtype
        return [Meta(None if x.shape is None else tuple(x.shape), np.dtype(out))]
    return rule


# -- join ------------------------------------------------------------------------------

def _join_shape(*xs, separator):
    """StringJoin: the inputs' shapes merged, scalars aside."""
    if any(x.shape is None for x in xs):
        return [Meta(None, _STRING)]
    shapes = [x.shape for x in xs if len(x.shape)]
    return [Meta(merge_shapes(shapes, "StringJoin inputs") if shapes else (), _STRING)]


@op("StringJoin", dtypes=_STRING_ONLY, shape=_join_shape, unknown_rank=True, differentiable=False)
def _string_join(*xs, separator):
    shapes = [x.shape for x in xs if x.ndim]
    for shape in shapes[1:]:
        if shape != shapes[0]:
            raise ValueError(f"Input shapes do not match: {list(shapes[0])} vs. {list(shape)}")
    shape = shapes[0] if shapes else ()
    columns = [np.broadcast_to(x, shape).reshape(-1).tolist() for x in xs]
    return np.array([separator.join(row) for row in zip(*columns, strict=True)] if columns else [""],
                    dtype=_STRING).reshape(shape)


@_string_join.def_batch
def _string_join_batch(xs, batched, separator):
    # the kernel broadcasts scalars only: every input of an example's shape is made stacked
    size = primitives.batch_size_of(xs[batched.index(True)])
    ranks = [batching.example_rank(x, b) for x, b in zip(xs, batched)]
    ref = next((x if b else primitives.broadcast_batch(x, size) for x, b, r in zip(xs, batched, ranks) if r), None)
    out = []
    for x, b, r in zip(xs, batched, ranks):
        if ref is not None and (r or b):
            x = primitives.broadcast_to(primitives.insert_axes(x, 1, ref._value.ndim - 1) if b and not r else x,
                                       basic_ops.shape(ref))
        out.append(x)
    return execute(_string_join, out, {"separator": separator}), True


@tf_export("strings.join")
def join(inputs, separator="", name=None):
    """Joins string tensors elementwise, `separator` between them.

    The inputs must have one shape, or be scalars (which join every element).

    Args:
      inputs: a list of string tensors (or Python strings).
      separator: the string placed between joined elements.
      name: the op's name in a graph.

    Returns:
      A string tensor of the inputs' shape.

    Raises:
      InvalidArgumentError: the non-scalar inputs differ in shape, or one is not a string.

    >>> import tapeflow as tf
    >>> tf.strings.join([tf.constant(["a", "b"]), "x"], separator="-").numpy()
    array([b'a-x', b'b-x'], dtype=object)
    """
    if isinstance(inputs, Tensor):
        inputs = list(inputs)           # a tensor joins its rows, as TensorFlow iterates it
    if not inputs:
        return convert_to_tensor("")
    return execute(_string_join, convert_inputs(list(inputs)), {"separator": _text(separator)})


# -- length and case ---------------------------------------------------------------------

_UNITS = ("BYTE", "UTF8_CHAR")


def _utf8_chars(s):
    """Characters of UTF-8 bytes: the bytes that do not continue a character (0b10xxxxxx)."""
    return len(s) - sum(1 for c in s if "\x80" <= c <= "\xbf")


@op("StringLength", dtypes=_STRING_ONLY, shape=_like(np.int32), unknown_rank=True, differentiable=False,
    batch=ELEMENTWISE)
def _string_length(x, unit):
    return _map(len if unit == "BYTE" else _utf8_chars, x, np.int32)


@tf_export("strings.length")
def length(input, unit="BYTE", name=None):  # noqa: A002 - TensorFlow's public name
    """The length of each string, in bytes (`unit="BYTE"`) or UTF-8 characters ("UTF8_CHAR").

    Raises:
      InvalidArgumentError: an unknown `unit`, or `input` is not a string tensor.

    >>> import tapeflow as tf
    >>> tf.strings.length(["abc", "é"]).numpy(), tf.strings.length("é", unit="UTF8_CHAR").numpy()
    (array([3, 2], dtype=int32), np.int32(1))
    """
    if unit not in _UNITS:
        raise shape_error("StringLength", f"Value for attr 'unit' of \"{unit}\" is not in the list of allowed "
                                          f"values: \"BYTE\", \"UTF8_CHAR\"")
    return execute(_string_length, (convert_to_tensor(input),), {"unit": unit})


def _change_case(s, encoding, ascii_fn, text_fn):
    raw = s.encode("latin-1")
    if not encoding:                    # ASCII letters only, as TensorFlow's default
        return ascii_fn(raw).decode("latin-1")
    return text_fn(raw.decode("utf-8")).encode("utf-8").decode("latin-1")


def _check_encoding(op_type, encoding):
    if encoding not in ("", "utf-8"):
        raise InvalidArgumentError(None, op_type, f"only utf-8 or '' (no encoding) is supported, received "
                                                  f"{encoding} [Op:{op_type}]")


@op("StringUpper", dtypes=_STRING_ONLY, shape=_like(_STRING), unknown_rank=True, differentiable=False,
    batch=ELEMENTWISE)
def _string_upper(x, encoding):
    return _map(lambda s: _change_case(s, encoding, bytes.upper, str.upper), x)


@op("StringLower", dtypes=_STRING_ONLY, shape=_like(_STRING), unknown_rank=True, differentiable=False,
    batch=ELEMENTWISE)
def _string_lower(x, encoding):
    return _map(lambda s: _change_case(s, encoding, bytes.lower, str.lower), x)


@tf_export("strings.upper")
def upper(input, encoding="", name=None):  # noqa: A002
    """Upper-cases each string: ASCII letters only, or all letters with `encoding="utf-8"`.

    >>> import tapeflow as tf
    >>> tf.strings.upper(["aBc"]).numpy()
    array([b'ABC'], dtype=object)
    """
    _check_encoding("StringUpper", encoding)
    return execute(_string_upper, (convert_to_tensor(input),), {"encoding": encoding})


@tf_export("strings.lower")
def lower(input, encoding="", name=None):  # noqa: A002
    """Lower-cases each string: ASCII letters only, or all letters with `encoding="utf-8"`."""
    _check_encoding("StringLower", encoding)
    return execute(_string_lower, (convert_to_tensor(input),), {"encoding": encoding})


# -- numbers to strings and back -------------------------------------------------------------

_FILLS = ("", " ", "0", "-", "+", "#")       # printf flags TensorFlow's AsString accepts


def _number_format(dtype, precision, scientific, shortest, width, fill):
    """The printf format of one element of `dtype` (TensorFlow's AsString attrs)."""
    if fill not in _FILLS:
        raise ValueError(f'Fill argument not supported: "{fill}"')
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    kind = dtype.kind
    inexact = kind in "fc" or dtype == dtypes.bfloat16._np
    name = dtypes.from_numpy(dtype).name
    if not inexact and precision > -1:
        raise ValueError(f"precision not supported for datatype {name}")
    if not inexact and (scientific or shortest):
        raise ValueError(f"scientific and shortest format not supported for datatype {name}")
    spec = "%" + fill + (str(width) if width > -1 else "")
    if not inexact:
        return spec + ("d" if kind in "iu" else "s")
    return spec + (f".{precision}" if precision > -1 else "") + ("e" if scientific else "g" if shortest else "f")


def _format_one(fmt, kind, v):
    if kind == "b":
        return fmt % ("true" if v else "false")
    if kind == "c":
        return f"({fmt % v.real},{fmt % v.imag})"
    if kind in "iu":
        return fmt % int(v)
    if kind == "T":
        return fmt % v
    return fmt % float(v)


_AS_STRING_TYPES = dtypes.NUMERIC_TYPES + (dtypes.bool, dtypes.string)


@op("AsString", dtypes=_AS_STRING_TYPES, shape=_like(_STRING), unknown_rank=True, differentiable=False,
    batch=ELEMENTWISE)
def _as_string(x, precision, scientific, shortest, width, fill):
    fmt = _number_format(x.dtype, precision, scientific, shortest, width, fill)
    kind = x.dtype.kind
    flat = np.asarray(x).reshape(-1)
    items = flat.tolist() if kind in "biuT" else list(flat)     # exact ints; complex/bfloat16 as NumPy scalars
    return np.array([_format_one(fmt, kind, v) for v in items], dtype=_STRING).reshape(x.shape)


@tf_export("strings.as_string", "as_string")
def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """Formats each number as a string, as C's printf would (floats "%f" by default).

    Args:
      input: a numeric, bool or string tensor.
      precision: digits after the point for floats (-1: printf's default, 6).
      scientific: use "%e" for floats.
      shortest: use "%g" for floats (the shorter of "%e" and "%f").
      width: the minimum width, padded with `fill` (or spaces) on the left.
      fill: a printf flag: "" , " ", "0", "-", "+" or "#".
      name: the op's name in a graph.

    Returns:
      A string tensor of `input`'s shape.

    Raises:
      InvalidArgumentError: precision, scientific or shortest given for integers,
        both scientific and shortest, or an unsupported fill.

    >>> import tapeflow as tf
    >>> tf.strings.as_string([3.5, 0.25], precision=2).numpy()
    array([b'3.50', b'0.25'], dtype=object)
    """
    attrs = {"precision": precision, "scientific": scientific, "shortest": shortest, "width": width, "fill": fill}
    return execute(_as_string, (convert_to_tensor(input),), attrs)


_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64)


def _parse(s, out_type):
    """One element as a number of `out_type`, or ValueError (TensorFlow's StringToNumber)."""
    text = s.strip(" \t\n\r\f\v")
    try:
        if "_" in text:                      # Python's literal syntax, not C's
            raise ValueError
        if out_type.kind == "f":
            try:
                return float(text)
            except ValueError:
                return float.fromhex(text)       # C's strtod also reads hexadecimal
        value = int(text)
        info = np.iinfo(out_type)
        if not info.min <= value <= info.max:
            raise ValueError
        return value
    except ValueError:
        raise ValueError(f"StringToNumberOp could not correctly convert string: {s}") from None


@op("StringToNumber", dtypes=_STRING_ONLY, shape=_like("out_type"), unknown_rank=True, differentiable=False,
    batch=ELEMENTWISE)
def _string_to_number(x, out_type):
    values = [_parse(s, out_type) for s in x.reshape(-1).tolist()]
    with np.errstate(over="ignore"):        # float32 overflows to inf, as C's strtof
        out = np.array(values, dtype=np.float64 if out_type.kind == "f" else out_type).astype(out_type)
    return out.reshape(x.shape)


@tf_export("strings.to_number")
def to_number(input, out_type=dtypes.float32, name=None):  # noqa: A002
    """Parses each string as a number of `out_type` (float32, float64, int32, int64, uint32 or uint64).

    Raises:
      InvalidArgumentError: a string is not a number of `out_type` (or out of its range).

    >>> import tapeflow as tf
    >>> tf.strings.to_number(["1.5", "-2"]).numpy()
    array([ 1.5, -2. ], dtype=float32)
    """
    out = dtypes.as_dtype(out_type)
    if out not in _NUMBER_TYPES:
        names = "float, double, int32, int64, uint32, uint64"
        if state.graphs:
            raise TypeError(f"Value passed to parameter 'out_type' has DataType {out.name} not in list of "
                            f"allowed values: {names}")
        raise InvalidArgumentError(None, "StringToNumber", f"Value for attr 'out_type' of {out.name} is not in "
                                                           f"the list of allowed values: {names} [Op:StringToNumber]")
    return execute(_string_to_number, (convert_to_tensor(input),), {"out_type": out._np})


# -- split -----------------------------------------------------------------------------------

def _split_shape(x, **_):
    """StringSplitV2 of a scalar: a vector of unknown length."""
    return [Meta((None,), _STRING)]


@op("StringSplitV2", dtypes=_STRING_ONLY, shape=_split_shape, differentiable=False)
def _string_split(x, sep, maxsplit):
    parts = x.reshape(()).item().encode("latin-1").split(sep.encode("latin-1") if sep else None, maxsplit)
    return np.array([p.decode("latin-1") for p in parts], dtype=_STRING).reshape(len(parts))


@tf_export("strings.split")
def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Splits a scalar string at `sep` (None or "": runs of ASCII whitespace), at most `maxsplit` times.

    Only scalars are supported: TensorFlow splits a tensor of rank >= 1 into a
    RaggedTensor, which tapeflow does not have.

    Raises:
      NotImplementedError: `input` has rank >= 1.

    >>> import tapeflow as tf
    >>> tf.strings.split("a  b,c").numpy(), tf.strings.split("a,,b", sep=",").numpy()
    (array([b'a', b'b,c'], dtype=object), array([b'a', b'', b'b'], dtype=object))
    """
    x = convert_to_tensor(input)
    if x.shape.rank != 0:
        raise NotImplementedError(f"tf.strings.split of a tensor of shape {x.shape} gives a RaggedTensor, which "
                                  f"tapeflow does not support; split scalars (e.g. each of tf.unstack(x)).")
    return execute(_string_split, (x,), {"sep": _text(sep) if sep else "", "maxsplit": int(maxsplit)})
