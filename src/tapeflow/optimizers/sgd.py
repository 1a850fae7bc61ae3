"""`tf.keras.optimizers.SGD`: gradient descent, with momentum and Nesterov momentum."""

from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.ops.core import basic_ops
from tapeflow.optimizers.gradients import dense, scaled
from tapeflow.optimizers.optimizer import Optimizer


@tf_export("keras.optimizers.SGD", "optimizers.SGD")
class SGD(Optimizer):
    """Gradient descent: `w -= lr * g`; with momentum `m = momentum * m - lr * g`, then
    `w += m` (or `w += momentum * m - lr * g` with `nesterov=True`).

    Args:
      learning_rate: a float, a `LearningRateSchedule` or a no-argument callable.
      momentum: a Python float in [0, 1]; 0 keeps no slot.
      nesterov: whether to use Nesterov momentum.
      name: the prefix of the variable paths ("sgd").
      **kwargs: the base `Optimizer`'s arguments (clipping, weight decay).

    Raises:
      ValueError: `momentum` is not a float in [0, 1], or a bad learning rate.

    Plain SGD updates only the rows an `IndexedSlices` gradient touches; with
    momentum the update is dense (Note [sparse updates] in gradients.py).

    >>> import tapeflow as tf
    >>> w = tf.Variable([1.0, 2.0])
    >>> opt = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     _ = opt.apply_gradients([(tf.constant([1.0, -1.0]), w)])
    >>> w.numpy()
    array([0.71, 2.29], dtype=float32)
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None, gradient_accumulation_steps=None,
                 name=None, **kwargs):
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency, loss_scale_factor=loss_scale_factor,
                         gradient_accumulation_steps=gradient_accumulation_steps, name=name, **kwargs)
        if not isinstance(momentum, float) or momentum < 0 or momentum > 1:
            raise ValueError(f"`momentum` must be a float between [0, 1]. Received: momentum={momentum!r}")
        self.momentum = momentum
        self.nesterov = nesterov

    def build(self, variables):
        """Creates the "momentum" slots (none when momentum is 0)."""
        if self.built:
            return
        super().build(variables)
        self.momentums = self.add_optimizer_variables(variables, "momentum") if self.momentum != 0 else []

    def update_step(self, gradient, variable, learning_rate):
        """One SGD update of `variable` (and its momentum slot)."""
        lr = basic_ops.cast(learning_rate, variable.dtype)
        g = basic_ops.cast(gradient, variable.dtype)
        if self.momentum == 0:
            step = scaled(g, lr)
            if isinstance(step, IndexedSlices):
                variable.scatter_sub(step)
            else:
                variable.assign_sub(step)
            return
        m = self._slot(self.momentums, variable)
        momentum = basic_ops.cast(self.momentum, variable.dtype)
        m.assign(m * momentum - dense(scaled(g, lr), variable))
        if self.nesterov:
            variable.assign_add(m * momentum - dense(scaled(g, lr), variable))
        else:
            variable.assign_add(m)

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config
