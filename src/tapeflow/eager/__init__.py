"""Eager autodiff: the tape (tape.py), GradientTape (backprop.py) and ForwardAccumulator
(forwardprop.py)."""

from tapeflow.eager import backprop, forwardprop, jacobians  # noqa: F401
