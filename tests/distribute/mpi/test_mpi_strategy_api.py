"""The strategy API across MPI workers (scripts/strategy_api.py under `mpiexec -n 2`): the
cluster resolver, run, reduce, all_reduce (dense, nested, IndexedSlices, its gradient),
merge_call with reduce_to / batch_reduce_to, values from a function, gather, variables
started from worker 0's values and updated by their aggregation, eagerly and in tf.function."""

import pytest

from mpi_launch import run_mpi

N = 2
WORKERS = range(N)


@pytest.fixture(scope="module")
def results():
    run = run_mpi("strategy_api.py", n=N, timeout=180)
    assert run.returncode == 0, run
    assert sorted(run.results) == list(WORKERS), run
    return run.results


def test_cluster_resolver_and_replicas(results):
    for r in WORKERS:
        c = results[r]["cluster"]
        assert (c["task_type"], c["task_id"], c["num_workers"], c["replicas"]) == ("worker", r, N, N)
        assert c["master"].startswith("mpi://") and c["master"].endswith(f"/rank:{r}")
        assert c["accelerators"] == {} and c["multi_worker"] is True and c["experimental"] is True
        assert c["devices"] == ["/job:localhost/replica:0/task:0/device:CPU:0"]
        assert c["should_checkpoint"] == (r == 0)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_run_and_all_reduce(results, mode):
    x = [1.0, 2.0, 3.0]
    total = sum(w + 1 for w in WORKERS)
    mean_id = sum(WORKERS) / N
    for r in WORKERS:
        got = results[r][f"run_{mode}"]
        assert got["replica_id"] == r and got["in_sync"] == N
        assert got["sum"] == [total * v for v in x]
        assert got["mean"] == [[v + mean_id for v in x], mean_id]
        assert got["nested"]["dense"] == [N * v for v in x]
        # IndexedSlices stay sparse: every worker's rows, in rank order
        assert got["nested"]["sparse"]["indices"] == [i for w in WORKERS for i in (w, 2)]
        assert got["nested"]["sparse"]["values"] == [[w + 1.0] * 2 for w in WORKERS for _ in range(2)]


def test_reduce(results):
    total = sum(w + 1 for w in WORKERS)
    for r in WORKERS:
        got = results[r]["reduce"]
        assert got["sum"] == got["graph_sum"] == [total * 1.0, total * 2.0]
        assert got["mean"] == [total / N, 2 * total / N]
        assert got["sum_axis"] == 3.0 * total and got["mean_axis"] == 3.0 * total / (2 * N)
        assert got["local"] == [[r + 1.0, 2.0 * (r + 1)]]            # this worker's replica only
        assert results[r]["values_from_function"] == [r]


def test_gather_concatenates_every_worker_in_rank_order(results):
    for r in WORKERS:
        by_rows, by_columns = results[r]["gather"]
        assert by_rows == [[float(w)] * 2 for w in WORKERS]
        assert by_columns == [[float(w) for w in WORKERS]] * 2


def test_all_gather_and_its_gradient_across_workers(results):
    # worker w gives w+1 rows of ones; y = sum(gathered * position) on every worker
    total = sum(w + 1 for w in WORKERS)
    for r in WORKERS:
        start = sum(w + 1 for w in WORKERS if w < r)
        want_grad = [[N * (2 * row + c) for c in range(2)] for row in range(start, start + r + 1)]
        for gathered, grad in results[r]["all_gather"]:          # eagerly, then in tf.function
            assert gathered == [[1.0, 1.0]] * total
            assert grad == want_grad


def test_all_reduce_gradient_is_the_all_reduce_of_the_gradient(results):
    # y = sum_w (w+1) x, loss = |y|^2: dloss/dy = 2y, all-reduced (N 2y), times this worker's (r+1)
    y = [sum(w + 1 for w in WORKERS) * v for v in (1.0, 2.0)]
    for r in WORKERS:
        want = [N * 2 * v * (r + 1) for v in y]
        assert results[r]["all_reduce_gradient"] == [want, want]


def test_merge_call_with_reduce_to_and_batch_reduce_to(results):
    total = sum(w + 1 for w in WORKERS)
    want = [[total * 1.0, total * 2.0], [total / N, 2.0 * total / N], sum(WORKERS) / N]
    for r in WORKERS:
        assert results[r]["merge_call"] == [want, want]


def test_variables_start_from_worker_0s_values(results):
    for r in WORKERS:
        assert results[r]["initial"] == {"python": 10.0, "array": [0.0, 0.0], "tensor": [0.0, 0.0],
                                         "callable": [0], "in_function": [1.0, 1.0]}
        assert results[r]["in_function_again"] == [1.0, 1.0]


def test_variable_updates_follow_their_aggregation_on_every_worker(results):
    total = sum(w + 1.0 for w in WORKERS)
    for r in WORKERS:
        assert results[r]["aggregated"] == {"SUM": total, "MEAN": total / N, "ONLY_FIRST_REPLICA": 1.0}


def test_a_mismatch_across_workers_raises_the_same_value_error(results):
    errors = [results[r]["mismatch"] for r in WORKERS]
    assert all(e == errors[0] for e in errors)
    assert errors[0][0] == "ValueError"
    assert "worker 0: float32[1], worker 1: float32[2]" in errors[0][1]
    for r in WORKERS:
        assert results[r]["after_mismatch"] == float(N)


def test_small_packs_give_the_same_sums(results):
    total = sum(w + 1 for w in WORKERS)
    for r in WORKERS:
        assert results[r]["small_packs"] == [[total * 1.0, total * 2.0, total * 3.0], total, [0.5 * N]]
