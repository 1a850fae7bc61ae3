"""`tf.keras`: tapeflow covers Keras's optimizers only (`tf.keras.optimizers.SGD`,
`Adam`, `schedules`) and `tf.keras.mixed_precision.LossScaleOptimizer`; any other
attribute is an AttributeError saying so."""

from tapeflow.keras import mixed_precision, optimizers  # noqa: F401


def __getattr__(name):
    raise AttributeError(f"tapeflow.keras has no attribute '{name}': tapeflow covers Keras optimizers only "
                         "(tf.keras.optimizers.SGD, Adam) and tf.keras.mixed_precision.LossScaleOptimizer")
