"""Tensors in f-strings and `format()`: the value formatted as NumPy formats it, against TensorFlow."""

import pytest

from differential import same


@pytest.mark.parametrize("value,dtype", [
    (3.14159, "float32"), (3.14159, "float64"), (2.5, "float16"), (2.5, "bfloat16"), (-7, "int32"),
    (7, "int64"), (200, "uint8"), (True, "bool"), (1 + 2j, "complex64"), (1 - 2j, "complex128"),
])
@pytest.mark.parametrize("spec", ["", ".3f", "10.2f", "<12", "e", "+.1%", "d", "x", "s", "^9.2g"])
def test_scalar_format_specs_like_tensorflow(value, dtype, spec):
    same(lambda tf: format(tf.constant(value, getattr(tf, dtype)), spec))


@pytest.mark.parametrize("make", [
    lambda tf: tf.constant([1.0, 2.5]),
    lambda tf: tf.constant([[1, 2], [3, 4]]),
    lambda tf: tf.constant(["a", "bc"]),
    lambda tf: tf.constant("text"),
    lambda tf: tf.zeros([0, 3]),
])
@pytest.mark.parametrize("spec", ["", ".3f", ">20"])
def test_non_scalar_and_string_tensors_like_tensorflow(make, spec):
    """An empty spec gives NumPy's `str` of the value; any spec on an array is NumPy's TypeError."""
    same(lambda tf: format(make(tf), spec))


def test_f_strings_show_the_value_like_tensorflow():
    same(lambda tf: [f"{tf.constant(0.1)}", f"loss={tf.constant(2.0) / 3:.4f}", f"{tf.constant([1, 2])!s}",
                     f"{tf.constant([1, 2])!r}", f"{tf.range(3)}", f"{tf.constant(5):>4d}"])


def test_str_and_repr_are_unchanged():
    same(lambda tf: [str(tf.constant([1.0, 2.0])), repr(tf.constant(1.5)), str(tf.constant([[1], [2]]))])


def test_variables_format_as_objects_like_tensorflow():
    """A Variable is no tensor: an empty spec gives its repr, any other spec TypeError."""
    same(lambda tf: f"{tf.Variable([1.0, 2.0])}".replace("ResourceVariable", "Variable"))
    same(lambda tf: format(tf.Variable(2.5), ".2f"))


def test_symbolic_tensors_refuse_format_specs_like_tensorflow():
    def program(tf):
        out = []

        @tf.function
        def f(x):
            out.append(format(x, ""))       # `str(x)`: its text differs between the two, not compared here
            try:
                format(x, ".2f")
            except TypeError as e:
                out.append(type(e).__name__)
            return x
        f(tf.constant(1.0))
        return out[1:]
    same(program)
