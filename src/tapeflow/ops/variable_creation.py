"""What `tf.Variable` takes from tf.distribute: the synchronization and aggregation enums
a variable stores, and variable creator scopes (Note [variable creators]), through which a
strategy's `scope()` turns `tf.Variable(...)` into a distributed variable."""

import contextlib
import enum
import functools
import inspect

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export


@tf_export("VariableSynchronization")
class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies are synchronized (tf.distribute): AUTO lets the
    strategy choose (ON_WRITE), ON_WRITE on every update, ON_READ when read across replicas."""
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


@tf_export("VariableAggregation")
class VariableAggregation(enum.Enum):
    """How a distributed variable combines the updates of its replicas (tf.distribute)."""
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


VariableAggregation.__name__ = VariableAggregation.__qualname__ = "VariableAggregationV2"   # TF's class name


def _sync_aggregation_trainable(synchronization, aggregation, trainable, name):
    """The enums a variable stores and its `trainable` (False by default when synchronized ON_READ).

    Raises:
      ValueError: a value that is not one of the enums (nor their integer values).
    """
    try:
        aggregation = VariableAggregation.NONE if aggregation is None else VariableAggregation(
            getattr(aggregation, "value", aggregation))
    except ValueError:
        raise ValueError(f"Invalid variable aggregation mode: {aggregation} for variable: {name}") from None
    try:
        synchronization = VariableSynchronization.AUTO if synchronization is None else VariableSynchronization(
            getattr(synchronization, "value", synchronization))
    except ValueError:
        raise ValueError(f"Invalid variable synchronization mode: {synchronization} for variable: {name}") from None
    if trainable is None:
        trainable = synchronization is not VariableSynchronization.ON_READ
    return synchronization, aggregation, bool(trainable)


class _VariableCreation(type):
    """Note [variable creators]: while `tf.variable_creator_scope`s are active, making a
    variable calls the innermost creator as `creator(next_creator, **kwargs)` (all the
    constructor's arguments by name); `next_creator` is the next scope's creator, and the
    last one constructs the class asked for.  A creator may change the arguments, make
    several variables or return another object (tf.distribute's strategies return a
    distributed variable).  Classes with `_through_creators = False` (the stand-ins made
    by graph writes, distributed variables) are constructed directly."""

    def __call__(cls, *args, **kwargs):
        if state.variable_creators and cls._through_creators:
            return _create_through_creators(cls, args, kwargs)
        return super().__call__(*args, **kwargs)


def _create_through_creators(cls, args, kwargs):
    bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments.pop(next(iter(arguments)))            # self
    arguments.update(arguments.pop("kwargs", {}))
    creator = functools.partial(type.__call__, cls)
    for outer in state.variable_creators:           # outermost first: the innermost is called first
        creator = functools.partial(outer, creator)
    return creator(**arguments)


@tf_export("variable_creator_scope", names_op=False)
@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """Makes `variable_creator(next_creator, **kwargs)` create the variables made inside
    (Note [variable creators]); scopes nest, the innermost creator called first.

    >>> import tapeflow as tf
    >>> def doubled(next_creator, **kwargs):
    ...     kwargs["initial_value"] = kwargs["initial_value"] * 2
    ...     return next_creator(**kwargs)
    >>> with tf.variable_creator_scope(doubled):
    ...     v = tf.Variable(1.0)
    >>> float(v)
    2.0
    """
    state.variable_creators.append(variable_creator)
    try:
        yield
    finally:
        state.variable_creators.pop()
