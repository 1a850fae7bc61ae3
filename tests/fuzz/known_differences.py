"""Deliberate differences from TensorFlow that the program fuzzer accepts, each with its reason.

Two sources:

* the spec rows' own flags (tests/ops/test_*.py), reused rather than repeated here:
  `check_tf_grad=False` (TensorFlow's gradient is wrong or a convention there; ours is the
  derivative): the gradients of everything upstream of that row are not compared with
  TensorFlow; `tf_second_order_skip` (TensorFlow's second order is wrong there): the
  second-order stage of a program with that row is not compared.  The reason is the
  comment on the row.
* `KNOWN`: differences a program shows that no single row does.

`OPEN_BUGS` holds real tapeflow bugs the fuzzer found and that are still open, each
labelled "BUG (open):" with its repro, so that the CI test stays deterministic and green
while they are fixed; a fixed bug's entry must be removed (`test_open_bugs_still_fail`
fails when an entry no longer reproduces).  Real bugs never go into `KNOWN`.
"""

import dataclasses
from typing import Optional


def spec_reasons(row):
    """(reason the gradients upstream of `row` are not compared with TensorFlow, reason the second
    order of a program with `row` is not compared), from the row's flags (None: compared)."""
    spec = row.spec
    grad = None if spec.check_tf_grad else f"{row.key} sets check_tf_grad=False (TensorFlow differs by convention)"
    second = grad
    if spec.tf_second_order_skip:
        second = (f"{row.key} sets tf_second_order_skip={tuple(spec.tf_second_order_skip)} "
                  "(TensorFlow's second order is wrong there)")
    return grad, second


@dataclasses.dataclass(frozen=True)
class Entry:
    """Findings of `kind` in `stage` (None: any) of programs using every row of `rows`."""
    kind: str
    stage: Optional[str]
    rows: tuple
    reason: str
    path: Optional[str] = None     # a prefix of the finding's path ("values", "grads.x0"), None: any
    tf_nan: bool = False           # only where TensorFlow's side of the finding holds NaN
    detail_has: str = ""           # only findings whose detail contains this text
    seed: Optional[int] = None     # a run_long.py seed showing it (OPEN_BUGS: checked to still fail)

    def matches(self, program, finding):
        return (finding.kind == self.kind and (self.stage is None or finding.stage == self.stage)
                and set(self.rows) <= set(program.rows())
                and (self.path is None or finding.path.startswith(self.path))
                and (not self.tf_nan or "nan" in finding.detail.split("TensorFlow", 1)[-1])
                and self.detail_has in finding.detail)


# Deliberate differences: TensorFlow is wrong (or differs by accident) and tapeflow gives the
# mathematically right answer.
KNOWN = [
    # v0 = segment_mean(x0, [1, 1, 2, 2]); v1 = cumsum(2 tanh(v0), axis=-1): TensorFlow's second order is
    # NaN everywhere (its SegmentMean gradient divides by the count of the empty segment 0, and that
    # 0/0 meets a nonzero upstream second-order term); ours is finite and matches central differences.
    Entry("value", "second", ("reduction.segment_mean",), "TensorFlow's second order through SegmentMean with an "
          "empty segment is NaN (0/0 on its count); ours matches central differences", tf_nan=True, seed=128),
    # v0 = segment_max(x0, [1, 2, 2, 3]); v1 = qr(x1 + 0.05 tanh(sum v0)): the same with SegmentMax (its
    # gradient divides by the number of maxima per segment, 0 for the empty segment 0).
    Entry("value", "second", ("reduction.segment_max",), "TensorFlow's second order through SegmentMax with an "
          "empty segment is NaN (0/0 on its count of maxima); ours matches central differences", tf_nan=True,
          seed=1080),
    Entry("value", "second", ("reduction.segment_min",), "TensorFlow's second order through SegmentMin with an "
          "empty segment is NaN (0/0 on its count of minima); ours matches central differences", tf_nan=True,
          seed=283),
    # v0 = reduce_euclidean_norm(x0, axis=1); loss = <clip_by_value(x1, x2, x3 + 0.1 tanh(sum v0)), w>: where the
    # gradient reaching EuclideanNorm is 0 TensorFlow's second order is NaN (tape in tape on
    # sum(0 * reduce_euclidean_norm(x, 1)) gives NaN); ours is 0 and matches central differences.
    Entry("value", "second", ("reduction.reduce_euclidean_norm",), "TensorFlow's second order through "
          "EuclideanNorm is NaN where its upstream gradient is 0; ours matches central differences", tf_nan=True,
          seed=4453),
    Entry("value", "second", ("reduction.reduce_euclidean_norm_all",), "TensorFlow's second order through "
          "EuclideanNorm is NaN where its upstream gradient is 0; ours matches central differences", tf_nan=True),
    # v0 = xlog1py(x0, x1) with zeros in x0, v2 = v0 * einsum('...ii->...i', x2), bessel_i1(2 tanh(v2)): TensorFlow's
    # second order is NaN at x0 == 0, where the first-order gradient of x0 is TensorFlow's convention 0 (the
    # row's numeric_wrt); ours differentiates that convention (0).
    Entry("value", "second", ("math.xlog1py_zeros",), "TensorFlow's second order of xlog1py at x == 0 is NaN; "
          "ours follows its first-order convention there", tf_nan=True),
    # v0 = tf.nn.bias_add(x0, x1, data_format="NCHW") with x0 of rank 2: eager TensorFlow adds along axis 1,
    # its graph shape function rejects rank 2 ("Shape must be at least rank 3"); tapeflow adds in both.
    Entry("tf.function-only", "function", ("nn.bias_add_nchw",), "TensorFlow's BiasAdd shape function rejects "
          "rank 2 with NCHW in tf.function though its eager kernel accepts it",
          detail_has="TensorFlow raised ValueError", seed=423),
    # v0 = qr(x0) with x0 of shape (0, 2), differentiated inside tf.function: TensorFlow's graph fails
    # (InvalidArgumentError in the gradient's MatMul); eager TensorFlow and tapeflow (eager and traced) agree.
    Entry("tf.function-only", "function", ("linalg.qr",), "TensorFlow's QR gradient fails in tf.function for an "
          "empty matrix (eager TensorFlow works)", detail_has="TensorFlow raised InvalidArgumentError", seed=1029),
    # v0 = segment_sum(x0, ids); v1 = sigmoid(x1 + 0.5 tanh(v0)): TensorFlow's second order raises TypeError
    # (IndexedSlices * float in math_grad.py's SigmoidGrad/EluGrad gradients, which the IndexedSlices
    # gradient of SegmentSum's gather reaches); ours matches central differences.
    Entry("exception-class", "second", (), "TensorFlow's second order raises TypeError when an IndexedSlices "
          "gradient reaches the gradient of SigmoidGrad/TanhGrad/EluGrad-like ops; ours matches central differences",
          detail_has="TensorFlow raised TypeError(\"unsupported operand type(s) for *: 'IndexedSlices'", seed=245),
    # v0, v1 = moments(x0); loss = <v1, w>: TensorFlow's variance reads stop_gradient(mean), so the gradient
    # with respect to the mean output is None; ours differentiates through the mean (exact second order, see
    # the moments rows' tf_second_order_skip), and d variance / d mean is 0 (up to rounding) at the mean.
    Entry("none-ness", None, ("nn.moments",), "TensorFlow's variance in tf.nn.moments reads stop_gradient(mean): "
          "None for the mean output, ours ~0", path="grads.v"),
    Entry("none-ness", None, ("nn.moments_keepdims",), "TensorFlow's variance in tf.nn.moments reads "
          "stop_gradient(mean): None for the mean output, ours ~0", path="grads.v", seed=220),
]

# Rows whose gradient is not the limit of central differences at the fuzzer's step (1e-6), though it
# is at the op harness's larger one: leaves upstream of them get no central-difference check.
NOT_SMOOTH = {
    "math.cast": "cast(cast(x, float16), x.dtype) + x: piecewise constant at a 1e-6 step, where the gradient "
                 "(1 + 1, the Cast gradient passing through) is a convention",
}

# Real tapeflow bugs found by the fuzzer and not fixed yet ("BUG (open):" + repro).
OPEN_BUGS = []     # none open (the last, a sparse gradient through x + scalar in tf.function, is fixed)


def tensorflow_crashes(program, stage):
    """Why TensorFlow would abort the whole process on `program` in `stage` (then that stage
    compares tapeflow's tf.function with its own eager run instead), or None."""
    for node in program.nodes:
        if (stage == "function" and node.kind == "row" and node.row.key.startswith("conv.max_pool")
                and any(0 in f.shape for f in node.feeds)):
            return ("TensorFlow aborts on the max-pool gradient of a size-0 input in tf.function "
                    "(MklMaxPoolingGradOp: Check failed: dtype() == expected_dtype)")
    return None


def classify(program, findings):
    """`findings` with those matching an entry of KNOWN / OPEN_BUGS recategorized."""
    out = []
    for f in findings:
        if f.category in ("mismatch", "internal"):
            entry = next((e for e in KNOWN if e.matches(program, f)), None)
            if entry is not None:
                f = dataclasses.replace(f, category="known", detail=f"{entry.reason}: {f.detail}")
            else:
                entry = next((e for e in OPEN_BUGS if e.matches(program, f)), None)
                if entry is not None:
                    f = dataclasses.replace(f, category="open-bug", detail=f"{entry.reason}: {f.detail}")
        out.append(f)
    return out
