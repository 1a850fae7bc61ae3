"""`tf.keras.optimizers.Adam`: adaptive moment estimation, Keras 3's formulation."""

from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.ops import math_ops, unary_ops
from tapeflow.ops.core import basic_ops
from tapeflow.optimizers.gradients import dense
from tapeflow.optimizers.optimizer import Optimizer


@tf_export("keras.optimizers.Adam", "optimizers.Adam")
class Adam(Optimizer):
    """Adam with the bias corrections folded into the step size:
    `alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)`, `m += (g - m) * (1 - beta_1)`,
    `v += (g*g - v) * (1 - beta_2)`, `w -= alpha * m / (sqrt(v) + epsilon)` at step
    `t = iterations + 1` (`epsilon` is the paper's "epsilon hat").

    Args:
      learning_rate: a float, a `LearningRateSchedule` or a no-argument callable.
      beta_1, beta_2: the decay rates of the first and second moments.
      epsilon: added to `sqrt(v)`.
      amsgrad: divide by the running maximum of `v` (a "velocity_hat" slot).
      name: the prefix of the variable paths ("adam").
      **kwargs: the base `Optimizer`'s arguments (clipping, weight decay).

    Raises:
      ValueError: a bad learning rate or an unknown keyword argument.

    An `IndexedSlices` gradient updates every row of the slots (Note [sparse
    updates] in gradients.py).

    >>> import tapeflow as tf
    >>> w = tf.Variable([1.0, 2.0])
    >>> opt = tf.keras.optimizers.Adam(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(tf.constant([1.0, -1.0]), w)])
    >>> w.numpy().round(4)
    array([0.9, 2.1], dtype=float32)
    >>> [v.name for v in opt.variables]
    ['iteration', 'learning_rate', 'Variable_0_momentum', 'Variable_0_velocity']
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, use_ema=False,
                 ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, use_ema=use_ema, ema_momentum=ema_momentum,
                         ema_overwrite_frequency=ema_overwrite_frequency, loss_scale_factor=loss_scale_factor,
                         gradient_accumulation_steps=gradient_accumulation_steps, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def build(self, variables):
        """Creates the "momentum" and "velocity" slots (and "velocity_hat" with amsgrad)."""
        if self.built:
            return
        super().build(variables)
        self._momentums, self._velocities = self.add_optimizer_variables(variables, ["momentum", "velocity"])
        if self.amsgrad:
            self._velocity_hats = self.add_optimizer_variables(variables, "velocity_hat")

    def update_step(self, gradient, variable, learning_rate):
        """One Adam update of `variable` and its slots."""
        dtype = variable.dtype
        lr = basic_ops.cast(learning_rate, dtype)
        g = basic_ops.cast(gradient, dtype)
        t = basic_ops.cast(self._iterations + 1, dtype)
        beta_1_power = math_ops.pow(basic_ops.cast(self.beta_1, dtype), t)
        beta_2_power = math_ops.pow(basic_ops.cast(self.beta_2, dtype), t)
        alpha = lr * unary_ops.sqrt(1 - beta_2_power) / (1 - beta_1_power)
        m = self._slot(self._momentums, variable)
        v = self._slot(self._velocities, variable)
        # a sparse g is densified here; its square is taken row by row first (Note [sparse updates])
        g_squared = IndexedSlices(math_ops.square(g.values), g.indices, g.dense_shape) if isinstance(
            g, IndexedSlices) else math_ops.square(g)
        m.assign_add((dense(g, variable) - m) * (1 - self.beta_1))
        v.assign_add((dense(g_squared, variable) - v) * (1 - self.beta_2))
        if self.amsgrad:
            v_hat = self._slot(self._velocity_hats, variable)
            v_hat.assign(math_ops.maximum(v_hat, v))
            v = v_hat
        variable.assign_sub((m * alpha) / (unary_ops.sqrt(v) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "amsgrad": self.amsgrad})
        return config
