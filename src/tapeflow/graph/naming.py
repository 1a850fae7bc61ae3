"""The `name=` argument of public ops: in a graph it names the op a call creates.

Note [op names]: a call `tf.reshape(x, s, name="r")` made while a graph is
built runs inside the name scope "r" (made unique: "r_1" the second time),
so the ops it creates are "r/...", and the op producing its result is then
renamed to the scope's own name, "r", as TensorFlow's single-op functions do.
`Graph.get_tensor_by_name("r:0")` finds it.  Executing eagerly the argument
is ignored, at the cost of one `is None` test for ops and one extra call
frame for Python-level functions (`name_public_functions`).
"""

import functools
import inspect
import re
import sys
import types

from tapeflow.framework.context import state

_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")

# Functions whose `name` is not the name of an op they create, or that name their ops themselves.
_NOT_NAMED = frozenset({"name_scope", "placeholder", "gradients", "hessians", "function"})


def call_named(fn, name, args, kwargs):
    """Calls `fn(*args, **kwargs)` in the graph being built, naming its result's op `name`."""
    from tapeflow.graph.graph import SymbolicTensor
    graph = state.graphs[-1]
    if not isinstance(name, str) or not _VALID_NAME.match(name):
        raise ValueError(f"'{name}' is not a valid root scope name. A root scope name has to match the "
                         f"following pattern: {_VALID_NAME.pattern}")
    first = len(graph._ops)
    with graph.name_scope(name) as scope:
        out = fn(*args, **kwargs)
    outputs = out if isinstance(out, (list, tuple)) else (out,)
    ops = {id(t.op): t.op for t in outputs if isinstance(t, SymbolicTensor) and t.graph is graph}
    if len(ops) == 1:
        (op,) = ops.values()
        if any(op is new for new in graph._ops[first:]):      # made by this call, not an input passed through
            op.name = scope[:-1]
    return out


def _named(fn, position):
    """`fn` with its `name` argument (keyword, or positional at `position`) applied in graphs."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not state.graphs:
            return fn(*args, **kwargs)
        if len(args) > position:
            name = args[position]
            args = args[:position] + args[position + 1:]
        else:
            name = kwargs.pop("name", None)
        if name is None:
            return fn(*args, **kwargs)
        return call_named(fn, name, args, kwargs)
    return wrapper


def name_public_functions(modules):
    """Rebinds, in each namespace module, every public function with a `name`
    parameter to its naming wrapper (one wrapper per function, shared by the
    namespaces that export it, so `tf.math.cumsum is tf.cumsum` still holds)."""
    wrapped = {}
    for module in modules:
        for attr, fn in list(vars(module).items()):
            if attr.startswith("_") or attr in _NOT_NAMED or not isinstance(fn, types.FunctionType):
                continue
            if fn not in wrapped:
                try:
                    params = inspect.signature(fn).parameters
                except (TypeError, ValueError):
                    continue
                if "name" not in params:
                    continue
                positional = params["name"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                wrapped[fn] = _named(fn, list(params).index("name") if positional else sys.maxsize)
            setattr(module, attr, wrapped[fn])
