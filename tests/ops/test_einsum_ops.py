"""Spec rows for `tf.einsum` (contractions, traces, diagonals, `...` broadcasting) and `tf.tensordot`,
and TF-differential tests of their parsing and errors.
"""

import numpy as np
import pytest

import tapeflow
from differential import Raised, run_both, same
from op_harness import (
    OpSpec, any_real, complex_of, define_graph_tests, define_tests, define_unknown_dims_tests, static_shapes_program,
    traced_with_dims,
)


def einsum(equation, *shapes, **kw):
    """A row for `tf.einsum(equation, ...)` with NumPy's einsum as the reference."""
    return OpSpec(f"einsum_{equation}", lambda tf, *xs: tf.einsum(equation, *xs),
                  lambda *xs: np.einsum(equation, *xs), [tuple(shapes)], **kw)


SPECS = [
    einsum("ij,jk->ik", (2, 3), (3, 4)),
    einsum("ij,jk", (2, 3), (3, 1)),
    einsum("ii->i", (3, 3)),
    einsum("ii", (3, 3)),
    einsum("iij->ij", (2, 2, 3)),
    einsum("iji->j", (2, 3, 2)),
    einsum("ii,i->i", (3, 3), (3,)),
    einsum("ij->", (2, 3)),
    einsum("ij->ji", (2, 3)),
    einsum("ji", (2, 3)),
    einsum("i,j->ij", (3,), (2,)),
    einsum("i,i", (3,), (3,)),
    einsum("bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
    einsum("bij,bjk->bik", (0, 2, 3), (0, 3, 2)),
    einsum("...ij,...jk->...ik", (2, 1, 2, 3), (4, 3, 2)),
    einsum("...ij,jk", (2, 2, 3), (3, 2)),
    einsum("ij...,jk...->ik...", (2, 3, 4), (3, 2, 1)),
    einsum("i...->...", (2, 3, 1)),
    einsum("...ii->...i", (2, 3, 3)),
    einsum("ij,jk,kl->il", (2, 3), (3, 2), (2, 2)),
    einsum(",->", (), ()),
    einsum("i,->i", (3,), ()),
    einsum("Ba", (2, 3)),
    OpSpec("einsum_complex", lambda tf, a, b: tf.einsum("ij,jk->ik", a, b), lambda a, b: a @ b,
           [((2, 3), (3, 2))], sampler=complex_of(any_real)),
    OpSpec("tensordot_int", lambda tf, a, b: tf.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1),
           [((2, 3), (3, 4)), ((3,), (3,))]),
    OpSpec("tensordot_two", lambda tf, a, b: tf.tensordot(a, b, 2), lambda a, b: np.tensordot(a, b, 2),
           [((2, 3, 4), (3, 4))]),
    OpSpec("tensordot_outer", lambda tf, a, b: tf.tensordot(a, b, 0), lambda a, b: np.tensordot(a, b, 0),
           [((2,), (3,)), ((), (2,))]),
    OpSpec("tensordot_lists", lambda tf, a, b: tf.tensordot(a, b, [[0, 2], [2, 0]]),
           lambda a, b: np.tensordot(a, b, [[0, 2], [2, 0]]), [((2, 3, 4), (4, 1, 2))]),
    OpSpec("tensordot_pair", lambda tf, a, b: tf.tensordot(a, b, [-1, 0]), lambda a, b: np.tensordot(a, b, [-1, 0]),
           [((2, 3), (3, 2))]),
]

for _spec in SPECS:   # a one-operand einsum is linear: square it to differentiate its rule again
    _spec.square_outputs = True

define_tests(SPECS, globals())
define_graph_tests(SPECS, globals())
define_unknown_dims_tests(SPECS, globals())


@pytest.mark.parametrize("equation,shapes", [
    ("i->ii", [(3,)]), ("ij,jk->ik", [(3, 3), (4, 2)]), ("ij,jk->ik", [(3, 3)]), ("ij->k", [(3, 3)]),
    ("ij", [(3,)]), ("ij->i->j", [(2, 3)]), ("i.j", [(2, 3)]), ("i1", [(2, 3)]), ("aa->", [(2, 3)]),
    ("ij,ij->ij", [(3, 1), (1, 2)]), ("i...->i", [(2, 3, 4)]), ("...i,...i", [(2, 3), (2, 3)]),
    ("...i,...i->...", [(2, 3), (3,)]), ("...ij,...jk->...ik", [(2, 2, 3), (4, 3, 2)]),
    ("ab,...", [(2, 3), (5,)]), ("ab...,c", [(2, 3, 5), (5,)]), ("i...", [(2, 3, 5)]), ("...ii", [(2, 3, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]), ("IJ,JK->IK", [(2, 3), (3, 2)]), ("...", [(2, 3)]),
])
def test_einsum_parsing_like_tensorflow(equation, shapes):
    same(lambda tf: tf.einsum(equation, *[tf.ones(s) for s in shapes]))


@pytest.mark.parametrize("call", [
    lambda tf: tf.einsum("ij,jk->ik", tf.ones([2, 3]), tf.ones([3, 2], tf.float64)),
    lambda tf: tf.einsum("ij,jk->ik", tf.ones([3, 3], tf.int32), tf.ones([3, 2], tf.int32)),
    lambda tf: tf.einsum("ij", tf.constant([[1, 2]], tf.int64)),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2]), 3),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2]), -1),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2]), [[1]]),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2]), [[1], [0, 1]]),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2]), [[0], [1]]),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2], tf.float64), 1),
    lambda tf: tf.tensordot(tf.ones([2, 3]), tf.ones([3, 2]), tf.constant([[1], [0]])),
    lambda tf: tf.tensordot([[1.0, 2.0]], [3.0, 4.0], [[1], [0]]),
])
def test_einsum_and_tensordot_calls_like_tensorflow(call):
    same(call)


def test_einsum_gradients_like_tensorflow():
    def program(tf):
        a = tf.constant(np.arange(4.0).reshape(2, 1, 2) / 3.0)
        b = tf.constant(np.arange(12.0).reshape(3, 2, 2) / 5.0)
        c = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)
        with tf.GradientTape() as tape:
            tape.watch([a, b, c])
            y = tf.einsum("...ij,...jk->...ik", a, b) * 2.0 + tf.einsum("ii", c) + tf.einsum("ij,ij->i", c, c)[0]
        return tape.gradient(y, [a, b, c])
    same(program)


def _random_equation(rng):
    """Random operands over labels a-d (repeats, size-1 labels, ellipses of sizes 1 and 2), optional output."""
    sizes = {"a": 2, "b": 3, "c": 1, "d": 4}
    with_ellipsis = rng.random() < 0.3
    subs, shapes = [], []
    for _ in range(int(rng.integers(1, 4))):
        s = "".join(rng.choice(list(sizes), rng.integers(0, 4)))
        shape = [sizes[c] for c in s]
        if with_ellipsis and rng.random() < 0.7:
            at = int(rng.integers(0, len(s) + 1))
            s, shape = s[:at] + "..." + s[at:], shape[:at] + rng.choice([1, 2], rng.integers(0, 3)).tolist() + shape[at:]
        subs.append(s)
        shapes.append(shape)
    equation = ",".join(subs)
    if rng.random() < 0.6:
        pool = sorted(set(equation.replace(".", "").replace(",", "")))
        out = "".join(rng.permutation(pool)[:rng.integers(0, len(pool) + 1)]) if pool else ""
        equation += "->" + ("..." if "..." in equation and rng.random() < 0.8 else "") + out
    return equation, [rng.standard_normal(s) for s in shapes]


def _einsum_and_gradients(tf, equation, arrays):
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = tf.einsum(equation, *xs)
        total = tf.reduce_sum(y * y)
    return y, tape.gradient(total, xs)


@pytest.mark.parametrize("seed", range(4))
def test_random_equations_like_tensorflow(seed):
    """Random equations (values, gradients, or the same exception class as TensorFlow)."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        equation, arrays = _random_equation(rng)
        same(lambda tf: _einsum_and_gradients(tf, equation, arrays))


@pytest.mark.parametrize("seed", range(2))
def test_random_equations_with_unknown_dims_like_tensorflow(seed):
    """Random equations traced with all dims, or the first dim of each operand, unknown: static shapes,
    values and gradients (or the exception class) like TensorFlow's (Note [einsum in graphs])."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        equation, arrays = _random_equation(rng)
        for hide_all in (True, False):
            dims = [[None] * a.ndim if hide_all else [None] * min(a.ndim, 1) + list(a.shape[1:]) for a in arrays]
            same(lambda tf: traced_with_dims(tf, lambda m, *xs: m.einsum(equation, *xs), arrays, dims))


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [[None, 3], [None, 4]]), ("ij,jk->ik", [[2, None], [3, None]]), ("ab,ab->ab", [[None, 2], [3, None]]),
    ("ii->i", [[None, 3]]), ("ii", [[None, None]]), ("iji->j", [[None, 3, 2]]), ("ij->ji", [[None, 3]]),
    ("...ij,...jk->...ik", [[None, 1, 2, 3], [None, 3, 2]]), ("...ij,...jk->...ik", [[2, None, 2, 3], [4, 3, 2]]),
    ("...ij,...jk->...ik", [[2, None, 2, 3], [1, 3, 2]]), ("...i,...i->...", [[None, 3], [2, None]]),
    ("...i,...i->...", [[0, 3], [None, None]]), ("i...->...", [[None, 3, 1]]), ("ij,jk->ik", [[2, 3], [4, None]]),
    ("ij...,jk...->ik...", [[None, 3, 4], [None, 2, 1]]), ("...i,...i->...", [[2, 3], [3, None]]),
    ("ij,jk->ik", [[None], [None, None]]), ("ab,b...->a", [[None, None], [None, None, None]]),
])
def test_einsum_static_shapes_with_unknown_dims_like_tensorflow(equation, shapes):
    same(static_shapes_program(lambda tf, *xs: tf.einsum(equation, *xs), *shapes))


@pytest.mark.parametrize("axes,shapes", [
    (1, [[None, 3], [None, 4]]), (2, [[None, 3, 4], [None, 4]]), ([[0, 2], [2, 0]], [[None, 3, 4], [None, 1, 2]]),
    (1, [[2, None], [None, 4]]), (0, [[None], [None]]), (1, [[2, 3], [4, 2]]),
])
def test_tensordot_static_shapes_with_unknown_dims_like_tensorflow(axes, shapes):
    same(static_shapes_program(lambda tf, a, b: tf.tensordot(a, b, axes), *shapes))


@pytest.mark.parametrize("call,shapes", [
    (lambda tf, a, b: tf.einsum("ij,jk->ik", a, b), [(2, 3), (4, 2)]),
    (lambda tf, a, b: tf.einsum("ij,ij->ij", a, b), [(3, 1), (1, 2)]),
    (lambda tf, a, b: tf.einsum("...i,...i->...", a, b), [(2, 3), (3, 3)]),
    (lambda tf, a, b: tf.tensordot(a, b, 1), [(2, 3), (4, 2)]),
])
def test_run_time_errors_with_unknown_dims_like_tensorflow(call, shapes):
    arrays = [np.ones(s) for s in shapes]
    ours, _ = run_both(lambda tf: traced_with_dims(tf, call, arrays, [[None, None]] * len(arrays)))
    assert isinstance(ours, Raised) and isinstance(ours.exc, tapeflow.errors.InvalidArgumentError), ours
    same(lambda tf: traced_with_dims(tf, call, arrays, [[None, None]] * len(arrays)))
