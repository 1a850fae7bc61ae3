"""Writes src/tapeflow/framework/tf_v1_api.txt: TensorFlow's `tf.compat.v1` names.

Run with TensorFlow installed (it is read, never imported by tapeflow):

    python tools/generate_tf_v1_api.py

Each public name under `tf.compat.v1` (sub-namespaces included, `raw_ops`,
`keras`, `estimator`, `lite` and `compat` left out) becomes one line, sorted:

    random_normal = random.normal              the same object as TF2's tf.random.normal
    reduce_sum ~ reduce_sum|math.reduce_sum (input_tensor, axis=None, ...)
                                               a v1 version of the TF2 function at the same
                                               path, with TF's v1 parameters (none for a class)
    placeholder !                              only in compat.v1

Alternative TF2 names of one object are separated by `|`.  Parameter defaults
are kept when they are Python literals and written `...` otherwise.
How tapeflow reads the file: Note [compat.v1 names] in framework/export.py.
"""

import ast
import inspect
import os
import pathlib
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

SKIP = {"raw_ops", "keras", "estimator", "lite", "compat"}
OUT = pathlib.Path(__file__).resolve().parent.parent / "src" / "tapeflow" / "framework" / "tf_v1_api.txt"


def _is_api_module(obj):
    return isinstance(obj, types.ModuleType) and getattr(obj, "__name__", "").startswith("tensorflow._api.")


def walk(module, prefix="", seen=None):
    """(path, object) of the public names of an API module and its API sub-modules."""
    seen = set() if seen is None else seen
    try:
        names = sorted(dir(module))
    except Exception:       # noqa: BLE001 -- a lazily loaded module that fails to load
        return
    for name in names:
        if name.startswith("_") or name in SKIP:
            continue
        try:
            obj = getattr(module, name)
        except Exception:   # noqa: BLE001
            continue
        if isinstance(obj, types.ModuleType):
            if _is_api_module(obj) and id(obj) not in seen:
                seen.add(id(obj))
                yield from walk(obj, f"{prefix}{name}.", seen)
            continue
        yield prefix + name, obj


def _default(value):
    text = repr(value)
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return "..."
    return text


def parameters(fn):
    """TF's parameter list of `fn` as `(a, b=None, *, c=...)`, or None when it has none."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    parts, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            parts.append("*" + p.name)
            star = True
            continue
        if p.kind is p.VAR_KEYWORD:
            parts.append("**" + p.name)
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(p.name if p.default is p.empty else f"{p.name}={_default(p.default)}")
    return "(" + ", ".join(parts) + ")"


def generate():
    """The text of tf_v1_api.txt for the installed TensorFlow."""
    v2_paths = {}
    for path, obj in walk(tf):
        if obj is not None and not isinstance(obj, (bool, int, float, str)):      # constants: by value
            v2_paths.setdefault(id(obj), []).append(path)
    v2_objects = dict(walk(tf))
    lines = []
    for path, obj in walk(tf.compat.v1):
        same = v2_paths.get(id(obj))
        if obj is None or isinstance(obj, (bool, int, float, str)):       # a constant: by value
            same = [path] if path in v2_objects and v2_objects[path] == obj else None
        if same:
            lines.append(f"{path} = {'|'.join(sorted(same, key=lambda p: (p != path, p.count('.'), p)))}")
        elif path in v2_objects:          # a v1 version; a class is used as TF2's, a function adapted
            names = v2_paths.get(id(v2_objects[path]), [path])
            params = None if inspect.isclass(obj) else parameters(obj)
            line = f"{path} ~ {'|'.join(sorted(names, key=lambda p: (p != path, p.count('.'), p)))}"
            lines.append(line if params is None else f"{line} {params}")
        else:
            lines.append(f"{path} !")
    header = [f"# TensorFlow {tf.__version__}'s tf.compat.v1 API, written by tools/generate_tf_v1_api.py: do not "
              "edit.", "# NAME = TF2 NAMES: the same object; NAME ~ TF2 NAMES (PARAMETERS): a v1 version; NAME !: "
              "v1 only.", "# Note [compat.v1 names] in framework/export.py."]
    return "\n".join(header + lines) + "\n"


def main():
    text = generate()
    OUT.write_text(text)
    print(f"wrote {text.count(chr(10)) - 3} names to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
