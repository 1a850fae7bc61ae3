"""The one export mechanism: `tf_export` places a public name in its namespaces.

    @tf_export("math.softplus", "nn.softplus")
    def softplus(features, name=None):
        ...

A path without a dot is a top-level name (`tf.abs`); "compat.v1.placeholder"
is `tf.compat.v1.placeholder`.  Each namespace module holds only its
docstring and `populate(__name__)`, which fills it from the exports; the
package's `__init__.py` does the same for the top level.  Every namespace
exporting one function gets the same object, so `tf.math.cumsum is tf.cumsum`.

Note [op names]: the `name=` argument of a public function names, in a graph,
the op its call creates.  `tf.reshape(x, s, name="r")` made while a graph is
built runs inside the name scope "r" (made unique: "r_1" the second time), so
the ops it creates are "r/...", and the op producing its result is then
renamed to the scope's own name, "r", as TensorFlow's single-op functions do;
`Graph.get_tensor_by_name("r:0")` finds it.  An `Op` handles the argument in
its `__call__`; a Python function with a `name` parameter is exported as a
wrapper doing the same (made once, here).  Executing eagerly the argument is
ignored, at the cost of one `is None` test for ops and one extra call frame
for Python functions.

Note [compat.v1 names]: `tf.compat.v1` holds, besides its own TF1 names, every
TF2 name that TensorFlow also exports there, generated from one place: the
file tf_v1_api.txt next to this module, TensorFlow's `tf.compat.v1` API written
by `tools/generate_tf_v1_api.py` from an installed TensorFlow.  Exporting a
TF2 path places the object under each v1 name that TensorFlow gives the same
object ("random_normal = random.normal"), and under each v1 name whose v1
version TensorFlow derives from it with other parameters ("reduce_sum ~ ...")
wrapped by `v1_signatures.v1_version` (Note [v1 signatures]).  A v1 name
exported explicitly ("compat.v1.placeholder", or a v1 version whose meaning
differs, as `compat.v1.cond`) wins over a derived one, whatever the import
order.  The list is data rather than a decorator argument at each export, so
a name that TensorFlow's v1 API lacks never appears there, nothing is copied by
hand, and regenerating the file follows a new TensorFlow; the names are placed
as each TF2 name is exported (not when compat/v1.py is imported), so modules
imported later (tf.Module, tf.print) are covered too.  Namespace modules stay
current: an export made after a namespace was populated is set on its module
too, and the v1 sub-namespaces without a module of their own (`compat.v1.nn`,
`.math`, ...) get one made here.
"""

import functools
import inspect
import pathlib
import re
import sys
import types

from tapeflow.framework.context import state
from tapeflow.framework import v1_signatures

# This module imports only `context` and `v1_signatures` of tapeflow (which export nothing
# themselves), so every other module can export with it.

_EXPORTS = {}       # namespace ("" for the top level, "math", "compat.v1") -> {name: object}
_MODULES = {}       # namespace -> its module, once populated (later exports are set on it too)
_DERIVED = set()    # (namespace, name) placed from the v1 list, not exported explicitly
_V1_API = None      # TF2 path -> [(v1 path, v1 parameters or None)] (Note [compat.v1 names])

_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")


def tf_export(*paths, names_op=True):
    """Decorator exporting an object under the public `paths`.

    Args:
      *paths: dotted public names ("reduce_sum", "math.reduce_sum").
      names_op: whether a `name` argument names the op the call creates
        (Note [op names]); False for functions using `name` otherwise
        (`function`, `name_scope`, `placeholder`).

    Returns:
      The decorator; it returns the object unchanged (internal callers skip
      the naming wrapper).

    Raises:
      KeyError: a path is exported twice for different objects.
    """
    def export(obj):
        public = _with_name_argument(obj) if names_op else obj
        for path in paths:
            _place(path, public, derived=False)
            if isinstance(obj, types.ModuleType):
                _MODULES[path] = obj
                vars(obj).update(_EXPORTS.get(path, {}))
        for path in paths:
            if not path.startswith("compat."):
                for v1_path, params in _v1_api().get(path, ()):
                    _place("compat.v1." + v1_path, public if params is None else
                           v1_signatures.v1_version(public, params, v1_path), derived=True)
        return obj
    return export


def _place(path, obj, derived):
    """Puts `obj` at the public `path` (an explicit export wins over a derived one)."""
    namespace, _, attr = path.rpartition(".")
    table = _EXPORTS.setdefault(namespace, {})
    current = table.get(attr, obj)
    if current is not obj:
        if derived:
            return                                  # explicit, or derived from an earlier export
        if (namespace, attr) not in _DERIVED:
            raise KeyError(f"tf.{path} is exported twice: {current!r} and {obj!r}.")
    (_DERIVED.add if derived else _DERIVED.discard)((namespace, attr))
    table[attr] = obj
    module = _MODULES.get(namespace)
    if module is None and namespace.startswith("compat.v1."):
        module = _namespace_module(namespace)
    if module is not None:
        setattr(module, attr, obj)


def _namespace_module(namespace):
    """A module for a v1 sub-namespace that has none of its own (`tf.compat.v1.nn`)."""
    name = "tapeflow." + namespace
    module = _MODULES[namespace] = sys.modules[name] = types.ModuleType(
        name, f"`tf.{namespace}`: the TF2 names TensorFlow also exports here (Note [compat.v1 names]).")
    vars(module).update(_EXPORTS.get(namespace, {}))
    _place(namespace, module, derived=True)
    return module


def _v1_api():
    """The v1 list by TF2 path, read once from tf_v1_api.txt (Note [compat.v1 names])."""
    global _V1_API
    if _V1_API is None:
        _V1_API = {}
        for line in (pathlib.Path(__file__).parent / "tf_v1_api.txt").read_text().splitlines():
            if line.startswith("#") or line.endswith(" !"):
                continue
            v1_path, kind, rest = line.split(" ", 2)
            tf2_paths, _, params = rest.partition(" ")
            for tf2_path in tf2_paths.split("|"):
                _V1_API.setdefault(tf2_path, []).append((v1_path, params or None if kind == "~" else None))
    return _V1_API


def populate(module_name):
    """Fills the namespace module `module_name` ("tapeflow.math") with its exports
    (and with those made later: Note [compat.v1 names])."""
    namespace = module_name.partition(".")[2]
    _MODULES[namespace] = sys.modules[module_name]
    vars(sys.modules[module_name]).update(_EXPORTS.get(namespace, {}))


def exported(namespace):
    """{name: object} of one namespace ("" for the top level)."""
    return dict(_EXPORTS.get(namespace, {}))


def _with_name_argument(obj):
    """`obj`, or for a Python function with a `name` parameter, its naming wrapper."""
    if not isinstance(obj, types.FunctionType):
        return obj
    params = inspect.signature(obj).parameters
    if "name" not in params:
        return obj
    positional = params["name"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    return _named(obj, list(params).index("name") if positional else sys.maxsize)


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


def call_named(fn, name, args, kwargs):
    """Calls `fn(*args, **kwargs)` in the graph being built, naming its result's op `name`."""
    graph = state.graphs[-1]
    if not isinstance(name, str) or not _VALID_NAME.match(name):
        raise ValueError(f"'{name}' is not a valid root scope name. A root scope name has to match the "
                         f"following pattern: {_VALID_NAME.pattern}")
    first = len(graph._ops)
    with graph.name_scope(name) as scope:
        out = fn(*args, **kwargs)
    outputs = out if isinstance(out, (list, tuple)) else (out,)
    ops = {id(t.op): t.op for t in outputs if getattr(t, "_is_symbolic", False) and t.graph is graph}
    if len(ops) == 1:
        (op,) = ops.values()
        if any(op is new for new in graph._ops[first:]):      # made by this call, not an input passed through
            op.name = scope[:-1]
    return out
