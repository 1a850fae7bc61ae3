"""Products of a tensor with scalars in the order TensorFlow computes them.

Note [grappler order]: in a graph (a TF1 graph or a `tf.function`) TensorFlow's
arithmetic optimizer rewrites a chain of multiplications so that the small
operands meet first: `(x * y) * c` with a scalar `c` runs as `x * (y * c)`.
Floating-point products are not associative, so the same update differs by an
ulp between eager execution and graphs.  The optimizers follow suit where
TensorFlow's own updates contain such a chain (TF1 sparse Adam's `g * g *
(1 - beta2)`, Keras weight decay's `w * decay * lr`), so that their numbers
match TensorFlow's bit for bit in every mode.
"""

from tapeflow.framework.context import state


def times_scalar(x, y, c):
    """`x * y * c` for a scalar `c`: `(x * y) * c` eagerly, `x * (y * c)` in graphs (Note [grappler order])."""
    return x * (y * c) if state.graphs else (x * y) * c
