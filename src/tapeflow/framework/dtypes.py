"""DType objects: TensorFlow's dtype names over NumPy (and ml_dtypes) dtypes."""

import builtins

import ml_dtypes
from tapeflow.framework.export import tf_export
import numpy as np


@tf_export("dtypes.DType", "DType")
class DType:
    """A tensor element type; one singleton per type, so `is` compares them.

    >>> import tapeflow as tf
    >>> tf.float32.is_floating, tf.int32.is_integer, tf.as_dtype("float64").name
    (True, True, 'float64')
    """

    __slots__ = ("name", "as_numpy_dtype", "_np")

    def __init__(self, name, np_dtype):
        self.name = name
        self._np = np.dtype(np_dtype)
        self.as_numpy_dtype = self._np.type

    @property
    def is_floating(self):
        return self in _FLOATING

    @property
    def is_complex(self):
        return self in _COMPLEX

    @property
    def is_integer(self):
        return self in _INTEGER

    @property
    def is_unsigned(self):
        return self in (uint8, uint16, uint32, uint64)

    @property
    def is_bool(self):
        return self is bool

    @property
    def is_numeric(self):
        return self in _NUMERIC

    @property
    def is_numpy_compatible(self):
        return True

    @property
    def base_dtype(self):
        return self

    @property
    def real_dtype(self):
        return {complex64: float32, complex128: float64}.get(self, self)

    @property
    def size(self):
        return 0 if self is string else self._np.itemsize

    @property
    def min(self):
        """The smallest value of this type; TypeError for complex and bool types."""
        return self._limits()[0]

    @property
    def max(self):
        """The largest value of this type; TypeError for complex and bool types."""
        return self._limits()[1]

    @property
    def limits(self):
        return self._limits()

    @property
    def as_datatype_enum(self):
        return _ENUM_OF[self.name]

    def _limits(self):
        kind = self._np.kind
        if kind in "iu":
            info = np.iinfo(self._np)
        elif kind == "f" or self is bfloat16:
            info = ml_dtypes.finfo(self._np)
        else:
            raise TypeError(f"Cannot find minimum value of {self!r} with type {self!r}.")
        return info.min, info.max

    def is_compatible_with(self, other):
        return self is as_dtype(other)

    def __eq__(self, other):
        if other is None:
            return False
        if type(other) is not DType:
            try:
                other = as_dtype(other)
            except TypeError:
                return False
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"tf.{self.name}"

    def __reduce__(self):
        return as_dtype, (self.name,)


float16 = DType("float16", np.float16)
half = float16
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
double = float64
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
bool = DType("bool", np.bool_)  # noqa: A001 - TensorFlow's public name
variant = DType("variant", object)   # TensorArray flows (a Python list of arrays)
string = DType("string", np.dtypes.StringDType())     # Note [string tensors]
string.as_numpy_dtype = object       # TensorFlow's: `.numpy()` gives bytes objects

# Note [string tensors]: a string tensor holds bytes, as TensorFlow's do, kept in
# a NumPy StringDType array whose characters are those bytes decoded as Latin-1
# (one character per byte, U+0000..U+00FF), so shape ops, comparisons and
# concatenation work on it unchanged and no numeric kernel accepts it.  A
# dtype of its own keeps it apart from variant (object) and from the trainable
# dtypes, so tapes never record it.  `Tensor.numpy()` and `np.asarray` give
# TensorFlow's object arrays of bytes; `framework/tensor.py` converts both ways
# (`to_string_array`, `string_array_to_bytes`).

_ALL = (float16, bfloat16, float32, float64, complex64, complex128, int8, int16,
        int32, int64, uint8, uint16, uint32, uint64, bool, variant, string)
_FLOATING = frozenset((float16, bfloat16, float32, float64))
_COMPLEX = frozenset((complex64, complex128))
_INTEGER = frozenset((int8, int16, int32, int64, uint8, uint16, uint32, uint64))
_NUMERIC = _FLOATING | _COMPLEX | _INTEGER

# TensorFlow's DataType enum values (types.proto), accepted by `as_dtype`.
_ENUM_OF = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "complex64": 8,
            "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "complex128": 18, "float16": 19,
            "uint32": 22, "uint64": 23, "variant": 21, "string": 7}

# NumPy dtype -> DType, the one lookup the hot path makes.
_BY_NP = {d._np: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, double=float64, float=float32)
_BY_ENUM = {_ENUM_OF[d.name]: d for d in _ALL}

# NumPy dtypes whose tensors the tape records (tape.h's IsDtypeTrainable).
TRAINABLE_NP = frozenset(d._np for d in _FLOATING | _COMPLEX | {variant})
FLOAT_NP = frozenset(d._np for d in _FLOATING)
INEXACT_NP = frozenset(d._np for d in _FLOATING | _COMPLEX)


def from_numpy(np_dtype):
    """The DType of a NumPy dtype; raises TypeError for unsupported ones."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        pass
    except TypeError:
        raise TypeError(f"Cannot convert {np_dtype!r} to a tapeflow DType.") from None
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"Cannot convert {np_dtype!r} to a tapeflow DType.") from None


@tf_export("dtypes.as_dtype", "as_dtype")
def as_dtype(type_value):
    """Converts a DType, NumPy dtype/type or name to a DType.

    Raises:
      TypeError: if the value names no supported dtype.
    """
    if type(type_value) is DType:
        return type_value
    if isinstance(type_value, str):
        try:
            return _BY_NAME[type_value]
        except KeyError:
            raise TypeError(f"Cannot convert value {type_value!r} to a tapeflow DType.") from None
    if type_value is builtins.float:
        return float32
    if type_value is builtins.bool:
        return bool
    if type(type_value) is int and type_value in _BY_ENUM:   # a DataType enum value
        return _BY_ENUM[type_value]
    if type_value is None or any(type_value is t for t in _REFUSED_TYPES):
        # NumPy would read these as float64/int64/complex128/text; TensorFlow refuses them.
        raise TypeError(f"Cannot convert the argument `type_value`: {type_value!r} to a tapeflow DType.")
    np_dtype = getattr(type_value, "dtype", None)
    if isinstance(np_dtype, np.dtype) and not isinstance(type_value, type):
        type_value = np_dtype
    if _is_text(type_value):        # object and text dtypes mean tf.string, as in TensorFlow
        return string
    try:
        return from_numpy(type_value)
    except TypeError:
        raise TypeError(f"Cannot convert value {type_value!r} to a tapeflow DType.") from None


_REFUSED_TYPES = (builtins.int, builtins.complex, builtins.str, builtins.bytes)


def _is_text(type_value):
    try:
        return np.dtype(type_value).kind in "SUOT"
    except (TypeError, ValueError):
        return False


for _dtype in _ALL:
    tf_export(_dtype.name, f"dtypes.{_dtype.name}")(_dtype)
tf_export("half", "dtypes.half")(half)
tf_export("double", "dtypes.double")(double)
del _dtype

# Dtype groups used by op declarations (`@op(..., dtypes=...)`).
FLOATING_TYPES = (float16, bfloat16, float32, float64)
COMPLEX_TYPES = (complex64, complex128)
INEXACT_TYPES = FLOATING_TYPES + COMPLEX_TYPES
INTEGER_TYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
REAL_TYPES = FLOATING_TYPES + INTEGER_TYPES
NUMERIC_TYPES = INEXACT_TYPES + INTEGER_TYPES
