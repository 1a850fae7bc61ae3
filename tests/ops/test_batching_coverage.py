"""Every registered op type has a batching rule (ops/core/vectorization.py), or a reason not to."""

import tapeflow  # noqa: F401  (registers every op)
from tapeflow.framework import op_def

# Op types without a batching rule, with the reason.  An op here runs once per example
# inside vectorized code (with a warning), or never meets a batched input.
NO_BATCH_RULE = {
    "Const": "no inputs: never meets a batched tensor",
    "Placeholder": "no inputs: never meets a batched tensor",
    "NoOp": "no inputs: never meets a batched tensor",
    "ReadVariableOp": "its one input is a Variable, never batched (the value read is shared by every example)",
    "Range": "the output's length depends on start, limit and delta: batched ones run per example",
    "StringSplitV2": "the output's length depends on the value: the fallback splits each example's string",
    "NonFiniteReport": "a host op reporting a rejected training step (mixed precision), not vectorized code",
    "SparseReduceSumSparse": "its output's number of entries depends on the indices: the fallback runs it "
                             "per example",
    "EagerPyFunc": "tf.py_function runs Python on one example's values: the fallback calls it once per example "
                   "(TensorFlow's pfor falls back to a loop for it too)",
    **{t: "an MPI collective whose output's first dimension depends on every worker's rows: the fallback runs "
          "it once per example, in the same order on every worker" for t in ("MpiAllGather", "MpiReduceScatter")},
    # A batch of TensorArrays is a batch of lists (the fallback loop's per-example lists): no op
    # works on stacked lists, and a TensorArray in vectorized code is written example by example.
    **{t: "TensorArray list ops: a batch of lists runs through the fallback, one list per example"
       for t in ("TensorListSetItem", "TensorListGetItem", "TensorListStack", "TensorListFromTensor",
                 "TensorListGather", "TensorListScatter", "TensorListLength", "TensorListAddN",
                 "TensorListReserve", "TensorListClearItem")},
}

_LIBRARIES = ("tapeflow", "numpy", "scipy", "ml_dtypes")      # kernels of tapeflow's own ops (not tests')


def _own_ops():
    return {t: o for t, o in op_def._OPS.items() if o.__module__.split(".")[0] in _LIBRARIES}


def test_every_op_type_has_a_batching_rule():
    missing = sorted(t for t, o in _own_ops().items() if o.batch_rule is None and t not in NO_BATCH_RULE)
    assert not missing, (f"op types without a batching rule: {missing}. Declare one next to the op "
                         "(`@op.def_batch`, or `batch=` in its declaration: Note [batching rules] in "
                         "ops/core/vectorization.py), or list the op in NO_BATCH_RULE with the reason.")


def test_the_exceptions_are_real_ops_without_rules():
    ops = _own_ops()
    stale = sorted(t for t in NO_BATCH_RULE if t not in ops or ops[t].batch_rule is not None)
    assert not stale, f"NO_BATCH_RULE lists op types that are not registered or now have a rule: {stale}"
