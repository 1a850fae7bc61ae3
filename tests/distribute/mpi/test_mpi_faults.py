"""Faults under mpiexec: a failed or vanished worker ends the whole job within seconds
(Note [MPI faults] in distribute/mpi.py), each run bounded in time."""

import pytest

from mpi_launch import run_mpi


@pytest.mark.parametrize("mode, message", [
    ("raise", "KeyError: 'worker 1 failed on purpose'"),
    ("thread", "ZeroDivisionError: a thread of worker 1 failed on purpose"),
])
def test_an_uncaught_exception_aborts_every_worker(mode, message):
    run = run_mpi("faults.py", mode, timeout=60)
    assert run.returncode != 0, run
    assert message in run.stderr, run
    assert "worker 1 of 2 stopped on an uncaught" in run.stderr and "MPI_Abort" in run.stderr, run
    assert run.results[0]["waiting"] and "unreachable" not in run.stdout, run
    assert run.seconds < 20, run


def test_a_killed_worker_ends_the_job():
    # MPICH's launcher (hydra) kills the other processes when one dies (Note [MPI faults])
    run = run_mpi("faults.py", "kill", timeout=90)
    assert run.returncode != 0, run
    assert "unreachable" not in run.stdout, run
    assert run.seconds < 60, run


def test_a_worker_exiting_early_fails_the_one_waiting_for_it():
    run = run_mpi("faults.py", "exit", timeout=90)
    assert run.returncode != 0, run
    assert "RuntimeError: MPI worker 1 exited while worker 0 waits for it in a collective" in run.stderr, run
    assert "worker 0 of 2 stopped on an uncaught RuntimeError" in run.stderr, run
    assert "unreachable" not in run.stdout, run
    assert run.seconds < 60, run


def test_a_collective_past_its_timeout_fails():
    run = run_mpi("faults.py", "timeout", timeout=90)
    assert run.returncode != 0, run
    assert "TimeoutError: A collective all-reduce of MultiWorkerMirroredStrategy did not complete within " \
           "timeout_seconds=1.0 on worker 0" in run.stderr, run
    assert "unreachable" not in run.stdout, run
    assert run.seconds < 20, run
