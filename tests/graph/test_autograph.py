"""AutoGraph, differential against TensorFlow: Python control flow on tensors inside
`tf.function` (converted source run by both libraries), gradients through it, the
errors TensorFlow gives, and `tf.autograph`'s public functions.

Each body below takes the module as its first argument, `fn(tf, *args)`, and is
run by `tf.function(lambda *a: fn(tf, *a))`: the lambda is converted, and `fn`
is converted because converted code calls it (AutoGraph converts called user
functions).  TensorFlow needs the source in a file, which these are.
"""

import contextlib
import importlib.util
import io
import textwrap
import warnings

import numpy as np
import pytest

import tapeflow
from differential import Raised, compare, run, same
from op_harness import tf_module


class Py:
    """An argument passed as a Python value (not made a tensor)."""

    def __init__(self, value):
        self.value = value


def _args(tf, values):
    return [v.value if isinstance(v, Py) else tf.constant(v) for v in values]


def _program(fn, *arg_sets):
    """Traces `fn` as a tf.function and calls it on each argument set."""
    def program(tf):
        f = tf.function(lambda *a: fn(tf, *a))
        return [f(*_args(tf, args)) for args in arg_sets]
    return program


def _tape_outside(fn, *arg_sets):
    """Gradients of a tf.function's output with respect to its tensor inputs (tape outside)."""
    def program(tf):
        f = tf.function(lambda *a: fn(tf, *a))
        out = []
        for args in arg_sets:
            xs = _args(tf, args)
            watched = [x for x in xs if not isinstance(x, int) and x.dtype.is_floating]
            with tf.GradientTape() as tape:
                tape.watch(watched)
                y = f(*xs)
            out.append((y, tape.gradient(y, watched)))
        return out
    return program


def _tape_inside(fn, *arg_sets):
    """The same gradients taken by a tape inside the function."""
    def program(tf):
        def body(*xs):
            watched = [x for x in xs if not isinstance(x, int) and x.dtype.is_floating]
            with tf.GradientTape() as tape:
                tape.watch(watched)
                y = fn(tf, *xs)
            return y, tape.gradient(y, watched)
        f = tf.function(body)
        return [f(*_args(tf, args)) for args in arg_sets]
    return program


def _symbolic_gradients(fn, *arg_sets):
    """`tf.gradients` inside the function."""
    def program(tf):
        def body(*xs):
            watched = [x for x in xs if x.dtype.is_floating]
            y = fn(tf, *xs)
            return y, tf.gradients(y, watched)
        f = tf.function(body)
        return [f(*_args(tf, args)) for args in arg_sets]
    return program


# -- the statement forms ----------------------------------------------------------------

def _if_else(tf, x):
    if x > 0:
        y = x * x
    else:
        y = -x
    return y


def _elif(tf, x):
    if x > 1:
        y = x * 3
    elif x > 0:
        y = x * 2
    elif x > -1:
        y = x
    else:
        y = tf.zeros_like(x)
    return y


def _if_without_else(tf, x):
    y = x
    if tf.reduce_sum(x) > 0:
        y = y * 2
    return y


def _python_if(tf, x, n):
    if n > 2:
        x = x * 2
    else:
        x = x + 1
    return x


def _while(tf, x):
    i = 0
    while x < 100.0:
        x = x * 2.0
        i += 1
    return x, i


def _python_while(tf, x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


def _for_range(tf, x, n):
    s = tf.zeros_like(x)
    for i in tf.range(n):
        s = s + x * tf.cast(i, x.dtype)
    return s


def _for_range_down(tf, x, n):
    s = tf.zeros_like(x)
    for i in tf.range(n, 0, -2):
        s = s + x * tf.cast(i, x.dtype)
    return s, i


def _for_builtin_range(tf, x, n):
    s = 0.0
    for i in range(n):
        s += x
    return s


def _for_rows(tf, m):
    s = tf.zeros([3])
    for row in m:
        s = s + row * row
    return s, row


def _for_python_list(tf, x):
    for k in [1.0, 2.0, 3.0]:
        x = x * k
    return x


def _break(tf, x, n):
    s = tf.zeros_like(x)
    for i in tf.range(n):
        if tf.reduce_sum(s) > 5.0:
            break
        s = s + x
    return s


def _continue(tf, x, n):
    s = tf.zeros_like(x)
    for i in tf.range(n):
        if i % 2 == 0:
            continue
        s = s + x * tf.cast(i, x.dtype)
    return s


def _while_break(tf, x):
    while x < 1000.0:
        x = x * 3.0
        if x > 50.0:
            break
        x = x + 1.0
    return x


def _while_else(tf, x):
    while x < 10.0:
        x = x + 3.0
    else:
        x = x * 10.0
    return x


def _early_return(tf, x):
    if x > 0:
        return x * 2
    return -x


def _return_in_both(tf, x):
    if x > 0:
        return x
    else:
        return x * x


def _return_nested(tf, x):
    if x > 0:
        if x > 2:
            return x * 10
        y = x + 1
    else:
        y = x - 1
    return y


def _nested(tf, x, n):
    total = tf.zeros_like(x)
    for i in tf.range(n):
        j = 0
        while j < i:
            if (i + j) % 2 == 0:
                total = total + x
            else:
                total = total - 0.5 * x
            j += 1
    return total


def _boolean(tf, x, y):
    a = x > 0 and y > 0
    b = x > 0 or y > 0
    c = not x > 0
    d = x if x > y else y
    return a, b, c, d


def _helper(tf, x):
    if x > 0:
        return x
    return 0.0 * x


def _calls(tf, x):
    return _helper(tf, x) + _helper(tf, -x)


class _Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, tf, x):
        if x > 0:
            x = x * self.k
        return x

    def grow(self, tf, x):
        while tf.abs(x) < 10.0:
            x = x * self.k
        return x


def _methods(tf, x):
    scaler = _Scaler(3.0)
    return scaler(tf, x), scaler.grow(tf, x)


def _tensor_array_write(tf, x, n):
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in tf.range(n):
        ta = ta.write(i, x * tf.cast(i, tf.float32))
    return ta.stack()


def _tensor_array_read(tf, x):
    ta = tf.TensorArray(tf.float32, size=3).unstack(x)
    s = 0.0
    for i in tf.range(ta.size()):
        s += ta.read(i)
    return s


def _defined_in_loop(tf, x, n):
    for i in tf.range(n):
        y = x * 2.0
    return y


def _one_branch_temporary(tf, x):
    if x > 0:
        t = x * 2
        y = t
    else:
        y = x
    return y


def _rnn(tf, xs, h):
    for x in xs:
        h = tf.tanh(h * 0.5 + x)
    return tf.reduce_sum(h)


def _python_loop_of_tensor_ifs(tf, x):
    for k in range(3):
        if x > k:
            x = x - 1.0
    return x


def _tensor_array_in_branches(tf, x):
    ta = tf.TensorArray(tf.float32, size=2)
    if x > 0:
        ta = ta.write(0, x)
    else:
        ta = ta.write(1, -x)
    return ta.stack()


def _casts(tf, x, n, v):
    return int(x) + 1, float(n) * 2.0, len(v)


def _assert_positive(tf, x):
    assert x > 0, "x must be positive"
    assert x < 100
    return x * 2


def _lambda_condition(tf, x):
    f = lambda v: v * 2 if v > 0 else -v  # noqa: E731 -- a converted lambda
    return f(x)


def _none_before_loop(tf, x, n):
    y = None
    for i in tf.range(n):
        y = x
    return y


SUITE = {
    "if_else": (_if_else, [2.0], [-1.5]),
    "elif": (_elif, [2.0], [0.5], [-0.5], [-3.0]),
    "if_without_else": (_if_without_else, [[1.0, 2.0]], [[-3.0, 1.0]]),
    "python_if": (_python_if, [1.0, Py(3)], [1.0, Py(1)]),
    "while": (_while, [3.0], [200.0]),
    "python_while": (_python_while, [1.5]),
    "for_range": (_for_range, [[1.0, 2.0], np.int32(4)], [[1.0, 2.0], np.int32(0)]),
    "for_range_down": (_for_range_down, [2.0, np.int32(7)], [2.0, np.int32(0)]),
    "tensor_array_in_branches": (_tensor_array_in_branches, [2.0], [-3.0]),
    "casts": (_casts, [2.5, np.int32(3), [1.0, 2.0, 3.0]]),
    "for_builtin_range": (_for_builtin_range, [2.0, np.int32(3)], [2.0, Py(2)]),
    "for_rows": (_for_rows, [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]),
    "for_python_list": (_for_python_list, [1.5]),
    "break": (_break, [[1.0, 2.0], np.int32(10)], [[1.0, 2.0], np.int32(1)]),
    "continue": (_continue, [[1.0, 2.0], np.int32(6)]),
    "while_break": (_while_break, [1.0], [2000.0]),
    "early_return": (_early_return, [3.0], [-3.0]),
    "return_in_both": (_return_in_both, [3.0], [-3.0]),
    "return_nested": (_return_nested, [3.0], [1.0], [-1.0]),
    "nested": (_nested, [1.5, np.int32(5)]),
    "boolean": (_boolean, [1.0, -1.0], [2.0, 3.0], [-1.0, -2.0]),
    "calls": (_calls, [2.0], [-2.0]),
    "methods": (_methods, [2.0], [-2.0]),
    "tensor_array_write": (_tensor_array_write, [1.5, np.int32(4)]),
    "tensor_array_read": (_tensor_array_read, [[1.0, 2.0, 3.0]]),
    "defined_in_loop": (_defined_in_loop, [1.5, np.int32(3)]),
    "one_branch_temporary": (_one_branch_temporary, [1.5], [-1.5]),
    "rnn": (_rnn, [[0.1, -0.2, 0.3], 0.5]),
    "python_loop_of_tensor_ifs": (_python_loop_of_tensor_ifs, [5.0], [0.5]),
    "lambda_condition": (_lambda_condition, [2.0], [-2.0]),
    "none_before_loop": (_none_before_loop, [1.0, np.int32(3)]),
}


@pytest.mark.parametrize("name", list(SUITE))
def test_statement(name):
    fn, *arg_sets = SUITE[name]
    same(_program(fn, *arg_sets))


GRADIENTS = ["if_else", "elif", "if_without_else", "while", "for_range", "for_rows", "break", "continue",
             "while_break", "early_return", "return_nested", "nested", "calls", "methods", "tensor_array_write",
             "rnn", "python_loop_of_tensor_ifs"]


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradient_tape_outside(name):
    fn, *arg_sets = SUITE[name]
    same(_tape_outside(fn, *arg_sets))


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradient_tape_inside(name):
    fn, *arg_sets = SUITE[name]
    same(_tape_inside(fn, *arg_sets))


@pytest.mark.parametrize("name", ["if_else", "while", "for_range", "break", "rnn"])
def test_gradients_in_the_graph(name):
    fn, *arg_sets = SUITE[name]
    same(_symbolic_gradients(fn, *arg_sets))


def test_python_conditions_add_no_control_flow_ops():
    f = tapeflow.function(lambda x, n: _python_if(tapeflow, x, n))
    concrete = f.get_concrete_function(tapeflow.TensorSpec([], tapeflow.float32), 3)
    assert not {op.type for op in concrete.graph._ops} & {"If", "While"}
    f = tapeflow.function(lambda x: _if_else(tapeflow, x))
    assert "If" in {op.type for op in f.get_concrete_function(tapeflow.TensorSpec([], tapeflow.float32)).graph._ops}


def test_variables_written_in_branches():
    def program(tf):
        v = tf.Variable(0.0)

        @tf.function
        def f(x):
            if x > 0:
                v.assign_add(x)
            else:
                v.assign_sub(1.0)
            for i in tf.range(3):
                v.assign_add(tf.cast(i, tf.float32))
            while v < 20.0:                 # a loop whose only effect is on the variable
                v.assign_add(4.0)
            return v.read_value()
        return [f(tf.constant(2.0)), f(tf.constant(-1.0)), v]
    same(program)


def test_module_style_model_trains():
    def program(tf):
        class Model:
            def __init__(self):
                self.w = tf.Variable([[0.5], [-0.3]])

            @tf.function
            def loss(self, x, y, clip):
                pred = tf.matmul(x, self.w)
                err = pred - y
                if clip:
                    err = tf.clip_by_value(err, -1.0, 1.0)
                total = 0.0
                for row in err:
                    if tf.reduce_sum(row) > 0:
                        total += tf.reduce_sum(row * row)
                    else:
                        total += 0.5 * tf.reduce_sum(tf.abs(row))
                return total
        model = Model()
        x = tf.constant([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
        y = tf.constant([[1.0], [0.0], [2.0]])
        out = []
        for step in range(3):
            with tf.GradientTape() as tape:
                loss = model.loss(x, y, step % 2 == 0)
            (g,) = tape.gradient(loss, [model.w])
            model.w.assign_sub(0.1 * g)
            out.append((loss, g))
        return out, model.w
    same(program)


# -- errors -----------------------------------------------------------------------------

def _one_branch(tf, x):
    if x > 0:
        y = x
    return y


def _dtype_change(tf, x, n):
    s = tf.constant(0)
    for i in tf.range(n):
        s = tf.cast(s, tf.float32) + x
    return s


def _shape_change(tf, x, n):
    for i in tf.range(n):
        x = tf.concat([x, x], 0)
    return x


def _structure_change(tf, x, n):
    s = x
    for i in tf.range(n):
        s = (s, s)
    return s


def _branch_dtypes(tf, x):
    if x > 0:
        y = x
    else:
        y = 1
    return y


def _branch_structures(tf, x):
    if x > 0:
        y = (x, x)
    else:
        y = x
    return y


def _none_in_branch(tf, x):
    y = None
    if x > 0:
        y = x
    return y


def _float_condition(tf, x):
    if x:
        x = x + 1
    return x


def _vector_condition(tf, x):
    if x > 0:
        x = x + 1
    return x


def _return_in_one_branch(tf, x):
    if x > 0:
        return x


def _return_in_tensor_loop(tf, x, n):
    for i in tf.range(n):
        x = x + 1
        if x > 3:
            return x
    return x * 0


def _tensor_break_in_python_loop(tf, x):
    for i in range(5):
        if x > 2:
            break
        x = x + 1
    return x


def _python_while_turning_tensor(tf, x):
    i = 0
    while i < 3:
        i = x
    return i


def _zero_division(tf, x):
    return x * (1 / 0)


class _TwoArgumentError(Exception):
    def __init__(self, a, b):
        super().__init__(a)
        self.b = b


class _PlainError(Exception):
    pass


def _raise_two_argument_error(tf, x):
    raise _TwoArgumentError("a", "b")


def _raise_plain_error(tf, x):
    if x > 0:
        raise _PlainError("plain")
    return x


def _missing_key(tf, x):
    return {}["missing"]


def _raise_value_error_deep(tf, x):
    return _helper_raising(x)


def _helper_raising(x):
    raise ValueError("from a helper")


def _append_in_tensor_loop(tf, x, n):
    out = []
    for i in tf.range(n):
        out.append(x * tf.cast(i, tf.float32))
    return tf.stack(out)


def _list_in_tensor_loop(tf, x, n):
    out = []
    for i in tf.range(n):
        out = out + [x]
    return out


def _iterate_tensor_array(tf, x):
    ta = tf.TensorArray(tf.float32, size=3).unstack(x)
    s = 0.0
    for v in ta:
        s += v
    return s


ERRORS = {
    "one_branch": (_one_branch, [1.0]),
    "dtype_change": (_dtype_change, [1.0, np.int32(3)]),
    "shape_change": (_shape_change, [[1.0], np.int32(3)]),
    "structure_change": (_structure_change, [1.0, np.int32(3)]),
    "branch_dtypes": (_branch_dtypes, [1.0]),
    "branch_structures": (_branch_structures, [1.0]),
    "none_in_branch": (_none_in_branch, [1.0]),
    "float_condition": (_float_condition, [1.0]),
    "vector_condition": (_vector_condition, [[1.0, 2.0]]),
    "return_in_one_branch": (_return_in_one_branch, [1.0]),
    "return_in_tensor_loop": (_return_in_tensor_loop, [1.0, np.int32(5)]),
    "tensor_break_in_python_loop": (_tensor_break_in_python_loop, [1.0]),
    "python_while_turning_tensor": (_python_while_turning_tensor, [1.0]),
    "zero_division": (_zero_division, [1.0]),
    "two_argument_error": (_raise_two_argument_error, [1.0]),
    "plain_error": (_raise_plain_error, [1.0]),
    "missing_key": (_missing_key, [1.0]),
    "value_error_in_helper": (_raise_value_error_deep, [1.0]),
    "iterate_tensor_array": (_iterate_tensor_array, [[1.0, 2.0, 3.0]]),
    "append_in_tensor_loop": (_append_in_tensor_loop, [1.0, np.int32(3)]),
    "list_in_tensor_loop": (_list_in_tensor_loop, [1.0, np.int32(3)]),
    "zero_iterations": (_defined_in_loop, [1.5, np.int32(0)]),
    "assert_on_a_tensor": (_assert_positive, [2.0]),     # TensorFlow leaves `assert` unconverted
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error(name):
    fn, *arg_sets = ERRORS[name]
    ours = same(_program(fn, *arg_sets))
    assert isinstance(ours, Raised)


def test_error_messages_name_the_variable_and_the_user_line():
    ours = run(_program(_one_branch, [1.0]), tapeflow)
    message = str(ours.exc)
    assert type(ours.exc) is ValueError
    assert message.startswith("in user code:")
    assert "if x > 0:" in message and "in _one_branch  *" in message
    assert "'y' must also be initialized in the else branch" in message
    ours = run(_program(_raise_two_argument_error, [1.0]), tapeflow)
    assert type(ours.exc).__name__ == "StagingError" and "_TwoArgumentError: a" in str(ours.exc)
    ours = run(_program(_dtype_change, [1.0, np.int32(3)]), tapeflow)
    assert "'s' has dtype int32 before the loop, but dtype float32 after one iteration" in str(ours.exc)


def _source_program(tmp_path, source):
    """Runs `source` (a module defining `main()`, `tf` imported at its top) as written against
    each library, each from its own file; compares the results."""
    results = []
    for name, module in (("tapeflow", "tapeflow"), ("tensorflow", tf_module().__name__)):
        path = tmp_path / f"program_{name}.py"
        path.write_text(f"import {module} as tf\n" + textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(f"autograph_program_{name}", path)
        program = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(program)
        results.append(run(lambda tf: program.main(), None))
    compare(*results)
    return results[0]


def test_shape_invariants_from_set_loop_options(tmp_path):
    # TensorFlow reads the directive only where `tf` is a global (as in a user's module)
    _source_program(tmp_path, """
        @tf.function
        def grow(x, n):
            for i in tf.range(n):
                tf.autograph.experimental.set_loop_options(shape_invariants=[(x, tf.TensorShape([None]))])
                x = tf.concat([x, x], 0)
            return x

        @tf.function
        def capped(x):
            while x < 100.0:
                tf.autograph.experimental.set_loop_options(maximum_iterations=3)
                x = x * 2.0
            return x

        def main():
            return grow(tf.constant([1.0]), tf.constant(3)), capped(tf.constant(1.0))
        """)


def test_tutorial_style_program(tmp_path):
    _source_program(tmp_path, """
        import numpy as np

        def collatz_steps(n):
            steps = 0
            while n != 1:
                if n % 2 == 0:
                    n = n // 2
                else:
                    n = 3 * n + 1
                steps += 1
            return steps

        @tf.function
        def fizzbuzz_sum(limit):
            total = 0
            for i in tf.range(1, limit + 1):
                if i % 15 == 0:
                    total += 15
                elif i % 3 == 0 or i % 5 == 0:
                    continue
                else:
                    total += i
            return total

        @tf.function
        def train(x, y, w, steps):
            losses = tf.TensorArray(tf.float32, size=steps)
            for step in tf.range(steps):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((x * w - y) ** 2)
                w = w - 0.1 * tape.gradient(loss, w)
                losses = losses.write(step, loss)
                if loss < 1e-3:
                    break
            return w, losses.stack()

        def main():
            x = tf.constant(np.linspace(-1, 1, 8), tf.float32)
            return (tf.function(collatz_steps)(tf.constant(27)), fizzbuzz_sum(tf.constant(40)),
                    train(x, 3.0 * x, tf.constant(0.0), tf.constant(50)))
        """)


# -- print, tf.autograph, autograph=False ------------------------------------------------

def _printing(tf, x):
    print("tracing", x.dtype.name)
    if x > 0:
        x = x + 1.0
    return x


def test_print_runs_while_tracing():
    texts = []
    for module in (tapeflow, tf_module()):
        stream = io.StringIO()
        with contextlib.redirect_stdout(stream):
            run(_program(_printing, [1.0], [-1.0], [2.0]), module)
        texts.append(stream.getvalue())
    assert texts[0] == texts[1] == "tracing float32\n"


def test_tf_print_runs_when_the_branch_runs(capsys):
    @tapeflow.function
    def f(x):
        if x > 0:
            tapeflow.print("positive", x)
        else:
            tapeflow.print("not positive")
        return x
    capsys.readouterr()
    f(tapeflow.constant(2.0))
    f(tapeflow.constant(-1.0))
    err = capsys.readouterr().err
    assert err == "positive 2\nnot positive\n"


def _absolute(x):
    if x > 0:
        return x
    return -x


def test_to_graph_and_to_code():
    def program(tf):
        converted = tf.autograph.to_graph(_absolute)
        code = tf.autograph.to_code(_absolute)
        staged = tf.function(converted, autograph=False)
        return [converted(tf.constant(-2.0)), converted(3.0), staged(tf.constant(-4.0)), isinstance(code, str),
                "ag__" in code]
    same(program)


def _not_converted_helper(x):
    if x > 0:
        x = x * 2
    return x


def test_do_not_convert_and_autograph_false():
    def program(tf):
        kept = tf.autograph.experimental.do_not_convert(_not_converted_helper)
        out = [run(lambda tf: tf.function(lambda x: kept(x))(tf.constant(1.0)), tf),
               run(lambda tf: tf.function(_if_else_plain, autograph=False)(tf.constant(1.0)), tf),
               kept(tf.constant(2.0))]
        return [type(o.exc).__name__ if isinstance(o, Raised) else o for o in out]
    ours, theirs = run(program, tapeflow), run(program, tf_module())
    assert ours[2].numpy() == theirs[2].numpy() == 4.0
    assert ours[:2] == theirs[:2] == ["OperatorNotAllowedInGraphError"] * 2     # a TypeError


def _if_else_plain(x):
    if x > 0:
        x = x * 2
    return x


# -- conversion: cache, closures, unavailable source -------------------------------------

def test_conversion_is_cached_per_function_and_code(monkeypatch):
    from tapeflow.graph.autograph import conversion, transformer
    calls = []
    original = transformer.convert_function
    monkeypatch.setattr(transformer, "convert_function",
                        lambda node, name, **kw: calls.append(name) or original(node, name, **kw))

    def make(k):
        def scaled(x):
            if x > 0:
                x = x * k
            return x
        return scaled
    f2, f3 = make(2.0), make(3.0)
    assert conversion.converted_callable(f2) is conversion.converted_callable(f2)
    g2, g3 = conversion.converted_callable(f2), conversion.converted_callable(f3)
    assert calls == ["scaled"]                      # one transformation for the two closures
    assert float(g2(1.0)) == 2.0 and float(g3(1.0)) == 3.0
    f = tapeflow.function(f2)
    f(tapeflow.constant(1.0)), f(tapeflow.constant(1.0, tapeflow.float64))      # retraced, not converted again
    assert calls == ["scaled"]


def test_closure_cells_are_shared_with_the_original():
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        if x > 0:
            x = x + count
        return x
    f = tapeflow.function(bump)
    assert float(f(tapeflow.constant(1.0))) == 2.0 and count == 1
    assert float(tapeflow.autograph.to_graph(bump)(1.0)) == 3.0 and count == 2


def test_library_functions_are_not_converted():
    from tapeflow.graph.autograph import conversion
    assert conversion.converted_callable(tapeflow.reduce_sum) is tapeflow.reduce_sum
    assert conversion.converted_callable(np.sum) is np.sum
    assert conversion.converted_callable(len) is len


def test_function_without_source_runs_unconverted_with_a_warning():
    def program(tf):
        namespace = {}
        exec("def f(x):\n    return x * 2\n", namespace)   # no file: no source to convert
        return [tf.function(namespace["f"])(tf.constant(2.0)),
                run(lambda tf: tf.autograph.to_code(namespace["f"]), tf),
                run(lambda tf: tf.autograph.to_graph(namespace["f"]), tf)]
    with pytest.warns(UserWarning, match="AutoGraph could not transform"):
        ours = same(program)
    assert type(ours[1].exc).__name__ == "ConversionError"


def test_unconverted_python_function_keeps_python_semantics():
    """A converted function gives the same results as the original on Python values."""
    def python_only(values, limit):
        out = []
        for v in values:
            if v % 3 == 0:
                continue
            if v > limit:
                break
            out.append(v)
        total = 0
        while total < 10 and out:
            total += out.pop()
        return total if total else None

    converted = tapeflow.autograph.to_graph(python_only)
    for limit in (0, 4, 100):
        assert converted(list(range(12)), limit) == python_only(list(range(12)), limit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert converted([], 1) is None

    def first_over(values, limit):
        for v in values:
            while v > 100:
                v = v // 2
                if v == limit:
                    return -v
            if v > limit:
                return v
        return None
    converted = tapeflow.autograph.to_graph(first_over)
    for values, limit in (([1, 5, 9], 4), ([1, 2], 4), ([1000, 3], 125), ([], 0)):
        assert converted(values, limit) == first_over(values, limit)


def _factorial(n, x):
    if n == 0:
        return x
    return _factorial(n - 1, x * n)


_STEP = 0.0


def _with_global(x):
    global _STEP
    _STEP = 5.0
    while x < 10.0:
        x = x + _STEP
    return x


def test_signatures_recursion_and_globals():
    def program(tf):
        @tf.function
        def f(x, scale=2.0, *rest, shift=1.0, **extra):
            if x > 0:
                x = x * scale
            return x + shift + sum(rest) + extra.get("more", 0.0)
        return [f(tf.constant(1.0), 3.0, 1.0, shift=3.0, more=10.0), f(tf.constant(-1.0)),
                tf.function(_factorial)(4, tf.constant(1.5)), tf.function(_with_global)(tf.constant(1.0)), _STEP]
    same(program)


def test_super_in_a_converted_branch():
    """Deliberate difference: TensorFlow 2.21 fails on `super()` inside a converted branch
    (AttributeError); tapeflow passes the method's class and instance."""
    class Base:
        def value(self, x):
            return x + 1.0

    class Child(Base):
        @tapeflow.function
        def value(self, x):
            if x > 0:
                y = super().value(x) * 2.0
            else:
                y = x
            return y
    assert [float(Child().value(tapeflow.constant(v))) for v in (1.0, -1.0)] == [4.0, -1.0]


def test_loop_else_clauses_are_converted():
    """Deliberate difference: TensorFlow 2.21 does not convert `while ... else` (it warns and
    runs the function as written, so a tensor test fails); tapeflow converts it."""
    def while_else(x):
        while x < 10.0:
            x = x + 3.0
            if x == 7.0:
                break
        else:
            x = x * 10.0
        return x

    def for_else(x, n):
        for i in tapeflow.range(n):
            if x > 5.0:
                break
            x = x + 2.0
        else:
            x = -x
        return x
    f, g = tapeflow.function(while_else), tapeflow.function(for_else)
    assert [float(f(tapeflow.constant(v))) for v in (1.0, 2.0, 20.0)] == [7.0, 110.0, 200.0]
    assert [float(g(tapeflow.constant(1.0), tapeflow.constant(n))) for n in (1, 5)] == [-3.0, 7.0]


def test_to_graph_of_a_method():
    """A bound method converts to a bound method (TensorFlow 2.21 returns the function
    unbound, so the call misses an argument)."""
    grow = tapeflow.autograph.to_graph(_Scaler(2.0).grow)
    out = tapeflow.function(lambda x: grow(tapeflow, x), autograph=False)(tapeflow.constant(3.0))
    assert float(out) == 12.0
