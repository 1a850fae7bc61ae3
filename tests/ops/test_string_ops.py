"""String tensors (Note [string tensors] in framework/dtypes.py) and `tf.strings` against TensorFlow:
values, dtypes and error classes, eagerly and inside tf.function, and that tapes ignore them."""

import numpy as np
import pytest

import tapeflow
from differential import same

WORDS = ["ab", "c", "", "\u00e9t\u00e9"]


# -- the dtype -----------------------------------------------------------------------------

def test_string_dtype():
    tf = tapeflow
    assert tf.string is tf.dtypes.string and tf.string.name == "string" and repr(tf.string) == "tf.string"
    assert not (tf.string.is_numeric or tf.string.is_floating or tf.string.is_integer or tf.string.is_bool)
    assert tf.string.as_numpy_dtype is object and tf.string.size == 0 and tf.string.as_datatype_enum == 7
    for value in ("string", object, np.object_, np.bytes_, np.str_, np.dtype("S3"), np.dtype("U2"), 7):
        assert tf.as_dtype(value) is tf.string
    for value in (str, bytes):
        with pytest.raises(TypeError):
            tf.as_dtype(value)
    with pytest.raises(TypeError):
        tf.string.min


def test_numpy_gives_bytes():
    s = tapeflow.constant(["a\u00e9", "b"])
    assert s.numpy().dtype == object and s.numpy().tolist() == [b"a\xc3\xa9", b"b"]
    assert tapeflow.constant(b"x\x00").numpy() == b"x\x00"
    assert np.asarray(s).tolist() == [b"a\xc3\xa9", b"b"]


def test_tapes_ignore_strings():
    def prog(tf):
        s = tf.constant(["a", "b"])
        x = tf.constant(2.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch([s, x])
            y = tf.strings.join([s, tf.strings.as_string(x)])
            z = tf.reduce_sum(tf.strings.to_number(tf.strings.as_string(x * x)))
            w = x * tf.cast(tf.strings.length(s), tf.float32)
        return y, t.gradient(y, s), t.gradient(z, x), t.gradient(w, [x, s])
    same(prog)


# -- conversion and shape ops -------------------------------------------------------------

SHAPE_OPS = {
    "identity": lambda tf, s: tf.identity(s),
    "shape_size_rank": lambda tf, s: (tf.shape(s), tf.size(s), tf.rank(s)),
    "reshape": lambda tf, s: tf.reshape(s, [2, 2]),
    "expand_dims": lambda tf, s: tf.expand_dims(s, 0),
    "stack": lambda tf, s: tf.stack([s, s], axis=1),
    "concat": lambda tf, s: tf.concat([s, tf.constant(["xyz"])], 0),
    "gather": lambda tf, s: tf.gather(s, [3, 0, 0]),
    "getitem": lambda tf, s: (s[0], s[1:3], s[::-1], s[tf.newaxis]),
    "unstack": lambda tf, s: tf.unstack(s),
    "tile_reverse": lambda tf, s: (tf.tile(s, [2]), tf.reverse(s, [0])),
    "where": lambda tf, s: tf.where([True, False, True, False], s, tf.constant("-")),
    "fill_zeros": lambda tf, s: (tf.fill([2], "x"), tf.zeros([2], tf.string)),
    "cast_to_itself": lambda tf, s: tf.cast(s, tf.string),
    "shape_argument": lambda tf, s: (tf.constant("a", shape=[2]), tf.constant(["a", "b"], shape=[2, 1])),
    "list_of_string_tensors": lambda tf, s: tf.convert_to_tensor([s[0], "b"]),
    "tf_function": lambda tf, s: tf.function(lambda x: (tf.reshape(x, [2, 2]), tf.constant("q"), x[1],
                                                        tf.strings.length(x)))(s),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_ops(name):
    same(lambda tf: SHAPE_OPS[name](tf, tf.constant(WORDS)))


# -- numeric ops refuse strings with TensorFlow's classes --------------------------------------

REFUSED = {
    "sin": lambda tf, s: tf.sin(s),
    "add_int": lambda tf, s: s + 1,
    "mul": lambda tf, s: s * s,
    "mul_int": lambda tf, s: s * 2,
    "neg": lambda tf, s: -s,
    "abs": lambda tf, s: tf.abs(s),
    "reduce_sum": lambda tf, s: tf.reduce_sum(s),
    "reduce_max": lambda tf, s: tf.reduce_max(s),
    "argmax": lambda tf, s: tf.argmax(s),
    "less": lambda tf, s: s < s,
    "maximum": lambda tf, s: tf.maximum(s, s),
    "matmul": lambda tf, s: tf.matmul(tf.reshape(s, [2, 2]), tf.reshape(s, [2, 2])),
    "add_n": lambda tf, s: tf.add_n([s, s]),
    "cumsum": lambda tf, s: tf.cumsum(s),
    "logical_not": lambda tf, s: tf.logical_not(s),
    "one_hot": lambda tf, s: tf.one_hot(s, 3),
    "eq_int": lambda tf, s: s == 1,
    "eq_float_tensor": lambda tf, s: tf.equal(tf.constant([1.0]), "a"),
    "eq_string_float_tensor": lambda tf, s: tf.equal(s, tf.constant(1.0)),
    "float_is_not_string": lambda tf, s: tf.constant("a", tf.float32),
    "string_is_not_int": lambda tf, s: tf.constant(1, tf.string),
    "requested_other_dtype": lambda tf, s: tf.convert_to_tensor(s, tf.int32),
    "int_of_string": lambda tf, s: tf.strings.length(tf.constant([1])),
    "join_int": lambda tf, s: tf.strings.join([s, tf.constant([1, 2, 3, 4])]),
    "join_python_int": lambda tf, s: tf.strings.join(["a", 1]),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_numeric_ops_refuse_strings(name):
    same(lambda tf: REFUSED[name](tf, tf.constant(WORDS)))


def test_refusals_name_the_dtype():
    with pytest.raises(tapeflow.errors.InvalidArgumentError, match="string"):
        tapeflow.sin(tapeflow.constant("a"))
    with pytest.raises(TypeError, match="Sin has DataType string"):
        tapeflow.function(lambda s: tapeflow.sin(s))(tapeflow.constant("a"))


# -- equality -------------------------------------------------------------------------------------

EQUALITY = {
    "eq_python": lambda tf, s: (s == "ab", s != "c"),
    "equal": lambda tf, s: (tf.equal(s, tf.constant("c")), tf.not_equal(s, [b"ab", b"c", b"", b"x"])),
    "broadcast": lambda tf, s: tf.reshape(s, [4, 1]) == s,
    "tf_function": lambda tf, s: tf.function(lambda x: x == "ab")(s),
    "nul_bytes": lambda tf, s: tf.constant([b"a\0b", b"a\0c"]) == tf.constant(b"a\0c"),
}


@pytest.mark.parametrize("name", list(EQUALITY))
def test_equality(name):
    same(lambda tf: EQUALITY[name](tf, tf.constant(WORDS)))


# -- tf.strings ------------------------------------------------------------------------------

STRINGS = {
    "join": lambda tf, s: (tf.strings.join([s, s]), tf.strings.join(["a", "b"]), tf.strings.join([])),
    "join_separator_scalars": lambda tf, s: tf.strings.join([s, "x", s], separator="\u00b7"),
    "join_tensor_rows": lambda tf, s: tf.strings.join(s),
    "join_shape_mismatch": lambda tf, s: tf.strings.join([s, tf.constant(["a", "b"])]),
    "join_no_broadcast": lambda tf, s: tf.strings.join([tf.reshape(s, [1, 4]), s]),
    "length": lambda tf, s: (tf.strings.length(s), tf.strings.length("abc")),
    "length_utf8": lambda tf, s: tf.strings.length(s, unit="UTF8_CHAR"),
    "length_invalid_utf8": lambda tf, s: tf.strings.length(tf.constant([b"\xff\xfe", b"a\x80", b"\xc3"]),
                                                           unit="UTF8_CHAR"),
    "length_bad_unit": lambda tf, s: tf.strings.length(s, unit="CHAR"),
    "length_nul": lambda tf, s: tf.strings.length(tf.constant([b"a\x00b", b"\x00"])),
    "upper_lower": lambda tf, s: (tf.strings.upper(tf.constant(["aBc", "\u00e9"])),
                                  tf.strings.lower(tf.constant(["aBc", "\u00c9"]))),
    "upper_lower_utf8": lambda tf, s: (tf.strings.upper(s, encoding="utf-8"),
                                       tf.strings.lower(tf.constant(["\u00c9A"]), encoding="utf-8")),
    "upper_bad_encoding": lambda tf, s: tf.strings.upper(s, encoding="latin1"),
    "as_string_float": lambda tf, s: tf.strings.as_string(tf.constant([3.5, -1.25, 1e10, np.nan, np.inf])),
    "as_string_float64": lambda tf, s: tf.strings.as_string(tf.constant([0.1, 2.0], tf.float64), precision=3),
    "as_string_scientific": lambda tf, s: tf.strings.as_string(tf.constant([3.14159]), scientific=True),
    "as_string_shortest": lambda tf, s: tf.strings.as_string(tf.constant([3.14159, 100.0, 1e10]), shortest=True),
    "as_string_width_fill": lambda tf, s: (tf.strings.as_string(tf.constant([3.5]), width=12),
                                           tf.strings.as_string(tf.constant([3.5]), width=12, fill="0"),
                                           tf.strings.as_string(tf.constant([3, -42]), width=5, fill="0")),
    "as_string_bad_fill": lambda tf, s: tf.strings.as_string(tf.constant([3.5]), width=12, fill="x"),
    "as_string_int_precision": lambda tf, s: tf.strings.as_string(tf.constant([3]), precision=2),
    "as_string_int_scientific": lambda tf, s: tf.strings.as_string(tf.constant([3]), scientific=True),
    "as_string_both": lambda tf, s: tf.strings.as_string(tf.constant([3.0]), scientific=True, shortest=True),
    "as_string_types": lambda tf, s: (tf.strings.as_string(tf.constant([True, False])),
                                      tf.strings.as_string(tf.constant([1 + 2j])),
                                      tf.strings.as_string(tf.constant([200], tf.uint8)),
                                      tf.strings.as_string(tf.constant([2**40], tf.int64)),
                                      tf.strings.as_string(tf.constant([1.5], tf.float16)),
                                      tf.strings.as_string(tf.constant([1.5], tf.bfloat16)),
                                      tf.strings.as_string(s), tf.as_string(1.5)),
    "to_number": lambda tf, s: tf.strings.to_number(tf.constant(["1.5", " 2", "1e3", "-inf", "0x10", "+3", "1e50"])),
    "to_number_nan": lambda tf, s: tf.math.is_nan(tf.strings.to_number("nan")),
    "to_number_types": lambda tf, s: (tf.strings.to_number(["12", "-3", " +4 "], tf.int32),
                                      tf.strings.to_number(["3000000000"], tf.int64),
                                      tf.strings.to_number(["0.1"], tf.float64),
                                      tf.strings.to_number(["4000000000"], tf.uint32)),
    "to_number_bad": lambda tf, s: tf.strings.to_number(["1.5x"]),
    "to_number_int_of_float": lambda tf, s: tf.strings.to_number(["1.5"], tf.int32),
    "to_number_overflow": lambda tf, s: tf.strings.to_number(["3000000000"], tf.int32),
    "to_number_underscore": lambda tf, s: tf.strings.to_number(["1_000"]),
    "to_number_bad_type": lambda tf, s: tf.strings.to_number(["1"], tf.uint8),
    "split": lambda tf, s: (tf.strings.split("a  b c"), tf.strings.split("a,,b", sep=","),
                            tf.strings.split("a b c", maxsplit=1), tf.strings.split(""),
                            tf.strings.split("", sep=","), tf.strings.split("ab", sep="")),
    "tf_function": lambda tf, s: tf.function(lambda x: (
        tf.strings.join([x, "!"]), tf.strings.upper(x), tf.strings.length(x, unit="UTF8_CHAR"),
        tf.strings.to_number(tf.strings.as_string(tf.strings.length(x))), tf.strings.split(x[0])))(s),
}


@pytest.mark.parametrize("name", list(STRINGS))
def test_strings(name):
    same(lambda tf: STRINGS[name](tf, tf.constant(WORDS)))


def test_static_shapes_in_tf_function():
    def prog(tf):
        shapes = []

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.string)])
        def f(x):
            outs = (tf.strings.join([x, "a", x]), tf.strings.length(x), tf.strings.upper(x),
                    tf.strings.as_string(tf.strings.length(x)), tf.strings.to_number(x, tf.int64),
                    tf.strings.split(x[0, 0]))
            shapes.extend((t.shape, t.dtype) for t in outs)
            return tf.strings.join([x, x])
        f.get_concrete_function()
        return shapes
    same(prog)


def test_split_of_a_vector_is_refused():
    # TensorFlow returns a RaggedTensor, which tapeflow does not have.
    with pytest.raises(NotImplementedError, match="RaggedTensor"):
        tapeflow.strings.split(tapeflow.constant(["a b"]))


def test_kernels_keep_nul_bytes():
    tf = tapeflow
    s = tf.constant([b"a\x00b", b"\x00"])
    assert tf.strings.length(s).numpy().tolist() == [3, 1]
    assert tf.strings.join([s, s], separator="\x00").numpy().tolist() == [b"a\x00b\x00a\x00b", b"\x00\x00\x00"]
    assert tf.strings.upper(s).numpy().tolist() == [b"A\x00B", b"\x00"]


# -- + joins strings (TensorFlow's string Add) ---------------------------------------------------

ADDITION = {
    "tensors": lambda tf, s: s + s,
    "python_str": lambda tf, s: (s + "!", "<" + s),
    "scalar": lambda tf, s: tf.constant("a") + tf.constant(b"\0b"),
    "broadcast": lambda tf, s: tf.reshape(s, [4, 1]) + s,
    "tf_add": lambda tf, s: tf.add(s, tf.constant("x")),
    "tf_function": lambda tf, s: tf.function(lambda x: x + "y")(s),
    "number": lambda tf, s: s + 1,
}


@pytest.mark.parametrize("name", list(ADDITION))
def test_addition_joins(name):
    same(lambda tf: ADDITION[name](tf, tf.constant(WORDS)))
