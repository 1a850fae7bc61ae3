"""Tensor semantics against TensorFlow: conversion, protocols, formatting and operators."""

import numpy as np
import pytest

import tapeflow
from differential import compare, run_both, same

# -- constant / convert_to_tensor: dtype inference --------------------------------------

CONVERSIONS = {
    "py_float": 1.5,
    "py_int": 3,
    "py_big_int": 2**40,
    "py_neg_big_int": -(2**35),
    "py_bool": True,
    "py_complex": 1 + 2j,
    "nested_list": [[1, 2], [3, 4]],
    "mixed_int_float": [1, 2.5],
    "mixed_big_small": [1, 2**33],
    "bool_list": [True, False],
    "tuple": (1.0, 2.0),
    "empty_list": [],
    "empty_nested": [[], []],
    "np_float64": np.array([1.5, 2.5]),
    "np_float16": np.array([1.5], np.float16),
    "np_int64": np.array([1, 2], np.int64),
    "np_uint8": np.array([1, 255], np.uint8),
    "np_int8_scalar": np.int8(-3),
    "np_float64_scalar": np.float64(0.1),
    "np_bool": np.array([True]),
    "np_complex64": np.array([1 + 1j], np.complex64),
    "list_of_np_float64": [np.float64(1.0), np.float64(2.0)],
    "list_of_np_float32": [np.float32(1.0), 2.0],
    "ragged": [[1, 2], [3]],
    "none": None,
    "list_with_none": [1.0, None],
    "int_beyond_int64": 2**64,
    "int_at_2_63": 2**63,                   # no int64: ValueError (NumPy would make it uint64)
    "int_min_int64": -2**63,
    "bool_then_int": [True, 1],             # TF reads the first element's type: mixed types
    "int_then_bool": [1, True],
    "bool_then_float": [True, 1.5],
    "np_uint64_max": np.uint64(2**64 - 1),
    # strings (Note [string tensors])
    "str": "a",
    "bytes": b"x",
    "non_ascii_str": "\u00e9",
    "bytes_with_nul": [b"a\x00", b""],
    "str_list": ["ab", "c"],
    "str_matrix": [["a", "bb"], ["c", "d"]],
    "str_and_bytes": ["a", b"b"],
    "str_tuple": ("a", "b"),
    "np_bytes_scalar": np.bytes_(b"xy"),
    "np_str_scalar": np.str_("\u00e9"),
    "np_bytes_array": np.array([b"ab", b"c"]),
    "np_unicode_array": np.array(["ab", "\u00e9"]),
    "np_object_strings": np.array([b"ab", "c"], dtype=object),
    "np_object_ints": np.array([1, 2], dtype=object),
    "np_object_with_none": np.array(["a", None], dtype=object),
    "int_then_str": [1, "a"],
    "str_then_int": ["a", 1],
    "str_then_none": ["a", None],
    "ragged_strings": [["a"], ["b", "c"]],
}

# Where tapeflow deliberately differs from TensorFlow: it refuses values TensorFlow
# silently changes (dropping imaginary parts, overflowing to inf).
DEVIATIONS = {
    "float_overflowing_float32": (lambda tf: tf.constant(1e300), "inf"),
    "numpy_complex_to_float": (lambda tf: tf.constant(np.array([1 + 1j]), dtype=tf.float64), TypeError),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy warns where TensorFlow is silent
@pytest.mark.parametrize("name", list(DEVIATIONS))
def test_documented_deviations(name):
    prog, expected = DEVIATIONS[name]
    if expected == "inf":
        # TensorFlow raises ValueError; tapeflow gives inf like NumPy.
        assert np.isinf(prog(tapeflow).numpy())
    else:
        with pytest.raises(expected):
            prog(tapeflow)


@pytest.mark.parametrize("name", list(CONVERSIONS))
@pytest.mark.parametrize("fn", ["constant", "convert_to_tensor"])
def test_dtype_inference(name, fn):
    value = CONVERSIONS[name]
    same(lambda tf: getattr(tf, fn)(value))


def test_list_of_tensors_is_stacked():
    def prog(tf):
        a = tf.constant([1.0, 2.0])
        return (tf.convert_to_tensor([a, a * 2.0]), tf.convert_to_tensor([[a, a]]), tf.convert_to_tensor([a, [3.0, 4.0]]),
                tf.convert_to_tensor([tf.constant(1.0), 2.0]), tf.convert_to_tensor([tf.constant(1), 2]))
    same(prog)


def test_list_of_tensors_with_mismatched_dtypes_raises():
    same(lambda tf: tf.convert_to_tensor([tf.constant(1.0), tf.constant(1)]))


def test_list_of_tensors_is_differentiable():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.convert_to_tensor([x, x * x, 3.0])
        return y, t.gradient(y, x)
    same(prog)


DTYPE_CONVERSIONS = {
    "int_to_float32": (1, "float32"),
    "float_to_float64_exact": (0.1, "float64"),
    "float_list_to_float64": ([0.1, 0.7], "float64"),
    "float_to_float16": (0.1, "float16"),
    "float_to_bfloat16": (0.1, "bfloat16"),
    "float_to_complex128": (0.1, "complex128"),
    "float_to_int32": (1.5, "int32"),
    "integral_float_to_int32": (2.0, "int32"),
    "int_to_bool": (1, "bool"),
    "bool_to_int32": (True, "int32"),
    "bool_to_float32": (True, "float32"),
    "big_int_to_int64": (2**40, "int64"),
    "big_int_to_float32": (2**40, "float32"),
    "complex_to_float32": (1 + 2j, "float32"),
    "int_to_complex64": (3, "complex64"),
    "np_float64_to_float32": (np.array([0.1, 0.2]), "float32"),
    "np_float_to_int32": (np.array([1.5, 2.7]), "int32"),
    "np_int_to_float32": (np.array([1, 2]), "float32"),
    "np_int64_to_int8_overflow": (np.array([300]), "int8"),
    "string_dtype_name": (1.5, "float64"),
    # strings and numbers do not convert into each other
    "str_to_string": ("a", "string"),
    "str_list_to_string": (["a", b"b"], "string"),
    "empty_list_to_string": ([], "string"),
    "int_to_string": (1, "string"),
    "str_to_float32": ("a", "float32"),
    "numeric_str_to_float32": ("1", "float32"),
    "np_numeric_strings_to_float32": (np.array(["1", "2.5"]), "float32"),   # NumPy text is parsed
    "np_float_to_string": (np.array([1.0]), "string"),
    "np_bytes_to_string": (np.array([b"a"]), "string"),
}


# Note [Python integers] (framework/tensor.py): a Python int converted to an integer dtype wraps to
# its width, one beyond int64 raises ValueError, and bools convert only to the dtypes TF converts
# Python values to directly.  (Negative ints and ints >= 2**64 to uint64 crash TensorFlow itself.)
INTEGER_CONVERSIONS = [
    (v, dtype) for dtype in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                             "float16", "bfloat16", "float32", "float64", "complex128")
    for v in (300, -1, 70000, 2**31, -2**31 - 1, 2**40, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64,
              [1, 300], [[300, -1]], True, [True, False], [True, 1], [1, True])
    if not (dtype == "uint64" and not all(0 <= x < 2**64 for x in np.ravel(np.array(v, dtype=object))))
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy warns where TensorFlow is silent
@pytest.mark.parametrize("value,dtype", INTEGER_CONVERSIONS)
@pytest.mark.parametrize("fn", ["constant", "convert_to_tensor"])
def test_python_integers_wrap_like_tensorflow(value, dtype, fn):
    same(lambda tf: getattr(tf, fn)(value, dtype=getattr(tf, dtype)))


def test_python_integers_in_operators_wrap():
    same(lambda tf: (tf.constant([1], tf.uint8) + 300, tf.constant([1], tf.uint8) + [300],
                     tf.constant([5], tf.int8) * 200, tf.constant([1], tf.uint8) - (-1)))
    same(lambda tf: tf.constant([1], tf.int8) + True)       # a bool does not become int8
    same(lambda tf: tf.constant([1], tf.int32) + 2**63)


@pytest.mark.parametrize("name", list(DTYPE_CONVERSIONS))
@pytest.mark.parametrize("fn", ["constant", "convert_to_tensor"])
def test_dtype_argument(name, fn):
    value, dtype = DTYPE_CONVERSIONS[name]

    def prog(tf):
        return getattr(tf, fn)(value, dtype=getattr(tf, dtype) if dtype != "float64" else "float64")
    same(prog)


@pytest.mark.parametrize("fn", ["constant", "convert_to_tensor"])
def test_tensor_with_other_dtype(fn):
    same(lambda tf: getattr(tf, fn)(tf.constant([1.0, 2.0]), dtype=tf.float64))
    same(lambda tf: getattr(tf, fn)(tf.constant([1, 2]), dtype=tf.int32))


def test_convert_to_tensor_dtype_hint():
    def prog(tf):
        return (tf.convert_to_tensor(1, dtype_hint=tf.float32), tf.convert_to_tensor(1.5, dtype_hint=tf.int32),
                tf.convert_to_tensor([1, 2], dtype_hint=tf.float64), tf.convert_to_tensor(tf.constant(1), dtype_hint=tf.float32),
                tf.convert_to_tensor(np.array([1, 2]), dtype_hint=tf.float32))
    same(prog)


def test_convert_to_tensor_returns_same_object():
    t = tapeflow.constant([1.0])
    assert tapeflow.convert_to_tensor(t) is t
    assert tapeflow.convert_to_tensor(t, dtype=tapeflow.float32) is t


def test_constant_copies_numpy_input():
    def prog(tf):
        a = np.array([1.0, 2.0], np.float32)
        t = tf.constant(a)
        a[0] = 100.0
        return t
    same(prog)


SHAPES = {
    "scalar_fill": (1.5, [2, 3]),
    "reshape": ([1, 2, 3, 4], [2, 2]),
    "mismatch": ([1, 2, 3], [2, 2]),
    "same_shape": ([1.0, 2.0], [2]),
    "size_one_list_fill": ([7], [3]),
    "tuple_shape": (0.5, (1, 2)),
    "empty": ([], [0, 3]),
    "scalar_shape": ([5], []),
    "numpy_fill": (np.float64(2.0), [2]),
    "numpy_reshape": (np.arange(6), [3, 2]),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_constant_shape(name):
    value, shape = SHAPES[name]
    same(lambda tf: tf.constant(value, shape=shape))


def test_constant_shape_and_dtype():
    same(lambda tf: tf.constant(1, dtype=tf.float64, shape=[2, 2]))
    same(lambda tf: tf.constant([1, 2], dtype=tf.float32, shape=[2, 1]))


# -- formatting -----------------------------------------------------------------------

FORMAT_VALUES = {
    "scalar_float": (1.5, None),
    "float_sum": (1.1, None),
    "scalar_int": (3, None),
    "vector": ([1.0, 2.0], None),
    "matrix_int": ([[1, 2], [3, 4]], None),
    "bool": ([True, False], None),
    "float64": ([0.1, 0.25], "float64"),
    "empty": ([], None),
    "complex": ([1 + 2j], None),
    "int64": ([2**40], None),
    "float16": ([1.5], "float16"),
    "string": ("a", None),
    "string_vector": (["ab", "c"], None),
    "string_matrix": ([["a", "bb"], ["c", "d"]], None),
    "string_bytes": ([b"x\x00", b"\xff"], None),
    "string_non_ascii": ("\u00e9", None),
    "string_empty": ([], "string"),
}


@pytest.mark.parametrize("name", list(FORMAT_VALUES))
def test_repr_and_str(name):
    value, dtype = FORMAT_VALUES[name]
    tf = pytest.importorskip("tensorflow")
    ours = tapeflow.constant(value, dtype=dtype)
    theirs = tf.constant(value, dtype=dtype)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)


def test_str_of_computed_scalar():
    tf = pytest.importorskip("tensorflow")
    assert str(tapeflow.constant(1.0) + 0.1) == str(tf.constant(1.0) + 0.1)
    assert repr(tapeflow.constant(2.0) * 3.0) == repr(tf.constant(2.0) * 3.0)


# -- Python protocols -------------------------------------------------------------------

def test_numpy_returns_a_copy():
    def prog(tf):
        t = tf.constant([1.0, 2.0])
        a = t.numpy()
        a[0] = 50.0
        return t, type(t.numpy()).__name__, type(tf.constant(1.5).numpy()).__name__, type(tf.constant(True).numpy()).__name__
    same(prog)


def test_numpy_of_scalar_is_numpy_scalar():
    def prog(tf):
        s = tf.constant(2).numpy()
        return s.dtype.name, np.ndim(s), isinstance(s, np.generic)
    same(prog)


def test_array_protocol():
    def prog(tf):
        t = tf.constant([[1, 2], [3, 4]])
        a = np.asarray(t)
        b = np.array(t, dtype=np.float64)
        return a, a.dtype.name, b, np.asarray(tf.constant(1.5)).shape, np.sum(t), float(np.mean(tf.constant([1.0, 2.0])))
    same(prog)


@pytest.mark.parametrize("expr", [
    "len_vector", "len_matrix", "len_scalar", "bool_true", "bool_false", "bool_vector", "bool_size1",
    "float", "float_int", "int", "int_float", "complex", "index", "index_vector",
    "list_index", "range", "iter", "iter_scalar", "hash", "dict_key", "set",
])
def test_python_protocols(expr):
    def prog(tf):
        v = tf.constant([1.0, 2.0, 3.0])
        m = tf.constant([[1, 2], [3, 4], [5, 6]])
        cases = {
            "len_vector": lambda: len(v), "len_matrix": lambda: len(m), "len_scalar": lambda: len(tf.constant(1.0)),
            "bool_true": lambda: bool(tf.constant(2.0)), "bool_false": lambda: bool(tf.constant(0)),
            "bool_vector": lambda: bool(v), "bool_size1": lambda: bool(tf.constant([1.0])),
            "float": lambda: float(tf.constant(2.5)), "float_int": lambda: float(tf.constant(3)),
            "int": lambda: int(tf.constant(7)), "int_float": lambda: int(tf.constant(7.9)),
            "complex": lambda: complex(tf.constant(1 + 2j)),
            "index": lambda: tf.constant(2).__index__(),
            "index_vector": lambda: tf.constant([2]).__index__(),
            "list_index": lambda: [10, 20, 30][tf.constant(1)], "range": lambda: list(range(tf.constant(3))),
            "iter": lambda: [x for x in m], "iter_scalar": lambda: [x for x in tf.constant(1.0)],
            "hash": lambda: hash(v), "dict_key": lambda: {v: 1}, "set": lambda: {v},
        }
        return cases[expr]()
    same(prog)


def test_float_tensor_is_not_an_index():
    # TensorFlow fails with an AttributeError from NumPy; tapeflow says what is wrong.
    with pytest.raises(TypeError, match="integer"):
        [1, 2][tapeflow.constant(1.0)]


def test_ref_is_hashable():
    def prog(tf):
        a, b = tf.constant(1.0), tf.constant(1.0)
        d = {a.ref(): "a", b.ref(): "b"}
        return (len(d), a.ref() == a.ref(), a.ref() == b.ref(), a.ref().deref() is a,
                hash(a.ref()) == hash(a.ref()), d[a.ref()])
    same(prog)


def test_metadata():
    def prog(tf):
        t = tf.constant([[1.0, 2.0, 3.0]])
        return (t.shape, t.get_shape(), t.dtype, t.ndim, t.shape.rank, t.shape.as_list(), tf.is_tensor(t),
                tf.is_tensor(1.0), tf.is_tensor(np.ones(1)), tf.is_tensor(tf.Variable(1.0)), t.device[-5:])
    same(prog)


def test_name_unavailable_in_eager():
    same(lambda tf: tf.constant(1.0).name)


def test_set_shape():
    def prog(tf):
        t = tf.constant([[1.0, 2.0]])
        t.set_shape([1, None])
        t.set_shape([None, 2])
        return t.shape
    same(prog)
    same(lambda tf: tf.constant([[1.0, 2.0]]).set_shape([2, 1]))


def test_tensor_is_immutable():
    same(lambda tf: tf.constant([1.0]).__setitem__(0, 2.0))


# -- operators -----------------------------------------------------------------------------

_F = np.array([1.5, -2.0, 3.0], np.float32)
_I = np.array([7, -3, 4], np.int32)

OPERATORS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


def _operand(tf, kind):
    return {
        "f32": lambda: tf.constant(_F), "i32": lambda: tf.constant(_I), "f64": lambda: tf.constant(_F.astype(np.float64)),
        "py_float": lambda: 2.0, "py_int": lambda: 2, "np_f32": lambda: np.array([2.0, 0.5, -1.0], np.float32),
        "np_f64": lambda: np.array([2.0, 0.5, -1.0]), "np_i32": lambda: np.array([2, 5, -3], np.int32),
        "np_scalar_f32": lambda: np.float32(2.0),
    }[kind]()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy warns where TensorFlow is silent
@pytest.mark.parametrize("op", list(OPERATORS))
@pytest.mark.parametrize("left,right", [
    ("f32", "f32"), ("i32", "i32"), ("f32", "py_float"), ("py_float", "f32"), ("f32", "py_int"), ("py_int", "f32"),
    ("i32", "py_int"), ("py_int", "i32"), ("i32", "py_float"), ("f32", "i32"), ("f32", "f64"),
    ("f32", "np_f32"), ("np_f32", "f32"), ("i32", "np_i32"), ("f32", "np_f64"), ("np_scalar_f32", "f32"),
])
def test_binary_operators(op, left, right):
    def prog(tf):
        out = OPERATORS[op](_operand(tf, left), _operand(tf, right))
        return out
    same(prog)


def test_integer_floordiv_mod_follow_python_signs():
    def prog(tf):
        a, b = tf.constant([7, -7, 7, -7]), tf.constant([2, 2, -2, -2])
        return a // b, a % b, a / b, tf.constant([7.5, -7.5]) % 2.0, tf.constant([7.5, -7.5]) // 2.0
    same(prog)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # NumPy warns where TensorFlow is silent
def test_integer_division_by_zero():
    same(lambda tf: tf.constant([1, 2]) // tf.constant([1, 0]))
    same(lambda tf: tf.constant([1.0, 2.0]) / 0.0)


def test_integer_negative_power():
    same(lambda tf: tf.constant(2) ** tf.constant(-1))


@pytest.mark.parametrize("op", ["and", "or", "xor", "invert"])
@pytest.mark.parametrize("kind", ["bool", "int", "float"])
def test_logical_and_bitwise_operators(op, kind):
    def prog(tf):
        values = {"bool": ([True, True, False, False], [True, False, True, False]),
                  "int": ([12, 10, -3, 0], [10, 6, 5, 1]), "float": ([1.0, 2.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0])}
        a, b = (tf.constant(v) for v in values[kind])
        return {"and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "invert": lambda: ~a}[op]()
    same(prog)


def test_bool_operators_with_python_bools():
    def prog(tf):
        a = tf.constant([True, False])
        return a & True, True | a, a ^ False, False & a
    same(prog)


def test_matmul_operator():
    def prog(tf):
        a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        b = np.array([[1.0], [0.5]], np.float32)
        return a @ a, a @ b, b.T @ a, a @ [[1.0], [2.0]]
    same(prog)


def test_matmul_operator_errors():
    same(lambda tf: tf.constant([[1.0, 2.0]]) @ tf.constant([[1.0, 2.0]]))
    same(lambda tf: tf.constant([1.0, 2.0]) @ tf.constant([1.0, 2.0]))


def test_unary_operators():
    def prog(tf):
        f, i = tf.constant(_F), tf.constant(_I)
        return -f, -i, abs(f), abs(i), abs(tf.constant([3 + 4j])), -tf.constant([1 + 1j])
    same(prog)


def test_equality_semantics():
    def prog(tf):
        a = tf.constant([1.0, 2.0])
        return (a == tf.constant([1.0, 3.0]), a != [1.0, 3.0], a == tf.constant([1.0, 2.0, 3.0]),
                a != tf.constant([1.0, 2.0, 3.0]), a == None, a != None,  # noqa: E711
                tf.constant([1, 2]) == tf.constant([[1], [2]]), a == np.array([1, 2]), a in [None, 3])
    same(prog)


@pytest.mark.parametrize("expr", ["text", "object", "int_vs_float", "dtype_mismatch"])
def test_equality_errors(expr):
    def prog(tf):
        a = tf.constant([1.0, 2.0])
        return {"text": lambda: a == "text", "object": lambda: a != object(),
                "int_vs_float": lambda: tf.constant(1) == 1.5,
                "dtype_mismatch": lambda: a == tf.constant([1, 2])}[expr]()
    same(prog)


def test_comparisons_with_incompatible_shapes_raise():
    same(lambda tf: tf.constant([1.0, 2.0]) < tf.constant([1.0, 2.0, 3.0]))


def test_comparison_operators_broadcast():
    def prog(tf):
        a = tf.constant([[1], [2]])
        return a < [1, 2, 3], 2 >= a, a > np.int32(1)
    same(prog)


def test_operators_are_differentiable():
    def prog(tf):
        x = tf.constant([1.5, 2.0])
        with tf.GradientTape() as t:
            t.watch(x)
            y = (2.0 - x) * (x / 3.0) + 1.0 / x + x ** 2 + 2.0 ** x + -x + abs(x - 1.8) + x % 1.0
        return t.gradient(y, x)
    same(prog)


def test_operator_with_unsupported_type():
    same(lambda tf: tf.constant(1.0) + object())


# A Python value that does not fit the tensor's dtype: `+` (and `/`) convert it with the
# dtype as a hint only and fail in the op; the other operators fail converting it.
INT_AND_FLOAT_OPERANDS = {
    "add": (lambda tf, t: t + 2.5, "InvalidArgumentError",
            "cannot compute AddV2 as input #1(zero-based) was expected to be a int32 tensor but is a float tensor"),
    "add_integral_float": (lambda tf, t: t + 2.0, "InvalidArgumentError", "expected to be a int32 tensor"),
    "add_list": (lambda tf, t: t + [1.5, 2.0], "InvalidArgumentError", "but is a float tensor"),
    "add_complex": (lambda tf, t: t + 1j, "InvalidArgumentError", "but is a complex128 tensor"),
    "add_to_variable": (lambda tf, t: tf.Variable([1, 2]) + 2.5, "InvalidArgumentError", "[Op:AddV2]"),
    "radd": (lambda tf, t: 2.5 + t, "TypeError", "Cannot convert 2.5 to EagerTensor of dtype int32"),
    "radd_variable": (lambda tf, t: 2.5 + tf.Variable([1, 2]), "TypeError", "Cannot convert 2.5"),
    "mul": (lambda tf, t: t * 2.5, "TypeError", "Cannot convert 2.5 to EagerTensor of dtype int32"),
    "rmul": (lambda tf, t: 2.5 * t, "TypeError", "Cannot convert 2.5 to EagerTensor of dtype int32"),
    "sub": (lambda tf, t: t - 2.5, "TypeError", "Cannot convert 2.5 to EagerTensor of dtype int32"),
    "floordiv": (lambda tf, t: t // 2.5, "TypeError", "Cannot convert 2.5"),
    "pow": (lambda tf, t: t ** 2.5, "TypeError", "Cannot convert 2.5"),
    "mul_list": (lambda tf, t: t * [1.5, 2.0], "TypeError", "Cannot convert [1.5, 2.0] to EagerTensor of dtype int32"),
    "truediv": (lambda tf, t: t / 2.5, "TypeError", "`x` and `y` must have the same dtype, got tf.int32 != tf.float32"),
    "less": (lambda tf, t: t < 2.5, "TypeError", "Cannot convert 2.5"),
    "in_function": (lambda tf, t: tf.function(lambda: t + 2.5)(), "TypeError", ""),
    "mul_in_function": (lambda tf, t: tf.function(lambda: t * 2.5)(), "TypeError", ""),
    # tf.add converts y with x's dtype as a hint, like `+`; so do literals on both sides
    "tf_add": (lambda tf, t: tf.add(t, 2.5), "InvalidArgumentError", "expected to be a int32 tensor"),
    "tf_add_literals": (lambda tf, t: tf.add(1, 2.5), "InvalidArgumentError", "but is a float tensor"),
    "tf_math_add_in_function": (lambda tf, t: tf.function(lambda: tf.math.add(t, 2.5))(), "TypeError", "AddV2"),
}


# Graphs check input dtypes when an op is built: TypeError, where eager kernels raise InvalidArgumentError.
GRAPH_DTYPE_MISMATCHES = {
    "add": lambda tf, x, y: x + y,
    "matmul": lambda tf, x, y: tf.matmul(tf.reshape(x, [1, 2]), tf.reshape(y, [2, 1])),
    "concat": lambda tf, x, y: tf.concat([x, y], 0),
    "maximum": lambda tf, x, y: tf.maximum(x, y),
    "conv2d": lambda tf, x, y: tf.nn.conv2d(tf.reshape(x, [1, 1, 2, 1]), tf.reshape(y, [1, 1, 1, 2]), 1, "VALID"),
    "tensor_scatter_update": lambda tf, x, y: tf.tensor_scatter_nd_update(x, [[0]], y[:1]),
    "reduce_any": lambda tf, x, y: tf.reduce_any(x),
    "not_allowed": lambda tf, x, y: tf.math.lgamma(tf.cast(x, tf.int32)),
    "pad_constant": lambda tf, x, y: tf.pad(x, [[1, 1]], constant_values=y[0]),
}


@pytest.mark.parametrize("name", list(GRAPH_DTYPE_MISMATCHES))
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
def test_dtype_mismatch_class_depends_on_mode(name, graph):
    fn = GRAPH_DTYPE_MISMATCHES[name]

    def prog(tf):
        x, y = tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0], tf.float64)
        return tf.function(lambda x, y: fn(tf, x, y))(x, y) if graph else fn(tf, x, y)
    ours, theirs = run_both(prog)
    compare(ours, theirs)
    assert type(ours.exc).__name__ == ("TypeError" if graph else "InvalidArgumentError"), repr(ours)


@pytest.mark.parametrize("name", list(INT_AND_FLOAT_OPERANDS))
def test_int_tensor_with_python_float(name):
    fn, error, message = INT_AND_FLOAT_OPERANDS[name]
    ours, theirs = run_both(lambda tf: fn(tf, tf.constant([1, 2])))
    compare(ours, theirs)
    assert type(ours.exc).__name__ == error and message in str(ours.exc), repr(ours)


def test_operands_follow_the_tensor_dtype():
    def prog(tf):
        t = tf.constant([1, 2])
        return (t + 2, t + True, t & True, t + np.int64(3), tf.constant([1.0, 2.0]) + 2, 3 + t,
                tf.constant([1], tf.int8) + 100)
    same(prog)


def test_without_tensors_the_first_value_sets_the_dtype():
    def prog(tf):
        return (tf.multiply(np.array([1.5]), 2.0), tf.multiply(2.0, np.array([1.5])),
                tf.maximum(np.array([1], np.int16), 3), tf.multiply([1, 2], np.int16(3)), tf.multiply(2.5, 3),
                tf.multiply(np.array([1.5]), np.array([2], np.float32)), tf.pow(np.array([2], np.int64), 2))
    same(prog)
    same(lambda tf: tf.multiply(2, 3.5))


def test_reflected_operator_of_the_other_operand_is_used():
    class Operand:
        def __radd__(self, other):
            return "radd"

        def __rmul__(self, other):
            return NotImplemented

    t = tapeflow.constant([1, 2])
    assert t + Operand() == "radd"
    with pytest.raises(ValueError, match="unsupported type"):   # the conversion error stands
        t * Operand()


def test_in_place_operators_rebind():
    def prog(tf):
        a = tf.constant([1.0, 2.0])
        b = a
        a += 1.0
        a *= 2.0
        return a, b
    same(prog)


def test_isinstance_tensor():
    assert same(lambda tf: isinstance(tf.constant([1]) + 1, tf.Tensor)) is True
    assert same(lambda tf: isinstance(tf.Variable(1.0), tf.Tensor)) is False
