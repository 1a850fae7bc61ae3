"""TF1 parameter lists over TF2 functions: the v1 versions of `tf.compat.v1`.

Note [v1 signatures]: where TensorFlow's `tf.compat.v1.reduce_sum` is its own
function (a v1 version of `tf.reduce_sum`), it differs from the TF2 one only
in its parameters: their order (`argmax(input, axis, name, dimension, ...)`),
deprecated aliases (`keep_dims`, `reduction_indices`, `dim`) and arguments
that TF2 dropped (`use_cudnn_on_gpu`, `validate_indices`).  `v1_version` makes
such a function from tapeflow's TF2 one and TensorFlow's v1 parameter list
(tf_v1_api.txt, Note [compat.v1 names] in export.py): it binds a call to the
v1 parameters, renames the aliases (`_RENAMED`, TensorFlow's
`deprecated_argument_lookup` pairs), and passes what was given by keyword to
the TF2 function, whose defaults stand for the arguments left out.  A v1-only
argument given with its v1 default is dropped; with another value it raises
TypeError naming it.  v1 versions whose meaning differs (`cond`, `while_loop`,
`nn.dropout`, `nn.softmax_cross_entropy_with_logits`, `where`) are written
out in compat/ and exported explicitly, which wins over this.
"""

import ast
import functools
import inspect

# v1 parameter -> the TF2 parameter it became (used only when the TF2 function lacks the v1 name)
_RENAMED = {
    "keep_dims": "keepdims", "reduction_indices": "axis", "dim": "axis", "dimension": "axis",
    "squeeze_dims": "axis", "preferred_dtype": "dtype_hint", "fn1": "true_fn", "fn2": "false_fn",
    "tensor": "input", "value": "input", "input_tensor": "input", "filter": "filters",
    "seq_dim": "seq_axis", "batch_dim": "batch_axis", "device_name_or_function": "device_name",
    "targets": "labels", "dilation_rate": "dilations", "reduction_axes": "axis", "string_tensor": "input",
}

_NO_DEFAULT = object()


def v1_version(fn, params, v1_path):
    """`fn` (a TF2 function) called with TensorFlow's v1 parameters `params` (Note [v1 signatures]).

    Args:
      fn: tapeflow's TF2 function.
      params: TensorFlow's v1 parameter list as text, "(input_tensor, axis=None, keep_dims=None)".
      v1_path: the v1 name, for messages ("reduce_sum" for `tf.compat.v1.reduce_sum`).

    Returns:
      `fn` itself when its parameters are the v1 ones (`name` aside), else the v1 function.

    >>> import tapeflow as tf
    >>> tf.compat.v1.reduce_sum([[1.0, 2.0]], reduction_indices=[1], keep_dims=True).numpy()
    array([[3.]], dtype=float32)
    """
    try:
        tf2 = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        tf2 = None
    v1 = list(_parse(params)[0].parameters)
    if tf2 == v1 or (tf2 is not None and "name" not in tf2 and v1 == tf2 + ["name"]):     # an op: name last
        return fn
    binder = []

    @functools.wraps(fn)
    def v1(*args, **kwargs):
        if not binder:
            binder.append(_Binder(fn, params, v1_path))
        return fn(**binder[0].arguments(args, kwargs))

    del v1.__wrapped__          # its signature is the v1 one, not fn's
    v1.__doc__ = f"`tf.compat.v1.{v1_path}{params}`: the v1 parameters of `tf.{v1_path}` (Note [v1 signatures])."
    return v1


class _Binder:
    """Maps a call with the v1 parameters to keyword arguments of the TF2 function."""

    def __init__(self, fn, params, v1_path):
        self.path = v1_path
        self.signature, self.defaults = _parse(params)
        try:
            tf2 = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            tf2 = None
        self.accepts_any = tf2 is None or any(p.kind is p.VAR_KEYWORD for p in tf2.values())
        self.tf2 = set() if tf2 is None else set(tf2)

    def arguments(self, args, kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"tf.compat.v1.{self.path}{self.signature}: {e}") from None
        out = {}
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
                continue
            if kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise TypeError(f"tf.compat.v1.{self.path} takes no extra positional arguments in tapeflow.")
                continue
            if value is None and name in self.defaults and self.defaults[name] is None:
                continue                    # an unset v1 default: the TF2 default applies
            target = self._target(name)
            if target is None:
                if _is_default(value, self.defaults.get(name, _NO_DEFAULT)):
                    continue
                raise TypeError(f"tf.compat.v1.{self.path}: the v1 argument `{name}`={value!r} is not supported by "
                                f"tapeflow (its TF2 version has no such parameter); leave it at its default or "
                                f"use tf.{self.path}.")
            if target in out:
                raise ValueError(f"Cannot specify both '{target}' and '{name}'.")
            out[target] = value
        return out

    def _target(self, name):
        if self.accepts_any or name in self.tf2:
            return name
        renamed = _RENAMED.get(name)
        return renamed if renamed in self.tf2 else None


@functools.lru_cache(maxsize=None)
def _parse(params):
    """(inspect.Signature, {name: default}) of a parameter list "(a, b=None, *, c=...)";
    a default that is not a Python literal (`...`) matches nothing."""
    node = ast.parse(f"def _{params}: pass").body[0].args
    kind = inspect.Parameter
    out, defaults = [], {}
    positional = node.posonlyargs + node.args
    first_default = len(positional) - len(node.defaults)
    for i, a in enumerate(positional):
        if i >= first_default:
            defaults[a.arg] = _literal(node.defaults[i - first_default])
        out.append(kind(a.arg, kind.POSITIONAL_OR_KEYWORD,
                        default=None if a.arg in defaults else kind.empty))
    if node.vararg:
        out.append(kind(node.vararg.arg, kind.VAR_POSITIONAL))
    for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True):
        if d is not None:
            defaults[a.arg] = _literal(d)
        out.append(kind(a.arg, kind.KEYWORD_ONLY, default=None if d is not None else kind.empty))
    if node.kwarg:
        out.append(kind(node.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(out), defaults


def _literal(node):
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return _NO_DEFAULT
    return ast.literal_eval(node)


def _is_default(value, default):
    if default is _NO_DEFAULT:
        return False
    if value is default:
        return True
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:           # noqa: BLE001 -- arrays and tensors: not a default
        return False
