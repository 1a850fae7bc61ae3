"""`tf.compat.v1.train`: GradientDescentOptimizer, MomentumOptimizer, AdamOptimizer,
Optimizer and the global step (get_global_step, create_global_step,
get_or_create_global_step).

`compat/v1.py` is a module, not a package, so this namespace module lives with
the optimizers and is exported into `tf.compat.v1` as the attribute `train`
(as mixed_precision/ exports `tf.compat.v1.mixed_precision`).
"""

import sys

from tapeflow.optimizers import training_util as _training_util, v1_optimizers as _v1_optimizers  # noqa: F401
from tapeflow.framework.export import exported as _exported, tf_export as _tf_export

vars(sys.modules[__name__]).update(_exported("compat.v1.train"))
_tf_export("compat.v1.train")(sys.modules[__name__])
