"""DType objects against TensorFlow: names, conversion, predicates, equality, low-precision arithmetic."""

import ml_dtypes
import numpy as np
import pytest

import tapeflow
from differential import same

NAMES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
         "int64", "uint8", "uint16", "uint32", "uint64", "bool"]


@pytest.mark.parametrize("name", NAMES)
def test_properties(name):
    def prog(tf):
        d = getattr(tf, name)
        return (d.name, repr(d), d.is_floating, d.is_complex, d.is_integer, d.is_unsigned, d.is_bool,
                d.base_dtype.name, d.real_dtype.name, d.size, d.as_numpy_dtype.__name__, d.is_numpy_compatible,
                d == tf.as_dtype(name), tf.as_dtype(d) is d)
    same(prog)


@pytest.mark.parametrize("name", NAMES)
def test_limits(name):
    def prog(tf):
        d = getattr(tf, name)
        return float(d.min), float(d.max), d.as_datatype_enum
    same(prog)


@pytest.mark.parametrize("value", [
    "float32", "float", "half", "double", "float64", "int32", "bool", "complex64", "bfloat16",
    np.float32, np.float64, np.int64, np.uint8, np.bool_, np.complex128, np.dtype("float16"), np.dtype("int8"),
    ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16), float, bool, 1, 14,
], ids=repr)
def test_as_dtype(value):
    same(lambda tf: tf.as_dtype(value).name)


@pytest.mark.parametrize("value", ["foo", "string_", 3, 9, 99, None, int, complex, [1]], ids=repr)
def test_as_dtype_errors(value):
    same(lambda tf: tf.as_dtype(value))


def test_equality():
    def prog(tf):
        f = tf.float32
        return (f == tf.float32, f == "float32", f == np.float32, f == np.dtype("float32"), f == tf.float64,
                f != tf.float64, f != "float32", f == "not a dtype", f == None, f == 3,  # noqa: E711
                tf.float16 == tf.half, tf.float64 == tf.double, tf.bfloat16 == ml_dtypes.bfloat16,
                tf.int32 == np.int32, tf.bool == np.bool_, tf.constant(1.0).dtype == tf.float32)
    same(prog)


def test_hash_and_dict_keys():
    def prog(tf):
        d = {tf.float32: "f", tf.int32: "i"}
        return d[tf.float32], d[tf.as_dtype("int32")], len({tf.float32, tf.as_dtype(np.float32)})
    same(prog)


def test_is_compatible_with():
    def prog(tf):
        return tf.float32.is_compatible_with(tf.float32), tf.float32.is_compatible_with(tf.float64)
    same(prog)


def test_dtypes_module():
    def prog(tf):
        return tf.dtypes.float32.name, tf.dtypes.as_dtype("int64").name, isinstance(tf.float32, tf.dtypes.DType)
    same(prog)


def test_pickle_keeps_identity():
    import pickle
    assert pickle.loads(pickle.dumps(tapeflow.bfloat16)) is tapeflow.bfloat16


# -- low-precision arithmetic keeps its dtype ------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_arithmetic(dtype):
    def prog(tf):
        d = getattr(tf, dtype)
        x = tf.constant([1.5, -2.25, 3.0], d)
        y = tf.constant([0.5, 4.0, -1.0], d)
        return (x + y, x - 1.0, 2.0 * x, x / y, x * x, -x, abs(x), tf.exp(x * 0.5), tf.sin(x), tf.tanh(x),
                tf.reduce_sum(x), tf.reduce_mean(x), tf.sqrt(abs(x)), x > y, tf.cast(x, tf.float32),
                tf.cast(tf.constant([1.3, 2.7]), d), tf.matmul(tf.reshape(x, [1, 3]), tf.reshape(y, [3, 1])))
    same(prog)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_gradients(dtype):
    def prog(tf):
        d = getattr(tf, dtype)
        x = tf.constant([1.5, -2.25, 3.0], d)
        v = tf.Variable([0.5, 1.0, 2.0], dtype=d)
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(x * x * v + tf.sin(v))
        return t.gradient(y, [x, v])
    same(prog)


def test_mixed_precision_mismatch_raises():
    same(lambda tf: tf.constant(1.0, tf.float16) + tf.constant(1.0))
    same(lambda tf: tf.constant(1.0, tf.bfloat16) * tf.constant(1.0, tf.float16))
