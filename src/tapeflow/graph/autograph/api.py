"""`tf.autograph`: `to_graph`, `to_code`, `experimental.do_not_convert`,
`experimental.set_loop_options`."""

import functools
import inspect
import types

from tapeflow.framework.export import tf_export
from tapeflow.graph.autograph import conversion


def _function_of(entity, what):
    """The Python function to convert for `entity` (a function, method or tf.function)."""
    entity = getattr(entity, "python_function", entity)
    if isinstance(entity, types.MethodType):
        entity = entity.__func__
    if not isinstance(entity, types.FunctionType):
        raise ConversionError(f"{what} converts Python functions and methods; got {entity!r}. Pass the function "
                              "itself.")
    return entity


ConversionError = conversion.ConversionError


@tf_export("autograph.to_graph")
def to_graph(entity, recursive=True, experimental_optional_features=None):
    """The function `entity` with its Python control flow on tensors converted to graph ops.

    The result runs the same as `entity` on Python values; inside `tf.function`
    an `if`/`while`/`for` whose condition or iterable is a tensor becomes
    `tf.cond`/`tf.while_loop`.

    Args:
      entity: a Python function or method (or a `tf.function`: its Python function).
      recursive: accepted for TensorFlow's signature; user functions called by the
        converted code are always converted when they run.
      experimental_optional_features: accepted for TensorFlow's signature; ignored.

    Returns:
      The converted function (a bound method for a bound method).

    Raises:
      ConversionError: `entity` is not a Python function, or its source cannot be found.

    >>> import tapeflow as tf
    >>> def f(x):
    ...     return x if x > 0 else -x
    >>> float(tf.autograph.to_graph(f)(tf.constant(-2.0)))
    2.0
    """
    function = _function_of(entity, "tf.autograph.to_graph")
    converted = conversion.convert(function)
    self = getattr(getattr(entity, "python_function", entity), "__self__", None)
    return types.MethodType(converted, self) if isinstance(entity, types.MethodType) else converted


@tf_export("autograph.to_code")
def to_code(entity, recursive=True, experimental_optional_features=None):
    """The source code of the conversion of `entity` (see `to_graph`), as a string.

    Args:
      entity: a Python function or method (or a `tf.function`).
      recursive: accepted for TensorFlow's signature.
      experimental_optional_features: accepted for TensorFlow's signature; ignored.

    Returns:
      The converted function's source.

    Raises:
      ConversionError: `entity` is not a Python function, or its source cannot be found.

    >>> import tapeflow as tf
    >>> def f(x):
    ...     while x > 1:
    ...         x = x / 2
    ...     return x
    >>> "ag__.while_stmt" in tf.autograph.to_code(f)
    True
    """
    return conversion.source_of(_function_of(entity, "tf.autograph.to_code"))


@tf_export("autograph.experimental.do_not_convert")
def do_not_convert(func=None):
    """Decorator: AutoGraph runs `func` as written (neither it nor what it calls is converted).

    Args:
      func: the function; without it, returns the decorator.

    Returns:
      A wrapper of `func` that AutoGraph leaves alone.

    >>> import tapeflow as tf
    >>> @tf.autograph.experimental.do_not_convert
    ... def f(x):
    ...     return x + 1
    >>> float(tf.function(f)(tf.constant(1.0)))
    2.0
    """
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    if inspect.ismethod(func) or not callable(func):
        return func
    return conversion.mark_do_not_convert(wrapper)


@tf_export("autograph.experimental.set_loop_options")
def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """Options of the loop whose body calls it, read when the function is converted:
    `shape_invariants` (a list of `(variable, shape)` pairs for loop variables whose
    shape changes) and `maximum_iterations`.  Outside converted code it does nothing.

    Args:
      parallel_iterations: accepted for TensorFlow's signature (loops run in order).
      swap_memory: accepted for TensorFlow's signature.
      maximum_iterations: the most iterations the staged loop runs.
      shape_invariants: `[(variable, shape), ...]`.

    Returns:
      None.

    >>> import tapeflow as tf
    >>> tf.autograph.experimental.set_loop_options(maximum_iterations=3) is None
    True
    """
    return None
