"""`tf.optimizers.schedules`: LearningRateSchedule, ExponentialDecay, PiecewiseConstantDecay."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
