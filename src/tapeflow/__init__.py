"""tapeflow: TensorFlow's automatic differentiation on NumPy. Use as `import tapeflow as tf`."""

import sys as _sys
import warnings as _warnings

from tapeflow.framework import dtypes
from tapeflow.framework.context import executing_eagerly
from tapeflow.framework.dtypes import (
    DType, as_dtype, bfloat16, bool, complex64, complex128, double, float16, float32, float64, half,
    int8, int16, int32, int64, uint8, uint16, uint32, uint64, variant,
)
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.op_def import NotDifferentiable, RegisterGradient, no_gradient
from tapeflow.framework.tensor import Tensor, constant, convert_to_tensor, is_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.framework.variables import Variable
from tapeflow.ops.array_ops import *  # noqa: F401,F403
from tapeflow.ops.slicing_ops import *  # noqa: F401,F403
from tapeflow.ops.constructor_ops import *  # noqa: F401,F403
from tapeflow.ops.scatter_ops import *  # noqa: F401,F403
from tapeflow.ops.einsum_ops import *  # noqa: F401,F403
from tapeflow.ops.sort_ops import *  # noqa: F401,F403
from tapeflow.ops.math_ops import *  # noqa: F401,F403
from tapeflow.ops.linalg_ops import *  # noqa: F401,F403
from tapeflow.ops.nn_ops import *  # noqa: F401,F403
from tapeflow.ops import operators as _operators  # noqa: F401  (installs Tensor operators)
from tapeflow.custom_gradient import custom_gradient, grad_pass_through, recompute_grad
from tapeflow.eager.backprop import GradientTape, UnconnectedGradients
from tapeflow.graph.gradients import AggregationMethod, gradients, hessians
from tapeflow.graph.control_flow import cond, while_loop
from tapeflow.graph.function import function
from tapeflow.graph.graph import Graph
from tapeflow.graph.tensor_array import TensorArray
from tapeflow.graph.scopes import control_dependencies, name_scope
from tapeflow import bitwise, compat, errors, linalg, math, nest, nn, random, test  # noqa: E402

__version__ = "0.1.0"

# `name=` names graph ops (Note [op names] in graph/naming.py).
from tapeflow.graph import naming as _naming  # noqa: E402
_naming.name_public_functions([_sys.modules[__name__], bitwise, compat.v1, linalg, math, nn, random])

# Like TensorFlow's kernels, ours are silent about floating-point exceptions
# (log(0) = -inf, 1/0 = inf): NumPy's RuntimeWarnings from our modules are hidden.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tapeflow(\..*)?$")
