"""Parallel lanes: the independent work of different devices in one plan runs at once.

Note [parallel lanes]: a `tf.function` whose body calls `MirroredStrategy.run` holds
every replica's ops, each placed on its replica's device (the trace records placement,
Note [recorded placement] in framework/device.py), and the replicas' ops come in
blocks: replica 0's forward and backward pass, then replica 1's, then the
cross-replica sums, then each replica's updates.  TensorFlow's executor runs the
devices' ops concurrently; a plan ran them one after the other, so two replicas took
twice as long as one.  `schedule` finds blocks that can run at once and the plan
(graph/executor.py, Note [generated plans]) runs each such group's blocks as lanes,
each in its own thread (`run_lanes`); NumPy releases the GIL in its kernels, so the
lanes' matmuls overlap as eager replica threads do (Note [replica threads] in
distribute/mirrored_strategy.py).

A group is a run of consecutive blocks, each a maximal run of steps placed on one
device, on different devices, none of which:
- reads a value another block of the group makes, or writes into a buffer (Note
  [buffer reuse], Note [donated inputs] in graph/executor.py) another reads;
- shares a variable with another unless both only read it;
- holds a stateful op other than a variable write (random numbers, printing,
  collectives, Python functions, control flow and function calls keep their order
  with everything around them), or ops placed on no device.
The steps keep their order within a block, so each lane computes exactly what the
sequential plan computed: the numbers are the same.  A group runs in lanes only when
at least two of its blocks are worth a thread (their outputs hold at least
MIN_LANE_ELEMENTS elements in all; a thread hand-off costs tens of microseconds),
and never when `tf.config.threading.set_inter_op_parallelism_threads(1)` asks for one
thread.  An exception in a lane is raised once every lane has stopped (the first in
lane order).
"""

import concurrent.futures
import math
import threading

MIN_LANE_ELEMENTS = 1 << 16

_lock = threading.Lock()
_pool = None


class _Block:
    """A maximal run of steps on one device: what they read, write and touch."""

    __slots__ = ("device", "steps", "reads", "writes", "clobbers", "variables", "written", "work", "movable")

    def __init__(self, device):
        self.device = device
        self.steps = []
        self.reads, self.writes, self.clobbers = set(), set(), set()
        self.variables, self.written = set(), set()       # ids of the variables used, and written
        self.work = 0
        self.movable = bool(device)

    def add(self, n, step):
        """Adds step `n` (an executor.Step)."""
        op = step.op
        self.steps.append(n)
        self.reads.update(step.ins)
        self.writes.update(step.made())
        if step.buffer is not None:
            self.clobbers.add(step.buffer)
        for k in step.attrs.get("donated", ()) if step.attrs else ():        # Note [donated inputs] in executor.py
            self.clobbers.add(step.ins[k])
        for _, var in step.variables:
            self.variables.add(id(var))
        if op.op_def.writes_variable:
            written = id(op.attrs["var"])
            self.variables.add(written)
            self.written.add(written)
        elif op.op_def.stateful:
            self.movable = False
        for t in op.outputs:
            shape = t._value.shape
            self.work += MIN_LANE_ELEMENTS if shape is None or None in shape else math.prod(shape)

    def conflicts(self, other):
        if self.writes & other.reads or other.writes & self.reads:
            return True
        if self.clobbers & other.reads or other.clobbers & self.reads:
            return True
        shared = self.variables & other.variables
        return bool(shared & (self.written | other.written))


def schedule(steps, threads=0):
    """The plan's steps (executor.Step records) in running order: each item a step index, or
    a tuple of lanes (lists of step indices) to run at once (Note [parallel lanes]);
    `threads`: the inter-op thread setting (1: no lanes)."""
    if threads == 1:
        return list(range(len(steps)))
    blocks = []
    for n, step in enumerate(steps):
        device = step.op.device
        if not blocks or blocks[-1].device != device:
            blocks.append(_Block(device))
        blocks[-1].add(n, step)
    items, group = [], []

    def close():
        if sum(b.work >= MIN_LANE_ELEMENTS for b in group) >= 2:
            items.append(tuple(b.steps for b in group))
        else:
            for b in group:
                items.extend(b.steps)
        group.clear()

    for block in blocks:
        if not block.movable:
            close()
            items.extend(block.steps)
            continue
        if any(b.device == block.device or b.conflicts(block) for b in group):
            close()
        group.append(block)
    close()
    return items


def run_lanes(first, *others):
    """Calls `first` here and each of `others` in a worker thread; returns when all are done,
    raising the first exception (in lane order) if any raised."""
    futures = [_workers().submit(lane) for lane in others]
    error = None
    try:
        first()
    except BaseException as e:           # noqa: BLE001 - re-raised once the other lanes stop
        error = e
    for future in futures:
        e = future.exception()
        if e is not None and error is None:
            error = e
    if error is not None:
        raise error


def _workers():
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="tapeflow-lane")
    return _pool
