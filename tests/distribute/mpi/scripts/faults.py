"""A worker fails while the other waits for it in a collective; the job must end, not hang.

Usage: faults.py MODE, MODE one of
  raise   worker 1 raises an uncaught exception
  thread  an uncaught exception in a thread of worker 1
  kill    worker 1 is killed (SIGKILL)
  exit    worker 1 exits normally (sys.exit(0)) before the collective
Worker 0 prints "waiting" and enters an all-reduce that worker 1 never joins; it prints
"unreachable" if that ever returns.
"""

import json
import os
import signal
import sys
import threading

import numpy as np

from tapeflow.distribute import mpi

mode = sys.argv[1]
group = mpi.world()
group.install_fault_hooks()
group.all_reduce([np.ones(3)])           # both workers are up and connected
if group.rank == 1:
    if mode == "raise":
        raise ZeroDivisionError("worker 1 failed on purpose")
    if mode == "thread":
        def fail():
            raise KeyError("a thread of worker 1 failed on purpose")
        worker = threading.Thread(target=fail, name="failing-thread")
        worker.start()
        worker.join()
        threading.Event().wait(30)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit":
        sys.exit(0)
print("RESULT " + json.dumps({"rank": group.rank, "waiting": True}), flush=True)
group.all_reduce([np.ones(3)])
print("unreachable", flush=True)
