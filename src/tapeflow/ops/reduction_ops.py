"""Reductions (`tf.reduce_*`), arg-reductions, scans (`cumsum`, `cumprod`,
`cumulative_logsumexp`) and `top_k`.

Reduction kernels take a normalized `axis` attr (a sorted tuple of
non-negative ints) and `keepdims`; their gradients first reshape the output
gradient to the kept-dims shape and broadcast it back over the input.  For
inputs of unknown rank (graphs, Note [unknown rank] in framework/shapes/symbolic_tensors.py) the attr
is None for all axes, else the axes as given, checked when the graph runs.
"""

import collections

import numpy as np

from tapeflow.framework import dtypes
from tapeflow.framework.dtypes import FLOATING_TYPES, NUMERIC_TYPES, REAL_TYPES
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import ALL, LINEAR, execute, op, raise_type_mismatch
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops.core import arguments, batching, half, primitives
from tapeflow.ops.core.batching import REDUCTION
from tapeflow.ops.core.presets import reduction_op
from tapeflow.ops.core.primitives import _INT32_64, _axes, _expand_to_input, _sum, keep_reduced_dims, reduce_sum, reshape_like
from tapeflow.ops.core.basic_ops import _conj_if_complex, cast, conj, range as range_, zeros_like
from tapeflow.ops.math_ops import (
    _is_complex, equal, greater, greater_equal, less, log, logical_and, not_equal, ones_like, real, square, where,
)
from tapeflow.ops.scatter_ops import unsorted_segment_sum
from tapeflow.ops.unary_ops import exp, sqrt

_HALF = frozenset((np.dtype(np.float16), np.dtype(dtypes.bfloat16._np)))


def _tensor(x):
    return x if type(x) is Tensor else convert_to_tensor(x)


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _kept(op, t):
    """An output-shaped tensor reshaped to the kept-dims shape (for broadcasting against the input)."""
    if op.get_attr("keepdims"):
        return t
    shape, axes = op.inputs[0]._value.shape, op.get_attr("axis")
    if shape is None:                                   # unknown rank: shapes read when the graph runs
        return keep_reduced_dims(t, op.inputs[0], axes)
    if None not in shape:
        return primitives.reshape(t, _kept_shape(shape, axes))
    for a in axes:                                      # unknown dimensions (graphs): insert the axes
        t = primitives.expand_dims(t, a)
    return t


def _reduce(kernel, input_tensor, axis, keepdims):
    x = _tensor(input_tensor)
    return execute(kernel, (x,), {"axis": _axes(axis, x._value.ndim, kernel.type), "keepdims": bool(keepdims)})


# -- sum and mean ----------------------------------------------------------------------


def _count(shape, axes):
    if axes is None:
        return int(np.prod(shape, dtype=np.int64))
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _product(dims):
    """The product of sizes that are Python ints or scalar int tensors (`primitives.dims_of`)."""
    n = 1
    for d in dims:
        n = n * d
    return n


@reduction_op("Mean", dtypes=NUMERIC_TYPES, half=half.in_float32)
def _mean(x, axis, keepdims):
    n = _count(x.shape, axis)
    if x.dtype.kind in "iu":                            # integer means truncate toward zero
        total = np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
        n = x.dtype.type(max(n, 1))
        return np.where(total < 0, -(-total // n), total // n).astype(x.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):          # empty means are NaN
        total = np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
        return (total / x.dtype.type(n)).astype(x.dtype, copy=False)


@_mean.def_grad(reads_inputs=False)
def _mean_grad(op, dy):
    x, axes = op.inputs[0], op.get_attr("axis")         # each element gets dy / (number averaged)
    shape = x._value.shape
    if shape is None or None in (shape[a] for a in axes):   # unknown dimensions (graphs): count when run
        count = execute(_sum, (ones_like(x, dtype=dtypes.as_dtype(dy._value.dtype)),), {"axis": axes, "keepdims": True})
        return _expand_to_input(op, dy) / count
    n = max(_count(x._value.shape, axes), 1)
    return _expand_to_input(op, dy) / Tensor(np.asarray(n, dy._value.dtype))


@tf_export("math.reduce_mean", "reduce_mean")
def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis`; integer inputs give integer means truncated toward zero, like TensorFlow.

    >>> import tapeflow as tf
    >>> tf.reduce_mean(tf.constant([[1.0, 2.0], [3.0, 4.0]]), axis=0).numpy()
    array([2., 3.], dtype=float32)
    """
    return _reduce(_mean, input_tensor, axis, keepdims)


# -- product -------------------------------------------------------------------------

@reduction_op("Prod", dtypes=NUMERIC_TYPES)
def _prod(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@_prod.def_grad(reads_inputs=ALL)
def _prod_grad(op, dy):
    # d prod / d x_i = (product of the elements before i) * (product after i): two
    # exclusive cumprods over the reduced axes moved to the front; exact with zeros.
    x = op.inputs[0]
    shape, axes = x._value.shape, op.get_attr("axis")
    if shape is None:
        return _prod_all_grad(op, dy)
    others = tuple(i for i in range(len(shape)) if i not in axes)
    perm = axes + others
    moved = primitives.transpose(x, perm)
    if None in shape:                                   # graphs: sizes of unknown groups read at run time
        dims = primitives.dims_of(x)
        sizes = [_product([dims[i] for i in group]) for group in (axes, others)]
    else:
        sizes = (_count(shape, axes), _count(shape, others))
    flat = primitives.reshape(moved, sizes)
    left = cumprod(flat, axis=0, exclusive=True)
    right = cumprod(flat, axis=0, exclusive=True, reverse=True)
    if None in moved._value.shape:
        partial = reshape_like(conj(left) * conj(right), moved)
    else:
        partial = primitives.reshape(conj(left) * conj(right), moved._value.shape)
    partial = primitives.transpose(partial, tuple(np.argsort(perm).tolist()))
    return _expand_to_input(op, dy) * partial


def _prod_all_grad(op, dy):
    """`_prod_grad` for an input of unknown rank, reduced over all its axes: the same cumprods over
    the flattened input.  (Given axes would need a transpose by a permutation known only when the
    graph runs.)"""
    x = op.inputs[0]
    if op.get_attr("axis") is not None:
        raise ValueError(f"The gradient of reduce_prod over given axes needs an input of known rank; "
                         f"{x.name} has unknown rank. Reduce over all axes, or give the input a rank "
                         "(placeholder shape=[None, ...], TensorSpec([None, ...]) or set_shape).")
    flat = primitives.reshape(x, (-1,))
    left = cumprod(flat, axis=0, exclusive=True)
    right = cumprod(flat, axis=0, exclusive=True, reverse=True)
    return _expand_to_input(op, dy) * reshape_like(conj(left) * conj(right), x)


@tf_export("math.reduce_prod", "reduce_prod")
def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over `axis` (1 for empty reductions)."""
    return _reduce(_prod, input_tensor, axis, keepdims)


# -- max and min -----------------------------------------------------------------------

def _lowest(dtype):
    return -np.inf if dtype.kind == "f" or dtype in _HALF else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" or dtype in _HALF else np.iinfo(dtype).max


@reduction_op("Max", dtypes=REAL_TYPES)
def _max(x, axis, keepdims):
    if x.size == 0:                                     # empty reductions give the lowest value
        return np.max(x, axis=axis, keepdims=keepdims, initial=_lowest(x.dtype))
    return np.max(x, axis=axis, keepdims=keepdims)


@reduction_op("Min", dtypes=REAL_TYPES)
def _min(x, axis, keepdims):
    if x.size == 0:
        return np.min(x, axis=axis, keepdims=keepdims, initial=_highest(x.dtype))
    return np.min(x, axis=axis, keepdims=keepdims)


def _min_or_max_grad(op, dy):
    # The gradient goes to the elements equal to the result, split evenly among ties.
    x = op.inputs[0]
    chosen = cast(equal(_kept(op, op.outputs[0]), x), dy._value.dtype)
    count = execute(_sum, (chosen,), {"axis": op.get_attr("axis"), "keepdims": True})
    return chosen / count * _kept(op, dy)


_max.def_grad(_min_or_max_grad, reads_inputs=ALL, reads_outputs=True)
_min.def_grad(_min_or_max_grad, reads_inputs=ALL, reads_outputs=True)


@tf_export("math.reduce_max", "reduce_max")
def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over `axis`; NaN propagates; empty reductions give -inf (or the dtype's lowest).

    The gradient is split evenly among tied maxima, like TensorFlow.
    """
    return _reduce(_max, input_tensor, axis, keepdims)


@tf_export("math.reduce_min", "reduce_min")
def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over `axis`; NaN propagates; empty reductions give +inf (or the dtype's highest)."""
    return _reduce(_min, input_tensor, axis, keepdims)


# -- log-sum-exp, norms and moments -----------------------------------------------------

@reduction_op("ReduceLogSumExp", dtypes=FLOATING_TYPES, half=half.in_float32)
def _logsumexp(x, axis, keepdims):
    shift = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(shift), shift, 0)       # all -inf (or +inf) slices are not shifted
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return out.astype(x.dtype, copy=False)


@_logsumexp.def_grad(reads_inputs=ALL, reads_outputs=True)
def _logsumexp_grad(op, dy):
    x = op.inputs[0]                                    # d log sum e^x = softmax(x) dx
    return _kept(op, dy) * exp(x - _kept(op, op.outputs[0]))


@tf_export("math.reduce_logsumexp", "reduce_logsumexp")
def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) over `axis`, computed stably (the maximum is factored out).

    >>> import tapeflow as tf
    >>> float(tf.reduce_logsumexp(tf.constant([1000.0, 1000.0])))
    1000.6931762695312
    """
    return _reduce(_logsumexp, input_tensor, axis, keepdims)


@reduction_op("EuclideanNorm", dtypes=NUMERIC_TYPES, half=half.in_float32)
def _euclidean_norm(x, axis, keepdims):
    if x.dtype.kind == "c":
        return np.sqrt(np.sum(x * np.conj(x), axis=axis, keepdims=keepdims)).astype(x.dtype)
    acc = x.dtype if x.dtype.kind == "f" else np.float64
    squares = np.square(x.astype(acc))
    return np.sqrt(np.sum(squares, axis=axis, keepdims=keepdims)).astype(x.dtype)


@_euclidean_norm.def_grad(reads_inputs=ALL, reads_outputs=True)
def _euclidean_norm_grad(op, dy):
    x = op.inputs[0]                                    # d |x| = x / |x| dx (TF: no conj)
    return x * (_kept(op, dy) / _kept(op, op.outputs[0]))


@tf_export("math.reduce_euclidean_norm")
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(|x|^2)) over `axis`, in the input's dtype."""
    return _reduce(_euclidean_norm, input_tensor, axis, keepdims)


@tf_export("math.reduce_variance")
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Variance over `axis` (population variance; real for complex inputs).

    Raises:
      TypeError: integer input.
    """
    x = _tensor(input_tensor)
    if x._value.dtype.kind in "iu":
        raise TypeError(f"Input must be either real or complex. Received integer type {x.dtype!r}.")
    diff = x - reduce_mean(x, axis, keepdims=True)
    squared = real(diff * conj(diff)) if _is_complex(diff) else square(diff)
    return reduce_mean(squared, axis, keepdims)


@tf_export("math.reduce_std")
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Standard deviation over `axis` (square root of `reduce_variance`)."""
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


# -- logical reductions -------------------------------------------------------------

@reduction_op("Any", dtypes=(dtypes.bool,), differentiable=False)
def _any(x, axis, keepdims):
    return np.any(x, axis=axis, keepdims=keepdims)


@reduction_op("All", dtypes=(dtypes.bool,), differentiable=False)
def _all(x, axis, keepdims):
    return np.all(x, axis=axis, keepdims=keepdims)


def _bool_input(input_tensor, op_type):
    x = _tensor(input_tensor)
    if x._value.dtype != np.bool_:
        raise_type_mismatch(op_type, 0, np.dtype(np.bool_), x._value.dtype)
    return x


@tf_export("math.reduce_any", "reduce_any")
def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Logical or over `axis` of a bool tensor."""
    return _reduce(_any, _bool_input(input_tensor, "Any"), axis, keepdims)


@tf_export("math.reduce_all", "reduce_all")
def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Logical and over `axis` of a bool tensor."""
    return _reduce(_all, _bool_input(input_tensor, "All"), axis, keepdims)


@tf_export("math.count_nonzero")
def count_nonzero(input, axis=None, keepdims=None, dtype=dtypes.int64, name=None):  # noqa: A002
    """The number of non-zero (or True) elements over `axis`, as `dtype`."""
    x = _tensor(input)
    nonzero = cast(not_equal(x, Tensor(np.zeros((), x._value.dtype))), dtypes.int64)
    return cast(reduce_sum(nonzero, axis, keepdims=bool(keepdims)), dtype)


@tf_export("math.zero_fraction")
def zero_fraction(value, name=None):
    """The fraction of zeros in `value`, as a float32 scalar (NaN when empty)."""
    x = _tensor(value)
    return reduce_mean(cast(equal(x, Tensor(np.zeros((), x._value.dtype))), dtypes.float32))


def _is_monotonic(x, compare, what):
    x = _tensor(x)
    if x._value.dtype.kind not in "iufc" and x._value.dtype not in _HALF:
        raise TypeError(f"Expected x to be numeric, got {x.dtype!r} in {what}.")
    flat = primitives.reshape(x, (-1,))
    n = flat._value.shape[0]
    if n is not None and n < 2:
        return Tensor(np.asarray(True))
    return reduce_all(compare(flat[1:], flat[:-1]))


@tf_export("math.is_non_decreasing")
def is_non_decreasing(x, name=None):
    """Whether the elements of `x`, in row-major order, never decrease (True for fewer than 2)."""
    return _is_monotonic(x, greater_equal, "is_non_decreasing")


@tf_export("math.is_strictly_increasing")
def is_strictly_increasing(x, name=None):
    """Whether the elements of `x`, in row-major order, strictly increase (True for fewer than 2)."""
    return _is_monotonic(x, greater, "is_strictly_increasing")


# -- arg-reductions --------------------------------------------------------------------

def _arg_reduce(np_fn, nan_as):
    def kernel(x, axis, output_type):
        if x.shape[axis] == 0:
            raise ValueError(f"Reduction axis {axis} is empty in shape {_shape_str(x.shape)}")
        if x.dtype.kind == "f" or x.dtype in _HALF:       # NaN is never selected, as in TensorFlow's CPU kernel
            nan = np.isnan(x)
            if nan.any():
                x = np.where(nan, nan_as, x)
        return np.asarray(np_fn(x, axis=axis)).astype(output_type)
    return kernel


def _shape_str(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


_argmax = op("ArgMax", dtypes=REAL_TYPES + (dtypes.bool,), shape=shape_rules.arg_reduction_shape,
             differentiable=False, batch=REDUCTION)(_arg_reduce(np.argmax, -np.inf))
_argmin = op("ArgMin", dtypes=REAL_TYPES + (dtypes.bool,), shape=shape_rules.arg_reduction_shape,
             differentiable=False, batch=REDUCTION)(_arg_reduce(np.argmin, np.inf))


def _arg_axis(axis, op_type):
    """An arg-reduction's `axis` as an int: TypeError unless an integer (or integer tensor), as TF's."""
    if isinstance(axis, Tensor):
        if axis._value.dtype.kind not in "iu":
            raise TypeError(f"axis tensor dtypes {axis.dtype!r} is not supported")
        if axis._value.ndim:
            raise shape_rules.shape_error(op_type, f"dim must be a scalar, but received tensor of shape: "
                                                 f"{list(axis._value.shape)}")
        return int(axis._value)
    if not isinstance(axis, (int, np.integer)):
        raise TypeError("axis must be int or Tensor with integer datatype")
    return int(axis)


def _arg(kernel, input, axis, output_type, allowed):  # noqa: A002
    x = _tensor(input)
    rank = known_rank(x, kernel.type)
    axis = 0 if axis is None else _arg_axis(axis, kernel.type)
    if not -rank <= axis < rank:                        # a scalar: only TF's kernel objects, when it runs
        message = f"Expected dimension in the range [{-rank}, {rank}), but got {axis}"
        if rank == 0:
            raise InvalidArgumentError(None, kernel.type, f"{message} [Op:{kernel.type}]")
        raise shape_rules.shape_error(kernel.type, message)
    out = dtypes.as_dtype(output_type)
    if out.name not in allowed:
        raise InvalidArgumentError(None, kernel.type, f"Value for attr 'output_type' of {out.name} is not in the "
                                   f"list of allowed values: {', '.join(allowed)} [Op:{kernel.type}]")
    return execute(kernel, (x,), {"axis": axis % rank, "output_type": out._np})


@tf_export("math.argmax", "argmax")
def argmax(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """Index of the largest value along `axis` (0 when None); the first one among ties.

    Raises:
      InvalidArgumentError: `axis` out of range or the reduced dimension empty.

    >>> import tapeflow as tf
    >>> tf.argmax(tf.constant([[1.0, 3.0], [4.0, 2.0]]), axis=1).numpy()
    array([1, 0])
    """
    return _arg(_argmax, input, axis, output_type, ("int16", "uint16", "int32", "int64"))


@tf_export("math.argmin", "argmin")
def argmin(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """Index of the smallest value along `axis` (0 when None); the first one among ties."""
    return _arg(_argmin, input, axis, output_type, ("int32", "int64"))


# -- scans -----------------------------------------------------------------------------

def _scan(accumulate, identity, x, axis, exclusive, reverse):
    """An inclusive/exclusive, forward/reverse scan of `accumulate` along `axis`."""
    if reverse:
        x = np.flip(x, axis)
    if exclusive:
        first = np.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], identity, x.dtype)
        x = np.concatenate([first, np.delete(x, -1, axis=axis)], axis=axis) if x.shape[axis] else x
    out = accumulate(x, axis=axis, dtype=x.dtype)
    return np.flip(out, axis) if reverse else out


@op("Cumsum", dtypes=NUMERIC_TYPES, shape=shape_rules.unchanged_shape, batch=REDUCTION, jvp=LINEAR)
def _cumsum(x, axis, exclusive, reverse):
    return _scan(np.add.accumulate, 0, x, axis, exclusive, reverse)


@_cumsum.def_grad(reads_inputs=False)
def _cumsum_grad(op, dy):
    # d cumsum = the transposed scan: the same scan in the other direction.
    return cumsum(dy, op.get_attr("axis"), op.get_attr("exclusive"), not op.get_attr("reverse"))


@op("Cumprod", dtypes=NUMERIC_TYPES, shape=shape_rules.unchanged_shape, batch=REDUCTION)
def _cumprod(x, axis, exclusive, reverse):
    return _scan(np.multiply.accumulate, 1, x, axis, exclusive, reverse)


@_cumprod.def_grad(reads_inputs=ALL, reads_outputs=True)
def _cumprod_grad(op, dy):
    # dx_i = sum over the outputs j whose window holds i of dy_j * prod(window(j) without i):
    # (reverse scan of dy * out)_i / x_i where x_i != 0 (TensorFlow's rule), and at the
    # first zero of the scan the reverse scan of dy * (the scan with that zero replaced
    # by 1); at later zeros every such product holds the first zero.  Exact with zeros
    # (TensorFlow gives 0 at every zero); conjugated for complex inputs like other ops.
    x, out = _conj_if_complex(op.inputs[0]), _conj_if_complex(op.outputs[0])
    axis, exclusive, reverse = op.get_attr("axis"), op.get_attr("exclusive"), op.get_attr("reverse")
    is_zero = equal(x, zeros_like(x))
    seen = cumsum(cast(is_zero, dtypes.int32), axis, False, reverse)     # zeros at or before i
    first = logical_and(is_zero, equal(seen, ones_like(seen)))
    one = ones_like(x)
    through_nonzero = cumsum(out * dy, axis, exclusive, not reverse) / where(is_zero, one, x)
    skipped = cumprod(where(first, one, x), axis, exclusive, reverse)
    through_first = cumsum(skipped * dy, axis, exclusive, not reverse)
    return where(is_zero, where(first, through_first, zeros_like(through_first)), through_nonzero)


# Note [logsumexp scan]: TensorFlow's scan adds an element x to the running value acc as
# hi + log1p(exp(lo - hi)), with hi = (x if acc < x else acc) and lo = (x if x < acc else acc),
# and gives hi itself where hi is -inf.  On finite and -inf inputs that is np.logaddexp; on
# +inf and NaN it is not, and those inputs are scanned step by step with TensorFlow's values:
# a second +inf gives NaN (inf - inf), and a NaN element is not propagated (hi = lo = acc:
# acc + log 2, or -inf while acc is -inf).  The gradient is a scan too and relies on them.

def _logaddexp_accumulate(x, axis, dtype):
    if np.isfinite(x).all() or not (np.isnan(x).any() or np.isposinf(x).any()):
        return np.logaddexp.accumulate(x, axis=axis)
    steps = np.moveaxis(x, axis, 0)
    out = np.empty_like(steps)
    acc = np.full(steps.shape[1:], -np.inf, x.dtype)
    with np.errstate(invalid="ignore"):
        for k, xk in enumerate(steps):
            hi, lo = np.where(acc < xk, xk, acc), np.where(xk < acc, xk, acc)
            acc = out[k] = np.where(hi == -np.inf, hi, hi + np.log1p(np.exp(lo - hi)))
    return np.moveaxis(out, 0, axis)


@op("CumulativeLogsumexp", dtypes=FLOATING_TYPES, shape=shape_rules.unchanged_shape, batch=REDUCTION,
    half=half.in_float32)
def _cumulative_logsumexp(x, axis, exclusive, reverse):
    return _scan(_logaddexp_accumulate, -np.inf, x, axis, exclusive, reverse)


@_cumulative_logsumexp.def_grad(reads_inputs=ALL, reads_outputs=True)
def _cumulative_logsumexp_grad(op, dy):
    # dx_i = sum_{j: i in window(j)} dy_j e^(x_i - out_j), summed in log space by a reverse
    # scan, separately over the positive and negative parts of dy (logs of positives only).
    x, out = op.inputs[0], op.outputs[0]
    axis, exclusive, reverse = op.get_attr("axis"), op.get_attr("exclusive"), op.get_attr("reverse")
    lowest = Tensor(np.asarray(dtypes.as_dtype(x.dtype).min, x._value.dtype))     # TensorFlow's grad.dtype.min
    one = Tensor(np.ones((), dy._value.dtype))
    parts = []
    for mask, magnitude in ((greater(dy, zeros_like(dy)), dy), (less(dy, zeros_like(dy)), -dy)):
        log_part = where(mask, log(where(mask, magnitude, one)), lowest)
        parts.append(exp(cumulative_logsumexp(log_part - out, axis, exclusive, not reverse) + x))
    return parts[0] - parts[1]


def _scan_axis(axis, op_type):
    """A scan's `axis` given as other than a Python int, converted as TensorFlow converts its
    int32/int64 scalar input (Note [typed index inputs]).

    Raises:
      InvalidArgumentError: eagerly a non-integer dtype; an axis that is not a scalar.
      TypeError, ValueError: as TensorFlow's conversion (see `slicing_ops.typed_index`).
    """
    t = arguments.typed_index(axis, "axis", op_type, "Tidx", _INT32_64, dtypes.int32)
    value = constant_value(t) if isinstance(t, SymbolicTensor) else t._value
    if value is None:
        raise ValueError(f"The axis of {op_type} must be known while the graph is built (a constant or a value "
                         f"computed from static shapes), got {t.name}.")
    value = np.asarray(value)
    if value.ndim:
        raise InvalidArgumentError(None, op_type, f"ScanOp: axis must be a scalar, not {list(value.shape)} "
                                   f"[Op:{op_type}]")
    return int(value)


def _scan_op(kernel, x, axis, exclusive, reverse):
    x = _tensor(x)
    rank = known_rank(x, kernel.type)
    if type(axis) is not int:
        axis = _scan_axis(axis, kernel.type)
    if not -rank <= axis < rank:
        raise InvalidArgumentError(None, kernel.type, f"ScanOp: Expected scan axis in the range [{-rank}, {rank}), "
                                   f"but got {axis} [Op:{kernel.type}]")
    return execute(kernel, (x,), {"axis": axis % rank, "exclusive": bool(exclusive), "reverse": bool(reverse)})


@tf_export("math.cumsum", "cumsum")
def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis`; `exclusive` leaves out the current element, `reverse` scans backwards.

    >>> import tapeflow as tf
    >>> tf.cumsum(tf.constant([1, 2, 3]), exclusive=True).numpy()
    array([0, 1, 3], dtype=int32)
    """
    return _scan_op(_cumsum, x, axis, exclusive, reverse)


@tf_export("math.cumprod")
def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis` (see `cumsum` for `exclusive` and `reverse`)."""
    return _scan_op(_cumprod, x, axis, exclusive, reverse)


@tf_export("math.cumulative_logsumexp")
def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative log(sum(exp(x))) along `axis`, computed stably."""
    return _scan_op(_cumulative_logsumexp, x, axis, exclusive, reverse)


# -- top_k -------------------------------------------------------------------------------

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


@op("TopKV2", dtypes=REAL_TYPES, same_dtype=False, num_outputs=2, shape=shape_rules.top_k_shape)
def _top_k(x, k, sorted, index_type):  # noqa: A002
    k = int(k)                              # an attr, or a scalar input (Note [size inputs] in ops/core/primitives.py)
    if x.ndim == 0:
        raise ValueError(f"input must be >= 1-D, got shape {_shape_str(x.shape)}")
    n = x.shape[-1]
    if k < 0:
        raise ValueError(f"Need k >= 0, got {k}")
    if k > n:
        raise ValueError(f"input must have at least k columns. Had {n}, needed {k}")
    # A stable ascending sort of the reversed row, read backwards: descending values,
    # ties in increasing index order (NaN first), like TensorFlow.
    order = np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)[..., :k]
    indices = n - 1 - order
    return np.take_along_axis(x, indices, -1), indices.astype(index_type)


@_top_k.def_batch
def _top_k_batch(xs, batched, sorted, index_type, k=None):  # noqa: A002
    if len(xs) > 1 and batched[1]:
        raise batching.NotBatchable                     # k per example
    attrs = {"sorted": sorted, "index_type": index_type}
    if k is not None:                                   # k an attr, not an input
        attrs["k"] = k
    return execute(_top_k, xs, attrs), True            # rows along the last axis


@_top_k.def_grad(reads_inputs=False, reads_outputs=True)
def _top_k_grad(op, dvalues, dindices):
    # The values' gradients land at their indices in each row (a scatter into zeros).
    x, indices = op.inputs[0], op.outputs[1]
    shape = x._value.shape
    if None in shape or None in indices._value.shape:   # graphs: the sizes are read at run time
        dx = _top_k_grad_dynamic(x, indices, dvalues)
        return dx if len(op.inputs) == 1 else (dx, None)
    n, k = shape[-1], indices._value.shape[-1]
    rows = _count(shape, range(len(shape) - 1))
    offsets = Tensor((np.arange(rows, dtype=np.int64) * n).reshape(shape[:-1] + (1,)))
    flat = primitives.reshape(cast(indices, dtypes.int64) + offsets, (rows * k,))
    dx = unsorted_segment_sum(primitives.reshape(dvalues, (rows * k,)), flat, rows * n)
    return primitives.reshape(dx, shape)


def _top_k_grad_dynamic(x, indices, dvalues):
    """`_top_k_grad` for inputs of partly unknown shape: the same scatter, sized by run-time shapes."""
    dims = primitives.dims_of(x, np.int64)
    n, k = dims[-1], primitives.dims_of(indices, np.int64)[-1]
    rows = _product(dims[:-1])
    offsets = primitives.reshape(range_(rows, dtype=dtypes.int64) * n, dims[:-1] + [1])
    flat = primitives.reshape(cast(indices, dtypes.int64) + offsets, [rows * k])
    dx = unsorted_segment_sum(primitives.reshape(dvalues, [rows * k]), flat, rows * n)
    return reshape_like(dx, x)


@tf_export("math.top_k", "nn.top_k")
def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    """The `k` largest entries of the last axis and their indices, largest first.

    Returns:
      A `TopKV2(values, indices)` named tuple; `indices` has dtype `index_type`.

    Raises:
      InvalidArgumentError: `input` is a scalar, `k` is negative or exceeds the last dimension.

    >>> import tapeflow as tf
    >>> tf.math.top_k(tf.constant([1.0, 3.0, 2.0]), k=2).indices.numpy()
    array([1, 2], dtype=int32)
    """
    x = _tensor(input)
    attrs = {"sorted": bool(sorted), "index_type": dtypes.as_dtype(index_type)._np}
    if isinstance(k, SymbolicTensor) and constant_value(k) is None:     # k read when the graph runs
        if k._value.dtype not in (np.int32, np.int64) or k._value.ndim:
            raise TypeError(f"k of TopKV2 must be an int32 or int64 scalar, got {k.dtype.name} of shape {k.shape}.")
        values, indices = execute(_top_k, (x, k), attrs)
    else:
        k = constant_value(k) if isinstance(k, Tensor) else k
        values, indices = execute(_top_k, (x,), dict(attrs, k=int(k)))
    return TopKV2(values, indices)


@op("InTopKV2", dtypes=(dtypes.float32,), same_dtype=False, shape=shape_rules.in_top_k_shape, differentiable=False)
def _in_top_k(predictions, targets, k):
    if predictions.ndim != 2:
        raise ValueError(f"predictions must be 2-dimensional, got shape {_shape_str(predictions.shape)}")
    if targets.shape != predictions.shape[:1]:
        raise ValueError("First dimension of predictions must match length of targets")
    rows, classes = predictions.shape
    valid = (targets >= 0) & (targets < classes)
    target_value = predictions[np.arange(rows), np.where(valid, targets, 0)]
    # In the top k: fewer than k predictions strictly larger (ties count in); NaN/inf targets never.
    larger = np.sum(predictions > target_value[:, None], axis=1)
    return valid & np.isfinite(target_value) & (larger < k)


@_in_top_k.def_batch
def _in_top_k_batch(xs, batched, k):
    # the examples' rows one after another: one [B*N, C] check
    size = primitives.batch_size_of(xs[batched.index(True)])
    predictions, targets = primitives.stacked_all(xs, batched, size)
    classes = predictions._value.shape[-1]
    rows = primitives.reshape(predictions, [-1, primitives.dims_of(predictions)[-1] if classes is None else classes])
    out = execute(_in_top_k, (rows, primitives.reshape(targets, (-1,))), {"k": k})
    n = predictions._value.shape[1]
    return primitives.reshape(out, [size, -1 if n is None else n]), True


@tf_export("math.in_top_k", "nn.in_top_k")
def in_top_k(targets, predictions, k, name=None):
    """Whether each row's `targets` class is among the `k` largest `predictions` (ties count in)."""
    predictions = _tensor(predictions)
    targets = _tensor(targets)
    if targets._value.dtype not in (np.int32, np.int64):
        raise TypeError(f"targets must be an int32 or int64 tensor, got {targets.dtype.name}.")
    return execute(_in_top_k, (predictions, targets), {"k": int(k)})
