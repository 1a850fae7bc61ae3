"""A training step under MultiWorkerMirroredStrategy with `mpiexec -n 2` gives the weights of one
replica on the concatenated batch: dense (MLP) and sparse (gather embedding, IndexedSlices)
gradients, SGD with momentum, eagerly and in tf.function; the weights are identical on every
worker and start from worker 0's (scripts/training.py)."""

import pytest

from mpi_launch import run_mpi

N = 2
CASES = ["mlp_eager", "mlp_graph", "embedding_eager", "embedding_graph"]


@pytest.fixture(scope="module")
def results():
    run = run_mpi("training.py", n=N, timeout=180)
    assert run.returncode == 0, run
    assert sorted(run.results) == list(range(N)), run
    return run.results


@pytest.mark.parametrize("case", CASES)
def test_weights_match_one_replica_on_the_whole_batch(results, case):
    for rank in range(N):
        r = results[rank][case]
        assert r["iterations"] == 3
        assert r["moved"] > 1e-2                    # the steps changed the weights
        assert r["max_error"] < 1e-5, r              # ... as one replica on the whole batch does


@pytest.mark.parametrize("case", CASES)
def test_every_worker_ends_with_the_same_weights_and_losses(results, case):
    assert len({results[rank][case]["digest"] for rank in range(N)}) == 1
    assert len({tuple(results[rank][case]["losses"]) for rank in range(N)}) == 1


def test_sparse_gradients_travel_as_indexed_slices(results):
    for rank in range(N):
        for mode in ("eager", "graph"):
            assert results[rank][f"mlp_{mode}"]["collectives"]["all_gather"] == 0
            assert results[rank][f"embedding_{mode}"]["collectives"]["all_gather"] > 0     # kept sparse
            assert results[rank][f"mlp_{mode}"]["collectives"]["all_reduce"] > 0
