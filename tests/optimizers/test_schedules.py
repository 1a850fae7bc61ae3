"""Learning-rate schedules, differential against TensorFlow's Keras: values at each step
(Python ints, int32 and int64 steps), dtypes, configs and (de)serialization."""

import pytest

import tapeflow
from differential import same

SCHEDULES = {
    "exponential": lambda s: s.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5),
    "exponential_staircase": lambda s: s.ExponentialDecay(0.2, 2, 0.9, staircase=True, name="decay"),
    "exponential_growth": lambda s: s.ExponentialDecay(1.0, 4, 1.5),
    "piecewise": lambda s: s.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01]),
    "piecewise_one_boundary": lambda s: s.PiecewiseConstantDecay([3], [1.0, 0.5]),
    "piecewise_int_values": lambda s: s.PiecewiseConstantDecay([1, 2, 3], [4, 3, 2, 1]),
}


@pytest.mark.parametrize("step_kind", ["python", "int32", "int64"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_values(name, step_kind):
    def prog(tf):
        schedule = SCHEDULES[name](tf.keras.optimizers.schedules)
        steps = {"python": list(range(8)), "int32": [tf.constant(i) for i in range(8)],
                 "int64": [tf.constant(i, tf.int64) for i in range(8)]}[step_kind]
        return [schedule(s) for s in steps]
    same(prog)


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_config_and_serialization(name):
    def prog(tf):
        s = tf.keras.optimizers.schedules
        schedule = SCHEDULES[name](s)
        again = s.deserialize(s.serialize(schedule))
        return schedule.get_config(), s.serialize(schedule), type(again).__name__, again(4), \
            type(schedule).from_config(schedule.get_config())(4)
    same(prog)


def test_in_function_follows_the_step():
    def prog(tf):
        schedule = SCHEDULES["piecewise"](tf.keras.optimizers.schedules)
        step = tf.Variable(0, dtype=tf.int64)

        @tf.function
        def rate():
            step.assign_add(1)
            return schedule(step)
        return [rate() for _ in range(7)]
    same(prog)


def test_base_class_must_be_overridden():
    def prog(tf):
        tf.keras.optimizers.schedules.LearningRateSchedule()(1)
    same(prog)


def test_deserialize_unknown_class():
    # Keras returns something unusable (it prints as the class name); tapeflow says what to pass
    with pytest.raises(ValueError, match="custom_objects"):
        tapeflow.keras.optimizers.schedules.deserialize({"class_name": "NoSuchDecay", "config": {}})


def test_deserialize_custom_class():
    class Halving(tapeflow.keras.optimizers.schedules.LearningRateSchedule):
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, step):
            return self.rate / (tapeflow.cast(step, tapeflow.float32) + 1.0)

        def get_config(self):
            return {"rate": self.rate}
    config = tapeflow.keras.optimizers.schedules.serialize(Halving(0.5))
    again = tapeflow.keras.optimizers.schedules.deserialize(config, custom_objects={"Halving": Halving})
    assert float(again(1)) == 0.25
