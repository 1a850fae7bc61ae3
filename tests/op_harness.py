"""One harness for every op's spec row.

A row (`OpSpec`) names a function written against a TensorFlow-like module
`tf` (it runs unchanged with `tapeflow` and with TensorFlow), a NumPy
reference, a sampler that stays in the op's domain and the input shapes to
try.  `run_*` check, for one row:

* forward:   tapeflow's value against the NumPy reference (float64);
* gradient:  the tape's Jacobian against float64 central differences;
* second:    the gradient of the gradient, again against central differences, with
             every differentiable input watched at once (mixed partials included);
* tf:        value, gradient and None-ness against TensorFlow (float32 and
             float64) when TensorFlow is installed;
* tf second: the second-order gradients (every block of the Hessian across the
             inputs, applied to a fixed vector) and their None-ness against
             TensorFlow's, tape in tape, in float64;
* static shapes: every op the row builds in a graph (gradient ops included), with
             known, unknown and unknown-batch input dims: the static shape its
             shape rule declares against the shape its kernel gives (no TensorFlow);
             a row that cannot be built with unknown dims records the error it raises
             (`UnknownDimsError`), checked against TensorFlow where it is installed.

`define_graph_tests` adds the row traced by `tf.function` and differentiated by
`tf.gradients`, and `define_unknown_dims_tests` the static shapes, values and
gradients with unknown dims against TensorFlow.
"""

import dataclasses
import warnings
import importlib.util
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pytest

import tapeflow
from tapeflow.framework.shapes.known_values import constant_value

HAVE_TF = importlib.util.find_spec("tensorflow") is not None


def tf_module():
    """TensorFlow, imported on first use (the tests skip when it is absent)."""
    if not HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow
    return tensorflow


# -- samplers: each returns an array of `shape` in `dtype` -------------------------

def any_real(rng, shape, dtype):
    return rng.uniform(-2.0, 2.0, shape).astype(dtype)


def positive(rng, shape, dtype):
    return rng.uniform(0.5, 2.0, shape).astype(dtype)


def unit(rng, shape, dtype):
    return rng.uniform(-0.9, 0.9, shape).astype(dtype)


def away_from_zero(rng, shape, dtype):
    mag = rng.uniform(0.5, 2.0, shape)
    return (mag * rng.choice([-1.0, 1.0], shape)).astype(dtype)


def above_one(rng, shape, dtype):
    return rng.uniform(1.2, 3.0, shape).astype(dtype)


def complex_of(sampler):
    """A complex sampler from a real one (real and imaginary parts drawn independently)."""
    def sample(rng, shape, dtype):
        cdtype = np.complex128 if np.dtype(dtype).itemsize >= 8 else np.complex64
        return (sampler(rng, shape, np.float64) + 1j * sampler(rng, shape, np.float64)).astype(cdtype)
    sample.__name__ = f"complex_{sampler.__name__}"
    return sample


def distinct(rng, shape, dtype):
    """Well-separated values (for max/min/sort-like ops, so ties do not occur)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (rng.permutation(n).reshape(shape) * 0.37 - n * 0.15).astype(dtype)


# `half_dtypes` of rows that TensorFlow runs in float16 only, or in neither half dtype (no CPU kernel).
FLOAT16_ONLY = ("float16",)
NO_HALF = ()


@dataclasses.dataclass(frozen=True)
class UnknownDimsError:
    """What building a row in a graph with unknown input dims raises, in TensorFlow as in
    tapeflow: a row reading a static size in Python (`x.shape[0]`), or an op whose gradient
    needs static sizes.  `test_static_shapes` expects it of tapeflow (no TensorFlow needed);
    `test_unknown_dims_error_against_tensorflow` checks the record against TensorFlow.

    Attributes:
      error: the exception class.
      modes: the unknown-dims modes that raise it ("all": every dim unknown, "batch": the first).
      in_gradient: only `tf.gradients` of the row raises (its forward ops build, and their
        static shapes are checked); False: the row itself raises.
      tapeflow_differs: why tapeflow still raises something else (its check is then a strict
        xfail), or "".
    """

    error: type
    modes: Sequence[str] = ("all", "batch")
    in_gradient: bool = False
    tapeflow_differs: str = ""

    def __str__(self):
        where = "tf.gradients of the row" if self.in_gradient else "the row"
        return f"{where} raises {self.error.__name__} with unknown dims ({'/'.join(self.modes)})"


@dataclasses.dataclass
class OpSpec:
    """One op (or composite) under test.

    Attributes:
      name: the row id.
      fn: `fn(tf, *inputs)` using only the public API of `tf`.
      ref: NumPy reference `ref(*arrays)`, or None (then only TF is the oracle).
      shapes: list of cases, each a tuple of input shapes.
      sampler: one sampler for all inputs, or a tuple with one per input.
      wrt: indices of the differentiable inputs (others get no gradient check): every input
        TensorFlow differentiates (None-ness included), so restrict it only to inputs TensorFlow
        cannot differentiate either.
      numeric_wrt: the inputs of `wrt` also checked against central differences (default: all
        of them); the others are compared with TensorFlow only, where its gradient is a
        convention rather than the derivative (None for `stop_gradient`'s input, 0 at a kink
        or a jump): give the reason in a comment on the row.
      dtypes: dtypes compared against TensorFlow.
      extra: non-differentiable extra inputs built per case: `extra(rng, shapes) -> list`
        appended after the sampled inputs (indices, masks, ...).
      second_order: check the gradient of the gradient numerically.
      rtol, atol: forward/TF tolerances (float32 comparisons use the looser of these and 1e-4).
      grad_tol: tolerance of the numerical gradient check.
      tf_fn: a TensorFlow-specific variant of `fn`, where the APIs differ.
      check_tf_grad: compare gradients against TensorFlow (off for ops where TF differs by convention).
      tf_second_order_skip: blocks (k, j) of the second order, d/dx_j of the gradient of input k
        (indices into the inputs), not compared with TensorFlow because TensorFlow's is wrong there
        (it differs from central differences of TensorFlow's own first-order gradient): give the
        reason in a comment on the row.
      square_outputs: square the op's float outputs before the second-order check, so that the
        gradient rule of a linear op (whose gradient does not depend on its input) is itself
        differentiated (reshapes, slices, gathers...).
      vmap: check `tf.vectorized_map` and the vectorized Jacobian on the row (off only for rows
        whose function reads values in Python: give the reason in a comment on the row).
      half_dtypes: the half-precision dtypes TensorFlow runs the row in, forward and backward;
        `test_half_precision` (half_harness.py) checks the row in each against float32 and
        TensorFlow, and that TensorFlow refuses the others (it fails when this list is not
        TensorFlow's).
      unknown_dims_error: what building the row with unknown input dims raises (an
        `UnknownDimsError`), or None: it builds in every mode.
    """

    name: str
    fn: Callable
    ref: Optional[Callable] = None
    shapes: Sequence[tuple] = ((((3,)),),)
    sampler: Any = any_real
    wrt: Optional[Sequence[int]] = None
    numeric_wrt: Optional[Sequence[int]] = None
    dtypes: Sequence[str] = ("float32", "float64")
    extra: Optional[Callable] = None
    second_order: bool = True
    rtol: float = 1e-6
    atol: float = 1e-6
    grad_tol: float = 1e-5
    tf_fn: Optional[Callable] = None
    check_tf_grad: bool = True
    tf_second_order_skip: Sequence[tuple] = ()
    square_outputs: bool = False
    vmap: bool = True
    half_dtypes: Sequence[str] = ("float16", "bfloat16")
    unknown_dims_error: Optional[UnknownDimsError] = None

    def __str__(self):
        return self.name


def _sample(spec, rng, shapes, dtype):
    samplers = spec.sampler if isinstance(spec.sampler, tuple) else (spec.sampler,) * len(shapes)
    arrays = [s(rng, shape, dtype) for s, shape in zip(samplers, shapes, strict=True)]
    extra = list(spec.extra(rng, shapes)) if spec.extra else []
    return arrays, extra


def _wrt(spec, n):
    return list(range(n)) if spec.wrt is None else list(spec.wrt)


def _numeric_wrt(spec, n):
    """The inputs whose derivatives are checked against central differences."""
    wrt = _wrt(spec, n)
    if spec.numeric_wrt is None:
        return wrt
    assert set(spec.numeric_wrt) <= set(wrt), f"{spec.name}: numeric_wrt must be a subset of wrt"
    return list(spec.numeric_wrt)


def _to_numpy(value):
    if isinstance(value, (list, tuple)):
        return [_to_numpy(v) for v in value]
    if isinstance(value, tapeflow.IndexedSlices):
        value = tapeflow.convert_to_tensor(value)
    return np.asarray(value)


def _scalarize(out):
    """A scalar from an op's output(s) with fixed random weights, for gradient checks."""
    tf = tapeflow
    outs = out if isinstance(out, (list, tuple)) else [out]
    total = None
    for k, o in enumerate(outs):
        o = tf.convert_to_tensor(o)
        if not o.dtype.is_floating and not o.dtype.is_complex:
            continue
        w = np.random.default_rng(1000 + k).uniform(0.5, 1.5, o.shape.as_list()).astype(o.dtype.as_numpy_dtype)
        term = tf.reduce_sum(tf.math.real(o * tf.constant(w)) if o.dtype.is_complex else o * tf.constant(w))
        total = term if total is None else total + term
    return total


def run_forward(spec, case_index):
    rng = np.random.default_rng(case_index)
    shapes = spec.shapes[case_index]
    arrays, extra = _sample(spec, rng, shapes, np.float64)
    got = spec.fn(tapeflow, *[tapeflow.constant(a) for a in arrays], *extra)
    if spec.ref is None:
        return
    want = spec.ref(*arrays, *extra)
    _assert_close(_to_numpy(got), want, spec.rtol, spec.atol, f"{spec.name} forward")


def _flatten_outputs(out):
    """One tensor from an op's output(s): several outputs are flattened and joined
    (real ones cast to complex when another is complex); integer outputs are dropped."""
    tf = tapeflow
    if not isinstance(out, (list, tuple)):
        return out
    outs = [tf.convert_to_tensor(o) for o in out]
    outs = [o for o in outs if o.dtype.is_floating or o.dtype.is_complex]
    complex_dtype = next((o.dtype for o in outs if o.dtype.is_complex), None)
    parts = [tf.reshape(tf.cast(o, complex_dtype) if complex_dtype and not o.dtype.is_complex else o, [-1])
             for o in outs]
    return tf.concat(parts, 0) if len(parts) > 1 else parts[0]


def run_gradient(spec, case_index):
    rng = np.random.default_rng(100 + case_index)
    shapes = spec.shapes[case_index]
    arrays, extra = _sample(spec, rng, shapes, np.float64)
    wrt = _numeric_wrt(spec, len(arrays))

    def f(*xs):
        args = [tapeflow.constant(a) for a in arrays]
        for i, x in zip(wrt, xs, strict=True):
            args[i] = x
        return _flatten_outputs(spec.fn(tapeflow, *args, *extra))

    theoretical, numerical = tapeflow.test.compute_gradient(f, [arrays[i] for i in wrt])
    for i, (t, n) in enumerate(zip(theoretical, numerical, strict=True)):
        np.testing.assert_allclose(t, n, rtol=spec.grad_tol, atol=spec.grad_tol,
                                   err_msg=f"{spec.name}: gradient of input {wrt[i]} for shapes {shapes}")


def _squared(out):
    """The op's outputs with float ones squared (others dropped): a nonlinear function of them."""
    outs = out if isinstance(out, (list, tuple)) else [out]
    outs = [tapeflow.convert_to_tensor(o) for o in outs]
    return [o * o for o in outs if o.dtype.is_floating or o.dtype.is_complex]


def run_second_order(spec, case_index):
    """The Jacobian of all first-order gradients (concatenated) with respect to every input
    of `numeric_wrt` at once, so the whole Hessian across inputs, mixed partials included,
    against central differences."""
    if not spec.second_order:
        pytest.skip("second order not defined for this op")
    rng = np.random.default_rng(200 + case_index)
    shapes = spec.shapes[case_index]
    arrays, extra = _sample(spec, rng, shapes, np.float64)
    wrt = _numeric_wrt(spec, len(arrays))
    if not wrt:
        pytest.skip(f"{spec.name}: no input checked numerically")

    def first_grad(*xs):
        args = [tapeflow.constant(a) for a in arrays]
        for i, x in zip(wrt, xs, strict=True):
            args[i] = x
        with tapeflow.GradientTape() as tape:
            tape.watch(xs)
            out = spec.fn(tapeflow, *args, *extra)
            y = _scalarize(_squared(out) if spec.square_outputs else out)
        grads = tape.gradient(y, list(xs), unconnected_gradients="zero")
        parts = [tapeflow.reshape(tapeflow.convert_to_tensor(g), [-1]) for g in grads]
        return tapeflow.concat(parts, 0) if len(parts) > 1 else parts[0]

    theoretical, numerical = tapeflow.test.compute_gradient(first_grad, [arrays[i] for i in wrt])
    for i, (t, n) in enumerate(zip(theoretical, numerical, strict=True)):
        np.testing.assert_allclose(t, n, rtol=spec.grad_tol * 10, atol=spec.grad_tol * 10,
                                   err_msg=f"{spec.name}: d/dx{wrt[i]} of the gradients for shapes {shapes}")


def _value_and_grads(module, fn, arrays, extra, wrt, dtype):
    real = "float32" if dtype in ("float32", "complex64") else "float64"
    xs = [module.constant(a.astype(dtype if a.dtype.kind == "c" else real)) for a in arrays]
    with module.GradientTape() as tape:
        for i in wrt:
            tape.watch(xs[i])
        out = fn(module, *xs, *extra)
        outs = out if isinstance(out, (list, tuple)) else [out]
        weighted = []
        for k, o in enumerate(outs):
            o = module.convert_to_tensor(o)
            if not (o.dtype.is_floating or o.dtype.is_complex):
                continue
            w = np.random.default_rng(1000 + k).uniform(0.5, 1.5, o.shape.as_list()).astype(o.dtype.as_numpy_dtype)
            weighted.append(module.reduce_sum(module.math.real(o * w) if o.dtype.is_complex else o * w))
        y = module.add_n(weighted) if len(weighted) > 1 else (weighted[0] if weighted else None)
    grads = tape.gradient(y, [xs[i] for i in wrt]) if y is not None else [None] * len(wrt)
    return [_to_numpy_any(o) for o in outs], [None if g is None else _to_numpy_any(module.convert_to_tensor(g)) for g in grads]


def _to_numpy_any(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def run_against_tf(spec, case_index, dtype):
    tf = tf_module()
    if dtype not in spec.dtypes:
        pytest.skip(f"{dtype} not compared for {spec.name}")
    rng = np.random.default_rng(300 + case_index)
    shapes = spec.shapes[case_index]
    arrays, extra = _sample(spec, rng, shapes, np.float64)
    if any(a.dtype.kind == "c" for a in arrays):
        dtype = {"float32": "complex64", "float64": "complex128"}[dtype]
    wrt = _wrt(spec, len(arrays))
    ours = _value_and_grads(tapeflow, spec.fn, arrays, extra, wrt, dtype)
    theirs = _value_and_grads(tf, spec.tf_fn or spec.fn, arrays, extra, wrt, dtype)
    loose = dtype in ("float32", "complex64")
    rtol = max(spec.rtol, 2e-4) if loose else max(spec.rtol, 1e-9)
    atol = max(spec.atol, 2e-4) if loose else max(spec.atol, 1e-9)
    for k, (a, b) in enumerate(zip(ours[0], theirs[0], strict=True)):
        _assert_close(a, b, rtol, atol, f"{spec.name} value {k} vs TensorFlow ({dtype})")
    if not spec.check_tf_grad:
        return
    for i, (a, b) in enumerate(zip(ours[1], theirs[1], strict=True)):
        assert (a is None) == (b is None), f"{spec.name}: gradient {i} None-ness differs from TensorFlow ({a} vs {b})"
        if a is not None:
            _assert_close(a, b, rtol * 10, atol * 10, f"{spec.name} gradient {wrt[i]} vs TensorFlow ({dtype})")


def weighted_total(module, tensors, seed=1000, shapes=None):
    """sum_k <t_k, w_k> with fixed random weights w_k (real parts of complex terms): a scalar
    depending on every float tensor of `tensors` (None entries are skipped), or None.  `shapes`
    gives the tensors' shapes where their static shapes may be partly unknown (tf.function)."""
    terms = []
    for k, t in enumerate(tensors):
        if t is None:
            continue
        t = module.convert_to_tensor(t)
        if not (t.dtype.is_floating or t.dtype.is_complex):
            continue
        shape = shapes[k] if shapes is not None else t.shape.as_list()
        w = np.random.default_rng(seed + k).uniform(0.5, 1.5, shape).astype(t.dtype.as_numpy_dtype)
        terms.append(module.reduce_sum(module.math.real(t * w) if t.dtype.is_complex else t * w))
    return module.add_n(terms) if len(terms) > 1 else (terms[0] if terms else None)


def _second_order_blocks(module, spec, fn, arrays, extra, wrt):
    """Tape in tape: the first-order gradients g_k of the scalarized row, and for each k the
    gradient of <g_k, v_k> with respect to every watched input j (H_kj applied to v_k), as
    NumPy arrays or None; every differentiable input is watched by both tapes at once."""
    xs = [module.constant(a) for a in arrays]
    watched = [xs[i] for i in wrt]
    with module.GradientTape(persistent=True) as outer:
        outer.watch(watched)
        with module.GradientTape() as inner:
            inner.watch(watched)
            out = fn(module, *xs, *extra)
            outs = out if isinstance(out, (list, tuple)) else [out]
            if spec.square_outputs:
                outs = [o * o for o in map(module.convert_to_tensor, outs)
                        if o.dtype.is_floating or o.dtype.is_complex]
            y = weighted_total(module, outs, 1000)
        if y is None:
            return None
        grads = [None if g is None else module.convert_to_tensor(g) for g in inner.gradient(y, watched)]
        totals = [None if g is None else weighted_total(module, [g], 2000 + k) for k, g in enumerate(grads)]
    blocks = [[None] * len(wrt) if t is None else
              [None if h is None else _to_numpy_any(module.convert_to_tensor(h)) for h in outer.gradient(t, watched)]
              for t in totals]
    return [None if g is None else _to_numpy_any(g) for g in grads], blocks


def run_second_order_against_tf(spec, case_index):
    """Every block of the second-order gradient (and its None-ness) against TensorFlow's, float64."""
    tf = tf_module()
    if not spec.check_tf_grad:
        pytest.skip(f"gradients of {spec.name} not compared with TensorFlow (check_tf_grad)")
    if "float64" not in spec.dtypes:
        pytest.skip(f"float64 not compared for {spec.name}")
    rng = np.random.default_rng(600 + case_index)
    arrays, extra = _sample(spec, rng, spec.shapes[case_index], np.float64)
    wrt = _wrt(spec, len(arrays))
    ours = _second_order_blocks(tapeflow, spec, spec.fn, arrays, extra, wrt)
    try:
        theirs = _second_order_blocks(tf, spec, spec.tf_fn or spec.fn, arrays, extra, wrt)
    except LookupError as e:       # "gradient registry has no entry for: SoftsignGrad"
        pytest.skip(f"TensorFlow cannot differentiate {spec.name} twice: {e}")
    assert (ours is None) == (theirs is None), f"{spec.name}: float outputs differ from TensorFlow's"
    if ours is None:
        return
    tol = max(spec.rtol, spec.atol, 1e-8) * 10
    shapes = spec.shapes[case_index]
    for k, (a, b) in enumerate(zip(ours[0], theirs[0], strict=True)):
        assert (a is None) == (b is None), f"{spec.name}: gradient {wrt[k]} None-ness differs from TensorFlow"
    for k, (row_a, row_b) in enumerate(zip(ours[1], theirs[1], strict=True)):
        for j, (a, b) in enumerate(zip(row_a, row_b, strict=True)):
            if (wrt[k], wrt[j]) in spec.tf_second_order_skip:
                continue
            what = f"{spec.name}: d/dx{wrt[j]} of the gradient of input {wrt[k]} vs TensorFlow"
            assert (a is None) == (b is None), f"{what}: None-ness differs ({a} vs {b}) for shapes {shapes}"
            if a is not None:
                _assert_close(a, b, tol, tol, f"{what}, shapes {shapes}")


# -- forward mode: JVPs of each row ---------------------------------------------------------------

def _float_outputs(module, out):
    outs = out if isinstance(out, (list, tuple)) else [out]
    outs = [module.convert_to_tensor(o) for o in outs]
    return [o for o in outs if o.dtype.is_floating or o.dtype.is_complex]


def _jvps(module, fn, arrays, extra, wrt, tangents):
    """The tangents of the row's float outputs (zeros where unconnected), by ForwardAccumulator."""
    xs = [module.constant(a) for a in arrays]
    with module.autodiff.ForwardAccumulator([xs[i] for i in wrt], [module.constant(t) for t in tangents]) as acc:
        outs = _float_outputs(module, fn(module, *xs, *extra))
    return [_to_numpy_any(module.convert_to_tensor(acc.jvp(o, unconnected_gradients="zero"))) for o in outs]


def _jvp_case(spec, case_index):
    rng = np.random.default_rng(700 + case_index)
    arrays, extra = _sample(spec, rng, spec.shapes[case_index], np.float64)
    wrt = _numeric_wrt(spec, len(arrays))
    tangents = [rng.uniform(-1.0, 1.0, np.shape(arrays[i])).astype(arrays[i].dtype)
                + (1j * rng.uniform(-1.0, 1.0, np.shape(arrays[i])) if arrays[i].dtype.kind == "c" else 0)
                for i in wrt]
    return arrays, extra, wrt, [t.astype(arrays[i].dtype) for i, t in zip(wrt, tangents)]


def run_jvp(spec, case_index):
    """Forward mode against float64 central differences along a random direction (real rows)."""
    arrays, extra, wrt, tangents = _jvp_case(spec, case_index)
    if not wrt:
        pytest.skip(f"{spec.name}: no input checked numerically")
    ours = _jvps(tapeflow, spec.fn, arrays, extra, wrt, tangents)
    if any(a.dtype.kind == "c" for a in arrays):
        return      # complex rows: compared with TensorFlow's forward mode only
    eps = 1e-6

    def at(sign):
        moved = list(arrays)
        for i, t in zip(wrt, tangents):
            moved[i] = arrays[i] + sign * eps * t
        return [np.asarray(o) for o in _float_outputs(tapeflow, spec.fn(tapeflow, *[tapeflow.constant(a)
                                                                                       for a in moved], *extra))]
    values = at(0.0)
    numeric = [(p - m) / (2 * eps) for p, m in zip(at(1.0), at(-1.0), strict=True)]
    for k, (got, want, value) in enumerate(zip(ours, numeric, values, strict=True)):
        finite = np.isfinite(value)       # no derivative where the value itself is NaN (the mean of nothing)
        _assert_close(np.where(finite, got, 0.0), np.where(finite, want, 0.0), spec.grad_tol, spec.grad_tol,
                      f"{spec.name} JVP {k} vs central differences")


def run_jvp_against_tf(spec, case_index):
    """Forward mode against TensorFlow's ForwardAccumulator (float64)."""
    tf = tf_module()
    if not spec.check_tf_grad:
        pytest.skip(f"{spec.name}: TensorFlow's gradient differs by convention")
    arrays, extra, wrt, tangents = _jvp_case(spec, case_index)
    ours = _jvps(tapeflow, spec.fn, arrays, extra, wrt, tangents)
    try:
        theirs = _jvps(tf, spec.tf_fn or spec.fn, arrays, extra, wrt, tangents)
    except Exception as e:  # noqa: BLE001 - TensorFlow's own failure (no forward mode for an op it
        # cannot differentiate twice, its QR gradient of an empty matrix): ours ran, nothing to compare
        pytest.skip(f"TensorFlow's forward mode fails on {spec.name}: {type(e).__name__}")
    for k, (got, want) in enumerate(zip(ours, theirs, strict=True)):
        # TensorFlow's JVP is NaN where its gradient rules meet 0/0 (an empty segment, an empty
        # reduction): the output is constant there; ours is checked against central differences.
        tf_nan = np.isnan(want) & ~np.isnan(got)
        _assert_close(np.where(tf_nan, 0.0, got), np.where(tf_nan, 0.0, want), max(spec.rtol, 1e-7),
                      max(spec.atol, 1e-7), f"{spec.name} JVP {k} vs TensorFlow")


_VMAP_BATCH = 3


def _vmap_case(spec, case_index):
    """A batch of `_VMAP_BATCH` examples of the row's inputs (stacked) and its extra inputs."""
    rng = np.random.default_rng(900 + case_index)
    shapes = spec.shapes[case_index]
    examples = [_sample(spec, rng, shapes, np.float64) for _ in range(_VMAP_BATCH)]
    extra = _sample(spec, np.random.default_rng(900 + case_index), shapes, np.float64)[1]
    stacked = [np.stack([ex[0][i] for ex in examples]) for i in range(len(shapes))]
    return stacked, extra


def _stack_outputs(outs):
    """The per-example outputs of a Python loop stacked like vectorized_map's."""
    first = outs[0]
    if isinstance(first, (list, tuple)):
        return [_stack_outputs([o[k] for o in outs]) for k in range(len(first))]
    return np.stack([_to_numpy(o) for o in outs])


def run_vectorized_map(spec, case_index, batched):
    """`tf.vectorized_map` over the row's inputs against a Python loop over the examples.

    `batched` is "all" (every input has the batch axis) or "first" (input 0 only; the
    others are the first example's, shared).  An op without a batching rule fails
    (its fallback warns)."""
    if not spec.vmap:
        pytest.skip(f"{spec.name}: reads values in Python")
    stacked, extra = _vmap_case(spec, case_index)
    if batched == "first" and len(stacked) < 2:
        pytest.skip("one input")
    tf = tapeflow
    shared = [None] + [a if batched == "all" else a[0] for a in stacked[1:]]
    mapped = [0] + (list(range(1, len(stacked))) if batched == "all" else [])

    def example(args):
        xs = list(shared)
        for i, a in zip(mapped, args, strict=True):
            xs[i] = a
        return spec.fn(tf, *[x if isinstance(x, tf.Tensor) else tf.constant(x) for x in xs], *extra)

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Op '.*' has no batching rule")
        got = tf.vectorized_map(example, tuple(tf.constant(stacked[i]) for i in mapped))
    want = _stack_outputs([example([a[b] for a in (stacked[i] for i in mapped)]) for b in range(_VMAP_BATCH)])
    _assert_close(_to_numpy(got), want, max(spec.rtol, 1e-10), max(spec.atol, 1e-10),
                  f"{spec.name} vectorized_map ({batched} batched)")


def run_pfor_jacobian(spec, case_index):
    """The vectorized Jacobian (one batched backprop) against the row-by-row loop."""
    if not spec.vmap:
        pytest.skip(f"{spec.name}: reads values in Python")
    rng = np.random.default_rng(950 + case_index)
    arrays, extra = _sample(spec, rng, spec.shapes[case_index], np.float64)
    wrt = _wrt(spec, len(arrays))
    tf = tapeflow
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([xs[i] for i in wrt])
        out = _flatten_outputs(spec.fn(tf, *xs, *extra))
        out = tf.convert_to_tensor(out)
    if not (out.dtype.is_floating or out.dtype.is_complex):
        pytest.skip("no float output")
    sources = [xs[i] for i in wrt]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Op '.*' has no batching rule")
        got = tape.jacobian(out, sources, unconnected_gradients="zero")
    want = tape.jacobian(out, sources, unconnected_gradients="zero", experimental_use_pfor=False)
    _assert_close(_to_numpy(got), _to_numpy(want), 1e-10, 1e-10, f"{spec.name} vectorized jacobian")


def _assert_close(got, want, rtol, atol, what):
    if isinstance(want, (list, tuple)):
        got = got if isinstance(got, (list, tuple)) else [got]
        assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
        for g, w in zip(got, want, strict=True):
            _assert_close(g, w, rtol, atol, what)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if got.dtype == np.bool_ or want.dtype == np.bool_ or got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64),
                                   want, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)


def parametrize(specs):
    """Decorators turning a spec list into (spec, case) test parameters."""
    cases = [pytest.param(s, i, id=f"{s.name}-{i}") for s in specs for i in range(len(s.shapes))]
    return pytest.mark.parametrize("spec,case", cases)


def define_tests(specs, namespace):
    """Adds the standard tests for `specs` to a test module's namespace."""
    @parametrize(specs)
    def test_forward(spec, case):
        run_forward(spec, case)

    @parametrize(specs)
    def test_gradient(spec, case):
        run_gradient(spec, case)

    @parametrize(specs)
    def test_second_order(spec, case):
        run_second_order(spec, case)

    @parametrize(specs)
    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_against_tensorflow(spec, case, dtype):
        run_against_tf(spec, case, dtype)

    @parametrize(specs)
    def test_second_order_against_tensorflow(spec, case):
        run_second_order_against_tf(spec, case)

    @parametrize(specs)
    def test_jvp(spec, case):
        run_jvp(spec, case)

    @parametrize(specs)
    def test_jvp_against_tensorflow(spec, case):
        run_jvp_against_tf(spec, case)

    @parametrize(specs)
    @pytest.mark.parametrize("batched", ["all", "first"])
    def test_vectorized_map(spec, case, batched):
        run_vectorized_map(spec, case, batched)

    @parametrize(specs)
    def test_pfor_jacobian(spec, case):
        run_pfor_jacobian(spec, case)

    @pytest.mark.parametrize("spec,dtype", [pytest.param(s, d, id=f"{s.name}-{d}") for s in specs
                                            for d in ("float16", "bfloat16")])
    def test_half_precision(spec, dtype):
        from half_harness import run_half_precision     # (it imports this module)
        run_half_precision(spec, dtype)

    namespace.update(test_half_precision=test_half_precision)
    namespace.update(test_vectorized_map=test_vectorized_map, test_pfor_jacobian=test_pfor_jacobian)
    namespace.update(test_jvp=test_jvp, test_jvp_against_tensorflow=test_jvp_against_tensorflow)
    namespace.update(test_forward=test_forward, test_gradient=test_gradient,
                     test_second_order=test_second_order, test_against_tensorflow=test_against_tensorflow,
                     test_second_order_against_tensorflow=test_second_order_against_tensorflow)
    define_static_shape_tests(specs, namespace)


# -- graph mode: the same row traced by tf.function and differentiated by tf.gradients ------------

def _weights(outs):
    """The weights `_scalarize` uses, from the eager outputs' shapes (graph outputs may be partly unknown)."""
    return [None if not (o.dtype.is_floating or o.dtype.is_complex) else
            np.random.default_rng(1000 + k).uniform(0.5, 1.5, o.shape.as_list()).astype(o.dtype.as_numpy_dtype)
            for k, o in enumerate(outs)]


def _weighted_sum(out, weights, tf=tapeflow):
    outs = out if isinstance(out, (list, tuple)) else [out]
    terms = []
    for o, w in zip(outs, weights, strict=True):
        if w is not None:
            o = tf.convert_to_tensor(o)
            terms.append(tf.reduce_sum(tf.math.real(o * w) if o.dtype.is_complex else o * w))
    return tf.add_n(terms) if len(terms) > 1 else (terms[0] if terms else None)


def run_graph(spec, case_index):
    """The row traced by `tf.function` (tape inside) and by `tf.gradients` on placeholders gives eager's values."""
    tf = tapeflow
    rng = np.random.default_rng(400 + case_index)
    arrays, extra = _sample(spec, rng, spec.shapes[case_index], np.float64)
    wrt = _wrt(spec, len(arrays))
    xs = [tf.constant(a) for a in arrays]
    eager_out = spec.fn(tf, *xs, *extra)
    outs = [tf.convert_to_tensor(o) for o in (eager_out if isinstance(eager_out, (list, tuple)) else [eager_out])]
    weights = _weights(outs)

    def value_and_grads(*args):
        with tf.GradientTape() as tape:
            for i in wrt:
                tape.watch(args[i])
            out = spec.fn(tf, *args, *extra)
            y = _weighted_sum(out, weights)
        grads = tape.gradient(y, [args[i] for i in wrt]) if y is not None else [None] * len(wrt)
        return out, [None if g is None else tf.convert_to_tensor(g) for g in grads]

    eager = value_and_grads(*xs)
    traced = tf.function(value_and_grads)(*xs)
    _assert_close(_to_numpy(traced[0]), _to_numpy(eager[0]), 1e-9, 1e-9, f"{spec.name} value in tf.function")
    for i, (a, b) in enumerate(zip(traced[1], eager[1], strict=True)):
        assert (a is None) == (b is None), f"{spec.name}: gradient {i} None-ness differs in tf.function"
        if a is not None:
            _assert_close(np.asarray(a), np.asarray(b), 1e-9, 1e-9, f"{spec.name} gradient {i} in tf.function")
    graph = tf.Graph()
    with graph.as_default():
        holders = [tf.compat.v1.placeholder(tf.as_dtype(a.dtype), a.shape) for a in arrays]
        y = _weighted_sum(spec.fn(tf, *holders, *extra), weights)
        if y is None:
            return
        grads = tf.gradients(y, [holders[i] for i in wrt])
        fetches = [tf.convert_to_tensor(g) for g in grads if g is not None]
        with tf.compat.v1.Session(graph=graph) as session:
            values = session.run(fetches, feed_dict=dict(zip(holders, arrays)))
    expected = [np.asarray(g) for g in eager[1] if g is not None]
    assert len(values) == len(expected), f"{spec.name}: tf.gradients gives {len(values)} gradients, eager {len(expected)}"
    for i, (a, b) in enumerate(zip(values, expected, strict=True)):
        _assert_close(np.asarray(a), b, 1e-9, 1e-9, f"{spec.name} tf.gradients gradient {i}")


def define_graph_tests(specs, namespace):
    """Adds `test_graph_mode` (see `run_graph`) for `specs` to a test module's namespace."""
    @parametrize(specs)
    def test_graph_mode(spec, case):
        run_graph(spec, case)

    namespace.update(test_graph_mode=test_graph_mode)


UNKNOWN_DIMS_MODES = ("all", "batch")


def _dims(shape, mode):
    """Static dims of an input of `shape`: all known ("known"), all hidden ("all"), or all
    but the first ("batch")."""
    if mode == "known":
        return list(shape)
    return [None] * len(shape) if mode == "all" else ([None] + list(shape[1:]) if shape else [])


def _unknown_signature(module, arrays, mode):
    """Input signature hiding every dimension ("all") or each input's first one ("batch")."""
    return [module.TensorSpec(_dims(a.shape, mode), module.as_dtype(a.dtype)) for a in arrays]


def _traced_with_unknown_dims(module, fn, arrays, extra, wrt, mode):
    """Traces `fn` with unknown input dims; returns (static output shapes, values, gradients)."""
    static = []

    def value_and_grads(*xs):
        with module.GradientTape() as tape:
            for i in wrt:
                tape.watch(xs[i])
            out = fn(module, *xs, *extra)
            outs = [module.convert_to_tensor(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
            static.append([o.shape.as_list() if o.shape.rank is not None else None for o in outs])
            terms = [module.reduce_sum(module.math.real(o) if o.dtype.is_complex else o) for o in outs
                     if o.dtype.is_floating or o.dtype.is_complex]
            y = module.add_n(terms) if len(terms) > 1 else (terms[0] if terms else None)
        grads = tape.gradient(y, [xs[i] for i in wrt]) if y is not None else []
        return outs, [module.zeros_like(xs[i]) if g is None else module.convert_to_tensor(g)
                      for i, g in zip(wrt, grads)]

    traced = module.function(value_and_grads, input_signature=_unknown_signature(module, arrays, mode))
    outs, grads = traced(*[module.constant(a) for a in arrays])
    return static[0], [_to_numpy_any(o) for o in outs], [_to_numpy_any(g) for g in grads]


def run_unknown_dims(spec, case_index, mode):
    """The row traced with unknown input dimensions: the static shapes TensorFlow
    infers, and its values and gradients (TensorFlow is the oracle)."""
    if not HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    tf = tf_module()
    rng = np.random.default_rng(500 + case_index)
    arrays, extra = _sample(spec, rng, spec.shapes[case_index], np.float64)
    if mode == "batch" and all(a.ndim == 0 for a in arrays):
        pytest.skip("scalar inputs: no dimension to hide")
    wrt = _wrt(spec, len(arrays))
    try:
        theirs = _traced_with_unknown_dims(tf, spec.tf_fn or spec.fn, arrays, extra, wrt, mode)
    except Exception as e:         # TensorFlow cannot run it either: nothing to compare
        pytest.skip(f"TensorFlow fails with unknown dims: {type(e).__name__}")
    ours = _traced_with_unknown_dims(tapeflow, spec.fn, arrays, extra, wrt, mode)
    assert ours[0] == theirs[0], f"{spec.name}: static shapes {ours[0]} with unknown dims, TensorFlow {theirs[0]}"
    _assert_close(ours[1], theirs[1], max(spec.rtol, 1e-9), max(spec.atol, 1e-9), f"{spec.name} values")
    if spec.check_tf_grad:
        _assert_close(ours[2], theirs[2], 1e-7, 1e-7, f"{spec.name} gradients")


def define_unknown_dims_tests(specs, namespace, xfail=()):
    """Adds `test_unknown_dims` (see `run_unknown_dims`), first shape case of each
    row, for `specs` to a test module's namespace; rows named in `xfail` are strict xfails
    (a name "row-mode" marks one mode only; a dict maps names to reasons)."""
    params = []
    for s in specs:
        for mode in UNKNOWN_DIMS_MODES:
            key = next((k for k in (s.name, f"{s.name}-{mode}") if k in xfail), None)
            reason = xfail[key] if isinstance(xfail, dict) and key else "unknown dims not handled yet"
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if key else []
            params.append(pytest.param(s, 0, mode, id=f"{s.name}-{mode}", marks=marks))

    @pytest.mark.parametrize("spec,case,mode", params)
    def test_unknown_dims(spec, case, mode):
        run_unknown_dims(spec, case, mode)

    namespace.update(test_unknown_dims=test_unknown_dims)


# -- static shapes: each op's declared shape rule against its kernel ---------------------------

STATIC_SHAPE_MODES = ("known",) + UNKNOWN_DIMS_MODES

# Ops whose static output shape need not be fully known even when their inputs' shapes are:
# `Where`, `Unique` and the sorted segment reductions (sizes that depend on values: TensorFlow
# leaves them unknown even for constant segment ids), and calls and control flow (their output
# shapes are those their bodies were traced with, e.g. for an `input_signature`).
_NOT_EXACT = frozenset({"Where", "Unique", "UniqueWithCounts", "SegmentSum", "SegmentMean", "SegmentMax",
                        "SegmentMin", "SegmentProd", "PartitionedCall", "If", "While"})


def _fully_known(t):
    return t._value.shape is not None and None not in t._value.shape


def _exact_expected(op):
    """Whether `op`'s static output shapes must equal its kernel's: a declared rule, every
    input shape known and, for rules reading size tensors, every integer input's value known."""
    op_def = op.op_def
    if op_def.shape_fn is None or op_def.type in _NOT_EXACT or not all(_fully_known(t) for t in op.inputs):
        return False
    if op_def.shape_reads_inputs:
        return all(constant_value(t) is not None for t in op.inputs if t._value.dtype.kind in "iu")
    return True


def _build_row_graph(module, fn, arrays, extra, wrt, weights, mode):
    """`fn` (the row) on placeholders with `mode` dims in a `module` graph, and `tf.gradients`
    of its scalarized outputs (none when `weights` is None)."""
    tf = module
    graph = tf.Graph()
    with graph.as_default():
        holders = [tf.compat.v1.placeholder(tf.as_dtype(a.dtype), _dims(a.shape, mode)) for a in arrays]
        out = fn(tf, *holders, *extra)
        y = None if weights is None else _weighted_sum(out, weights, tf)
        if y is not None:
            tf.gradients(y, [holders[i] for i in wrt])
    return graph, holders


def _row_graph_inputs(spec, case_index, mode):
    """The sampled inputs of `run_static_shapes` and the output weights of its scalarized
    loss (from an eager run of the row)."""
    tf = tapeflow
    rng = np.random.default_rng(700 + case_index)
    arrays, extra = _sample(spec, rng, spec.shapes[case_index], np.float64)
    if mode == "batch" and all(a.ndim == 0 for a in arrays):
        pytest.skip("scalar inputs: no dimension to hide")
    eager_out = spec.fn(tf, *[tf.constant(a) for a in arrays], *extra)
    weights = _weights([tf.convert_to_tensor(o) for o in (eager_out if isinstance(eager_out, (list, tuple))
                                                           else [eager_out])])
    return arrays, extra, _wrt(spec, len(arrays)), weights


def _raises(error, build, what):
    """Calls `build()`, which must raise `error`."""
    try:
        build()
    except error:
        return
    except Exception as e:
        raise AssertionError(f"{what}, but {type(e).__name__} was raised: {e}") from e
    raise AssertionError(f"{what}, but it builds: update the row's `unknown_dims_error`")


def _build_as_recorded(module, spec, case_index, mode):
    """The row's graph (`_build_row_graph`) in `module` with `mode` input dims, as the row's
    `unknown_dims_error` says it builds: the row and its gradient; or, where the record says
    the gradient raises, the row alone after checking that it does; or, where the record says
    the row raises, None after checking that it does."""
    arrays, extra, wrt, weights = _row_graph_inputs(spec, case_index, mode)
    fn = spec.fn if module is tapeflow else spec.tf_fn or spec.fn
    record = spec.unknown_dims_error
    if record is None or mode not in record.modes:
        return _build_row_graph(module, fn, arrays, extra, wrt, weights, mode), arrays
    what = f"{spec.name} in {module.__name__}, {mode} input dims unknown: the row records that {record}"
    if not record.in_gradient:
        _raises(record.error, lambda: _build_row_graph(module, fn, arrays, extra, wrt, None, mode), what)
        return None, arrays
    _raises(record.error, lambda: _build_row_graph(module, fn, arrays, extra, wrt, weights, mode), what)
    return _build_row_graph(module, fn, arrays, extra, wrt, None, mode), arrays


def run_static_shapes(spec, case_index, mode):
    """Every op the row builds in a graph (the row and its `tf.gradients`), on placeholders
    with known ("known"), unknown ("all") or unknown leading ("batch") dims: the static shape
    of each output, as its op's shape rule declares it, must be compatible with the shape the
    kernel gives when the graph runs, and equal to it where the op's inputs have known shapes
    (see `_exact_expected`).  A row that cannot be built with unknown dims records the error
    (`unknown_dims_error`); then its forward ops alone are checked, if they build."""
    tf = tapeflow
    built, arrays = _build_as_recorded(tf, spec, case_index, mode)
    if built is None:
        return
    graph, holders = built
    checked = [(op, k, t) for op in graph.get_operations() if op.type != "Placeholder"
               for k, t in enumerate(op.outputs) if t._value.dtype.kind in "biufc"]
    with tf.compat.v1.Session(graph=graph) as session:
        values = session.run([t for _, _, t in checked], feed_dict=dict(zip(holders, arrays)))
    for (op, k, t), value in zip(checked, values, strict=True):
        static, actual = t._value.shape, np.shape(value)
        what = (f"{spec.name} ({mode} input dims, shapes {spec.shapes[case_index]}): {op.type} '{op.name}' "
                f"output {k} has static shape {static}, its kernel gives {actual}")
        assert static is None or tf.TensorShape(static).is_compatible_with(actual), what
        if _exact_expected(op):
            assert static is not None and tuple(static) == actual, what


def run_unknown_dims_error_against_tf(spec, mode):
    """The row's `unknown_dims_error` against TensorFlow: building the same graph in
    TensorFlow raises the recorded error in the recorded modes (at the recorded stage), and
    builds in the others."""
    _build_as_recorded(tf_module(), spec, 0, mode)


def define_static_shape_tests(specs, namespace):
    """Adds `test_static_shapes` (see `run_static_shapes`) for `specs` to a test module's
    namespace (`define_tests` does it too): known dims for every shape case, unknown dims
    for the first; and `test_unknown_dims_error_against_tensorflow` for the rows recording
    an `unknown_dims_error`."""
    def marks(s, mode):
        record = s.unknown_dims_error
        if record is None or not record.tapeflow_differs or mode not in record.modes:
            return []
        return [pytest.mark.xfail(strict=True, reason=record.tapeflow_differs)]

    @pytest.mark.parametrize("spec,case,mode", [
        pytest.param(s, i, mode, id=f"{s.name}-{i}-{mode}", marks=marks(s, mode))
        for s in specs for i in range(len(s.shapes)) for mode in STATIC_SHAPE_MODES
        if mode == "known" or i == 0])
    def test_static_shapes(spec, case, mode):
        run_static_shapes(spec, case, mode)

    namespace.update(test_static_shapes=test_static_shapes)
    recorded = [s for s in specs if s.unknown_dims_error is not None]
    if not recorded:
        return

    @pytest.mark.parametrize("spec,mode", [pytest.param(s, mode, id=f"{s.name}-{mode}")
                                           for s in recorded for mode in UNKNOWN_DIMS_MODES])
    def test_unknown_dims_error_against_tensorflow(spec, mode):
        run_unknown_dims_error_against_tf(spec, mode)

    namespace.update(test_unknown_dims_error_against_tensorflow=test_unknown_dims_error_against_tensorflow)


def traced_with_dims(module, fn, arrays, dims):
    """`fn(module, *inputs)` traced by `module.function` for inputs of static dims `dims` (None: unknown),
    run on `arrays`: its output's static shape, its value and the gradients of its float inputs (for
    `differential.same`, so integer inputs such as indices or sizes can be symbolic too)."""
    specs = [module.TensorSpec(d, module.as_dtype(a.dtype)) for a, d in zip(arrays, dims, strict=True)]
    static = []

    def f(*xs):
        floats = [x for x in xs if x.dtype.is_floating]
        with module.GradientTape() as tape:
            tape.watch(floats)
            out = fn(module, *xs)
            static.append(out.shape.as_list())
            y = module.reduce_sum(out * out)
        return out, [module.convert_to_tensor(g) for g in tape.gradient(y, floats)]

    out, grads = module.function(f, input_signature=specs)(*[module.constant(a) for a in arrays])
    return static[0], out, grads


def static_shapes_program(fn, *shapes, dtype="float64"):
    """A differential program (see `differential.same`): `fn(tf, *placeholders)` built in a graph on
    placeholders of `shapes` (None: an unknown dim); it returns the outputs' static shapes."""
    def program(tf):
        with tf.Graph().as_default():
            out = fn(tf, *[tf.compat.v1.placeholder(tf.as_dtype(dtype), s) for s in shapes])
        return [o.shape.as_list() for o in (out if isinstance(out, (list, tuple)) else [out])]
    return program


def traced_static_and_values(module, fn, specs, *args):
    """`fn(module, *xs)` traced by `module.function` with `input_signature` from `specs`
    ([(dims, dtype)], None for unknown dims) and run on `args`: (static output shapes, outputs)."""
    static = []

    def wrapped(*xs):
        out = fn(module, *xs)
        static.append([o.shape.as_list() for o in module.nest.flatten(out)])
        return out
    signature = [module.TensorSpec(dims, dtype) for dims, dtype in specs]
    out = module.function(wrapped, input_signature=signature)(*args)
    return static[0], out
