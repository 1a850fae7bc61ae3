"""Family presets: one decorator declares an op with its family's shape, batching and JVP rules.

`@unary_op("Exp", dtypes=..., into=np.exp)` is `@op("Exp", ...)` with the elementwise
family's fields filled in; any field may be given again to override the preset
(`shape=unary_bool_shape`).  Broadcasting shape rules take inputs of unknown rank.
"""

import functools

from tapeflow.framework.op_def import SELF_ADJOINT, op
from tapeflow.framework.shapes.shape_rules import (
    broadcast_shape, compare_shape, reduction_shape, reduction_unknown_rank, unchanged_shape,
)
from tapeflow.ops.core.batching import ELEMENTWISE, REDUCTION

unary_op = functools.partial(op, shape=unchanged_shape, unknown_rank=True, jvp=SELF_ADJOINT, batch=ELEMENTWISE)
binary_op = functools.partial(op, shape=broadcast_shape, unknown_rank=True, batch=ELEMENTWISE)
comparison_op = functools.partial(op, shape=compare_shape, unknown_rank=True, differentiable=False,
                                  batch=ELEMENTWISE)
reduction_op = functools.partial(op, shape=reduction_shape, unknown_rank=reduction_unknown_rank, batch=REDUCTION)
