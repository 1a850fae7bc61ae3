"""`tf.optimizers`: the Keras optimizers SGD and Adam (the same classes as
`tf.keras.optimizers`) and `schedules`.

The implementation lives here too: optimizer.py (the Keras base: state,
learning rates, `apply_gradients`), sgd.py, adam.py, learning_rate_schedule.py,
and the TF1 optimizers of `tf.compat.v1.train` (v1_optimizer.py, the base;
v1_optimizers.py; training_util.py, the global step; compat_v1_train.py, the
namespace).
"""

from tapeflow.optimizers import adam as _adam, sgd as _sgd  # noqa: F401
from tapeflow.optimizers import compat_v1_train as _compat_v1_train  # noqa: F401  (tf.compat.v1.train)
from tapeflow.framework.export import populate as _populate

_populate(__name__)

from tapeflow.optimizers import schedules  # noqa: E402,F401
