"""TensorShape against TensorFlow: construction, queries, compatibility, formatting."""

import numpy as np
import pytest

from differential import same

SHAPES = {
    "known": [2, 3],
    "scalar": [],
    "partial": [None, 3],
    "unknown_rank": None,
    "all_unknown": [None, None],
    "tuple": (4,),
    "int": 5,
    "numpy_dims": [np.int64(2), np.int32(3)],
    "zero": [0, 2],
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_queries(name):
    dims = SHAPES[name]

    def prog(tf):
        s = tf.TensorShape(dims)
        listed = None if s.dims is None else [(repr(d), d.value, str(d)) for d in s.dims]
        out = [s.rank, s.ndims, s.is_fully_defined(), s.num_elements(), repr(s), str(s), bool(s), listed]
        for method in ("as_list", "__len__", "__iter__"):
            try:
                r = getattr(s, method)()
                out.append(list(r) if method == "__iter__" else r)
            except ValueError:
                out.append("ValueError")
        return out
    same(prog)


@pytest.mark.parametrize("dims", [[-1], [1.5], ["a"], [[1]]], ids=repr)
def test_invalid_dims(dims):
    same(lambda tf: tf.TensorShape(dims))


def test_indexing():
    def prog(tf):
        s = tf.TensorShape([2, None, 4])
        u = tf.TensorShape(None)
        return s[0], s[1], s[-1], s[1:], s[:0], s[::2], u[1:], u[0]
    same(prog)


def test_index_out_of_range():
    same(lambda tf: tf.TensorShape([2])[3])


@pytest.mark.parametrize("a,b", [
    ([2, 3], [2, 3]), ([2, 3], [2, None]), ([2, 3], [3, 2]), ([2, 3], None), (None, [1]), ([2], [2, 1]),
    ([None], [None]), ([], []),
], ids=repr)
def test_compatibility_and_merge(a, b):
    def prog(tf):
        x, y = tf.TensorShape(a), tf.TensorShape(b)
        out = [x.is_compatible_with(y), x.is_compatible_with(b), x == y, x != y, x == b]
        try:
            out.append(x.merge_with(y))
        except ValueError:
            out.append("ValueError")
        try:
            x.assert_is_compatible_with(y)
            out.append("ok")
        except ValueError:
            out.append("ValueError")
        out.append(x.most_specific_compatible_shape(y))
        return out
    same(prog)


def test_concatenate_and_add():
    def prog(tf):
        s = tf.TensorShape([2])
        return s.concatenate([3, None]), s + [4], [1] + s, s.concatenate(None), tf.TensorShape(None) + s
    same(prog)


@pytest.mark.parametrize("dims", [[2, 3], [None, 3], None, []], ids=repr)
def test_rank_assertions(dims):
    def prog(tf):
        s = tf.TensorShape(dims)
        out = []
        for call in (lambda: s.with_rank(2), lambda: s.with_rank_at_least(1), lambda: s.with_rank_at_most(1),
                     lambda: s.assert_has_rank(2), lambda: s.assert_same_rank(tf.TensorShape([1, 1])),
                     lambda: s.assert_is_fully_defined()):
            try:
                out.append(call())
            except ValueError:
                out.append("ValueError")
        return out
    same(prog)


def test_equality_with_python_values():
    def prog(tf):
        s = tf.TensorShape([2, 3])
        return s == [2, 3], s == (2, 3), s != [2, 4], s == tf.TensorShape([2, 3]), tf.constant([[1.0]]).shape == [1, 1]
    same(prog)


def test_hashable():
    def prog(tf):
        return len({tf.TensorShape([1, 2]), tf.TensorShape([1, 2]), tf.TensorShape([2])})
    same(prog)


def test_tensor_shape_attributes():
    def prog(tf):
        t = tf.constant(np.zeros((2, 3, 1), np.float32))
        return t.shape, t.shape[1], t.shape[1:], t.shape.as_list(), tf.shape(t), tf.rank(t), tf.size(t)
    same(prog)
