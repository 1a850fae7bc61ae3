"""`tf.distribute.cluster_resolver`: who the workers of a job are, and which one this process is.

`MultiWorkerMirroredStrategy` learns its cluster from MPI (`MPIClusterResolver`):
one task of type "worker" per MPI rank, `task_id` the rank.  Outside an MPI
launch the job is one process with no cluster, as TensorFlow's strategy without
TF_CONFIG (task_type and task_id None, an empty ClusterSpec).
`SimpleClusterResolver` describes a cluster given by hand.
"""

import abc

from tapeflow.framework.export import populate as _populate, tf_export


class ClusterSpec:
    """A cluster: for each job name, its tasks' addresses (a list, or {task index: address}).

    >>> spec = ClusterSpec({"worker": ["host0:2222", "host1:2222"]})
    >>> spec.jobs, spec.num_tasks("worker"), spec.task_address("worker", 1)
    (['worker'], 2, 'host1:2222')
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to (i) a list of "
                            "network addresses, or (ii) a dictionary mapping integer task indices to network "
                            "addresses.")
        self._jobs = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, (list, tuple)):
                self._jobs[job] = dict(enumerate(tasks))
            elif isinstance(tasks, dict):
                self._jobs[job] = {int(i): address for i, address in tasks.items()}
            else:
                raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary from integers to "
                                "strings.")

    def as_dict(self):
        """{job: [addresses]} when a job's task indices are 0..n-1, else {job: {index: address}}."""
        out = {}
        for job, tasks in self._jobs.items():
            indices = sorted(tasks)
            out[job] = [tasks[i] for i in indices] if indices == list(range(len(indices))) else dict(tasks)
        return out

    @property
    def jobs(self):
        return list(self._jobs)

    def _tasks(self, job_name):
        try:
            return self._jobs[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name):
        return len(self._tasks(job_name))

    def task_indices(self, job_name):
        return sorted(self._tasks(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        """The addresses of the job's tasks by index, None where an index has no task."""
        tasks = self._tasks(job_name)
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self.as_dict() == other.as_dict()

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"

    __str__ = __repr__


@tf_export("distribute.cluster_resolver.ClusterResolver")
class ClusterResolver(abc.ABC):
    """The base of cluster resolvers: `cluster_spec()`, `master()`, `task_type`, `task_id`,
    `num_accelerators()`, `environment`, `rpc_layer`."""

    def __init__(self):
        self._task_type = None
        self._task_id = None
        self._rpc_layer = None

    @abc.abstractmethod
    def cluster_spec(self):
        """The ClusterSpec of the cluster."""

    @abc.abstractmethod
    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """The address of a task (this one by default), prefixed with `rpc_layer` when given."""

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """{accelerator type: count} per worker: none (tapeflow computes on the CPU)."""
        return {}

    @property
    def environment(self):
        return ""

    @property
    def task_type(self):
        return self._task_type

    @task_type.setter
    def task_type(self, task_type):
        self._task_type = task_type

    @property
    def task_id(self):
        return self._task_id

    @task_id.setter
    def task_id(self, task_id):
        self._task_id = task_id

    @property
    def rpc_layer(self):
        return self._rpc_layer

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._rpc_layer = rpc_layer


def _with_layer(address, rpc_layer):
    return f"{rpc_layer}://{address}" if rpc_layer else address


@tf_export("distribute.cluster_resolver.SimpleClusterResolver")
class SimpleClusterResolver(ClusterResolver):
    """A cluster given by hand.

    >>> resolver = SimpleClusterResolver(ClusterSpec({"worker": ["a:1", "b:2"]}), task_type="worker", task_id=1,
    ...                                  rpc_layer="grpc")
    >>> resolver.master("worker", 0), resolver.task_id, resolver.num_accelerators()
    ('grpc://a:1', 1, {})
    """

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="",
                 num_accelerators=None, rpc_layer=None):
        super().__init__()
        self._cluster_spec = cluster_spec
        self._master = master
        self._task_type, self._task_id = task_type, task_id
        self._environment = environment
        self._num_accelerators = {} if num_accelerators is None else num_accelerators
        self._rpc_layer = rpc_layer
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("cluster_spec must be a `tf.train.ClusterSpec`.")
        if not isinstance(master, str):
            raise TypeError("master must be a string.")

    def cluster_spec(self):
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is not None and task_id is not None:
            return _with_layer(self._cluster_spec.task_address(task_type, task_id), rpc_layer or self._rpc_layer)
        return _with_layer(self._master, rpc_layer or self._rpc_layer)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return self._num_accelerators

    @property
    def environment(self):
        return self._environment


class MPIClusterResolver(ClusterResolver):
    """The cluster of an MPI job: one "worker" task per rank, this process's rank its `task_id`
    (addresses "<processor name>/rank:<r>", rpc layer "mpi").  Outside an MPI launch (`mpi`
    None or a job of one process started without a launcher) there is no cluster:
    `task_type` and `task_id` are None and the ClusterSpec is empty, as TensorFlow's
    resolver without TF_CONFIG."""

    def __init__(self, group, launched):
        super().__init__()
        self._group = group
        if launched or group.size > 1:
            self._task_type, self._task_id = "worker", group.rank
            self._rpc_layer = "mpi"
            self._spec = ClusterSpec({"worker": [f"{host}/rank:{r}" for r, host in enumerate(group.hosts())]})
        else:
            self._spec = ClusterSpec({})

    def cluster_spec(self):
        return self._spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is None or task_id is None:
            task_type, task_id = self._task_type, self._task_id
        if task_type is None:
            return ""
        return _with_layer(self._spec.task_address(task_type, task_id), rpc_layer or self._rpc_layer)

    def __repr__(self):
        return f"<MPIClusterResolver task_type={self._task_type!r} task_id={self._task_id!r} {self._spec!r}>"


_populate(__name__)       # this module is also the namespace tf.distribute.cluster_resolver
