"""Converting Python functions: finding their source, compiling the transformed
syntax tree with the original globals and closure cells, caching, and the
errors converted code raises while it is traced.

Note [conversion cache]: the transformation is done once per code object (the
compiled result is reused by every closure made from the same `def`); each
function object gets its own converted function, bound to the original's
globals and closure cells, so `nonlocal` writes and later rebinding of free
variables are shared with the original.

Note [which functions are converted]: the function given to `tf.function` and
the user functions converted code calls, recursively, but not tapeflow's own
functions, builtins, the standard library or the numerical libraries (nor
functions marked `do_not_convert`, generators, or functions already produced
by conversion).  A function whose source cannot be found runs unconverted,
with a warning.
"""

import ast
import copy
import functools
import inspect
import linecache
import os
import sys
import sysconfig
import traceback
import types
import warnings
import weakref

from tapeflow.framework.errors import OpError
from tapeflow.graph.autograph import loops, lowering, operators, transformer

_LIBRARIES = frozenset({
    "tapeflow", "numpy", "scipy", "optree", "ml_dtypes", "tensorflow", "keras", "tf_keras", "jax", "torch",
    "threadpoolctl", "mpi4py", "sklearn", "pandas", "tqdm", "pytest", "_pytest", "pluggy", "hypothesis", "IPython",
})
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB = sysconfig.get_paths()["stdlib"]
_DO_NOT_CONVERT = "__tapeflow_do_not_convert__"

_converted = weakref.WeakKeyDictionary()    # function -> its conversion (or itself: not converted)
_compiled = weakref.WeakKeyDictionary()     # code object -> (converted code object, converted source)
_generated = weakref.WeakKeyDictionary()    # code objects made by conversion -> the original function's name
_trees = {}                                 # filename -> (the lines parsed, {first line: function nodes})


class AutoGraphError(Exception):
    """Base class of AutoGraph's own exceptions."""


class ConversionError(AutoGraphError):
    """A function could not be converted (`tf.autograph.to_graph`, `to_code`)."""


class StagingError(AutoGraphError):
    """An exception of a class that cannot carry a new message, raised while converted code
    was traced: the message shows where in the user's code it happened."""


class _KeyError(KeyError):
    """A KeyError whose message keeps its lines (KeyError's own `str` quotes it)."""

    def __init__(self, message, key):
        super().__init__(key)
        self._message = message

    def __str__(self):
        return self._message


_KeyError.__name__ = "KeyError"


# -- which functions ---------------------------------------------------------------------

def _is_library(f):
    module = getattr(f, "__module__", None)
    if isinstance(module, str) and module.partition(".")[0] in _LIBRARIES:
        return True
    code = getattr(f, "__code__", None)
    if code is not None:            # the standard library, by file (a user's module may share a name)
        return code.co_filename.startswith(_STDLIB) and "site-packages" not in code.co_filename
    return isinstance(module, str) and module.partition(".")[0] in sys.stdlib_module_names


def converted_callable(f, warn=True):
    """What converted code calls for `f`: its conversion, or `f` itself (Note [which
    functions are converted])."""
    kind = type(f)
    if kind is types.FunctionType:
        return _convert_cached(f, warn)
    if kind is types.MethodType:
        func = f.__func__
        if type(func) is not types.FunctionType:
            return f
        new = _convert_cached(func, warn)
        return f if new is func else types.MethodType(new, f.__self__)
    if kind is functools.partial:
        new = converted_callable(f.func, warn)
        return f if new is f.func else functools.partial(new, *f.args, **f.keywords)
    if isinstance(f, type) or not callable(f):
        return f
    method = getattr(kind, "__call__", None)     # a callable object of a user class
    if type(method) is types.FunctionType and not _is_library(method) and not _is_library(f):
        new = _convert_cached(method, warn)
        return f if new is method else types.MethodType(new, f)
    return f


def call(f):
    """The callable converted code calls for `f`: a tensor-aware builtin, `f`'s conversion,
    or `f` itself."""
    overload = operators.BUILTINS.get(f) if type(f) is type or type(f) is type(len) else None
    return overload if overload is not None else converted_callable(f)


# Note [the ag__ namespace]: what converted code reaches as `ag__` (its factory's first
# argument, bound by `convert`): the operators of operators.py, the loops of loops.py and
# `call` above.  Being a namespace built here, rather than a module that converted code
# imports, it keeps the imports one way: this module uses the operators, and they never
# need to reach back here (only `call` converts, and it lives here).
_AG = types.SimpleNamespace(
    **{name: getattr(operators, name) for name in (
        "UndefinedReturnValue", "and_", "if_exp", "if_stmt", "ld", "not_", "or_", "retval")},
    for_stmt=loops.for_stmt, while_stmt=loops.while_stmt, call=call)


def _convert_cached(f, warn):
    try:
        return _converted[f]
    except KeyError:
        pass
    except TypeError:       # not weak-referenceable
        return f
    new = f
    if not _skipped(f):
        try:
            new = convert(f)
        except ConversionError as e:
            if warn:
                warnings.warn(f"AutoGraph could not transform {f!r} and will run it as-is.\nCause: {e}\nTo silence "
                              "this warning, decorate the function with @tf.autograph.experimental.do_not_convert",
                              stacklevel=4)
    _converted[f] = new
    return new


def _skipped(f):
    code = f.__code__
    return (getattr(f, _DO_NOT_CONVERT, False) or code in _generated or _is_library(f)
            or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR))


def mark_do_not_convert(f):
    setattr(f, _DO_NOT_CONVERT, True)
    return f


# -- conversion ----------------------------------------------------------------------------

def convert(f):
    """The converted version of the Python function `f` (Note [conversion cache]).

    Raises:
      ConversionError: the source of `f` cannot be found, or does not compile once converted.
    """
    code = f.__code__
    entry = _compiled.get(code)
    if entry is None:
        entry = _compiled[code] = _compile(code, f.__globals__)
    new_code, _ = entry
    cells = dict(zip(code.co_freevars, f.__closure__ or ()))
    cells["ag__"] = types.CellType(_AG)      # Note [the ag__ namespace]
    new = types.FunctionType(new_code, f.__globals__, f.__name__, f.__defaults__,
                             tuple(cells.get(name) or types.CellType() for name in new_code.co_freevars))
    new.__kwdefaults__ = dict(f.__kwdefaults__) if f.__kwdefaults__ else f.__kwdefaults__
    new.__dict__.update(f.__dict__)
    for attr in ("__qualname__", "__module__", "__doc__", "__annotations__"):
        setattr(new, attr, getattr(f, attr))
    return new


def source_of(f):
    """The converted source of `f` (`tf.autograph.to_code`)."""
    code = f.__code__
    entry = _compiled.get(code)
    if entry is None:
        entry = _compiled[code] = _compile(code, f.__globals__)
    return entry[1]


def _compile(code, module_globals):
    node = _find_node(code, module_globals)
    try:
        node = transformer.convert_function(node, code.co_name, in_class="__class__" in code.co_freevars)
    except Exception as e:      # noqa: BLE001 -- a construct the transformation cannot handle
        raise ConversionError(f"converting {code.co_name}: {type(e).__name__}: {e}") from e
    source = ast.unparse(node)
    node.name = "__autograph_converted"     # not its own name: a recursive call must find the original
    factory = ast.FunctionDef(
        name="__autograph_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in ("ag__",) + code.co_freevars],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[node, ast.Return(ast.Name(node.name, ast.Load()))], decorator_list=[], returns=None)
    lowering.located(factory, node)
    module = lowering.fill_positions(ast.Module(body=[factory], type_ignores=[]))
    try:
        compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, TypeError) as e:
        raise ConversionError(f"the converted code of {code.co_name} does not compile: {e}") from None
    outer = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    new_code = next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
    names = {"co_name": code.co_name}
    if hasattr(code, "co_qualname"):
        names["co_qualname"] = code.co_qualname
    new_code = new_code.replace(**names)
    _register(new_code, code.co_name)
    return new_code, source


def _register(code, name):
    _generated[code] = name
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _register(const, name)


def _find_node(code, module_globals):
    """The syntax tree of the function whose code is `code`, found in its file."""
    lines = linecache.getlines(code.co_filename, module_globals)
    if not lines:
        raise ConversionError(f"Unable to locate the source code of {code.co_name} ({code.co_filename}). Functions "
                              "defined in an interactive shell or by exec do not expose their source: define them "
                              "in a .py file, or, if the code is graph-compatible, wrap the call with "
                              "@tf.autograph.experimental.do_not_convert.")
    cached = _trees.get(code.co_filename)
    if cached is None or cached[0] is not lines:
        try:
            tree = ast.parse("".join(lines), code.co_filename)
        except SyntaxError as e:
            raise ConversionError(f"could not parse the source of {code.co_filename}: {e}") from None
        by_line = {}
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.Lambda)):
                by_line.setdefault(_first_line(n), []).append(n)
        cached = _trees[code.co_filename] = (lines, by_line)
    matches = [n for n in cached[1].get(code.co_firstlineno, ()) if _is_node_of(n, code)]
    if len(matches) > 1:
        matches = [n for n in matches if _holds_code(n, code)]
    if len(matches) != 1:
        what = "no" if not matches else "more than one"
        raise ConversionError(f"{what} function definition matches {code.co_name} at {code.co_filename}:"
                              f"{code.co_firstlineno}")
    node = copy.deepcopy(matches[0])
    if isinstance(node, ast.Lambda):
        node = lowering.located(ast.FunctionDef(name="__autograph_lambda", args=node.args,
                                                body=[lowering.located(ast.Return(node.body), node.body)],
                                                decorator_list=[], returns=None), node)
    node.decorator_list = []
    return node


def _first_line(node):
    """The line a function's code object starts at (its first decorator's)."""
    if isinstance(node, ast.FunctionDef) and node.decorator_list:
        return node.decorator_list[0].lineno
    return node.lineno


def _holds_code(node, code):
    """Whether the lambda `node` holds the instructions of `code` (lambdas sharing a line
    told apart by their columns)."""
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return True
    for line, _, col, _ in positions():
        if line == node.lineno and col:
            return node.col_offset <= col and (node.end_lineno > line or col < node.end_col_offset)
    return True


def _is_node_of(node, code):
    if isinstance(node, ast.FunctionDef):
        return node.name == code.co_name
    if code.co_name != "<lambda>":
        return False
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return names == list(code.co_varnames[:count])


# -- calling and errors ----------------------------------------------------------------------

def call_converted(f, args, kwargs):
    """Calls the conversion of `f` (tf.function's tracing); an exception raised in converted
    code is raised again with the user's frames in its message, as TensorFlow does."""
    target = converted_callable(f)
    if target is f:
        return f(*args, **kwargs)
    try:
        return target(*args, **kwargs)
    except Exception as e:      # noqa: BLE001 -- every class is re-raised (staging_error)
        raise staging_error(e).with_traceback(e.__traceback__) from None


_STRING_CONSTRUCTED = (AssertionError, AttributeError, NameError, NotImplementedError, RuntimeError, StopIteration,
                       TypeError, UnboundLocalError, ValueError)
_STRING_INITS = tuple(k.__init__ for k in _STRING_CONSTRUCTED)


def staging_error(e):
    """`e` again, its message led by the user's frames: the same class where it takes a
    message (OpErrors keep their op), a KeyError, or else a StagingError."""
    if getattr(e, "_autograph_frames", False):
        return e
    message = _user_frames_message(e)
    kind = type(e)
    try:
        if issubclass(kind, OpError):
            new = kind(e.node_def, e.op, message)
        elif (kind in _STRING_CONSTRUCTED or kind.__init__ is Exception.__init__ or issubclass(kind, AutoGraphError)
              or kind.__init__ in _STRING_INITS):      # their subclasses keeping their constructor
            new = kind(message)
        elif kind is KeyError:
            new = _KeyError(message, e.args[0] if e.args else None)
        else:
            new = StagingError(message)
    except Exception:       # noqa: BLE001 -- a class that cannot be rebuilt from a message
        new = StagingError(message)
    new._autograph_frames = True
    return new


def _user_frames_message(e):
    lines = ["in user code:", ""]
    last = None
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        code = frame.f_code
        filename = code.co_filename
        if filename.startswith(_PACKAGE_DIR) or (filename, lineno) == last:
            continue
        last = (filename, lineno)
        converted = code in _generated
        name = _generated.get(code, code.co_name)
        lines.append(f'    File "{filename}", line {lineno}, in {name}' + ("  *" if converted else ""))
        source = linecache.getline(filename, lineno).strip()
        lines.append("        " + (source or "<source unavailable>"))
    lines.append("")
    lines.extend("    " + line for line in f"{type(e).__name__}: {e}".split("\n"))
    lines.append("")
    return "\n".join(lines)
