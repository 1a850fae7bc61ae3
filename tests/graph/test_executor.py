"""The compiled plans behind tf.function and Session.run: pruning, constant
folding, common-subexpression elimination, slot freeing, error mapping and
in-place variable updates.  These are tapeflow's own mechanisms (TensorFlow's
grappler differs), so the tests look at the plan, not at TensorFlow.
"""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.executor import Plan


def _plan_types(plan):
    return [step[-1].type for step in plan._steps]


def _traced(fn, *args):
    concrete = fn.get_concrete_function(*args)
    fn(*args)                       # the plan is compiled on the first call
    return concrete._plan


def test_plan_prunes_to_the_fetches():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        used = tf.exp(x)
        tf.sin(x)                   # not fetched: never runs
    plan = Plan(g, [used], [x])
    assert _plan_types(plan) == ["Exp"]
    np.testing.assert_allclose(plan.run([np.zeros(3, np.float32)])[0], np.ones(3))


def test_plan_folds_constants_and_merges_common_subexpressions():
    @tf.function
    def f(x):
        k = tf.reshape(tf.ones([2, 2]), [4]) * 3.0      # constant: folded when the plan is built
        return tf.sin(x) * k + tf.sin(x)               # sin(x) computed once
    plan = _traced(f, tf.constant(np.arange(4.0, dtype=np.float32)))
    assert _plan_types(plan).count("Sin") == 1
    assert "Reshape" not in _plan_types(plan)
    x = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(f(tf.constant(x)).numpy(), np.sin(x) * 3.0 + np.sin(x), rtol=1e-6)


def test_plan_does_not_merge_stateful_ops_or_variable_reads_across_writes():
    v = tf.Variable(1.0)

    @tf.function
    def f():
        a = v.read_value()
        v.assign_add(1.0)
        b = v.read_value()
        return a, b, tf.random.uniform([]) - tf.random.uniform([])
    a, b, diff = f()
    assert (float(a), float(b)) == (1.0, 2.0)
    assert float(diff) != 0.0


def test_plan_frees_intermediates_after_their_last_use():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        y = tf.exp(tf.sin(tf.cos(x)))
    plan = Plan(g, [y], [x])
    freed = [slot for step in plan._steps for slot in step[6]]
    assert len(freed) == 2           # cos and sin outputs; the feed and the fetch stay
    assert plan._feed_slots[0] not in freed


def test_plan_error_names_the_failing_node():
    @tf.function
    def f(x):
        return tf.reshape(x, [5])
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(tf.constant([1.0, 2.0]))


def test_function_updates_variables_in_place():
    # Note [in-place updates]: neither the call op nor the plan may hold the
    # variable's array while the body runs, or assign_sub would copy it.
    v = tf.Variable(np.ones(1000, np.float32))
    lr = tf.constant(0.5)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * x)
        v.assign_sub(lr * tape.gradient(loss, v))
        return loss
    x = tf.constant(np.full(1000, 2.0, np.float32))
    step(x)
    address = v._value.__array_interface__["data"][0]
    step(x)
    assert v._value.__array_interface__["data"][0] == address
    np.testing.assert_allclose(v.numpy(), np.full(1000, -1.0))


def test_update_copies_when_a_read_is_still_alive():
    v = tf.Variable(np.ones(4, np.float32))

    @tf.function
    def f():
        return v.read_value()
    before = f()
    tf.function(lambda: v.assign_sub(tf.ones(4)))()
    np.testing.assert_allclose(before.numpy(), np.ones(4))      # the earlier read kept its value
    np.testing.assert_allclose(v.numpy(), np.zeros(4))
