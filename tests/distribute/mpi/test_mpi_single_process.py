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
    for variable in mpi._LAUNCHER_SIZE + mpi._LAUNCHER_OTHER:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_without_a_launcher_a_process_is_one_worker_and_mpi_is_not_initialized(monkeypatch):
    monkeypatch.setattr(mpi, "_world", None)
    for variable in mpi._LAUNCHER_SIZE + mpi._LAUNCHER_OTHER:
        monkeypatch.delenv(variable, raising=False)
    had_mpi = "mpi4py.MPI" in sys.modules
    group = mpi.world()
    assert (group.rank, group.size) == (0, 1) and group._MPI is None
    assert ("mpi4py.MPI" in sys.modules) == had_mpi


def test_a_launched_job_of_one_process_without_mpi4py_is_one_worker(without_mpi4py):
    without_mpi4py.setenv("PMI_SIZE", "1")
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


@pytest.mark.parametrize("variable, value", [("PMI_SIZE", "2"), ("PMIX_RANK", "0")])
def test_launched_processes_without_mpi4py_name_the_extra_to_install(without_mpi4py, variable, value):
    without_mpi4py.setenv(variable, value)
    with pytest.raises(ImportError, match=r'pip install "tapeflow\[mpi\]"'):
        mpi.world()


def test_import_mpi_names_the_extra(without_mpi4py):
    with pytest.raises(ImportError, match=r'mpi4py and an MPI library: install them with `pip install '
                                          r'"tapeflow\[mpi\]"`'):
        mpi.import_mpi()


def test_non_numeric_tensors_cannot_be_summed(without_mpi4py):
    with pytest.raises(TypeError, match="Cannot all-reduce flags of dtype bool"):
        mpi.world().all_reduce([np.ones(2), np.ones(2, bool)], names=[None, "flags"])


def test_launcher_environment():
    assert mpi.launched_size({"OMPI_COMM_WORLD_SIZE": "3"}) == 3
    assert mpi.launched_size({"PMI_SIZE": "x"}) is None
    assert mpi.launched_size({}) is None
    assert mpi.launched({"OMPI_COMM_WORLD_RANK": "1"}) and not mpi.launched({"HOME": "/"})


# -- the ops and the strategy in a job of one worker (this process; MPI not initialized) ----------

@pytest.fixture
def one_worker(without_mpi4py):
    return mpi.world()


def test_collective_ops_of_one_worker_are_identities_with_gradients(one_worker):
    import tapeflow as tf
    from tapeflow.distribute import mpi_ops

    x = tf.constant([[1.0, 2.0]])

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            (s,) = mpi_ops.all_reduce([x * 3.0], one_worker)
            (g,) = mpi_ops.all_gather([s], one_worker)
            (b,) = mpi_ops.broadcast([g], one_worker)
            loss = tf.reduce_sum(b * g)
        return b, tape.gradient(loss, x)

    for fn in (f, tf.function(f)):
        b, dx = fn(x)
        assert b.numpy().tolist() == [[3.0, 6.0]]
        assert dx.numpy().tolist() == [[9.0, 18.0]]      # through g only (a broadcast has no gradient): 3 b = 9x


def test_multi_worker_strategy_of_one_worker(one_worker):
    import tapeflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    assert strategy.num_replicas_in_sync == 1 and not strategy.extended._in_multi_worker_mode()
    assert (resolver.task_type, resolver.task_id, resolver.cluster_spec().as_dict()) == (None, None, {})
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("MEAN", v * 2.0))
    assert strategy.reduce("SUM", out, axis=None).numpy().tolist() == [2.0, 4.0]
    assert strategy.gather(out, axis=0).numpy().tolist() == [2.0, 4.0]


def test_communication_options_and_resolver_checks(one_worker):
    import tapeflow as tf
    from tapeflow.distribute.cluster_resolver import ClusterSpec

    options = tf.distribute.experimental.CommunicationOptions
    with pytest.raises(ValueError, match="`bytes_per_pack` must be >=0"):
        options(bytes_per_pack=-1)
    assert options(implementation="ring").implementation is tf.distribute.experimental.CommunicationImplementation.RING
    merged = options(bytes_per_pack=4).merge(options(timeout_seconds=2.0))
    assert (merged.bytes_per_pack, merged.timeout_seconds) == (4, 2.0)
    with pytest.raises(ValueError, match="communication_options must be"):
        tf.distribute.MultiWorkerMirroredStrategy(communication_options={"bytes_per_pack": 4})
    two = tf.distribute.cluster_resolver.SimpleClusterResolver(ClusterSpec({"worker": ["a:1", "b:1"]}),
                                                               task_type="worker", task_id=1)
    with pytest.raises(ValueError, match="takes its cluster from MPI"):
        tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=two)
    one = tf.distribute.cluster_resolver.SimpleClusterResolver(ClusterSpec({"worker": ["a:1"]}), task_type="worker",
                                                               task_id=0)
    assert tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=one).cluster_resolver is one
