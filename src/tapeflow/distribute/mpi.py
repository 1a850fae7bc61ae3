"""The MPI layer of `MultiWorkerMirroredStrategy`: one process per replica, collectives by mpi4py.

`world()` is the job's communicator (one per process, made on first use by
every process together).  Its methods take and return NumPy arrays:
`all_reduce` (fused sums), `all_gather` (variable-length concatenation in
rank order, for `IndexedSlices`), `reduce_scatter` (its adjoint),
`broadcast` (initial variable values from rank 0) and `barrier`.  A process
no MPI launcher started is a job of one worker and every collective returns
its inputs, as TensorFlow's MultiWorkerMirroredStrategy is one worker without
TF_CONFIG.

Note [MPI collectives]: every collective starts with one small exchange of
metadata: each worker's description of what it is about to do (the kind of
collective, each tensor's dtype and shape; leading dimensions left out where
they may differ) hashed to 16 bytes and all-gathered.  When the digests agree
the data moves; when they differ, the workers all-gather their full
descriptions (with the tensors' names) and every worker raises the same
ValueError naming the first tensor that differs and its dtype and shape on
each worker.  A mismatch therefore never reaches the data exchange, where MPI
would hang or mix bytes of different layouts.  The data of an all-reduce
travels in few messages: the tensors are grouped by wire dtype and small ones
are packed into one contiguous buffer per dtype (one MPI_Iallreduce each);
tensors of at least PACK_LIMIT bytes are reduced from their own buffers,
since packing them would cost a copy larger than the latency it saves.  A
tensor that may be overwritten (a plan's dying input, Note [donated inputs]
in graph/executor.py) is summed in place, which MPICH does in about half the
time of a sum into another buffer (0.9-1.1 against 1.8-2.1 ms for the MLP's
7.4 MB of gradients with 2 workers on the project machine).  Eager tensors are
never overwritten, and copying one into a buffer to sum it in place costs as
much as it saves (7.4 MB copied in 0.9 ms there).
Packs are reduced one after the other: with MPICH, overlapped nonblocking
all-reduces take longer than the same ones in sequence.  float16 and
bfloat16 are summed in float32 and rounded once (MPI has no standard
half-precision sum).  Collectives are started in one order on every worker,
by one thread at a time (a lock), as MPI requires.  Every buffer a
nonblocking call uses stays referenced until the call completes (mpi4py
does not keep them alive).  The data of the variable-size collectives
(all-gather, reduce-scatter) moves by blocking calls, whose count arrays
need not outlive the call: a worker that passed the metadata exchange is
in the data exchange too, and can only fail there by dying or aborting,
which ends the job (Note [MPI faults]).

Note [MPI faults]: a job must end, never hang, when one worker fails.
- An uncaught exception: once a multi-worker strategy exists, `sys.excepthook`
  and `threading.excepthook` print the traceback as before, then say which
  worker failed and call `MPI_Abort`, which ends every process of the job
  (mpiexec returns non-zero within a second).
- A killed worker (SIGKILL, a crash): MPICH's launcher (hydra) sees the
  abnormal exit and kills the others at once ("BAD TERMINATION"); Open MPI's
  mpirun does the same.  Nothing to add.
- A worker that exits normally (end of script, `sys.exit`) while the others
  still wait for it in a collective: the launcher sees a clean exit and waits,
  so the others would hang forever in MPI.  Each worker therefore keeps a
  receive for "leaving" notices posted on a private communicator, and waits
  for a collective together with it (MPI_Waitany); at exit each worker sends
  the notice to all others.  A worker waiting in a collective when a notice
  comes (after a short grace period in which the collective may still finish)
  raises RuntimeError naming the worker that left, which, uncaught, aborts
  the job as above; any later collective raises at once.
- `timeout_seconds` (CommunicationOptions) bounds each wait: past it, the
  collective raises TimeoutError (TensorFlow raises DeadlineExceededError).

Note [MPI waits]: MPI waits by spinning, which is fastest while every process
has a core of its own, but a worker that reaches a collective early then takes
CPU time from the late one whenever processes outnumber cores (a laptop, a
shared node, threads of other programs): the step slows down by the time it
spins.  So the waits in which workers wait for each other to arrive (the
metadata exchange that opens every collective, barriers) are polite: they test
the request in a loop for TAPEFLOW_MPI_SPIN seconds (default 5e-4; "inf"
spins as MPI does), then sleep between tests, 10 us at first and at most
_MAX_PAUSE.  Once the metadata exchange is done every worker is in the
collective, and the data moves under MPI_Waitany, spinning.
"""

import atexit
import hashlib
import os
import pickle
import socket
import sys
import threading
import time

import numpy as np

from tapeflow.framework import dtypes as _dtypes

INSTALL_HINT = 'pip install "tapeflow[mpi]"'

# Environment variables through which MPI launchers tell a process the job's size, and others
# that only a launched process has (MPICH's and Intel MPI's hydra, Open MPI, MVAPICH, PMIx).
_LAUNCHER_SIZE = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
_LAUNCHER_OTHER = ("PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")

PACK_LIMIT = 1 << 18    # bytes: smaller tensors share one packed buffer per dtype (Note [MPI collectives])
_GRACE_SECONDS = 2.0    # a collective may still complete after a worker's leaving notice
_NOTICE_TAG = 7
_ABORT_DELAY = 0.3      # seconds between the last words of a failing worker and MPI_Abort
_SPIN_SECONDS = float(os.environ.get("TAPEFLOW_MPI_SPIN", 5e-4))   # Note [MPI waits]
_MAX_PAUSE = 1e-4       # seconds between tests of a polite wait

_HALF = frozenset({np.dtype(np.float16), _dtypes.bfloat16._np})     # summed in float32


def import_mpi():
    """`mpi4py.MPI`; ImportError naming the extra to install when it is missing."""
    try:
        from mpi4py import MPI      # (optional: the [mpi] extra, needed only by processes an MPI launcher started)
    except ImportError as e:
        raise ImportError(
            f"MultiWorkerMirroredStrategy across processes needs mpi4py and an MPI library: install them "
            f"with `{INSTALL_HINT}` (mpi4py and the MPICH wheel), then launch the script with "
            f"`mpiexec -n 2 python train.py`.") from e
    return MPI


def launched_size(environ=None):
    """The job size an MPI launcher announced in the environment, or None when there is none.

    >>> launched_size({"PMI_SIZE": "4"}), launched_size({})
    (4, None)
    """
    environ = os.environ if environ is None else environ
    for variable in _LAUNCHER_SIZE:
        if variable in environ:
            try:
                return int(environ[variable])
            except ValueError:
                continue
    return None


def launched(environ=None):
    """Whether an MPI launcher (mpiexec, mpirun, srun) started this process.

    >>> launched({"PMIX_RANK": "0"}), launched({})
    (True, False)
    """
    environ = os.environ if environ is None else environ
    return any(v in environ for v in _LAUNCHER_SIZE + _LAUNCHER_OTHER)


_world_lock = threading.Lock()
_world = None


def world():
    """The job's communicator, made on first use (every worker must call it: it is collective).

    A process no MPI launcher started is a job of one worker and does not
    initialize MPI (as TensorFlow's strategy without TF_CONFIG is one worker).  A
    launched process without mpi4py raises ImportError saying what to install,
    rather than letting every process train alone (unless the job has one
    process).
    """
    global _world
    with _world_lock:
        if _world is None:
            MPI = None
            if launched():
                try:
                    MPI = import_mpi()
                except ImportError:
                    if launched_size() != 1:
                        raise
            _world = Communicator(MPI)
        return _world


def _described(spec):
    """A (NumPy dtype, shape) pair as messages show it: float32[784,1024]."""
    dtype, shape = spec
    known = _dtypes._BY_NP.get(np.dtype(dtype))
    return f"{known.name if known is not None else dtype}[{','.join(str(d) for d in shape)}]"


def _mismatch_message(descriptions, size):
    """The ValueError message for workers whose descriptions of one collective differ."""
    kinds = [d[0] for d in descriptions]
    head = f"MultiWorkerMirroredStrategy: the {size} workers disagree in a collective"
    if len(set(kinds)) > 1:         # (the same message on every worker: not this worker's `what`)
        return (f"{head}: they are in different collectives: "
                + ", ".join(f"worker {r}: {k}" for r, k in enumerate(kinds))
                + ". Every worker must run the same collectives in the same order.")
    head = f"{head} {kinds[0]}"
    counts = [len(d[2]) for d in descriptions]
    if len(set(counts)) > 1:
        return (f"{head}: the workers pass different numbers of tensors: "
                + ", ".join(f"worker {r}: {c}" for r, c in enumerate(counts))
                + ". Every worker must reduce the same tensors, in the same order.")
    leading_free = descriptions[0][3]
    for i in range(counts[0]):
        specs = [d[2][i] for d in descriptions]
        if len({(str(dt), s) for dt, s in specs}) > 1:
            names = [d[1][i] for d in descriptions if d[1] and d[1][i]]
            label = f"tensor {i} of {counts[0]}" + (f" ('{names[0]}')" if names else "")
            what_differs = "dtypes or shapes" + (" (past the first dimension)" if leading_free else "")
            return (f"{head}: {label} has different {what_differs} on the workers: "
                    + ", ".join(f"worker {r}: {_described(s)}" for r, s in enumerate(specs))
                    + ". Every worker must pass tensors of the same shapes and dtypes, in the same order.")
    return f"{head}: their descriptions differ: {descriptions!r}"


def _reducible(arrays, names):
    """TypeError for tensors MPI cannot sum (bool, strings, objects)."""
    for i, a in enumerate(arrays):
        if a.dtype.kind not in "fciu" and a.dtype not in _HALF:
            label = names[i] if names and names[i] else f"tensor {i}"
            dtype = _dtypes._BY_NP.get(a.dtype)
            raise TypeError(f"Cannot all-reduce {label} of dtype {dtype.name if dtype else a.dtype} across "
                            "workers: only numeric tensors can be summed. Cast it first (tf.cast).")


def _wire_dtype(dtype):
    return np.dtype(np.float32) if dtype in _HALF else dtype


def _packs(arrays, pack_bytes):
    """Lists of array indices reduced together: per wire dtype, the small arrays in packs of
    at most `pack_bytes` bytes (0: one pack), each large one alone (Note [MPI collectives])."""
    packs, open_packs = [], {}
    for i, a in enumerate(arrays):
        if a.size == 0:
            continue
        wire = _wire_dtype(a.dtype)
        nbytes = a.size * wire.itemsize
        if nbytes >= PACK_LIMIT:
            packs.append([i])
            continue
        current = open_packs.get(wire)
        if current is None or (pack_bytes and current[1] + nbytes > pack_bytes):
            current = open_packs[wire] = [[], 0]
            packs.append(current[0])
        current[0].append(i)
        current[1] += nbytes
    return packs


class Communicator:
    """The workers of one job and the collectives among them (a size-1 job without MPI).

    Attributes:
      rank: this worker's index (MPI rank), 0 without MPI.
      size: the number of workers.
      host: this worker's processor name.
    """

    def __init__(self, MPI, comm=None):
        self._MPI = MPI
        self._lock = threading.RLock()
        self._left = set()        # the workers that announced their exit
        self._broken = None       # why no collective can run any more (a message)
        self._aborting = False
        self._hooks_installed = False
        self.timeout = None       # seconds a wait may last (CommunicationOptions.timeout_seconds)
        self._hosts = None
        if MPI is None:
            self.rank, self.size, self.host = 0, 1, socket.gethostname()
            self._comm = self._notices = None
            return
        base = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.size = base.Get_rank(), base.Get_size()
        self.host = MPI.Get_processor_name()
        self._world_comm = base
        if self.size == 1:
            self._comm = self._notices = None
            return
        self._comm = base.Dup()                 # tapeflow's collectives, apart from the user's own MPI use
        self._notice_comm = base.Dup()          # leaving notices (Note [MPI faults])
        self._notice_buf = np.zeros(1, np.int64)
        self._notices = self._notice_comm.Irecv(self._notice_buf, source=MPI.ANY_SOURCE, tag=_NOTICE_TAG)
        atexit.register(self._leave)

    def __repr__(self):
        return f"<tapeflow MPI communicator: worker {self.rank} of {self.size}>"

    # -- collectives ---------------------------------------------------------------------------

    def all_reduce(self, arrays, names=None, checked=False, pack_bytes=0, donated=()):
        """Sums each array over the workers (Note [MPI collectives]).

        Args:
          arrays: NumPy arrays of numeric dtypes; every worker passes the same dtypes and shapes.
          names: a name per array (or None entries) for error messages.
          checked: the metadata was already checked (`check`) for this call.
          pack_bytes: the most bytes packed into one message (0: no limit).
          donated: the positions of arrays that may be overwritten: those reduced alone are
            summed in place (no new array to fill).

        Returns:
          A list of arrays: the sums, in the arrays' dtypes.

        Raises:
          ValueError: the workers' arrays differ in number, dtype or shape (on every worker).
          TypeError: an array is not numeric.

        >>> [a.tolist() for a in Communicator(None).all_reduce([np.ones(2, np.float32), np.arange(3)])]   # one worker
        [[1.0, 1.0], [0, 1, 2]]
        """
        arrays = [np.asarray(a) for a in arrays]
        _reducible(arrays, names)
        if self.size == 1:
            return arrays
        MPI = self._MPI
        with self._lock:
            if not checked:
                self._check("all-reduce", arrays, names, False)
            out = list(arrays)
            for pack in _packs(arrays, pack_bytes):     # one at a time: faster than overlapped (MPICH)
                wire = _wire_dtype(arrays[pack[0]].dtype)
                if len(pack) == 1:
                    a = arrays[pack[0]]
                    if pack[0] in donated and a.dtype == wire and a.flags.c_contiguous and a.flags.writeable:
                        self._wait(self._comm.Iallreduce(MPI.IN_PLACE, a, op=MPI.SUM), "all-reduce")
                        continue
                    send = np.require(a, wire, "C")
                    recv = np.empty(a.shape, wire)
                    self._wait(self._comm.Iallreduce(send, recv, op=MPI.SUM), "all-reduce")
                    out[pack[0]] = recv if recv.dtype == a.dtype else recv.astype(a.dtype)
                    continue
                recv = np.empty(sum(arrays[i].size for i in pack), wire)
                offset = 0
                for i in pack:
                    n = arrays[i].size
                    recv[offset:offset + n] = arrays[i].reshape(-1)
                    offset += n
                self._wait(self._comm.Iallreduce(MPI.IN_PLACE, recv, op=MPI.SUM), "all-reduce")
                offset = 0
                for i in pack:
                    a = arrays[i]
                    part = recv[offset:offset + a.size].reshape(a.shape)
                    out[i] = part if part.dtype == a.dtype else part.astype(a.dtype)
                    offset += a.size
            for i, a in enumerate(arrays):
                if a.size == 0:
                    out[i] = a.copy()
            return out

    def all_gather(self, arrays, names=None, checked=False):
        """Concatenates each array's values of all workers along axis 0, in rank order.

        The first dimension may differ between workers; the dtype and the other
        dimensions may not.  Used for `IndexedSlices` (indices and values).

        Returns:
          A list of arrays, one per input.

        Raises:
          ValueError: the workers' arrays differ in number, dtype or trailing shape.

        >>> Communicator(None).all_gather([np.arange(3)])[0].tolist()    # one worker
        [0, 1, 2]
        """
        arrays = [np.require(a, requirements="C") for a in arrays]     # (0-d stays 0-d)
        for i, a in enumerate(arrays):
            if a.ndim == 0:
                label = names[i] if names and names[i] else f"tensor {i}"
                raise ValueError(f"Cannot all-gather {label}: it is a scalar; all-gather concatenates along "
                                 "the first dimension.")
        if self.size == 1:
            return arrays
        with self._lock:
            if not checked:
                self._check("all-gather", arrays, names, True)
            rows = self._exchange_counts([a.shape[0] for a in arrays])
            result = []
            for k, a in enumerate(arrays):       # blocking: Note [MPI collectives]
                row_bytes = a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))
                out = np.empty((int(rows[:, k].sum()),) + a.shape[1:], a.dtype)
                self._comm.Allgatherv(_bytes(a), [_bytes(out), [int(n) * row_bytes for n in rows[:, k]]])
                result.append(out)
            return result

    def reduce_scatter(self, arrays, rows, names=None, checked=False):
        """Sums each array over the workers and returns this worker's block of rows: the
        adjoint of `all_gather` (`rows[k]`: this worker's number of rows of array k).

        >>> Communicator(None).reduce_scatter([np.arange(3.0)], [3])[0].tolist()    # one worker
        [0.0, 1.0, 2.0]
        """
        arrays = [np.asarray(a) for a in arrays]
        _reducible(arrays, names)
        if self.size == 1:
            return arrays
        MPI = self._MPI
        with self._lock:
            if not checked:
                self._check("reduce-scatter", arrays, names, False)
            everyone = self._exchange_counts([int(n) for n in rows])
            for k, a in enumerate(arrays):
                if a.ndim == 0 or int(everyone[:, k].sum()) != a.shape[0]:
                    raise ValueError(f"reduce_scatter: tensor {k} has {a.shape[0] if a.ndim else 0} rows, but the "
                                     f"workers' blocks add up to {int(everyone[:, k].sum())}.")
            result = []
            for k, a in enumerate(arrays):       # blocking: Note [MPI collectives]
                wire = _wire_dtype(a.dtype)
                row = int(np.prod(a.shape[1:], dtype=np.int64))
                send = np.require(a, wire, "C")
                recv = np.empty((int(rows[k]),) + a.shape[1:], wire)
                self._comm.Reduce_scatter(send, recv, [int(n) * row for n in everyone[:, k]], op=MPI.SUM)
                result.append(recv if recv.dtype == a.dtype else recv.astype(a.dtype))
            return result

    def broadcast(self, arrays, root=0, names=None, checked=False):
        """The arrays of worker `root`, on every worker (one message for all of them).

        >>> Communicator(None).broadcast([np.arange(2)])[0].tolist()
        [0, 1]
        """
        arrays = [np.require(a, requirements="C") for a in arrays]     # (0-d stays 0-d)
        if self.size == 1:
            return arrays
        with self._lock:
            if not checked:
                self._check("broadcast", arrays, names, False)
            sizes = [a.nbytes for a in arrays]
            buf = np.empty(sum(sizes), np.uint8)
            if self.rank == root:
                offset = 0
                for a, n in zip(arrays, sizes):
                    buf[offset:offset + n] = _bytes(a)
                    offset += n
            self._wait(self._comm.Ibcast(buf, root=root), "broadcast")
            if self.rank == root:
                return arrays
            out, offset = [], 0
            for a, n in zip(arrays, sizes):
                out.append(buf[offset:offset + n].view(a.dtype).reshape(a.shape))
                offset += n
            return out

    def hosts(self):
        """Every worker's processor name, by rank (collective on first use, then cached)."""
        if self.size == 1:
            return [self.host]
        if self._hosts is None:
            mine = np.zeros(256, np.uint8)
            name = self.host.encode()[:256]
            mine[:len(name)] = np.frombuffer(name, np.uint8)
            everyone = np.empty((self.size, 256), np.uint8)
            with self._lock:
                self._wait(self._comm.Iallgather(mine, everyone), "host exchange", polite=True)
            self._hosts = [row.tobytes().rstrip(b"\0").decode(errors="replace") for row in everyone]
        return self._hosts

    def barrier(self):
        """Returns when every worker has called it."""
        if self.size == 1:
            return
        with self._lock:
            self._wait(self._comm.Ibarrier(), "barrier", polite=True)

    def check(self, what, arrays, names=None, leading_free=False):
        """Raises ValueError on every worker when the workers' arrays for the collective
        `what` ("all-reduce", "all-gather", "broadcast", "reduce-scatter") differ
        (Note [MPI collectives]); `leading_free`: the first dimensions may differ."""
        if self.size == 1:
            return
        with self._lock:
            self._check(what, [np.asarray(a) for a in arrays], names, leading_free)

    def _check(self, what, arrays, names, leading_free):
        # the layout every worker must agree on: dtypes, shapes (past the first dimension when it may differ)
        layout = [(str(a.dtype), tuple(int(d) for d in (a.shape[1:] if leading_free else a.shape))) for a in arrays]
        key = repr((what, layout)).encode()
        digest = np.frombuffer(hashlib.blake2b(key, digest_size=16).digest(), np.uint8)
        everyone = np.empty((self.size, 16), np.uint8)
        self._wait(self._comm.Iallgather(digest, everyone), what, polite=True)
        if (everyone == everyone[0]).all():
            return
        mine = np.frombuffer(pickle.dumps(
            (what, [None if not names else names[i] for i in range(len(arrays))],
             [(a.dtype, s) for a, (_, s) in zip(arrays, layout)], leading_free)), np.uint8)
        lengths = np.empty(self.size, np.int64)
        self._wait(self._comm.Iallgather(np.array([mine.size], np.int64), lengths), what)
        everything = np.empty(int(lengths.sum()), np.uint8)
        self._comm.Allgatherv(mine, [everything, [int(n) for n in lengths]])     # blocking: Note [MPI collectives]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        descriptions = [pickle.loads(everything[bounds[r]:bounds[r + 1]].tobytes()) for r in range(self.size)]
        raise ValueError(_mismatch_message(descriptions, self.size))

    def _exchange_counts(self, counts):
        """Every worker's `counts` (a list of ints, equally long everywhere): an int64 array
        [worker, k]."""
        mine = np.array(counts, np.int64)
        everyone = np.empty((self.size, mine.size), np.int64)
        if mine.size:
            self._wait(self._comm.Iallgather(mine, everyone), "count exchange")
        return everyone

    # -- faults (Note [MPI faults]) ------------------------------------------------------------

    def _wait(self, request, what, polite=False):
        """Waits for `request`, failing when a worker left or the wait times out; `polite`:
        a wait for other workers to arrive (Note [MPI waits])."""
        if self._broken is not None:
            raise RuntimeError(self._broken)
        if self.timeout is None and not polite:
            if self._MPI.Request.Waitany([request, self._notices]) == 0:
                return
        elif self._poll(request, what):
            return
        # A worker announced its exit.  The collective may still complete (it finished its
        # part before leaving): give it a moment, then give up.
        left = int(self._notice_buf[0])
        self._left.add(left)
        self._notices = self._notice_comm.Irecv(self._notice_buf, source=self._MPI.ANY_SOURCE, tag=_NOTICE_TAG)
        deadline = time.monotonic() + _GRACE_SECONDS
        while time.monotonic() < deadline:
            if request.Test():
                return
            time.sleep(1e-3)
        self._broken = (f"MPI worker {left} exited while worker {self.rank} waits for it in a collective {what} "
                        "of MultiWorkerMirroredStrategy: it can never complete. Every worker must run the same "
                        "collectives (the same training steps) before it exits.")
        raise RuntimeError(self._broken)

    def _poll(self, request, what):
        """Tests `request` until it completes (True) or a leaving notice comes (False): spinning
        at first, then sleeping between tests (Note [MPI waits]); TimeoutError past `timeout`."""
        start = time.monotonic()
        deadline = None if self.timeout is None else start + self.timeout
        pause = 0.0
        while True:
            if request.Test():
                return True
            if self._notices.Test():
                return False
            now = time.monotonic()
            if deadline is not None and now > deadline:
                self._broken = (f"A collective {what} of MultiWorkerMirroredStrategy did not complete within "
                                f"timeout_seconds={self.timeout} on worker {self.rank}; the job cannot go on.")
                raise TimeoutError(self._broken)
            if now - start > _SPIN_SECONDS:
                time.sleep(pause)
                pause = min(2 * pause or 1e-5, _MAX_PAUSE)

    def install_fault_hooks(self):
        """Makes an uncaught exception in any thread abort the whole job (Note [MPI faults])."""
        if self.size == 1 or self._hooks_installed:
            return
        self._hooks_installed = True
        previous_sys, previous_thread = sys.excepthook, threading.excepthook

        def sys_hook(exc_type, exc, tb):
            try:
                previous_sys(exc_type, exc, tb)
            finally:
                self.abort(exc_type)

        def thread_hook(args):
            if args.exc_type is SystemExit:
                return previous_thread(args)
            try:
                previous_thread(args)
            finally:
                self.abort(args.exc_type, args.thread)

        sys.excepthook = sys_hook
        threading.excepthook = thread_hook

    def abort(self, exc_type=None, thread=None, code=1):
        """Ends every process of the job at once (MPI_Abort), after saying why on stderr."""
        self._aborting = True
        where = f" in thread {thread.name!r}" if thread is not None else ""
        cause = f"an uncaught {exc_type.__name__}{where}" if exc_type is not None else "a fatal error"
        try:
            sys.stderr.write(f"tapeflow: worker {self.rank} of {self.size} stopped on {cause}; aborting every "
                             "process of the job (MPI_Abort).\n")
            sys.stdout.flush()
            sys.stderr.flush()
            time.sleep(_ABORT_DELAY)      # the launcher forwards what was printed before it kills the job
        finally:
            self._world_comm.Abort(code)

    def _leave(self):
        """At exit: tells every other worker this one will join no more collectives."""
        if self._aborting or self._comm is None:
            return
        if self._broken is not None:        # a collective of this worker is still pending: MPI_Finalize would hang
            self.abort(code=1)
            return
        try:
            self._notices.Cancel()
            self._notices.Wait()
            message = np.array([self.rank], np.int64)
            for r in range(self.size):
                if r != self.rank and r not in self._left:
                    self._notice_comm.Send(message, dest=r, tag=_NOTICE_TAG)
        except Exception:       # noqa: BLE001 -- at exit, MPI may already be unusable: nothing to tell
            pass


def _bytes(array):
    """A contiguous array's data as a flat uint8 view."""
    return array.reshape(-1).view(np.uint8)
