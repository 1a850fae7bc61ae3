"""`tf.autodiff`: ForwardAccumulator (and GradientTape, as TensorFlow exports it there)."""

from tapeflow.framework.export import populate as _populate

_populate(__name__)
