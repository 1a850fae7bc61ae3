"""TF1's shared variables: `tf.compat.v1.get_variable` and `variable_scope`.

Note [variable scopes]: a variable scope names the variables `get_variable`
makes ("layer/w:0") and says whether they are made or shared.  Each graph
keeps a store (`_Store`): its current scope, the variables made by name, and
how often each scope name was opened (unique `default_name`s); executing
eagerly, the process's default graph's store serves.  `get_variable` in a scope of reuse False
makes a variable and refuses a name already made; reuse True returns the one
made and refuses a new name; `AUTO_REUSE` does either; sub-scopes inherit
reuse True.  As TensorFlow's, each error is a ValueError naming the variable,
and sharing checks the shape and dtype.  Executing eagerly no variable is
shared: each call makes a new one (TensorFlow's behaviour outside an
EagerVariableStore), and scopes reuse as AUTO_REUSE.  A variable scope also
opens a name scope of its name (made unique: "layer_1"; re-entering a scope
object opens a new one too), while the variable names ignore name scopes.
"""

import contextlib
import enum

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops.variables import Variable
from tapeflow.graph.default_graph import process_default_graph
from tapeflow.graph.scopes import name_scope
from tapeflow.compat import initializers


class _ReuseMode(enum.Enum):
    """`tf.compat.v1.AUTO_REUSE`: share a variable when it exists, make it otherwise."""
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
tf_export("compat.v1.AUTO_REUSE")(AUTO_REUSE)


@tf_export("compat.v1.VariableScope")
class VariableScope:
    """A variable scope: its name, reuse, and the defaults of `get_variable` inside.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     with tf.compat.v1.variable_scope("layer") as scope:
    ...         w = tf.compat.v1.get_variable("w", [2], initializer=tf.compat.v1.zeros_initializer())
    ...     scope.name, scope.original_name_scope, w.name
    ('layer', 'layer/', 'layer/w:0')
    """

    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None, partitioner=None,
                 custom_getter=None, name_scope="", dtype=dtypes.float32, use_resource=None, constraint=None):
        self._name = name
        self._reuse = AUTO_REUSE if not state.graphs else reuse      # eagerly: Note [variable scopes]
        self._initializer = initializer
        self._dtype = dtypes.as_dtype(dtype)
        self._name_scope = name_scope
        self._use_resource = use_resource
        self._constraint = constraint
        _unsupported(regularizer=regularizer, caching_device=caching_device, partitioner=partitioner,
                     custom_getter=custom_getter)

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)
    regularizer = caching_device = partitioner = custom_getter = property(lambda self: None)

    def reuse_variables(self):
        """Shares variables from now on in this scope (reuse True)."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_dtype(self, dtype):
        self._dtype = dtypes.as_dtype(dtype)

    def get_variable(self, name, shape=None, dtype=None, initializer=None, trainable=None, **kwargs):
        """`get_variable` in this scope (its name, reuse and defaults)."""
        return _get_variable(self, name, shape, dtype, initializer, trainable, kwargs)


class _Store:
    """What one graph keeps for `get_variable` (Note [variable scopes])."""

    def __init__(self):
        self.scope = VariableScope(False)
        self.variables = {}            # full name -> variable
        self.counts = {}               # scope name -> times it was opened (unique default names)


def _store():
    """The store of the innermost non-function graph; executing eagerly, the process's default
    graph's, as TensorFlow's (a root scope first used eagerly keeps reuse AUTO_REUSE there)."""
    graph = next((g for g in reversed(state.graphs) if not g.building_function), None) or process_default_graph()
    store = graph.__dict__.get("_v1_variable_store")
    if store is None:
        store = graph.__dict__["_v1_variable_store"] = _Store()
    return store


@tf_export("compat.v1.get_variable_scope")
def get_variable_scope():
    """The current VariableScope (the root one, named "", outside any `variable_scope`).

    >>> import tapeflow as tf
    >>> tf.compat.v1.get_variable_scope().name
    ''
    """
    return _store().scope


@tf_export("compat.v1.variable_scope", names_op=False)
class variable_scope:
    """Opens a variable scope (and a name scope) for `get_variable` (Note [variable scopes]).

    Args:
      name_or_scope: a name, or a VariableScope to re-enter (its name scope too); None
        takes `default_name`, made unique ("block", "block_1").
      default_name: the name when `name_or_scope` is None.
      values: unused (TF1's signature).
      initializer: the default initializer of `get_variable` inside.
      reuse: True (share), AUTO_REUSE (share or make), None or False (inherit: sub-scopes
        of a sharing scope share).
      dtype: the default dtype of `get_variable` inside.
      auxiliary_name_scope: whether to open a name scope too.

    Raises:
      TypeError: neither `name_or_scope` nor `default_name` is given.
      ValueError: `reuse` is another value; `default_name` with `reuse=True`.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     with tf.compat.v1.variable_scope("net", reuse=tf.compat.v1.AUTO_REUSE):
    ...         a = tf.compat.v1.get_variable("w", [1])
    ...         b = tf.compat.v1.get_variable("w", [1])
    ...     a is b, a.name
    (True, 'net/w:0')
    """

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None, reuse=None, dtype=None,
                 use_resource=None, constraint=None, auxiliary_name_scope=True):
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if reuse is False:                       # TF1 has no non-inheriting scopes: False is None
            reuse = None
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise ValueError("The reuse parameter must be True or False or None.")
        if default_name is not None and name_or_scope is None and reuse is True:
            raise ValueError("default_name cannot be used with reuse=True.")
        if not isinstance(name_or_scope, (str, VariableScope, type(None))):
            raise TypeError(f"VariableScope: name_or_scope must be a string or VariableScope, got {name_or_scope!r}.")
        _unsupported(regularizer=regularizer, caching_device=caching_device, partitioner=partitioner,
                     custom_getter=custom_getter)
        self._args = (name_or_scope, default_name, initializer, reuse, dtype, use_resource, constraint,
                      auxiliary_name_scope)
        self._exits = []

    def __enter__(self):
        name_or_scope, default_name, initializer, reuse, dtype, use_resource, constraint, auxiliary = self._args
        store = _store()
        old = store.scope
        stack = contextlib.ExitStack()
        if isinstance(name_or_scope, VariableScope):      # re-entered: its name and defaults; as TF's, a
            template, name, ns = name_or_scope, name_or_scope.name, name_or_scope.original_name_scope
            if auxiliary and name:                        # new name scope of its name ("other/sc", "sc_1")
                stack.enter_context(name_scope(name))
            reuse = reuse or template.reuse
        else:
            leaf = name_or_scope if name_or_scope is not None else _unique(store, old.name, default_name)
            template, name = old, f"{old.name}/{leaf}" if old.name else leaf
            ns = stack.enter_context(name_scope(leaf)) if auxiliary else old.original_name_scope
            reuse = reuse or old.reuse                    # sub-scopes inherit sharing
        store.counts[name] = store.counts.get(name, 0) + 1
        new = VariableScope(reuse, name, initializer if initializer is not None else template.initializer,
                            name_scope=ns, dtype=dtype if dtype is not None else template.dtype,
                            use_resource=use_resource if use_resource is not None else template.use_resource,
                            constraint=constraint if constraint is not None else template.constraint)
        store.scope = new
        stack.callback(setattr, store, "scope", old)
        self._exits.append(stack)
        return new

    def __exit__(self, *exc):
        return self._exits.pop().__exit__(*exc)


def _unique(store, parent, default_name):
    """`default_name`, or with the first suffix "_1", "_2"... no scope opened so far has."""
    base = f"{parent}/{default_name}" if parent else default_name
    leaf, index = default_name, 0
    while store.counts.get(f"{base}_{index}" if index else base, 0):
        index += 1
        leaf = f"{default_name}_{index}"
    return leaf


def _unsupported(**arguments):
    for name, value in arguments.items():
        if value is not None:
            raise NotImplementedError(f"tapeflow's variable scopes do not support `{name}` (got {value!r}); "
                                      "leave it None.")


@tf_export("compat.v1.get_variable", names_op=False)
def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=None, collections=None,
                 caching_device=None, partitioner=None, validate_shape=True, use_resource=None, custom_getter=None,
                 constraint=None, synchronization=None, aggregation=None):
    """Makes or shares the variable `name` of the current variable scope (Note [variable scopes]).

    Args:
      name: the variable's name in its scope ("w" in scope "layer": "layer/w:0").
      shape: its shape; required unless `initializer` is a value.
      dtype: its dtype (default: the scope's, float32).
      initializer: an initializer (called with shape and dtype), a class of one, or a value
        (a tensor, NumPy array or Python value: then `shape` must be None); default: the
        scope's, else glorot_uniform for floats and zeros for integers, bools and strings.
      trainable: whether it is in `trainable_variables()` (default True).

    Returns:
      A `tf.Variable`, in a TF1 graph uninitialized until its initializer runs.

    Raises:
      ValueError: making a variable that exists without reuse, sharing one that does not
        exist with reuse=True, a shape or dtype differing from the shared variable's, no
        shape, or a shape with a value initializer.

    >>> import tapeflow as tf
    >>> with tf.Graph().as_default():
    ...     with tf.compat.v1.variable_scope("layer"):
    ...         w = tf.compat.v1.get_variable("w", [2, 3])
    ...     with tf.compat.v1.variable_scope("layer", reuse=True):
    ...         again = tf.compat.v1.get_variable("w")
    ...     w is again, w.name, w.shape
    (True, 'layer/w:0', TensorShape([2, 3]))
    """
    _unsupported(regularizer=regularizer, caching_device=caching_device, partitioner=partitioner,
                 custom_getter=custom_getter)
    return _get_variable(get_variable_scope(), name, shape, dtype, initializer, trainable,
                         {"validate_shape": validate_shape, "constraint": constraint,
                          "synchronization": synchronization, "aggregation": aggregation})


def _get_variable(scope, name, shape, dtype, initializer, trainable, options):
    full = f"{scope.name}/{name}" if scope.name else name
    store = _store()
    dtype = dtypes.as_dtype(dtype) if dtype is not None else None
    constant_init = initializer is not None and not callable(initializer)
    if shape is not None and constant_init:
        raise ValueError("If initializer is a constant, do not specify shape.")
    shape = None if shape is None else TensorShape(shape)
    reuse = scope.reuse
    existing = store.variables.get(full) if state.graphs else None
    if existing is not None:
        if reuse is False:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set reuse=True or "
                             "reuse=tf.AUTO_REUSE in VarScope?")
        if shape is not None and not shape.is_compatible_with(existing.shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape {shape} and found shape "
                             f"{existing.shape}.")
        wanted = dtype or scope.dtype
        if wanted != existing.dtype and not constant_init:
            raise ValueError(f"Trying to share variable {full}, but specified dtype {wanted.name} and found "
                             f"dtype {existing.dtype.name}.")
        return existing
    if reuse is True and state.graphs:
        raise ValueError(f"Variable {full} does not exist, or was not created with tf.get_variable(). Did you "
                         "mean to set reuse=tf.AUTO_REUSE in VarScope?")
    initial_value, value_dtype = _initial_value(full, shape, dtype or scope.dtype, dtype,
                                                initializer if initializer is not None else scope.initializer)
    with _absolute_name_scope():
        var = Variable(initial_value, trainable=trainable, name=full, dtype=value_dtype,
                       validate_shape=options.get("validate_shape", True), constraint=options.get("constraint"),
                       synchronization=options.get("synchronization"), aggregation=options.get("aggregation"))
    if state.graphs:
        store.variables[full] = var
    return var


def _initial_value(full, shape, dtype, explicit_dtype, initializer):
    """(initial value or callable, the dtype to make the variable with) for `_get_variable`."""
    if initializer is None:
        if shape is None:
            raise ValueError(f"Variable {full} did not get an initializer, so its `shape` argument must be "
                             "specified.")
        if dtype.is_floating:
            initializer = initializers.GlorotUniform()
        elif dtype.is_integer or dtype.is_bool or dtype == dtypes.string:
            initializer = initializers.Zeros()
        else:
            raise ValueError(f"An initializer for variable {full} of {dtype.name} is required")
    if isinstance(initializer, type):
        initializer = initializer()
    if callable(initializer):
        if shape is None:
            raise ValueError(f"The initializer passed is not valid. It should be a callable with no arguments "
                             f"and the shape should not be provided or an instance of `tf.keras.initializers.*' "
                             f"and `shape` should be fully defined. (variable {full})")
        return (lambda: initializer(shape.as_list(), dtype=dtype)), dtype
    if isinstance(initializer, Tensor) and explicit_dtype is not None and initializer.dtype != explicit_dtype:
        raise ValueError(f"Initializer type '{initializer.dtype!r}' and explicit dtype '{explicit_dtype!r}' "
                         "don't match.")
    return initializer, explicit_dtype


@contextlib.contextmanager
def _absolute_name_scope():
    """Variables of `get_variable` are named by their variable scope alone, not the name scope."""
    if state.graphs:
        graph = state.graphs[-1]
        saved, graph._name_stack = graph._name_stack, ""
        try:
            yield
        finally:
            graph._name_stack = saved
        return
    saved = state.scopes.get("name_scope", "")
    state.scopes["name_scope"] = ""
    try:
        yield
    finally:
        state.scopes["name_scope"] = saved
