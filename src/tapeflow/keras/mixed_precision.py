"""`tf.keras.mixed_precision`: LossScaleOptimizer (exported here by mixed_precision/)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
