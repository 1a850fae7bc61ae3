"""`tf.nn`: neural-network ops."""

from tapeflow.ops import conv_ops as _conv_ops
from tapeflow.ops import linalg_ops as _linalg_ops
from tapeflow.ops import math_ops as _math_ops
from tapeflow.ops import nn_ops as _nn_ops

# tf.nn re-exports activations defined with the math and linalg families;
# each is taken only once its family defines it.
_SOURCES = (
    (_nn_ops, _nn_ops.NN_NAMES),
    (_conv_ops, _conv_ops.NN_NAMES),
    (_math_ops, ("sigmoid", "tanh", "softplus", "softsign", "top_k", "in_top_k")),
    (_linalg_ops, ("l2_normalize",)),
)
for _module, _names in _SOURCES:
    for _name in _names:
        if hasattr(_module, _name):
            globals()[_name] = getattr(_module, _name)
del _module, _names, _name, _SOURCES
