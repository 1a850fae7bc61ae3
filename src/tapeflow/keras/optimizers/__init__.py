"""`tf.keras.optimizers`: Optimizer, SGD, Adam and `schedules` (optimizers/)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)

from tapeflow.keras.optimizers import schedules  # noqa: E402,F401


def __getattr__(name):
    raise AttributeError(f"tapeflow.keras.optimizers has no attribute '{name}': tapeflow covers the Keras "
                         "optimizers SGD and Adam only (and their learning-rate schedules)")
