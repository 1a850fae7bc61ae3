"""TF1-style graphs, differential against TensorFlow: `Graph().as_default()`,
`compat.v1.placeholder`, `compat.v1.Session.run` with nested fetches and feeds,
feed errors, fetching by name, `name_scope` and `control_dependencies`."""

import collections

import numpy as np
import pytest

import tapeflow
from differential import Raised, run, same

Pair = collections.namedtuple("Pair", ["a", "b"])


def _session_program(build, feeds_of, fetches_of=lambda t: t):
    """A program building a graph with `build(tf)` and running `fetches_of(tensors)`
    with `feeds_of(tensors)` in a Session."""
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            tensors = build(tf)
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run(fetches_of(tensors), feed_dict=feeds_of(tensors))
    return prog


def test_placeholder_and_run():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        return x, tf.reduce_sum(x * 2.0, axis=1)
    same(_session_program(build, lambda t: {t[0]: [[1.0, 2.0], [3.0, 4.0]]}, lambda t: t[1]))


def test_executing_eagerly_in_graph():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            inside = tf.executing_eagerly()
            x = tf.compat.v1.placeholder(tf.float32, [2])
        return inside, tf.executing_eagerly(), x.shape.as_list(), x.dtype, x.graph is g
    same(prog)


def test_graph_tensor_static_shapes():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 3])
            w = tf.constant(np.ones((3, 4), np.float32))
            y = tf.matmul(x, w)
            z = tf.reshape(y, [-1])
            s = tf.reduce_sum(y, axis=0)
            c = tf.concat([x, x], axis=1)
        return [t.shape.as_list() for t in (y, z, s, c)]
    same(prog)


def test_nested_fetches():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [3])
        y = tf.compat.v1.placeholder(tf.int32, [])
        return x, y, x * 2.0, tf.reduce_sum(x), y + 1
    feeds = lambda t: {t[0]: np.array([1.0, 2.0, 3.0], np.float32), t[1]: 4}
    fetches = lambda t: {"a": [t[2], (t[3], t[4])], "b": Pair(t[4], [t[2]]), "c": t[3]}
    same(_session_program(build, feeds, fetches))


def test_fetch_scalar_returns_numpy_scalar():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float64, [])
        return x, x * x
    prog = _session_program(build, lambda t: {t[0]: 3.0}, lambda t: t[1])
    ours = same(prog)
    assert isinstance(ours, np.float64)


def test_run_same_graph_several_times_and_tensor_feed_of_intermediate():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2])
            h = x * 3.0
            y = h + 1.0
        with tf.compat.v1.Session(graph=g) as sess:
            a = sess.run(y, {x: [1.0, 2.0]})
            b = sess.run(y, {x: [5.0, 6.0]})
            c = sess.run(y, {h: [10.0, 20.0]})       # feeding an intermediate tensor
            d = sess.run([y, h], {x: [0.0, 1.0]})
        return a, b, c, d
    same(prog)


@pytest.mark.parametrize("value", [
    np.zeros((3,), np.float32),              # wrong rank
    np.zeros((2, 3), np.float32),            # wrong dimension
    [["a", "b"], ["c", "d"]],                # strings
    [[1.0, 2.0], [3.0]],                     # ragged
], ids=["rank", "dim", "str", "ragged"])
def test_feed_errors(value):
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        return x, x + 1.0
    prog = _session_program(build, lambda t: {t[0]: value}, lambda t: t[1])
    assert isinstance(run(prog, tapeflow), Raised)
    same(prog)


def test_feed_int_into_float_converts():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [2])
        return x, x * 0.5
    same(_session_program(build, lambda t: {t[0]: np.array([1, 2], np.int64)}, lambda t: t[1]))


def test_feed_float_into_int_placeholder():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.int32, [2])
        return x, x + 1
    same(_session_program(build, lambda t: {t[0]: np.array([1.5, 2.0])}, lambda t: t[1]))


def test_missing_feed_raises():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [2])
        return x, x + 1.0
    prog = _session_program(build, lambda t: {}, lambda t: t[1])
    assert isinstance(run(prog, tapeflow), Raised)
    same(prog)


def test_fetch_by_name():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
            y = x * 2.0
        with tf.compat.v1.Session(graph=g) as sess:
            by_name = sess.run(y.name, {"x:0": [1.0, 2.0]})
            mixed = sess.run([y, y.name], {x: [3.0, 4.0]})
            op = sess.run(y.op.name, {x: [3.0, 4.0]})
        return by_name, mixed, op, x.name, g.get_tensor_by_name("x:0") is x, g.get_operation_by_name("x") is x.op
    same(prog)


def test_names_and_name_scope():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [], name="x")
            x2 = tf.compat.v1.placeholder(tf.float32, [], name="x")
            with tf.name_scope("layer") as scope:
                p = tf.compat.v1.placeholder(tf.float32, [], name="p")
                y = x + p
                with tf.name_scope("inner") as inner:
                    q = tf.compat.v1.placeholder(tf.float32, [], name="q")
            with tf.name_scope("layer") as again:
                r = tf.compat.v1.placeholder(tf.float32, [], name="p")
        return x.name, x2.name, p.name, q.name, r.name, scope, inner, again, y.name.startswith("layer/")
    same(prog)


def test_fetch_unknown_name_raises():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
            x + 1.0
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run("nothing:0", {x: [1.0, 2.0]})
    same(prog)


def test_fetch_tensor_of_other_graph_raises():
    def prog(tf):
        g1, g2 = tf.Graph(), tf.Graph()
        with g1.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2])
            y = x + 1.0
        with g2.as_default():
            tf.constant(1.0)
        with tf.compat.v1.Session(graph=g2) as sess:
            return sess.run(y, {x: [1.0, 2.0]})
    same(prog)


def test_fetch_only_tensor_of_other_graph_raises():
    def prog(tf):
        g1, g2 = tf.Graph(), tf.Graph()
        with g1.as_default():
            y = tf.compat.v1.placeholder(tf.float32, [2]) + 1.0
        with g2.as_default():
            tf.constant(1.0)
        with tf.compat.v1.Session(graph=g2) as sess:
            return sess.run(y)
    same(prog)


def test_feed_unknown_name_raises():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
            y = x + 1.0
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run(y, {"nothing:0": [1.0, 2.0]})
    same(prog)


def test_feed_tensor_value_raises():
    def prog(tf):
        value = tf.constant([1.0, 2.0])
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
            y = x + 1.0
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run(y, {x: value})
    same(prog)


def test_placeholder_eager_raises():
    def prog(tf):
        return tf.compat.v1.placeholder(tf.float32, [2])
    same(prog)


def test_graph_variables_in_session():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(2.0)
            x = tf.compat.v1.placeholder(tf.float32, [])
            y = v * x
            with tf.control_dependencies([y]):
                update = v.assign_add(1.0)
        with tf.compat.v1.Session(graph=g) as sess:
            if hasattr(tf.compat.v1, "global_variables_initializer"):
                sess.run(tf.compat.v1.global_variables_initializer())
            first = sess.run([y, update], {x: 3.0})
            second = sess.run(y, {x: 3.0})
        return first, second
    same(prog)


def test_control_dependencies_order():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(1.0)
            x = tf.compat.v1.placeholder(tf.float32, [])
            a = v.assign(x)
            with tf.control_dependencies([a]):
                r = v.read_value() * 2.0
        with tf.compat.v1.Session(graph=g) as sess:
            if hasattr(tf.compat.v1, "global_variables_initializer"):
                sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(r, {x: 5.0})
    same(prog)


def test_runtime_error_in_session():
    def build(tf):
        x = tf.compat.v1.placeholder(tf.float32, [None])
        i = tf.compat.v1.placeholder(tf.int32, [])
        return x, i, tf.gather(x, i)
    prog = _session_program(build, lambda t: {t[0]: [1.0, 2.0], t[1]: 7}, lambda t: t[2])
    same(prog)


def test_closed_session_raises():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [])
            y = x + 1.0
        sess = tf.compat.v1.Session(graph=g)
        sess.close()
        return sess.run(y, {x: 1.0})
    same(prog)


def test_fetch_operation_returns_none():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(1.0)
            x = tf.compat.v1.placeholder(tf.float32, [])
            op = v.assign_add(x).op
        with tf.compat.v1.Session(graph=g) as sess:
            if hasattr(tf.compat.v1, "global_variables_initializer"):
                sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run([op], {x: 2.0}), sess.run(v.read_value())
    same(prog)


# -- variables in TF1 graphs: collections, initializers, per-session values ----------------------

def test_variable_collections_names_and_initializers():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            with tf.name_scope("block"):
                v = tf.Variable(1.0)
                w = tf.Variable(2.0, name="w")
            x = tf.compat.v1.Variable(3.0, trainable=False)
            init = tf.compat.v1.global_variables_initializer()
            names = ([u.name for u in tf.compat.v1.global_variables()],
                     [u.name for u in tf.compat.v1.trainable_variables()],
                     [u.name for u in tf.compat.v1.global_variables("block")],
                     v.initializer.name, w.initializer.type, v.initial_value.shape, v.shape, v.dtype,
                     x.trainable, isinstance(x, tf.Variable), init.name, init.type,
                     sorted(c.name for c in init.control_inputs))
        return (names, [u.name for u in tf.compat.v1.global_variables()], tf.compat.v1.global_variables_initializer(),
                tf.compat.v1.variables_initializer([]), tf.Variable(1.0).initializer)
    same(prog)


UNINITIALIZED = {
    "fetch_variable": lambda tf, v: v,
    "read": lambda tf, v: v.read_value() * 2.0,
    "assign_add": lambda tf, v: v.assign_add([1.0, 1.0]),
    "scatter_add": lambda tf, v: v.scatter_add(tf.IndexedSlices(tf.constant([1.0]), tf.constant([0]))),
    "assign_initializes": lambda tf, v: v.assign([5.0, 5.0]),
    "gather": lambda tf, v: tf.gather(v, [1]),
    "sparse_read": lambda tf, v: v.sparse_read([0]),
}


@pytest.mark.parametrize("name", list(UNINITIALIZED))
def test_variable_before_its_initializer(name):
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable([1.0, 2.0])
            fetch = UNINITIALIZED[name](tf, v)
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run(fetch), sess.run(v)     # two runs: TF1 does not order a write and a read in one
    same(prog)


def test_variable_writes_in_session():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable([1.0, 2.0, 3.0])
            a = v.assign_add([1.0, 1.0, 1.0])
            s = v.scatter_add(tf.IndexedSlices(tf.constant([10.0]), tf.constant([1])))
            n = v.scatter_nd_update([[2]], [7.0])
            b = v.assign([0.0, 0.0, 0.0], read_value=False)
            c = a * 2.0                        # reads after the write a runs
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            out = [sess.run(a), sess.run(a), sess.run(s), sess.run(s), sess.run(n), sess.run(v), sess.run(b),
                   sess.run(v), sess.run(c)]
            return out, type(b).__name__, b.type, a.op.type, s.op.type, n.op.type
    same(prog)


def test_writes_are_not_ordered_without_control_dependencies():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(1.0)
            v.assign(10.0)
            b = v.assign_add(2.0)
            r = v.read_value()
            with tf.control_dependencies([b]):
                after = v.read_value()
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(b), sess.run(r), sess.run(b), sess.run(r), sess.run(after)
    same(prog)


def test_variables_initializer_subset_and_rerun():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable([1.0, 2.0], name="v")
            w = tf.Variable(v.initial_value * 2.0, name="w")
            u = tf.Variable(3.0)
            init = tf.compat.v1.variables_initializer([v, w])
            up = v.assign_add([1.0, 1.0])
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(init)
            first = sess.run([v, w])
            sess.run(up)
            sess.run(v.initializer)
            return first, sess.run(v), run(lambda _: sess.run(u), None), init.name
    same(prog)


def test_initial_value_from_placeholder():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            ph = tf.compat.v1.placeholder(tf.float32, [2])
            v = tf.Variable(ph * 2.0)
        with tf.compat.v1.Session(graph=g) as sess:
            missing = run(lambda _: sess.run(v.initializer), None)
            sess.run(v.initializer, {ph: [1.0, 2.0]})
            return missing, sess.run(v), v.shape
    same(prog)


def test_each_session_has_its_own_variable_values():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(1.0)
            up = v.assign_add(1.0)
            init = tf.compat.v1.global_variables_initializer()
        first, second = tf.compat.v1.Session(graph=g), tf.compat.v1.Session(graph=g)
        first.run(init)
        second.run(init)
        first.run(up)
        first.run(up)
        second.run(up)
        return first.run(v), second.run(v), run(lambda _: tf.compat.v1.Session(graph=g).run(v), None)
    same(prog)


def test_training_loop_with_v1_gradients():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, 2])
            y = tf.compat.v1.placeholder(tf.float32, [None])
            w = tf.compat.v1.Variable([[0.5], [-0.5]], name="w")
            b = tf.Variable(0.0, name="b")
            loss = tf.reduce_mean((tf.reshape(tf.matmul(x, w), [-1]) + b - y) ** 2)
            gw, gb = tf.compat.v1.gradients(loss, [w, b])
            train = [w.assign_sub(0.1 * gw), b.assign_sub(0.1 * gb)]
            init = tf.compat.v1.global_variables_initializer()
        feed = {x: np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]], np.float32), y: np.array([1.0, 2.0, 0.0], np.float32)}
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(init)
            losses = []
            for _ in range(4):
                losses.append(sess.run(loss, feed))
                sess.run(train, feed)
            return losses, sess.run([w, b])
    same(prog)


def test_session_graph_is_the_default_inside():
    def prog(tf):
        g = tf.Graph()
        with g.as_default():
            v = tf.Variable(2.0)
            f = tf.function(lambda x: v * x)
            out = f(tf.constant(3.0))
        with tf.compat.v1.Session(graph=g) as sess:
            inside = (tf.executing_eagerly(), tf.compat.v1.get_default_graph() is g)
            sess.run(tf.compat.v1.global_variables_initializer())
            r = v * 3.0
            return inside, sess.run([r, out]), tf.executing_eagerly()
    same(prog)


def test_eager_and_graph_variable_misuse():
    def fetch_eager(tf):
        v = tf.Variable(1.0)
        g = tf.Graph()
        with g.as_default():
            tf.constant(1.0)
        with tf.compat.v1.Session(graph=g) as sess:
            return sess.run(v)

    def graph_numpy(tf):
        with tf.Graph().as_default():
            return tf.Variable(1.0).numpy()
    assert isinstance(same(fetch_eager), Raised)
    assert isinstance(same(graph_numpy), Raised)
