"""TF1's initializers: `tf.compat.v1.zeros_initializer`, `glorot_uniform_initializer`, ...

An initializer is an object called as `init(shape, dtype=None, partition_info=None)`
that returns the initial value (a tensor); `get_variable` calls it with the
variable's shape and dtype (compat/variable_scope.py).  The dtype given when it
is made is the default of the call.  The random ones draw with tapeflow's
random ops, so in a TF1 graph they draw when the variable's initializer runs.
Keras's initializers (`tf.keras.initializers`) are not part of tapeflow.
"""

import math

from tapeflow.framework import dtypes
from tapeflow.framework.export import tf_export
from tapeflow.framework.tensor import constant
from tapeflow.ops import constructor_ops, decomposition_ops, linalg_ops, random_ops, unary_ops
from tapeflow.ops.core import primitives


def _float_dtype(dtype):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype}.")
    return dtype


def _fans(shape):
    """(fan_in, fan_out) of a weight of `shape`: its last two axes, times the rest (convolutions)."""
    shape = [int(d) for d in shape]
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """The base of TF1's initializers: `init(shape, dtype=None, partition_info=None)`."""

    def __call__(self, shape, dtype=None, partition_info=None):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@tf_export("compat.v1.zeros_initializer", "compat.v1.initializers.zeros")
class Zeros(Initializer):
    """Zeros of the requested shape and dtype.

    >>> import tapeflow as tf
    >>> tf.compat.v1.zeros_initializer()([2]).numpy()
    array([0., 0.], dtype=float32)
    """

    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return constructor_ops.zeros(shape, self.dtype if dtype is None else dtype)

    def get_config(self):
        return {"dtype": self.dtype.name}


@tf_export("compat.v1.ones_initializer", "compat.v1.initializers.ones")
class Ones(Zeros):
    """Ones of the requested shape and dtype.

    >>> import tapeflow as tf
    >>> tf.compat.v1.ones_initializer(dtype=tf.int32)([2]).numpy()
    array([1, 1], dtype=int32)
    """

    def __call__(self, shape, dtype=None, partition_info=None):
        return constructor_ops.ones(shape, self.dtype if dtype is None else dtype)


@tf_export("compat.v1.constant_initializer", "compat.v1.initializers.constant")
class Constant(Initializer):
    """A value (a scalar, filled in, or as many elements as the shape has, reshaped).

    Raises (when called):
      TypeError: `value` has another number of elements than the shape.

    >>> import tapeflow as tf
    >>> tf.compat.v1.constant_initializer([1, 2, 3, 4])([2, 2]).numpy()
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """

    def __init__(self, value=0, dtype=dtypes.float32, verify_shape=False):
        self.value = value
        self.dtype = dtypes.as_dtype(dtype)
        self._verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        return constant(self.value, dtype=self.dtype if dtype is None else dtype, shape=shape)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name}


@tf_export("compat.v1.random_normal_initializer", "compat.v1.initializers.random_normal")
class RandomNormal(Initializer):
    """Normal draws of mean `mean` and standard deviation `stddev` (v1 default 1.0).

    >>> import tapeflow as tf
    >>> tf.compat.v1.random_normal_initializer(seed=1)([3]).shape
    TensorShape([3])
    """

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed = mean, stddev, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.normal(shape, self.mean, self.stddev, self.dtype if dtype is None else dtype,
                                        seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed, "dtype": self.dtype.name}


@tf_export("compat.v1.truncated_normal_initializer", "compat.v1.initializers.truncated_normal")
class TruncatedNormal(RandomNormal):
    """Normal draws within two standard deviations of `mean` (others drawn again).

    >>> import tapeflow as tf
    >>> bool(tf.reduce_all(tf.abs(tf.compat.v1.truncated_normal_initializer()([100])) <= 2.0))
    True
    """

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, self.dtype if dtype is None else dtype,
                                           seed=self.seed)


@tf_export("compat.v1.random_uniform_initializer", "compat.v1.initializers.random_uniform")
class RandomUniform(Initializer):
    """Uniform draws in [minval, maxval) (maxval None: 1 for floats).

    >>> import tapeflow as tf
    >>> bool(tf.reduce_all(tf.compat.v1.random_uniform_initializer(2.0, 3.0)([10]) >= 2.0))
    True
    """

    def __init__(self, minval=0.0, maxval=None, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.uniform(shape, self.minval, self.maxval, self.dtype if dtype is None else dtype,
                                         seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed, "dtype": self.dtype.name}


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")


@tf_export("compat.v1.variance_scaling_initializer", "compat.v1.initializers.variance_scaling")
class VarianceScaling(Initializer):
    """Draws scaled to the weight's fans: variance `scale / n`, n the fan-in, fan-out or their
    mean; truncated normal ("normal" is its old name), untruncated normal or uniform.

    Raises:
      ValueError: `scale` is not positive, or `mode` or `distribution` is unknown.

    >>> import tapeflow as tf
    >>> init = tf.compat.v1.variance_scaling_initializer(scale=2.0, distribution="uniform")
    >>> bool(tf.reduce_max(tf.abs(init([4, 6]))) <= (3 * 2.0 / 4) ** 0.5)
    True
    """

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        if mode not in _MODES:
            raise ValueError(f"Argument `mode` should be one of {_MODES}. Received: {mode}")
        distribution = distribution.lower()
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"Argument `distribution` should be one of {_DISTRIBUTIONS}. Received: {distribution}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self.dtype if dtype is None else dtype
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            # the standard deviation of a unit normal truncated to [-2, 2]: 0.8796...
            return random_ops.truncated_normal(shape, 0.0, math.sqrt(variance) / .87962566103423978, dtype,
                                               seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.normal(shape, 0.0, math.sqrt(variance), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * variance)
        return random_ops.uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed,
                "dtype": self.dtype.name}


@tf_export("compat.v1.glorot_uniform_initializer", "compat.v1.initializers.glorot_uniform")
class GlorotUniform(VarianceScaling):
    """Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)); get_variable's default
    for floating variables.

    >>> import tapeflow as tf
    >>> bool(tf.reduce_max(tf.abs(tf.compat.v1.glorot_uniform_initializer()([3, 5]))) <= 0.75 ** 0.5)
    True
    """

    def __init__(self, seed=None, dtype=dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self):
        return {"seed": self.seed, "dtype": self.dtype.name}


@tf_export("compat.v1.glorot_normal_initializer", "compat.v1.initializers.glorot_normal")
class GlorotNormal(GlorotUniform):
    """Truncated normal of standard deviation sqrt(2 / (fan_in + fan_out)).

    >>> import tapeflow as tf
    >>> tf.compat.v1.glorot_normal_initializer(seed=3)([2, 2]).shape
    TensorShape([2, 2])
    """

    def __init__(self, seed=None, dtype=dtypes.float32):
        VarianceScaling.__init__(self, 1.0, "fan_avg", "truncated_normal", seed, dtype)


def _scaled(scale, mode, distribution, doc):
    def make(seed=None):
        return VarianceScaling(scale, mode, distribution, seed)
    make.__doc__ = doc
    return make


for _name, _args in {"he_normal": (2.0, "fan_in", "truncated_normal"), "he_uniform": (2.0, "fan_in", "uniform"),
                     "lecun_normal": (1.0, "fan_in", "truncated_normal"),
                     "lecun_uniform": (1.0, "fan_in", "uniform")}.items():
    tf_export(f"compat.v1.initializers.{_name}")(
        _scaled(*_args, f"`{_name}(seed=None)`: VarianceScaling{_args}.\n\n    >>> import tapeflow as tf\n"
                f"    >>> tf.compat.v1.initializers.{_name}(seed=1)([2, 2]).shape\n    TensorShape([2, 2])\n"))


@tf_export("compat.v1.orthogonal_initializer", "compat.v1.initializers.orthogonal")
class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain`, from the QR factorization of normal draws;
    shapes of rank above 2 are flattened to [prod(shape[:-1]), shape[-1]].

    Raises (when called):
      ValueError: the shape has rank below 2.

    >>> import tapeflow as tf
    >>> q = tf.compat.v1.orthogonal_initializer(seed=1)([3, 3])
    >>> bool(tf.reduce_all(tf.abs(tf.matmul(q, q, transpose_a=True) - tf.eye(3)) < 1e-5))
    True
    """

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        self.gain, self.seed = gain, seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self.dtype if dtype is None else dtype
        shape = [int(d) for d in shape]
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. Received: "
                             f"shape={shape} of rank {len(shape)}.")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        q, r = decomposition_ops.qr(random_ops.normal(flat, dtype=dtype, seed=self.seed), full_matrices=False)
        q = q * unary_ops.sign(linalg_ops.diag_part(r))[None, :]       # a uniform draw of Q
        if rows < cols:
            q = primitives.transpose(q)
        return primitives.reshape(self.gain * q, shape)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}
