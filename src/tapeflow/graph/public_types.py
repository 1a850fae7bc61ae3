"""`tf.types.experimental`: the names TensorFlow offers for type annotations.

`TensorLike` is what ops accept where a tensor is expected; the function
types are tapeflow's own classes (`tf.function` returns a `Function`, whose
`get_concrete_function` gives a `ConcreteFunction`), so `isinstance` checks
against them work as in TensorFlow.
"""

import typing

import numpy as np

from tapeflow.framework.export import tf_export
from tapeflow.framework.indexed_slices import IndexedSlices
from tapeflow.framework.tensor import Tensor
from tapeflow.ops.variables import Variable
from tapeflow.graph.concrete_function import ConcreteFunction
from tapeflow.graph.function import Function

TensorLike = typing.Union[Tensor, Variable, IndexedSlices, np.ndarray, np.generic, int, float, bool, complex,
                          str, bytes, tuple, list]

tf_export("types.experimental.TensorLike", names_op=False)(TensorLike)
tf_export("types.experimental.ConcreteFunction", "types.experimental.Callable",
          names_op=False)(ConcreteFunction)
tf_export("types.experimental.GenericFunction", "types.experimental.PolymorphicFunction",
          names_op=False)(Function)
