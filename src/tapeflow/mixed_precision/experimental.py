"""`tf.mixed_precision.experimental`: LossScale, FixedLossScale, DynamicLossScale,
LossScaleGradientTape."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
