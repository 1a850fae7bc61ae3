"""Eager autodiff: the tape (tape.py), GradientTape (backprop.py), ForwardAccumulator
(forwardprop.py), Jacobians (jacobians.py) and tf.vectorized_map (vectorization.py)."""

from tapeflow.eager import backprop, forwardprop, jacobians, vectorization  # noqa: F401
