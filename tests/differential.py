"""Differential testing against TensorFlow: run one program with both, compare everything.

A *program* is `program(tf)` written against the public API of a TensorFlow-like
module; it runs unchanged with `tapeflow` and with TensorFlow.  `same(program)`
runs it with both and compares, leaf by leaf:

* the nested structure (list / tuple / dict / namedtuple, by container type);
* None-ness of each leaf;
* the kind of each leaf (Tensor, IndexedSlices, Variable, Python value) and, for
  tensors, dtype, shape and values (IndexedSlices: values, indices, dense_shape);
* when the program raises, that both raise the same exception class (by name,
  e.g. `InvalidArgumentError`, `ValueError`).

TensorFlow is imported lazily; the test is skipped when it is not installed.
"""

import numpy as np

import tapeflow
from op_harness import tf_module



class Raised:
    """The outcome of a program that raised: its exception."""

    def __init__(self, exc):
        self.exc = exc

    def names(self):
        return {c.__name__ for c in type(self.exc).__mro__}

    def __repr__(self):
        return f"Raised({type(self.exc).__name__}: {self.exc})"


def run(program, module):
    """`program(module)`, or `Raised(exc)` when it raises."""
    try:
        return program(module)
    except Exception as exc:  # noqa: BLE001 - the exception class is what is compared
        return Raised(exc)


def run_both(program):
    """(tapeflow's result, TensorFlow's result) of one program."""
    tf = tf_module()
    return run(program, tapeflow), run(program, tf)


def same(program, rtol=None, atol=None, check_dtype=True):
    """Runs `program` with tapeflow and TensorFlow and asserts the results agree.

    Returns tapeflow's result (for further checks).
    """
    ours, theirs = run_both(program)
    compare(ours, theirs, rtol=rtol, atol=atol, check_dtype=check_dtype)
    return ours


def compare(ours, theirs, rtol=None, atol=None, check_dtype=True, path="result"):
    """Asserts that two program results agree (see the module docstring)."""
    if isinstance(ours, Raised) or isinstance(theirs, Raised):
        assert isinstance(ours, Raised) and isinstance(theirs, Raised), \
            f"{path}: tapeflow gave {ours!r} but TensorFlow gave {theirs!r}"
        for r in (ours, theirs):        # a test program's own bug must not pass as agreement
            assert not isinstance(r.exc, NameError), f"{path}: the program itself failed: {r!r}"
        mine = type(ours.exc).__name__
        assert mine in theirs.names() or type(theirs.exc).__name__ in ours.names(), \
            f"{path}: tapeflow raised {ours!r}, TensorFlow raised {theirs!r}"
        return
    kind_o, kind_t = _kind(ours), _kind(theirs)
    assert kind_o == kind_t, f"{path}: tapeflow gave a {kind_o} ({ours!r}), TensorFlow a {kind_t} ({theirs!r})"
    if kind_o == "none":
        return
    if kind_o in ("list", "tuple"):
        assert len(ours) == len(theirs), f"{path}: {len(ours)} items vs TensorFlow's {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            compare(a, b, rtol, atol, check_dtype, f"{path}[{i}]")
    elif kind_o.startswith("namedtuple"):
        for field in ours._fields:
            compare(getattr(ours, field), getattr(theirs, field), rtol, atol, check_dtype, f"{path}.{field}")
    elif kind_o == "dict":
        assert sorted(ours) == sorted(theirs), f"{path}: keys {sorted(ours)} vs {sorted(theirs)}"
        for k in ours:
            compare(ours[k], theirs[k], rtol, atol, check_dtype, f"{path}[{k!r}]")
    elif kind_o == "IndexedSlices":
        compare(ours.values, theirs.values, rtol, atol, check_dtype, f"{path}.values")
        compare(ours.indices, theirs.indices, rtol, atol, check_dtype, f"{path}.indices")
        compare(ours.dense_shape, theirs.dense_shape, rtol, atol, check_dtype, f"{path}.dense_shape")
    elif kind_o in ("Tensor", "Variable"):
        if check_dtype:
            assert ours.dtype.name == theirs.dtype.name, f"{path}: dtype {ours.dtype.name} vs TensorFlow's {theirs.dtype.name}"
        assert_values(np.asarray(ours.numpy()), np.asarray(theirs.numpy()), rtol, atol, path)
    elif kind_o == "DType":
        assert ours.name == theirs.name, f"{path}: {ours!r} vs {theirs!r}"
    elif kind_o == "TensorShape":
        assert ours.rank == theirs.rank and (ours.rank is None or ours.as_list() == theirs.as_list()), \
            f"{path}: {ours!r} vs {theirs!r}"
    elif kind_o == "ndarray":
        assert_values(ours, theirs, rtol, atol, path)
    else:
        assert type(ours) is type(theirs) and ours == theirs, f"{path}: {ours!r} vs TensorFlow's {theirs!r}"


def _kind(x):
    if x is None:
        return "none"
    cls = type(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return "namedtuple " + cls.__name__
    if isinstance(x, list):
        return "list"
    if isinstance(x, tuple):
        return "tuple"
    if isinstance(x, dict):
        return "dict"
    names = {c.__name__ for c in cls.__mro__}
    if "IndexedSlices" in names:
        return "IndexedSlices"
    if "DType" in names:
        return "DType"
    if "TensorShape" in names:
        return "TensorShape"
    if "Variable" in names or "BaseResourceVariable" in names:
        return "Variable"
    if "Tensor" in names or "EagerTensor" in names:
        return "Tensor"
    if isinstance(x, np.ndarray):
        return "ndarray"
    return "python " + cls.__name__


def assert_values(a, b, rtol=None, atol=None, what="value"):
    """Exact for integer/bool arrays, close for floating ones (tolerance by dtype)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs TensorFlow's {b.shape}"
    if a.dtype.kind in "biuSUO" and b.dtype.kind in "biuSUO":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    loose = a.dtype.itemsize <= 4 or (a.dtype.kind == "c" and a.dtype.itemsize <= 8)
    if rtol is None:
        rtol = 2e-2 if a.dtype.itemsize <= 2 else (1e-5 if loose else 1e-10)
    if atol is None:
        atol = 2e-2 if a.dtype.itemsize <= 2 else (1e-5 if loose else 1e-10)
    wide = np.complex128 if a.dtype.kind == "c" or b.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(a.astype(wide), b.astype(wide), rtol=rtol, atol=atol, err_msg=what, equal_nan=True)
