"""`tf.function`: tracing Python functions into graphs, cached by input signature.

Which trace serves a call, how traces are relaxed (`reduce_retracing`) and how
a concrete function checks its arguments and prints its signature is decided
by the call's function type (Note [function types] in graph/function_type.py).

A trace is a `ConcreteFunction` (concrete_function.py) built in a `FuncGraph`
(func_graph.py); Python control flow on tensors in the function is converted
to `cond` and `while_loop` first (AutoGraph, graph/autograph/).

Variables: only the first trace of a `tf.function` may create variables; they
are initialized right after it (their initial values may be computed from the
arguments) and the function is traced again without creating any, as
TensorFlow does (Note [variables created by functions]).
"""

import functools
import inspect
import weakref

import numpy as np
import optree

from tapeflow.framework import nest
from tapeflow.framework.context import settings, state
from tapeflow.framework.export import tf_export
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.ops.core import vectorization
from tapeflow.ops.variables import Variable
from tapeflow.graph import function_type
from tapeflow.graph.autograph import conversion
from tapeflow.graph.concrete_function import ConcreteFunction, split_slices
from tapeflow.graph.executor import Plan
from tapeflow.graph.func_graph import FuncGraph, output_of


# -- tf.function -------------------------------------------------------------------

def _spec_dims(shape):
    """A TensorSpec's TensorShape as a Meta shape: a tuple, or None for an unknown rank."""
    return None if shape.rank is None else tuple(shape.as_list())


_SIGNATURE = "input_signature"     # the cache key of the one trace of a function with an input_signature


def _replica_key():
    """Which strategy and replica a call is made in (Note [traces per replica]).

    Note [traces per replica]: as TensorFlow traces a function once per replica
    device, a `tf.function` called inside `strategy.run` keeps its traces per
    (strategy, replica), in a copy of itself per key (`_per_replica`): a trace
    bakes in its replica's id and its replica's copies of mirrored variables,
    and eager replicas running in threads never trace or look up one shared
    cache at the same moment.  Outside any strategy the cost is one test of the
    thread's strategy stack.
    """
    mode = state.strategies[-1]
    replica = mode.replica_context
    rid = None if replica is None else replica._replica_id_in_sync_group
    return id(mode.strategy), rid if rid is None or isinstance(rid, int) else id(rid)


class Function:
    """A Python function traced into graphs on first use for each input signature.

    >>> import tapeflow as tf
    >>> @tf.function
    ... def f(x):
    ...     return x * x + 1.0
    >>> float(f(tf.constant(2.0)))
    5.0
    """

    def __init__(self, python_function, input_signature=None, autograph=True, jit_compile=None,
                 reduce_retracing=False, experimental_relax_shapes=None, name=None, **unused):
        self._python_function = python_function
        self._autograph = autograph     # convert Python control flow on tensors (graph/autograph/)
        self._input_signature = None if input_signature is None else list(input_signature)
        self._cache = {}
        self._name = name or getattr(python_function, "__name__", "function")
        functools.update_wrapper(self, python_function)
        self._descriptor_cache = weakref.WeakKeyDictionary()
        self._traced = False        # whether a first trace has completed (Note [variables created by functions])
        self._creation_error = None
        self._trace_count = 0
        self._reduce_retracing = bool(reduce_retracing or experimental_relax_shapes)
        self._canonical = function_type.Canonicalizer(python_function)   # Note [function types]
        self._dispatched = {}       # call types served by a more general trace
        self._calls = {}            # call keys (function_type.call_key) -> their trace
        self._per_replica = {}      # replica key -> this function's copy; None in a copy (Note [traces per replica])

    @property
    def python_function(self):
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def __get__(self, instance, owner):
        if instance is None:
            return self
        bound = self._descriptor_cache.get(instance)
        if bound is None:
            bound = Function(self._python_function.__get__(instance, owner), self._input_signature,
                             name=self._name, autograph=self._autograph, reduce_retracing=self._reduce_retracing)
            self._descriptor_cache[instance] = bound
        return bound

    def __call__(self, *args, **kwargs):
        if settings.functions_run_eagerly:          # tf.config.run_functions_eagerly(True): no tracing
            return self._python_function(*args, **kwargs)
        if state.strategies and self._per_replica is not None:
            return self._replica_copy()(*args, **kwargs)
        concrete, flat_args = self._concrete_for(args, kwargs)
        return concrete._structured(concrete._call_flat(flat_args))

    def _replica_copy(self):
        """This function's copy for the current strategy and replica (Note [traces per replica])."""
        key = _replica_key()
        copy = self._per_replica.get(key)
        if copy is None:
            copy = Function(self._python_function, self._input_signature, autograph=self._autograph,
                            name=self._name, reduce_retracing=self._reduce_retracing)
            copy._per_replica = None
            copy = self._per_replica.setdefault(key, copy)
        return copy

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (TensorSpecs allowed), tracing if needed;
        with an `input_signature`, no arguments stand for the signature itself."""
        if self._input_signature is not None and not args and not kwargs:
            args = tuple(self._input_signature)
        return self._concrete_for(args, kwargs)[0]

    def experimental_get_tracing_count(self):
        """How many times the Python function was traced (twice for a first trace making variables).

        >>> import tapeflow as tf
        >>> f = tf.function(lambda x: x + 1)
        >>> _ = f(tf.constant(1.0)), f(tf.constant(2.0)), f(tf.constant([1.0]))
        >>> f.experimental_get_tracing_count()
        2
        """
        copies = self._per_replica or {}       # (a copy has none)
        return self._trace_count + sum(c._trace_count for c in copies.values())

    def pretty_printed_concrete_signatures(self, verbose=True):
        """Each trace's `pretty_printed_signature`, in the order they were made.

        >>> import tapeflow as tf
        >>> f = tf.function(lambda x, b=2: x * b)
        >>> _ = f(tf.constant(1.0))
        >>> print(f.pretty_printed_concrete_signatures(verbose=False))
        (x: TensorSpec(shape=(), dtype=tf.float32, name=None), b: Literal[2]) -> TensorSpec(shape=(), dtype=tf.float32, name=None)
        """
        return ("\n\n" if verbose else "\n").join(c.pretty_printed_signature(verbose) for c in self._cache.values())

    def _concrete_for(self, args, kwargs):
        if self._input_signature is not None:
            args, kwargs = self._bind_signature(args, kwargs)
            flat = nest.flatten((args, kwargs))
            concrete = self._cache.get(_SIGNATURE)
            if concrete is None:
                concrete = self._cache[_SIGNATURE] = self._trace(args, kwargs, self._signature_type())
        else:
            args, kwargs, params = self._canonical(args, kwargs)
            key, flat = function_type.call_key(args, kwargs)
            concrete = self._calls.get(key)
            if concrete is None:
                request = function_type.function_type(args, kwargs, params)[0]
                concrete = self._cache.get(request) or self._dispatched.get(request)
                if concrete is None:
                    concrete = self._lookup(request, args, kwargs)
                self._calls[key] = concrete
        tensor_args = [convert_to_tensor(v) for v in flat if isinstance(v, (Tensor, np.ndarray))]
        return concrete, tensor_args

    def _lookup(self, request, args, kwargs):
        """A trace serving a call of type `request`: the most specific traced supertype, or a new
        trace, for a generalized type under `reduce_retracing` (Note [function types])."""
        traced = function_type.dispatch(self._cache, request)
        if traced is not None:
            concrete = self._dispatched[request] = self._cache[traced]
            return concrete
        ftype = function_type.generalize(request, list(self._cache)) if self._reduce_retracing else request
        specs = ftype.specs() if ftype is not request else None
        concrete = self._cache[ftype] = self._trace(args, kwargs, ftype, specs)
        return concrete

    def _bind_signature(self, args, kwargs):
        if kwargs:
            params = list(inspect.signature(self._python_function).parameters)
            args = tuple(args) + tuple(kwargs[p] for p in params[len(args):] if p in kwargs)
            kwargs = {}
        flat_sig = nest.flatten(self._input_signature)
        if len(args) != len(self._input_signature):
            reason = "too many positional arguments" if len(args) > len(self._input_signature) else (
                f"missing a required argument: '{self._signature_params()[len(args)]}'")
            raise function_type.binding_error(self._signature_type(), reason, args, kwargs)
        try:    # flattened up to the signature's leaves: a list may bind to one TensorSpec
            flat_args = optree.tree_structure(list(self._input_signature), none_is_leaf=True,
                                              namespace="tapeflow").flatten_up_to(list(args))
        except ValueError:
            raise ValueError(f"Structure of Python function inputs does not match input_signature: "
                             f"{args!r} vs {self._input_signature!r}")
        converted = []
        for value, spec in zip(flat_args, flat_sig):
            if isinstance(spec, TensorSpec) and not isinstance(value, TensorSpec):
                t = convert_to_tensor(value, dtype=spec.dtype) if not isinstance(value, Tensor) else value
                if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
                    raise function_type.binding_error(
                        self._signature_type(), f"Can not cast {function_type.leaf_type(t)!r} to "
                        f"{function_type.leaf_type(spec)!r}", tuple(args), kwargs)
                value = t
            converted.append(value)
        return nest.pack_sequence_as(list(self._input_signature), converted), {}

    def _signature_type(self):
        return function_type.signature_type(self._input_signature, self._python_function)

    def _signature_params(self):
        return [n for n, _ in self._signature_type().params]

    def _trace(self, args, kwargs, ftype, specs=None):
        """Traces for one signature: the ConcreteFunction for calls of type `ftype`.

        Note [variables created by functions]: only the first trace may create
        variables (TF's singleton variables).  When it does, they are initialized
        from that trace (lifted out of the function: `_initialize_variables`) and
        the function is traced again with creation forbidden, whose trace is the
        one kept.  Any later trace creating a variable raises ValueError.
        """
        if self._traced:
            return self._trace_graph(args, kwargs, ftype, self._creation_error, specs)[0]
        concrete, feed_values = self._trace_graph(args, kwargs, ftype, None, specs)
        created = concrete.graph._created_variables
        if created:
            _initialize_variables(concrete, [op_ for _, op_ in created if op_ is not None], feed_values)
        self._traced = True
        self._creation_error = _SINGLETON if created else _NON_FIRST_CALL
        return self._trace_graph(args, kwargs, ftype, _SINGLETON, specs)[0] if created else concrete

    def _trace_graph(self, args, kwargs, ftype, creation_error, relaxed=None):
        """One trace; returns the ConcreteFunction and, per input placeholder, the
        argument's NumPy value (None where it has none: specs, graph tensors).
        `relaxed`: per flat argument, the TensorSpec to trace it as (reduce_retracing)."""
        outer = state.graphs[-1] if state.graphs else None
        graph = FuncGraph(self._name, outer_graph=outer)
        graph._created_variables = []
        graph._creation_error = creation_error
        flat = nest.flatten((args, kwargs))
        specs = relaxed or (nest.flatten(self._input_signature) if self._input_signature is not None
                            else [None] * len(flat))
        new_flat, feed_values = [], []
        with vectorization.per_example_trace(), graph.as_default():     # Note [functions in vectorized code]
            for value, spec in zip(flat, specs):
                if isinstance(value, TensorSpec) or isinstance(value, (Tensor, np.ndarray)) and not isinstance(value, Variable):
                    if isinstance(spec, TensorSpec):
                        shape, dtype = _spec_dims(spec.shape), spec.dtype._np
                    elif isinstance(value, TensorSpec):
                        shape, dtype = _spec_dims(value.shape), value.dtype._np
                    elif isinstance(value, Tensor):     # eager or symbolic (a Meta): static shape and dtype
                        shape, dtype = value._value.shape, np.dtype(value._value.dtype)
                    else:
                        shape, dtype = value.shape, value.dtype
                    placeholder = graph._new_placeholder(shape, dtype, "arg")
                    graph.inputs.append(placeholder)
                    new_flat.append(placeholder)
                    feed_values.append(_eager_value(value))
                else:
                    new_flat.append(value)
            new_args, new_kwargs = nest.pack_sequence_as((args, kwargs), new_flat)
            if self._autograph:
                result = conversion.call_converted(self._python_function, new_args, new_kwargs)
            else:
                result = self._python_function(*new_args, **new_kwargs)
            split = split_slices(result)
            flat_out = [output_of(graph, o) for o in nest.flatten(split)]
        concrete = ConcreteFunction(graph, split, flat_out, slices=split is not result, function_type=ftype)
        self._trace_count += 1
        return concrete, feed_values + [_eager_value(c) for c, _ in graph.captures]


_SINGLETON = ("tf.function only supports singleton tf.Variables created on the first call. Make sure the "
              "tf.Variable is only created once or created outside tf.function. See "
              "https://www.tensorflow.org/guide/function#creating_tfvariables for more information.")
_NON_FIRST_CALL = "Creating variables on a non-first call to a function decorated with tf.function."


def _eager_value(value):
    """The NumPy value of an argument or captured value, None for graph tensors and specs."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, Tensor) and not isinstance(value, SymbolicTensor):
        return value._value
    return None


def _initialize_variables(concrete, initializers, feed_values):
    """Runs the initializers the first trace made, before the function's first call
    (TF lifts them out of the function), on the first call's arguments."""
    if not initializers:
        return
    needed = set()
    stack = list(initializers)
    while stack:                  # the ops the initializers depend on
        op_ = stack.pop()
        if op_._id in needed:
            continue
        needed.add(op_._id)
        stack.extend(op_.control_inputs)
        stack.extend(t.op for t in op_.inputs if isinstance(t, SymbolicTensor))
    feeds, values = [], []
    for placeholder, value in zip(concrete.inputs, feed_values, strict=True):
        if placeholder.op._id in needed:
            if value is None:
                raise ValueError(f"The initial value of a tf.Variable created in tf.function '{concrete.graph.name}' "
                                 "depends on an argument or captured tensor that has no value yet (a TensorSpec "
                                 "or a graph tensor); call the function with eager tensors first, or create the "
                                 "variable outside the function.")
            feeds.append(placeholder)
            values.append(value)
    Plan(concrete.graph, initializers, feeds).run(values)


@tf_export("function", names_op=False)
def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_relax_shapes=None, **kwargs):
    """Compiles a Python function into a callable graph (`tf.function`).

    Usable as `@tf.function`, `@tf.function(input_signature=[...])` or `tf.function(f)`.
    """
    def wrap(f):
        return Function(f, input_signature=input_signature, autograph=autograph, jit_compile=jit_compile,
                        reduce_retracing=reduce_retracing or bool(experimental_relax_shapes), **kwargs)
    return wrap if func is None else wrap(func)

