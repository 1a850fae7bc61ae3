"""Bad shape, size, axis, perm and multiples arguments raise TensorFlow's exception classes,
eagerly and while a `tf.function` is traced, differential against TensorFlow.

TensorFlow converts such an argument to an int32/int64 tensor before its dtype and
shape checks, so the class depends on what the argument is (Note [int inputs] in
ops/constructor_ops.py): None and ragged lists are ValueError, a float or a string
among tensors TypeError, a float/bool/string tensor InvalidArgumentError eagerly and
TypeError in graphs, a 2-D size InvalidArgumentError eagerly and ValueError in graphs
(Note [build-time shape errors] in framework/shapes/shape_rules.py).  Squeeze's axis is an attr (a
list of ints, truncated by int()); split's sizes are converted without a dtype.
"""

import numpy as np
import pytest

from differential import same

X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)

# name -> `bad(tf)`: one bad argument
BAD = {
    "none": lambda tf: None,
    "str": lambda tf: "a",
    "float": lambda tf: 1.5,
    "nan": lambda tf: float("nan"),
    "inf": lambda tf: float("inf"),
    "neg_int": lambda tf: -9,
    "big_int": lambda tf: 7,
    "bool": lambda tf: True,
    "empty_list": lambda tf: [],
    "float_list": lambda tf: [0.5, 2.0],
    "mixed_list": lambda tf: [1, "a"],
    "none_in_list": lambda tf: [1, None],
    "ragged_list": lambda tf: [[1], [1, 2]],
    "tensor_in_list": lambda tf: [tf.constant(1.0), "a"],
    "huge_rank": lambda tf: [1] * 70,
    "int_tensor": lambda tf: tf.constant([[1, 2, 3], [4, 5, 6]]),
    "bool_tensor": lambda tf: tf.constant([True, False]),
    "string_tensor": lambda tf: tf.constant(["a", "b"]),
    "float_tensor": lambda tf: tf.ones([3, 2]),
    "scalar_tensor": lambda tf: tf.constant(2.0),
    "numpy_float": lambda tf: np.ones([2, 3], np.float64),
}

# name -> `call(tf, x, bad)` on the [2, 3] float32 operand x
CALLS = {
    "zeros": lambda tf, x, b: tf.zeros(b) + tf.reduce_sum(x),
    "ones": lambda tf, x, b: tf.ones(b) + tf.reduce_sum(x),
    "fill": lambda tf, x, b: tf.fill(b, 1.0) + tf.reduce_sum(x),
    "reshape": lambda tf, x, b: tf.reshape(x, b),
    "broadcast_to": lambda tf, x, b: tf.broadcast_to(x, b),
    "expand_dims": lambda tf, x, b: tf.expand_dims(x, b),
    "squeeze": lambda tf, x, b: tf.squeeze(x, b),
    "tile": lambda tf, x, b: tf.tile(x, b),
    "transpose": lambda tf, x, b: tf.transpose(x, b),
    "reverse": lambda tf, x, b: tf.reverse(x, b),
    "pad": lambda tf, x, b: tf.pad(x, b),
    "split": lambda tf, x, b: tf.split(x, b, axis=1),
    "concat_axis": lambda tf, x, b: tf.concat([x, x], b),
    "unstack": lambda tf, x, b: tf.unstack(x, axis=b),
}

# Squeeze of a scalar tensor axis (TF 2.21: MemoryError eagerly) is a TensorFlow accident, not
# drawn here (an infinite one: the two tests below); split of a 2-D size tensor in a function
# aborts TensorFlow.
SKIP = {("squeeze", "scalar_tensor"), ("squeeze", "inf"), ("split", "int_tensor")}
CASES = [(api, bad) for api in CALLS for bad in BAD if (api, bad) not in SKIP]


def _read(out):
    """`out` with its tensors read into NumPy (TensorFlow fails only there on a rank above 64)."""
    for leaf in out if isinstance(out, (list, tuple)) else [out]:
        leaf.numpy()
    return out


def _program(api, bad, traced):
    def program(tf):
        call, value = CALLS[api], BAD[bad](tf)
        x = tf.constant(X)
        if not traced:
            return _read(call(tf, x, value))
        return _read(tf.function(lambda a: call(tf, a, value))(x))     # x is symbolic in the function
    return program


@pytest.mark.parametrize("api,bad", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_bad_argument_eager(api, bad):
    same(_program(api, bad, traced=False))


@pytest.mark.parametrize("api,bad", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_bad_argument_traced(api, bad):
    same(_program(api, bad, traced=True))


def test_squeeze_infinite_axis_eager():
    same(_program("squeeze", "inf", traced=False))          # OverflowError from int(inf), as in TF


def test_squeeze_infinite_axis_traced():
    same(_program("squeeze", "inf", traced=True))           # AutoGraph wraps that OverflowError in a StagingError


# Good arguments in the forms the checks must keep taking.
GOOD = {
    "reshape_numpy_ints": lambda tf, x: tf.reshape(x, np.array([3, 2])),
    "reshape_numpy_floats_truncated": lambda tf, x: tf.reshape(x, np.array([3.7, 2.2])),
    "reshape_int_tensor": lambda tf, x: tf.reshape(x, tf.constant([3, -1], tf.int64)),
    "reshape_tensors_in_list": lambda tf, x: tf.reshape(x, [tf.constant(3), 2]),
    "reshape_numpy_scalars": lambda tf, x: tf.reshape(x, (np.int64(3), np.int32(2))),
    "reshape_bools": lambda tf, x: tf.reshape(x[:1, :1], [True, True]),
    "zeros_shape": lambda tf, x: tf.zeros(tf.TensorShape([2, 3])),
    "zeros_int": lambda tf, x: tf.zeros(3),
    "zeros_empty": lambda tf, x: tf.zeros([]),
    "zeros_scalar_tensor": lambda tf, x: tf.zeros(tf.constant(2)),
    "ones_tensor": lambda tf, x: tf.ones(tf.constant([2, 1], tf.int64), tf.int32),
    "ones_dynamic": lambda tf, x: tf.ones([tf.shape(x)[0], 2]),
    "fill_tensor": lambda tf, x: tf.fill(tf.constant([2, 2]), 3),
    "fill_dynamic": lambda tf, x: tf.fill(tf.shape(x), 1.0),
    "broadcast_numpy": lambda tf, x: tf.broadcast_to(x, np.array([2, 2, 3])),
    "expand_dims_list": lambda tf, x: tf.expand_dims(x, [0]),
    "expand_dims_tensor": lambda tf, x: tf.expand_dims(x, tf.constant(-1)),
    "expand_dims_bool": lambda tf, x: tf.expand_dims(x, True),
    "squeeze_float_truncated": lambda tf, x: tf.squeeze(x[:, :1], 1.5),
    "squeeze_tuple": lambda tf, x: tf.squeeze(x[:1, :1], (0, np.int64(1))),
    "tile_tensor": lambda tf, x: tf.tile(x, tf.constant([1, 2])),
    "transpose_numpy": lambda tf, x: tf.transpose(x, np.array([1, 0])),
    "reverse_tensor": lambda tf, x: tf.reverse(x, tf.constant([0, 1], tf.int64)),
    "pad_numpy": lambda tf, x: tf.pad(x, np.array([[1, 0], [0, 2]])),
    "pad_tensor": lambda tf, x: tf.pad(x, tf.constant([[1, 0], [0, 2]])),
    "split_numpy": lambda tf, x: tf.split(x, np.array([1, 2]), axis=1),
    "split_tensor": lambda tf, x: tf.split(x, tf.constant([2, 1]), axis=1),
    "split_bool_count": lambda tf, x: tf.split(x, True, axis=1),
    "split_tensors_in_list": lambda tf, x: tf.split(x, [tf.constant(1), 2], axis=1),
    "concat_tensor_axis": lambda tf, x: tf.concat([x, x], tf.constant(1)),
    "concat_numpy_axis": lambda tf, x: tf.concat([x, x], np.int64(-1)),
    "unstack_float_axis_whole": lambda tf, x: tf.unstack(x, axis=-1),
}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_arguments(name, traced):
    def program(tf):
        x = tf.constant(X)
        if not traced:
            return GOOD[name](tf, x)
        return tf.function(lambda a: GOOD[name](tf, a))(x)
    same(program)


# A scalar or a vector of one where the op wants a vector or a scalar: some kernels take it
# eagerly, no shape function does.
SCALAR_SIZES = {
    "reshape": lambda tf, v: tf.reshape(v, 3),
    "tile": lambda tf, v: tf.tile(v, 2),
    "transpose": lambda tf, v: tf.transpose(v, 0),
    "broadcast_to": lambda tf, v: tf.broadcast_to(v, 3),
    "reverse": lambda tf, v: tf.reverse(v, 0),
    "fill": lambda tf, v: tf.fill(3, 1.0) + v,
    "zeros": lambda tf, v: tf.zeros(3) + v,
    "pad_scalar": lambda tf, v: tf.pad(v, 1),
    "pad_vector": lambda tf, v: tf.pad(v, [1, 1]),
    "expand_dims_matrix": lambda tf, v: tf.expand_dims(v, [[0]]),
    "concat_vector_axis": lambda tf, v: tf.concat([v, v], [0]),
}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("name", sorted(SCALAR_SIZES))
def test_scalar_and_vector_sizes(name, traced):
    def program(tf):
        v = tf.range(3.0)
        if not traced:
            return SCALAR_SIZES[name](tf, v)
        return tf.function(lambda a: SCALAR_SIZES[name](tf, a))(v)
    same(program)


def test_scalar_count_tensor_is_not_a_split_count():
    same(lambda tf: tf.split(tf.constant(X), tf.constant(3), axis=1))   # TF: ValueError, a rank-0 tensor
