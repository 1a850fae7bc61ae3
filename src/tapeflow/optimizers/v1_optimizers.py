"""The TF1 optimizers of `tf.compat.v1.train`: GradientDescentOptimizer,
MomentumOptimizer and AdamOptimizer.

Each update is written with variable writes so that it gives the numbers of
TensorFlow's fused kernels (`ResourceApplyAdam`, `ResourceSparseApplyMomentum`,
...): the same float operations in the same order, in the variable's dtype.
Hyperparameters are converted to tensors by `_prepare` (Python floats become
float32, then are cast to each variable's dtype, as TensorFlow does).
"""

from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.ops import math_ops, scatter_ops, unary_ops
from tapeflow.ops.core import basic_ops
from tapeflow.graph.scopes import control_dependencies
from tapeflow.graph.session import group_ops
from tapeflow.optimizers.grappler_order import times_scalar
from tapeflow.optimizers.v1_optimizer import Optimizer, as_tensor

cast = basic_ops.cast


@tf_export("compat.v1.train.GradientDescentOptimizer")
class GradientDescentOptimizer(Optimizer):
    """`var -= learning_rate * grad`; a sparse gradient's rows are subtracted one by one.

    Args:
      learning_rate: a float, a tensor or (eagerly) a no-argument callable.
      use_locking: accepted for compatibility.
      name: the name of the update ops ("GradientDescent").

    >>> import tapeflow as tf
    >>> w = tf.Variable([1.0, 2.0])
    >>> tf.compat.v1.train.GradientDescentOptimizer(0.5).apply_gradients([(tf.constant([1.0, 1.0]), w)])
    >>> w.numpy()
    array([0.5, 1.5], dtype=float32)
    """

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self):
        self._learning_rate_tensor = as_tensor(self._learning_rate)

    def _resource_apply_dense(self, grad, var):
        return var.assign_sub(grad * cast(self._learning_rate_tensor, var.dtype), read_value=False)

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices):
        # linear in the gradient: repeated rows need no summing first (Note [duplicate indices])
        return var.scatter_sub(IndexedSlices(grad * cast(self._learning_rate_tensor, var.dtype), indices))


@tf_export("compat.v1.train.MomentumOptimizer")
class MomentumOptimizer(Optimizer):
    """`accum = momentum * accum + grad`, then `var -= lr * accum` (with `use_nesterov`,
    `var -= lr * grad + lr * momentum * accum`).

    A sparse gradient updates only its rows of `var` and of the accumulator,
    repeated indices summed first (Note [duplicate indices] in v1_optimizer.py).

    Args:
      learning_rate: a float, a tensor or (eagerly) a no-argument callable.
      momentum: the same kinds of value.
      use_locking: accepted for compatibility.
      name: the name of the update ops and the slots' suffix ("Momentum").
      use_nesterov: use Nesterov momentum.

    >>> import tapeflow as tf
    >>> w = tf.Variable(1.0)
    >>> opt = tf.compat.v1.train.MomentumOptimizer(0.1, momentum=0.5)
    >>> for _ in range(2):
    ...     opt.apply_gradients([(tf.constant(1.0), w)])
    >>> round(float(w), 6), opt.get_slot(w, "momentum").name
    (0.75, 'Variable/Momentum:0')
    """

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self):
        self._learning_rate_tensor = as_tensor(self._learning_rate)
        self._momentum_tensor = as_tensor(self._momentum)

    def _hyper(self, var):
        return cast(self._learning_rate_tensor, var.dtype), cast(self._momentum_tensor, var.dtype)

    def _resource_apply_dense(self, grad, var):
        lr, mu = self._hyper(var)
        accum = self.get_slot(var, "momentum")
        accum = accum.assign(accum * mu + grad)         # reads of the result wait for the write
        if self._use_nesterov:
            return var.assign_sub(grad * lr + accum * mu * lr, read_value=False)
        return var.assign_sub(lr * accum, read_value=False)

    def _resource_apply_sparse(self, grad, var, indices):
        lr, mu = self._hyper(var)
        accum = self.get_slot(var, "momentum")
        rows = scatter_ops.gather(accum, indices) * mu + grad
        accum_write = accum.scatter_update(IndexedSlices(rows, indices))
        delta = grad * lr + rows * (lr * mu) if self._use_nesterov else lr * rows
        var_write = var.scatter_sub(IndexedSlices(delta, indices))
        return group_ops([accum_write, var_write], None)


@tf_export("compat.v1.train.AdamOptimizer")
class AdamOptimizer(Optimizer):
    """Adam in TF1's formulation: `lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)`,
    `m = beta1 * m + (1 - beta1) * g`, `v = beta2 * v + (1 - beta2) * g^2`,
    `var -= lr_t * m / (sqrt(v) + epsilon)`.

    The powers `beta1^t`, `beta2^t` are the variables "beta1_power" and
    "beta2_power", multiplied by the betas after each update.  A sparse
    gradient (repeated indices summed first) decays all of `m` and `v` and adds
    to its rows, then updates all of `var`, as TensorFlow's sparse Adam does.

    Args:
      learning_rate, beta1, beta2, epsilon: floats, tensors or (eagerly)
        no-argument callables.
      use_locking: accepted for compatibility.
      name: the name of the update ops and the slots' suffix ("Adam").

    >>> import tapeflow as tf
    >>> w = tf.Variable([1.0, 2.0], name="w")
    >>> opt = tf.compat.v1.train.AdamOptimizer(0.1)
    >>> opt.apply_gradients([(tf.constant([1.0, -1.0]), w)])
    >>> w.numpy().round(4), [v.name for v in opt.variables()]
    (array([0.9, 2.1], dtype=float32), ['beta1_power:0', 'beta2_power:0', 'w/Adam:0', 'w/Adam_1:0'])
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        self._non_slot_variable("beta1_power", self._beta1)
        self._non_slot_variable("beta2_power", self._beta2)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self):
        self._lr_t, self._beta1_t = as_tensor(self._lr), as_tensor(self._beta1)
        self._beta2_t, self._epsilon_t = as_tensor(self._beta2), as_tensor(self._epsilon)

    def _hyper(self, var):
        """(step size lr_t, beta1, beta2, epsilon) in the variable's dtype."""
        dtype = var.dtype
        beta1_power = cast(self._non_slot_variable("beta1_power"), dtype)
        beta2_power = cast(self._non_slot_variable("beta2_power"), dtype)
        lr = cast(self._lr_t, dtype) * unary_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        return lr, cast(self._beta1_t, dtype), cast(self._beta2_t, dtype), cast(self._epsilon_t, dtype)

    def _resource_apply_dense(self, grad, var):
        lr, beta1, beta2, epsilon = self._hyper(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m = m.assign_add((grad - m) * (1 - beta1))
        v = v.assign_add((math_ops.square(grad) - v) * (1 - beta2))
        return var.assign_sub((m * lr) / (unary_ops.sqrt(v) + epsilon), read_value=False)

    def _resource_apply_sparse(self, grad, var, indices):
        lr, beta1, beta2, epsilon = self._hyper(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m = _decay_then_add(m, beta1, grad * (1 - beta1), indices)
        v = _decay_then_add(v, beta2, times_scalar(grad, grad, 1 - beta2), indices)
        return var.assign_sub(lr * m / (unary_ops.sqrt(v) + epsilon), read_value=False)

    def _finish(self, update_ops, name):
        beta1_power = self._non_slot_variable("beta1_power")
        beta2_power = self._non_slot_variable("beta2_power")
        with control_dependencies([op for op in update_ops if op is not None]):
            powers = [beta1_power.assign(beta1_power * self._beta1_t, read_value=False),
                      beta2_power.assign(beta2_power * self._beta2_t, read_value=False)]
        return group_ops(update_ops + powers, name)


def _decay_then_add(slot, decay, rows, indices):
    """slot = slot * decay, then its rows `indices` += rows; returns the slot to read after both."""
    decayed = slot.assign(slot * decay)
    with control_dependencies([decayed]):
        return slot.scatter_add(IndexedSlices(rows, indices))
