"""The public names: tf.keras holds only the optimizers (and mixed_precision), tf.optimizers
the same classes, tf.compat.v1.train the TF1 optimizers and the global step."""

import pytest

import tapeflow as tf
from differential import same


def test_keras_and_tf_optimizers_share_the_classes():
    assert tf.keras.optimizers.SGD is tf.optimizers.SGD
    assert tf.keras.optimizers.Adam is tf.optimizers.Adam
    assert tf.keras.optimizers.Optimizer is tf.optimizers.Optimizer
    assert tf.keras.optimizers.schedules.ExponentialDecay is tf.optimizers.schedules.ExponentialDecay
    assert issubclass(tf.keras.optimizers.Adam, tf.keras.optimizers.Optimizer)


@pytest.mark.parametrize("name", ["layers", "Model", "losses", "Sequential", "backend"])
def test_other_keras_attributes_say_what_is_covered(name):
    with pytest.raises(AttributeError, match=f"tapeflow.keras has no attribute '{name}': tapeflow covers Keras "
                                             r"optimizers only \(tf.keras.optimizers.SGD, Adam\)"):
        getattr(tf.keras, name)


def test_other_keras_optimizers_say_what_is_covered():
    with pytest.raises(AttributeError, match="covers the Keras optimizers SGD and Adam only"):
        tf.keras.optimizers.RMSprop
    assert not hasattr(tf.keras, "__wrapped__")


def test_keras_mixed_precision_is_a_namespace():
    assert tf.keras.mixed_precision.__name__ == "tapeflow.keras.mixed_precision"


def test_compat_v1_train_names():
    train = tf.compat.v1.train
    expected = {"GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer", "Optimizer", "get_global_step",
                "create_global_step", "get_or_create_global_step"}
    assert expected <= set(vars(train))
    assert issubclass(train.AdamOptimizer, train.Optimizer)


def test_the_same_names_exist_in_tensorflow():
    def prog(tf):
        return [hasattr(tf.keras.optimizers, n) for n in ("SGD", "Adam", "Optimizer", "schedules")] + [
            hasattr(tf.keras.optimizers.schedules, n) for n in ("LearningRateSchedule", "ExponentialDecay",
                                                                "PiecewiseConstantDecay", "serialize", "deserialize")
        ] + [hasattr(tf.compat.v1.train, n) for n in ("GradientDescentOptimizer", "MomentumOptimizer",
                                                       "AdamOptimizer", "Optimizer", "get_or_create_global_step")]
    assert all(same(prog))
