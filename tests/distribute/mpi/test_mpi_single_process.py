"""The MPI layer without mpiexec or without mpi4py: a job of one worker, or a clear ImportError
when a launcher started several processes but mpi4py is missing.  In this process, without
initializing MPI (mpi4py is hidden)."""

import sys

import numpy as np
import pytest

from tapeflow.distribute import mpi


@pytest.fixture
def without_mpi4py(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)       # `import mpi4py` raises ImportError
    monkeypatch.setattr(mpi, "_world", None)
    for variable in mpi._LAUNCHER_SIZE:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_without_mpi4py_a_process_is_a_job_of_one_worker(without_mpi4py):
    group = mpi.world()
    assert (group.rank, group.size) == (0, 1)
    x, y = np.arange(3.0), np.ones((2, 2), np.float16)
    out = group.all_reduce([x, y])
    assert out[0] is x and out[1] is y
    assert group.all_gather([x])[0].tolist() == [0.0, 1.0, 2.0]
    assert group.broadcast([x])[0].tolist() == [0.0, 1.0, 2.0]
    assert group.hosts() == [group.host]
    group.barrier()
    before = sys.excepthook
    group.install_fault_hooks()          # a job of one worker has nobody to abort: hooks stay as they are
    assert sys.excepthook is before


def test_several_processes_without_mpi4py_name_the_extra_to_install(without_mpi4py):
    without_mpi4py.setenv("PMI_SIZE", "2")
    with pytest.raises(ImportError, match=r'pip install "tapeflow\[mpi\]"'):
        mpi.world()


def test_import_mpi_names_the_extra(without_mpi4py):
    with pytest.raises(ImportError, match=r'mpi4py and an MPI library: install them with `pip install '
                                          r'"tapeflow\[mpi\]"`'):
        mpi.import_mpi()


def test_non_numeric_tensors_cannot_be_summed(without_mpi4py):
    with pytest.raises(TypeError, match="Cannot all-reduce flags of dtype bool"):
        mpi.world().all_reduce([np.ones(2), np.ones(2, bool)], names=[None, "flags"])


def test_launcher_sizes():
    assert mpi.launched_size({"OMPI_COMM_WORLD_SIZE": "3"}) == 3
    assert mpi.launched_size({"PMI_SIZE": "x"}) is None
    assert mpi.launched_size({}) is None
