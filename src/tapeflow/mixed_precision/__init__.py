"""`tf.mixed_precision`: loss scales (loss_scale.py), LossScaleGradientTape
(loss_scale_gradient_tape.py) and the loss-scale optimizers (loss_scale_optimizer.py:
Keras's, exported to `tf.keras.mixed_precision`, and TF1's
MixedPrecisionLossScaleOptimizer); the same module is `tf.compat.v1.mixed_precision`.
Why a step was skipped: nonfinite.py."""

import sys

from tapeflow.mixed_precision import loss_scale as _loss_scale  # noqa: F401
from tapeflow.mixed_precision import loss_scale_gradient_tape as _loss_scale_gradient_tape  # noqa: F401
from tapeflow.mixed_precision import loss_scale_optimizer as _loss_scale_optimizer  # noqa: F401
from tapeflow.framework.export import populate as _populate, tf_export as _tf_export

_populate(__name__)
_tf_export("compat.v1.mixed_precision")(sys.modules[__name__])

from tapeflow.mixed_precision import experimental  # noqa: E402,F401
