"""GradientTape semantics, differential against TensorFlow.

Each `prog_*`/lambda is written against a TensorFlow-like module and run with
both tapeflow and TensorFlow by `differential.same`, which compares values,
dtypes, None-ness, structure and exception classes.
"""

import collections
import logging

import numpy as np
import pytest

import tapeflow
from differential import Raised, run, same

Pair = collections.namedtuple("Pair", ["first", "second"])


def _needs(*names):
    """Skips when tapeflow does not define one of `names` yet (dotted paths allowed)."""
    for name in names:
        obj = tapeflow
        for part in name.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            pytest.skip(f"tapeflow has no {name} yet")


# -- watch ------------------------------------------------------------------------

def test_watch_tensor():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        return t.gradient(y, x)
    same(prog)


def test_unwatched_constant_gives_none():
    def prog(tf):
        x = tf.constant(3.0)
        with tf.GradientTape() as t:
            y = x * x
        return t.gradient(y, x)
    assert same(prog) is None


def test_watch_nested_structure():
    def prog(tf):
        a, b, c = tf.constant(1.0), tf.constant([2.0, 3.0]), tf.constant(4.0)
        with tf.GradientTape() as t:
            t.watch({"a": a, "rest": [b, (c,)]})
            y = a * tf.reduce_sum(b) * c
        return t.gradient(y, {"a": a, "rest": [b, (c,)]})
    same(prog)


def test_watch_variable_and_tensor_together():
    def prog(tf):
        v = tf.Variable(2.0)
        x = tf.constant(5.0)
        with tf.GradientTape(watch_accessed_variables=False) as t:
            t.watch([v, x])
            y = v * x
        return t.gradient(y, [v, x]), [w.name for w in t.watched_variables()]
    same(prog)


def test_watch_integer_tensor_warns_and_gives_none(caplog):
    def prog(tf):
        x = tf.constant(3)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        return t.gradient(y, x)
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        assert same(prog) is None
    assert any("floating" in r.getMessage() for r in caplog.records if r.name == "tapeflow")


@pytest.mark.parametrize("value", [3.0, [1.0, 2.0], "x"], ids=["float", "list", "str"])
def test_watch_non_tensor_raises(value):
    def prog(tf):
        with tf.GradientTape() as t:
            t.watch(value)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is ValueError


def test_watch_numpy_array_raises():
    def prog(tf):
        with tf.GradientTape() as t:
            t.watch(np.ones(2, np.float32))
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is ValueError


def test_watch_before_entering_context():
    # TensorFlow fails here with an AttributeError (no tape yet); tapeflow makes the tape.
    x = tapeflow.constant(2.0)
    t = tapeflow.GradientTape()
    t.watch(x)
    with t:
        y = x * x * x
    assert float(t.gradient(y, x)) == 12.0


def test_watch_accessed_variables_false():
    def prog(tf):
        v1, v2 = tf.Variable(1.0, name="v1"), tf.Variable(2.0, name="v2")
        with tf.GradientTape(watch_accessed_variables=False) as t:
            t.watch(v2)
            y = v1 * v2
        return t.gradient(y, [v1, v2]), [v.name for v in t.watched_variables()]
    same(prog)


def test_trainable_variables_are_auto_watched():
    def prog(tf):
        v = tf.Variable([1.0, 2.0])
        frozen = tf.Variable(3.0, trainable=False)
        with tf.GradientTape() as t:
            y = tf.reduce_sum(v * v) * frozen
        return t.gradient(y, [v, frozen]), [w.name for w in t.watched_variables()]
    same(prog)


def test_non_trainable_variable_watched_explicitly():
    def prog(tf):
        frozen = tf.Variable(3.0, trainable=False)
        with tf.GradientTape() as t:
            t.watch(frozen)
            y = frozen * frozen
        return t.gradient(y, frozen)
    same(prog)


def test_watched_variables_order_is_creation_order():
    def prog(tf):
        a, b, c = (tf.Variable(float(i), name=n) for i, n in enumerate("abc"))
        with tf.GradientTape() as t:
            y = c * 2.0
            y = y + a
            t.watch(b)
        return [v.name for v in t.watched_variables()]
    assert same(prog) == ["a:0", "b:0", "c:0"]


def test_watched_variables_after_gradient():
    def prog(tf):
        v = tf.Variable(1.0, name="w")
        with tf.GradientTape() as t:
            y = v * 3.0
        t.gradient(y, v)
        return [x.name for x in t.watched_variables()]
    same(prog)


def test_variable_read_before_tape_not_watched():
    def prog(tf):
        v = tf.Variable(2.0)
        r = v * 1.0
        with tf.GradientTape() as t:
            y = r * r
        return t.gradient(y, v), len(t.watched_variables())
    same(prog)


def test_integer_variable_not_watched():
    def prog(tf):
        v = tf.Variable(3)
        with tf.GradientTape() as t:
            y = v * 2
        return t.gradient(y, v), len(t.watched_variables())
    same(prog)


# -- persistent and one-shot tapes ---------------------------------------------------

def test_one_shot_second_gradient_raises():
    def prog(tf):
        x = tf.constant(3.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        t.gradient(y, x)
        return t.gradient(y, x)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is RuntimeError
    assert "persistent" in str(out.exc)


def test_persistent_allows_many_gradients():
    def prog(tf):
        x = tf.constant(3.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            z = y * y
        return t.gradient(y, x), t.gradient(z, x), t.gradient(z, y), t.gradient(y, x)
    same(prog)


def test_gradient_inside_context_persistent():
    def prog(tf):
        x = tf.constant(3.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            g = t.gradient(y, x)       # recorded as well
            h = g * x
        return g, t.gradient(h, x)
    same(prog)


def test_gradient_inside_context_one_shot_stops_recording():
    def prog(tf):
        x = tf.constant(3.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
            g = t.gradient(y, x)
            z = g * x                  # not recorded any more
        return g, z
    same(prog)


def test_stop_recording():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            with t.stop_recording():
                z = x * x * x
            w = y + z
        return t.gradient(z, x), t.gradient(w, x), t.gradient(y, x)
    same(prog)


def test_stop_recording_on_exited_tape_raises():
    def prog(tf):
        t = tf.GradientTape()
        with t:
            pass
        with t.stop_recording():
            pass
    same(prog)


def test_stop_recording_on_consumed_tape_raises():
    def prog(tf):
        x = tf.constant(1.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * 2.0
            t.gradient(y, x)
            with t.stop_recording():
                pass
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is RuntimeError


def test_stop_recording_never_started_raises():
    def prog(tf):
        with tf.GradientTape().stop_recording():
            pass
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is RuntimeError


def test_stop_recording_nested_tapes_only_stops_one():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                with inner.stop_recording():
                    y = x * x
        return inner.gradient(y, x), outer.gradient(y, x)
    same(prog)


def test_reset():
    def prog(tf):
        x = tf.constant(3.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            t.reset()
            z = x * x * x              # x is no longer watched
            t.watch(x)
            w = x * x * x
        return t.gradient(y, x), t.gradient(z, x), t.gradient(w, x)
    same(prog)


def test_reset_outside_context_raises():
    def prog(tf):
        with tf.GradientTape() as t:
            pass
        t.reset()
    assert isinstance(same(prog), Raised)


def test_reenter_recording_tape_raises():
    def prog(tf):
        t = tf.GradientTape()
        with t:
            with t:
                pass
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is ValueError


def test_reenter_after_exit_continues_recording():
    def prog(tf):
        x = tf.constant(2.0)
        t = tf.GradientTape()
        with t:
            t.watch(x)
            y = x * x
        with t:
            z = y * x
        return t.gradient(z, x)
    same(prog)


def test_tape_after_exit_does_not_record():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x
        z = y * x
        return t.gradient(z, x)
    same(prog)


def test_gradient_target_none_raises():
    def prog(tf):
        x = tf.constant(1.0)
        with tf.GradientTape() as t:
            t.watch(x)
        return t.gradient(None, x)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is TypeError


# -- gradient() arguments ---------------------------------------------------------------

def test_nested_sources_keep_structure():
    def prog(tf):
        a, b, c, d = (tf.constant(float(i + 1)) for i in range(4))
        with tf.GradientTape() as t:
            t.watch([a, b, c, d])
            y = a * b + c * d * d
        return t.gradient(y, {"x": [a, (b, Pair(c, d))], "y": a})
    out = same(prog)
    assert isinstance(out["x"][1][1], Pair)


def test_list_of_targets_is_summed():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as t:
            t.watch(x)
            y1 = x * x
            y2 = tf.reduce_sum(x) * 3.0
        return t.gradient([y1, {"k": y2}], x)
    same(prog)


def test_output_gradients():
    def prog(tf):
        x = tf.constant([1.0, 2.0, 3.0])
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            z = tf.reduce_sum(x)
        return (t.gradient(y, x, output_gradients=tf.constant([1.0, 10.0, 100.0])),
                t.gradient([y, z], x, output_gradients=[tf.constant([2.0, 2.0, 2.0]), tf.constant(5.0)]),
                t.gradient({"a": y, "b": z}, x, output_gradients={"b": 5.0, "a": tf.ones([3])}))
    same(prog)


def test_output_gradients_none_entry_means_ones():
    # tape.h seeds a target with no output gradient with ones; TensorFlow's Python
    # layer fails to convert the None instead. tapeflow follows tape.h here.
    x = tapeflow.constant([1.0, 2.0, 3.0])
    with tapeflow.GradientTape() as t:
        t.watch(x)
        y = x * x
        z = tapeflow.reduce_sum(x)
    g = t.gradient([y, z], x, output_gradients=[None, tapeflow.constant(5.0)])
    np.testing.assert_allclose(g.numpy(), 2 * np.array([1.0, 2.0, 3.0]) + 5.0)


def test_output_gradients_numpy_and_python():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
        return (t.gradient(y, x, output_gradients=np.array([3.0, 4.0], np.float32)),
                t.gradient(y, x, output_gradients=[np.array([3.0, 4.0])]),
                t.gradient(y, x, output_gradients=2.0))
    same(prog)


@pytest.mark.parametrize("mode", ["NONE", "ZERO", "none", "zero"])
def test_unconnected_gradients(mode):
    def prog(tf):
        x, y = tf.constant([1.0, 2.0]), tf.Variable([[3.0]])
        i = tf.constant(3)
        with tf.GradientTape() as t:
            t.watch([x, i])
            z = x * 2.0
        value = getattr(tf.UnconnectedGradients, mode) if mode.isupper() else mode
        return t.gradient(z, [x, y, i, tf.constant(1.0, tf.float64)], unconnected_gradients=value)
    same(prog)


def test_unconnected_gradients_unknown_string_raises():
    def prog(tf):
        x = tf.constant(1.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * 2.0
        return t.gradient(y, x, unconnected_gradients="zeros")
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is ValueError


def test_unconnected_gradients_enum_values():
    tf = pytest.importorskip("tensorflow")
    assert [(m.name, m.value) for m in tapeflow.UnconnectedGradients] == \
           [(m.name, m.value) for m in tf.UnconnectedGradients]


def test_gradient_of_source_wrt_itself_is_ones():
    def prog(tf):
        x = tf.constant([[1.0, 2.0]])
        v = tf.Variable([3.0, 4.0, 5.0], dtype=tf.float64)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
        return t.gradient(x, x), t.gradient(v, v), t.gradient([x, x], x)
    same(prog)


def test_gradient_unwatched_target_equal_source():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as t:
            pass
        return t.gradient(x, x)
    same(prog)


def test_gradient_wrt_intermediate():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            z = tf.sin(y) * 3.0
        return t.gradient(z, y), t.gradient(z, [x, y]), t.gradient(y, y)
    same(prog)


def test_integer_sources_give_none():
    def prog(tf):
        x = tf.constant(2.0)
        n = tf.constant([1, 2])
        with tf.GradientTape() as t:
            t.watch([x, n])
            y = x * tf.cast(n, tf.float32)
        return t.gradient(y, [x, n])
    same(prog)


def test_integer_path_blocks_gradient():
    def prog(tf):
        x = tf.constant(2.5)
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.cast(tf.cast(x, tf.int32), tf.float32) * x
        return t.gradient(y, x)
    same(prog)


def test_float64_and_float16_sources():
    def prog(tf):
        a = tf.constant([1.5, 2.0], tf.float64)
        b = tf.constant([1.5, 2.0], tf.float16)
        with tf.GradientTape() as t:
            t.watch([a, b])
            y = tf.reduce_sum(a * a) + tf.cast(tf.reduce_sum(b * b), tf.float64)
        return t.gradient(y, [a, b])
    same(prog)


def test_target_is_variable_read_and_source_is_variable():
    def prog(tf):
        v = tf.Variable(3.0)
        with tf.GradientTape() as t:
            y = v.read_value()
        return t.gradient(y, v)
    same(prog)


def test_variable_used_several_times():
    def prog(tf):
        v = tf.Variable([1.0, 2.0])
        with tf.GradientTape() as t:
            y = tf.reduce_sum(v * v + v * 3.0 - tf.sin(v)) + tf.reduce_sum(v) * tf.reduce_sum(v)
        return t.gradient(y, v)
    same(prog)


def test_sources_variable_and_its_read():
    def prog(tf):
        v = tf.Variable(2.0)
        with tf.GradientTape() as t:
            r = v.read_value()
            y = r * r
        return t.gradient(y, [v, r])
    same(prog)


def test_stop_gradient():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * tf.stop_gradient(x * x)
        return t.gradient(y, x)
    same(prog)


def test_identity_and_broadcasting():
    def prog(tf):
        x = tf.constant([[1.0], [2.0]])
        b = tf.constant([1.0, 2.0, 3.0])
        with tf.GradientTape() as t:
            t.watch([x, b])
            y = tf.identity(x * b) + 1.0
        return t.gradient(y, [x, b])
    same(prog)


def test_target_with_dead_intermediates():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape() as t:
            t.watch(x)
            y = x
            for _ in range(5):
                y = y * x
        return t.gradient(y, x)
    same(prog)


# -- multi-output ops ------------------------------------------------------------------

def test_unstack_partial_use_fills_zeros():
    def prog(tf):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        with tf.GradientTape() as t:
            t.watch(x)
            a, b, c = tf.unstack(x)
            y = b * b
        return t.gradient(y, x)
    same(prog)


def test_unstack_axis_partial_use():
    def prog(tf):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with tf.GradientTape() as t:
            t.watch(x)
            parts = tf.unstack(x, axis=1)
            y = tf.sin(parts[1])
        return t.gradient(y, [x, parts[0]])
    same(prog)


def test_split_partial_use():
    _needs("split")

    def prog(tf):
        x = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
        with tf.GradientTape() as t:
            t.watch(x)
            a, b = tf.split(x, [2, 3])
            y = tf.reduce_sum(b * b)
        return t.gradient(y, x)
    same(prog)


def test_multi_output_used_twice():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as t:
            t.watch(x)
            a, b = tf.unstack(x)
            y = a * b + a * 3.0
        return t.gradient(y, x)
    same(prog)


# -- complex gradients --------------------------------------------------------------------

_Z = np.array([1.0 + 2.0j, -0.5 + 0.25j], np.complex64)


@pytest.mark.parametrize("expr", [
    "abs_squared", "z_conj_z", "real_part", "imag_part", "exp", "square_real", "mul_const", "complex_target",
])
def test_complex_gradients(expr):
    def prog(tf):
        z = tf.constant(_Z)
        with tf.GradientTape() as t:
            t.watch(z)
            if expr == "abs_squared":
                y = tf.abs(z) * tf.abs(z)
            elif expr == "z_conj_z":
                y = tf.math.real(z * tf.math.conj(z))
            elif expr == "real_part":
                y = tf.math.real(z) * 3.0
            elif expr == "imag_part":
                y = tf.math.imag(z) * tf.math.imag(z)
            elif expr == "exp":
                y = tf.math.real(tf.exp(z))
            elif expr == "square_real":
                y = tf.math.real(z * z)
            elif expr == "mul_const":
                y = tf.math.imag(z * tf.constant([2.0 - 1.0j, 0.5j], tf.complex64))
            else:
                y = tf.exp(z) * z      # complex target: seeds with ones
        return t.gradient(y, z)
    same(prog)


def test_complex_from_real_parts():
    def prog(tf):
        a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, -1.0])
        with tf.GradientTape() as t:
            t.watch([a, b])
            z = tf.complex(a, b)
            y = tf.math.real(z * z) + tf.abs(z)
        return t.gradient(y, [a, b])
    same(prog)


# -- IndexedSlices ------------------------------------------------------------------------------

def test_gather_on_variable_gives_indexed_slices():
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        with tf.GradientTape() as t:
            y = tf.reduce_sum(tf.gather(v, [2, 0, 2]) * tf.constant([[1.0, 2.0]]))
        g = t.gradient(y, v)
        return g, tf.convert_to_tensor(g), type(g).__name__
    same(prog)


def test_gather_on_tensor_gives_indexed_slices():
    def prog(tf):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.gather(x, [[1, 1], [0, 2]]) * 2.0
        g = t.gradient(y, x)
        return g, tf.convert_to_tensor(g)
    same(prog)


def test_gather_axis1_is_dense():
    def prog(tf):
        x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.gather(x, [2, 2, 0], axis=1) * tf.constant([1.0, 2.0, 3.0])
        return t.gradient(y, x)
    same(prog)


def test_two_gathers_aggregate():
    def prog(tf):
        v = tf.Variable([1.0, 2.0, 3.0, 4.0])
        with tf.GradientTape() as t:
            y = tf.reduce_sum(tf.gather(v, [0, 1])) + tf.reduce_sum(tf.gather(v, [1, 3]) * 2.0)
        g = t.gradient(y, v)
        return tf.convert_to_tensor(g)
    same(prog)


def test_dense_plus_indexed_slices_aggregate_to_dense():
    def prog(tf):
        v = tf.Variable([1.0, 2.0, 3.0])
        with tf.GradientTape() as t:
            y = tf.reduce_sum(tf.gather(v, [0, 0])) + tf.reduce_sum(v * v)
        return t.gradient(y, v)
    same(prog)


def test_gather_then_dense_op_on_same_tensor():
    def prog(tf):
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(tf.gather(x, [1])) * tf.reduce_sum(x)
        return t.gradient(y, x)
    same(prog)


def test_indexed_slices_second_order():
    def prog(tf):
        v = tf.Variable([1.0, 2.0, 3.0])
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                y = tf.reduce_sum(tf.gather(v, [0, 2, 2]) ** 3)
            g = tf.convert_to_tensor(inner.gradient(y, v))
            s = tf.reduce_sum(g * g)
        return outer.gradient(s, v)
    same(prog)


# -- errors and the gradient registry -----------------------------------------------------------

_probe_count = 0


def _fresh_op(grad=None, register=True, no_grad=False):
    """A unique identity-like test op (NumPy kernel), optionally with a gradient."""
    from tapeflow.framework import op_def
    global _probe_count
    _probe_count += 1
    name = f"TapeflowTestOp{_probe_count}"
    kernel = op_def.op(name)(lambda x: np.array(x * 2))
    if no_grad:
        tapeflow.no_gradient(name)
    elif grad is not None and register:
        tapeflow.RegisterGradient(name)(grad)
    return name, kernel


def test_lookup_error_names_op():
    name, kernel = _fresh_op()
    x = tapeflow.constant([1.0, 2.0])
    with tapeflow.GradientTape() as t:
        t.watch(x)
        y = tapeflow.sin(kernel(x))
    with pytest.raises(LookupError, match=name):
        t.gradient(y, x)


def test_lookup_error_only_when_on_path():
    name, kernel = _fresh_op()
    x = tapeflow.constant([1.0, 2.0])
    with tapeflow.GradientTape() as t:
        t.watch(x)
        unused = kernel(x)      # noqa: F841 - recorded but not between target and source
        y = x * 3.0
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [3.0, 3.0])


def test_failed_gradient_leaves_persistent_tape_usable():
    name, kernel = _fresh_op()
    x = tapeflow.constant([1.0, 2.0])
    with tapeflow.GradientTape(persistent=True) as t:
        t.watch(x)
        bad = tapeflow.reduce_sum(kernel(x) * x)
        good = tapeflow.reduce_sum(tapeflow.sin(x) * x)
    with pytest.raises(LookupError):
        t.gradient(bad, x)
    want = np.sin([1.0, 2.0]) + np.array([1.0, 2.0]) * np.cos([1.0, 2.0])
    np.testing.assert_allclose(t.gradient(good, x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(t.gradient(good, x).numpy(), want, rtol=1e-6)
    with pytest.raises(LookupError):
        t.gradient(bad, x)


def test_no_gradient_op_gives_none():
    name, kernel = _fresh_op(no_grad=True)
    x = tapeflow.constant([1.0, 2.0])
    with tapeflow.GradientTape(persistent=True) as t:
        t.watch(x)
        y = tapeflow.reduce_sum(kernel(x))
        z = y + tapeflow.reduce_sum(x)
    assert t.gradient(y, x) is None
    np.testing.assert_allclose(t.gradient(z, x).numpy(), [1.0, 1.0])
    assert np.all(t.gradient(y, x, unconnected_gradients="zero").numpy() == 0)


def test_register_gradient_for_new_op():
    name, kernel = _fresh_op(grad=lambda op, dy: dy * 2.0 * tapeflow.cos(op.inputs[0]))
    x = tapeflow.constant([0.5, 1.0])
    with tapeflow.GradientTape() as outer:
        outer.watch(x)
        with tapeflow.GradientTape() as t:
            t.watch(x)
            y = kernel(x)
        g = t.gradient(y, x)        # our rule: 2 cos(x) (deliberately not the true derivative)
    np.testing.assert_allclose(g.numpy(), 2 * np.cos([0.5, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), -2 * np.sin([0.5, 1.0]), rtol=1e-6)
    with pytest.raises(KeyError):
        tapeflow.RegisterGradient(name)(lambda op, dy: dy)


def test_register_gradient_before_op_is_defined():
    from tapeflow.framework import op_def
    global _probe_count
    _probe_count += 1
    name = f"TapeflowTestLateOp{_probe_count}"
    tapeflow.RegisterGradient(name)(lambda op, dy: dy * 5.0 * op.outputs[0])   # rules may read outputs
    kernel = op_def.op(name)(lambda x: np.array(x * 2.0))
    x = tapeflow.constant(1.0)
    with tapeflow.GradientTape() as t:
        t.watch(x)
        y = kernel(x)
    assert float(t.gradient(y, x)) == 10.0


def test_register_gradient_twice_raises_key_error():
    def prog(tf):
        tf.RegisterGradient("Exp")(lambda op, dy: dy)
    out = same(prog)
    assert isinstance(out, Raised) and type(out.exc) is KeyError


def test_register_gradient_non_string_raises():
    same(lambda tf: tf.RegisterGradient(3))


def test_gradient_function_with_wrong_arity():
    name, kernel = _fresh_op(grad=lambda op, dy: (dy, dy))
    x = tapeflow.constant(1.0)
    with tapeflow.GradientTape() as t:
        t.watch(x)
        y = kernel(x)
    with pytest.raises(ValueError, match=name):
        t.gradient(y, x)


def test_output_gradients_wrong_length():
    x = tapeflow.constant(1.0)
    with tapeflow.GradientTape() as t:
        t.watch(x)
        y = x * 2.0
    with pytest.raises(ValueError):
        t.gradient([y, y], x, output_gradients=[tapeflow.constant(1.0)])


def test_gradient_non_tensor_source_raises():
    # TensorFlow's class (3.0 names DataType 3, int32, which is not trainable: AttributeError on
    # reading `.dtype`, Note [non-tensor arguments]); tapeflow's message names the bad source.
    x = tapeflow.constant(1.0)
    with tapeflow.GradientTape() as t:
        t.watch(x)
        y = x * 2.0
    with pytest.raises(AttributeError, match="float"):
        t.gradient(y, [x, 3.0])


# -- a small training loop ---------------------------------------------------------------------------

def test_linear_regression_steps():
    def prog(tf):
        rng = np.random.default_rng(0)
        xs = tf.constant(rng.normal(size=(8, 3)).astype(np.float32))
        ys = tf.constant(rng.normal(size=(8, 1)).astype(np.float32))
        w = tf.Variable(np.full((3, 1), 0.1, np.float32))
        b = tf.Variable(0.0)
        losses = []
        for _ in range(3):
            with tf.GradientTape() as t:
                err = tf.matmul(xs, w) + b - ys
                loss = tf.reduce_mean(err * err)
            gw, gb = t.gradient(loss, [w, b])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            losses.append(loss)
        return losses, w, b
    same(prog)


def test_run_reports_exceptions():
    out = run(lambda tf: tf.constant(1.0) + tf.constant(1), tapeflow)
    assert isinstance(out, Raised) and type(out.exc).__name__ == "InvalidArgumentError"


# -- more structure and state -------------------------------------------------------------------

def test_same_source_twice_and_target_twice():
    def prog(tf):
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
        return t.gradient(y, [x, x]), t.gradient([y, y], x), t.gradient({"a": y, "b": [y]}, (x,))
    same(prog)


def test_target_that_is_also_an_intermediate_source():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            z = y * 3.0
        return t.gradient([y, z], y), t.gradient([y, z], [x, y])
    same(prog)


def test_exception_inside_context_stops_recording():
    def prog(tf):
        x = tf.constant(2.0)
        t = tf.GradientTape()
        try:
            with t:
                t.watch(x)
                y = x * x
                raise KeyError("boom")
        except KeyError:
            pass
        z = y * x
        return t.gradient(z, x)
    same(prog)


def test_tapes_are_thread_local():
    import threading

    def prog(tf):
        x = tf.constant(2.0)
        out = {}
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            worker = threading.Thread(target=lambda: out.update(y=x * x))
            worker.start()
            worker.join()
            z = x * x
        return t.gradient(out["y"], x), t.gradient(z, x)
    same(prog)


def test_unread_variable_is_unconnected():
    def prog(tf):
        v, w = tf.Variable(1.0), tf.Variable([1.0, 2.0], dtype=tf.float64)
        with tf.GradientTape(persistent=True) as t:
            y = v * 2.0
        return t.gradient(y, [v, w]), t.gradient(y, [v, w], unconnected_gradients="zero")
    same(prog)


def test_outer_tape_without_auto_watch_and_inner_with():
    def prog(tf):
        v = tf.Variable(3.0)
        with tf.GradientTape(watch_accessed_variables=False) as outer:
            with tf.GradientTape() as inner:
                y = v * v * v
            g = inner.gradient(y, v)
        return g, outer.gradient(g, v), len(outer.watched_variables()), len(inner.watched_variables())
    same(prog)


def test_not_differentiable_branch_mixed_with_differentiable():
    def prog(tf):
        x = tf.constant([1.5, -2.5])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.sign(x) * x + tf.floor(x) * 0.0 + tf.cast(x > 0.0, tf.float32) * x
        return t.gradient(y, x)
    same(prog)


def test_persistent_reset_after_gradient():
    def prog(tf):
        x = tf.constant(2.0)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x * x
            g1 = t.gradient(y, x)
            t.reset()
            t.watch(x)
            z = x * x * x
        return g1, t.gradient(y, x), t.gradient(z, x)
    same(prog)


def test_indexed_slices_flow_into_an_upstream_op():
    def prog(tf):
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        with tf.GradientTape() as t:
            h = tf.tanh(v) * 2.0                      # Mul's gradient receives aggregated IndexedSlices
            y = tf.reduce_sum(tf.gather(h, [0, 2])) + tf.reduce_sum(tf.gather(h, [2]) ** 2)
        return t.gradient(y, v)
    same(prog)
