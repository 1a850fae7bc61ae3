"""Launching the scripts in scripts/ under `mpiexec -n N`, bounded in time, and reading their results.

A script prints one line `RESULT <json>` per worker (a dict with at least "rank");
`run_mpi` returns them by rank with the return code, the outputs and the time taken.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import tapeflow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def mpiexec():
    """The mpiexec next to this Python (the mpich wheel's), else the one on PATH; skips when none."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install \"tapeflow[mpi]\")")
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec found (pip install \"tapeflow[mpi]\" installs MPICH's)")
    return found


class Run:
    def __init__(self, returncode, stdout, stderr, seconds):
        self.returncode, self.stdout, self.stderr, self.seconds = returncode, stdout, stderr, seconds
        self.results = {}
        # The launcher forwards each rank's output as it comes, so one rank's line may run
        # on into another's: read each record from its "RESULT " marker to its JSON end.
        decoder, at = json.JSONDecoder(), stdout.find("RESULT ")
        while at >= 0:
            record, end = decoder.raw_decode(stdout, at + len("RESULT "))
            self.results[record["rank"]] = record
            at = stdout.find("RESULT ", end)

    def __repr__(self):
        return (f"<mpiexec run: rc={self.returncode} in {self.seconds:.1f}s>\n--- stdout\n{self.stdout[-4000:]}"
                f"\n--- stderr\n{self.stderr[-4000:]}")


def run_mpi(script, *args, n=2, timeout=60, env=None):
    """Runs `python scripts/<script> args...` under `mpiexec -n n`; the whole process group is
    killed (and the test fails) when it takes more than `timeout` seconds."""
    command = [mpiexec(), "-n", str(n), sys.executable, os.path.join(SCRIPTS, script), *map(str, args)]
    environment = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                       PYTHONPATH=os.path.dirname(os.path.dirname(tapeflow.__file__)), **(env or {}))
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=environment, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"`{' '.join(command)}` did not finish within {timeout} s (a hang)\n"
                    f"--- stdout\n{stdout[-4000:]}\n--- stderr\n{stderr[-4000:]}")
    return Run(process.returncode, stdout, stderr, time.monotonic() - start)
