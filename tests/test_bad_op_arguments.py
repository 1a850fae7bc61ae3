"""Bad arguments of index-like inputs raise TensorFlow's exception classes, eagerly and in tf.function.

Each row is a call with one bad argument (Note [typed index inputs] in ops/slicing_ops.py):
`where`'s condition, `gather`/`one_hot` indices, `slice` begin, `cumsum` and reduction
axes, pooling `ksize`, `random.normal` shapes.  Every row runs eagerly and traced, and
`differential.same` checks the value or the exception class against TensorFlow.
"""

import numpy as np
import pytest

from differential import same

X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)

BAD = {
    "float": 1.5,
    "nan": float("nan"),
    "int": 7,
    "bool": True,
    "str": "a",
    "none": None,
    "empty": [],
    "float_list": [0.5, 2.0],
    "mixed": [1, "a"],
    "none_in_list": [1, None],
    "ragged": [[1], [1, 2]],
    "numpy_float": np.ones([2, 3]),
    "tensor_in_list": lambda tf: [tf.constant(1.0), "a"],
    "int_tensor": lambda tf: tf.constant([[1, 2, 3], [4, 5, 6]]),
    "float_tensor": lambda tf: tf.constant(X),
    "bool_tensor": lambda tf: tf.constant([True, False]),
    "string_tensor": lambda tf: tf.constant(["a", "b"]),
    "scalar_tensor": lambda tf: tf.constant(2.0),
}

CALLS = {
    "where": lambda tf, x, b: tf.where(b, x, x),
    "gather": lambda tf, x, b: tf.gather(x, b),
    "one_hot": lambda tf, x, b: tf.one_hot(b, 3),
    "slice": lambda tf, x, b: tf.slice(x, b, [1, 1]),
    "cumsum": lambda tf, x, b: tf.cumsum(x, axis=b),
    "reduce_sum": lambda tf, x, b: tf.reduce_sum(x, axis=b),
    "reduce_max": lambda tf, x, b: tf.reduce_max(x, axis=b),
    "avg_pool": lambda tf, x, b: tf.nn.avg_pool(tf.reshape(x, [1, 2, 3, 1]), b, 1, "SAME"),
}

# (api, bad value): TensorFlow itself cannot run these (max_pool is left out for the same reason:
# a VALID window larger than its input aborts it eagerly).
SKIP = {("avg_pool", "nan")}


def _value(tf, bad):
    value = BAD[bad]
    return value(tf) if callable(value) else value


def _program(api, bad, traced):
    def program(tf):
        x = tf.constant(X)
        if not traced:
            return CALLS[api](tf, x, _value(tf, bad))
        value = _value(tf, bad)
        return tf.function(lambda a: CALLS[api](tf, a * 1.0, value))(x)
    return program


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("api", sorted(CALLS))
def test_bad_argument(api, bad, traced):
    if (api, bad) in SKIP:
        pytest.skip("TensorFlow aborts")
    same(_program(api, bad, traced))


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("ksize", [None, 1.5, [1, "a"], [[1], [1, 2]], "tensor", "scalar_tensor"])
def test_max_pool_ksize(ksize, traced):
    def program(tf):
        k = {"tensor": tf.constant([1, 1]), "scalar_tensor": tf.constant(1)}.get(ksize, ksize) \
            if isinstance(ksize, str) else ksize
        call = lambda a: tf.nn.max_pool(tf.reshape(a, [1, 2, 3, 1]), k, 1, "VALID")  # noqa: E731
        return tf.function(call)(tf.constant(X)) if traced else call(tf.constant(X))
    same(program)


def test_gather_axis_out_of_range_is_build_time_value_error():
    same(lambda tf: tf.function(lambda a: tf.gather(a, [0], axis=3))(tf.ones([2, 3])))
    same(lambda tf: tf.gather(tf.ones([2, 3]), [0], axis=3))


def test_slice_float_begin_in_function():
    same(lambda tf: tf.function(lambda a: tf.slice(a, [0.0, 0.0], [1, 1]))(tf.ones([2, 3])))


@pytest.mark.parametrize("shape", [[2.0], 2.0, [True], ["a"], []])
def test_random_normal_shape(shape):
    same(lambda tf: tf.random.normal(shape).shape)
    same(lambda tf: tf.function(lambda: tf.random.normal(shape))().shape)
