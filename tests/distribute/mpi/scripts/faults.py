"""A worker fails while the other waits for it in a collective; the job must end, not hang.

Usage: faults.py MODE, MODE one of
  raise   worker 1's replica raises inside strategy.run (uncaught)
  thread  an uncaught exception in a thread of worker 1
  kill    worker 1 is killed (SIGKILL)
  exit    worker 1 exits normally (sys.exit(0)) before the collective
  timeout worker 1 is late (30 s) and the strategy's CommunicationOptions allow 1 s
Worker 0 prints "waiting" and enters an all-reduce that worker 1 never joins; it prints
"unreachable" if that ever returns.
"""

import json
import os
import signal
import sys
import threading
import time

import tapeflow as tf

mode = sys.argv[1]
options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=1.0 if mode == "timeout" else None)
strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)   # installs the exception hooks
rank = strategy.cluster_resolver.task_id


def all_reduce():
    return strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", tf.ones([3])))


all_reduce()                                                  # both workers are up and connected
if rank == 1:
    if mode == "raise":
        strategy.run(lambda: 1 // tf.constant(1).numpy() and {}["worker 1 failed on purpose"])
    if mode == "thread":
        def fail():
            raise ZeroDivisionError("a thread of worker 1 failed on purpose")
        worker = threading.Thread(target=fail, name="failing-thread")
        worker.start()
        worker.join()
        threading.Event().wait(30)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit":
        sys.exit(0)
    if mode == "timeout":
        time.sleep(30)
print("RESULT " + json.dumps({"rank": rank, "waiting": True}), flush=True)
all_reduce()
print("unreachable", flush=True)
