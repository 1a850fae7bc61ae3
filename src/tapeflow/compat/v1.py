"""`tf.compat.v1`: TF1 graphs, placeholders, sessions, variable collections and
initializers, and `gradients` with the v1 signature; `train` holds the TF1
optimizers and the global step (optimizers/)."""

import sys as _sys
import types as _types

from tapeflow.framework.export import populate as _populate

_populate(__name__)

# `tf.compat.v1.train`: a namespace module of its own (this module is not a package)
train = _sys.modules[__name__ + ".train"] = _types.ModuleType(__name__ + ".train", "`tf.compat.v1.train`: the TF1 "
                                                             "optimizers and the global step.")
_populate(train.__name__)
