"""What a `tf.function` trace was made for: its function type, used to cache, dispatch,
relax and print traces, and to check the arguments of concrete functions.

Note [function types]: a call's arguments are first bound to the Python
function's parameters (defaults filled in, so `f(x)`, `f(x, 2)` and
`f(x, b=2)` are one call), then typed leaf by leaf in `tf.nest` order:
tensors and NumPy arrays by static shape and dtype (`Spec`, printed as a
TensorSpec), variables and other objects that can be weakly referenced by
identity, hashable values (numbers, strings, None) as literals equal by `==`
(so 2 and 2.0 share a trace, as in TensorFlow).  The type of a call is its
nested structure and these leaf types (`FunctionType`).  A call whose type was
traced reuses that trace; otherwise the most specific trace whose type is a
supertype of it (a trace for shape (None,) serves every vector) is used;
otherwise, with `reduce_retracing`, the type is first generalized against the
traced ones in trace order (differing dims become None, differing ranks an
unknown rank, and any other difference gives up), as TensorFlow's function
cache does, and the generalized type is traced.

Concrete functions keep their type: a call binds its arguments to it as
TensorFlow does, structurally first (each Python argument equal to the traced
one, each tensor of the traced dtype and a compatible shape), else as the flat
list of tensor inputs (any shapes; another dtype is InvalidArgumentError), and
raises TypeError with both reasons when neither binds.
"""

import inspect
import math
import weakref

import numpy as np
import optree

from tapeflow.framework import dtypes, nest
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.ops.variables import Variable

_NS = "tapeflow"
_P = inspect.Parameter


# -- leaf types ----------------------------------------------------------------------

class Spec:
    """A tensor argument: static shape (a tuple with None dims, or None: unknown rank) and dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = None if shape is None else tuple(shape)
        self.dtype = dtype

    def __eq__(self, other):
        return type(other) is Spec and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def is_subtype_of(self, other):
        if type(other) is not Spec or other.dtype != self.dtype:
            return False
        if other.shape is None:
            return True
        return (self.shape is not None and len(self.shape) == len(other.shape)
                and all(b is None or a == b for a, b in zip(self.shape, other.shape)))

    def supertype(self, other):
        """The most specific Spec both are subtypes of; None when the dtypes differ."""
        if type(other) is not Spec or other.dtype != self.dtype:
            return None
        if self.shape is None or other.shape is None or len(self.shape) != len(other.shape):
            return Spec(None, self.dtype)
        return Spec(tuple(a if a == b else None for a, b in zip(self.shape, other.shape)), self.dtype)

    def tensor_spec(self, name=None):
        return TensorSpec(self.shape, self.dtype, name)

    def __repr__(self):
        return f"TensorSpec(shape={_shape_text(self.shape)}, dtype={self.dtype!r}, name=None)"


def _shape_text(shape):
    if shape is None:
        return "<unknown>"
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class Literal:
    """A hashable Python value (number, string, None...): equal values share a trace; NaNs match."""

    __slots__ = ("value", "_hash")

    def __init__(self, value):
        self.value = value
        self._hash = hash(_NAN if _is_nan(value) else value)

    def __eq__(self, other):
        if type(other) is not Literal:
            return False
        if _is_nan(self.value) or _is_nan(other.value):
            return _is_nan(self.value) and _is_nan(other.value)
        try:
            return bool(self.value == other.value)
        except Exception:       # noqa: BLE001 -- values that do not compare: different
            return False

    def __hash__(self):
        return self._hash

    def is_subtype_of(self, other):
        return self == other

    def supertype(self, other):
        return self if self == other else None

    def __repr__(self):          # a NaN prints as TensorFlow's marker object does
        return f"Literal[{_NAN if _is_nan(self.value) else self.value!r}]"


_NAN = object()


def _is_nan(value):
    return isinstance(value, float) and math.isnan(value)


class Ref:
    """An object argument (a module, a function...), weakly referenced: the same object or an
    equal one shares a trace.  Variables go by identity alone (tapeflow traces read the
    variable itself; TensorFlow shares traces between variables of one shape and dtype)."""

    __slots__ = ("ref", "_hash", "_identity")

    def __init__(self, obj, identity=False):
        self.ref = weakref.ref(obj)
        self._identity = identity
        # an unhashable object has no trace type (TypeError), as in TensorFlow
        self._hash = id(obj) if identity else hash(obj)

    def __eq__(self, other):
        if type(other) is not Ref or self._identity != other._identity:
            return False
        mine, theirs = self.ref(), other.ref()
        if mine is None or theirs is None:
            return False
        if mine is theirs:
            return True
        try:
            return not self._identity and bool(mine == theirs)
        except Exception:       # noqa: BLE001 -- objects that do not compare: different
            return False

    def __hash__(self):
        return self._hash

    def is_subtype_of(self, other):
        return self == other

    def supertype(self, other):
        return self if self == other else None

    def __repr__(self):
        return f"Weakref[{self.ref!r}])"        # TensorFlow's text, its stray parenthesis included


def leaf_type(value):
    """The trace type of one leaf of the arguments (Note [function types]).

    Raises:
      TypeError: an unhashable value that cannot be weakly referenced either (a set).
    """
    if isinstance(value, Tensor) and not isinstance(value, Variable):
        return Spec(value._value.shape, dtypes._BY_NP[value._value.dtype])
    if isinstance(value, np.ndarray):
        return Spec(value.shape, dtypes.as_dtype(value.dtype))
    if isinstance(value, TensorSpec):
        return Spec(None if value.shape.rank is None else value.shape.as_list(), value.dtype)
    if isinstance(value, Variable):
        return Ref(value, identity=True)
    try:
        return Ref(value)
    except TypeError:
        pass
    try:
        return Literal(value)
    except TypeError:
        raise TypeError(f"Could not generate a generic TraceType for {value!r}.Please verify that it is "
                        "immutable/hashable. Otherwise, consider implementing the Tracing Protocol for it.") from None


# -- function types ------------------------------------------------------------------

class FunctionType:
    """The type of one call: the structure of its canonical (args, kwargs), the leaf types,
    and the parameters' names and kinds (for printing and binding)."""

    __slots__ = ("structure", "leaves", "params", "_hash")

    def __init__(self, structure, leaves, params):
        self.structure = structure
        self.leaves = tuple(leaves)
        self.params = params            # ((name, kind), ...): the positional ones, then keyword ones
        self._hash = hash((structure, self.leaves))

    def __eq__(self, other):
        return type(other) is FunctionType and self.structure == other.structure and self.leaves == other.leaves

    def __hash__(self):
        return self._hash

    def is_supertype_of(self, request):
        return self.structure == request.structure and all(
            r.is_subtype_of(t) for r, t in zip(request.leaves, self.leaves, strict=True))

    def supertype(self, other):
        """The most specific type both are subtypes of, or None (a structure or literal differs)."""
        if self.structure != other.structure:
            return None
        leaves = []
        for a, b in zip(self.leaves, other.leaves, strict=True):
            common = a.supertype(b)
            if common is None:
                return None
            leaves.append(common)
        return FunctionType(self.structure, leaves, self.params)

    def specs(self):
        """Per leaf, the TensorSpec a trace's placeholder takes (None for the other leaves)."""
        return [t.tensor_spec() if type(t) is Spec else None for t in self.leaves]

    def tree(self):
        """(args, kwargs) with each leaf replaced by its type."""
        return optree.tree_unflatten(self.structure, list(self.leaves))


class Canonicalizer:
    """Binds calls of one Python function to its parameters (Note [function types])."""

    def __init__(self, python_function):
        try:
            self.signature = inspect.signature(python_function)
        except (TypeError, ValueError):
            self.signature = None
        params = list(self.signature.parameters.values()) if self.signature is not None else []
        self.has_varargs = any(p.kind is _P.VAR_POSITIONAL for p in params)
        simple = self.signature is not None and all(
            p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD) for p in params)
        # positional calls of a function of positional parameters skip `bind`: the defaults fill the rest
        self.fast_params = tuple((p.name, p.kind) for p in params) if simple else None
        self.fast_defaults = tuple(p.default for p in params) if simple else ()
        self.fast_required = sum(p.default is _P.empty for p in params) if simple else -1

    def __call__(self, args, kwargs):
        """(args, kwargs, params): the call with every parameter given, positional ones by position.

        Raises:
          TypeError: the arguments do not bind to the function's parameters.
        """
        if not kwargs and self.fast_required <= len(args) <= len(self.fast_defaults) and (
                self.fast_required == len(self.fast_defaults) or all(
                    d is not _P.empty for d in self.fast_defaults[len(args):])):
            return tuple(args) + self.fast_defaults[len(args):], {}, self.fast_params
        if self.signature is None:
            return tuple(args), dict(kwargs), tuple((f"args_{i}", _P.POSITIONAL_ONLY) for i in range(len(args))) + \
                tuple((k, _P.KEYWORD_ONLY) for k in kwargs)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        out_args, out_kwargs, params = [], {}, []
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind is _P.VAR_POSITIONAL:
                out_args.extend(value)
                params.extend((f"{name}_{i}", _P.POSITIONAL_ONLY) for i in range(len(value)))
            elif kind is _P.VAR_KEYWORD:
                out_kwargs.update(value)
                params.extend((k, _P.KEYWORD_ONLY) for k in value)
            elif kind is _P.KEYWORD_ONLY:
                out_kwargs[name] = value
                params.append((name, kind))
            else:
                out_args.append(value)
                params.append((name, _P.POSITIONAL_ONLY if self.has_varargs else kind))
        return tuple(out_args), out_kwargs, tuple(params)


_PRIMITIVE = (int, float, bool, str, type(None))


def call_key(args, kwargs):
    """(a cheap key equal for calls of one FunctionType, the leaves in `tf.nest` order): tensors
    by shape and dtype, numbers and strings by value, other leaves by their trace type.  NaNs never
    match (their calls take the slower path to the same trace)."""
    leaves, structure = optree.tree_flatten((args, kwargs), none_is_leaf=True, namespace=_NS)
    key = [structure]
    for v in leaves:
        if isinstance(v, Tensor):
            key.append((v._value.shape, v._value.dtype))
        elif type(v) in _PRIMITIVE:
            key.append(v)
        else:
            key.append(leaf_type(v))
    return tuple(key), leaves


def function_type(args, kwargs, params):
    """(the FunctionType of a canonical call, its leaves in `tf.nest` order).

    Raises:
      TypeError: an argument has no trace type (leaf_type).
    """
    leaves, structure = optree.tree_flatten((args, kwargs), none_is_leaf=True, namespace=_NS)
    return FunctionType(structure, [leaf_type(v) for v in leaves], params), leaves


def signature_type(input_signature, python_function):
    """The FunctionType of a trace made for an `input_signature`."""
    try:
        names = [p.name for p in inspect.signature(python_function).parameters.values()
                 if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names += [f"args_{i}" for i in range(len(names), len(input_signature))]
    params = tuple((n, _P.POSITIONAL_OR_KEYWORD) for n in names[:len(input_signature)])
    return function_type(tuple(input_signature), {}, params)[0]


def dispatch(traced, request):
    """The most specific traced type that is a supertype of `request`, or None."""
    best = None
    for t in traced:
        if type(t) is not FunctionType:
            continue
        if t.is_supertype_of(request) and (best is None or best.is_supertype_of(t)):
            best = t
    return best


def generalize(request, traced):
    """`request` generalized against each traced type in turn (TensorFlow's reduce_retracing)."""
    relaxed = request
    for t in traced:
        if type(t) is not FunctionType:
            continue
        common = relaxed.supertype(t)
        if common is not None:
            relaxed = common
    return relaxed


# -- printing --------------------------------------------------------------------------

def _type_text(node, variables):
    if isinstance(node, (Spec, Literal)):
        return repr(node)
    if isinstance(node, Ref):
        obj = node.ref()
        if isinstance(obj, Variable):
            alias = variables.setdefault(id(obj), len(variables))
            return (f"VariableSpec(shape={_shape_text(tuple(obj.shape.as_list()) if obj.shape.rank is not None else None)}"
                    f", dtype={obj.dtype!r}, trainable={obj.trainable}, alias_id={alias})")
        return repr(node)
    if isinstance(node, tuple) and hasattr(node, "_fields"):
        items = ", ".join(f"[{f!r}, {_type_text(v, variables)}]" for f, v in zip(node._fields, node, strict=True))
        return f"{type(node).__name__}[{items}]"
    if isinstance(node, (list, tuple)):
        kind = "List" if isinstance(node, list) else "Tuple"
        return f"{kind}[{', '.join(_type_text(v, variables) for v in node)}]"
    if isinstance(node, dict):
        return "Dict[" + ", ".join(f"[{k!r}, {_type_text(v, variables)}]" for k, v in node.items()) + "]"
    return repr(node)


def _output_type(value):
    """The type of a structured output (tensors as TensorSpecs, Python values as literals)."""
    def leaf(x):
        if isinstance(x, Tensor):
            return Spec(x._value.shape, dtypes._BY_NP[x._value.dtype])
        try:
            return Literal(x)
        except TypeError:
            return x
    return optree.tree_map(leaf, value, none_is_leaf=True, namespace=_NS)


def _param_rows(ftype):
    """(name, kind, type text) per parameter of `ftype`."""
    args, kwargs = ftype.tree()
    variables = {}
    rows, positional = [], iter(args)
    for name, kind in ftype.params:
        node = kwargs[name] if kind in (_P.KEYWORD_ONLY,) and name in kwargs else next(positional)
        rows.append((name, kind, _type_text(node, variables)))
    return rows


def signature_text(concrete, outputs=True):
    """`(x: TensorSpec(...), b: Literal[2]) -> TensorSpec(...)`."""
    ftype = concrete._function_type
    text = "(" + ", ".join(f"{n}: {t}" for n, _, t in _param_rows(ftype)) + ")"
    if outputs:
        text += " -> " + _type_text(_output_type(_outputs(concrete)), {})
    return text


def _outputs(concrete):
    """The structured outputs as the function returns them (Python numbers as tensors)."""
    return nest.pack_sequence_as(concrete.structured_outputs, concrete._flat_outputs)


def pretty_signature(concrete, verbose=True):
    """TensorFlow's `ConcreteFunction.pretty_printed_signature`."""
    if not verbose:
        return signature_text(concrete)
    lines = ["Input Parameters:"]
    lines += [f"  {n} ({kind.name}): {t}" for n, kind, t in _param_rows(concrete._function_type)]
    lines += ["Output Type:", "  " + _type_text(_output_type(_outputs(concrete)), {}), "Captures:"]
    captures = [f"  {id(c)}: {Spec(c._value.shape, dtypes._BY_NP[c._value.dtype])!r}"
                for c in concrete.captured_inputs]
    arguments = {id(t.ref()) for t in concrete._function_type.leaves if isinstance(t, Ref)}
    captures += [f"  {id(v)}: TensorSpec(shape=(), dtype=tf.resource, name=None)" for v in concrete.graph.variables
                 if id(v) not in arguments]
    lines += captures or ["  None"]
    return "\n".join(lines)


def structured_input_signature(concrete):
    """((positional specs and values), {keyword: spec or value}) with TensorSpecs named by path."""
    ftype = concrete._function_type
    args, kwargs = ftype.tree()
    names = [n for n, kind in ftype.params if kind is not _P.KEYWORD_ONLY]

    def named(node, path):
        if isinstance(node, Spec):
            return node.tensor_spec("_".join(str(p) for p in path))
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Ref):
            return node.ref()
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return type(node)(*[named(v, path + [f]) for f, v in zip(node._fields, node, strict=True)])
        if isinstance(node, (list, tuple)):
            return type(node)(named(v, path + [i]) for i, v in enumerate(node))
        if isinstance(node, dict):
            return {k: named(v, path + [k]) for k, v in node.items()}
        return node
    return (tuple(named(a, [n]) for a, n in zip(args, names, strict=True)),
            {k: named(v, [k]) for k, v in kwargs.items()})


# -- calling a concrete function -------------------------------------------------------

def binding_error(ftype, reason, args, kwargs):
    """The TypeError of a call of a function with an input_signature that does not bind."""
    text = "(" + ", ".join(f"{n}: {t}" for n, _, t in _param_rows(ftype)) + ")"
    return TypeError(f"Binding inputs to tf.function failed due to `{reason}`. Received args: {args!r} and "
                     f"kwargs: {kwargs!r} for signature: {text}.")


def bind_concrete(concrete, args, kwargs):
    """The flat tensor inputs of a call of `concrete` (Note [function types]).

    Raises:
      TypeError: the arguments bind neither to the traced signature nor to the flat one.
      InvalidArgumentError: a flat argument has another dtype than its input.
    """
    ftype = concrete._function_type
    try:
        return _bind_structured(ftype, args, kwargs)
    except (TypeError, ValueError) as e:
        structured = _message(e)
    try:
        return _bind_flat(concrete, ftype, args, kwargs)
    except TypeError as e:
        raise TypeError(f"Binding inputs to tf.function failed due to `{structured}`. Received args: {args!r} and "
                        f"kwargs: {kwargs!r} for signature: {signature_text(concrete)}.\nFallback to flat signature "
                        f"also failed due to: {_message(e)}") from None


def _message(e):
    return e.args[0] if e.args else str(e)


def _signature(ftype):
    return inspect.Signature([_P(name, kind) for name, kind in ftype.params])


def _bind_structured(ftype, args, kwargs):
    bound = _signature(ftype).bind(*args, **kwargs)
    args_t, kwargs_t = ftype.tree()
    new_args = [_cast(v, t) for v, t in zip(bound.args, args_t, strict=True)]
    new_kwargs = {k: _cast(bound.kwargs[k], t) for k, t in kwargs_t.items()}
    return [v for v in nest.flatten((tuple(new_args), new_kwargs)) if isinstance(v, Tensor)]


def _cast(value, expected):
    """`value` made to fit the trace type tree `expected` (tensors converted), or ValueError."""
    if isinstance(expected, Spec):
        return cast_to_spec(value, expected)
    if isinstance(expected, (Literal, Ref)):
        if not leaf_type_matches(value, expected):
            raise ValueError(f"Can not cast {value!r} to {expected!r}")
        return value
    if isinstance(expected, (list, tuple, dict)):
        if type(value) is not type(expected) or len(value) != len(expected) or (
                isinstance(expected, dict) and set(value) != set(expected)):
            raise ValueError(f"Can not cast {value!r} to {type(expected).__name__} type.")
        if isinstance(expected, dict):
            return type(value)({k: _cast(value[k], expected[k]) for k in expected})
        items = [_cast(v, t) for v, t in zip(value, expected, strict=True)]
        return type(value)(*items) if hasattr(expected, "_fields") else type(value)(items)
    raise ValueError(f"Can not cast {value!r} to {expected!r}")


def leaf_type_matches(value, expected):
    try:
        return leaf_type(value) == expected
    except TypeError:
        return False


def cast_to_spec(value, spec):
    """`value` as a tensor of `spec` (Python and NumPy values converted to its dtype).

    Raises:
      ValueError: a tensor of another dtype or of an incompatible shape.
    """
    if isinstance(value, Variable):
        value = value.value()
    elif isinstance(value, np.ndarray):
        value = convert_to_tensor(value.astype(spec.dtype._np, copy=False))
    elif not isinstance(value, Tensor):
        value = convert_to_tensor(value, dtype=spec.dtype)
    got = Spec(value._value.shape, dtypes._BY_NP[value._value.dtype])
    if not got.is_subtype_of(spec):
        raise ValueError(f"Can not cast {got!r} to {spec!r}")
    return value


def flat_names(ftype):
    """The names of the tensor inputs: their parameter's name ("x", then "x_1"...)."""
    args_t, kwargs_t = ftype.tree()
    by_param = list(zip([n for n, k in ftype.params if k is not _P.KEYWORD_ONLY], args_t))
    by_param += sorted(kwargs_t.items())
    names, used = [], {}
    for name, node in by_param:
        for leaf in nest.flatten(node):
            if isinstance(leaf, Spec):
                count = used.get(name, 0)
                used[name] = count + 1
                names.append(name if count == 0 else f"{name}_{count}")
    return names


def _bind_flat(concrete, ftype, args, kwargs):
    names = flat_names(ftype)
    text = f"{concrete.graph.name}({', '.join(names)})"
    if len(args) > len(names):
        raise TypeError(f"{text} takes {len(names)} positional arguments, got {len(args)}.")
    unexpected = sorted(k for k in kwargs if k not in names[len(args):])
    if unexpected:
        raise TypeError(f"{text} got unexpected keyword arguments: {', '.join(unexpected)}.")
    missing = [n for n in names[len(args):] if n not in kwargs]
    if missing:
        raise TypeError(f"{text} missing required arguments: {', '.join(missing)}.")
    values = list(args) + [kwargs[n] for n in names[len(args):]]
    for i, (v, placeholder) in enumerate(zip(values, concrete.graph.inputs, strict=True)):
        if not isinstance(v, Tensor) or isinstance(v, Variable):
            raise TypeError(f"{text}: expected argument #{i}(zero-based) to be a Tensor; got {type(v).__name__} "
                            f"({v}).")
        if v._value.dtype != placeholder._value.dtype:
            want, got = dtypes._BY_NP[placeholder._value.dtype], v.dtype
            raise InvalidArgumentError(
                None, None, f"cannot compute __inference_{concrete.graph.name} as input #{i}(zero-based) was "
                f"expected to be a {_kind_name(want)} tensor but is a {_kind_name(got)} tensor "
                f"[Op:__inference_{concrete.graph.name}]")
    return values


def _kind_name(dtype):
    return {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)

