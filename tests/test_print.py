"""tf.print and tf.config.run_functions_eagerly against TensorFlow.

TensorFlow's print kernel writes to the process's streams from C++, so each
program below runs in a fresh Python process, once with `import tensorflow as
tf` and once with `import tapeflow as tf`, and the text each writes to stdout
and stderr is compared.  All the programs of this module share one process per
library (a marker line closes each program's output).
"""

import os
import subprocess
import sys
import textwrap

import pytest

import tapeflow as tf
from differential import same
from op_harness import HAVE_TF

PROGRAMS = {
    "values": """
        import numpy as np
        tf.print(tf.constant(3.14159265), tf.constant(1e10), tf.constant(1.5e-7), tf.constant(1234567.0))
        tf.print(tf.constant(0.1, tf.float64), tf.constant(1 / 3, tf.float64), tf.constant(-0.0))
        tf.print(tf.constant([np.nan, np.inf, -np.inf]), tf.constant(2.5, tf.float16), tf.constant(1 / 3, tf.bfloat16))
        tf.print(tf.constant(np.array([1e-40, -1e-40], np.float32)), tf.constant(5e-324, tf.float64))
        tf.print(tf.constant([1, 2, 3]), tf.constant(True), tf.constant([True, False]), tf.constant(7, tf.uint8))
        tf.print(tf.constant(-7, tf.int8), tf.constant(2**40, tf.int64), tf.constant(2**64 - 1, tf.uint64))
        tf.print(tf.constant("hi"))
        tf.print(tf.constant(["a", "b c"]), [tf.constant("hi")], "s", tf.constant("t"))
        tf.print(tf.constant(['a"b', "c\\nd", "t\\tx", "\\\\", "\\x00z", "\\x7f", "'", "\\r"]), summarize=-1)
        tf.print(tf.constant(1 + 2j), tf.constant([[1 + 2j, 3j], [1, 2]]))
        tf.print(tf.constant([[1 + 2j, 3j], [1, 2]]), summarize=-1)
        tf.print(tf.Variable([1.0, 2.5]))
        """,
    "summaries": """
        tf.print(tf.range(10)); tf.print(tf.range(7)); tf.print(tf.range(6))
        tf.print(tf.reshape(tf.range(100), [10, 10]))
        tf.print(tf.reshape(tf.range(24), [2, 3, 4]))
        tf.print(tf.reshape(tf.range(128), [8, 2, 8]))
        tf.print(tf.reshape(tf.range(2 * 8 * 8), [2, 8, 8]), summarize=2)
        tf.print(tf.range(10), summarize=-1); tf.print(tf.range(10), summarize=1)
        tf.print(tf.range(10), summarize=0); tf.print(tf.constant(3.0), summarize=0)
        tf.print(tf.range(10), summarize=100); tf.print(tf.range(10), summarize=None)
        tf.print(tf.zeros([0])); tf.print(tf.zeros([2, 0])); tf.print(tf.zeros([0, 3])); tf.print(tf.zeros([1, 1, 1]))
        tf.print(tf.reshape(tf.range(20, dtype=tf.float32), [4, 5]) / 3)
        """,
    "structures": """
        import collections
        tf.print("a", 1, 2.5, None, [1, "x"], {"b": tf.constant(1), "a": [tf.constant([1.5])]}, (tf.constant(2),),
                 sep="|", end="!\\n")
        tf.print("x:", tf.constant([1.0, 2.0]), "done")
        tf.print({"k": "v", "t": tf.constant(1)})
        tf.print("{}", "{}1", tf.constant(5), ["{}"])
        tf.print(collections.OrderedDict([("b", tf.constant(1)), ("a", 2)]))
        tf.print({"z": {"y": tf.constant([1, 2])}, "long": "x" * 80, "t": tf.constant(1)})
        tf.print(["a" * 50, "b" * 50, tf.constant(1)])
        tf.print(tf.constant(True), [True, None, 1.5, 2], (1,))
        tf.print()
        tf.print("", end="")
        tf.print("no newline", end="")
        tf.print(" then", tf.constant(1), sep="")
        """,
    "streams": """
        import sys
        tf.print("to stdout", tf.constant([1, 2]), output_stream=sys.stdout)
        tf.print("to stderr", output_stream=sys.stderr)
        tf.print("default is stderr")
        tf.print(tf.strings.format("a {} b {}", (tf.range(7), tf.constant("s")), summarize=2), output_stream=sys.stdout)
        tf.print(tf.strings.format("x{}x", [tf.constant(1.5), 2], placeholder="x"), output_stream=sys.stdout)
        """,
    "function_order": """
        v = tf.Variable(1.0)

        @tf.function
        def f(x):
            tf.print("start", x)
            v.assign_add(x)
            tf.print("after add", v)
            y = x * 2
            tf.print("y", y, "unused", y + 1)
            v.assign(y)
            tf.print("v now", v.read_value())
            return y

        f(tf.constant(1.0))
        f(tf.constant(2.0))
        f(3.0)
        tf.print("v", v)
        """,
    "function_control_flow": """
        @tf.function
        def g(x):
            y = tf.cond(x > 0, lambda: (tf.print("positive", x), x)[1], lambda: (tf.print("not positive"), -x)[1])
            i = tf.constant(0)
            def body(i, acc):
                tf.print("iteration", i, acc)
                return i + 1, acc * 2.0
            _, acc = tf.while_loop(lambda i, acc: i < 3, body, [i, y])
            tf.print("result", acc)
            return acc

        g(tf.constant(1.5))
        g(tf.constant(-2.0))
        """,
    "function_gradients": """
        @tf.function
        def inner_tape(x):
            with tf.GradientTape() as t:
                t.watch(x)
                y = x * x
                tf.print("forward", y)
            return t.gradient(y, x)
        tf.print("grad", inner_tape(tf.constant(3.0)))

        @tf.function
        def h(x):
            tf.print("h runs", x)
            return x * x
        x = tf.constant(2.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = h(x)
        tf.print("outer grad", tape.gradient(y, x))
        """,
    "run_eagerly": """
        @tf.function
        def f(x):
            tf.print("in f", x)
            return x + 1
        f(tf.constant(1))
        tf.config.run_functions_eagerly(True)
        tf.print("eagerly", tf.config.functions_run_eagerly(), f(tf.constant(2)))
        tf.config.run_functions_eagerly(False)
        tf.print("traced", tf.config.functions_run_eagerly(), f(tf.constant(3)))
        """,
    "tf1_session": """
        g = tf.Graph()
        with g.as_default():
            x = tf.compat.v1.placeholder(tf.float32)
            p = tf.print("x is", x)
            y = x * 2
            with tf.control_dependencies([p]):
                z = y + 1
            with tf.compat.v1.Session() as s:
                s.run(y, {x: 1.0})
                s.run(p, {x: 3.0})
                s.run(z, {x: 5.0})
        """,
}

_MARK = "=== end of program"


def _script(module):
    parts = [f"import {module} as tf", "import sys"]
    for name, body in PROGRAMS.items():
        parts.append(textwrap.dedent(body))
        parts.append(f"tf.print({_MARK + ' ' + name!r}); tf.print({_MARK + ' ' + name!r}, output_stream=sys.stdout)")
    return "\n".join(parts)


def _outputs(module, folder):
    script = folder / f"print_with_{module}.py"        # a file: AutoGraph reads the functions' source
    script.write_text(_script(module))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, f"{module} failed:\n{proc.stderr.decode(errors='replace')[-3000:]}"
    return {stream: _split(getattr(proc, stream).decode("utf-8", errors="replace")) for stream in ("stdout", "stderr")}


def _split(text):
    """{program name: its text} from one stream; lines TensorFlow logs itself are dropped."""
    out, current = {}, []
    for line in text.splitlines(keepends=True):
        if line.startswith(_MARK):
            out[line[len(_MARK) + 1:].strip()] = "".join(current)
            current = []
        elif not line.startswith(("WARNING:", "W0000", "I0000", "E0000")):
            current.append(line)
    return out


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    if not HAVE_TF:
        pytest.skip("TensorFlow is not installed")
    folder = tmp_path_factory.mktemp("print")
    return _outputs("tapeflow", folder), _outputs("tensorflow", folder)


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_printed_text_like_tensorflow(printed, name, stream):
    ours, theirs = printed
    assert ours[stream][name] == theirs[stream][name]


def test_prints_go_to_the_current_python_streams(capsys):
    """Written through `sys.stdout` / `sys.stderr` of the moment, so redirections capture them."""
    tf.print("out", tf.constant([1.5]), output_stream=sys.stdout)
    tf.print("err", {"a": tf.constant(2)})
    captured = capsys.readouterr()
    assert captured.out == "out [1.5]\n" and captured.err == "err {'a': 2}\n"


def test_print_to_a_file_appends(tmp_path):
    path = tmp_path / "log.txt"
    tf.print("one", tf.constant(1), output_stream=f"file://{path}")

    @tf.function
    def f():
        tf.print("two", output_stream=f"file://{path}")
        return tf.constant(0)
    f()
    f()
    assert path.read_text() == "one 1\ntwo\ntwo\n"


def test_print_to_logging(caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="tapeflow"):
        tf.print("info", tf.constant(1), output_stream=logging.INFO)
        tf.print("error", output_stream=logging.error)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.INFO, "info 1"), (logging.ERROR, "error")]


def test_print_returns_like_tensorflow():
    def program(tf):
        out = [tf.print("eager", output_stream=sys.stdout)]

        @tf.function
        def f(x):
            op = tf.print(x, output_stream=sys.stdout)
            out.append((op.type, op.name))
            return x
        f(tf.constant(1))
        return out
    same(program)


@pytest.mark.parametrize("call", [
    lambda tf: tf.print("x", output_stream="stdout"),
    lambda tf: tf.print("x", output_stream=None),
    lambda tf: tf.print("x", output_stream=3),
    lambda tf: tf.print("x", output_stream=__import__("io").StringIO()),
    lambda tf: tf.print("x", foo=1),
    lambda tf: tf.strings.format("a {} b {}", tf.constant(1)),
])
def test_errors_like_tensorflow(call):
    same(call)


def test_strings_format_like_tensorflow():
    same(lambda tf: [tf.strings.format("a {} b {}", (tf.range(7), tf.constant("s")), summarize=2),
                     tf.strings.format("{}", tf.constant([[1.5, 2.0]])),
                     tf.strings.format("no tensors", []),
                     tf.function(lambda x: tf.strings.format("x = {}", x))(tf.constant([1, 2]))])


def test_run_functions_eagerly_runs_python_each_call():
    calls = []

    @tf.function
    def f(x):
        calls.append(type(x).__name__)
        return x * 2
    f(tf.constant(1.0))
    f(tf.constant(2.0))
    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly() is True
        assert float(f(tf.constant(3.0))) == 6.0 and float(f(tf.constant(4.0))) == 8.0
    finally:
        tf.config.run_functions_eagerly(False)
    assert tf.config.functions_run_eagerly() is False
    f(tf.constant(5.0))
    assert calls == ["SymbolicTensor", "Tensor", "Tensor"]


def test_run_functions_eagerly_keeps_gradients_like_tensorflow():
    def program(tf):
        v = tf.Variable(2.0)

        @tf.function
        def loss(x):
            return tf.reduce_sum(x * v) ** 2
        tf.config.run_functions_eagerly(True)
        try:
            x = tf.constant([1.0, 2.0])
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = loss(x)
            return y, tape.gradient(y, [x, v]), tf.config.functions_run_eagerly()
        finally:
            tf.config.run_functions_eagerly(False)
    same(program)
