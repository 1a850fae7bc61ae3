"""Bad arguments against TensorFlow: how op arguments convert, and the tape's argument checks.

* Note [graph conversion] (framework/tensor.py): Python lists convert with the
  eager converter's rules (ValueError for mixed types) or, while a graph is
  built, with NumPy's (TypeError for what NumPy cannot promote).
* Note [list packing] (framework/tensor.py): lists holding tensors.
* Note [non-tensor arguments] (eager/backprop.py): targets and sources that are
  no tensors, and `output_gradients` of another length than the targets.

Each program runs eagerly and inside a `tf.function`, with tapeflow and TensorFlow.
"""

import numpy as np
import pytest

from differential import same

X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)


def _both_modes(call):
    """`call(tf)` eagerly and traced (its outcome or exception class compared by `same`)."""
    def eager(tf):
        return call(tf)

    def traced(tf):
        return tf.function(lambda: call(tf))()
    return {"eager": eager, "traced": traced}


CONVERSIONS = {
    # Python lists: the first element's type eagerly, NumPy's promotion in graphs
    "mixed_text": lambda tf: tf.constant([1, "a"]),
    "text_then_number": lambda tf: tf.constant(["a", 1]),
    "none_in_list": lambda tf: tf.constant([1, None]),
    "none_first": lambda tf: tf.constant([None, 1]),
    "float_then_none": lambda tf: tf.constant([1.5, None]),
    "int_then_complex": lambda tf: tf.constant([1, 1j]),
    "nested_int_then_complex": lambda tf: tf.constant([[1, 2], [1j, 3]]),
    "complex_then_int": lambda tf: tf.constant([1j, 1]),
    "bool_then_int": lambda tf: tf.constant([True, 1]),
    "bool_then_float": lambda tf: tf.constant([True, 1.5]),
    "int_beyond_int64_after_int": lambda tf: tf.constant([1, 2**63]),
    "int_beyond_64_bits": lambda tf: tf.constant([2**70]),
    "ragged": lambda tf: tf.constant([[1], [1, 2]]),
    "none": lambda tf: tf.constant(None),
    "none_in_list_to_float": lambda tf: tf.convert_to_tensor([1, None], tf.float32),
    "text_in_list_to_float": lambda tf: tf.convert_to_tensor([1, "a"], tf.float32),
    "text_in_list_with_hint": lambda tf: tf.convert_to_tensor([1, "a"], dtype_hint=tf.float32),
    # tf.constant takes no tensors inside lists
    "constant_of_int_then_tensor": lambda tf: tf.constant([1, tf.constant(2)]),
    "constant_of_tensor_then_int": lambda tf: tf.constant([tf.constant(1), 2]),
    "constant_of_tensors": lambda tf: tf.constant([tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])]),
    # convert_to_tensor packs them, in the first tensor's dtype or the one asked for
    "pack_int_into_float": lambda tf: tf.convert_to_tensor([tf.constant(1.0), 2]),
    "pack_text_into_float": lambda tf: tf.convert_to_tensor([tf.constant(1.0), "a"]),
    "pack_float_into_int": lambda tf: tf.convert_to_tensor([tf.constant(1), 2.5]),
    "pack_wrapping_int": lambda tf: tf.convert_to_tensor([tf.constant(1), 2**40]),
    "pack_numpy_float64": lambda tf: tf.convert_to_tensor([tf.constant(1.0), np.float64(2.0)]),
    "pack_nested": lambda tf: tf.convert_to_tensor([[tf.constant(1.0)], [2]]),
    "pack_nested_other_dtype": lambda tf: tf.convert_to_tensor([[1.0], [tf.constant(2)]]),
    "pack_mixed_tensor_dtypes": lambda tf: tf.convert_to_tensor([tf.constant(1.0), tf.constant(2)]),
    "pack_cast_to_dtype": lambda tf: tf.convert_to_tensor([tf.constant(1), tf.constant(2)], tf.float32),
    "pack_cast_with_value": lambda tf: tf.convert_to_tensor([tf.constant(1.0), 2], tf.float64),
    "pack_with_hint": lambda tf: tf.convert_to_tensor([tf.constant(1.0), 2], dtype_hint=tf.float64),
    "pack_none": lambda tf: tf.convert_to_tensor([tf.constant(1.0), None]),
    "pack_variable_and_text": lambda tf: tf.convert_to_tensor([tf.Variable(1.0), "a"]),
    # op arguments
    "add_mixed_list": lambda tf: tf.constant(X) + [1, "a"],
    "add_none_in_list": lambda tf: tf.add(tf.constant(X), [1, None]),
    "multiply_none_in_list": lambda tf: tf.multiply(tf.constant(X), [1, None]),
    "maximum_mixed_list": lambda tf: tf.maximum(tf.constant(X), [1, "a"]),
    "clip_none_in_list": lambda tf: tf.clip_by_value(tf.constant(X), [1, None], 4.0),
    "exp_mixed_list": lambda tf: tf.exp([1, "a"]),
    "relu_tensor_in_list": lambda tf: tf.nn.relu([tf.constant(1.0), "a"]),
    "add_n_none_in_list": lambda tf: tf.add_n([tf.constant(X), [1, None]]),
    "cast_mixed_list": lambda tf: tf.cast([1, "a"], tf.float32),
    "matmul_none_in_list": lambda tf: tf.matmul(tf.constant(X), [1, None]),
    "softmax_mixed_list": lambda tf: tf.nn.softmax([1, "a"]),
    "add_text": lambda tf: tf.add(tf.constant(X), "a"),
}


@pytest.mark.parametrize("mode", ["eager", "traced"])
@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_conversion(name, mode):
    same(_both_modes(CONVERSIONS[name])[mode])


def test_variable_of_tensor_and_text():
    same(lambda tf: tf.Variable([tf.constant(1.0), "a"]))


# -- the tape's argument checks (Note [non-tensor arguments]) ------------------------------------

BAD_ARGUMENTS = {
    "none": lambda tf: None,
    "str": lambda tf: "a",
    "dtype_name": lambda tf: "float32",
    "float": lambda tf: 1.5,
    "float_naming_int32": lambda tf: 3.0,
    "nan": lambda tf: float("nan"),
    "neg_int": lambda tf: -9,
    "zero": lambda tf: 0,
    "int_naming_string": lambda tf: 7,
    "bool": lambda tf: True,
    "numpy": lambda tf: np.ones([2, 3]),
    "numpy_int": lambda tf: np.ones([2], np.int64),
    "int_then_str": lambda tf: [1, "a"],
    "string_dtype_then_str": lambda tf: [7, "a"],
    "tensor_then_str": lambda tf: [tf.constant(1.0), "a"],
    "tensor_then_none": lambda tf: [tf.constant(1.0), None],
}


def _tape(tf):
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    return tape, x, y


def _outcome(call):
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - compared by class
        return type(exc).__name__


@pytest.mark.parametrize("bad", sorted(BAD_ARGUMENTS))
@pytest.mark.parametrize("role", ["source", "target"])
def test_gradient_bad_argument_then_tape_still_works(role, bad):
    def prog(tf):
        tape, x, y = _tape(tf)
        value = BAD_ARGUMENTS[bad](tf)
        first = _outcome(lambda: tape.gradient(y, value) if role == "source" else tape.gradient(value, x))
        return first, tape.gradient(y, x)
    same(prog)


def test_gradient_bad_argument_on_one_shot_tape_leaves_it_usable():
    def prog(tf):
        x = tf.constant(X)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x * x)
        first = _outcome(lambda: tape.gradient(y, 1.5))
        return first, tape.gradient(y, x)
    same(prog)


@pytest.mark.parametrize("bad", ["float", "nan", "neg_int", "int_then_str", "tensor_then_none", "dtype_name",
                                 "numpy", "bool", "int_naming_string"])
def test_jacobian_bad_source(bad):
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
        first = _outcome(lambda: tape.jacobian(y, BAD_ARGUMENTS[bad](tf)))
        return first, tape.jacobian(y, x)
    same(prog)


OUTPUT_GRADIENTS = {
    "empty_list": lambda tf: [],                                 # seeds with ones
    "extra_entries": lambda tf: [0.5, 2.0],                       # the first is used, the rest ignored
    "extra_none": lambda tf: [tf.ones([2, 3]), None],
    "int_first": lambda tf: [1, 1, 1],                            # an int32 seed: the Mul rule fails
    "int_then_text": lambda tf: [1, "a"],
    "ragged": lambda tf: [[1], [1, 2]],                           # flattened: 1 first
    "tensor_then_text": lambda tf: [tf.constant(1.0), "a"],
    "nested": lambda tf: [[0.5, 0.5]],
}


@pytest.mark.parametrize("name", sorted(OUTPUT_GRADIENTS))
def test_output_gradients_lengths(name):
    def prog(tf):
        x = tf.constant(X)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * x
        first = _outcome(lambda: tape.gradient(y, x, output_gradients=OUTPUT_GRADIENTS[name](tf)))
        return first, tape.gradient(y, x)
    same(prog)
