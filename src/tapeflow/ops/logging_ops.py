"""`tf.print` and `tf.strings.format`: tensors formatted as TensorFlow's kernels format them.

`tf.print(*inputs)` builds one template from its inputs (Python values as
`pprint` shows them, a placeholder per tensor), formats the tensors into it
with the StringFormat op and writes the text with the PrintV2 op.  PrintV2 is
stateful: eagerly it prints at once; in a `tf.function` it is a node that runs
every time the function runs, in program order with the other stateful ops
(plans run ops in creation order, Note [plan order] in graph/executor.py), and
is never pruned even though nothing reads it.  In a TF1 graph it runs when
fetched, as TensorFlow's.
"""

import collections
import logging
import math
import os
import pprint
import sys

import numpy as np
import optree

from tapeflow.framework import dtypes, sparse_tensor
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.symbolic_tensors import Meta
from tapeflow.framework.tensor import convert_to_tensor, is_tensor

_STRING = dtypes.string._np


# -- one tensor as text ----------------------------------------------------------------------
#
# Note [tensor summaries]: TensorFlow's kernels print a tensor as nested brackets,
# elements separated by a space, rows by a newline and one more space of indent
# per level, and a blank line more per level above the rows.  `summarize` = n
# keeps, along every dimension longer than 2n, the first n and last n entries
# around a "...", where n is min(summarize, number of elements) (-1: every
# element).  Floats use the shortest of "%.6g" / "%.9g" that reads back exactly
# (float64: "%.15g" / "%.17g"), subnormals print as 0 (TensorFlow's CPU flushes
# them); half floats print as float32; bools as 1 and 0; strings quoted with C
# escapes (bytes above 0x7F as they are); complex values as "?", then flat.

_SUBNORMAL_FLUSHED = {np.dtype(np.float32): np.finfo(np.float32).smallest_normal,
                      dtypes.bfloat16._np: np.finfo(np.float32).smallest_normal,
                      np.dtype(np.float64): np.finfo(np.float64).smallest_normal}


def _float_text(x, digits, wide):
    """`x` in the shortest of two `%g` precisions that reads back as the same value."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    text = "%.*g" % (digits, x)
    back = float(text)
    if (back if wide else np.float32(back)) != x:
        text = "%.*g" % (wide or 9, x)
    return text


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
            ord("\\"): "\\\\"}


def _quoted(element):
    """A string element (its bytes as Latin-1 characters) quoted with C escapes."""
    out = []
    for ch in element:
        code = ord(ch)
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append("\\%03o" % code)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _element_formatter(dtype):
    """The function printing one element of an array of NumPy `dtype`; None for "?" dtypes."""
    if dtype == _STRING:
        return _quoted
    if dtype.kind == "b":
        return lambda x: "1" if x else "0"
    if dtype.kind in "iu":
        return lambda x: str(int(x))
    if dtype == np.float64:
        tiny = _SUBNORMAL_FLUSHED[dtype]
        return lambda x: _float_text(math.copysign(0.0, x) if abs(x) < tiny else float(x), 15, 17)
    if dtype in (np.float32, np.float16, dtypes.bfloat16._np):
        tiny = _SUBNORMAL_FLUSHED.get(dtype, 0.0)
        return lambda x: _float_text(math.copysign(0.0, x) if abs(float(x)) < tiny else float(np.float32(x)),
                                     6, None)
    return None


def tensor_summary(value, summarize=3):
    """A NumPy value (a string tensor's: Latin-1 characters) as TensorFlow prints it.

    Args:
      value: a NumPy array or scalar.
      summarize: entries kept at each end of every dimension; -1 keeps all
        (Note [tensor summaries]).

    Returns:
      The text, as Latin-1 characters standing for bytes (Note [string tensors]).

    >>> import numpy as np
    >>> tensor_summary(np.arange(10)), tensor_summary(np.float32(1 / 3)), tensor_summary(np.eye(2) > 0)
    ('[0 1 2 ... 7 8 9]', '0.333333343', '[[1 0]\\n [0 1]]')
    """
    value = np.asarray(value)
    count = value.size
    summarize = 3 if summarize is None else summarize
    limit = count if summarize < 0 else min(summarize, count)
    fmt = _element_formatter(value.dtype)
    if fmt is None:                     # no printer for this dtype: "?" per element, flat
        text = " ".join("?" * limit) + ("..." if limit < count else "")
        return f"[{text}]" if value.ndim else text
    if value.ndim == 0:
        return (fmt(value[()]) if limit else "") + ("..." if count > limit else "")
    out = []
    _dimension(value, limit, fmt, 0, value.ndim, out)
    return "".join(out)


def _dimension(value, ends, fmt, level, rank, out):
    """One bracketed level of Note [tensor summaries], appended to `out`."""
    if level == rank:
        out.append(fmt(value))
        return
    spacing = " " if level == rank - 1 else "\n" * (rank - level - 1) + " " * (level + 1)
    size = len(value)
    out.append("[")
    for i in range(min(ends, size)):
        if i:
            out.append(spacing)
        _dimension(value[i], ends, fmt, level + 1, rank, out)
    if size > 2 * ends:
        out.append(spacing + "...")
    for i in range(max(ends, size - ends), size):
        out.append(spacing)
        _dimension(value[i], ends, fmt, level + 1, rank, out)
    out.append("]")


# -- the ops -----------------------------------------------------------------------------------

def _scalar_string(*inputs, **attrs):
    return [Meta((), _STRING)]


@op("StringFormat", same_dtype=False, shape=_scalar_string, unknown_rank=True, differentiable=False)
def _string_format(*inputs, template, placeholder, summarize):
    parts = template.split(placeholder)
    text = [parts[0]]
    for value, part in zip(inputs, parts[1:], strict=True):
        text.append(tensor_summary(value, summarize))
        text.append(part)
    return np.array("".join(text), dtype=_STRING)


@_string_format.def_batch
def _string_format_batch(xs, batched, **attrs):
    # as TensorFlow's pfor: the stacked values are formatted whole, batch axis included, into one string
    return execute(_string_format, xs, attrs), False


def _no_outputs(*inputs, **attrs):
    return []


@op("PrintV2", dtypes=(dtypes.string,), num_outputs=-1, stateful=True, shape=_no_outputs,
    differentiable=False)
def _print(text, output_stream, end):
    # (a vector of texts only from the batching rule: one per example, in order)
    message = "".join(t + end for t in np.asarray(text).reshape(-1).tolist())
    message = message.encode("latin-1").decode("utf-8", errors="replace")
    if output_stream in ("stdout", "stderr"):       # the streams of the moment (redirected ones too)
        stream = getattr(sys, output_stream)
        stream.write(message)
        stream.flush()
    elif output_stream.startswith("file://"):
        with open(output_stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(message)
    else:
        level = {"log(info)": logging.INFO, "log(warning)": logging.WARNING}.get(output_stream, logging.ERROR)
        logging.getLogger("tapeflow").log(level, message[:-len(end)] if end else message)
    return ()


@_print.def_batch
def _print_batch(xs, batched, **attrs):
    # a batched text (a string scalar printed alone): every example's, in order
    return execute(_print, xs, attrs), ()


@tf_export("strings.format")
def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """Formats tensors into a template: each `placeholder` becomes the next tensor's text.

    Args:
      template: a Python string.
      inputs: a tensor or a list of tensors, one per placeholder.
      placeholder: the text in `template` standing for a tensor.
      summarize: entries kept at each end of every dimension (-1: all).
      name: a name for the op.

    Returns:
      A scalar string tensor.

    Raises:
      ValueError: the template has a different number of placeholders than `inputs`.

    >>> import tapeflow as tf
    >>> tf.strings.format("x = {}", tf.range(8), summarize=2).numpy()
    b'x = [0 1 ... 6 7]'
    """
    if is_tensor(inputs):
        inputs = [inputs]
    inputs = [convert_to_tensor(x) for x in inputs]
    if template.count(placeholder) != len(inputs):
        raise ValueError(f"The template expects {template.count(placeholder)} tensors, but the inputs only has "
                         f"{len(inputs)}. Please ensure the number of placeholders in template matches inputs "
                         "length.")
    return execute(_string_format, inputs, {"template": _latin1(template), "placeholder": _latin1(placeholder),
                                            "summarize": summarize})


def _latin1(text):
    """A Python string as string-tensor characters (its UTF-8 bytes as Latin-1)."""
    return text.encode("utf-8").decode("latin-1")


# -- tf.print ----------------------------------------------------------------------------------

# Logging levels and functions (Python's standing in for TensorFlow's tf.compat.v1.logging ones).
_LOG_STREAMS = {logging.INFO: "log(info)", logging.WARNING: "log(warning)", logging.ERROR: "log(error)",
                logging.info: "log(info)", logging.warning: "log(warning)", logging.error: "log(error)"}
if hasattr(logging, "warn"):        # gone in Python 3.13
    _LOG_STREAMS[logging.warn] = "log(warning)"
_STDERR = object()      # the default output stream: sys.stderr when called


def _stream_name(output_stream):
    if output_stream is sys.stdout:
        return "stdout"
    if output_stream is sys.stderr:
        return "stderr"
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    try:
        name = _LOG_STREAMS.get(output_stream)
    except TypeError:       # unhashable
        name = None
    if name is None:
        raise ValueError(f"Unsupported output stream, logging level, or file.{output_stream}. Supported streams "
                         "are sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, tf.logging.error. File "
                         "needs to be in the form of 'file://<filepath>'.")
    return name


def _leaves(structure):
    """The leaves of `structure` in tf.nest order, SparseTensors among them (not their parts)."""
    return optree.tree_leaves(structure, is_leaf=sparse_tensor.is_sparse, none_is_leaf=True, namespace="tapeflow")


def _packed(structure, leaves):
    spec = optree.tree_structure(structure, is_leaf=sparse_tensor.is_sparse, none_is_leaf=True,
                                 namespace="tapeflow")
    return optree.tree_unflatten(spec, leaves)


def _template(inputs, sep):
    """(template, placeholder, tensors) of Note [print templates]."""
    free = " ".join(pprint.pformat(_packed(i, ["" if is_tensor(x) else x for x in _leaves(i)]))
                    for i in map(_sorted_dicts, inputs))
    placeholder = "{}"
    while placeholder in free:
        placeholder += str(len(placeholder) % 10)
    tensors, templates = [], []
    for item in inputs:
        marks = []
        for leaf in _leaves(item):
            parts = getattr(leaf, "_print_parts", None)     # SparseTensor: indices, values, dense_shape
            if parts is not None:
                tensors.extend(parts())
                marks.append(f"SparseTensor(indices={placeholder}, values={placeholder}, shape={placeholder})")
            elif is_tensor(leaf):
                tensors.append(leaf)
                marks.append(placeholder)
            else:
                marks.append(leaf)
        templates.append(item if isinstance(item, str) else pprint.pformat(_packed(item, marks)))
    return sep.join(templates).replace(f"'{placeholder}'", placeholder), placeholder, tensors


# Note [print templates]: each input of tf.print becomes text: a Python string as it
# is, anything else as `pprint` shows it with each tensor replaced by a placeholder
# (quotes around placeholders removed); the texts are joined with `sep` and the
# tensors formatted into the placeholders (StringFormat).  The placeholder is "{}"
# made longer until no Python value's text holds it.  Ordered dicts are sorted by
# key for that check only, as TensorFlow does.

def _sorted_dicts(item):
    return collections.OrderedDict(sorted(item.items())) if isinstance(item, collections.OrderedDict) else item


@tf_export("print", names_op=False)
def print_v2(*inputs, output_stream=_STDERR, summarize=3, sep=" ", end=os.linesep, name=None, **unknown):
    """Prints tensors and Python values, eagerly at once and in a `tf.function` when it runs.

    Args:
      *inputs: tensors, Python values and nested lists, tuples and dicts of them.
      output_stream: `sys.stderr` (default), `sys.stdout`, a logging level or function
        (`logging.INFO`, `logging.info`, ...) or "file://PATH" (appended to).
      summarize: entries printed at each end of every dimension; -1 prints all.
      sep: the text between inputs.
      end: the text after the last input.
      name: the op's name in a graph.

    Returns:
      None eagerly; the print Operation while a graph is built.

    Raises:
      ValueError: an unsupported `output_stream`, or an unknown keyword argument.

    >>> import sys
    >>> import tapeflow as tf
    >>> tf.print("x:", tf.range(10), {"b": 2, "a": tf.constant([1.5])}, output_stream=sys.stdout)
    x: [0 1 2 ... 7 8 9] {'a': [1.5], 'b': 2}
    """
    if unknown:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {unknown}")
    stream = _stream_name(sys.stderr if output_stream is _STDERR else output_stream)
    if len(inputs) == 1 and is_tensor(inputs[0]) and not hasattr(inputs[0], "_print_parts") and \
            inputs[0].dtype == dtypes.string and inputs[0].shape.rank == 0:
        text = convert_to_tensor(inputs[0])     # a lone string scalar: printed as it is, unquoted
    else:
        template, placeholder, tensors = _template(inputs, sep)
        text = string_format(template, tensors, placeholder, summarize)
    execute(_print, [text], {"output_stream": stream, "end": end})
    if not state.graphs:
        return None
    printed = state.graphs[-1]._ops[-1]
    if name:
        printed.name = state.graphs[-1].unique_name(name)
    return printed
