"""`tf.random`: random tensors drawn from one generator held by this module.

Seeding follows TensorFlow's rules in spirit: `set_seed(s)` makes the sequence
of random ops that follows reproducible; an op-level `seed` gives that op its
own stream (keyed by the global and op seeds), which `set_seed` restarts.
Values differ from TensorFlow's (different generators), distributions do not.

The sampling kernels are ops without inputs, so a traced function draws new
numbers on every call instead of baking one sample in.
"""

import functools

import numpy as np
import scipy.special

from tapeflow.framework import dtypes
from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import execute, op
from tapeflow.framework.shapes import shape_rules
from tapeflow.framework.shapes.known_values import constant_value
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import math_ops, scatter_ops, sort_ops
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.arguments import typed_index_error
from tapeflow.ops.core import basic_ops

_DEFAULT_SEED = 87654321      # used with an op seed when no global seed is set (TF's DEFAULT_GRAPH_SEED)


class _Seeds:
    """The module's generator state: the global seed, its stream, and one stream per op seed."""

    def __init__(self):
        self.global_seed = None
        self.stream = np.random.default_rng()
        self.op_streams = {}

    def generator(self, seed):
        if seed is None:
            return self.stream
        g = self.op_streams.get(seed)
        if g is None:
            base = _DEFAULT_SEED if self.global_seed is None else self.global_seed
            g = self.op_streams[seed] = np.random.default_rng([base & 0xFFFFFFFF, int(seed) & 0xFFFFFFFF])
        return g


_seeds = _Seeds()


@tf_export("random.set_seed")
def set_seed(seed):
    """Sets the global random seed: the random ops that follow repeat their values.

    >>> import tapeflow as tf
    >>> tf.random.set_seed(1); a = tf.random.uniform([2])
    >>> tf.random.set_seed(1); b = tf.random.uniform([2])
    >>> bool((a.numpy() == b.numpy()).all())
    True
    """
    _seeds.global_seed = None if seed is None else int(seed)
    _seeds.stream = np.random.default_rng(seed if seed is None else int(seed) & 0xFFFFFFFFFFFFFFFF)
    _seeds.op_streams = {}


def _generator(seed):
    """The stream an op with op-level `seed` (or None) draws from."""
    return _seeds.generator(None if seed is None else int(seed))


# -- argument checks --------------------------------------------------------------

_FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
_UNIFORM = _FLOATS + (dtypes.int32, dtypes.int64)
_INT_SHAPES = frozenset((np.dtype(np.int32), np.dtype(np.int64)))


def _shape(shape, type_):
    """The shape argument as a 1-D integer tensor (checked now when its value is known)."""
    if getattr(shape, "_is_batched", False):
        return shape                                  # a shape per example: drawn example by example
    sizes = primitives.sizes_or_tensor(shape, "shape", type_)    # graphs: sizes from symbolic tensors
    if isinstance(sizes, Tensor):
        return sizes                                  # checked when the graph runs
    if sizes is not None:
        shape = sizes
    value = shape._value if isinstance(shape, Tensor) else shape
    dims = np.asarray(value)
    if dims.dtype.kind not in "iu" and dims.size:        # Note [typed index inputs] in slicing_ops
        name = "string" if dims.dtype.kind in "OSU" else dtypes.as_dtype(dims.dtype).name
        raise typed_index_error("float32" if name == "float64" and not isinstance(value, np.ndarray) else name,
                                "shape", type_, "T", _INT_SHAPES)
    dims = dims.astype(np.int64)
    if dims.ndim != 1:
        raise InvalidArgumentError(None, type_, f"shape must be a vector of integers, got {value!r} [Op:{type_}]")
    for d in dims:
        if d < 0:
            raise InvalidArgumentError(None, type_, f"Dimension {d} must be >= 0 [Op:{type_}]")
    return Tensor(dims.astype(np.int32))


def _float_dtype(dtype, type_):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS:
        if dtype.is_integer:
            raise TypeError(f"Cannot convert 0.0 to EagerTensor of dtype {dtype.name}")
        raise InvalidArgumentError(
            None, type_, f"Value for attr 'dtype' of {dtype.name} is not in the list of allowed values: "
                         f"half, bfloat16, float, double [Op:{type_}]")
    return dtype


def _sample_dtype(np_dtype):
    """NumPy samples directly in float32/float64; half types are drawn in float32."""
    return np_dtype if np_dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _affine(sample, scale, shift, dtype):
    """sample * scale + shift with tapeflow ops, so tensor parameters get gradients."""
    if _is_number(scale, 1.0) and _is_number(shift, 0.0):
        return sample
    return math_ops.add_v2(math_ops.multiply(sample, convert_to_tensor(scale, dtype=dtype)),
                        convert_to_tensor(shift, dtype=dtype))


def _is_number(value, number):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == number


# -- sampling ops (stateful, no gradients; the shape is an input as in TensorFlow) ----------
# Graph shapes come from the shape input (TF's RandomShape), so tracing draws no numbers.

def _sample_shape(shape, *_, dtype, **__):
    """The sample's shape: the entries of the shape tensor known while building."""
    dims = primitives.output_dims(primitives.vector(shape, "shape", "random"), "random")
    return [Meta(tuple(dims), np.dtype(dtype))]


_sampler = functools.partial(op, same_dtype=False, stateful=True, shape=_sample_shape, shape_reads_inputs=True,
                             differentiable=False)


@_sampler("RandomStandardNormal")
def _standard_normal(shape, dtype, seed):
    shape = tuple(shape.tolist())
    out = _generator(seed).standard_normal(shape, dtype=_sample_dtype(dtype))
    return out.astype(dtype, copy=False)


@_sampler("RandomUniform")
def _random_uniform(shape, dtype, seed):
    shape = tuple(shape.tolist())
    out = _generator(seed).random(shape, dtype=_sample_dtype(dtype))
    return out.astype(dtype, copy=False)


@_sampler("RandomUniformInt")
def _random_uniform_int(shape, minval, maxval, dtype, seed):
    # the bounds are attrs, or scalar inputs when known only as a graph runs (Note [size inputs])
    shape = tuple(shape.tolist())
    minval, maxval = int(minval), int(maxval)
    if minval >= maxval:
        raise ValueError(f"Need minval < maxval, got {minval} >= {maxval}")
    return _generator(seed).integers(minval, maxval, shape, dtype=dtype)


@_sampler("TruncatedNormal")
def _truncated_normal(shape, dtype, seed):
    shape = tuple(shape.tolist())
    # Inverse CDF on the central +-2 sigma: exact, no rejection loop.
    lo, hi = scipy.special.ndtr(-2.0), scipy.special.ndtr(2.0)
    u = _generator(seed).uniform(lo, hi, shape)
    return scipy.special.ndtri(u).astype(dtype)


@op("RandomShuffle", same_dtype=False, stateful=True, shape=shape_rules.unchanged_shape, differentiable=False)
def _random_shuffle(x, seed):
    if x.ndim == 0:
        return x
    return x[_generator(seed).permutation(x.shape[0])]


def _multinomial_shape(logits, num_samples, output_dtype, seed):
    """[batch, num_samples] indices for [batch, classes] logits."""
    if len(logits.shape) != 2:
        raise ValueError(f"logits should be a matrix, got shape {list(logits.shape)}")
    return [Meta((logits.shape[0], num_samples), np.dtype(output_dtype))]


@op("Multinomial", same_dtype=False, stateful=True, shape=_multinomial_shape, differentiable=False)
def _multinomial(logits, num_samples, output_dtype, seed):
    if logits.ndim != 2:
        raise ValueError(f"logits should be a matrix, got shape {list(logits.shape)}")
    batch, classes = logits.shape
    if classes == 0 and num_samples:
        raise ValueError("num_classes should be positive, got 0")
    # Gumbel-max: argmax(logits + Gumbel noise) is a sample of softmax(logits).
    u = _generator(seed).random((batch, num_samples, classes))
    gumbel = -np.log(-np.log(np.maximum(u, np.finfo(np.float64).tiny)))
    scores = logits.astype(np.float64)[:, None, :] + gumbel
    return np.argmax(scores, axis=-1).astype(output_dtype) if classes else np.zeros((batch, num_samples), output_dtype)


# -- vectorization ---------------------------------------------------------------------------
# Note [random ops in vectorized code]: inside a vectorized function each example draws its
# own numbers, as in TensorFlow's pfor (which draws [batch] + shape at once): a sampling op
# run while vectorizations are active draws for the examples of every level in one call, and
# its result is batched at each of them.  A shape (or bound) that differs per example is
# NotBatchable: those ops then draw once per example.

def _all_levels(make):
    """`make(sizes)` (a plain tensor with the active levels' batch sizes as leading axes)
    batched at every level, outermost first."""
    out = make([level.size for level in state.vmaps])
    for level in list(state.vmaps):
        out = batching.BatchedTensor(out, level.depth)
    return out


def _with_sizes(sizes, dims):
    for size in reversed(sizes):
        dims = primitives.prepend(size, dims)
    return dims


def draw_per_example(op_, inputs, attrs):
    """Runs the random op `op_` on unbatched `inputs` inside vectorized code: each example
    draws its own numbers (Note [random ops in vectorized code])."""
    first, rest = inputs[0], tuple(inputs[1:])
    if op_ in _SAMPLERS:
        return _all_levels(lambda sizes: execute(op_, (_with_sizes(sizes, first),) + rest, attrs))
    shape = first._value.shape
    dims = shape if shape is not None and None not in shape else basic_ops.shape(first)
    batched = _all_levels(lambda sizes: primitives.broadcast_to(first, _with_sizes(sizes, dims)))
    return execute(op_, (batched,) + rest, attrs)


def _draw(op_, inputs, attrs):
    if state.vmaps and not any(t._is_batched for t in inputs):
        return draw_per_example(op_, inputs, attrs)
    return execute(op_, inputs, attrs)          # batched inputs: the op's rule (or its fallback)


def _not_batchable(xs, batched, **attrs):
    raise batching.NotBatchable                         # a shape or bound per example


for _sampler_op in (_standard_normal, _random_uniform, _random_uniform_int, _truncated_normal):
    _sampler_op.def_batch(_not_batchable)
_SAMPLERS = frozenset((_standard_normal, _random_uniform, _random_uniform_int, _truncated_normal))
DRAWS_PER_EXAMPLE = _SAMPLERS | {_random_shuffle, _multinomial}


@_multinomial.def_batch
def _multinomial_batch(xs, batched, num_samples, output_dtype, seed):
    logits = xs[0]                                      # the examples' rows are one [B*batch, classes] draw
    dims = primitives.dims_of(logits)
    rows = primitives.reshape(logits, _as_shape([dims[0] * dims[1], dims[2]]))
    out = execute(_multinomial, (rows,), {"num_samples": num_samples, "output_dtype": output_dtype, "seed": seed})
    return primitives.reshape(out, _as_shape([dims[0], dims[1], num_samples])), True


@_random_shuffle.def_batch
def _random_shuffle_batch(xs, batched, seed):
    x = xs[0]                                           # an independent permutation of each example's rows
    if x._value.ndim == 1:
        return x, True
    keys = execute(_random_uniform, (_as_shape(primitives.dims_of(x)[:2]),),
                   {"dtype": np.dtype(np.float64), "seed": seed})
    return scatter_ops.gather(x, sort_ops.argsort(keys, axis=1), batch_dims=1), True


def _as_shape(dims):
    """An int32 shape tensor from ints and scalar tensors."""
    if all(isinstance(d, (int, np.integer)) for d in dims):
        return Tensor(np.asarray(dims, np.int32))
    return primitives.stack([basic_ops.cast(d, dtypes.int32) for d in dims])


def _seed_attr(seed):
    return None if seed is None else int(seed)


@tf_export("random.normal")
def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples of a normal distribution; `mean`/`stddev` broadcast and receive gradients.

    Raises:
      TypeError: an integer dtype.
      InvalidArgumentError: a negative dimension or a non-floating dtype.
    """
    dtype = _float_dtype(dtype, "RandomStandardNormal")
    shape = _shape(shape, "RandomStandardNormal")
    sample = _draw(_standard_normal, (shape,), {"dtype": dtype._np, "seed": _seed_attr(seed)})
    return _affine(sample, stddev, mean, dtype)


@tf_export("random.truncated_normal")
def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal samples restricted to two standard deviations around the mean."""
    dtype = _float_dtype(dtype, "TruncatedNormal")
    shape = _shape(shape, "TruncatedNormal")
    sample = _draw(_truncated_normal, (shape,), {"dtype": dtype._np, "seed": _seed_attr(seed)})
    return _affine(sample, stddev, mean, dtype)


@tf_export("random.uniform")
def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform samples in [minval, maxval); integer dtypes need `maxval`.

    Raises:
      ValueError: an integer dtype without maxval, or a dtype other than float/int32/int64.
      InvalidArgumentError: integer bounds with minval >= maxval or non-scalar bounds.

    >>> import tapeflow as tf
    >>> x = tf.random.uniform([100], 0, 10, dtype=tf.int32)
    >>> bool(x.numpy().min() >= 0 and x.numpy().max() < 10)
    True
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _UNIFORM:
        raise ValueError(f"Argument `dtype` got invalid value {dtype!r}. Accepted dtypes are "
                         f"(tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int32, tf.int64).")
    shape = _shape(shape, "RandomUniform")
    if dtype.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        bounds = [_int_bound(v, dtype) for v in (minval, maxval)]
        for what, b in zip(("minval", "maxval"), bounds, strict=True):
            dims = tuple(b._value.shape) if isinstance(b, Tensor) else np.shape(b)
            if dims and isinstance(b, Tensor):          # graphs: found by shape inference, as in TensorFlow
                raise ValueError(f"{what} must be a scalar; got a tensor of shape {list(dims)} [Op:RandomUniformInt]")
            if dims:
                raise InvalidArgumentError(None, "RandomUniformInt",
                                           f"{what} must be 0-D, got shape {list(dims)} [Op:RandomUniformInt]")
        attrs = {"dtype": dtype._np, "seed": _seed_attr(seed)}
        if any(isinstance(b, Tensor) for b in bounds):        # bounds read when the graph runs
            return _draw(_random_uniform_int, (shape, *[convert_to_tensor(b) for b in bounds]), attrs)
        return _draw(_random_uniform_int, (shape,), dict(attrs, minval=int(bounds[0]), maxval=int(bounds[1])))
    maxval = 1 if maxval is None else maxval
    sample = _draw(_random_uniform, (shape,), {"dtype": dtype._np, "seed": _seed_attr(seed)})
    if isinstance(minval, Tensor) or isinstance(maxval, Tensor) or np.ndim(minval) or np.ndim(maxval):
        lo, hi = convert_to_tensor(minval, dtype=dtype), convert_to_tensor(maxval, dtype=dtype)
        return _affine(sample, math_ops.subtract(hi, lo), lo, dtype)
    return _affine(sample, float(maxval) - float(minval), float(minval), dtype)


def _int_bound(value, dtype):
    """An integer bound of `uniform`: a NumPy value when known now, else a symbolic scalar tensor."""
    t = convert_to_tensor(value, dtype=dtype)     # TypeError for values that do not fit dtype
    if isinstance(t, SymbolicTensor):             # graphs (Python values become constants there too)
        known = constant_value(t)
        return t if known is None else np.asarray(known)
    return np.asarray(t._value)


@tf_export("random.shuffle")
def shuffle(value, seed=None, name=None):
    """`value` with its first dimension randomly permuted (no gradient, like TensorFlow)."""
    value = convert_to_tensor(value)
    return _draw(_random_shuffle, (value,), {"seed": _seed_attr(seed)})


@tf_export("random.categorical")
def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """Class indices sampled from softmax(`logits`) for each row of a [batch, classes] matrix.

    Returns:
      An int64 (or `dtype`) tensor of shape [batch, num_samples].

    Raises:
      ValueError: a dtype other than int32/int64.
      InvalidArgumentError: logits that are not a matrix.
    """
    out_dtype = dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)
    if out_dtype not in (dtypes.int32, dtypes.int64):
        raise ValueError(f"Argument `dtype` got invalid value {out_dtype!r}. Accepted dtypes are (tf.int32, tf.int64).")
    logits = convert_to_tensor(logits)
    return _draw(_multinomial, (logits,), {"num_samples": int(num_samples), "output_dtype": out_dtype._np,
                                             "seed": _seed_attr(seed)})
