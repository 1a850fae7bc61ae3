"""tapeflow: TensorFlow's automatic differentiation on NumPy. Use as `import tapeflow as tf`.

Every public name is placed by `tf_export` where it is defined (Note [op names]
in framework/export.py); importing the layers below runs those declarations.
"""

import warnings as _warnings

from tapeflow import ops as _ops  # noqa: F401  (the op families)
from tapeflow import eager as _eager, graph as _graph  # noqa: F401
from tapeflow import custom_gradient as _custom_gradient, testing as _testing  # noqa: F401
from tapeflow import config, module as _module, py_func as _py_func  # noqa: F401  (config: before compat)
from tapeflow.framework.export import populate as _populate

_populate(__name__)

from tapeflow import mixed_precision  # noqa: E402,F401  (before compat: it exports compat.v1.mixed_precision)
from tapeflow import distribute  # noqa: E402,F401  (before optimizers, which read the strategy)
from tapeflow import optimizers, keras  # noqa: E402,F401  (after mixed_precision, before compat: compat.v1.train)
from tapeflow import autodiff, bitwise, compat, dtypes, errors, linalg, math, nest, nn, random, sparse, strings, test  # noqa: E402,F401
from tapeflow import autograph, types  # noqa: E402,F401

__version__ = "0.1.0"

# Like TensorFlow's kernels, ours are silent about floating-point exceptions
# (log(0) = -inf, 1/0 = inf): NumPy's RuntimeWarnings from our modules are hidden.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tapeflow(\..*)?$")
