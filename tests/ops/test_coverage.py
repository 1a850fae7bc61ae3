"""Every registered op type must be exercised by some spec row (forward or gradient)."""

import importlib
import pathlib

import numpy as np

import tapeflow
from tapeflow.framework import op_def

import op_harness

# Op types exercised by dedicated feature tests instead of spec rows, with where.
COVERED_ELSEWHERE = {
    "ReadVariableOp": "tests/eager, tests/framework: every gradient w.r.t. a Variable",
    "ResourceGather": "tests/eager: IndexedSlices gradients of tf.gather on a Variable",
    "AssignVariableOp": "tests/graph: variable writes inside tf.function and TF1 sessions",
    **{t: "tests/graph/test_function_variables.py, tests/framework/test_variables.py: variable writes"
       for t in ("AssignAddVariableOp", "AssignSubVariableOp", "ResourceScatterUpdate", "ResourceScatterAdd",
                 "ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv", "ResourceScatterMax",
                 "ResourceScatterMin", "ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub")},
    "NonFiniteReport": "tests/mixed_precision/test_nonfinite_report.py: the host op reporting a rejected round inside tf.function / TF1 sessions",
    "NoOp": "tests/graph/test_function_variables.py: TF1 variable initializers",
    "Const": "tests/graph: folded into plans, its kernel never runs",
    "Placeholder": "tests/graph: fed, its kernel only raises when a feed is missing (graph/graph.py)",
    "PlaceholderWithDefault": "tests/test_compat_v1.py: fed and defaulted in TF1 sessions, against TensorFlow",
    "Rank": "tests/graph/test_unknown_rank.py: tf.rank of a graph tensor of unknown rank (else a constant)",
    "ReducedShape": "tests/graph/test_unknown_rank.py: gradients of reductions of an input of unknown rank, "
                    "in tf.function and vectorized",
    "Assert": "tests/graph/test_autograph.py: a staged loop that must run once to define a variable (zero_iterations)",
    # String ops: no float inputs for a spec row to sample, nothing to differentiate.
    **{t: "tests/ops/test_string_ops.py: differential tests against TensorFlow, eager and in tf.function"
       for t in ("StringJoin", "StringLength", "StringUpper", "StringLower", "AsString", "StringToNumber",
                 "StringSplitV2")},
    **{t: "tests/test_print.py: tf.print and tf.strings.format against TensorFlow, eager, in tf.function, "
          "in control flow and in TF1 sessions" for t in ("StringFormat", "PrintV2")},
    "SparseReduceSumSparse": "tests/ops/test_sparse_ops.py: tf.sparse.reduce_sum(output_is_sparse=True) against "
                             "TensorFlow (not differentiable, as TensorFlow's)",
    **{t: "tests/distribute/mpi: MPI collectives under mpiexec -n 2 (values, gradients, tf.function)"
       for t in ("MpiAllReduce", "MpiAllGather", "MpiReduceScatter", "MpiBroadcast")},
    "EagerPyFunc": "tests/test_py_func.py: tf.py_function against TensorFlow (its Python function decides "
                   "what it computes; gradients eagerly, in tf.function and by tf.gradients)",
}


def _all_specs():
    specs = []
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
        if path.stem == "test_coverage":
            continue
        module = importlib.import_module(path.stem)
        specs.extend(getattr(module, "SPECS", []))
    return specs


def _run_once(spec, case):
    rng = np.random.default_rng(case)
    arrays, extra = op_harness._sample(spec, rng, spec.shapes[case], np.float64)
    xs = [tapeflow.constant(a) for a in arrays]
    wrt = op_harness._wrt(spec, len(xs))
    with tapeflow.GradientTape(persistent=True) as outer:
        with tapeflow.GradientTape() as tape:
            tape.watch([xs[i] for i in wrt])
            outer.watch([xs[i] for i in wrt])
            y = op_harness._scalarize(spec.fn(tapeflow, *xs, *extra))
        if y is not None:
            grads = tape.gradient(y, [xs[i] for i in wrt])
            if spec.second_order:
                total = [tapeflow.reduce_sum(tapeflow.convert_to_tensor(g)) for g in grads if g is not None]
                if total:
                    outer.gradient(tapeflow.add_n(total) if len(total) > 1 else total[0], [xs[i] for i in wrt])


def test_every_op_type_has_a_row():
    seen = set()
    originals = {}
    for type_, op_ in op_def._OPS.items():
        originals[type_] = op_.kernel

        def traced(*args, __type=type_, __kernel=op_.kernel, **kwargs):
            seen.add(__type)
            return __kernel(*args, **kwargs)
        op_.kernel = traced
    try:
        for spec in _all_specs():
            for case in range(len(spec.shapes)):
                try:
                    _run_once(spec, case)
                except Exception:  # failures are reported by the spec's own tests
                    pass
    finally:
        for type_, kernel in originals.items():
            op_def._OPS[type_].kernel = kernel
    ours = {t for t, o in op_def._OPS.items() if o.__module__.startswith("tapeflow")}   # not test-defined ops
    missing = sorted(ours - seen - set(COVERED_ELSEWHERE))
    assert not missing, f"op types without a spec row exercising them: {missing}"


def test_every_spec_module_runs_the_graph_and_static_shape_checks():
    """A module with spec rows also runs them through `tf.gradients` in a graph (define_graph_tests)
    and checks their ops' shape rules against the kernels (define_tests / define_static_shape_tests)."""
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
        module = importlib.import_module(path.stem)
        if getattr(module, "SPECS", None):
            missing = [t for t in ("test_graph_mode", "test_static_shapes") if not hasattr(module, t)]
            assert not missing, f"{path.name} has spec rows but no {missing}: call define_graph_tests / define_tests"
