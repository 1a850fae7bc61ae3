"""`custom_gradient`, `recompute_grad` and `grad_pass_through`.

A function decorated with `custom_gradient` runs normally, then its flat
results pass through one "CustomGradient" op whose inputs are (results,
arguments, variables the function read) and whose outputs are the results.
Its gradient calls the user's `grad_fn`: nothing for the results (so the
function's own ops are not differentiated), the user's gradients for the
arguments and variables.  The same op serves eager tapes, tapes inside
functions and `tf.gradients`, so custom gradients nest for higher order;
eagerly, a tape that traces none of the arguments and variables does not
record it (see Note [eager custom gradient recording]).
"""

import contextlib
import functools
import inspect
import logging

from tapeflow.framework import nest
from tapeflow.framework.context import state, tapes_paused
from tapeflow.framework.dtypes import TRAINABLE_NP
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op, record
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import array_ops
from tapeflow.ops.variables import Variable
from tapeflow.eager import forwardprop
from tapeflow.eager.backprop import GradientTape, UnconnectedGradients
from tapeflow.graph.scopes import control_dependencies

_log = logging.getLogger("tapeflow")


def _custom_gradient_shape(*metas, n_results, grad_fn):
    return [m if isinstance(m, Meta) else Meta(tuple(m.shape), m.dtype) for m in metas[:n_results]]


@op("CustomGradient", same_dtype=False, num_outputs=-1, shape=_custom_gradient_shape, unknown_rank=True,
    accepts_indexed_slices=True, passes_through=True)
def _custom_gradient_op(*values, n_results, grad_fn):
    return values[:n_results]


@_custom_gradient_op.def_grad
def _custom_gradient_grad(op, *result_grads):
    # the results' own producers get nothing; arguments and variables get grad_fn's values
    return [None] * op.get_attr("n_results") + list(op.get_attr("grad_fn")(*result_grads))


@_custom_gradient_op.def_batch
def _custom_gradient_batch(xs, batched, n_results, grad_fn):
    # the results pass through; a tape recording the op inside a vectorized function (or the
    # batched backprop of a pfor Jacobian) calls grad_fn on batched gradients, op by op batched
    return tuple(xs[:n_results]), tuple(batched[:n_results])


@contextlib.contextmanager
def _watch_variables():
    """Collects the trainable variables read inside (TF's VariableWatcher)."""
    seen = {}
    state.variable_watchers.append(seen)
    try:
        yield seen
    finally:
        state.variable_watchers.remove(seen)


def _variables_in_subgraph(flat_result, flat_args):
    """Trainable variables read between the arguments and the results in a TF1 graph
    (the seed's `_get_dependent_variables`): also reads made before `f` ran and used
    inside it.  A function graph holds variables as captured handles, so TensorFlow
    finds none there and neither does this walk."""
    graph = state.graphs[-1]
    if graph.building_function:
        return {}
    stop = {a._id for a in flat_args if isinstance(a, (Tensor, Variable))}
    found, seen = {}, set()
    todo = [r.op for r in flat_result if isinstance(r, SymbolicTensor) and r._id not in stop]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for t in node.inputs:     # differentiable data inputs only, as TF's walk
            if t._id in stop or t._value.dtype not in TRAINABLE_NP:
                continue
            if isinstance(t, Variable):
                if t.trainable:
                    found.setdefault(t._id, t)
            elif isinstance(t, SymbolicTensor) and t.graph is graph:
                todo.append(t.op)
    return found


def _accepts_variables(grad_fn):
    try:
        spec = inspect.getfullargspec(grad_fn)
    except TypeError:
        return True
    return "variables" in spec.args or "variables" in spec.kwonlyargs or spec.varkw is not None


def _call_custom(f, args, kwargs):
    """Runs `f` and ties its results to its grad_fn with one CustomGradient op."""
    in_graph = bool(state.graphs)
    if in_graph and kwargs:
        raise ValueError("The custom_gradient decorator currently supports keywords arguments only when "
                         "eager execution is enabled.")
    if in_graph:
        args = nest.map_structure(lambda a: a if isinstance(a, Variable) else convert_to_tensor(a), args)
    with _watch_variables() as watched:
        result, grad_fn = f(*args, **kwargs)
    flat_args = nest.flatten(args)
    flat_result = [convert_to_tensor(r) for r in nest.flatten(result)]
    if in_graph:
        watched.update(_variables_in_subgraph(flat_result, flat_args))
    inputs_seen = flat_args + list(kwargs.values())
    variables = [v for v in watched.values() if all(v is not i for i in inputs_seen)]
    takes_variables = _accepts_variables(grad_fn)
    if variables and not takes_variables:
        raise TypeError("@tf.custom_gradient grad_fn must accept keyword argument 'variables', since function "
                        f"uses variables: {variables}")
    # the seed warns in graph mode only; recompute_grad and grad_pass_through take variables optionally
    if in_graph and takes_variables and not variables and not getattr(grad_fn, "_variables_optional", False):
        _log.warning("@custom_gradient grad_fn has 'variables' in signature, but no ResourceVariables were "
                     "used on the forward pass.")
    n_results, n_args = len(flat_result), len(flat_args)

    def actual_grad_fn(*result_grads):
        result_grads = result_grads[:n_results]
        if variables:
            input_grads, variable_grads = grad_fn(*result_grads, variables=variables)
            if len(variable_grads) != len(variables):
                raise ValueError("Must return gradient for each variable from @custom_gradient grad_fn.")
        else:
            input_grads, variable_grads = grad_fn(*result_grads), []
        flat_grads = nest.flatten(input_grads)
        if len(flat_grads) != n_args:
            raise ValueError(f"custom_gradient function expected to return {n_args} gradients, but returned "
                             f"{len(flat_grads)} instead.")
        return flat_grads + list(variable_grads)

    for v in variables + [a for a in flat_args if isinstance(a, Variable)]:
        v._note_access()     # the op reads them: tapes watching accessed variables see them
    inputs = flat_result + [a if isinstance(a, Variable) else convert_to_tensor(a) for a in flat_args] + variables
    attrs = {"n_results": n_results, "grad_fn": actual_grad_fn}
    if in_graph or not state.tapes:
        outputs = execute(_custom_gradient_op, inputs, attrs)
    else:
        outputs = _execute_eager(inputs, attrs)
    return nest.pack_sequence_as(result, list(outputs))


def _pass_through(*result_grads):
    return result_grads


def _execute_eager(inputs, attrs):
    """Runs the CustomGradient op eagerly, recorded as TensorFlow's eager decorator records it.

    Note [eager custom gradient recording]: a tape records the custom op only
    when it traces one of the arguments or variables (TF's record_operation
    on them).  A tape that traces none of them but does trace the results
    (through tensors `f` captured) keeps seeing `f`'s own ops, through a
    pass-through record: there the custom gradient is not used, as in
    TensorFlow (e.g. a nested tape differentiating recompute_grad's gradient
    with an unwatched output gradient gets the true second derivative).
    """
    n_results = attrs["n_results"]
    own = inputs[n_results:]
    tapes = state.tapes
    custom = [tp for tp in tapes      # accumulators differentiate f's own ops (pass-through record)
              if not tp.is_accumulator and any(tp.is_watched(t._id) and t._value.dtype in TRAINABLE_NP for t in own)]
    try:
        state.tapes = custom
        outputs = execute(_custom_gradient_op, inputs, attrs)
        if len(custom) < len(tapes):
            state.tapes = [tp for tp in tapes if all(tp is not c for c in custom)]
            record(_custom_gradient_op, inputs[:n_results], outputs, {"n_results": 0, "grad_fn": _pass_through})
    finally:
        state.tapes = tapes
    return outputs


class Bind:
    """Calls `d(f, args, kwargs)`; bound to an instance when `f` is a method (the seed's Bind)."""

    def __init__(self, f, d):
        self._f = f
        self._d = d
        functools.update_wrapper(self, f)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return Bind(self._f.__get__(instance, owner), self._d)

    def __call__(self, *args, **kwargs):
        return self._d(self._f, args, kwargs)


@tf_export("custom_gradient")
def custom_gradient(f=None):
    """Decorates `f(*x) -> (y, grad_fn)` so that the gradient of `y` is given by `grad_fn`.

    `grad_fn(*dys)` returns one gradient per flattened `x`; if `f` reads
    variables that are not inputs, `grad_fn(*dys, variables=...)` returns
    `(input_grads, variable_grads)`.  Works with or without parentheses, on
    functions and methods, eagerly and in graphs.

    Raises:
      TypeError: `f` reads variables but `grad_fn` does not accept `variables`.
      ValueError: `grad_fn` returns the wrong number of gradients; keyword
        arguments in graph mode.

    >>> import tapeflow as tf
    >>> @tf.custom_gradient
    ... def log1pexp(x):
    ...     e = tf.exp(x)
    ...     def grad(dy):
    ...         return dy * (1 - 1 / (1 + e))
    ...     return tf.math.log(1 + e), grad
    >>> x = tf.constant(100.0)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = log1pexp(x)
    >>> float(tape.gradient(y, x))
    1.0
    """
    if f is None:
        return lambda fn: custom_gradient(fn)
    return Bind(f, _call_custom)


@tf_export("recompute_grad")
def recompute_grad(f):
    """Wraps `f` so the forward pass keeps none of its intermediates; they are
    recomputed (under a tape) when the gradient is needed.

    Gradients with respect to the inputs and the variables `f` uses equal
    those of `f`.  Differentiating the gradient again raises NotImplementedError.
    """

    @custom_gradient
    def inner(*args, **kwargs):
        if forwardprop.accumulating():
            raise NotImplementedError(f"recompute_grad tried to transpose grad of {getattr(f, '__name__', f)}. "
                                      "Consider not using recompute_grad in forward mode autodiff.")
        with tapes_paused():
            result = f(*args, **kwargs)

        def grad_wrapper(*wrapper_args, **grad_kwargs):
            @custom_gradient
            def inner_recompute_grad(*dresult):
                variables = grad_kwargs.get("variables")
                with GradientTape() as tape:
                    id_args = nest.map_structure(array_ops.identity, args)
                    tape.watch(id_args)
                    if variables is not None:
                        tape.watch(variables)
                    with control_dependencies([d for d in dresult if isinstance(d, Tensor)]):
                        recomputed = f(*id_args, **kwargs)
                extra = list(variables) if variables is not None else []
                grads = tape.gradient(recomputed, list(nest.flatten(id_args)) + extra, output_gradients=list(dresult),
                                      unconnected_gradients=UnconnectedGradients.ZERO)

                def transpose(*t_args, **t_kwargs):
                    raise NotImplementedError(
                        f"recompute_grad tried to transpose grad of {getattr(f, '__name__', f)}. Consider not "
                        "using recompute_grad in forward mode autodiff")
                transpose._variables_optional = True
                n = len(nest.flatten(id_args))
                return (grads[:n], grads[n:]), transpose

            return inner_recompute_grad(*wrapper_args)

        grad_wrapper._variables_optional = True
        return result, grad_wrapper

    return functools.wraps(f)(lambda *args, **kwargs: inner(*args, **kwargs))


@tf_export("grad_pass_through")
def grad_pass_through(f):
    """Forward as `f`, backward as the identity (variables used by `f` get None).

    >>> import tapeflow as tf
    >>> x = tf.Variable(1.0)
    >>> z = tf.Variable(3.0)
    >>> with tf.GradientTape() as tape:
    ...     y = tf.grad_pass_through(x.assign)(z ** 2)
    >>> float(tape.gradient(y, z))
    6.0
    """
    @custom_gradient
    def _grad_pass_through_op(*args, **kwargs):
        def grad(*dys, **grad_kwargs):
            variables = grad_kwargs.get("variables")
            if variables is not None:
                return dys, [None] * len(variables)
            return dys
        grad._variables_optional = True
        return f(*args, **kwargs), grad
    return functools.wraps(f)(lambda *args, **kwargs: _grad_pass_through_op(*args, **kwargs))
