"""The per-thread distribution mode: which strategy is current, whether the thread runs in
a replica context or in the cross-replica context, and which component `extended.update`
is updating.  What both the strategies (distribute_lib.py) and the distributed values
(values.py) read, below both.

Note [thread modes]: at any point a thread is either in a *replica context* (inside
`strategy.run`, or the default replica context outside every strategy) or in the
*cross-replica context* (inside `strategy.scope()`, or inside a `merge_call`'s
function).  The mode is the top of the per-thread stack `state.strategies`
(framework/context.py) of `ThreadMode`s: entering a scope pushes the strategy's
cross-replica mode, a replica thread pushes its ReplicaContext's mode, a merge_call
pushes the cross-replica mode again.  An empty stack is the default mode: the default
strategy and its replica context, replica 0 of 1 (distribute_lib.py builds those
objects; here the default mode is just the empty stack).  Every `Strategy` and
`ReplicaContext` method checks the mode it needs and raises TensorFlow's RuntimeErrors
otherwise (a `merge_call` in cross-replica context, `run` inside `run`, two strategies'
scopes nested).  Replica threads start from a copy of their caller's stack
(distribute/mirrored_strategy.py).
"""

import threading

from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export


class ThreadMode:
    """One entry of the stack: the current strategy, itself again in cross-replica context
    (else None), and the replica context in a replica context (else None)."""

    __slots__ = ("strategy", "cross_replica_context", "replica_context")

    def __init__(self, strategy, cross, replica):
        self.strategy, self.cross_replica_context, self.replica_context = strategy, cross, replica


def current_mode():
    """The thread's innermost mode; None in the default mode (an empty stack)."""
    stack = state.strategies
    return stack[-1] if stack else None


_update_replica = threading.local()      # the component `extended.update` is updating, per thread


def get_update_replica_id():
    """The replica whose component `extended.update` is updating now (None outside an update)."""
    return getattr(_update_replica, "current", None)


class UpdateContext:
    """Inside `extended.update`, per component: reads of distributed values give that component."""

    def __init__(self, replica_id):
        self._replica_id, self._old = replica_id, None

    def __enter__(self):
        self._old = get_update_replica_id()
        _update_replica.current = self._replica_id

    def __exit__(self, *exc):
        _update_replica.current = self._old


def current_replica_id():
    """The local replica the mode selects (Note [distributed variables] in values.py): the
    replica context's, else the component `extended.update` is updating, else None
    (cross-replica context); 0 in the default mode."""
    mode = current_mode()
    if mode is None:
        return 0
    if mode.replica_context is not None:
        return mode.replica_context._replica_id
    return get_update_replica_id()


@tf_export("distribute.in_cross_replica_context")
def in_cross_replica_context():
    """Whether the thread is in cross-replica context (inside `scope()` or a `merge_call`'s function).

    >>> import tapeflow as tf
    >>> tf.distribute.in_cross_replica_context()
    False
    """
    mode = current_mode()
    return mode is not None and mode.cross_replica_context is not None


@tf_export("distribute.has_strategy")
def has_strategy():
    """Whether a strategy other than the default one is current.

    >>> import tapeflow as tf
    >>> tf.distribute.has_strategy()
    False
    """
    mode = current_mode()
    return mode is not None and not mode.strategy._is_default


class enter_or_assert_strategy:
    """Enters `strategy`'s scope when no strategy is current, else checks it is the current one."""

    def __init__(self, strategy):
        self._strategy, self._scope = strategy, None

    def __enter__(self):
        if has_strategy():
            current = current_mode().strategy
            if current is not self._strategy:
                raise RuntimeError(f"Mixing different tf.distribute.Strategy objects: {current} is not "
                                   f"{self._strategy}")
        else:
            self._scope = self._strategy.scope()
            self._scope.__enter__()

    def __exit__(self, *exc):
        if self._scope is not None:
            self._scope.__exit__(*exc)
