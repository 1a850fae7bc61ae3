"""Hook points: the one list of places where code above a framework class plugs into it.

Layers point down (framework <- ops <- {eager, graph}), yet a Tensor's `+` runs an op
and `convert_to_tensor` packs a list of tensors with one.  The framework's classes
define every method themselves (reading `tensor.py` tells what a Tensor does) and, where
they need what only a higher layer or a later module has, call one of the names below.
The module that provides a name fills it (`fill`); no class attribute is set from
outside its own module.

Filled once, when the providing module is imported:

  name             filled by              called by
  ---------------  ---------------------  ------------------------------------------------
  operator(name)   ops/operators.py       Tensor's Python operators (`+`, `@`, `<`, `-x`,
                   (`fill_operators`)     ...), which tensor.py registers (Note [tensor
                                          operators] there); Variable and Mirrored reuse them
  execute_unary,   framework/op_def.py    those operators' fast path: an Op run on eager
  execute_binary                          tensors (op_def imports tensor.py, not the reverse)
  getitem          ops/operators.py       `Tensor.__getitem__` (the StridedSlice family)
  unstack          ops/operators.py       iteration: `Tensor.__iter__`, `SymbolicTensor.__iter__`
  pack, cast       ops/operators.py       `convert_to_tensor` of a list holding tensors
                                          (Note [list packing] in tensor.py)
  segment_sum      ops/operators.py       `IndexedSlices` as a dense tensor (its `_as_tensor`)

Set as the program runs, through functions of tensor.py (the only attributes of
Tensor that change at run time, both for speed, and only there):

  construction     framework/device.py    `tensor.set_construction_hook(fn)`: every new
                                          tensor calls `fn(tensor)`, until the runtime starts
                                          (Note [runtime initialization]) and while a device
                                          scope places off CPU:0 (Note [recorded placement]);
                                          Note [construction hook] in tensor.py
  recorders        eager/backprop.py,     `tensor.push_recorder` / `pop_recorder`: while any
                   eager/forwardprop.py   tape or accumulator is active, a dying tensor calls
                                          each of this thread's `_delete_trace(id)` (Note
                                          [trace deletion] in tensor.py; eager/tape.py)
"""

__all__ = ["operator", "fill", "fill_operators"]


def _unfilled(name):
    def missing(*args, **kwargs):
        raise NotImplementedError(f"The hook '{name}' is not filled yet: import tapeflow, not only its "
                                  "framework (framework/hooks.py lists the hooks and who fills them).")
    missing.__name__ = f"unfilled_{name}"
    return missing


execute_unary = _unfilled("execute_unary")
execute_binary = _unfilled("execute_binary")
getitem = _unfilled("getitem")
unstack = _unfilled("unstack")
pack = _unfilled("pack")
cast = _unfilled("cast")
segment_sum = _unfilled("segment_sum")

_NAMES = frozenset(("execute_unary", "execute_binary", "getitem", "unstack", "pack", "cast", "segment_sum"))


def fill(**hooks):
    """Fills the named hooks (see the table above); an unknown name raises KeyError."""
    for name, value in hooks.items():
        if name not in _NAMES:
            raise KeyError(f"No hook named '{name}': framework/hooks.py lists them.")
        globals()[name] = value


_OPERATORS = {}      # name -> the function filling Tensor's operator `name` (tensor.py)


def operator(name, fill):
    """Registers Tensor's operator `name` ("add" for `+` and its reflection `__radd__`):
    `fill(fn, op)` gives it its function and its Op or None (Note [tensor operators])."""
    if name in _OPERATORS:
        raise KeyError(f"Tensor's operator '{name}' is registered twice.")
    _OPERATORS[name] = fill


def fill_operators(table):
    """Fills every operator of Tensor from `table`: name -> (fn, op or None).

    Raises:
      KeyError: `table` misses an operator Tensor defines, or names one it does not.
    """
    if set(table) != set(_OPERATORS):
        raise KeyError(f"Tensor's operators are {sorted(_OPERATORS)}; the table has {sorted(table)}.")
    for name, (fn, op) in table.items():
        _OPERATORS[name](fn, op)
