"""Learning-rate schedules (`tf.keras.optimizers.schedules`): callables from the
optimizer step (its `iterations` variable) to a learning rate.

A schedule is computed with tapeflow ops, so inside a `tf.function` it is part
of the traced step and follows `iterations` at every call.
"""

from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import convert_to_tensor
from tapeflow.ops import math_ops, unary_ops
from tapeflow.ops.core import basic_ops


def _export(name):
    return tf_export(f"keras.optimizers.schedules.{name}", f"optimizers.schedules.{name}")


@_export("LearningRateSchedule")
class LearningRateSchedule:
    """Base class of schedules: define `__call__(step)` and `get_config()`.

    >>> import tapeflow as tf
    >>> class Halving(tf.keras.optimizers.schedules.LearningRateSchedule):
    ...     def __call__(self, step):
    ...         return 1.0 / tf.cast(step + 1, tf.float32)
    >>> float(Halving()(1))
    0.5
    """

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override "
                                  "`__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override `get_config()` "
                                  "in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@_export("ExponentialDecay")
class ExponentialDecay(LearningRateSchedule):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)` (the exponent floored with `staircase`).

    Args:
      initial_learning_rate: a Python float (or scalar tensor).
      decay_steps: a positive number of steps.
      decay_rate: the factor per `decay_steps` steps.
      staircase: decay at whole multiples of `decay_steps` only.
      name: the name scope of the computation.

    Raises:
      ValueError: `decay_steps` is not positive.

    >>> import tapeflow as tf
    >>> s = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    >>> round(float(s(4)), 6)
    0.025
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")

    def __call__(self, step):
        initial = convert_to_tensor(self.initial_learning_rate)
        dtype = initial.dtype
        p = basic_ops.cast(step, dtype) / basic_ops.cast(self.decay_steps, dtype)
        if self.staircase:
            p = unary_ops.floor(p)
        return initial * math_ops.pow(basic_ops.cast(self.decay_rate, dtype), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


@_export("PiecewiseConstantDecay")
class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[0]` while `step <= boundaries[0]`, `values[i]` while `step <= boundaries[i]`,
    `values[-1]` after the last boundary.

    Args:
      boundaries: increasing step numbers.
      values: one more learning rate than boundaries.
      name: the name scope of the computation.

    Raises:
      ValueError: `values` does not have one element more than `boundaries`.

    >>> import tapeflow as tf
    >>> s = tf.keras.optimizers.schedules.PiecewiseConstantDecay([2, 4], [1.0, 0.5, 0.25])
    >>> [float(s(step)) for step in (2, 3, 5)]
    [1.0, 0.5, 0.25]
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        step = convert_to_tensor(step)
        bounds = [basic_ops.cast(convert_to_tensor(b), step.dtype) for b in self.boundaries]
        values = [convert_to_tensor(v) for v in self.values]
        dtype = values[0].dtype
        # a sum of indicator * value over the intervals, as Keras computes it
        result = basic_ops.cast(step <= bounds[0], dtype) * values[0]
        result = result + basic_ops.cast(step > bounds[-1], dtype) * values[-1]
        for low, high, value in zip(bounds[:-1], bounds[1:], values[1:-1], strict=True):
            result = result + basic_ops.cast(math_ops.logical_and(step > low, step <= high), dtype) * value
        return result

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


_BUILT_IN = {"ExponentialDecay": ExponentialDecay, "PiecewiseConstantDecay": PiecewiseConstantDecay}


@_export("serialize")
def serialize(learning_rate_schedule):
    """A schedule as a JSON-compatible dict (`deserialize` makes it again).

    Args:
      learning_rate_schedule: a `LearningRateSchedule`.

    Returns:
      {"module", "class_name", "config", "registered_name"}, as Keras writes it.

    >>> import tapeflow as tf
    >>> tf.keras.optimizers.schedules.serialize(
    ...     tf.keras.optimizers.schedules.PiecewiseConstantDecay([1], [1.0, 0.5]))["class_name"]
    'PiecewiseConstantDecay'
    """
    cls = type(learning_rate_schedule)
    built_in = _BUILT_IN.get(cls.__name__) is cls
    return {"module": "keras.optimizers.schedules" if built_in else cls.__module__, "class_name": cls.__name__,
            "config": learning_rate_schedule.get_config(), "registered_name": None if built_in else cls.__name__}


@_export("deserialize")
def deserialize(config, custom_objects=None):
    """The schedule described by `serialize`'s dict.

    Args:
      config: the dict.
      custom_objects: {class name: class} for schedules of one's own.

    Returns:
      A new `LearningRateSchedule`.

    Raises:
      ValueError: the class is neither built in nor in `custom_objects`.

    >>> import tapeflow as tf
    >>> s = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    >>> type(tf.keras.optimizers.schedules.deserialize(tf.keras.optimizers.schedules.serialize(s))).__name__
    'ExponentialDecay'
    """
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _BUILT_IN.get(name)
    if cls is None:
        raise ValueError(f"Could not locate class '{name}'. Make sure custom classes are passed in "
                         "`custom_objects={'" f"{name}': {name}" "}`.")
    return cls.from_config(config.get("config", {}))
