"""Random programs built from the op spec rows (the generating half of the differential fuzzer).

A *program* is a short list of nodes (1 to 6).  A row node applies one spec row's
`fn(tf, *inputs, *extra)` (tests/op_harness.py, `OpSpec`) to leaves sampled with the
row's own samplers and/or to earlier nodes' outputs; a combine node adds, subtracts
or multiplies two earlier outputs with broadcasting.  Programs are plain data: they
run unchanged with tapeflow and with TensorFlow (`forward`), print as readable code
(`Program.__repr__`) and can be edited by the shrinker (fuzz_checks.shrink).

Note [staying in the domain]
An earlier output y reaches a row's input only through an adapter that keeps the
input inside the domain of the row's sampler, so every row still sees inputs its
spec was written for:

* raw:     y itself, only for `any_real` inputs and only when y is small (|y| <= 3,
           measured when the node was drawn); broadcast to the input's shape only for
           elementwise rows, and for other rows only when y has no repeated values (a
           constant or tiled y would put reductions at their kinks: std at 0, ties of max);
* squash:  c + h * tanh(y + leaf), leaf a fresh `any_real` sample: every real is mapped into
           the sampler's interval, and the leaf keeps the input's values distinct;
* perturb: leaf + eps * tanh(y), a fresh sample moved by less than the sampler's
           margin (distinct values stay distinct, matrices stay well conditioned);
* scale:   leaf * (1 + eps * tanh(y)), for samplers with exact zeros or signs to keep.

y is first made real (`tf.math.real`) for a real input, and summed to a scalar when
its shape does not broadcast to the input's.  Outputs holding NaN or infinities (the
mean of nothing, say) are never fed on.  Inputs a row does not differentiate
(outside its `wrt`: indices, labels...) always get fresh samples.

Shapes: a row's input shapes are one of its spec cases, except for elementwise rows
(one input, or inputs that broadcast, each scalar in some case): they take any shape
of `SHAPES` (size-0 and size-1 dims included), so they chain onto any output.
Generation runs each node eagerly with tapeflow (float dtype of the program) to learn
its outputs' shapes and ranges; a node that raises ends the program.
"""

import dataclasses
import importlib
import os
import sys
from typing import Any, Optional

import numpy as np

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (_TESTS, os.path.join(_TESTS, "ops")):
    if _path not in sys.path:
        sys.path.append(_path)

import tapeflow  # noqa: E402
from op_harness import any_real, weighted_total  # noqa: E402,F401  (weighted_total: used as fp.weighted_total)

# The spec tables (tests/ops/test_<short>_ops.py), imported under the names pytest gives them.
ROW_MODULES = ("math", "unary", "nn", "reduction", "array", "slicing", "scatter", "linalg", "conv", "einsum",
               "graph", "unique", "bitwise")

# Shapes of the inputs of elementwise rows and of fresh leaves.
SHAPES = [(), (1,), (0,), (3,), (2, 3), (1, 3), (2, 1), (0, 3), (3, 0), (1, 1), (2, 1, 3), (2, 0, 1)]

MAX_NODES = 6


# -- rows -------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Row:
    """One spec row as the fuzzer sees it: `key` is "<module>.<row name>"."""
    key: str
    spec: Any

    def fn_for(self, module):
        return self.spec.tf_fn if self.spec.tf_fn is not None and _is_tf(module) else self.spec.fn

    def samplers(self, n):
        s = self.spec.sampler
        return s if isinstance(s, tuple) else (s,) * n

    def wrt(self, n):
        return list(range(n)) if self.spec.wrt is None else list(self.spec.wrt)

    def numeric_wrt(self, n):
        return self.wrt(n) if self.spec.numeric_wrt is None else list(self.spec.numeric_wrt)

    def __repr__(self):
        return self.key


def _is_tf(module):
    return module.__name__.split(".")[0] == "tensorflow"


def _load_rows():
    rows = []
    for short in ROW_MODULES:
        module = importlib.import_module(f"test_{short}_ops")
        for spec in module.SPECS:
            if short == "bitwise" and not spec.name.endswith(("int32", "uint8")):
                continue        # 48 integer rows without gradients: two dtypes stand for all
            rows.append(Row(f"{short}.{spec.name}", spec))
    return rows


ROWS = _load_rows()
ROWS_BY_KEY = {r.key: r for r in ROWS}


def rows_for(dtype):
    """The rows compared with TensorFlow in `dtype` (a row's `dtypes`)."""
    return [r for r in ROWS if dtype in r.spec.dtypes]


def _case_outputs(row, case):
    """Output shapes of `row` on spec case `case` (float64, tapeflow), or None if it raises."""
    rng = np.random.default_rng(0)
    shapes = row.spec.shapes[case]
    arrays = [s(rng, shape, np.float64) for s, shape in zip(row.samplers(len(shapes)), shapes, strict=True)]
    extra = list(row.spec.extra(rng, shapes)) if row.spec.extra else []
    try:
        out = row.spec.fn(tapeflow, *[tapeflow.constant(a) for a in arrays], *extra)
    except Exception:  # noqa: BLE001 - such a row is simply not treated as elementwise
        return None
    return [tuple(tapeflow.convert_to_tensor(o).shape.as_list()) for o in _as_list(out)]


_ELEMENTWISE = {}


def elementwise(row):
    """Whether `row` is elementwise: one output of the broadcast shape of its inputs in every
    case, no extra inputs, every input a scalar in some case and, with several inputs, inputs
    of different shapes in some case (so any shapes that broadcast are in its domain)."""
    if row.key not in _ELEMENTWISE:
        cases = row.spec.shapes
        n = len(cases[0])
        ok = (row.spec.extra is None and all(len(c) == n for c in cases)
              and all(any(c[i] == () for c in cases) for i in range(n))
              and any(len(c[i]) >= 1 for c in cases for i in range(n))
              and (n == 1 or any(len(set(c)) > 1 for c in cases)))     # add_n: equal shapes only
        if ok:
            for k, case in enumerate(cases):
                outs = _case_outputs(row, k)
                if outs is None or len(outs) != 1 or outs[0] != tuple(np.broadcast_shapes(*case)):
                    ok = False
                    break
        _ELEMENTWISE[row.key] = ok
    return _ELEMENTWISE[row.key]


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


# -- domains of the samplers (Note [staying in the domain]) -------------------------------------

@dataclasses.dataclass(frozen=True)
class Domain:
    raw: bool = False                       # any real value is in the domain
    squash: Optional[tuple] = None          # (c, h): c + h * tanh(y) lies in the domain
    eps: Optional[float] = None             # leaf + eps * tanh(y) stays in the domain
    scale: Optional[float] = None           # leaf * (1 + scale * tanh(y)) stays in the domain


DOMAINS = {
    "any_real": Domain(raw=True, squash=(0.0, 2.0), eps=0.5),
    "positive": Domain(squash=(1.25, 0.75), eps=0.4),
    "unit": Domain(squash=(0.0, 0.9), eps=0.05),
    "away_from_zero": Domain(squash=(1.25, 0.75), eps=0.4),
    "above_one": Domain(squash=(2.1, 0.9), eps=0.15),
    "probability": Domain(squash=(0.5, 0.4), eps=0.05),
    "unit_interval": Domain(squash=(0.5, 0.45), eps=0.04),
    "distinct": Domain(eps=0.01),                   # values 0.37 apart: no ties
    "with_zeros": Domain(scale=0.2),
    "one_zero": Domain(scale=0.2),
    "not_half_integers": Domain(eps=0.1),           # fractional parts .2/.35/.65/.8
    "well_conditioned": Domain(eps=0.1),            # diagonal dominance kept
    "spread": Domain(eps=0.05),
    "uniform_-1.5_-0.2": Domain(eps=0.1),
    "uniform_0.2_1.5": Domain(eps=0.1),
    "uniform_0.1_0.6": Domain(eps=0.05),
    "uniform_1.0_2.5": Domain(eps=0.2),
}
# Fresh samples only: `distribution` (labels must sum to 1: the cross-entropies' gradients assume it, in
# TensorFlow too), the rows' own lambdas (one is a distribution along axis 0), `sample` (NaN and
# infinities), integer samplers and any sampler not listed above.


def sampler_name(sampler):
    return getattr(sampler, "__name__", repr(sampler))


def domain_of(sampler):
    """(Domain or None if only fresh samples are safe, whether the sampler is complex)."""
    name = sampler_name(sampler)
    is_complex = name.startswith("complex_")
    return DOMAINS.get(name[len("complex_"):] if is_complex else name), is_complex


# -- programs ------------------------------------------------------------------------------------

@dataclasses.dataclass
class Leaf:
    """A sampled input: `role` is "watched" (a constant the tape watches), "variable" (a
    tf.Variable) or "fixed" (a constant nobody differentiates: indices, labels...)."""
    sampler: Any
    shape: tuple
    seed: int
    role: str
    dtype: str                     # the program's float dtype; complex samplers give complex

    def array(self):
        a = self.sampler(np.random.default_rng(self.seed), self.shape, np.float64)
        if a.dtype.kind == "c":
            return a.astype(np.complex64 if self.dtype == "float32" else np.complex128)
        return a.astype(self.dtype)


@dataclasses.dataclass
class Feed:
    """How one input of a row node is made: mode "leaf" (leaves[leaf]), or an adapter of
    output `ref` = (node, k) (Note [staying in the domain]); `shape`/`sampler` are the slot's."""
    mode: str
    shape: tuple
    sampler: Any
    leaf: Optional[int] = None
    ref: Optional[tuple] = None
    param: Any = None              # squash (c, h), perturb eps or scale eps
    reduce: bool = False           # y is summed to a scalar first (its shape does not broadcast to the slot's)


@dataclasses.dataclass
class Node:
    kind: str                      # "row" or "combine"
    row: Optional[Row] = None
    feeds: list = dataclasses.field(default_factory=list)
    extra: list = dataclasses.field(default_factory=list)
    op: Optional[str] = None       # combine: "add", "subtract" or "multiply"
    refs: tuple = ()               # combine: two outputs (node, k)
    reduce_second: bool = False    # combine: the second operand is summed first (shapes do not broadcast)


@dataclasses.dataclass
class Program:
    dtype: str
    seed: int
    leaves: list
    nodes: list
    loss: list                     # outputs (node, k) summed with fixed weights into the scalar loss
    note: str = ""                 # why generation stopped early, if it did

    def watched(self):
        return [i for i, leaf in enumerate(self.leaves) if leaf.role != "fixed"]

    def rows(self):
        return sorted({n.row.key for n in self.nodes if n.kind == "row"})

    def __repr__(self):
        return "\n" + self.source()

    def _repr_pretty_(self, printer, cycle):      # how hypothesis prints a falsifying example
        printer.text(repr(self))

    def source(self):
        """The program as readable pseudo-code (leaf(sampler, shape, seed) draws with NumPy)."""
        lines = [f"# program: dtype={self.dtype} seed={self.seed}{'  (' + self.note + ')' if self.note else ''}"]
        for i, leaf in enumerate(self.leaves):
            what = {"watched": "tape.watch", "variable": "tf.Variable", "fixed": "constant"}[leaf.role]
            lines.append(f"x{i} = leaf({sampler_name(leaf.sampler)}, {leaf.shape}, seed={leaf.seed})  # {what}")
        for n, node in enumerate(self.nodes):
            if node.kind == "row":
                args = [_feed_source(f) for f in node.feeds] + [_short(e) for e in node.extra]
                lines.append(f"v{n} = {node.row.key}({', '.join(args)})")
            else:
                a, b = (f"v{r[0]}[{r[1]}]" for r in node.refs)
                b = f"reduce_sum({b})" if node.reduce_second else b
                lines.append(f"v{n} = {node.op}({a}, {b})")
        lines.append("loss = weighted_sum(" + ", ".join(f"v{n}[{k}]" for n, k in self.loss) + ")")
        return "\n".join(lines)


def _short(value):
    a = np.asarray(value)
    return repr(a.tolist()) if a.size <= 8 else f"<{a.dtype}{list(a.shape)}>"


def _feed_source(feed):
    if feed.mode == "leaf":
        return f"x{feed.leaf}"
    y = f"v{feed.ref[0]}[{feed.ref[1]}]"
    y = f"reduce_sum({y})" if feed.reduce else y
    if feed.mode == "raw":
        return f"broadcast_to({y}, {feed.shape})"
    if feed.mode == "squash":
        return f"({feed.param[0]} + {feed.param[1]} * tanh({y} + x{feed.leaf}))"
    if feed.mode == "perturb":
        return f"(x{feed.leaf} + {feed.param} * tanh({y}))"
    return f"(x{feed.leaf} * (1 + {feed.param} * tanh({y})))"


# -- running a program -------------------------------------------------------------------------

def make_leaves(module, program):
    out = []
    for leaf in program.leaves:
        a = leaf.array()
        out.append(module.Variable(a) if leaf.role == "variable" else module.constant(a))
    return out


def _fit(module, y, feed, complex_slot):
    """y made real (for a real slot) and summed to a scalar if its shape does not broadcast to the slot's
    (decided when the program was drawn: static shapes may be unknown in tf.function)."""
    y = module.convert_to_tensor(y)
    if y.dtype.is_complex and not complex_slot:
        y = module.math.real(y)
    return module.reduce_sum(y) if feed.reduce else y


def _broadcasts_to(src, dst):
    try:
        return tuple(np.broadcast_shapes(src, dst)) == tuple(dst)
    except ValueError:
        return False


def feed_value(module, feed, leaves, values):
    if feed.mode == "leaf":
        return leaves[feed.leaf]
    _, complex_slot = domain_of(feed.sampler)
    y = values[feed.ref[0]][feed.ref[1]]
    if feed.mode == "raw":
        return module.broadcast_to(_fit(module, y, feed, complex_slot), feed.shape)
    y = _fit(module, y, feed, False)                # tanh of the real part
    if feed.mode == "squash":
        c, h = feed.param
        s = c + h * module.tanh(y + leaves[feed.leaf])
        if complex_slot:
            s = module.cast(s, module.complex64 if s.dtype == module.float32 else module.complex128)
        return s
    leaf = leaves[feed.leaf]
    d = feed.param * module.tanh(y)
    if leaf.dtype.is_complex:
        d = module.cast(d, leaf.dtype)
    return leaf + d if feed.mode == "perturb" else leaf * (1 + d)


def apply_node(module, node, leaves, values):
    """The outputs (a list) of one node, given the leaves and earlier nodes' outputs."""
    if node.kind == "row":
        args = [feed_value(module, f, leaves, values) for f in node.feeds]
        return _as_list(node.row.fn_for(module)(module, *args, *node.extra))
    a, b = (module.convert_to_tensor(values[n][k]) for n, k in node.refs)
    if node.reduce_second:
        b = module.reduce_sum(b)
    return [getattr(module, node.op)(a, b)]


def forward(module, program, leaves):
    values = []
    for node in program.nodes:
        values.append(apply_node(module, node, leaves, values))
    return values


def loss_weights(shape, k, dtype):
    return np.random.default_rng(1000 + k).uniform(0.5, 1.5, shape).astype(dtype)


def is_float(t):
    t = t if hasattr(t, "dtype") else np.asarray(t)
    name = t.dtype.name if hasattr(t.dtype, "name") else str(t.dtype)
    return name.startswith(("float", "complex", "bfloat"))


# -- drawing programs --------------------------------------------------------------------------

class RandomDraws:
    """Choices from a NumPy generator (the long run: a program per seed)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def integer(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, items):
        return items[int(self.rng.integers(len(items)))]

    def chance(self, p):
        return bool(self.rng.uniform() < p)


class HypothesisDraws:
    """Choices from hypothesis's `draw` (they shrink towards the first item and towards False)."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw, self.st = draw, st

    def integer(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def choice(self, items):
        return self.draw(self.st.sampled_from(items))

    def chance(self, p):
        return self.draw(self.st.integers(0, 99)) >= 100 - round(100 * p)


_COMPLEX = {"float32": "complex64", "float64": "complex128"}


@dataclasses.dataclass
class _Output:
    ref: tuple
    shape: tuple
    dtype: str
    finite: bool                   # no NaN or infinity: may be fed on
    small: bool                    # |y| <= 3: usable raw
    distinct: bool                 # no repeated values: usable raw by rows that are not elementwise


class _Builder:
    def __init__(self, draws, dtype, seed):
        self.draws, self.program = draws, Program(dtype, seed, [], [], [])
        self.leaves_tf, self.values_tf, self.outputs = [], [], []

    def leaf(self, sampler, shape, role):
        p = self.program
        if role == "watched" and self.draws.chance(0.2):
            role = "variable"
        leaf = Leaf(sampler, tuple(shape), p.seed * 1000 + len(p.leaves), role, p.dtype)
        p.leaves.append(leaf)
        self.leaves_tf.append(make_leaves(tapeflow, Program(p.dtype, p.seed, [leaf], [], []))[0])
        return len(p.leaves) - 1

    def sources(self):
        return [o for o in self.outputs if o.finite]

    def feed(self, sampler, shape, differentiable, source=None, elementwise_row=False):
        """A Feed for a slot; `source` (an _Output) is used when given, else maybe drawn."""
        domain, complex_slot = domain_of(sampler)
        usable = [o for o in self.sources() if o.dtype == self.program.dtype
                  or (complex_slot and o.dtype == _COMPLEX[self.program.dtype])]
        if differentiable and domain is not None and source is None and usable and self.draws.chance(0.6):
            source = self.draws.choice(usable[::-1])          # the latest outputs first
        if source is None or domain is None or not differentiable:
            role = "watched" if differentiable else "fixed"
            return Feed("leaf", shape, sampler, leaf=self.leaf(sampler, shape, role))
        modes = []
        if domain.raw and source.small and source.dtype.startswith("complex") == complex_slot and (
                (elementwise_row and _broadcasts_to(source.shape, shape))
                or (source.shape == shape and source.distinct)):
            modes.append("raw")
        modes += [m for m, ok in (("squash", domain.squash), ("perturb", domain.eps), ("scale", domain.scale)) if ok]
        mode = self.draws.choice(modes)
        param = {"raw": None, "squash": domain.squash, "perturb": domain.eps, "scale": domain.scale}[mode]
        leaf = {"raw": None, "squash": lambda: self.leaf(any_real, shape, "watched"),
                "perturb": lambda: self.leaf(sampler, shape, "watched"),
                "scale": lambda: self.leaf(sampler, shape, "watched")}[mode]
        leaf = leaf() if leaf else None
        return Feed(mode, shape, sampler, leaf=leaf, ref=source.ref, param=param,
                    reduce=not _broadcasts_to(source.shape, shape))

    def add_row(self, row):
        d = self.draws
        n_inputs = len(row.spec.shapes[0])
        samplers, wrt = row.samplers(n_inputs), row.wrt(n_inputs)
        source = None
        is_elementwise = elementwise(row)
        if is_elementwise:
            if self.sources() and d.chance(0.6):
                source = d.choice(self.sources()[::-1])
                out_shape = source.shape
            else:
                out_shape = d.choice(SHAPES)
            shapes = [out_shape if i == 0 else d.choice(_suffixes(out_shape)) for i in range(n_inputs)]
            if n_inputs > 1 and d.chance(0.3):
                shapes[0] = d.choice(_suffixes(out_shape))
        else:
            shapes = list(row.spec.shapes[d.integer(0, len(row.spec.shapes) - 1)])
        feeds = []
        for i, (sampler, shape) in enumerate(zip(samplers, shapes, strict=True)):
            use = source if i == 0 and source is not None and domain_of(sampler)[0] is not None else None
            if use is not None and use.dtype.startswith("complex") and not domain_of(sampler)[1]:
                use = None if not d.chance(0.5) else use
            feeds.append(self.feed(sampler, tuple(shape), i in wrt, use, is_elementwise))
        extra_seed = self.program.seed * 1000 + 500 + len(self.program.nodes)
        extra = list(row.spec.extra(np.random.default_rng(extra_seed), tuple(shapes))) if row.spec.extra else []
        return self._append(Node("row", row=row, feeds=feeds, extra=extra))

    def add_combine(self):
        d = self.draws
        a = d.choice(self.sources()[::-1])
        same = [o for o in self.sources() if o.dtype == a.dtype]
        b = d.choice(same)
        node = Node("combine", op=d.choice(["add", "multiply", "subtract"]), refs=(a.ref, b.ref))
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            node.reduce_second = True
        return self._append(node)

    def _append(self, node):
        p = self.program
        p.nodes.append(node)
        try:
            outs = apply_node(tapeflow, node, self.leaves_tf, self.values_tf)
            outs = [tapeflow.convert_to_tensor(o) for o in outs]
        except Exception as e:  # noqa: BLE001 - the program ends here; checking it will show the error
            p.note = f"v{len(p.nodes) - 1} raised {type(e).__name__} while drawing"
            return False
        self.values_tf.append(outs)
        n = len(p.nodes) - 1
        for k, o in enumerate(outs):
            if o.dtype.is_floating or o.dtype.is_complex:
                a = o.numpy()
                finite = bool(np.all(np.isfinite(a)))
                small = finite and (a.size == 0 or float(np.abs(a).max()) <= 3.0)
                distinct = np.unique(a).size == a.size
                self.outputs.append(_Output((n, k), tuple(o.shape.as_list()), o.dtype.name, finite, small, distinct))
        return True


def _suffixes(shape):
    """Shapes that broadcast to `shape`: trailing parts of it, with some dims set to 1."""
    out = [tuple(shape[k:]) for k in range(len(shape) + 1)]
    out += [tuple(1 if j == i else s for j, s in enumerate(shape)) for i in range(len(shape))]
    return out


def generate(draws):
    """One random program (see the module docstring)."""
    dtype = draws.choice(["float64", "float32"])
    seed = draws.integer(0, 9999)
    b = _Builder(draws, dtype, seed)
    rows = rows_for(dtype)
    for _ in range(draws.integer(1, MAX_NODES)):
        if len(b.sources()) >= 2 and draws.chance(0.15):
            ok = b.add_combine()
        else:
            ok = b.add_row(draws.choice(rows))
        if not ok:
            break
    p = b.program
    floats = [o.ref for o in b.outputs]
    if floats:
        last = max(r[0] for r in floats)
        p.loss = [r for r in floats if r[0] == last or draws.chance(0.4)]
    return p


def program_from_seed(seed):
    return generate(RandomDraws(seed))


def hypothesis_programs():
    """A hypothesis strategy of programs."""
    from hypothesis import strategies as st

    @st.composite
    def programs(draw):
        return generate(HypothesisDraws(draw))
    return programs()
