"""Einstein summation (`tf.einsum`) and `tf.tensordot`.

Note [canonical einsum]: `einsum` checks the equation against the operands
and rewrites it without ellipses: each broadcast dimension gets a letter of
its own (and an operand's size-1 dimension broadcast against a larger one
gets a fresh letter that is summed away).  When all sizes are known the
"Einsum" op sees only such letter-only equations, which makes its gradient a
plain einsum of the output gradient with the other operands; labels an
operand repeats (a diagonal) or sums on its own are restored with a reshape,
a broadcast and a constant diagonal mask.

Note [einsum in graphs]: in a graph, sizes may be unknown until it runs.
Labels' sizes are then checked by the kernel (cached per shapes), and when an
unknown size takes part in "..." broadcasting the op keeps the equation with
its ellipses and makes it canonical when the graph runs.  The gradient of such
an op (or of an operand with unknown sizes) is one einsum whose output puts
repeated labels on a diagonal (the kernel writes them there) and takes the
sizes of labels summed only by that operand from a ones tensor shaped like it;
broadcast dims are then summed away with `primitives.sum_like`.  The static
shape comes from `_einsum_shape`, TensorFlow's shape function.
"""

import functools
import re
import string

import numpy as np

from tapeflow.framework.context import state
from tapeflow.framework.errors import InvalidArgumentError
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import convert_inputs, execute, op
from tapeflow.framework.shapes.matrix_shape_rules import broadcast_dims, merge_dims, meta
from tapeflow.framework.shapes.symbolic_tensors import known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.ops import math_ops
from tapeflow.ops.core import batching, primitives
from tapeflow.ops.core.half import computes_in_float32
from tapeflow.ops.core.primitives import sum_like
from tapeflow.ops.core import basic_ops

_LETTERS = string.ascii_letters
_FORMAT = re.compile(r"^([a-zA-Z,.]*)(->[a-zA-Z.]*)?$")


@functools.lru_cache(maxsize=512)
def _plan(equation, shapes):
    """A fast NumPy evaluation of `equation` for operand `shapes` (cached).

    Two operands without repeated labels contract as one batched matmul (like
    TensorFlow's kernel); one operand uses NumPy's C einsum; longer chains use
    NumPy's einsum along a contraction order found once.  An equation with
    ellipses is first made canonical for these shapes, and repeated output
    labels place the result on a diagonal (Note [einsum in graphs]).

    Raises:
      ValueError: sizes that do not fit the equation (NumPy would broadcast a size-1 label).
    """
    inputs, out = equation.split("->")
    subs = inputs.split(",")
    if "." in equation:
        return _plan(_canonical(tuple(subs), out, shapes, strict=False), shapes)
    size = _label_sizes(subs, shapes)
    unique = "".join(dict.fromkeys(out))
    if unique != out:
        return _inflate_plan(_plan(inputs + "->" + unique, shapes), out + "->" + unique,
                             tuple(size[c] for c in out))
    if len(subs) == 1:
        return lambda x: np.einsum(equation, x)
    if len(subs) > 2 or any(len(set(s)) != len(s) for s in subs):
        path = np.einsum_path(equation, *[np.empty(s) for s in shapes], optimize="greedy")[0]
        return lambda *xs: np.einsum(equation, *xs, optimize=path)
    return _matmul_plan(equation, shapes)


def _label_sizes(subs, shapes):
    """Each label's size; ValueError where an operand disagrees."""
    size = {}
    for s, shape in zip(subs, shapes, strict=True):
        for axis, (c, d) in enumerate(zip(s, shape, strict=True)):
            if size.setdefault(c, d) != d:
                raise ValueError(f"Expected dimension {size[c]} at axis {axis} of the input shaped {list(shape)} "
                                 f"but got dimension {d}")
    return size


def _inflate_plan(inner, diagonal, shape):
    """The result of `inner` written onto the diagonal that `diagonal` ("ii->i") views, zeros elsewhere."""
    def run(*xs):
        y = inner(*xs)
        out = np.zeros(shape, y.dtype)
        np.einsum(diagonal, out)[...] = y      # a writable view of the diagonal
        return out
    return run


def _matmul_plan(equation, shapes):
    """`a,b->out` as transposes, one batched matmul and a final transpose."""
    (a, b), out = equation.split("->")[0].split(","), equation.split("->")[1]
    size = dict(zip(a, shapes[0]))
    size.update(zip(b, shapes[1]))
    summed_a = tuple(i for i, c in enumerate(a) if c not in b and c not in out)   # summed before the product
    summed_b = tuple(i for i, c in enumerate(b) if c not in a and c not in out)
    a = "".join(c for i, c in enumerate(a) if i not in summed_a)
    b = "".join(c for i, c in enumerate(b) if i not in summed_b)
    batch = [c for c in a if c in b and c in out]
    inner = [c for c in a if c in b and c not in out]
    left = [c for c in a if c not in b]
    right = [c for c in b if c not in a]

    def count(labels):
        n = 1
        for c in labels:
            n *= size[c]
        return n

    perm_a = [a.index(c) for c in batch + left + inner]
    perm_b = [b.index(c) for c in batch + inner + right]
    shape_a = (count(batch), count(left), count(inner))
    shape_b = (count(batch), count(inner), count(right))
    mid = batch + left + right
    mid_shape = tuple(size[c] for c in mid)
    perm_out = [mid.index(c) for c in out]

    def run(x, y):
        if summed_a:
            x = x.sum(axis=summed_a)
        if summed_b:
            y = y.sum(axis=summed_b)
        z = np.matmul(x.transpose(perm_a).reshape(shape_a), y.transpose(perm_b).reshape(shape_b))
        return z.reshape(mid_shape).transpose(perm_out)
    return run


def _einsum_shape(*xs, equation):
    """TensorFlow's shape function: labels' sizes merged, "..." dims broadcast (None stays unknown)."""
    inputs, out = equation.split("->")
    sizes, broadcast = {}, ()
    for k, (s, x) in enumerate(zip(inputs.split(","), xs, strict=True)):
        shape, named = tuple(x.shape), s.replace("...", "")
        pos, n_ell = s.find("..."), len(x.shape) - len(named)
        if n_ell < 0 or (pos < 0 and n_ell):
            raise ValueError(f"Expected input {k} to have rank {len(named)} but got: {len(shape)}")
        if pos >= 0:
            broadcast = broadcast_dims("Einsum", xs, shape[pos:pos + n_ell], broadcast)
            shape = shape[:pos] + shape[pos + n_ell:]
        for c, d in zip(named, shape, strict=True):
            sizes[c] = merge_dims("Einsum", xs, sizes.get(c), d)
    before, ellipsis, after = out.partition("...")
    dims = [sizes[c] for c in before] + (list(broadcast) if ellipsis else []) + [sizes[c] for c in after]
    return [meta(dims, xs[0].dtype)]


@op("Einsum", shape=_einsum_shape)
@computes_in_float32
def _einsum(*xs, equation):
    return np.asarray(_plan(equation, tuple(x.shape for x in xs))(*xs))


@_einsum.def_batch
def _einsum_batch(xs, batched, equation):
    b = next((c for c in _LETTERS if c not in equation), None)   # a new label for the batch axis:
    if b is None:                                                # a batch dim of the product, or rows
        raise batching.NotBatchable                              # of the one batched operand
    inputs, out = equation.split("->")
    subs = [b + s if k else s for s, k in zip(inputs.split(","), batched, strict=True)]
    return _einsum_op(",".join(subs) + "->" + b + out, xs), True


@_einsum.def_grad(reads_inputs=True)      # each operand's gradient reads the others
def _einsum_grad(op, dy):
    equation = op.get_attr("equation")
    inputs, out = equation.split("->")
    subs = inputs.split(",")
    dy = dy if type(dy) is Tensor else convert_to_tensor(dy)
    skip = op.skip_input_indices
    grads = []
    for k, x in enumerate(op.inputs):
        if k in skip:
            grads.append(None)
            continue
        others = [basic_ops.conj(t) for j, t in enumerate(op.inputs) if j != k]   # d/dx_k: dy with the others
        other_subs = [s for j, s in enumerate(subs) if j != k]
        if "." in equation or None in x._value.shape:
            grads.append(_operand_grad_at_run_time(dy, out, others, other_subs, subs[k], x))
        else:
            grads.append(_operand_grad(dy, out, others, other_subs, subs[k], x._value.shape))
    return grads


def _operand_grad(dy, out, others, other_subs, own, shape):
    """The gradient of one operand with subscripts `own` and `shape` (Note [canonical einsum])."""
    size = dict(zip(own, shape, strict=True))
    reachable = set(out).union(*other_subs)
    unique = "".join(dict.fromkeys(own))                 # labels in first-occurrence order
    kept = "".join(c for c in unique if c in reachable)
    g = _einsum_op(",".join([out] + other_subs) + "->" + kept, [dy] + others)
    if kept != unique:                                   # labels only this operand summed over
        g = primitives.broadcast_to(primitives.reshape(g, tuple(size[c] if c in kept else 1 for c in unique)),
                                   tuple(size[c] for c in unique))
    if unique != own:                                    # repeated labels: place g on the diagonal
        firsts = [own.index(c) == p for p, c in enumerate(own)]
        g = primitives.reshape(g, tuple(d if first else 1 for d, first in zip(shape, firsts, strict=True)))
        g = primitives.broadcast_to(g, shape) * Tensor(_diagonal_mask(own, shape).astype(g._value.dtype))
    return g


def _operand_grad_at_run_time(dy, out, others, other_subs, own, x):
    """Note [einsum in graphs]: the gradient of operand x (subscripts `own`) when sizes or
    broadcasting are known only when the graph runs.

    One einsum gives it with the broadcast dims first: repeated labels of `own`
    in its output put it on the diagonal, and labels only x sums over take
    their sizes from a ones tensor shaped like x.  Broadcast dims are then
    summed down to x's.
    """
    labels = own.replace("...", "")
    broadcasts = "..." in out or "..." in own or any("..." in s for s in other_subs)
    target = "..." + labels if broadcasts else own
    like, perm = x, None
    if "..." in own and not own.startswith("..."):      # x with its broadcast dims first
        pos, count = own.index("..."), x._value.ndim - len(labels)
        perm = tuple(range(pos, pos + count)) + tuple(range(pos)) + tuple(range(pos + count, x._value.ndim))
        like = primitives._transpose_op(x, perm)
    subs, operands = [out] + other_subs, [dy] + others
    if any(c not in "".join(subs) for c in labels):
        subs.append(target)
        operands.append(math_ops.ones_like(like))
    g = _einsum_op(",".join(subs) + "->" + target, operands)
    if broadcasts:
        g = sum_like(g, like)
    return g if perm is None else primitives._transpose_op(g, tuple(np.argsort(perm).tolist()))


def _diagonal_mask(subs, shape):
    """1 where the indices of each repeated label agree, else 0."""
    mask = np.ones(shape, bool)
    for c in set(subs):
        axes = [p for p, s in enumerate(subs) if s == c]
        for a in axes[1:]:
            view = [1] * len(shape)
            view[axes[0]] = shape[axes[0]]
            first = np.arange(shape[axes[0]]).reshape(view)
            view = [1] * len(shape)
            view[a] = shape[a]
            mask &= first == np.arange(shape[a]).reshape(view)
    return mask


def _einsum_op(equation, xs):
    return execute(_einsum, xs, {"equation": equation})


@tf_export("einsum", "linalg.einsum")
def einsum(equation, *inputs, **kwargs):
    """Tensor contraction in Einstein notation, e.g. "ij,jk->ik" (matmul), "ii->i" (diagonal), "ii" (trace).

    Labels are letters; "..." stands for broadcast dimensions; without "->"
    the output holds the labels used once, sorted (after "..." when exactly
    one operand has it). Differentiable in every operand.

    Raises:
      ValueError: a malformed equation or the wrong number of operands (and,
        while building a graph, ranks or sizes that do not fit it).
      InvalidArgumentError: ranks or dimensions that do not fit the equation.

    >>> import tapeflow as tf
    >>> tf.einsum("ij,j->i", tf.ones([2, 3]), tf.constant([1.0, 2.0, 3.0])).numpy()
    array([6., 6.], dtype=float32)
    """
    kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for einsum: {', '.join(kwargs)}")
    xs = convert_inputs(inputs)
    for x in xs:
        known_rank(x, "Einsum")
    subs, out = _parse(equation, len(xs))
    try:
        canonical = _canonical(subs, out, tuple(tuple(x._value.shape) for x in xs))
    except ValueError as e:
        if state.graphs:          # found while building a graph: TensorFlow's shape functions raise ValueError
            raise
        raise InvalidArgumentError(None, "Einsum", f"{e} [Op:Einsum]") from None
    return _einsum_op(canonical, xs)


@functools.lru_cache(maxsize=256)
def _parse(equation, count):
    """The operands' subscripts and the explicit output of `equation` for `count` operands.

    Raises:
      ValueError: a malformed equation or the wrong number of operands.
    """
    eq = equation.replace(" ", "")
    match = _FORMAT.match(eq)
    if not match or any(s.replace("...", "").count(".") for s in re.split(",|->", eq)):
        raise ValueError(f"Subscripts have incorrect format: {equation}")
    subs = match.group(1).split(",")
    if len(subs) != count:
        raise ValueError(f'Got {count} inputs for equation "{equation}", expecting {len(subs)}')
    if any(s.count("...") > 1 for s in subs):
        raise ValueError(f"Subscripts have incorrect format: {equation}")
    labels = "".join(s.replace("...", "") for s in subs)
    if match.group(2) is None:
        with_ellipsis = sum("..." in s for s in subs)
        out = ("..." if with_ellipsis == 1 else "") + "".join(c for c in sorted(set(labels)) if labels.count(c) == 1)
    else:
        out = match.group(2)[2:]
        for c in out.replace("...", ""):
            if c not in labels:
                raise ValueError(f"Output subscripts contain the label {c} not present in the input subscripts.")
            if out.count(c) > 1:
                raise ValueError(f"Output subscripts contain a label appearing more than once: {equation}")
    return tuple(subs), out


@functools.lru_cache(maxsize=256)
def _canonical(subs, out, shapes, strict=True):
    """The letters-only equation for operands of `shapes` (Note [canonical einsum]).

    In graphs, shapes may hold None: sizes are then checked where known, and
    if an unknown size takes part in "..." broadcasting, the equation keeps
    its ellipses (Note [einsum in graphs]).  `strict=False` (the kernel's
    gradient equations) lets the broadcast dims be summed when the output has
    no "...".

    Raises:
      ValueError: ranks or sizes that do not fit the equation.
    """
    labels = "".join(s.replace("...", "") for s in subs)
    sizes, ell_shapes = {}, []
    for k, (s, shape) in enumerate(zip(subs, shapes, strict=True)):
        named = len(s.replace("...", ""))
        if len(shape) < named or ("..." not in s and len(shape) != named):
            raise ValueError(f"Expected input {k} to have rank {named} but got: {len(shape)}")
        pos = s.find("...")
        n_ell = len(shape) - named
        ell_shapes.append(tuple(shape[pos:pos + n_ell]) if pos >= 0 else ())
        named_dims = shape[:pos] + shape[pos + n_ell:] if pos >= 0 else shape
        for axis, (c, d) in enumerate(zip(s.replace("...", ""), named_dims, strict=True)):
            known = sizes.get(c)
            if known is None:
                sizes[c] = d
            elif d is not None and d != known:
                raise ValueError(f"Expected dimension {known} at axis {axis} of the input shaped {list(shape)} "
                                 f"but got dimension {d}")
    rank = max(map(len, ell_shapes))
    if strict and rank and "..." not in out:
        raise ValueError(f"Output contains {rank} broadcasting dimension(s) but no ellipsis (...) was found in "
                         "the output subscripts.")
    broadcast = _broadcast_shape(ell_shapes, rank)
    if None in broadcast:
        return ",".join(subs) + "->" + out          # broadcast when the graph runs
    spare = iter(c for c in _LETTERS if c not in labels)
    ell = "".join(next(spare) for _ in broadcast)
    canonical = []
    for s, es in zip(subs, ell_shapes, strict=True):
        own = ell[len(ell) - len(es):] if es else ""
        own = "".join(next(spare) if d == 1 and broadcast[len(broadcast) - len(es) + i] != 1 else c
                      for i, (c, d) in enumerate(zip(own, es, strict=True)))
        canonical.append(s.replace("...", own))
    return ",".join(canonical) + "->" + out.replace("...", ell)


def _broadcast_shape(shapes, rank):
    """The broadcast of the operands' "..." dims (None where an unknown size takes part).

    Raises:
      ValueError: known sizes that do not broadcast.
    """
    out = []
    for i in range(-rank, 0):
        dims = [s[i] for s in shapes if len(s) >= -i]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError("Operands' ellipsis dimensions do not broadcast: "
                             + " vs. ".join(str(list(s)) for s in shapes))
        out.append(None if None in dims else known.pop() if known else 1)
    return tuple(out)


@tf_export("tensordot", "linalg.tensordot")
def tensordot(a, b, axes, name=None):
    """Sums products over `axes`: an int N pairs a's last N axes with b's first N; a pair of
    lists pairs a's axes[0] with b's axes[1].

    Raises:
      ValueError: malformed `axes`, or more axes than dimensions.
      InvalidArgumentError: paired dimensions of different sizes.

    >>> import tapeflow as tf
    >>> tf.tensordot(tf.ones([2, 3]), tf.ones([3, 4]), 1).shape
    TensorShape([2, 4])
    """
    x, y = convert_inputs([a, b])
    ra, rb = known_rank(x, "Einsum"), known_rank(y, "Einsum")
    a_axes, b_axes = _tensordot_axes(axes, x, ra, rb)
    letters = iter(_LETTERS)
    sa = [next(letters) for _ in range(ra)]
    sb = [next(letters) for _ in range(rb)]
    for i, j in zip(a_axes, b_axes, strict=True):
        sb[j] = sa[i]
        da, db = x._value.shape[i], y._value.shape[j]
        if da != db and da is not None and db is not None:
            message = (f"Matrix size-incompatible: dimension {i} of a {list(x._value.shape)} and dimension {j} "
                       f"of b {list(y._value.shape)} must agree")
            if state.graphs:
                raise ValueError(message)
            raise InvalidArgumentError(None, "Einsum", message + " [Op:Einsum]")
    out = [c for i, c in enumerate(sa) if i not in a_axes] + [c for j, c in enumerate(sb) if j not in b_axes]
    return _einsum_op("".join(sa) + "," + "".join(sb) + "->" + "".join(out), [x, y])


def _tensordot_axes(axes, x, ra, rb):
    """`axes` as two lists of non-negative axes of a and b."""
    if isinstance(axes, Tensor):
        axes = np.asarray(axes._value).tolist()
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {n}.")
        if n > ra or n > rb:
            raise ValueError(f"`axes` must not be larger than the number of dimensions of tensor {x}.  "
                             f"Received {n}, vs tensor dimensions {min(ra, rb)}.")
        return list(range(ra - n, ra)), list(range(n))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
    pair = [[int(v)] if isinstance(v, (int, np.integer)) else [int(w) for w in v] for v in axes]
    if len(pair[0]) != len(pair[1]):
        raise ValueError(f"Different number of contraction axes `a` and `b`, {len(pair[0])} != {len(pair[1])}.")
    for ax, r in zip(pair, (ra, rb), strict=True):
        for v in ax:
            if not -r <= v < r:
                raise ValueError(f"Contraction axis {v} is out of range for a tensor of rank {r}.")
    return [v % ra for v in pair[0]], [v % rb for v in pair[1]]
