"""Faults in MirroredStrategy's replica threads end `run` promptly with the exception raised
(never a hang: each test is bounded in time), and leave the strategy usable."""

import threading
import time

import pytest

import tapeflow as tf

LIMIT = 20      # seconds: far more than any of these runs takes


def bounded(fn, seconds=LIMIT):
    """`fn()` run in a thread that must finish within `seconds` (its result or its exception)."""
    outcome = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as e:      # noqa: BLE001 -- handed to the test
            outcome["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"did not finish within {seconds} s: a hang"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def strategy():
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def _rid():
    return int(tf.distribute.get_replica_context().replica_id_in_sync_group)


def _all_reduce(value):
    return tf.distribute.get_replica_context().all_reduce("SUM", value)


def _usable(strategy):
    result = bounded(lambda: strategy.run(lambda: _all_reduce(tf.constant(1.0) * 1.0)))
    assert [float(v) for v in strategy.experimental_local_results(result)] == [2.0, 2.0]


class Boom(Exception):
    pass


@pytest.mark.parametrize("failing", [0, 1])
def test_exception_while_the_other_replica_waits_at_a_merge_call(strategy, failing):
    def replica_fn():
        if _rid() == failing:
            time.sleep(0.05)            # the other replica is waiting at the all-reduce by then
            raise Boom(f"replica {failing} failed")
        return _all_reduce(tf.constant(1.0) * 1.0)

    before = threading.active_count()
    with pytest.raises(Boom, match=f"replica {failing} failed"):
        bounded(lambda: strategy.run(replica_fn))
    assert threading.active_count() == before       # the replica threads are gone
    _usable(strategy)


def test_exception_while_the_other_replica_still_computes(strategy):
    def replica_fn():
        if _rid() == 0:
            raise Boom("early")
        time.sleep(0.3)
        return _all_reduce(tf.constant(1.0) * 1.0)

    start = time.perf_counter()
    with pytest.raises(Boom, match="early"):
        bounded(lambda: strategy.run(replica_fn))
    assert time.perf_counter() - start < 5
    _usable(strategy)


def test_exception_in_a_merge_function(strategy):
    def merge_fn(_, value):
        raise ValueError("bad merge")

    def replica_fn():
        return tf.distribute.get_replica_context().merge_call(merge_fn, args=(tf.constant(1.0) * 1.0,))

    with pytest.raises(ValueError, match="bad merge"):
        bounded(lambda: strategy.run(replica_fn))
    _usable(strategy)


def test_exception_while_tracing_a_function(strategy):
    def replica_fn():
        if _rid_tensor_free() == 1:
            raise Boom("traced failure")
        return _all_reduce(tf.constant(1.0) * 1.0)

    @tf.function
    def step():
        return strategy.run(replica_fn)

    with pytest.raises(Exception, match="traced failure"):
        bounded(step)
    _usable(strategy)
    assert [float(v) for v in strategy.experimental_local_results(bounded(tf.function(
        lambda: strategy.run(lambda: _all_reduce(tf.constant(2.0) * 1.0)))))] == [4.0, 4.0]


def _rid_tensor_free():
    """The replica id as a Python int while tracing (the context knows it statically)."""
    return tf.distribute.get_replica_context()._replica_id


def test_different_numbers_of_merge_calls(strategy):
    def replica_fn():
        if _rid() == 1:
            return tf.constant(0.0)
        return _all_reduce(tf.constant(1.0) * 1.0)

    with pytest.raises(RuntimeError, match="different number of replica_context"):
        bounded(lambda: strategy.run(replica_fn))
    _usable(strategy)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_mismatched_shapes_raise_a_clear_value_error(strategy, mode):
    def replica_fn():
        rid = _rid_tensor_free()
        return _all_reduce([tf.ones([2]), tf.ones([rid + 1, 3])])

    run = lambda: strategy.run(replica_fn)       # noqa: E731
    with pytest.raises(ValueError) as info:
        bounded(run if mode == "eager" else tf.function(run))
    message = str(info.value)
    assert "value 1 of the 2 in the batch" in message
    assert "replica 0: float32[1, 3]" in message and "replica 1: float32[2, 3]" in message
    _usable(strategy)


def test_mismatched_dtypes_and_sparse_rows(strategy):
    def dtypes_fn():
        return _all_reduce(tf.ones([2], tf.float32 if _rid() == 0 else tf.float64))

    with pytest.raises(ValueError, match=r"replica 0: float32\[2\], replica 1: float64\[2\]"):
        bounded(lambda: strategy.run(dtypes_fn))

    def sparse_fn():
        width = 3 if _rid() == 0 else 4
        slices = tf.IndexedSlices(tf.ones([2, width]), tf.constant([0, 1]), tf.constant([5, width]))
        return _all_reduce(slices)

    with pytest.raises(ValueError, match=r"IndexedSlices of float32 rows \[3\].*rows \[4\]"):
        bounded(lambda: strategy.run(sparse_fn))
    _usable(strategy)


def test_replicas_creating_different_variables(strategy):
    def replica_fn():
        if _rid() == 1:
            return tf.Variable(1.0)
        return tf.constant(1.0)

    with pytest.raises(RuntimeError, match="created more variables than replica 0"):
        bounded(lambda: strategy.run(replica_fn))
    _usable(strategy)


def test_many_runs_leave_no_threads(strategy):
    before = threading.active_count()
    for _ in range(20):
        strategy.run(lambda: _all_reduce(tf.constant(1.0) * 1.0))
    assert threading.active_count() == before
