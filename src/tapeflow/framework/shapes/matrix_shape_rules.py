"""Static shape rules of the matrix families (linear algebra, decompositions, einsum).

TensorFlow's C++ shape functions, for graphs whose dimensions may be unknown
(None): sizes that must agree are merged (a known size wins over None),
batch dimensions broadcast, and a mismatch between known sizes raises
ValueError while the graph is built, as TensorFlow does.
"""

from tapeflow.framework.shapes.shape_rules import broadcast_shapes
from tapeflow.framework.shapes.symbolic_tensors import Meta


def meta(shape, dtype):
    return Meta(tuple(shape), dtype)


def shapes_str(metas):
    """Input shapes as TensorFlow prints them: [?,2,3], [3]."""
    return ", ".join("[" + ",".join("?" if d is None else str(d) for d in m.shape) + "]" for m in metas)


def merge_dims(op_type, metas, *dims):
    """The one size several dims must share (None while all are unknown).

    Raises:
      ValueError: two known sizes differ.
    """
    known = None
    for d in dims:
        if d is not None:
            if known is not None and d != known:
                raise ValueError(f"Dimensions must be equal, but are {known} and {d} for '{op_type}' "
                                 f"with input shapes: {shapes_str(metas)}.")
            known = d
    return known


def matrix_rank_at_least_2(op_type, metas, index=0):
    """Raises ValueError unless input `index` is a (batch of) matrices."""
    rank = len(metas[index].shape)
    if rank < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {rank} for '{op_type}' "
                         f"with input shapes: {shapes_str(metas)}.")


def square_dims(op_type, metas, index=0):
    """The batch dims and the size n of input `index`, a batch of square [n, n] matrices."""
    matrix_rank_at_least_2(op_type, metas, index)
    shape = metas[index].shape
    return tuple(shape[:-2]), merge_dims(op_type, metas, shape[-2], shape[-1])


def min_dim(m, n):
    """TensorFlow's Min of two dims: 0 when either is 0, else unknown when either is."""
    if m == 0 or n == 0:
        return 0
    return None if m is None or n is None else min(m, n)


def broadcast_dims(op_type, metas, a, b):
    """The broadcast of two (batch) shapes; an unknown dim against 1 or 0 stays unknown.

    Raises:
      ValueError: known sizes that do not broadcast.
    """
    try:
        return broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(f"Dimensions must be equal, but are {list(a)} and {list(b)} (not broadcastable) for "
                         f"'{op_type}' with input shapes: {shapes_str(metas)}.") from None


# -- presets shared by several ops ----------------------------------------------

def square_matrix_shape(op_type):
    """The rule of an op taking [..., M, M] to [..., M, M], the two M merged (inverse, Cholesky)."""
    def rule(a, **_):
        batch, n = square_dims(op_type, [a])
        return [meta(batch + (n, n), a.dtype)]
    return rule


def per_matrix_shape(op_type, num_outputs=1):
    """The rule of an op giving one value per [..., M, M] matrix, [...], in each of its outputs (determinants)."""
    def rule(a, **_):
        return [meta(square_dims(op_type, [a])[0], a.dtype)] * num_outputs
    return rule
