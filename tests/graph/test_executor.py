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
    return [step.op.type for step in plan._steps]


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
    freed = [slot for step in plan._steps for slot in step.frees]
    assert len(freed) == 2           # cos and sin outputs; the feed and the fetch stay
    assert plan._feed_slots[0] not in freed


def test_plan_error_names_the_failing_node():
    @tf.function
    def f(x, i):
        return tf.gather(x, i, name="picked") * 2.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="picked"):
        f(tf.constant([1.0, 2.0]), tf.constant(5))


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


def _reused(plan):
    return [(step.op.type, step.buffer) for step in plan._steps if step.buffer is not None]


def test_elementwise_steps_reuse_dying_buffers():
    # Note [buffer reuse]: relu(x @ w + b) writes the sum into the product's buffer, relu into the sum's
    @tf.function
    def f(x, w, b):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w) + b))
    rng = np.random.default_rng(0)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in [(4, 3), (3, 5), (5,)])
    plan = _traced(f, tf.constant(x), tf.constant(w), tf.constant(b))
    assert [t for t, _ in _reused(plan)] == ["AddV2", "Relu"]
    np.testing.assert_allclose(f(tf.constant(x), tf.constant(w), tf.constant(b)).numpy(),
                               np.maximum(x @ w + b, 0).sum(), rtol=1e-5)


def test_buffers_that_live_on_are_not_reused():
    rng = np.random.default_rng(1)
    x, w = (rng.normal(size=s).astype(np.float32) for s in [(2, 3), (3, 4)])
    v = tf.Variable(np.ones((2, 4), np.float32))

    @tf.function
    def f(x, w):
        p = tf.matmul(x, w)
        view = tf.reshape(p, [8])          # a view of p's buffer: p must not be overwritten
        fetched = tf.matmul(x, w) * 1.0    # fetched: returned to the caller
        read = v.read_value()              # the variable's own array
        return view, p + 1.0, fetched, fetched + 2.0, read * 3.0, x * 2.0
    args = (tf.constant(x), tf.constant(w))
    plan = _traced(f, *args)
    assert _reused(plan) == []
    view, p1, fetched, fetched2, read3, x2 = f(*args)
    np.testing.assert_allclose(view.numpy(), (x @ w).reshape(8), rtol=1e-6)
    np.testing.assert_allclose(p1.numpy(), x @ w + 1.0, rtol=1e-6)
    np.testing.assert_allclose(fetched.numpy(), x @ w, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), np.ones((2, 4)))
    np.testing.assert_allclose(x2.numpy(), x * 2.0)


def test_broadcast_inputs_are_not_reused():
    @tf.function
    def f(x, w):
        return tf.matmul(x, w)[:1] * 1.0 + tf.matmul(x, w)        # [1, 4] + [2, 4]: only the [2, 4] one fits
    rng = np.random.default_rng(2)
    x, w = (rng.normal(size=s).astype(np.float32) for s in [(2, 3), (3, 4)])
    out = f(tf.constant(x), tf.constant(w)).numpy()
    np.testing.assert_allclose(out, (x @ w)[:1] + x @ w, rtol=1e-6)


# -- donated inputs and pass-through ops (Notes [donated inputs], [pass-through ops]) -----------------

from tapeflow.framework.op_def import execute, op            # noqa: E402
from tapeflow.framework.shapes import shape_rules

_DONATED = []


@op("TestDoublesDonated", same_dtype=False, num_outputs=-1, stateful=True, shape=shape_rules.unchanged_shapes,
    unknown_rank=True, donates=True)
def _doubles(*xs, donated=()):
    """2 x for each input: donated inputs doubled where they are."""
    _DONATED.append(tuple(donated))
    out = []
    for k, x in enumerate(xs):
        if k in donated:
            x *= 2
            out.append(x)
        else:
            out.append(x * 2)
    return tuple(out)


def _doubled(*xs):
    return list(execute(_doubles, [tf.convert_to_tensor(x) for x in xs], {}))


def _donations(fn, *args):
    _DONATED.clear()
    result = fn(*args)
    return _DONATED[-1], result


def test_a_dying_fresh_input_is_donated_and_the_others_are_not():
    captured = tf.constant(np.full([2, 2], 5.0, np.float32))
    w = tf.constant(np.eye(2, dtype=np.float32))

    @tf.function
    def f(x):
        dies = tf.matmul(x, w)              # fresh, read only by the collective: donated
        again = tf.matmul(w, x) * 3.0       # fresh but read again after the collective
        viewed = tf.reshape(tf.matmul(w, w), [4])      # a view of a fresh array: not its own
        outs = _doubled(dies, again, viewed, x, captured)
        return outs, again * 1.0

    x = tf.constant(np.arange(4.0, dtype=np.float32).reshape(2, 2))
    donated, (outs, again) = _donations(f, x)
    assert donated == (0,)
    xv = x.numpy()
    for got, want in zip(outs, [xv, 3 * xv, np.eye(2).reshape(4), xv, np.full([2, 2], 5.0)]):
        np.testing.assert_array_equal(got.numpy(), 2 * want)
    np.testing.assert_array_equal(again.numpy(), 3 * xv)                 # not overwritten
    np.testing.assert_array_equal(captured.numpy(), np.full([2, 2], 5.0))  # never donated
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0).reshape(2, 2))


def test_inputs_passed_twice_or_fetched_are_not_donated():
    @tf.function
    def twice(x):
        y = tf.matmul(x, x)
        return _doubled(y, y)

    @tf.function
    def fetched(x):
        y = tf.matmul(x, x)
        return _doubled(y), y

    x = tf.constant(np.ones([2, 2], np.float32))
    donated, outs = _donations(twice, x)
    assert donated == ()
    np.testing.assert_array_equal(outs[0].numpy(), np.full([2, 2], 4.0))
    np.testing.assert_array_equal(outs[1].numpy(), np.full([2, 2], 4.0))
    donated, (outs, y) = _donations(fetched, x)
    assert donated == ()
    np.testing.assert_array_equal(y.numpy(), np.full([2, 2], 2.0))


def test_eager_calls_donate_nothing():
    y = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
    donated, outs = _donations(_doubled, y)
    assert donated == ()
    np.testing.assert_array_equal(y.numpy(), np.full([2, 2], 2.0))


def test_custom_gradient_passes_through_and_its_arguments_die_at_their_last_real_reader():
    @tf.custom_gradient
    def scaled(v):
        return v * 3.0, lambda dy: dy * 3.0

    @tf.function
    def f(x):
        g = tf.matmul(x, x)
        out = scaled(g)                     # CustomGradient reads g only for its gradient
        return _doubled(g)[0] + out

    x = tf.constant(np.ones([2, 2], np.float32))
    donated, result = _donations(f, x)
    assert donated == (0,)
    np.testing.assert_array_equal(result.numpy(), np.full([2, 2], 2.0 * 2 + 6.0))
    plan = f.get_concrete_function(x)._plan
    assert "CustomGradient" not in _plan_types(plan)

    with tf.GradientTape() as tape:         # the function's gradient still runs the user's rule
        tape.watch(x)
        y = tf.function(lambda x: scaled(tf.matmul(x, x)))(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full([2, 2], 12.0))


def test_a_fed_pass_through_output_keeps_its_step():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2])

        @tf.custom_gradient
        def ident(v):
            return tf.identity(v), lambda dy: dy

        y = ident(x)
        z = y * 2.0
    plan = Plan(g, [z], [y])
    np.testing.assert_array_equal(plan.run([np.array([1.0, 2.0], np.float32)])[0], [2.0, 4.0])
    plan = Plan(g, [z], [x])
    assert "CustomGradient" not in _plan_types(plan)
    np.testing.assert_array_equal(plan.run([np.array([3.0, 4.0], np.float32)])[0], [6.0, 8.0])
