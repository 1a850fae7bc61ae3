"""`tf.py_function`: a Python function run eagerly as one op, in eager code and in graphs.

The op (EagerPyFunc) holds the function; its kernel turns the input arrays into
eager tensors and calls it, so inside a `tf.function` the Python code runs each
time the graph runs (stateful: never pruned, never folded), with `.numpy()`,
Python control flow and side effects available.  Its static output shapes are
unknown, as TensorFlow's.

Note [py_function gradients]: the function's own ops are invisible to the tape
or graph that holds the op, so the kernel records them on a tape of its own
(when a gradient may be asked for: some tape is active while it runs, or the
op's gradient was built in a graph), watching the float inputs.  The run's
record (that tape, its inputs and outputs) is the op's output 0, a variant
scalar: it lives as long as the tensor does, goes with the other outputs of a
call to a backward function (Note [call side outputs] in graph/concrete_function.py), and
every run of the op has its own.  The op's gradient is another py_function
that asks the record's tape for the gradients of the run's outputs with
respect to its inputs, as TensorFlow's EagerPyFunc gradient does.  A float input
the function does not use gets zeros of its shape (TensorFlow's: a scalar zero),
integer inputs get None.  That gradient's own inputs are only the output
gradients, so a second derivative through a py_function is None, as in
TensorFlow.
"""

import functools

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.context import eager_mode, state
from tapeflow.framework.errors import InvalidArgumentError, OutOfRangeError, UnimplementedError, UnknownError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes.abstract_values import Meta
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core import basic_ops
from tapeflow.ops.variables import Variable
from tapeflow.eager.backprop import GradientTape

# The class of the op error a Python exception raised by the function becomes (TensorFlow's).
_ERROR_CLASSES = ((ValueError, InvalidArgumentError), (TypeError, InvalidArgumentError),
                  (StopIteration, OutOfRangeError), (NotImplementedError, UnimplementedError))


class _PyFunc:
    """The function of one py_function call and its output dtypes."""

    __slots__ = ("func", "tout", "graph_gradient", "__weakref__")

    def __init__(self, func, tout):
        self.func = func
        self.tout = tout
        self.graph_gradient = False     # a graph holds the op's gradient: every run records a tape

    def __repr__(self):
        return f"<py_function {getattr(self.func, '__name__', self.func)!r}>"

    def run(self, arrays):
        """Calls the function on eager tensors made from `arrays`.

        Returns:
          The run's record (Note [py_function gradients]) in a variant scalar, then the
          output arrays.
        """
        args = [Tensor(a) for a in arrays]
        record = None
        try:
            with eager_mode():
                if self.graph_gradient or state.tapes:
                    with GradientTape(persistent=True) as tape:
                        tape.watch([t for t in args if t.dtype.is_floating or t.dtype.is_complex])
                        outs = self._call(args)
                    record = (tape, args, outs)
                else:
                    outs = self._call(args)
        except Exception as e:       # noqa: BLE001 -- any exception of the function becomes an op error
            cls = next((c for py, c in _ERROR_CLASSES if isinstance(e, py)), UnknownError)
            raise cls(None, "EagerPyFunc", f"{type(e).__name__}: {e}") from e
        if len(outs) != len(self.tout):
            raise InvalidArgumentError(None, "EagerPyFunc", f"{self!r} returns {len(outs)} values, but expects to "
                                       f"see {len(self.tout)} values.")
        held = np.empty((), dtype=object)
        held[()] = record
        return (held,) + tuple(t._value for t in outs)

    def _call(self, args):
        ret = self.func(*args)
        if isinstance(ret, (tuple, list)):
            return [self._convert(v, d) for v, d in zip(ret, self.tout)]
        return [] if ret is None else [self._convert(ret, self.tout[0])]

    def _convert(self, value, dtype):
        if isinstance(value, Variable):
            raise RuntimeError("Attempting to return a variable from an eagerly executed py_func. Only numeric "
                               "data structures like Tensors or NumPy arrays should be returned; to return the "
                               "value of a variable, obtain the Tensor backing it by calling `.read_value()` on "
                               f"the variable in question: {value!r}")
        return convert_to_tensor(value, dtype=dtype)


def _shapes(*inputs, func):
    """The run's record (a variant scalar), then outputs of unknown shapes."""
    return [Meta((), dtypes.variant._np)] + [Meta(None, d._np) for d in func.tout]


# Stateful: runs whenever its graph runs, with its side effects, and is never folded or merged.
# Output 0 (the run's record) never gets a gradient: None reaches the rule for it.
@op("EagerPyFunc", same_dtype=False, num_outputs=-1, stateful=True, shape=_shapes, unknown_rank=True,
    accepts_none=(0,))
def _eager_py_func(*inputs, func):
    return func.run(inputs)


@_eager_py_func.def_grad(reads_inputs=False, reads_outputs=True)
def _eager_py_func_grad(op, _, *dys):
    # Note [py_function gradients]: a py_function asking the forward run's tape (output 0)
    func = op.get_attr("func")
    inputs = list(op.inputs)
    wanted = [i for i, t in enumerate(inputs) if t.dtype.is_floating or t.dtype.is_complex]
    if not wanted:
        return [None] * len(inputs)
    if state.graphs:
        func.graph_gradient = True      # later runs of the op record their tape

    def gradient_of_run(held, *dys):
        record = held.numpy()
        if record is None:
            raise InvalidArgumentError(None, "EagerPyFunc", f"{func!r} ran with no tape recording it, so it has "
                                       "no gradient; compute its outputs inside the GradientTape.")
        tape, args, outs = record
        pairs = [(o, dy) for o, dy in zip(outs, dys, strict=True) if o.dtype.is_floating or o.dtype.is_complex]
        grads = tape.gradient([o for o, _ in pairs], [args[i] for i in wanted],
                              output_gradients=[dy for _, dy in pairs]) if pairs else [None] * len(wanted)
        return [basic_ops.zeros_like(args[i]) if g is None else g for i, g in zip(wanted, grads)]

    dys = [basic_ops.zeros_like(t) if dy is None else dy for t, dy in zip(op.outputs[1:], dys, strict=True)]
    grads = _call(gradient_of_run, [op.outputs[0]] + dys, [inputs[i].dtype for i in wanted], None)
    out = [None] * len(inputs)
    for i, g in zip(wanted, grads, strict=True):
        out[i] = g
    return out


def _call(func, inp, tout, name):
    """The op's outputs (a list of tensors) for `func` on `inp`; the Operation in a graph when
    there is none."""
    outs = execute(_eager_py_func, [convert_to_tensor(x) for x in inp], {"func": _PyFunc(func, tout)})[1:]
    if state.graphs:
        graph = state.graphs[-1]
        made = graph._ops[-1]
        if name:
            made.name = graph.unique_name(name)
        if not outs:
            return made
    return list(outs)


@tf_export("py_function", names_op=False)
def py_function(func=None, inp=None, Tout=None, name=None):
    """Runs the Python function `func` eagerly as one op, also inside a `tf.function`.

    Args:
      func: a Python function taking eager tensors (one per element of `inp`) and
        returning tensors or values convertible to them; None to use `py_function`
        as a decorator.
      inp: the inputs, a list of tensors (or values); None when used as a decorator.
      Tout: the dtype of the output, or a list of dtypes (then a list is returned;
        `[]` when the function returns nothing).
      name: the op's name in a graph.

    Returns:
      A tensor (a list of tensors when `Tout` is a list or tuple); with `Tout=[]`,
      `[]` eagerly and the Operation in a graph.

    Raises:
      TypeError: `Tout` is missing, or `inp` is given to the decorator form.
      ValueError: `func` is not callable.
      InvalidArgumentError (and UnknownError, OutOfRangeError, UnimplementedError):
        the function raised, or returned values not matching `Tout`.

    >>> import tapeflow as tf
    >>> x = tf.constant(3.0)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = tf.py_function(lambda a: a * a if a.numpy() > 0 else -a, [x], tf.float32)
    >>> float(y), float(tape.gradient(y, x))
    (9.0, 6.0)
    """
    if Tout is None:
        raise TypeError("Missing required argument: 'Tout'\n  If using tf.py_function as a decorator, set `Tout`\n"
                        "  **by name** above the function:\n  `@tf.py_function(Tout=tout)`")
    if func is None:
        if inp is not None:
            raise TypeError("Don't set the `inp` argument when using tf.py_function as a decorator (`func=None`).")

        def decorator(fn):
            @functools.wraps(fn)
            def wrapper(*args):
                return py_function(fn, inp=args, Tout=Tout, name=name)
            return wrapper
        return decorator
    if inp is None:
        raise TypeError("Missing argument `inp`:\n  You must set the `inp` argument (the list of arguments to the\n"
                        "  function), unless you use `tf.py_function` as a decorator(`func=None`).")
    if not callable(func):
        raise ValueError(f"Expected func to be callable. Received func={func} of type {type(func)}.")
    as_list = isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t) for t in (Tout if as_list else [Tout])]
    result = _call(func, inp, tout, name)
    return result if as_list or not isinstance(result, list) else result[0]
