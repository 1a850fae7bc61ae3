"""Strategies drawing bad inputs for public APIs, run with tapeflow and TensorFlow (issue 13).

A drawn `Case` is one call of a public API with one bad argument (wrong shape,
dtype or structure, a non-tensor, None, a string, NaN/inf, a huge rank, a bad
axis or perm), made eagerly or inside a `tf.function`, or one misuse of a
tape or variable.  `Case.program(tf)` runs it and then a valid follow-up
computation with the same tape, variable or function, and returns both
outcomes; an exception is caught where it happens and returned as a
`differential.Raised`, so `differential.compare` checks the exception classes
(or the values when the call succeeds) and that the follow-up gives
TensorFlow's answer.

Inputs TensorFlow itself cannot survive are never drawn (`UNSAFE`): `max_pool`
with a VALID window larger than its input aborts TensorFlow 2.21 eagerly
(SIGFPE), and `split` with a 2-D size tensor in a function fails a CHECK.
"""

import dataclasses
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from differential import Raised

X = np.arange(1, 7, dtype=np.float32).reshape(2, 3)      # the valid operand every call gets


def _bad_values():
    """name -> `value(tf)`: arguments that are wrong for most APIs below."""
    return {
        "none": lambda tf: None,
        "str": lambda tf: "a",
        "float": lambda tf: 1.5,
        "nan": lambda tf: float("nan"),
        "inf": lambda tf: float("inf"),
        "neg_int": lambda tf: -9,
        "big_int": lambda tf: 7,
        "bool": lambda tf: True,
        "mixed_list": lambda tf: [1, "a"],
        "ragged_list": lambda tf: [[1], [1, 2]],
        "none_in_list": lambda tf: [1, None],
        "float_list": lambda tf: [0.5, 2.0],
        "repeated_axes": lambda tf: [0, 0],
        "perm_out_of_range": lambda tf: [0, 2],
        "long_list": lambda tf: [1, 1, 1],
        "huge_rank": lambda tf: [1] * 70,
        "empty_list": lambda tf: [],
        "int_tensor": lambda tf: tf.constant([[1, 2, 3], [4, 5, 6]]),
        "float64_tensor": lambda tf: tf.constant(X.astype(np.float64)),
        "nan_tensor": lambda tf: tf.constant([[np.nan, np.inf, -np.inf]] * 2, tf.float32),
        "other_shape": lambda tf: tf.ones([3, 2]),
        "wider": lambda tf: tf.ones([2, 4]),
        "scalar_tensor": lambda tf: tf.constant(2.0),
        "bool_tensor": lambda tf: tf.constant([True, False]),
        "string_tensor": lambda tf: tf.constant(["a", "b"]),
        "numpy_float": lambda tf: np.ones([2, 3], np.float64),
        "tensor_in_list": lambda tf: [tf.constant(1.0), "a"],
    }


BAD = _bad_values()


# name -> `call(tf, x, bad)`: a public API applied to the valid operand x ([2, 3] float32) and one bad value.
APIS = {
    "reduce_sum": lambda tf, x, b: tf.reduce_sum(x, axis=b),
    "reduce_mean": lambda tf, x, b: tf.reduce_mean(x, axis=b),
    "reduce_max": lambda tf, x, b: tf.reduce_max(x, axis=b),
    "reduce_prod": lambda tf, x, b: tf.reduce_prod(x, axis=b),
    "reduce_logsumexp": lambda tf, x, b: tf.reduce_logsumexp(x, axis=b),
    "argmax": lambda tf, x, b: tf.argmax(x, axis=b),
    "cumsum": lambda tf, x, b: tf.cumsum(x, axis=b),
    "concat_value": lambda tf, x, b: tf.concat([x, b], 0),
    "concat_axis": lambda tf, x, b: tf.concat([x, x], b),
    "add_n": lambda tf, x, b: tf.add_n([x, b]),
    "stack": lambda tf, x, b: tf.stack([x, b]),
    "unstack": lambda tf, x, b: tf.unstack(x, axis=b),
    "transpose": lambda tf, x, b: tf.transpose(x, b),
    "reshape": lambda tf, x, b: tf.reshape(x, b),
    "expand_dims": lambda tf, x, b: tf.expand_dims(x, b),
    "squeeze": lambda tf, x, b: tf.squeeze(x, b),
    "tile": lambda tf, x, b: tf.tile(x, b),
    "pad": lambda tf, x, b: tf.pad(x, b),
    "reverse": lambda tf, x, b: tf.reverse(x, b),
    "split": lambda tf, x, b: tf.split(x, b, axis=1),
    "broadcast_to": lambda tf, x, b: tf.broadcast_to(x, b),
    "zeros": lambda tf, x, b: tf.zeros(b) + tf.reduce_sum(x),
    "ones": lambda tf, x, b: tf.ones(b) + tf.reduce_sum(x),
    "fill": lambda tf, x, b: tf.fill(b, 1.0) + tf.reduce_sum(x),
    "matmul": lambda tf, x, b: tf.matmul(x, b),
    "add": lambda tf, x, b: x + b,
    "multiply": lambda tf, x, b: tf.multiply(x, b),
    "maximum": lambda tf, x, b: tf.maximum(x, b),
    "exp": lambda tf, x, b: tf.exp(b) + tf.reduce_sum(x),
    "softmax": lambda tf, x, b: tf.nn.softmax(b) + tf.reduce_sum(x),
    "relu": lambda tf, x, b: tf.nn.relu(b) + tf.reduce_sum(x),
    "cast": lambda tf, x, b: tf.cast(b, tf.float32) + tf.reduce_sum(x),
    "gather": lambda tf, x, b: tf.gather(x, b),
    "one_hot": lambda tf, x, b: tf.one_hot(b, 3),
    "clip_by_value": lambda tf, x, b: tf.clip_by_value(x, b, 4.0),
    "where": lambda tf, x, b: tf.where(b, x, x),
    "slice": lambda tf, x, b: tf.slice(x, b, [1, 1]),
    "avg_pool": lambda tf, x, b: tf.nn.avg_pool(tf.reshape(x, [1, 2, 3, 1]), b, 1, "SAME"),
    "max_pool_traced_only": lambda tf, x, b: tf.nn.max_pool(tf.reshape(x, [1, 2, 3, 1]), b, 1, "VALID"),
}

EAGER_UNSAFE = {"max_pool_traced_only"}      # aborts TensorFlow eagerly (see the module docstring)
UNSAFE = {("split", "int_tensor", True)}      # (api, bad, traced) aborting TensorFlow


@dataclasses.dataclass(frozen=True)
class Case:
    """One drawn bad call (`api` on `bad`, eagerly or `traced`), or one misuse scenario."""
    api: str
    bad: str
    traced: bool

    def program(self, tf):
        if self.api in MISUSES:
            return MISUSES[self.api](tf, self.bad)
        call = APIS[self.api]
        bad = BAD[self.bad](tf)
        if self.traced:
            return _traced_call(tf, call, bad)
        return _eager_call(tf, call, bad)

    def __repr__(self):
        return f"Case({self.api!r}, {self.bad!r}, traced={self.traced})"


def outcome(fn):
    """`fn()`, with every tensor in it read into NumPy (a rank above 64 fails there in
    TensorFlow), or the `Raised` exception."""
    try:
        out = fn()
        for leaf in out if isinstance(out, (list, tuple)) else [out]:
            if hasattr(leaf, "numpy"):
                leaf.numpy()
        return out
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return Raised(exc)


def _eager_call(tf, call, bad):
    """The call under a persistent tape watching x and a variable, then a gradient through both."""
    v = tf.Variable(X)
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        first = outcome(lambda: call(tf, x * v, bad))
        y = tf.reduce_sum(x * v * x)
    after = outcome(lambda: tape.gradient(y, [x, v]))
    return {"call": first, "after": after, "variable": v.read_value()}


def _traced_call(tf, call, bad):
    """The call inside a tf.function, then the same function on its valid branch."""
    v = tf.Variable(X)

    @tf.function
    def f(a, use_bad):
        if use_bad:
            return call(tf, a * v, bad)
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = tf.reduce_sum(a * v * a)
        return tape.gradient(y, [a, v])

    x = tf.constant(X)
    first = outcome(lambda: f(x, True))
    return {"call": first, "after": outcome(lambda: f(x, False)), "variable": v.read_value()}


# -- misuse of tapes and variables: name -> `scenario(tf, bad_name)` -----------------------

def _gradient_twice(tf, bad):
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    first = outcome(lambda: tape.gradient(y, x))
    second = outcome(lambda: tape.gradient(y, x))
    return {"first": first, "second": second}


def _jacobian_one_shot_no_pfor(tf, bad):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    first = outcome(lambda: tape.jacobian(y, x, experimental_use_pfor=False))
    return {"first": first, "after": outcome(lambda: tape.gradient(y, x))}


def _watch_bad(tf, bad):
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        first = outcome(lambda: tape.watch(BAD[bad](tf)))
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    return {"watch": first, "after": outcome(lambda: tape.gradient(y, x))}


def _watch_int(tf, bad):
    i = tf.constant([1, 2])
    with tf.GradientTape() as tape:
        tape.watch(i)
        y = i * i
    return {"grad": outcome(lambda: tape.gradient(y, i))}


def _gradient_bad_source(tf, bad):
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    first = outcome(lambda: tape.gradient(y, BAD[bad](tf)))
    return {"first": first, "after": outcome(lambda: tape.gradient(y, x))}


def _gradient_bad_target(tf, bad):
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    first = outcome(lambda: tape.gradient(BAD[bad](tf), x))
    return {"first": first, "after": outcome(lambda: tape.gradient(y, x))}


def _gradient_bad_output_gradients(tf, bad):
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    first = outcome(lambda: tape.gradient(y, x, output_gradients=BAD[bad](tf)))
    return {"first": first, "after": outcome(lambda: tape.gradient(y, x))}


def _jacobian_bad_source(tf, bad):
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    first = outcome(lambda: tape.jacobian(y, BAD[bad](tf)))
    return {"first": first, "after": outcome(lambda: tape.jacobian(y, x))}


def _assign_bad(tf, bad):
    v = tf.Variable(X)
    first = outcome(lambda: v.assign(BAD[bad](tf)))
    second = outcome(lambda: v.assign_add(BAD[bad](tf)))
    return {"assign": first, "assign_add": second, "after": outcome(lambda: v.assign_sub(tf.ones([2, 3])))}


def _variable_bad_init(tf, bad):
    first = outcome(lambda: tf.Variable(BAD[bad](tf)))
    v = tf.Variable(X)
    return {"init": first if isinstance(first, Raised) else first.read_value(), "after": v * 2.0}


MISUSES = {
    "gradient_twice": _gradient_twice,
    "jacobian_one_shot_no_pfor": _jacobian_one_shot_no_pfor,
    "watch_bad": _watch_bad,
    "watch_int": _watch_int,
    "gradient_bad_source": _gradient_bad_source,
    "gradient_bad_target": _gradient_bad_target,
    "gradient_bad_output_gradients": _gradient_bad_output_gradients,
    "jacobian_bad_source": _jacobian_bad_source,
    "assign_bad": _assign_bad,
    "variable_bad_init": _variable_bad_init,
}


def cases():
    """A strategy of `Case`s: an API or misuse, a bad value, eager or traced."""
    def build(api, bad, traced):
        return Case(api, bad, (traced or api in EAGER_UNSAFE) and api not in MISUSES)
    return st.builds(build, st.sampled_from(sorted(APIS) + sorted(MISUSES)), st.sampled_from(sorted(BAD)),
                     st.booleans()).filter(lambda c: (c.api, c.bad, c.traced) not in UNSAFE)


def every_case(apis=None):
    """All cases (for a long, exhaustive run), of `apis` (default: all)."""
    for api in apis or sorted(APIS) + sorted(MISUSES):
        for bad in sorted(BAD):
            for traced in (False, True):
                if (api in MISUSES and traced) or (api in EAGER_UNSAFE and not traced) or (api, bad, traced) in UNSAFE:
                    continue
                yield Case(api, bad, traced)


# -- known mismatches ------------------------------------------------------------------------
# The cases where tapeflow still raises another class than TensorFlow, all TensorFlow
# accidents (the README's list of deliberate differences), per API: the bad values, suffixed
# "/e" (eager) or "/t" (traced).  A new mismatch fails the fuzzer.
#   softmax rank 0 and NaN rows: TensorFlow's float32 oneDNN kernel raises AbortedError for a
#     scalar (its float64 kernel: InvalidArgumentError, as ours) and returns 0 where a NaN row
#     holds finite entries (all NaN here, as its float64 kernel gives).
#   squeeze scalar_tensor/e: TensorFlow 2.21 raises MemoryError (std::bad_alloc) for a 0-d
#     tensor axis eagerly; ours is the TypeError its graphs raise.
KNOWN_MISMATCHES = {
    "softmax": frozenset("float/e inf/e nan/e nan_tensor/e nan_tensor/t scalar_tensor/e".split()),
    "squeeze": frozenset("scalar_tensor/e".split()),
}


def known_mismatch(case):
    """Whether `case` is a known mismatch (see KNOWN_MISMATCHES)."""
    return f"{case.bad}/{'t' if case.traced else 'e'}" in KNOWN_MISMATCHES.get(case.api, ())
