"""The Keras 3 optimizer base (`tf.keras.optimizers.Optimizer`): state, learning
rates and the `apply_gradients` loop that SGD and Adam fill with an `update_step`.

An optimizer owns variables (`variables`): `iterations` (int64), the learning
rate (float32, when given as a float) and, once `build` has run on the first
`apply_gradients`, one slot per model variable and per slot name (Adam's
"momentum" and "velocity").  All of them are `OptimizerVariable`s, named as
Keras names them ("iteration", "emb_0_momentum", path "adam/emb_0_momentum").

Updates are ordinary variable writes (`assign`, `assign_add`, `scatter_sub`),
so one `update_step` runs eagerly, inside `tf.function` (the writes become
graph ops run at every call in program order) and records nothing on tapes.
The slots are created by the first `apply_gradients`, which inside a
`tf.function` is its first trace: zeros of a known shape, so the variables
exist at once (Note [graph variables] in ops/variables.py).

IndexedSlices gradients: Note [sparse updates] in gradients.py.

Note [optimizers under a strategy]: as Keras's TensorFlow optimizer, an optimizer
remembers the strategy current when it is made, and its variables made under a
strategy's scope are mirrored (`iterations` and the learning rate aggregated
ONLY_FIRST_REPLICA, the slots placed like their variables).  `apply_gradients`
called in a replica of `strategy.run` builds the slots once (in a merge_call),
sums the gradients across the replicas (`all_reduce`), then updates each
component of each variable in one merge_call (`extended.update`); clipping and
weight decay act on each replica's own gradients first, as in Keras.  Without a
strategy the only cost is one test of the thread's strategy stack.
"""

import re
import warnings

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import variable_creation
from tapeflow.ops.core import basic_ops
from tapeflow.ops.variables import Variable
from tapeflow.distribute import distribute_lib
from tapeflow.distribute.reduce_util import ReduceOp
from tapeflow.optimizers import gradients, learning_rate_schedule as schedules
from tapeflow.optimizers.grappler_order import times_scalar


class OptimizerVariable(Variable):
    """A variable an optimizer owns, named as Keras names it: `name` has no ":0"
    suffix and `path` is "<optimizer name>/<name>"."""

    __slots__ = ("_path",)

    def __init__(self, initial_value, dtype, name, optimizer_name, aggregation=None, synchronization=None):
        super().__init__(initial_value, trainable=False, dtype=dtype, name=name, aggregation=aggregation,
                         synchronization=synchronization)
        self._path = f"{optimizer_name}/{name}"

    @property
    def name(self):
        return self._name[:-2] if self._name.endswith(":0") else self._name

    @property
    def path(self):
        return self._path

    def __repr__(self):
        value = "" if self._graph_info is not None else f", value={np.asarray(self._value)}"
        return f"<Variable path={self._path}, shape={tuple(self._value.shape)}, dtype={self.dtype.name}{value}>"


@tf_export("keras.optimizers.Optimizer", "optimizers.Optimizer")
class Optimizer:
    """Base class of the Keras optimizers: subclasses define `build` and `update_step`.

    Args:
      learning_rate: a Python float, a `LearningRateSchedule` (called with
        `iterations`) or a callable taking no arguments.
      name: the prefix of the optimizer's variable paths; the snake-case class
        name by default ("sgd", "adam").
      weight_decay, clipnorm, clipvalue, global_clipnorm, loss_scale_factor:
        as in Keras (decoupled weight decay; per-gradient norm, value or global
        norm clipping; gradients divided by the factor).
      use_ema, ema_momentum, ema_overwrite_frequency, gradient_accumulation_steps:
        accepted with their default values only.

    Raises:
      ValueError: a learning rate that is not a float, schedule or callable; an
        unknown keyword argument; more than one clipping argument.
      NotImplementedError: `use_ema=True` or `gradient_accumulation_steps`.

    >>> import tapeflow as tf
    >>> isinstance(tf.keras.optimizers.SGD(), tf.keras.optimizers.Optimizer)
    True
    """

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        if kwargs.pop("decay", None) is not None:
            warnings.warn("Argument `decay` is no longer supported and will be ignored.")
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if use_ema or gradient_accumulation_steps:
            raise NotImplementedError("tapeflow's Keras optimizers implement neither `use_ema` nor "
                                      "`gradient_accumulation_steps`; leave them at their defaults (False, None).")
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        self.name = name if name is not None else _snake_case(type(self).__name__)
        self.weight_decay, self.clipnorm, self.clipvalue = weight_decay, clipnorm, clipvalue
        self.global_clipnorm, self.loss_scale_factor = global_clipnorm, loss_scale_factor
        self.use_ema, self.ema_momentum, self.ema_overwrite_frequency = use_ema, ema_momentum, ema_overwrite_frequency
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.built = False
        self._variables = []
        self._index = {}               # model variable id (and its components' ids) -> its position in the built list
        self._trainable_variables = []
        self._distribution_strategy = distribute_lib.get_strategy()   # Note [optimizers under a strategy]
        self._iterations = self._add_variable(np.int64(0), dtypes.int64, "iteration", _FIRST_REPLICA)
        self._learning_rate = None
        self.learning_rate = _checked_learning_rate(learning_rate)

    # -- state ------------------------------------------------------------------------
    @property
    def iterations(self):
        """The number of `apply_gradients` calls so far (an int64 variable)."""
        return self._iterations

    @property
    def variables(self):
        """The optimizer's variables: iterations, the learning rate, then the slots."""
        return list(self._variables)

    @property
    def learning_rate(self):
        """The learning rate: its variable, or a schedule's or callable's current value."""
        lr = self._learning_rate
        if isinstance(lr, schedules.LearningRateSchedule):
            return lr(self._iterations)
        if callable(lr) and not isinstance(lr, Variable):
            return lr()
        return lr

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        old = self._learning_rate
        if callable(learning_rate) and not isinstance(learning_rate, (Variable, Tensor)):
            self._learning_rate = learning_rate
        elif isinstance(old, schedules.LearningRateSchedule):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` "
                            "constructor argument, hence its learning rate is not settable. If you need the learning "
                            "rate to be settable, you should instantiate the optimizer with a float `learning_rate` "
                            "argument.")
        elif isinstance(old, Variable):
            old.assign(learning_rate)
        else:       # a float at construction, or after a callable (where Keras fails)
            self._learning_rate = self._add_variable(learning_rate, dtypes.float32, "learning_rate", _FIRST_REPLICA)
        if isinstance(old, Variable) and self._learning_rate is not old:
            self._variables = [v for v in self._variables if v is not old]     # by identity: == is elementwise

    def _add_variable(self, value, dtype, name, aggregation=None):
        var = OptimizerVariable(np.asarray(value, dtype._np), dtype, name, self.name, aggregation=aggregation)
        self._variables.append(var)
        return var

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="none", layout=None, name=None):
        """A new optimizer variable of `shape`, filled by `initializer` ("zeros" or "ones").

        Args:
          shape: a fully defined shape.
          initializer: "zeros" or "ones".
          dtype: its dtype (float32 by default).
          aggregation, layout: accepted for compatibility.
          name: its name.

        Returns:
          The new `OptimizerVariable`, listed in `variables`.

        Raises:
          ValueError: another initializer, or a shape with unknown dimensions.

        >>> import tapeflow as tf
        >>> opt = tf.keras.optimizers.SGD()
        >>> opt.add_variable([2], initializer="ones", name="count").numpy()
        array([1., 1.], dtype=float32)
        """
        if initializer not in ("zeros", "ones"):
            raise ValueError(f"tapeflow's optimizers initialize their variables with 'zeros' or 'ones'; received "
                             f"initializer={initializer!r}.")
        shape = TensorShape(shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Cannot create optimizer variable '{name}' of shape {shape}: its shape must be fully "
                             "defined.")
        dtype = dtypes.as_dtype(dtype or dtypes.float32)
        fill = np.zeros if initializer == "zeros" else np.ones
        return self._add_variable(fill(shape.as_list(), dtype._np), dtype, name or "variable")

    def add_variable_from_reference(self, reference_variable, name=None, initializer="zeros"):
        """A slot variable shaped like `reference_variable`, named after it.

        Args:
          reference_variable: the model variable the slot belongs to.
          name: the slot's name ("momentum"; "var" by default).
          initializer: "zeros" or "ones".

        Returns:
          The new `OptimizerVariable` ("<variable name>_<name>", ":" and "/" as "_").

        Raises:
          ValueError: the variable's shape is not fully known, or another initializer.
        """
        base = re.sub(r"[/:]", "_", str(reference_variable.name))
        with self._distribution_strategy.extended.colocate_vars_with(reference_variable):
            return self.add_variable(reference_variable.shape, initializer, reference_variable.dtype,
                                     name=f"{base}_{name or 'var'}")

    def add_optimizer_variables(self, trainable_variables, names):
        """Slots for each variable, interleaved by variable as Keras creates them.

        Args:
          trainable_variables: the model variables.
          names: a slot name, or a list of them.

        Returns:
          A list of slots (one name), or a tuple of lists (one per name).
        """
        single = isinstance(names, str)
        names = [names] if single else list(names)
        slots = tuple([] for _ in names)
        for var in trainable_variables:
            for column, name in zip(slots, names, strict=True):
                column.append(self.add_variable_from_reference(var, name))
        return slots[0] if single else slots

    def build(self, variables):
        """Records the model variables (in order) and creates the slots; runs once."""
        for i, var in enumerate(variables):
            self._index[var._id] = i
            for component in getattr(var, "_values", ()):      # a distributed variable's
                self._index[component._id] = i
        self._trainable_variables = list(variables)
        self.built = True

    def _get_variable_index(self, variable):
        """The position of `variable` in the list the optimizer was built with (Keras's name)."""
        return self._index[variable._id]

    def _slot(self, slots, variable):
        return slots[self._index[variable._id]]

    # -- applying gradients -------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Updates each variable from its gradient and increments `iterations`.

        Args:
          grads_and_vars: an iterable of (gradient, variable) pairs, such as
            `zip(grads, variables)`; gradients are tensors, `IndexedSlices`
            (sparse updates, Note [sparse updates]) or None (skipped with a
            warning).

        Returns:
          The `iterations` variable.

        Raises:
          ValueError: no pairs, a pair that is not two items, no gradient at all,
            or a variable the optimizer was not built with.
          AttributeError: the second item of a pair is not a `tf.Variable`.

        >>> import tapeflow as tf
        >>> v = tf.Variable(1.0)
        >>> int(tf.keras.optimizers.SGD(0.5).apply_gradients([(tf.constant(2.0), v)]))
        1
        >>> float(v)
        0.0
        """
        pairs = gradients.checked_pairs(grads_and_vars)
        self.apply([g for g, _ in pairs], [v for _, v in pairs])
        return self._iterations

    def apply(self, grads, trainable_variables=None):
        """Updates `trainable_variables` (the built ones by default) from `grads`, in order."""
        grads = list(grads)
        if not grads:
            return
        replica = _strategy_replica()
        if trainable_variables is None:
            if not self.built:
                raise ValueError("When passing `grads` without `variables`, the optimizer must already be built on a "
                                 "list of variables. Call `optimizer.build(trainable_variables)` first.")
            if len(grads) != len(self._trainable_variables):
                raise ValueError(f"Received {len(grads)} gradients for the {len(self._trainable_variables)} variables "
                                 "the optimizer was built with; pass one gradient per variable.")
            variables = list(self._trainable_variables)
        else:
            variables = list(trainable_variables)
            if not self.built:
                if replica is None:
                    self.build(variables)
                else:       # once, for every replica
                    replica.merge_call(lambda _: None if self.built else self.build(variables))
            for v in variables:
                if v._id not in self._index:
                    raise ValueError(f"Unknown variable: {v}. This optimizer can only be called for the variables it "
                                     "was originally built with. When working with a new set of variables, you should "
                                     "recreate a new optimizer instance.")
        grads, variables = gradients.without_missing(grads, variables)
        if self.loss_scale_factor is not None:
            grads = [g / self.loss_scale_factor for g in grads]
        grads = gradients.clipped(grads, self.clipnorm, self.global_clipnorm, self.clipvalue)
        if self.weight_decay is not None:
            for v in variables:
                lr = basic_ops.cast(self.learning_rate, v.dtype)
                v.assign_sub(times_scalar(v, basic_ops.cast(self.weight_decay, v.dtype), lr))
        learning_rate = self.learning_rate
        if replica is None:
            for g, v in zip(grads, variables, strict=True):
                self.update_step(g, v, learning_rate)
        else:
            grads = replica.all_reduce(ReduceOp.SUM, grads)
            replica.merge_call(self._distributed_update, args=(grads, variables, learning_rate))
        for v in variables:
            if v.constraint is not None:
                v.assign(v.constraint(v))
        self._iterations.assign_add(1)

    def _distributed_update(self, strategy, grads, variables, learning_rate):
        """In cross-replica context: each variable's components updated from the summed gradients."""
        for g, v in zip(grads, variables, strict=True):
            strategy.extended.update(v, lambda var, grad, lr: self.update_step(grad, var, lr),
                                     args=(g, learning_rate), group=False)

    def update_step(self, gradient, variable, learning_rate):
        """Updates `variable` (and its slots) from one gradient; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define update_step(gradient, variable, learning_rate).")

    # -- serialization ----------------------------------------------------------------
    def get_config(self):
        """The constructor arguments as a dict (a schedule serialized, a variable learning rate as a float).

        >>> import tapeflow as tf
        >>> tf.keras.optimizers.SGD(0.5, name="sgd").get_config()["learning_rate"]
        0.5
        """
        lr = self._learning_rate
        if isinstance(lr, schedules.LearningRateSchedule):
            lr = schedules.serialize(lr)
        elif isinstance(lr, Variable):
            lr = float(np.asarray(lr._value))
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue, "use_ema": self.use_ema,
                "ema_momentum": self.ema_momentum, "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "loss_scale_factor": self.loss_scale_factor,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A new optimizer (no state) made from `get_config()`'s dict."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"], custom_objects)
        return cls(**config)


# -- helpers ------------------------------------------------------------------------------

_FIRST_REPLICA = variable_creation.VariableAggregation.ONLY_FIRST_REPLICA


def _strategy_replica():
    """The ReplicaContext of a strategy's replica running this step; None without one (one
    test of the thread's strategy stack: Note [optimizers under a strategy])."""
    if not state.strategies:
        return None
    ctx = distribute_lib.get_replica_context()
    return None if ctx is None or ctx is distribute_lib._default_replica_context() else ctx


def _snake_case(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _checked_learning_rate(learning_rate):
    if isinstance(learning_rate, schedules.LearningRateSchedule) or (
            callable(learning_rate) and not isinstance(learning_rate, (Variable, Tensor))):
        return learning_rate
    if not isinstance(learning_rate, float):
        raise ValueError("Argument `learning_rate` should be float, or an instance of LearningRateSchedule, or a "
                         "callable (that takes in the current iteration value and returns the corresponding learning "
                         f"rate value). Received instead: learning_rate={learning_rate}")
    return learning_rate
