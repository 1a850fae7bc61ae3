"""Checking random programs (fuzz_programs.py): tapeflow against TensorFlow and against
float64 central differences, with every outcome classified.

For one program `check_program` runs, with tapeflow and (when installed) TensorFlow:

* eager:    the nodes' values, and the first-order gradients of the scalar loss (a fixed
            weighted sum of some outputs) with respect to every watched leaf and every
            float output of every node, from one GradientTape;
* second:   tape in tape: the gradient of <g, w> with respect to the leaves, g the
            first-order gradients of the leaves (a Hessian-vector product);
* function: the eager stage traced by tf.function (leaves passed as arguments);
* numeric:  (float64 programs, no TensorFlow needed) tapeflow's first-order gradients
            along two random directions against central differences of the loss, and its
            second stage along one direction against central differences of its first-order
            gradients (stage "numeric-second"); leaves where a row's gradient is a convention
            (`numeric_wrt`, known_differences.NOT_SMOOTH) are not moved.

Without TensorFlow, tapeflow's tf.function is compared with its own eager run (dense values:
`densified`), and only tapeflow's Python errors count.  Where TensorFlow would abort the process
(known_differences.tensorflow_crashes) the same is done for that stage.

Each difference is a `Finding`: category "mismatch" (kind: value, none-ness,
indexedslices-vs-dense, dtype, shape, structure, exception-class, tf.function-only,
numeric-gradient), "internal" (tapeflow raised a Python error class of its own code
where TensorFlow raised nothing or something else), "known" (a deliberate difference:
spec flags or known_differences.KNOWN), "open-bug" (known_differences.OPEN_BUGS) or
"harness" (the fuzzer's own code raised: a bug here, not in tapeflow).
Crashes and hangs are seen by the long run (run_long.py), which runs programs in a
child process under a time limit.
"""

import dataclasses
import importlib.util
import os
import time
import traceback
from typing import Any, Optional

import numpy as np

import fuzz_programs as fp
import known_differences
import tapeflow

HAVE_TF = importlib.util.find_spec("tensorflow") is not None
_HERE = os.path.dirname(os.path.abspath(__file__))

# Exception classes that mean a bug in tapeflow's own code when TensorFlow raised no such class.
INTERNAL_ERRORS = ("AttributeError", "KeyError", "TypeError", "IndexError", "NameError", "UnboundLocalError",
                   "AssertionError", "ZeroDivisionError", "RecursionError", "AxisError", "FloatingPointError",
                   "LinAlgError", "StopIteration", "RuntimeError", "OverflowError", "SystemError")


def tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    return tf


# -- results as plain data ---------------------------------------------------------------------

@dataclasses.dataclass
class Raised:
    cls: str
    names: tuple                   # the class and its bases
    message: str
    where: str                     # the innermost frame inside tapeflow, and the innermost frame
    harness: bool = False          # raised by the fuzzer's own code (tests/fuzz), not by the library

    @classmethod
    def of(cls, exc):
        frames = traceback.extract_tb(exc.__traceback__)
        inside = [f for f in frames if f"{os.sep}tapeflow{os.sep}" in f.filename]
        where = ", ".join(dict.fromkeys(f"{os.path.relpath(f.filename)}:{f.lineno}" for f in inside[-1:] + frames[-1:]))
        harness = bool(frames) and os.path.dirname(os.path.abspath(frames[-1].filename)) == _HERE
        return cls(type(exc).__name__, tuple(c.__name__ for c in type(exc).__mro__), str(exc)[:300], where, harness)

    def __repr__(self):
        return f"{self.cls}({self.message[:160]!r}) at {self.where}"


@dataclasses.dataclass
class Dense:
    dtype: str
    array: np.ndarray

    def __repr__(self):
        return f"{self.dtype}{list(self.array.shape)} {np.array2string(self.array, threshold=12, precision=6)}"


@dataclasses.dataclass
class Slices:
    values: Dense
    indices: np.ndarray
    dense_shape: Optional[tuple]

    def densify(self):
        out = np.zeros(self.dense_shape, self.values.array.dtype)
        np.add.at(out, self.indices, self.values.array)
        return out

    def __repr__(self):
        return f"IndexedSlices(values={self.values!r}, indices={self.indices.tolist()}, dense_shape={self.dense_shape})"


def normalize(x):
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [normalize(v) for v in x]
    names = {c.__name__ for c in type(x).__mro__}
    if "IndexedSlices" in names:
        shape = None if x.dense_shape is None else tuple(int(d) for d in np.asarray(x.dense_shape))
        return Slices(normalize(x.values), np.asarray(x.indices), shape)
    return Dense(x.dtype.name, np.asarray(x.numpy()))


def densified(x):
    """`x` (normalized results) with every IndexedSlices made dense: which gradients are sparse
    differs between TensorFlow's eager mode and tf.function (a gather's gradient passed through
    `x + scalar` is dense eagerly, IndexedSlices in a graph), so a tf.function run compared
    with an eager one compares dense values only."""
    if isinstance(x, Slices) and x.dense_shape is not None:
        return Dense(x.values.dtype, x.densify())
    if isinstance(x, list):
        return [densified(v) for v in x]
    if isinstance(x, dict):
        return {k: densified(v) for k, v in x.items()}
    return x


def capture(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the exception class is what is compared
        return Raised.of(e)


# -- the stages ----------------------------------------------------------------------------------

def _float_refs(values):
    return [(n, k) for n, outs in enumerate(values) for k, o in enumerate(outs) if fp.is_float(o)]


def _watch(tape, program, leaves):
    for i in program.watched():
        if program.leaves[i].role == "watched":
            tape.watch(leaves[i])


def _loss_terms(program, values):
    return [values[n][k] if n < len(values) and k < len(values[n]) else None for n, k in program.loss]


def _first_order(module, program, leaves, shapes=None, seen=None):
    """(values, names, gradients, loss) of the eager stage, run under `module`'s current mode
    (`shapes`: the loss terms' shapes, for tf.function; `seen(values)` is called before the
    gradient is taken, so values are kept when the gradient raises)."""
    watched = [leaves[i] for i in program.watched()]
    with module.GradientTape() as tape:
        _watch(tape, program, leaves)
        values = fp.forward(module, program, leaves)
        refs = _float_refs(values)
        loss = fp.weighted_total(module, _loss_terms(program, values), shapes=shapes)
    if seen is not None:
        seen(values, loss)
    names = [f"x{i}" for i in program.watched()] + [f"v{n}[{k}]" for n, k in refs]
    targets = watched + [values[n][k] for n, k in refs]
    grads = tape.gradient(loss, targets) if loss is not None and targets else [None] * len(targets)
    return values, names, list(grads), loss


def run_eager(module, program):
    """{"values": per node outputs, "loss": value, "grads": {name: gradient}}; a stage that raised
    holds a Raised instead (the forward pass raising: "values" and "grads")."""
    leaves = fp.make_leaves(module, program)
    state = {}

    def seen(values, loss):
        state["values"], state["loss"] = normalize(values), normalize(loss)

    def go():
        _, names, grads, _ = _first_order(module, program, leaves, seen=seen)
        return dict(zip(names, normalize(grads), strict=True))

    state["grads"] = capture(go)
    state.setdefault("values", state["grads"])
    return state


def run_second(module, program):
    """Tape in tape: d/dleaves of <first-order gradients of the leaves, fixed weights>."""
    def go():
        leaves = fp.make_leaves(module, program)
        watched = [leaves[i] for i in program.watched()]
        if not watched:
            return []
        with module.GradientTape() as outer:
            _watch(outer, program, leaves)
            with module.GradientTape() as inner:
                _watch(inner, program, leaves)
                values = fp.forward(module, program, leaves)
                loss = fp.weighted_total(module, _loss_terms(program, values))
            if loss is None:
                return [None] * len(watched)
            g = inner.gradient(loss, watched)
            total = fp.weighted_total(module, [None if x is None else module.convert_to_tensor(x) for x in g], 2000)
        if total is None:
            return [None] * len(watched)
        return normalize(outer.gradient(total, watched))
    return capture(go)


def run_function(module, program):
    """The eager stage traced by `module.function`."""
    leaves = fp.make_leaves(module, program)
    names = []
    eager = capture(lambda: _loss_terms(program, fp.forward(module, program, leaves)))
    shapes = None if isinstance(eager, Raised) else [None if t is None else module.convert_to_tensor(t).shape.as_list()
                                                      for t in eager]

    def f(*args):
        values, ns, grads, loss = _first_order(module, program, list(args), shapes)
        names[:] = ns
        return values, grads, loss

    def go():
        values, grads, loss = module.function(f)(*leaves)
        return {"values": normalize(values), "grads": dict(zip(names, normalize(grads), strict=True)),
                "loss": normalize(loss)}
    out = capture(go)
    return {"values": out, "grads": out} if isinstance(out, Raised) else out


def loss_value(program, arrays):
    """The loss (float64) of `program` on leaf arrays `arrays`, by tapeflow's eager forward."""
    leaves = [tapeflow.constant(a) for a in arrays]
    values = fp.forward(tapeflow, program, leaves)
    loss = fp.weighted_total(tapeflow, _loss_terms(program, values))
    return None if loss is None else float(loss.numpy())


# -- comparing -------------------------------------------------------------------------------------

@dataclasses.dataclass
class Finding:
    category: str                  # mismatch, internal, known, open-bug
    kind: str
    stage: str
    path: str
    detail: str

    def signature(self):
        return (self.category, self.kind, self.stage)

    def __str__(self):
        return f"[{self.category}] {self.kind} in {self.stage} at {self.path}: {self.detail}"


@dataclasses.dataclass
class Tolerance:
    rtol: float
    atol: float


def _close(a, b, tol):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "biuSUO" and b.dtype.kind in "biuSUO":
        return np.array_equal(a, b)
    wide = np.complex128 if "c" in (a.dtype.kind, b.dtype.kind) else np.float64
    a, b = a.astype(wide), b.astype(wide)
    finite = np.abs(b[np.isfinite(b)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return bool(np.allclose(a, b, rtol=tol.rtol, atol=tol.atol * scale, equal_nan=True))


def compare(ours, theirs, tol, stage, path, out):
    """Appends to `out` a Finding for each difference between two normalized results."""
    def add(kind, detail, category="mismatch"):
        out.append(Finding(category, kind, stage, path, detail))

    if isinstance(ours, Raised) or isinstance(theirs, Raised):
        for who, r in (("tapeflow", ours), ("TensorFlow", theirs)):
            if isinstance(r, Raised) and r.harness:
                add("harness-error", f"the fuzzer's own code raised under {who}: {r!r}", "harness")
                return
        if isinstance(ours, Raised) and isinstance(theirs, Raised):
            if ours.cls in theirs.names or theirs.cls in ours.names:
                return
            internal = ours.cls in INTERNAL_ERRORS
            add("exception-class", f"tapeflow raised {ours!r}; TensorFlow raised {theirs!r}",
                "internal" if internal else "mismatch")
        elif isinstance(ours, Raised):
            add("exception-class", f"tapeflow raised {ours!r}; TensorFlow gave {_brief(theirs)}",
                "internal" if ours.cls in INTERNAL_ERRORS else "mismatch")
        else:
            add("exception-class", f"TensorFlow raised {theirs!r}; tapeflow gave {_brief(ours)}")
        return
    if (ours is None) != (theirs is None):
        add("none-ness", f"tapeflow {_brief(ours)}, TensorFlow {_brief(theirs)}")
        return
    if ours is None:
        return
    if isinstance(ours, list) or isinstance(theirs, list):
        if not (isinstance(ours, list) and isinstance(theirs, list)) or len(ours) != len(theirs):
            add("structure", f"tapeflow {_brief(ours)}, TensorFlow {_brief(theirs)}")
            return
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            compare(a, b, tol, stage, f"{path}[{i}]", out)
        return
    if isinstance(ours, dict):
        for name in sorted(set(ours) | set(theirs)):
            if name not in ours or name not in theirs:
                add("structure", f"{name} only in {'tapeflow' if name in ours else 'TensorFlow'}")
            else:
                compare(ours[name], theirs[name], tol, stage, f"{path}.{name}", out)
        return
    if type(ours) is not type(theirs):
        add("indexedslices-vs-dense", f"tapeflow {_brief(ours)}, TensorFlow {_brief(theirs)}")
        return
    if isinstance(ours, Slices):
        if ours.dense_shape != theirs.dense_shape:
            add("shape", f"IndexedSlices dense_shape {ours.dense_shape} vs TensorFlow's {theirs.dense_shape}")
            return
        same_parts = (ours.indices.shape == theirs.indices.shape and np.array_equal(ours.indices, theirs.indices)
                      and ours.values.array.shape == theirs.values.array.shape)
        if same_parts:
            compare(ours.values, theirs.values, tol, stage, f"{path}.values", out)
        elif _close(ours.densify(), theirs.densify(), tol):
            add("indexedslices-layout", f"same dense value, different slices: tapeflow {ours!r}, TensorFlow {theirs!r}")
        else:
            add("value", f"tapeflow {ours!r}, TensorFlow {theirs!r}")
        return
    if ours.dtype != theirs.dtype:
        add("dtype", f"tapeflow {ours.dtype}, TensorFlow {theirs.dtype}")
        return
    if ours.array.shape != theirs.array.shape:
        add("shape", f"tapeflow {list(ours.array.shape)}, TensorFlow {list(theirs.array.shape)}")
        return
    if not _close(ours.array, theirs.array, tol):
        add("value", f"tapeflow {ours!r}, TensorFlow {theirs!r}")


def _brief(x):
    if isinstance(x, list):
        return f"a list of {len(x)}"
    if isinstance(x, dict):
        return f"{len(x)} gradients"
    return "None" if x is None else repr(x)


def tolerances(program, stage):
    """Tolerances by stage, dtype and the loosest row of the program."""
    rows = [fp.ROWS_BY_KEY[k].spec for k in program.rows()]
    row_tol = max([max(s.rtol, s.atol) for s in rows] + [0.0])
    if program.dtype == "float32":
        base = {"values": 2e-4, "grads": 2e-3, "second": 1e-2}[stage]
    else:
        base = {"values": 1e-8, "grads": 1e-7, "second": 1e-6}[stage]
    factor = {"values": 1, "grads": 10, "second": 100}[stage]
    t = max(base, row_tol * factor)
    return Tolerance(t, t)


# -- which comparisons the spec flags excuse ------------------------------------------------------

def ancestors(program):
    """For each node: (leaf indices, node indices) it depends on."""
    leaves, nodes = [], []
    for node in program.nodes:
        ls, ns = set(), set()
        refs = [f.ref for f in node.feeds if f.ref is not None] if node.kind == "row" else list(node.refs)
        ls |= {f.leaf for f in node.feeds if f.leaf is not None} if node.kind == "row" else set()
        for n, _ in refs:
            ls |= leaves[n]
            ns |= nodes[n] | {n}
        leaves.append(ls)
        nodes.append(ns)
    return leaves, nodes


def _upstream_names(program, node_indices):
    """Names ("x3", "v1[0]") of the gradients that flow through the nodes `node_indices`."""
    leaves, nodes = ancestors(program)
    ls, ns = set(), set()
    for n in node_indices:
        ls |= leaves[n]
        ns |= nodes[n]
    return {f"x{i}" for i in ls}, ns


def excused(program):
    """({gradient name: reason} not compared with TensorFlow, reason the second stage is not
    compared or None), from the rows' spec flags (see known_differences.spec_reasons)."""
    skip, second = {}, None
    for n, node in enumerate(program.nodes):
        if node.kind != "row":
            continue
        grad_reason, second_reason = known_differences.spec_reasons(node.row)
        if grad_reason:
            leaf_names, node_ids = _upstream_names(program, [n])
            for name in leaf_names:
                skip[name] = grad_reason
            for m in node_ids:
                skip[f"v{m}"] = grad_reason
        second = second or second_reason
    return skip, second


def _drop_excused(findings, skip):
    """Gradient findings excused by `skip` (see `excused`) become "known"."""
    kept, known = [], []
    for f in findings:
        parts = f.path.split(".")
        key = parts[1].split("[")[0] if len(parts) > 1 and parts[0] == "grads" else None
        reason = skip.get(key) if key else None
        if reason and f.category == "mismatch":
            known.append(Finding("known", f.kind, f.stage, f.path, reason))
        else:
            kept.append(f)
    return kept, known


# -- the check -----------------------------------------------------------------------------------

@dataclasses.dataclass
class Report:
    program: Any
    findings: list
    seconds: float = 0.0

    def failures(self):
        return [f for f in self.findings if f.category in ("mismatch", "internal", "harness")]

    def status(self):
        cats = {f.category for f in self.findings}
        for c in ("harness", "internal", "mismatch", "open-bug", "known"):
            if c in cats:
                return c
        return "match"

    def describe(self):
        lines = [self.program.source(), ""]
        lines += [str(f) for f in self.findings]
        return "\n".join(lines)


def check_program(program, with_tf=None, stages=("eager", "second", "function", "numeric")):
    """Runs `program` through the stages and classifies every difference (see the module docstring)."""
    start = time.perf_counter()
    with_tf = HAVE_TF if with_tf is None else with_tf
    findings = []
    skip, second_reason = excused(program)
    tf = tensorflow() if with_tf else None

    ours = run_eager(tapeflow, program)
    eager_findings = []
    if tf is not None:
        theirs = run_eager(tf, program)
        compare(ours["values"], theirs["values"], tolerances(program, "values"), "eager", "values", eager_findings)
        if not isinstance(ours["values"], Raised) and not isinstance(theirs["values"], Raised):
            g = []
            compare(ours["grads"], theirs["grads"], tolerances(program, "grads"), "eager", "grads", g)
            g, known = _drop_excused(g, skip)
            eager_findings += g + known
    else:
        raised = isinstance(ours["values"], Raised)
        eager_findings += _unverified(ours["grads"], "eager", "values" if raised else "grads")
    findings += eager_findings

    if "second" in stages:
        findings += _second_stage(program, tf, second_reason)
    if "function" in stages:
        findings += _function_stage(program, tf, ours, eager_findings, skip)
    if "numeric" in stages and program.dtype == "float64" and not isinstance(ours["grads"], Raised):
        findings += numeric_check(program, ours["grads"])
        if "second" in stages:
            findings += numeric_second_check(program)
    findings = known_differences.classify(program, findings)
    return Report(program, findings, time.perf_counter() - start)


def _unverified(result, stage, path):
    """Without TensorFlow only tapeflow's own Python errors are findings."""
    if isinstance(result, Raised) and (result.cls in INTERNAL_ERRORS or result.harness):
        return [Finding("harness" if result.harness else "internal", "exception-class", stage, path,
                        f"tapeflow raised {result!r}")]
    return []


def _second_stage(program, tf, reason):
    ours = run_second(tapeflow, program)
    if tf is None:
        return _unverified(ours, "second", "second")
    if reason:
        return [Finding("known", "skipped", "second", "second", reason)]
    theirs = run_second(tf, program)
    if isinstance(theirs, Raised) and theirs.cls == "LookupError" and not isinstance(ours, Raised):
        return [Finding("known", "skipped", "second", "second",
                        f"TensorFlow cannot differentiate this program twice: {theirs.message[:120]}")]
    out = []
    compare(ours, theirs, tolerances(program, "second"), "second", "second", out)
    return out


def _function_stage(program, tf, eager_ours, eager_findings, skip):
    ours = run_function(tapeflow, program)
    out = []
    notes = []
    crash = known_differences.tensorflow_crashes(program, "function") if tf is not None else None
    if crash:
        notes.append(Finding("known", "skipped", "function", "tensorflow", crash))
        tf = None
    if tf is None:
        # tapeflow's tf.function against tapeflow's eager run
        if isinstance(ours["values"], Raised) and not isinstance(eager_ours["values"], Raised):
            return notes + [Finding("internal" if ours["values"].cls in INTERNAL_ERRORS else "mismatch",
                                    "tf.function-only", "function", "values", f"tf.function raised {ours['values']!r}")]
        compare(ours["values"], eager_ours["values"], tolerances(program, "values"), "function", "values", out)
        compare(densified(ours["grads"]), densified(eager_ours["grads"]), tolerances(program, "grads"), "function",
                "grads", out)
    else:
        theirs = run_function(tf, program)
        compare(ours["values"], theirs["values"], tolerances(program, "values"), "function", "values", out)
        if not isinstance(ours["values"], Raised) and not isinstance(theirs["values"], Raised):
            g = []
            compare(ours["grads"], theirs["grads"], tolerances(program, "grads"), "function", "grads", g)
            g, known = _drop_excused(g, skip)
            out += g + known
    seen = {(f.kind, f.path) for f in eager_findings}
    result = notes
    for f in out:
        if (f.kind, f.path) in seen or f.category == "known":
            continue
        kind = "tf.function-only" if f.category == "mismatch" else f.kind
        result.append(Finding(f.category, kind, "function", f.path, f"({f.kind}) {f.detail}"))
    return result


# -- central differences ----------------------------------------------------------------------------

def numeric_taint(program):
    """Leaves whose derivative is a convention rather than the derivative (a slot outside its row's
    `numeric_wrt` or of a row in known_differences.NOT_SMOOTH, upstream included) or that hold
    non-finite values."""
    leaves, _ = ancestors(program)
    tainted = set()
    for n, node in enumerate(program.nodes):
        if node.kind != "row":
            continue
        k = len(node.feeds)
        numeric = set() if node.row.key in known_differences.NOT_SMOOTH else set(node.row.numeric_wrt(k))
        for i, feed in enumerate(node.feeds):
            if i in numeric:
                continue
            if feed.leaf is not None:
                tainted.add(feed.leaf)
            if feed.ref is not None:
                tainted |= leaves[feed.ref[0]]
    for i, leaf in enumerate(program.leaves):
        if not np.all(np.isfinite(leaf.array())):
            tainted.add(i)
    return tainted


def numeric_check(program, grads, directions=2, h=1e-6):
    """tapeflow's gradients of the leaves along random directions against central differences."""
    tainted = numeric_taint(program)
    free = [i for i in program.watched() if i not in tainted]
    if not free:
        return []
    arrays = [leaf.array() for leaf in program.leaves]
    try:
        base = loss_value(program, arrays)
    except Exception:  # noqa: BLE001 - the eager stage reports errors
        return []
    if base is None or not np.isfinite(base):
        return []
    grad_tol = max([fp.ROWS_BY_KEY[k].spec.grad_tol for k in program.rows()] + [1e-5])
    rng = np.random.default_rng(program.seed + 77)
    out = []
    for _ in range(directions):
        dirs = {}
        for i in free:
            a = arrays[i]
            d = rng.standard_normal(a.shape)
            if a.dtype.kind == "c":
                d = d + 1j * rng.standard_normal(a.shape)
            dirs[i] = d.astype(a.dtype)
        analytic = 0.0
        for i, d in dirs.items():
            g = grads.get(f"x{i}")
            if g is None:
                continue
            g = g.densify() if isinstance(g, Slices) else g.array
            analytic += float(np.sum(np.real(np.conj(g) * d)))

        def at(t):
            return loss_value(program, [a + t * dirs[i] if i in dirs else a for i, a in enumerate(arrays)])
        try:
            plus, minus = at(h), at(-h)
        except Exception:  # noqa: BLE001
            return out
        if plus is None or minus is None or not (np.isfinite(plus) and np.isfinite(minus)):
            continue
        numeric = (plus - minus) / (2 * h)
        tol = 10 * grad_tol * max(1.0, abs(numeric), abs(analytic)) + 1e-9 * max(1.0, abs(base)) / h
        if abs(numeric - analytic) > tol:
            out.append(Finding("mismatch", "numeric-gradient", "numeric", "grads",
                               f"directional derivative: tape {analytic:.10g}, central differences {numeric:.10g} "
                               f"(leaves {sorted(free)})"))
            break
    return out


def _first_order_total(program, arrays):
    """<first-order gradients of the leaves, fixed weights> (the second stage's scalar), tapeflow, eager."""
    leaves = [tapeflow.constant(a) for a in arrays]
    watched = [leaves[i] for i in program.watched()]
    with tapeflow.GradientTape() as tape:
        tape.watch(watched)
        values = fp.forward(tapeflow, program, leaves)
        loss = fp.weighted_total(tapeflow, _loss_terms(program, values))
    if loss is None:
        return None
    g = tape.gradient(loss, watched)
    total = fp.weighted_total(tapeflow, [None if x is None else tapeflow.convert_to_tensor(x) for x in g], 2000)
    return None if total is None else float(total.numpy())


def numeric_second_check(program, h=1e-5):
    """tapeflow's second stage (a Hessian-vector product) along a random direction against central
    differences of its first-order gradients."""
    if any(not fp.ROWS_BY_KEY[k].spec.second_order or k in known_differences.NOT_SMOOTH for k in program.rows()):
        return []       # a row without a second order there (spec flag second_order=False), or one whose
        #                 gradient is quantized (the float16 cast rounds the gradient flowing through it)
    tainted = numeric_taint(program)
    free = [i for i in program.watched() if i not in tainted]
    if not free:
        return []
    second = run_second(tapeflow, program)
    if isinstance(second, Raised) or second is None:
        return []
    arrays = [leaf.array() for leaf in program.leaves]
    rng = np.random.default_rng(program.seed + 78)
    dirs = {}
    for i in free:
        d = rng.standard_normal(arrays[i].shape)
        dirs[i] = (d + 1j * rng.standard_normal(d.shape) if arrays[i].dtype.kind == "c" else d).astype(arrays[i].dtype)
    analytic = 0.0
    for i, h_i in zip(program.watched(), second, strict=True):
        if i in dirs and h_i is not None:
            a = h_i.densify() if isinstance(h_i, Slices) else h_i.array
            analytic += float(np.sum(np.real(np.conj(a) * dirs[i])))
    try:
        plus = _first_order_total(program, [a + h * dirs[i] if i in dirs else a for i, a in enumerate(arrays)])
        minus = _first_order_total(program, [a - h * dirs[i] if i in dirs else a for i, a in enumerate(arrays)])
        base = _first_order_total(program, arrays)
    except Exception:  # noqa: BLE001 - the other stages report errors
        return []
    if plus is None or minus is None or not all(np.isfinite([plus, minus, base])):
        return []
    numeric = (plus - minus) / (2 * h)
    grad_tol = max([fp.ROWS_BY_KEY[k].spec.grad_tol for k in program.rows()] + [1e-5])
    tol = 100 * grad_tol * max(1.0, abs(numeric), abs(analytic)) + 1e-9 * max(1.0, abs(base)) / h
    if abs(numeric - analytic) <= tol:
        return []
    return [Finding("mismatch", "numeric-gradient", "numeric-second", "second",
                    f"second order along a direction: tape in tape {analytic:.10g}, central differences of the "
                    f"first-order gradients {numeric:.10g} (leaves {sorted(free)})")]


# -- shrinking --------------------------------------------------------------------------------------

def shrink(program, signature, budget_s=60.0, with_tf=None):
    """A smaller program showing a finding with `signature` (category, kind, stage), greedily:
    dropping nodes, cutting feeds to fresh leaves, dropping loss terms, float32 -> float64."""
    deadline = time.monotonic() + budget_s
    stage = signature[2]
    stages = {"second": ("eager", "second"), "function": ("eager", "function"), "numeric": ("eager", "numeric"),
              "numeric-second": ("eager", "second", "numeric")}.get(stage, ("eager",))

    def still(p):
        if time.monotonic() > deadline:
            return False
        try:
            r = check_program(p, with_tf, stages=stages)
        except Exception:  # noqa: BLE001
            return False
        return any(f.signature() == signature for f in r.findings)

    best = program
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for candidate in _smaller(best):
            if still(candidate):
                best, improved = candidate, True
                break
    return _drop_unused_leaves(best)


def _copy(program):
    import copy
    return copy.deepcopy(program)


def _smaller(p):
    for n in reversed(range(len(p.nodes))):
        q = _remove_node(p, n)
        if q is not None:
            yield q
    for n, node in enumerate(p.nodes):
        if node.kind == "row":
            for i, feed in enumerate(node.feeds):
                if feed.mode != "leaf":
                    q = _copy(p)
                    _cut_feed(q, q.nodes[n], i)
                    yield q
    if len(p.loss) > 1:
        for j in range(len(p.loss)):
            q = _copy(p)
            del q.loss[j]
            yield q
    for i, leaf in enumerate(p.leaves):
        if leaf.role == "variable":
            q = _copy(p)
            q.leaves[i].role = "watched"
            yield q
    if p.dtype == "float32":
        q = _copy(p)
        q.dtype = "float64"
        for leaf in q.leaves:
            leaf.dtype = "float64"
        yield q


def _cut_feed(p, node, i):
    feed = node.feeds[i]
    if feed.mode not in ("perturb", "scale"):        # raw and squash feeds have no leaf of the slot's sampler
        p.leaves.append(fp.Leaf(feed.sampler, feed.shape, p.seed * 1000 + 900 + len(p.leaves), "watched", p.dtype))
        feed.leaf = len(p.leaves) - 1
    node.feeds[i] = fp.Feed("leaf", feed.shape, feed.sampler, leaf=feed.leaf)


def _remove_node(p, n):
    q = _copy(p)
    removed = {n}
    for m in range(n + 1, len(q.nodes)):
        node = q.nodes[m]
        if node.kind == "combine" and any(r[0] in removed for r in node.refs):
            removed.add(m)
        elif node.kind == "row":
            for i, feed in enumerate(node.feeds):
                if feed.ref is not None and feed.ref[0] in removed:
                    _cut_feed(q, node, i)
    keep = [m for m in range(len(q.nodes)) if m not in removed]
    if not keep:
        return None
    renumber = {old: new for new, old in enumerate(keep)}
    for node in q.nodes:
        if node.kind == "row":
            for feed in node.feeds:
                if feed.ref is not None and feed.ref[0] in renumber:
                    feed.ref = (renumber[feed.ref[0]], feed.ref[1])
        else:
            node.refs = tuple((renumber.get(r[0], r[0]), r[1]) for r in node.refs)
    q.nodes = [q.nodes[m] for m in keep]
    q.loss = [(renumber[r[0]], r[1]) for r in q.loss if r[0] in renumber]
    if not q.loss:
        q.loss = [(len(q.nodes) - 1, 0)]
    return q


def _drop_unused_leaves(p):
    q = _copy(p)
    used = set()
    for node in q.nodes:
        if node.kind == "row":
            used |= {f.leaf for f in node.feeds if f.leaf is not None}
    keep = sorted(used)
    renumber = {old: new for new, old in enumerate(keep)}
    for node in q.nodes:
        if node.kind == "row":
            for f in node.feeds:
                if f.leaf is not None:
                    f.leaf = renumber[f.leaf]
    q.leaves = [q.leaves[i] for i in keep]
    return q
