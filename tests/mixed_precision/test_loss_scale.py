"""Loss scales: the dynamic rule step by step (eagerly and in tf.function), configs, errors,
and the same programs run against TensorFlow's compat.v1 loss scales."""

import numpy as np
import pytest

import tapeflow as tf
from differential import same

M = tf.mixed_precision.experimental
INF, NAN = float("inf"), float("nan")

# (gradient value of the step, scale after it, good-step count after it, should apply)
# with initial scale 4, increment_period 2, multiplier 2.
DYNAMIC_STEPS = [
    (1.0, 4.0, 1, True),
    (INF, 2.0, 0, False),
    (1.0, 2.0, 1, True),
    (1.0, 4.0, 0, True),     # second good step in a row: scale doubles, count restarts
    (NAN, 2.0, 0, False),
    (-INF, 1.0, 0, False),
    (INF, 1.0, 0, False),    # never below 1
    (1.0, 1.0, 1, True),
    (1.0, 2.0, 0, True),
]


def _check_steps(step, scale):
    for g, want_scale, want_count, want_apply in DYNAMIC_STEPS:
        _, apply = step(tf.constant([0.5, g]))
        assert bool(apply) is want_apply
        assert float(scale()) == want_scale
        assert int(scale._num_good_steps.numpy()) == want_count


def test_dynamic_rule_eagerly():
    scale = M.DynamicLossScale(initial_loss_scale=4, increment_period=2, multiplier=2)
    _check_steps(lambda g: scale.update([g, None, tf.constant(1.0)]), scale)


def test_dynamic_rule_in_tf_function():
    scale = M.DynamicLossScale(initial_loss_scale=4, increment_period=2, multiplier=2)
    _check_steps(tf.function(lambda g: scale.update({"a": g, "b": None})), scale)


def test_dynamic_scale_does_not_grow_to_infinity():
    scale = M.DynamicLossScale(initial_loss_scale=3e38, increment_period=1)
    assert bool(scale.update([tf.constant(1.0)])[1])
    assert float(scale()) == np.float32(3e38) and int(scale._num_good_steps.numpy()) == 0


def test_sparse_and_empty_gradients():
    scale = M.DynamicLossScale(8.0)
    _, apply = scale.update([tf.IndexedSlices(tf.constant([INF]), tf.constant([0]))])
    assert not bool(apply) and float(scale()) == 4.0
    _, apply = scale.update([])
    assert bool(apply) and float(scale()) == 4.0


def test_state_is_two_non_trainable_variables():
    scale = M.DynamicLossScale()
    assert scale()._value.dtype == np.float32 and float(scale()) == 2.0 ** 15
    assert not scale._current_loss_scale.trainable and not scale._num_good_steps.trainable
    assert scale._num_good_steps.dtype == tf.int64
    assert (scale.initial_loss_scale, scale.increment_period, scale.multiplier) == (32768.0, 2000, 2.0)


def test_fixed_loss_scale():
    scale = M.FixedLossScale(128)
    assert float(scale()) == 128.0 and scale().dtype == tf.float32
    assert scale.update([tf.constant(INF)]) == (None, True)
    assert repr(scale) == "FixedLossScale(128.0)"


@pytest.mark.parametrize("cls, kwargs", [
    (M.FixedLossScale, {"loss_scale_value": 3}),
    (M.DynamicLossScale, {"initial_loss_scale": 5, "increment_period": 3, "multiplier": 4}),
    (M.DynamicLossScale, {}),
])
def test_config_round_trip(cls, kwargs):
    config = cls(**kwargs).get_config()
    again = cls.from_config(config)
    assert type(again) is cls and again.get_config() == config


def test_abstract_base_and_bad_values():
    with pytest.raises(TypeError):
        M.LossScale()
    for bad in (0.5, 0, -1):
        with pytest.raises(ValueError, match="at least 1"):
            M.FixedLossScale(bad)
    with pytest.raises(ValueError, match="int or float"):
        M.FixedLossScale("8")


def test_namespaces():
    v1 = tf.compat.v1.mixed_precision
    assert v1.DynamicLossScale is v1.experimental.DynamicLossScale is M.DynamicLossScale
    assert v1.FixedLossScale is M.FixedLossScale and v1.LossScale is M.LossScale


# -- against TensorFlow's compat.v1 loss scales ---------------------------------------

def _dynamic_program(tf):
    scale = tf.compat.v1.mixed_precision.DynamicLossScale(4.0, 2, 2.0)
    out = []
    for g, *_ in DYNAMIC_STEPS:
        _, apply = scale.update([tf.constant([0.5, g]), None])
        out.append((apply, scale(), scale._num_good_steps.read_value()))
    return out, repr(scale), scale.get_config()


def test_dynamic_matches_tensorflow():
    same(_dynamic_program)


def test_dynamic_in_function_matches_tensorflow():
    def program(tf):
        scale = tf.compat.v1.mixed_precision.DynamicLossScale(2.0, 1, 3.0)
        step = tf.function(lambda g: scale.update([g])[1])
        return [(step(tf.constant(g)), scale()) for g in (1.0, INF, 2.0, NAN, NAN)]
    same(program)


@pytest.mark.parametrize("value", [1, 2.5, 0.5, -3, "8", None])
def test_fixed_matches_tensorflow(value):
    def program(tf):
        scale = tf.compat.v1.mixed_precision.FixedLossScale(value)
        return scale(), scale.update([tf.constant(INF)])[1], repr(scale), scale.get_config()
    same(program)
