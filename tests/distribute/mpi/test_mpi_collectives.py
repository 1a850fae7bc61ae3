"""The MPI collectives (distribute/mpi.py, distribute/mpi_ops.py) under `mpiexec -n 2`: values,
dtypes, gradients eagerly and in tf.function, and mismatches raising the same error on every
worker.  One mpiexec run (scripts/collectives.py) holds all the checks."""

import sys

import ml_dtypes
import numpy as np
import pytest

from mpi_launch import SCRIPTS, run_mpi

sys.path.insert(0, SCRIPTS)
from listing import listed  # noqa: E402 -- the scripts' own printing

N = 2


@pytest.fixture(scope="module")
def results():
    run = run_mpi("collectives.py", n=N, timeout=120)
    assert run.returncode == 0, run
    assert sorted(run.results) == list(range(N)), run
    return run.results


def _inputs(rank):      # scripts/collectives.py's inputs of worker `rank`
    return [np.full((2, 3), rank + 1, np.float32), np.arange(4) * (rank + 1), np.full(3, 0.5 + rank, np.float16),
            np.full(2, 1.5 * (rank + 1), ml_dtypes.bfloat16), np.zeros((0, 3)),
            np.linspace(0, 1, 100_000) * (rank + 1), np.float64(rank), np.array([1 + 2j * rank], np.complex64)]


def _close(got, want):
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _close(got[k], want[k])
    elif isinstance(want, list) and want and isinstance(want[0], (list, dict)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=1e-6, atol=1e-9)


def test_fused_all_reduce_sums_every_dtype(results):
    per_rank = [_inputs(r) for r in range(N)]
    want = []
    for parts in zip(*per_rank):
        dtype = parts[0].dtype
        wide = np.float32 if dtype in (np.float16, ml_dtypes.bfloat16) else dtype   # Note [MPI collectives]
        want.append(np.sum([p.astype(wide) for p in parts], axis=0).astype(dtype))
    for r in range(N):
        _close(results[r]["all_reduce"], listed(want))
        _close(results[r]["all_reduce_small_packs"], listed(want))
        assert results[r]["all_reduce_dtypes"] == [str(a.dtype) for a in want]


def test_all_gather_reduce_scatter_broadcast(results):
    gathered = [np.concatenate([np.arange(r + 1) + 10 * r for r in range(N)]),
                np.concatenate([np.full((r + 1, 2), r, np.float16) for r in range(N)])]
    whole = N * np.arange(N * (N + 1) // 2, dtype=np.float32)
    bounds = np.cumsum([0] + [r + 1 for r in range(N)])
    for r in range(N):
        _close(results[r]["all_gather"], listed(gathered))
        _close(results[r]["reduce_scatter"], listed([whole[bounds[r]:bounds[r + 1]]]))
        _close(results[r]["broadcast"], [[0.0, 0.0], True, [[0.5, 0.5], [0.5, 0.5]]])
        _close(results[r]["broadcast_op"], [[0.0, 0.0]])
        assert results[r]["broadcast_scalar"] == [[], 7.0]          # a scalar stays a scalar


def test_all_reduce_gradients_eagerly_and_in_tf_function(results):
    # worker r: s0 = sum_w (w+1) x, s1 = sum_w y_w^2 (y_w = 1+w), loss = |s0|^2 + s1; the gradient of an
    # all-reduce is the all-reduce of the output gradients (TensorFlow's rule)
    x = np.array([1.0, 2.0])
    s0 = sum(w + 1 for w in range(N)) * x
    s1 = sum((1.0 + w) ** 2 for w in range(N))
    for r in range(N):
        want = [s0, [[s1]], N * 2 * s0 * (r + 1), [[N * 2 * (1.0 + r)]]]
        for key in ("eager_step", "graph_step", "graph_step_again"):
            _close(results[r][key], [np.asarray(w).tolist() for w in want])


def test_all_gather_gradient_is_this_workers_block_of_the_summed_gradient(results):
    rows = [np.arange(2 * (r + 1), dtype=np.float32).reshape(r + 1, 2) for r in range(N)]
    g = np.concatenate(rows)
    bounds = np.cumsum([0] + [r + 1 for r in range(N)])
    for r in range(N):
        want = [g.tolist(), (N * 2 * g)[bounds[r]:bounds[r + 1]].tolist()]
        _close(results[r]["gather_eager"], want)
        _close(results[r]["gather_graph"], want)


def test_indexed_slices_stay_sparse_in_rank_order(results):
    indices = np.concatenate([np.arange(r + 1) for r in range(N)])
    values = np.concatenate([[[1.0 + r, 2.0]] * (r + 1) for r in range(N)])
    for r in range(N):
        assert results[r]["slices_type"] == "IndexedSlices"
        _close(results[r]["slices"], [indices.tolist(), values.tolist(), [5, 2]])


def test_forward_mode_and_vectorized_jacobians_through_all_reduce(results):
    for r in range(N):
        _close(results[r]["jvp"], [[2.0 * N, 0.0]])            # d(sum_w x^2) along e0 at x = [1, 2]
        _close(results[r]["jacobian"], [(N * 2 * (r + 1) * np.diag([1.0, 2.0])).tolist()])


def test_collectives_nothing_reads_still_run_in_tf_function(results):
    for r in range(N):
        _close(results[r]["unused_then_used"], [[float(sum(range(N)))]])


def test_mismatches_raise_the_same_error_on_every_worker(results):
    errors = [results[r]["errors"] for r in range(N)]
    assert all(e == errors[0] for e in errors), errors          # the very same message everywhere
    shape, count, dtype, graph = errors[0]
    assert shape[0] == "ValueError"
    assert ("tensor 1 of 2 ('dense/kernel:0') has different dtypes or shapes on the workers: "
            "worker 0: float32[3,1], worker 1: float32[3,2]") in shape[1]
    assert count[0] == "ValueError" and "different numbers of tensors: worker 0: 1, worker 1: 2" in count[1]
    assert dtype[0] == "ValueError" and "worker 0: float32[2], worker 1: float64[2]" in dtype[1]
    assert graph[0] == "InvalidArgumentError" and "worker 0: float32[1], worker 1: float32[2]" in graph[1]
    for r in range(N):
        _close(results[r]["after_errors"], [[float(N)]])       # nothing is left hanging: MPI goes on
