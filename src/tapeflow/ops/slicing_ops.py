"""Slicing: `Tensor.__getitem__`, `tf.strided_slice` and `tf.slice`.

All three lower to one op, "StridedSlice", whose begin/end/strides are int
tensor inputs and whose five bit masks are attrs (TensorFlow's encoding, so a
symbolic index works too).  Its gradient, "StridedSliceGrad", writes `dy` into
zeros of the input's shape (an int tensor input, as in TensorFlow, so the
gradient keeps no input value: Note [static shapes in gradients] in ops/core/primitives.py);
the gradient of that is a strided slice again, so derivatives of any order work.  In graphs, a `tf.slice` whose begin or size is
known only when the graph runs is the "Slice" op (its static shape follows
TensorFlow's rule for -1 sizes), whose gradient is a StridedSliceGrad too.

Note [strided slice as a NumPy index]: the begin/end/strides/masks spec is
turned into a NumPy basic index (ints, slices, None) once per distinct spec
and input shape (cached).  NumPy clamps slice bounds exactly as TensorFlow's
kernel canonicalizes them, so only the checks TensorFlow makes on top
(ellipses, zero strides, out-of-range single indices) are written here.
"""

import builtins
import functools

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import LINEAR, execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value, fully_known, known
from tapeflow.framework.shapes.symbolic_tensors import Meta, _const, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import scatter_ops
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.arguments import check_list_entries, typed_index_error
from tapeflow.ops.core.primitives import shape_tensor
from tapeflow.ops.core import basic_ops

_INDEX_DTYPES = frozenset(np.dtype(d) for d in (np.int16, np.int32, np.int64))
_SLICE_INDEX_DTYPES = frozenset(np.dtype(d) for d in (np.int32, np.int64))
_py_slice = builtins.slice   # this module defines tf.slice
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@functools.lru_cache(maxsize=1024)
def _numpy_index(shape, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    """The NumPy index equal to a strided-slice spec (Note [strided slice as a NumPy index])."""
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    rank, n = len(shape), len(begin)
    consumes = [not (ellipsis_mask | new_axis_mask) & (1 << i) for i in range(n)]
    if rank == 0 and any(consumes):
        raise ValueError("Attempting to slice scalar input.")
    index, dim = [], 0
    for i in range(n):
        bit = 1 << i
        if ellipsis_mask & bit:
            span = max(rank - dim - sum(consumes[i + 1:]), 0)
            index.extend([_py_slice(None)] * span)
            dim += span
            continue
        if new_axis_mask & bit:
            index.append(None)
            continue
        if dim >= rank:
            raise ValueError(f"Index out of range using input dim {dim}; input has only {rank} dims")
        stride = strides[i]
        if stride == 0:
            raise ValueError(f"strides[{i}] must be non-zero")
        if shrink_axis_mask & bit:
            if stride < 0:
                raise ValueError("only stride 1 allowed on non-range indexing.")
            at = begin[i] + shape[dim] if begin[i] < 0 else begin[i]
            if not 0 <= at < shape[dim]:
                raise ValueError(f"slice index {at} of dimension {dim} out of bounds.")
            index.append(at)
        else:
            index.append(_py_slice(None if begin_mask & bit else begin[i], None if end_mask & bit else end[i], stride))
        dim += 1
    index.append(Ellipsis)   # untouched trailing dims; also keeps 0-d results arrays
    return tuple(index)


def _spec_index(shape, begin, end, strides, masks):
    if not (begin.ndim == 1 and begin.shape == end.shape == strides.shape):
        raise ValueError(f"Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                         f"{list(begin.shape)}, {list(end.shape)}, and {list(strides.shape)} instead.")
    return _numpy_index(tuple(shape), tuple(begin.tolist()), tuple(end.tolist()), tuple(strides.tolist()), *masks)


def _strided_slice_value(t, ev):
    """The partly known value of a slice of a partly known value (framework/shapes/known_values)."""
    x, begin, end, strides = t.op.inputs
    v, spec = ev(x), [ev(u) for u in (begin, end, strides)]
    if v is None or not all(fully_known(s) for s in spec):
        return None
    index = _spec_index(v.shape, *spec, tuple(t.op.attrs[k] for k in _MASKS))
    return known(np.asarray(v[index], dtype=v.dtype))


def _strided_slice_shape(x, begin, end, strides, **masks):
    """TensorFlow's rule.  The strides and the number of entries must be known while building
    (else the rank is unknown); with begin and end known too, each sliced size of a known dim
    is exact, else only those of dims taken whole (both masks set) are known.  An unknown
    dim gives an unknown size."""
    shape, dtype = tuple(x._value.shape), x._value.dtype
    stride_v = constant_value(strides)
    n = begin._value.shape[0] if begin._value.ndim == 1 else None
    if n is None or stride_v is None:
        return [Meta(None, dtype)]
    ell, new, shrink = masks["ellipsis_mask"], masks["new_axis_mask"], masks["shrink_axis_mask"]
    if ell & (ell - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    b, e = constant_value(begin), constant_value(end)
    known_spec = b is not None and e is not None
    consumes = [not (ell | new) & (1 << i) for i in range(n)]
    dims, dim = [], 0
    for i in range(n):
        bit = 1 << i
        if ell & bit:
            span = max(len(shape) - dim - sum(consumes[i + 1:]), 0)
            dims.extend(shape[dim:dim + span])
            dim += span
            continue
        if new & bit:
            dims.append(1)
            continue
        if dim >= len(shape):
            raise ValueError(f"Index out of range using input dim {dim}; input has only {len(shape)} dims")
        d, stride = shape[dim], int(stride_v[i])
        if stride == 0:
            raise ValueError(f"strides[{i}] must be non-zero")
        if not shrink & bit:
            dims.append(_slice_length(d, stride, b[i] if known_spec else None, e[i] if known_spec else None,
                                      masks["begin_mask"] & bit, masks["end_mask"] & bit))
        elif d is not None:
            if stride < 0:
                raise ValueError("only stride 1 allowed on non-range indexing.")
            if known_spec and not -d <= int(b[i]) < d:
                raise ValueError(f"slice index {int(b[i])} of dimension {dim} out of bounds.")
        dim += 1
    return [Meta(tuple(dims) + shape[dim:], dtype)]


def _slice_length(d, stride, begin, end, begin_masked, end_masked):
    """The length of a strided slice of a dim of size d (None: unknown); begin and end are None
    when not known while building."""
    if d is None:
        return None
    if begin is not None and end is not None:
        part = _py_slice(None if begin_masked else int(begin), None if end_masked else int(end), stride)
        return len(range(*part.indices(d)))
    return -(-d // abs(stride)) if begin_masked and end_masked else None


@op("StridedSlice", same_dtype=False, shape=_strided_slice_shape, shape_reads_inputs=True,
    value_rule=_strided_slice_value, jvp=LINEAR)
def _strided_slice(x, begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    index = _spec_index(x.shape, begin, end, strides,
                        (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask))
    return x[index]


@_strided_slice.def_batch
def _strided_slice_batch(xs, batched, **masks):
    if any(batched[1:]):
        raise batching.NotBatchable                     # a slice per example
    return execute(_strided_slice, [xs[0]] + _batch_spec(xs[1:]), _batch_masks(masks)), True


# Note [batched slice specs]: a strided slice of a stacked tensor is the example's slice with
# a full slice of the batch axis in front: begin/end/strides get an entry (0, 0, 1) before
# theirs, its begin and end bits set, and every mask bit moves up one place (an ellipsis or a
# new axis then falls after the batch axis, as it did in the example).

def _batch_spec(spec):
    """begin, end and strides with the entry of the batch axis in front (Note [batched slice specs])."""
    return [_prepend_entry(t, v) for t, v in zip(spec, (0, 0, 1), strict=True)]


def _batch_masks(masks):
    out = {k: m << 1 for k, m in masks.items()}
    out["begin_mask"] |= 1
    out["end_mask"] |= 1
    return out


def _prepend_entry(t, value):
    """The int vector `t` with `value` (an int or a scalar tensor) in front."""
    if type(t) is Tensor and not isinstance(value, Tensor):     # eager: no op for a constant index
        return Tensor(np.concatenate([np.asarray([value], t._value.dtype), t._value]))
    return primitives.prepend(value, t)


@_strided_slice.def_grad(reads_inputs=(1, 2, 3))
def _strided_slice_grad(op, dy):
    x, begin, end, strides = op.inputs                 # dx = dy placed at the slice, zeros elsewhere
    masks = {k: op.get_attr(k) for k in _MASKS}
    dx = execute(_strided_slice_grad_op, (_shape_of(x, begin), begin, end, strides, convert_to_tensor(dy)), masks)
    return dx, None, None, None


def _shape_of(x, begin):
    """x's shape as an int tensor of begin's width (int16 indices: int32)."""
    return shape_tensor(x, np.int64 if begin._value.dtype == np.int64 else np.int32)


def _strided_slice_grad_shape(shape, begin, end, strides, dy, **_):
    """The known entries of `shape` (an unknown rank when its length is unknown)."""
    if primitives.unknown_length(shape):
        return [Meta(None, dy._value.dtype)]
    dims = primitives.output_dims(primitives.vector(shape, "shape", "StridedSliceGrad"), "StridedSliceGrad")
    return [Meta(tuple(dims), dy._value.dtype)]


@op("StridedSliceGrad", same_dtype=False, shape=_strided_slice_grad_shape, shape_reads_inputs=True)
def _strided_slice_grad_op(shape, begin, end, strides, dy, begin_mask, end_mask, ellipsis_mask,
                           new_axis_mask, shrink_axis_mask):
    shape = tuple(shape.tolist())
    index = _spec_index(shape, begin, end, strides,
                        (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask))
    out = np.zeros(shape, dy.dtype)
    out[index] = dy
    return out


@_strided_slice_grad_op.def_batch
def _strided_slice_grad_batch(xs, batched, **masks):
    if any(batched[:4]):
        raise batching.NotBatchable                     # a slice per example
    shape, *spec, dy = xs
    shape = _prepend_entry(shape, primitives.batch_size_of(dy))
    return execute(_strided_slice_grad_op, [shape] + _batch_spec(spec) + [dy], _batch_masks(masks)), True


@_strided_slice_grad_op.def_grad(reads_inputs=(1, 2, 3))
def _strided_slice_grad_grad(op, ddx):
    _, begin, end, strides, _ = op.inputs              # the adjoint of "place at the slice" is the slice
    masks = {k: op.get_attr(k) for k in _MASKS}
    return None, None, None, None, execute(_strided_slice, (convert_to_tensor(ddx), begin, end, strides), masks)


# Note [typed index inputs]: TensorFlow takes indices, axes, begins and sizes as tensor
# inputs whose type attr (Tindices, Tidx, TI, Index) allows only some integer dtypes.  A
# Python or NumPy value is converted as the attr's default dtype when it has one (so True,
# [] and NumPy floats become integers), else as its own dtype; eagerly, a Python float given
# to an input with a default dtype fails that conversion (TypeError).  A dtype outside the
# list is InvalidArgumentError eagerly (TF's kernel lookup) and TypeError while a graph is
# built (its op builder).  Callers convert as before and come here only on their error path.


def _slice_index(value, what):
    return _index_tensor(value, what, "Slice", _SLICE_INDEX_DTYPES)


def _index_tensor(value, what, op_type="StridedSlice", allowed=_INDEX_DTYPES):
    """An index tensor of a dtype in `allowed` (StridedSlice: int16/32/64, Slice: int32/64); Python
    lists become eager constants (static even in graphs)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        t = convert_to_tensor(value)
    else:
        try:
            arr = np.asarray(value)
        except ValueError:                     # ragged, or tensors among Python values: TF's conversion errors
            check_list_entries(value)
            arr = np.asarray(convert_to_tensor(value)._value)
        if arr.dtype.kind in "iu" or arr.size == 0:
            fits = arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31)
            arr = arr.astype(np.int32 if fits and arr.dtype != np.int64 else np.int64)
            t = Tensor(arr)
        elif arr.dtype.kind in "OSU":          # None, text, mixed entries: as TF converts them
            if isinstance(value, (list, tuple)):
                check_list_entries(value)
            t = convert_to_tensor(value)
        else:
            t = Tensor(arr.astype(np.float32) if isinstance(value, (float, list, tuple)) else arr)
    if t._value.dtype not in allowed:
        if allowed is not _INDEX_DTYPES:
            raise typed_index_error(t.dtype.name, what, op_type, "Index", allowed)
        raise InvalidArgumentError(
            None, op_type,
            f"Value for attr 'Index' of {t.dtype.name} is not in the list of allowed values: int16, int32, int64 "
            f"(argument `{what}`) [Op:{op_type}]")
    return t


@tf_export("strided_slice")
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """Extracts a strided slice of `input_` (the op behind `tensor[...]`).

    Bit `i` of a mask concerns entry `i` of begin/end/strides: `begin_mask` and
    `end_mask` ignore that begin/end (use the full range), `ellipsis_mask`
    makes the entry a `...`, `new_axis_mask` inserts a size-1 axis and
    `shrink_axis_mask` takes the single index `begin[i]` and drops the axis.

    Raises:
      InvalidArgumentError: begin/end/strides of different lengths, a zero
        stride, several ellipses or a single index out of bounds.

    >>> import tapeflow as tf
    >>> tf.strided_slice(tf.range(6), [1], [6], [2]).numpy()
    array([1, 3, 5], dtype=int32)
    """
    x = convert_to_tensor(input_)
    begin = _index_tensor(begin, "begin")
    end = _index_tensor(end, "end")
    strides = (Tensor(np.ones(tuple(begin._value.shape), begin._value.dtype)) if strides is None
               else _index_tensor(strides, "strides"))
    masks = {"begin_mask": int(begin_mask), "end_mask": int(end_mask), "ellipsis_mask": int(ellipsis_mask),
             "new_axis_mask": int(new_axis_mask), "shrink_axis_mask": int(shrink_axis_mask)}
    return execute(_strided_slice, (x, begin, end, strides), masks)


@tf_export("slice")
def slice(input_, begin, size, name=None):  # noqa: A001 - TensorFlow's public name
    """The block of `input_` starting at `begin` with extent `size` (-1: to the end).

    In graphs, `begin` and `size` may be int tensors or hold scalar tensors
    (the "Slice" op, checked when the graph runs).

    Raises:
      InvalidArgumentError: begin/size of the wrong length, or a block outside the input.

    >>> import tapeflow as tf
    >>> tf.slice(tf.reshape(tf.range(6), [2, 3]), [0, 1], [-1, 2]).numpy()
    array([[1, 2],
           [4, 5]], dtype=int32)
    """
    x = convert_to_tensor(input_)
    known_rank(x, "Slice")
    if state.graphs:
        known = [primitives.sizes_or_tensor(v, what, "Slice") for v, what in ((begin, "begin"), (size, "size"))]
        if isinstance(known[0], Tensor) or isinstance(known[1], Tensor):
            return _dynamic_slice(x, begin if known[0] is None else known[0], size if known[1] is None else known[1])
        begin, size = (v if k is None else k for v, k in zip((begin, size), known))
    begin_t, size_t = _slice_indices(begin, size)
    if type(begin_t) is not Tensor or type(size_t) is not Tensor:   # read from variables in a graph
        return _dynamic_slice(x, begin_t, size_t)
    b, s = np.asarray(begin_t._value), np.asarray(size_t._value)
    shape = x._value.shape
    if b.shape != (len(shape),) or s.shape != (len(shape),):
        raise _slice_shape_error(begin, size, b.shape, s.shape, len(shape))
    ends = []
    for i, (bi, si, d) in enumerate(zip(b.tolist(), s.tolist(), shape, strict=True)):
        if d is None:                                  # unknown until the graph runs: no static check
            continue
        if not 0 <= bi <= d:
            error = f"Expected begin[{i}] in [0, {d}], but got {bi}"
        elif not 0 <= (d - bi if si == -1 else si) <= d - bi:
            error = f"Expected size[{i}] in [0, {d - bi}], but got {si}"
        else:
            ends.append(bi + (d - bi if si == -1 else si))
            continue
        if state.graphs:                               # like TensorFlow's: checked when the graph runs
            return _dynamic_slice(x, begin_t, size_t)
        raise InvalidArgumentError(None, "Slice", f"{error} [Op:Slice]")
    if None in shape:                                  # the Slice op: its sizes are static, checked at run time
        return _dynamic_slice(x, begin_t, size_t)
    end_mask = sum(1 << i for i, si in enumerate(s.tolist()) if si == -1)
    end = Tensor(np.asarray(ends, b.dtype))
    return execute(_strided_slice, (x, Tensor(b), end, Tensor(np.ones_like(b))),
                   {"begin_mask": 0, "end_mask": end_mask, "ellipsis_mask": 0, "new_axis_mask": 0,
                    "shrink_axis_mask": 0})


def _slice_indices(begin, size):
    """begin and size of tf.slice as int32/int64 tensors (Note [typed index inputs]).

    Raises:
      TypeError: eagerly, one of them cannot be converted to the other's dtype (TensorFlow
        converts both to one Index dtype first: a bool begin makes the size [1, 1] fail).
    """
    try:
        return _slice_index(begin, "begin"), _slice_index(size, "size")
    except InvalidArgumentError:                       # eagerly: a dtype outside int32/int64
        given = [v for v in (begin, size) if isinstance(v, Tensor)]
        dtype = (given[0] if given else convert_to_tensor(begin)).dtype
        for v in (begin, size):
            if not isinstance(v, Tensor):
                convert_to_tensor(v, dtype=dtype)      # TypeError where TF's matching conversion fails
        raise


def _slice_shape_error(begin, size, begin_shape, size_shape, rank):
    """The exception for begin/size of tf.slice that are not vectors of the input's rank: an
    empty Python list is a float32 tensor in TensorFlow (a dtype error); else a shape error,
    ValueError while a graph is built (Note [build-time shape errors])."""
    for v, what in ((begin, "begin"), (size, "size")):
        if isinstance(v, (list, tuple)) and not v:
            return typed_index_error("float32", what, "Slice", "Index", _SLICE_INDEX_DTYPES)
    return shape_rules.shape_error(
        "Slice", f"Expected begin and size arguments to be 1-D tensors of size {rank}, but got shapes "
        f"{list(begin_shape)} and {list(size_shape)} instead.")


def _dynamic_slice(x, begin, size):
    """tf.slice with a begin or size known only when the graph runs: the "Slice" op (Note [size inputs])."""
    begin, size = _slice_index(begin, "begin"), _slice_index(size, "size")
    if begin._value.dtype != size._value.dtype:                    # one index type, the wider
        wide = np.int64 if np.int64 in (begin._value.dtype, size._value.dtype) else np.int32
        begin, size = basic_ops.cast(begin, wide), basic_ops.cast(size, wide)
    return execute(_slice, (x, begin, size), {})


def _slice_shape(x, begin, size):
    """In graphs (TensorFlow's rule): the known sizes; a -1 size is the rest of a known dimension when the
    begin is known, and unknown when some size is not known."""
    shape = tuple(x._value.shape)
    b = primitives.vector(begin, "begin", "Slice")
    s = primitives.vector(size, "size", "Slice")
    if len(b) != len(shape) or len(s) != len(shape):
        raise ValueError(f"Expected begin and size arguments to be 1-D tensors of size {len(shape)}, but got "
                         f"{len(b)} and {len(s)} entries instead [Op:Slice]")
    if None in s:
        dims = [None if si is None or si == -1 else si for si in s]
    else:
        dims = [si if si != -1 else (None if d is None or bi is None else d - bi) for d, bi, si in zip(shape, b, s)]
    return [Meta(tuple(dims), x._value.dtype)]


@op("Slice", same_dtype=False, shape=_slice_shape, shape_reads_inputs=True, jvp=LINEAR)
def _slice(x, begin, size):
    rank = x.ndim
    if begin.shape != (rank,) or size.shape != (rank,):
        raise ValueError(f"Expected begin and size arguments to be 1-D tensors of size {rank}, but got shapes "
                         f"{list(begin.shape)} and {list(size.shape)} instead.")
    dims = np.asarray(x.shape, np.int64)
    b = begin.astype(np.int64)
    s = np.where(size == -1, dims - b, size)
    bad = np.flatnonzero((b < 0) | (b > dims))
    if bad.size:
        i = bad[0]
        raise ValueError(f"Expected begin[{i}] in [0, {dims[i]}], but got {b[i]}")
    bad = np.flatnonzero((s < 0) | (b + s > dims))
    if bad.size:
        i = bad[0]
        raise ValueError(f"Expected size[{i}] in [0, {dims[i] - b[i]}], but got {s[i]}")
    return x[tuple(map(_py_slice, b.tolist(), (b + s).tolist()))]


@_slice.def_batch
def _slice_batch(xs, batched):
    if any(batched[1:]):
        raise batching.NotBatchable                     # a block per example
    x, begin, size = xs
    return execute(_slice, (x, _prepend_entry(begin, 0), _prepend_entry(size, -1)), {}), True


@_slice.def_grad(reads_inputs=(1,))
def _slice_grad(op, dy):
    x, begin, _ = op.inputs                            # dx = dy placed at the block, zeros elsewhere
    dy = convert_to_tensor(dy)
    end = begin + shape_tensor(dy, begin._value.dtype)
    strides = Tensor(np.ones(x._value.ndim, begin._value.dtype))
    dx = execute(_strided_slice_grad_op, (_shape_of(x, begin), begin, end, strides, dy), dict.fromkeys(_MASKS, 0))
    return dx, None, None


# -- Tensor.__getitem__ ----------------------------------------------------------

_BAD_INDEX = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar tf.int32/tf.int64 "
              "tensors are valid indices, got {!r}")


def _index_value(value):
    """A single index (int, NumPy integer, scalar int tensor) as an int or a symbolic tensor."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    if isinstance(value, Tensor) and value.shape.rank == 0 and value._value.dtype in _INDEX_DTYPES:
        if type(value) is Tensor:
            return int(value._value)
        op_ = getattr(value, "op", None)              # a graph constant: its value is static
        if op_ is not None and op_.op_def is _const:
            return int(op_.get_attr("value"))
        return value
    raise TypeError(_BAD_INDEX.format(value))


def _is_bool_mask(key):
    if isinstance(key, (bool, np.bool_)):
        return True
    if isinstance(key, np.ndarray) or isinstance(key, Tensor):
        return key.dtype == np.bool_ or getattr(key.dtype, "is_bool", False)
    return False


def _getitem(x, key):
    """`x[key]` with TensorFlow's semantics.

    Ints (and scalar int16/32/64 tensors) pick one index and drop the axis,
    slices may have any non-zero step, `None`/`tf.newaxis` inserts an axis and
    `...` stands for the untouched axes; a list is read as a tuple, and a bool
    key (array or tensor) is a `tf.boolean_mask`.

    Raises:
      TypeError: an index of another kind (float, non-scalar tensor, string...).
      InvalidArgumentError: a single index out of bounds, several ellipses or a
        zero step.
    """
    sig = _signature(key)
    spec = _SPECS.get(sig) if sig is not None else None
    if spec is None:
        if _is_bool_mask(key):
            return scatter_ops.boolean_mask(x, key)
        spec = _key_spec(key)
        if sig is not None:
            if len(_SPECS) >= 4096:
                _SPECS.clear()
            _SPECS[sig] = spec
    if type(x) is not Tensor:
        x = convert_to_tensor(x)
    (begin, end, strides), masks = spec                # fresh tensors: see Note [slice spec cache]
    return execute(_strided_slice, (x, _fresh(begin), _fresh(end), _fresh(strides)), masks)


def _fresh(index):
    return Tensor(index) if type(index) is np.ndarray else index


# Note [slice spec cache]: keys made of Python ints, slices of ints, None and
# Ellipsis map to the same begin/end/strides arrays every time, so those are
# built once (a tensor in the key, possibly symbolic, is never cached).  Each
# call wraps them in new tensors: a tf.function being traced keeps tensors
# made during the trace as constants, whereas older ones would be captured
# as inputs and lose their static values.
_SPECS = {}


def _signature(key):
    """A hashable stand-in for a key of Python ints/None/Ellipsis/int slices; None for other keys."""
    if type(key) is int:
        return key
    if type(key) is not tuple:
        return None
    parts = []
    for item in key:
        kind = type(item)
        if kind is int or item is None or item is Ellipsis:
            parts.append(item)
        elif kind is _py_slice:
            bounds = (item.start, item.stop, item.step)
            for b in bounds:
                if b is not None and type(b) is not int:
                    return None
            parts.append(bounds)
        else:
            return None
    return tuple(parts)


def _key_spec(key):
    """(begin, end, strides) tensors and the mask attrs of a `__getitem__` key."""
    if not isinstance(key, (tuple, list)):
        key = (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    for i, item in enumerate(key):
        bit = 1 << i
        if isinstance(item, _py_slice):
            for part, values, mask in ((item.start, begin, "begin_mask"), (item.stop, end, "end_mask")):
                if part is None:
                    values.append(0)
                    masks[mask] |= bit
                else:
                    values.append(_index_value(part))
            strides.append(1 if item.step is None else _index_value(item.step))
        elif item is Ellipsis:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis_mask"] |= bit
        elif item is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["new_axis_mask"] |= bit
        else:
            at = _index_value(item)
            begin.append(at), end.append(at + 1), strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return (_pack(begin), _pack(end), _pack(strides)), masks


def _pack(values):
    """A 1-D index array from Python ints, or a tensor stacking symbolic scalars."""
    if all(type(v) is int for v in values):
        if values and (max(values) >= 2**31 or min(values) < -2**31):
            return np.asarray(values, np.int64)
        return np.asarray(values, np.int32) if values else np.zeros(0, np.int32)
    return primitives.stack([basic_ops.cast(v, "int64") if isinstance(v, Tensor) else np.int64(v) for v in values])
