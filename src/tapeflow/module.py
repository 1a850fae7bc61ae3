"""`tf.Module`: a named container of variables and other modules, found through its attributes.

A model is written as a subclass holding `tf.Variable`s and sub-modules in its
attributes (directly, or in lists, tuples and dicts); `variables`,
`trainable_variables` and `submodules` find them by walking the attributes
(Note [module traversal]), so `tape.gradient(loss, model.trainable_variables)`
needs no registration.  Each module has a name scope made when it is created;
`with_name_scope` runs a method inside it, so the variables it creates are
named "module_name/...", as TensorFlow names them.
"""

import collections
import functools
import re

import optree

from tapeflow.framework.export import tf_export
from tapeflow.graph.scopes import name_scope
from tapeflow.ops.variables import Variable

_VALID_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_CAMEL_TO_SNAKE = re.compile(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")


def _snake_case(class_name):
    """`CamelCASEName` -> "camel_case_name", `HTTPServer2` -> "http_server2" (TensorFlow's default names)."""
    return _CAMEL_TO_SNAKE.sub(r"_\1", class_name).lower()


@tf_export("Module", names_op=False)
class Module:
    """Base class of models: finds the variables and modules held in its attributes.

    Args:
      name: the module's name, a Python identifier; by default the class name in
        snake case (`class MyDense(tf.Module)` is "my_dense").

    Raises:
      ValueError: `name` is not a valid Python identifier.

    >>> import tapeflow as tf
    >>> class Dense(tf.Module):
    ...     def __init__(self, n_in, n_out, name=None):
    ...         super().__init__(name=name)
    ...         self.w = tf.Variable(tf.ones([n_in, n_out]), name="w")
    ...         self.b = tf.Variable(tf.zeros([n_out]), name="b")
    ...     def __call__(self, x):
    ...         return tf.nn.relu(x @ self.w + self.b)
    >>> layer = Dense(3, 2)
    >>> layer.name, [v.name for v in layer.trainable_variables]
    ('dense', ['b:0', 'w:0'])
    >>> layer(tf.ones([1, 3])).numpy()
    array([[3., 3.]], dtype=float32)
    """

    # Attributes never searched (TensorFlow's checkpoint bookkeeping; none of ours, kept for subclasses).
    _TF_MODULE_IGNORED_PROPERTIES = frozenset(("_self_unconditional_checkpoint_dependencies",
                                               "_self_unconditional_dependency_names"))

    def __init__(self, name=None):
        if name is None:
            name = _snake_case(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid Python "
                             "identifiers (e.g. a valid class name).")
        self._name = name
        with name_scope(name) as scope:     # made unique in a graph; nested in the scope of the moment
            self._name_scope = name_scope(scope)

    @property
    def name(self):
        """The name given to the constructor (or the default); without the enclosing scopes."""
        return self._name

    @property
    def name_scope(self):
        """The module's `tf.name_scope` ("outer/module_name/" when made inside "outer")."""
        return self._name_scope

    @property
    def variables(self):
        """The variables of this module (by attribute name), then those of its submodules."""
        return tuple(self._flatten(predicate=_is_variable, expand_composites=True))

    @property
    def trainable_variables(self):
        """`variables` that are trainable, in the same order."""
        return tuple(self._flatten(predicate=_is_trainable_variable, expand_composites=True))

    @property
    def non_trainable_variables(self):
        """`variables` that are not trainable, in the same order."""
        return tuple(self._flatten(predicate=_is_non_trainable_variable, expand_composites=True))

    @property
    def submodules(self):
        """Every module held by this one, directly or through other modules (Note [module traversal])."""
        return tuple(self._flatten(predicate=_is_module))

    def _flatten(self, recursive=True, predicate=None, attribute_traversal_key=None, with_path=False,
                 expand_composites=False):
        """The values in this module's attributes (and its submodules') matching `predicate`.

        Args:
          recursive: also search the modules found.
          predicate: keeps a value when true (None: every value).
          attribute_traversal_key: the sort key of attribute names (default: the names).
          with_path: yield (path, value) pairs, the path being attribute names, keys and
            indices from this module; a value reachable twice is then yielded twice.
          expand_composites: unused (no composite holds variables here).

        Returns:
          A generator of the values (or pairs) in Note [module traversal] order.
        """
        return _walk(self, recursive, predicate or (lambda _: True), attribute_traversal_key, with_path,
                     (), {id(self)}, [])

    @classmethod
    def with_name_scope(cls, method):
        """Decorator running a method inside the module's name scope.

        Args:
          method: a method of a Module subclass.

        Returns:
          The method, entering `self.name_scope` around each call.

        >>> import tapeflow as tf
        >>> class Scale(tf.Module):
        ...     @tf.Module.with_name_scope
        ...     def __call__(self, x):
        ...         if not hasattr(self, "s"):
        ...             self.s = tf.Variable(2.0)
        ...         return x * self.s
        >>> m = Scale()
        >>> float(m(3.0)), m.s.name
        (6.0, 'scale/Variable:0')
        """
        @functools.wraps(method)
        def method_with_name_scope(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return method_with_name_scope


# Note [module traversal]: a module's attributes are visited in sorted name order,
# each flattened in `tf.nest` order (lists and tuples in order, dict values by
# sorted key); each leaf is yielded once (by identity, across the whole walk) when
# the predicate holds, and the modules met are remembered.  Only after all of a
# module's own attributes does the walk descend into those modules, in the order
# met, each in turn the same way, so `variables` lists a module's own variables
# before those of its submodules, as TensorFlow's `Module._flatten` does.  A
# module already on the path being walked is not descended into again (cycles).

def _is_leaf(x):
    return isinstance(x, collections.deque)     # tf.nest does not look into deques (optree would)


def _leaves_with_paths(value):
    paths, leaves, _ = optree.tree_flatten_with_path(value, is_leaf=_is_leaf, none_is_leaf=True,
                                                      namespace="tapeflow")
    return zip(paths, leaves)


def _walk(module, recursive, predicate, key, with_path, path, seen, stack):
    """One module's part of Note [module traversal]: a generator of matches."""
    attributes = vars(module)
    if id(module) in stack:
        recursive = False
    found = []
    for attr in sorted(attributes, key=key):
        if attr in module._TF_MODULE_IGNORED_PROPERTIES:
            continue
        value = attributes[attr]
        try:
            leaves = list(_leaves_with_paths(value))
        except Exception as e:       # noqa: BLE001 -- any failure to flatten names the attribute
            raise ValueError(f"Error processing property {attr!r} of {value!r}") from e
        for leaf_path, leaf in leaves:
            leaf_path = (attr,) + tuple(leaf_path)
            if not with_path:
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            if predicate(leaf):
                yield (path + leaf_path, leaf) if with_path else leaf
            if recursive and isinstance(leaf, Module):
                found.append((path + leaf_path, leaf))
    stack.append(id(module))
    for sub_path, sub in found:
        yield from _walk(sub, recursive, predicate, key, with_path, sub_path, seen, stack)
    stack.pop()


def _is_variable(x):
    return isinstance(x, Variable)


def _is_trainable_variable(x):
    return isinstance(x, Variable) and x.trainable


def _is_non_trainable_variable(x):
    return isinstance(x, Variable) and not x.trainable


def _is_module(x):
    return isinstance(x, Module)
