"""The half-precision column of the op harness (`test_half_precision`, added by `define_tests`).

Each spec row runs in float16 and in bfloat16 on its first shape case, its float inputs
rounded to that dtype.  For a dtype the row's `half_dtypes` lists (those TensorFlow runs
the row in), the check is:

* the row runs forward and backward (a tape over its float inputs);
* its float outputs have the dtype TensorFlow gives them (the half dtype where the float32
  row gives float32), and so do the gradients (their inputs' dtype);
* values and gradients agree with the same row computed in float32 on the same (rounded)
  inputs, within a few units in the last place of the half dtype, None-ness included;
* when TensorFlow is installed: dtypes, values, gradients and None-ness agree with
  TensorFlow's on the same half-precision inputs;
* traced by tf.function with the inputs as arguments (so that compiled plans keep values
  wide between half kernels, Note [half precision in plans] in ops/core/half.py), the row gives
  bit for bit what it gives eagerly, when it traces at all (as its float32 run does).

For a dtype the row leaves out, TensorFlow must refuse the row (so that `half_dtypes` stays
TensorFlow's list); tapeflow may run it (the linear algebra and special functions for which
TensorFlow's CPU build has no half-precision kernel compute in float32 here).
"""

import typing

import ml_dtypes
import numpy as np
import pytest

import tapeflow
from op_harness import HAVE_TF, _sample, _to_numpy_any, _wrt, tf_module

HALF = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}

# Tolerances relative to 1 + |expected|: a few units in the last place (float16 keeps 11
# significant bits, bfloat16 8); TensorFlow may round intermediate results where tapeflow
# computes in float32, and the other way round.
TOL = {"float16": 4e-3, "bfloat16": 3e-2}
TF_TOL = {"float16": 1e-2, "bfloat16": 6e-2}


class Run(typing.NamedTuple):
    dtypes: list          # dtype names of the float outputs
    values: list          # the float outputs, as float64 arrays
    grad_dtypes: list     # dtype names of the gradients (None where there is none)
    grads: list           # the gradients of the weighted outputs, as float64 arrays or None


def _is_float(a):
    return a.dtype.kind == "f" or a.dtype in HALF.values()


def _run(module, fn, arrays, extra, wrt, dtype, traced=False):
    """`fn` on `arrays` (float ones converted to `dtype`) with a tape over the inputs `wrt`;
    the outputs are summed with fixed weights that every dtype holds exactly.  `traced`:
    the whole of it in a tf.function taking the inputs as arguments."""
    xs = [module.constant(a.astype(dtype) if _is_float(a) else a) for a in arrays]
    body = _outputs_and_grads
    if traced:
        body = module.function(lambda *xs: _outputs_and_grads(module, fn, xs, extra, wrt))
        outs, grads = body(*xs)
    else:
        outs, grads = body(module, fn, xs, extra, wrt)
    return Run([o.dtype.name for o in outs], [_to_numpy_any(o).astype(np.float64) for o in outs],
               [None if g is None else g.dtype.name for g in grads],
               [None if g is None else _to_numpy_any(g).astype(np.float64) for g in grads])


def _outputs_and_grads(module, fn, xs, extra, wrt):
    with module.GradientTape() as tape:
        for i in wrt:
            tape.watch(xs[i])
        out = fn(module, *xs, *extra)
        outs = [module.convert_to_tensor(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
        outs = [o for o in outs if o.dtype.is_floating]
        terms = []
        for k, o in enumerate(outs):
            w = np.random.default_rng(1000 + k).uniform(0.5, 1.5, o.shape.as_list()).astype(ml_dtypes.bfloat16)
            terms.append(module.reduce_sum(o * w.astype(o.dtype.as_numpy_dtype)))
        y = module.add_n(terms) if len(terms) > 1 else (terms[0] if terms else None)
    grads = tape.gradient(y, [xs[i] for i in wrt]) if y is not None else [None] * len(wrt)
    return outs, [None if g is None else module.convert_to_tensor(g) for g in grads]


def _compare(got, want, tol, what, grads=True):
    assert len(got.values) == len(want.values), f"{what}: {len(got.values)} float outputs, not {len(want.values)}"
    for k, (a, b) in enumerate(zip(got.values, want.values, strict=True)):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{what}: output {k}")
    if not grads:
        return
    for k, (a, b) in enumerate(zip(got.grads, want.grads, strict=True)):
        assert (a is None) == (b is None), f"{what}: gradient {k} is {a} where {b} was expected"
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=f"{what}: gradient {k}")


def run_half_precision(spec, dtype):
    rng = np.random.default_rng(800)
    arrays, extra = _sample(spec, rng, spec.shapes[0], np.float64)
    if any(a.dtype.kind == "c" for a in arrays) or not any(_is_float(a) for a in arrays):
        pytest.skip(f"{spec.name}: no real float inputs")
    half = HALF[dtype]
    arrays = [a.astype(half) if _is_float(a) else a for a in arrays]   # both runs see the same values
    wrt = [i for i in _wrt(spec, len(arrays)) if _is_float(arrays[i])]
    compare_tf = HAVE_TF and "float32" in spec.dtypes
    if dtype not in spec.half_dtypes:
        if not compare_tf:
            pytest.skip(f"{dtype} is not listed for {spec.name}")
        try:
            _run(tf_module(), spec.tf_fn or spec.fn, arrays, extra, wrt, half)
        except Exception:  # noqa: BLE001 - TensorFlow refuses it, as the row says
            return
        pytest.fail(f"TensorFlow runs {spec.name} in {dtype}: add it to the row's half_dtypes")
    what = f"{spec.name} in {dtype}"
    ours = _run(tapeflow, spec.fn, arrays, extra, wrt, half)
    wide = _run(tapeflow, spec.fn, arrays, extra, wrt, np.float32)
    assert ours.dtypes == [dtype if d == "float32" else d for d in wide.dtypes], f"{what}: output dtypes {ours.dtypes}"
    assert ours.grad_dtypes == [None if g is None else dtype for g in ours.grads], \
        f"{what}: gradient dtypes {ours.grad_dtypes}"
    _compare(ours, wide, TOL[dtype], f"{what} vs float32")
    _compare_traced(spec, arrays, extra, wrt, half, ours, what)
    if not compare_tf:
        return
    try:
        theirs = _run(tf_module(), spec.tf_fn or spec.fn, arrays, extra, wrt, half)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"TensorFlow refuses {spec.name} in {dtype} ({type(e).__name__}): leave {dtype} out of the "
                    "row's half_dtypes")
    assert ours.dtypes == theirs.dtypes, f"{what}: output dtypes {ours.dtypes}, TensorFlow's {theirs.dtypes}"
    _compare(ours, theirs, TF_TOL[dtype], f"{what} vs TensorFlow", grads=spec.check_tf_grad)


def _compare_traced(spec, arrays, extra, wrt, half, eager, what):
    """The row under tf.function gives the eager numbers bit for bit (in float64 here, which
    holds them exactly), when its float32 run traces."""
    try:
        _run(tapeflow, spec.fn, arrays, extra, wrt, np.float32, traced=True)
    except Exception:  # noqa: BLE001 - the row does not trace (it needs Python values of its inputs)
        return
    traced = _run(tapeflow, spec.fn, arrays, extra, wrt, half, traced=True)
    assert traced.dtypes == eager.dtypes and traced.grad_dtypes == eager.grad_dtypes, f"{what}: traced dtypes"
    for kind, got, want in (("output", traced.values, eager.values), ("gradient", traced.grads, eager.grads)):
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert (a is None) == (b is None), f"{what}: traced {kind} {k} is {a} where {b} was expected"
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=f"{what}: traced {kind} {k}")
