"""`tf.mixed_precision`: loss scales (loss_scale.py) and LossScaleGradientTape
(loss_scale_gradient_tape.py); the same module is `tf.compat.v1.mixed_precision`."""

import sys

from tapeflow.mixed_precision import loss_scale as _loss_scale  # noqa: F401
from tapeflow.mixed_precision import loss_scale_gradient_tape as _loss_scale_gradient_tape  # noqa: F401
from tapeflow.framework.export import populate as _populate, tf_export as _tf_export

_populate(__name__)
_tf_export("compat.v1.mixed_precision")(sys.modules[__name__])

from tapeflow.mixed_precision import experimental  # noqa: E402,F401
