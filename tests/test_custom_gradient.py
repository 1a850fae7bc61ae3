"""`custom_gradient` eagerly and in graphs (`recompute_grad` and
`grad_pass_through` are in test_recompute_gradient.py).

Most tests are programs `prog(tf)` run unchanged with tapeflow and TensorFlow
(`differential.same`: values, None-ness, exception classes); the rest check
what TensorFlow cannot show (logged warnings, the seed's `Bind`).
"""

import logging

import numpy as np
import pytest

import tapeflow
from differential import run, same


# -- the seed's docstring examples -------------------------------------------------

def _log1pexp(tf):
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return tf.math.log(1 + e), grad
    return log1pexp


def test_log1pexp_eager_is_stable_where_the_naive_gradient_is_nan():
    def prog(tf):
        log1pexp = _log1pexp(tf)
        x = tf.constant(100.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = log1pexp(x)
            naive = tf.math.log(1 + tf.exp(x))
        return y, tape.gradient(y, x), tape.gradient(naive, x)
    with np.errstate(all="ignore"):
        y, g, naive = same(prog)
    assert g.numpy() == 1.0
    assert np.isnan(naive.numpy())


def test_log1pexp_tape_inside_function():
    def prog(tf):
        log1pexp = _log1pexp(tf)

        @tf.function
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = log1pexp(x)
            return y, tape.gradient(y, x)
        return f(tf.constant(100.0)), f(tf.constant([-3.0, 0.0, 2.0]))
    with np.errstate(all="ignore"):
        (_, g), _ = same(prog)
    assert g.numpy() == 1.0


def test_log1pexp_gradients_inside_function():
    def prog(tf):
        log1pexp = _log1pexp(tf)

        @tf.function
        def f(x):
            return tf.gradients(log1pexp(x), x)
        return f(tf.constant(100.0))
    with np.errstate(all="ignore"):
        (g,) = same(prog)
    assert g.numpy() == 1.0


def test_log1pexp_tf1_graph_and_session():
    def prog(tf):
        log1pexp = _log1pexp(tf)
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, shape=[None])
            dy = tf.gradients(log1pexp(x), x)
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run(dy, feed_dict={x: np.array([100.0, 0.0], np.float32)})
    with np.errstate(all="ignore"):
        (g,) = same(prog)
    np.testing.assert_array_equal(g, [1.0, 0.5])


def _bar(tf):
    @tf.custom_gradient
    def bar(x, y):
        def grad(upstream):
            return upstream * y, upstream * x
        return x * y, grad
    return bar


def test_bar_two_inputs():
    def prog(tf):
        x, y = tf.constant(2.0), tf.constant(3.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            tape.watch(y)
            z = _bar(tf)(x, y)
        return z, tape.gradient(z, x), tape.gradient(z, y), tape.gradient(z, [x, y])
    z, dx, dy, _ = same(prog)
    assert (z.numpy(), dx.numpy(), dy.numpy()) == (6.0, 3.0, 2.0)


# -- decorator forms, methods, structures, keyword arguments -----------------------

def test_with_and_without_parentheses_keep_the_name():
    def prog(tf):
        @tf.custom_gradient()
        def double(x):
            """Doubles."""
            return x * 2.0, lambda dy: dy * 5.0

        @tf.custom_gradient
        def triple(x):
            return x * 3.0, lambda dy: dy * 7.0
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            a, b = double(x), triple(x)
        return a, b, tape.gradient(a, x), tape.gradient(b, x), double.__name__, triple.__name__, double.__doc__
    same(prog)


def _scale_class(tf):
    class Scale:
        def __init__(self, k):
            self.k = k

        @tf.custom_gradient
        def __call__(self, x):
            return x * self.k, lambda dy: dy * 10.0

        @tf.custom_gradient
        def affine(self, x, y):
            def grad(dy):
                return dy * self.k * 10.0, dy * 100.0
            return x * self.k + y, grad
    return Scale


def test_methods_bound_to_an_instance():
    def prog(tf):
        s = _scale_class(tf)(3.0)
        x = tf.constant(2.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y1, y2 = s(x), s.affine(x, x)
        return y1, y2, tape.gradient(y1, x), tape.gradient(y2, x), s.affine.__name__
    y1, y2, g1, g2, _ = same(prog)
    assert (y1.numpy(), y2.numpy(), g1.numpy(), g2.numpy()) == (6.0, 8.0, 10.0, 130.0)


def test_method_called_on_the_class_takes_the_instance_as_an_argument():
    # As in TensorFlow, the unbound call passes the instance through `args`,
    # where it is converted to a tensor like every argument.
    def prog(tf):
        cls = _scale_class(tf)
        return cls.affine(cls(3.0), tf.constant(1.0), tf.constant(2.0))
    same(prog)


def test_bind_binds_to_instances_like_the_seed_docstring():
    from tapeflow.custom_gradient import Bind
    calls = []

    def my_decorator(f, args, kwargs):
        calls.append((args, kwargs))
        return f(*args, **kwargs)

    class Foo:
        def bar(self, a, b, c):
            return a * b * c
        bar = Bind(bar, my_decorator)

    assert Foo.bar(None, 1, 2, c=3) == 6
    assert calls[-1] == ((None, 1, 2), {"c": 3})
    foo = Foo()
    assert foo.bar(1, 2, c=3) == 6
    assert calls[-1] == ((1, 2), {"c": 3})
    assert Foo.bar.__name__ == "bar" and foo.bar.__name__ == "bar"


def test_nested_inputs_and_outputs():
    def prog(tf):
        @tf.custom_gradient
        def f(xs, y):
            a, b = xs["a"], xs["b"]

            def grad(d_ay, d_by, d_amb):      # one per flattened output
                return {"a": d_ay * 2.0 + d_amb, "b": d_by * 3.0}, (d_ay + d_by) * 4.0
            return (a * y, [b + y, a - b]), grad
        a, b, y = tf.constant([1.0, -1.0]), tf.constant([2.0, 0.5]), tf.constant(3.0)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([a, b, y])
            out = f({"a": a, "b": b}, y)
        return (out, tape.gradient(out, [a, b, y]), tape.gradient(out[1][0], [a, b, y]),
                tape.gradient(out[1][1], {"a": a, "y": y}))
    same(prog)


def test_nested_structures_in_a_function_with_gradients():
    def prog(tf):
        @tf.custom_gradient
        def f(pair):
            x, y = pair

            def grad(d0, d1):
                return [d0 * 2.0, d1 * 3.0]
            return {"sum": x + y, "prod": x * y}, grad

        @tf.function
        def g(x, y):
            out = f((x, y))
            return out, tf.gradients([out["sum"], out["prod"]], [x, y])
        return g(tf.constant(1.5), tf.constant(-2.0))
    same(prog)


def test_keyword_arguments_eagerly():
    def prog(tf):
        @tf.custom_gradient
        def f(x, scale=1.0, shift=None):
            def grad(dy):
                return dy * scale * 7.0
            return x * scale + shift, grad
        x, s, c = tf.constant(2.0), tf.constant(3.0), tf.constant(1.0)
        with tf.GradientTape() as tape:
            tape.watch([x, s, c])
            y = f(x, scale=s, shift=c)
        return y, tape.gradient(y, [x, s, c])   # keyword arguments get no gradient
    y, (dx, ds, dc) = same(prog)
    assert (y.numpy(), dx.numpy(), ds, dc) == (7.0, 21.0, None, None)


@pytest.mark.parametrize("where", ["function", "graph"])
def test_keyword_arguments_in_graphs_raise_value_error(where):
    def prog(tf):
        @tf.custom_gradient
        def f(x, scale=1.0):
            return x * scale, lambda dy: dy * scale
        if where == "function":
            return tf.function(lambda x: f(x, scale=2.0))(tf.constant(1.0))
        with tf.Graph().as_default():
            return f(tf.constant(1.0), scale=2.0)
    out = same(prog)
    assert "keywords arguments only when eager" in str(out.exc)


# -- wrong gradient counts ---------------------------------------------------------

def _wrong_count(mode, n_inputs):
    def prog(tf):
        @tf.custom_gradient
        def f(*xs):
            def grad(dy):
                return [dy] * (3 - n_inputs)    # 1 for two inputs, 2 for one
            return tf.add_n(list(xs)) * 2.0, grad
        xs = [tf.constant(float(i + 1)) for i in range(n_inputs)]
        if mode == "eager":
            with tf.GradientTape() as tape:
                tape.watch(xs)
                y = f(*xs)
            return tape.gradient(y, xs)
        if mode == "function_tape":
            @tf.function
            def g(*xs):
                with tf.GradientTape() as tape:
                    tape.watch(xs)
                    y = f(*xs)
                return tape.gradient(y, xs)
            return g(*xs)
        if mode == "function_gradients":
            return tf.function(lambda *xs: tf.gradients(f(*xs), xs))(*xs)
        with tf.Graph().as_default():
            xs = [tf.constant(float(i + 1)) for i in range(n_inputs)]
            return tf.gradients(f(*xs), xs)
    return prog


@pytest.mark.parametrize("n_inputs", [1, 2])
@pytest.mark.parametrize("mode", ["eager", "function_gradients", "graph"])
def test_wrong_number_of_gradients_raises_value_error(mode, n_inputs):
    out = same(_wrong_count(mode, n_inputs))
    assert isinstance(out.exc, ValueError)


def test_wrong_number_of_gradients_tape_in_function():
    # TensorFlow's C++ tape reports this as InternalError; tapeflow raises the
    # eager decorator's ValueError naming the counts.
    out = run(_wrong_count("function_tape", 2), tapeflow)
    assert isinstance(out.exc, ValueError)
    assert "expected to return 2 gradients, but returned 1" in str(out.exc)


# -- variables read inside and not passed -------------------------------------------

def _with_variables(mode, accept=True, n_variable_grads=2):
    def prog(tf):
        v = tf.Variable(2.0, name="v")
        w = tf.Variable([1.0, -1.0], name="w")
        frozen = tf.Variable(5.0, name="frozen", trainable=False)

        @tf.custom_gradient
        def f(x):
            y = x * v + tf.reduce_sum(w) * x + frozen
            if accept:
                def grad(dy, variables=None):
                    by_name = {"v:0": dy * 10.0, "w:0": dy * tf.constant([1.0, 2.0])}
                    return dy * 3.0, [by_name[u.name] for u in variables][:n_variable_grads]
            else:
                def grad(dy):
                    return dy * 3.0
            return y, grad
        x = tf.constant(1.5)
        if mode == "eager":
            with tf.GradientTape() as tape:
                tape.watch(x)
                z = f(x)
            return z, tape.gradient(z, [x, v, w, frozen])

        @tf.function
        def g(x):
            if mode == "function_tape":
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    z = f(x)
                return z, tape.gradient(z, [x, v, w, frozen])
            z = f(x)
            return z, tf.gradients(z, [x, v, w])
        return g(x)
    return prog


@pytest.mark.parametrize("mode", ["eager", "function_tape", "function_gradients"])
def test_variables_get_the_gradients_grad_fn_returns(mode):
    z, grads = same(_with_variables(mode))
    assert z.numpy() == 8.0
    assert grads[0].numpy() == 3.0 and grads[1].numpy() == 10.0
    np.testing.assert_array_equal(grads[2].numpy(), [1.0, 2.0])


@pytest.mark.parametrize("mode", ["eager", "function_tape", "function_gradients"])
def test_grad_fn_without_variables_argument_raises_type_error(mode):
    out = same(_with_variables(mode, accept=False))
    assert isinstance(out.exc, TypeError)
    message = str(out.exc)
    assert "must accept keyword argument 'variables'" in message and "'v:0'" in message and "'w:0'" in message
    assert "frozen" not in message      # non-trainable variables are not collected


@pytest.mark.parametrize("mode", ["eager", "function_tape", "function_gradients"])
def test_wrong_number_of_variable_gradients_raises_value_error(mode):
    out = same(_with_variables(mode, n_variable_grads=1))
    assert isinstance(out.exc, ValueError)
    assert "Must return gradient for each variable" in str(out.exc)


def test_variables_passed_as_arguments_are_inputs_not_variables():
    def prog(tf):
        v = tf.Variable(2.0, name="v")

        @tf.custom_gradient
        def f(x, var):
            return x * var, lambda dy: (dy * 3.0, dy * 4.0)   # no `variables`: none are extra
        x = tf.constant(1.5)
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = f(x, v)
        return z, tape.gradient(z, [x, v])
    same(prog)


def _init_variables(tf, sess):
    """TF1 sessions initialize variables; tapeflow variables hold their values from the start."""
    if hasattr(tf.compat.v1, "global_variables_initializer"):
        sess.run(tf.compat.v1.global_variables_initializer())


@pytest.mark.parametrize("read", ["inside", "before"])
def test_tf1_graph_variables_including_reads_found_in_the_subgraph(read):
    # A variable read before `f` runs and used inside it is found by walking the
    # graph between the arguments and the results (only in TF1 graphs).
    def prog(tf):
        graph = tf.Graph()
        with graph.as_default():
            v = tf.Variable(2.0, name="v")
            x = tf.compat.v1.placeholder(tf.float32, shape=[])
            early = v.read_value() * 1.0 if read == "before" else None

            @tf.custom_gradient
            def f(x):
                def grad(dy, variables=None):
                    return dy * 3.0, [dy * 10.0 for _ in variables]
                return x * (early if early is not None else v), grad
            z = f(x)
            grads = tf.gradients(z, [x, v])
        with tf.compat.v1.Session(graph=graph) as sess:
            _init_variables(tf, sess)
            return sess.run([z, grads], feed_dict={x: 1.5})
    z, (dx, dv) = same(prog)
    assert (z, dx, dv) == (3.0, 3.0, 10.0)


@pytest.mark.parametrize("read", ["inside", "before"])
def test_tf1_graph_variables_need_the_variables_argument(read):
    def prog(tf):
        with tf.Graph().as_default():
            v = tf.Variable(2.0, name="v")
            early = v.read_value() * 1.0 if read == "before" else None

            @tf.custom_gradient
            def f(x):
                return x * (early if early is not None else v), lambda dy: dy * 3.0
            return f(tf.constant(1.5))
    out = same(prog)
    assert isinstance(out.exc, TypeError) and "'v:0'" in str(out.exc)


def test_reads_before_a_function_body_are_not_variables_in_tf_function():
    # In a tf.function the variable is a captured handle: no subgraph variables
    # (TensorFlow's walk finds no VarHandleOp there), so `variables` is None.
    def prog(tf):
        v = tf.Variable(2.0, name="v")

        @tf.function
        def g(x):
            early = v.read_value()

            @tf.custom_gradient
            def f(x):
                return x * early, lambda dy: dy * 3.0
            z = f(x)
            return z, tf.gradients(z, [x, v])
        return g(tf.constant(1.5))
    same(prog)


def test_unused_variables_argument_warns_in_graph_mode_only(caplog):
    @tapeflow.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * 2.0
        return x * 2.0, grad
    message = "has 'variables' in signature, but no ResourceVariables were used"
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        x = tapeflow.constant(1.0)
        with tapeflow.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        assert tape.gradient(y, x).numpy() == 2.0
    assert message not in caplog.text          # the eager decorator does not warn
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        g = tapeflow.function(lambda x: tapeflow.gradients(f(x), x))
        assert g(x)[0].numpy() == 2.0
    assert message in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tapeflow"):   # the library's own wrappers are quiet
        tapeflow.function(lambda x: tapeflow.gradients(tapeflow.grad_pass_through(tapeflow.sin)(x), x))(x)
        tapeflow.function(lambda x: tapeflow.gradients(tapeflow.recompute_grad(tapeflow.sin)(x), x))(x)
    assert message not in caplog.text


# -- eager recording (Note [eager custom gradient recording]) -------------------------

@pytest.mark.parametrize("mode", ["eager", "function_tape", "function_gradients"])
def test_unwatched_arguments_and_captured_watched_tensor(mode):
    # Eagerly TensorFlow records the custom op only for tapes tracing an argument
    # or variable: through a captured tensor the tape differentiates f's own ops.
    # In graphs the custom op always replaces them (None here).
    def prog(tf):
        x, c = tf.constant(2.0), tf.constant(5.0)

        @tf.custom_gradient
        def f(c):
            return c * x, lambda dy: dy * 100.0
        if mode == "eager":
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(c)
            return tape.gradient(y, x)
        if mode == "function_tape":
            @tf.function
            def g(x, c):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = f(c)
                return tape.gradient(y, x)
            return g(x, c)
        return tf.function(lambda x, c: tf.gradients(f(c), x))(x, c)
    out = same(prog)
    if mode == "eager":
        assert out.numpy() == 5.0


def test_two_tapes_one_watching_the_argument():
    def prog(tf):
        x, c = tf.constant(2.0), tf.constant(5.0)

        @tf.custom_gradient
        def f(c):
            return c * x, lambda dy: dy * 100.0
        with tf.GradientTape() as t_x, tf.GradientTape() as t_c:
            t_x.watch(x)
            t_c.watch(c)
            y = f(c)
        return t_x.gradient(y, x), t_c.gradient(y, c)
    g_x, g_c = same(prog)
    assert (g_x.numpy(), g_c.numpy()) == (5.0, 100.0)


def test_tape_through_a_function_containing_a_custom_gradient():
    def prog(tf):
        log1pexp = _log1pexp(tf)
        g = tf.function(lambda x: log1pexp(x) * 2.0)
        x = tf.constant([100.0, 0.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = g(x)
        return y, tape.gradient(y, x)
    with np.errstate(all="ignore"):
        same(prog)


# -- higher order ---------------------------------------------------------------------

def _fused(tf, second_order_scale):
    @tf.custom_gradient
    def op_with_fused_backprop(x):
        y, x_grad = tf.sin(x), tf.cos(x)          # a "fused" op giving y and dy/dx at once

        def first_order_gradient(dy):
            @tf.custom_gradient
            def first_order_custom(unused_x):
                def second_order_and_transpose(ddy):
                    return ddy * (-second_order_scale * tf.sin(x))
                return x_grad, second_order_and_transpose
            return dy * first_order_custom(x)
        return y, first_order_gradient
    return op_with_fused_backprop


@pytest.mark.parametrize("mode", ["eager", "function_tape", "function_gradients"])
@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_fused_backprop_defines_the_second_derivative(mode, scale):
    # The inner custom_gradient is the second-order rule: -scale*sin(x); scale 2
    # differs from the true second derivative -sin(x), and that is what comes out.
    def prog(tf):
        op = _fused(tf, scale)

        def nested_tapes(x):
            with tf.GradientTape() as t2:
                t2.watch(x)
                with tf.GradientTape() as t1:
                    t1.watch(x)
                    y = op(x)
                g = t1.gradient(y, x)
            return y, g, t2.gradient(g, x)

        def gradients(x):
            y = op(x)
            g = tf.gradients(y, x)[0]
            return y, g, tf.gradients(g, x)[0]
        body = nested_tapes if mode != "function_gradients" else gradients
        return (body if mode == "eager" else tf.function(body))(tf.constant([0.5, 1.0]))
    y, g, gg = same(prog)
    x = np.array([0.5, 1.0], np.float32)
    np.testing.assert_allclose(g.numpy(), np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(gg.numpy(), -scale * np.sin(x), rtol=1e-6)


def _op_with_gradient_of_dy(tf):
    # The seed's cautionary example: grad_grad_fn is the gradient with respect to dy.
    @tf.custom_gradient
    def op(x):
        y = x ** 3

        @tf.custom_gradient
        def grad_fn(dy):
            gdy = dy * 3.0 * x ** 2

            def grad_grad_fn(ddy):
                return ddy * 3.0 * x ** 2
            return gdy, grad_grad_fn
        return y, grad_fn
    return op


@pytest.mark.parametrize("mode", ["eager", "function_tape"])
@pytest.mark.parametrize("watch_dy", [False, True])
def test_grad_grad_fn_is_not_the_second_derivative(mode, watch_dy):
    def prog(tf):
        op = _op_with_gradient_of_dy(tf)

        def body(x, dy):
            with tf.GradientTape(persistent=True) as outer:
                outer.watch(x)
                if watch_dy:
                    outer.watch(dy)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = op(x)
                g = inner.gradient(y, x, output_gradients=dy)
            return g, outer.gradient(g, x), outer.gradient(g, dy)
        return (body if mode == "eager" else tf.function(body))(tf.constant(3.0), tf.constant(1.0))
    g, d_x, d_dy = same(prog)
    assert g.numpy() == 27.0
    if mode == "eager" and not watch_dy:
        assert d_x.numpy() == 18.0 and d_dy is None    # f's own ops: 6x
    else:                                               # only grad_grad_fn, for dy
        assert d_x is None and (d_dy.numpy() == 27.0 if watch_dy else d_dy is None)


def test_third_order_through_nested_custom_gradients():
    def prog(tf):
        @tf.custom_gradient
        def cube(x):
            @tf.custom_gradient
            def first(x_):
                @tf.custom_gradient
                def second(x__):
                    return 6.0 * x__, lambda d3: d3 * 6.0
                return 3.0 * x_ * x_, lambda d2: d2 * second(x_)
            return x * x * x, lambda dy: dy * first(x)
        x = tf.constant(1.5)
        with tf.GradientTape() as t3:
            t3.watch(x)
            with tf.GradientTape() as t2:
                t2.watch(x)
                with tf.GradientTape() as t1:
                    t1.watch(x)
                    y = cube(x)
                g1 = t1.gradient(y, x)
            g2 = t2.gradient(g1, x)
        return y, g1, g2, t3.gradient(g2, x)
    out = same(prog)
    assert [t.numpy() for t in out] == [3.375, 6.75, 9.0, 6.0]
