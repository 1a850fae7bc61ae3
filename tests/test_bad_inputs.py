"""Bad inputs raise TensorFlow's exception classes (issue 13), differential against TensorFlow.

* shape errors found while a `tf.function` is traced are ValueError, as TensorFlow's
  shape functions raise them (Note [build-time shape errors] in framework/shapes/shape_rules.py),
  and InvalidArgumentError eagerly;
* windows larger than their input fail while tracing;
* mixed-type lists, None, float sizes and bad Jacobian sources raise TF's class;
* ranks above NumPy's 64 raise InvalidArgumentError with a clear message;
* concat's gradient keeps IndexedSlices as TensorFlow's does.
"""

import numpy as np
import pytest

import tapeflow
from differential import Raised, same

X23 = np.arange(6, dtype=np.float32).reshape(2, 3)
Y24 = np.ones((2, 4), np.float32)


def traced(body, *args, signature=None):
    """A program calling `tf.function(body(tf))` on constant arguments."""
    def program(tf):
        f = tf.function(body(tf), input_signature=None if signature is None else signature(tf))
        return f(*[tf.constant(a) for a in args])
    return program


def eager(body, *args):
    """A program calling `body(tf)` eagerly on constant arguments."""
    return lambda tf: body(tf)(*[tf.constant(a) for a in args])


# -- A1: shape errors at trace time (ValueError) and eagerly (InvalidArgumentError) --------
SHAPE_ERRORS = {
    "reduce_sum_axis": (lambda tf: lambda v: tf.reduce_sum(v, axis=5), (X23,)),
    "reduce_mean_neg_axis": (lambda tf: lambda v: tf.reduce_mean(v, axis=-3), (X23,)),
    "reduce_max_axes": (lambda tf: lambda v: tf.reduce_max(v, axis=[0, 2]), (X23,)),
    "reduce_prod_axis": (lambda tf: lambda v: tf.reduce_prod(v, axis=3), (X23,)),
    "reduce_logsumexp_axis": (lambda tf: lambda v: tf.reduce_logsumexp(v, axis=3), (X23,)),
    "reduce_any_axis": (lambda tf: lambda v: tf.reduce_any(v > 0, axis=3), (X23,)),
    "argmax_axis": (lambda tf: lambda v: tf.argmax(v, axis=2), (X23,)),
    "concat_shapes": (lambda tf: lambda a, b: tf.concat([a, b], 0), (X23, Y24)),
    "concat_axis": (lambda tf: lambda a, b: tf.concat([a, b], 3), (X23, Y24)),
    "concat_scalars": (lambda tf: lambda a: tf.concat([a, a], 0), (np.float32(1),)),
    "add_n_shapes": (lambda tf: lambda a, b: tf.add_n([a, b]), (X23, Y24)),
    "transpose_perm_length": (lambda tf: lambda a: tf.transpose(a, [0, 1, 2]), (X23,)),
    "transpose_perm_range": (lambda tf: lambda a: tf.transpose(a, [0, 2]), (X23,)),
    "split_uneven": (lambda tf: lambda a: tf.split(a, 2, axis=1), (X23,)),
    "split_axis": (lambda tf: lambda a: tf.split(a, 2, axis=3), (X23,)),
    "split_zero": (lambda tf: lambda a: tf.split(a, 0, axis=1), (X23,)),
    "splitv_axis": (lambda tf: lambda a: tf.split(a, [1, 2], axis=3), (X23,)),
    "splitv_num": (lambda tf: lambda a: tf.split(a, [1, 2], axis=1, num=3), (X23,)),
    "expand_dims_axis": (lambda tf: lambda a: tf.expand_dims(a, 5), (X23,)),
    "expand_dims_two_axes": (lambda tf: lambda a: tf.expand_dims(a, [0, 1]), (X23,)),
    "squeeze_axis": (lambda tf: lambda a: tf.squeeze(a, [4]), (X23,)),
    "pad_rows": (lambda tf: lambda a: tf.pad(a, [[1, 1]]), (X23,)),
    "pad_columns": (lambda tf: lambda a: tf.pad(a, [[1, 1, 1], [1, 1, 1]]), (X23,)),
    "pad_negative": (lambda tf: lambda a: tf.pad(a, [[-1, 1], [0, 0]]), (X23,)),
    "reverse_axis": (lambda tf: lambda a: tf.reverse(a, [3]), (X23,)),
    "reverse_repeated": (lambda tf: lambda a: tf.reverse(a, [1, -1]), (X23,)),
    "unstack_num": (lambda tf: lambda a: tf.unstack(a, num=3), (X23,)),
}

# Checked only by TensorFlow's kernels: InvalidArgumentError in both modes.
KERNEL_ERRORS = {
    "transpose_repeated": (lambda tf: lambda a: tf.transpose(a, [0, 0]), (X23,)),
    "reduce_sum_repeated": (lambda tf: lambda v: tf.reduce_sum(v, axis=[0, 0]), (X23,)),
    "argmax_scalar": (lambda tf: lambda a: tf.argmax(a), (np.float32(1),)),
    "tile_negative": (lambda tf: lambda a: tf.tile(a, [1, -1]), (X23,)),
    "mirror_pad_too_large": (lambda tf: lambda a: tf.pad(a, [[3, 3], [0, 0]], mode="REFLECT"), (X23,)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_shape_error_traced_is_value_error(name):
    body, args = SHAPE_ERRORS[name]
    assert isinstance(same(traced(body, *args)), Raised)
    with pytest.raises(ValueError):
        traced(body, *args)(tapeflow)


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_shape_error_eager(name):
    body, args = SHAPE_ERRORS[name]
    assert isinstance(same(eager(body, *args)), Raised)


@pytest.mark.parametrize("name", sorted(KERNEL_ERRORS))
@pytest.mark.parametrize("mode", ["eager", "traced"])
def test_kernel_error(name, mode):
    body, args = KERNEL_ERRORS[name]
    same((eager if mode == "eager" else traced)(body, *args))


def test_unknown_dims_add_n_is_value_error():
    same(traced(lambda tf: lambda a, b: tf.add_n([a, b]), X23, Y24,
                signature=lambda tf: [tf.TensorSpec([None, 3]), tf.TensorSpec([None, 4])]))


def test_function_usable_after_trace_error():
    f = tapeflow.function(lambda v, axis: tapeflow.reduce_sum(v, axis=axis))
    with pytest.raises(ValueError):
        f(tapeflow.constant(X23), 5)
    np.testing.assert_allclose(f(tapeflow.constant(X23), 1).numpy(), X23.sum(1))


# -- A2: windows larger than the input fail while tracing ----------------------------------
WINDOWS = {
    "max_pool": lambda tf: lambda a: tf.nn.max_pool(a, 3, 1, "VALID"),
    "max_pool2d_nchw": lambda tf: lambda a: tf.nn.max_pool2d(tf.transpose(a, [0, 3, 1, 2]), 3, 1, "VALID",
                                                             data_format="NCHW"),
    "avg_pool": lambda tf: lambda a: tf.nn.avg_pool(a, 3, 1, "VALID"),
    "max_pool_explicit": lambda tf: lambda a: tf.nn.max_pool2d(a, 3, 1, [[0, 0], [0, 0], [0, 0], [0, 0]]),
    "max_pool1d": lambda tf: lambda a: tf.nn.max_pool1d(a[0], 3, 1, "VALID"),
    "conv2d": lambda tf: lambda a: tf.nn.conv2d(a, tf.ones([3, 3, 1, 1]), 1, "VALID"),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_window_larger_than_input_traced(name):
    same(traced(WINDOWS[name], np.ones((1, 2, 2, 1), np.float32)))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_window_that_fits_traced(padding):
    same(traced(lambda tf: lambda a: tf.nn.max_pool(a, 2, 1, padding), np.ones((1, 2, 2, 1), np.float32)))


def test_avg_pool_window_larger_than_input_eager_is_empty():
    same(lambda tf: tf.nn.avg_pool(tf.ones([1, 2, 2, 1]), 3, 1, "VALID"))


# -- A3: eager bad inputs -------------------------------------------------------------------
EAGER = {
    "constant_int_str": lambda tf: tf.constant([1, "a"]),
    "constant_none": lambda tf: tf.constant([1, None]),
    "add_n_int_float": lambda tf: tf.add_n([tf.constant(1), tf.constant(1.0)]),
    "add_n_float_int": lambda tf: tf.add_n([tf.constant(1.0), tf.constant(1)]),
    "add_n_str": lambda tf: tf.add_n([tf.constant(1.0), "a"]),
    "add_n_none": lambda tf: tf.add_n([tf.constant(1.0), None]),
    "add_n_empty": lambda tf: tf.add_n([]),
    "add_n_tensor_rows": lambda tf: tf.add_n(tf.constant([1.0, 2.0])),
    "add_n_broadcastable": lambda tf: tf.add_n([tf.ones([2, 1]), tf.ones([2, 3])]),
    "concat_int_float": lambda tf: tf.concat([tf.constant([1]), tf.constant([1.0])], 0),
    "concat_float_int": lambda tf: tf.concat([tf.constant([1.0]), tf.constant([1])], 0),
    "concat_int_python_float": lambda tf: tf.concat([tf.constant([1]), [2.5]], 0),
    "concat_empty": lambda tf: tf.concat([], 0),
    "concat_axis_none": lambda tf: tf.concat([tf.ones(2), tf.ones(2)], None),
    "concat_axis_float": lambda tf: tf.concat([tf.ones(2), tf.ones(2)], 0.0),
    "concat_axis_str": lambda tf: tf.concat([tf.ones(2), tf.ones(2)], "a"),
    "concat_axis_float_tensor": lambda tf: tf.concat([tf.ones(2), tf.ones(2)], tf.constant(0.0)),
    "concat_axis_list": lambda tf: tf.concat([tf.ones(2), tf.ones(2)], [0]),
    "stack_int_str": lambda tf: tf.stack([1, "a"]),
    "reshape_none": lambda tf: tf.reshape(tf.ones([2]), None),
    "reshape_none_entry": lambda tf: tf.reshape(tf.ones([2]), [None]),
    "reshape_float": lambda tf: tf.reshape(tf.ones([2]), [2.0]),
    "reshape_fraction": lambda tf: tf.reshape(tf.ones([2]), [0.5, 4]),
    "reshape_float_tensor": lambda tf: tf.reshape(tf.ones([2]), tf.constant([2.0])),
    "reshape_numpy_float": lambda tf: tf.reshape(tf.ones([2]), np.array([2.0])),
    "reshape_str": lambda tf: tf.reshape(tf.ones([2]), "a"),
    "reshape_2d": lambda tf: tf.reshape(tf.ones([1]), [[1]]),
    "transpose_fraction": lambda tf: tf.transpose(tf.ones([2, 2]), [0.5, 1.0]),
    "tile_float": lambda tf: tf.tile(tf.ones([2, 2]), [1.0, 2.0]),
    "broadcast_to_float": lambda tf: tf.broadcast_to(tf.ones([2]), [2.0, 2.0]),
    "reverse_fraction": lambda tf: tf.reverse(tf.ones([2, 2]), [0.5]),
    "fill_float": lambda tf: tf.fill([2.0], 1.0),
    "zeros_float": lambda tf: tf.zeros([2.0]),
    "zeros_none": lambda tf: tf.zeros(None),
    "split_float": lambda tf: tf.split(tf.ones([2, 2]), [1.0, 1.0], axis=1),
    "pad_float": lambda tf: tf.pad(tf.ones([2, 2]), [[1.0, 1.0], [1.0, 1.0]]),
    "reduce_sum_float_axis": lambda tf: tf.reduce_sum(tf.ones([2]), 0.0),
    "reduce_sum_str_axis": lambda tf: tf.reduce_sum(tf.ones([2]), "a"),
    "reduce_sum_none_axis": lambda tf: tf.reduce_sum(tf.ones([2]), [None]),
    "reduce_sum_bool_axis": lambda tf: tf.reduce_sum(tf.ones([2]), True),
}


@pytest.mark.parametrize("name", sorted(EAGER))
def test_eager_bad_input(name):
    same(EAGER[name])


TRACED = {
    "concat_empty": lambda tf: lambda a: tf.concat([], 0),
    "concat_axis_none": lambda tf: lambda a: tf.concat([a, a], None),
    "concat_axis_float": lambda tf: lambda a: tf.concat([a, a], 0.0),
    "concat_axis_str": lambda tf: lambda a: tf.concat([a, a], "a"),
    "concat_int_float": lambda tf: lambda a: tf.concat([a, tf.cast(a, tf.int32)], 0),
    "add_n_int_float": lambda tf: lambda a: tf.add_n([a, tf.cast(a, tf.int32)]),
    "add_n_tensor": lambda tf: lambda a: tf.add_n(a),
    "stack_int_str": lambda tf: lambda a: tf.stack([1, "a"]),
    "reshape_float": lambda tf: lambda a: tf.reshape(a, [2.0]),
    "reshape_str": lambda tf: lambda a: tf.reshape(a, "a"),
    "reshape_2d": lambda tf: lambda a: tf.reshape(a, [[2]]),
    "transpose_float": lambda tf: lambda a: tf.transpose(a[None], [1.0, 0.0]),
    "tile_float": lambda tf: lambda a: tf.tile(a, [2.0]),
    "reverse_float": lambda tf: lambda a: tf.reverse(a, [0.0]),
    "fill_float": lambda tf: lambda a: tf.fill([2.0], 1.0) + a,
    "pad_float": lambda tf: lambda a: tf.pad(a, [[1.0, 1.0]]),
    "split_float": lambda tf: lambda a: tf.split(a, [1.0, 1.0]),
}


@pytest.mark.parametrize("name", sorted(TRACED))
def test_traced_bad_input(name):
    same(traced(TRACED[name], np.ones(2, np.float32)))


def _jacobian(source, target=None, pfor=True, persistent=True, batch=False):
    def program(tf):
        x = tf.Variable([1.0, 2.0])
        c = tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=persistent) as tape:
            tape.watch(c)
            y = x * c * 2.0 if target is None else target(tf, x)
        method = tape.batch_jacobian if batch else tape.jacobian
        return method(y, source(tf, x, c), experimental_use_pfor=pfor)
    return program


JACOBIANS = {
    "source_none": _jacobian(lambda tf, x, c: None),
    "source_none_in_list": _jacobian(lambda tf, x, c: [x, None]),
    "source_float": _jacobian(lambda tf, x, c: 1.0),
    "source_str": _jacobian(lambda tf, x, c: "a"),
    "source_float_in_list": _jacobian(lambda tf, x, c: [x, 1.0]),
    "source_numpy": _jacobian(lambda tf, x, c: np.ones(2, np.float32)),
    "source_none_no_pfor": _jacobian(lambda tf, x, c: None, pfor=False),
    "source_nested": _jacobian(lambda tf, x, c: [x, [c]]),
    "source_dict": _jacobian(lambda tf, x, c: {"a": x}),
    "target_none": _jacobian(lambda tf, x, c: x, target=lambda tf, x: None),
    "target_float": _jacobian(lambda tf, x, c: x, target=lambda tf, x: 1.0),
    "target_list": _jacobian(lambda tf, x, c: x, target=lambda tf, x: [x * 2.0]),
    "one_shot_no_pfor": _jacobian(lambda tf, x, c: x, pfor=False, persistent=False),
    "batch_source_none": _jacobian(lambda tf, x, c: None, batch=True,
                                   target=lambda tf, x: tf.reshape(x, [2, 1]) * 2.0),
    "batch_source_list": _jacobian(lambda tf, x, c: [x], batch=True,
                                   target=lambda tf, x: tf.reshape(x, [2, 1]) * 2.0),
}


@pytest.mark.parametrize("name", sorted(JACOBIANS))
def test_jacobian_bad_source(name):
    same(JACOBIANS[name])


# -- A4: ranks above NumPy's 64 dimensions --------------------------------------------------
HUGE = {
    "reshape": lambda tf: tf.reshape(tf.ones([1]), [1] * 70),
    "reshape_65": lambda tf: tf.reshape(tf.ones([1]), [1] * 65),
    "zeros": lambda tf: tf.zeros([1] * 70),
    "ones": lambda tf: tf.ones([1] * 70),
    "fill": lambda tf: tf.fill([1] * 70, 1.0),
    "expand_dims": lambda tf: tf.expand_dims(tf.reshape(tf.ones([1]), [1] * 64), 0),
    "broadcast_to": lambda tf: tf.broadcast_to(tf.ones([1]), [1] * 70),
    "stack": lambda tf: tf.stack([tf.reshape(tf.ones([1]), [1] * 64)]),
}


@pytest.mark.parametrize("name", sorted(HUGE))
def test_rank_above_64(name):
    """TensorFlow makes these tensors but cannot convert them to NumPy (InvalidArgumentError);
    tapeflow, whose tensors are NumPy arrays, raises that class when it would make them."""
    with pytest.raises(tapeflow.errors.InvalidArgumentError, match="at most 64 dimensions"):
        HUGE[name](tapeflow)
    same(lambda tf: HUGE[name](tf).numpy())


def test_rank_64_works():
    same(lambda tf: tf.reduce_sum(tf.reshape(tf.ones([2]), [2] + [1] * 63), axis=0))


# -- A5: concat's gradient keeps IndexedSlices ----------------------------------------------
def _concat_grads(body, traced_=False):
    def program(tf):
        a = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        b = tf.Variable(np.ones((2, 2), np.float32))

        def grads():
            with tf.GradientTape() as tape:
                y = body(tf, a, b)
            return tape.gradient(y, [a, b])
        return tf.function(grads)() if traced_ else grads()
    return program


CONCAT_GRADS = {
    "gather_after_concat": lambda tf, a, b: tf.reduce_sum(tf.gather(tf.concat([a, b], 0), [0, 4])),
    "gather_after_concat_axis1": lambda tf, a, b: tf.reduce_sum(tf.gather(tf.concat([a, a[:, :1]], 1), [0, 2])),
    "gather_after_concat_negative_axis": lambda tf, a, b: tf.reduce_sum(tf.gather(tf.concat([a, b], -2), [0, 4]) ** 2),
    "gather_after_concat_of_three": lambda tf, a, b: tf.reduce_sum(tf.gather(tf.concat([b, a, b], 0), [1, 4])),
    "concat_of_gathered": lambda tf, a, b: tf.reduce_sum(tf.concat([tf.gather(a, [0, 1]), tf.gather(b, [1])], 0)),
    "concat_of_gathered_axis1": lambda tf, a, b: tf.reduce_sum(
        tf.concat([tf.gather(a, [0, 1]), tf.gather(b, [1, 0])], 1)),
    "concat_gathered_and_dense": lambda tf, a, b: tf.reduce_sum(tf.concat([tf.gather(a, [0, 1]), b], 0)),
    "gather_concat_gather": lambda tf, a, b: tf.reduce_sum(tf.gather(tf.concat([tf.gather(a, [2]), b], 0), [0, 1])),
    "gather_no_rows_of_b": lambda tf, a, b: tf.reduce_sum(tf.gather(tf.concat([a, b], 0), [1, 2])),
}


@pytest.mark.parametrize("name", sorted(CONCAT_GRADS))
@pytest.mark.parametrize("traced_", [False, True], ids=["eager", "traced"])
def test_concat_gradient_kinds(name, traced_):
    same(_concat_grads(CONCAT_GRADS[name], traced_))


# -- ops on constants inside a function (Note [folded ops] in framework/op_def.py) -----------------

FOLDED = {
    "max_pool_window_too_big": lambda tf: tf.nn.max_pool(tf.ones([1, 2, 2, 1]), 3, 1, "VALID"),
    "avg_pool_window_too_big": lambda tf: tf.nn.avg_pool2d(tf.ones([1, 2, 2, 1]), 3, 1, "VALID"),
    "concat_mismatch": lambda tf: tf.concat([tf.ones([2, 3]), tf.ones([2, 4])], 0),
    "transpose_bad_perm": lambda tf: tf.transpose(tf.ones([2, 3]), [0, 2]),
    "matmul_mismatch": lambda tf: tf.matmul(tf.ones([2, 3]), tf.ones([2, 3])),
    "valid_folded_op": lambda tf: tf.nn.max_pool(tf.ones([1, 3, 3, 1]), 2, 1, "VALID"),
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_shape_checks_of_ops_on_constants_in_functions(name):
    same(lambda tf: tf.function(lambda: FOLDED[name](tf))())
