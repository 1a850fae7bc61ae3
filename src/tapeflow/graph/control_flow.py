"""Functional control flow: `cond` and `while_loop` (TF2 style).

Eagerly they are plain Python control flow (the tape records what runs).  In a
graph each is one op holding traced branch/body functions, with a gradient
that is again such an op:

* "If": the gradient is an If choosing between the branches' backward functions;
* "While": the forward loop stacks the loop variables entering each iteration
  (the "history"); its gradient is a while_loop running backwards over the
  history, calling the body's backward function at each step and summing the
  gradients of captured values (Note [while gradients]).
"""

import numpy as np

from tapeflow.framework import dtypes, nest
from tapeflow.framework.context import state
from tapeflow.framework.export import tf_export
from tapeflow.framework.op_def import ALL, build_with_metas, op
from tapeflow.framework.shapes.symbolic_tensors import Meta, SymbolicTensor, known_rank
from tapeflow.framework.tensor import Tensor, convert_to_tensor
from tapeflow.framework.tensor_shape import TensorShape
from tapeflow.ops import gradient_rules, math_ops, reduction_ops, scatter_ops
from tapeflow.ops.core import basic_ops, batching, primitives, vectorization
from tapeflow.ops.variables import Variable
from tapeflow.graph.concrete_function import ConcreteFunction, run_body
from tapeflow.graph.func_graph import FuncGraph, output_of


def _trainable(t):
    return t._value.dtype in dtypes.TRAINABLE_NP


def _in_graph(*values):
    return bool(state.graphs) and any(isinstance(v, SymbolicTensor) for v in values)


def _trace(fn, arg_metas, name):
    """Traces `fn` on placeholders of `arg_metas`; returns (ConcreteFunction, structured result)."""
    graph = FuncGraph(name, outer_graph=state.graphs[-1])
    with vectorization.per_example_trace(), graph.as_default():      # Note [functions in vectorized code]
        args = [graph._new_placeholder(m.shape, m.dtype, "arg") for m in arg_metas]
        graph.inputs = args
        result = fn(args)
        flat = [output_of(graph, convert_to_tensor(o) if not isinstance(o, Tensor) else o)
                for o in nest.flatten(result)]
    return ConcreteFunction(graph, result, flat), result


def _union_captures(functions):
    """The outer values captured by any of `functions`, and for each function the
    positions of its captures in that union."""
    union, index, maps = [], {}, []
    for f in functions:
        positions = []
        for value, _ in f.graph.captures:
            if value._id not in index:
                index[value._id] = len(union)
                union.append(value)
            positions.append(index[value._id])
        maps.append(tuple(positions))
    return union, maps


def _union_variables(functions):
    seen, out = set(), []
    for f in functions:
        for v in f.graph.variables:
            if v._id not in seen:
                seen.add(v._id)
                out.append(v)
    return out


def _add(a, b):
    """Sum of two gradients (dense tensors, IndexedSlices or TensorArray gradient lists)."""
    return convert_to_tensor(gradient_rules.aggregate([a, b]))


def _build(op_, inputs, attrs, metas):
    """Adds a control-flow op to the graph; on batched inputs, its batching rule runs instead
    (Note [functions in vectorized code] in ops/core/vectorization.py)."""
    if state.vmaps and any(t._is_batched for t in inputs):
        return state.vmaps[-1].apply(op_, inputs, attrs)
    return build_with_metas(op_, inputs, attrs, metas)


def _vectorized(t):
    """Whether `t` stands for a batch of examples here (inside a vectorized function)."""
    return bool(state.vmaps) and getattr(t, "_is_batched", False)


def _own(values):
    """`values` used by the function being traced (captured: Note [functions in vectorized code])."""
    graph = state.graphs[-1]
    return [v if isinstance(v, Variable) else graph._own(v) for v in values]


# -- cond ------------------------------------------------------------------------------

@op("If", same_dtype=False, num_outputs=-1, stateful=True, accepts_none=ALL, reads_variables_itself=True,
    accepts_indexed_slices=True)
def _if(pred, *args, then_f, else_f, then_caps, else_caps, n_caps):
    f, positions = (then_f, then_caps) if bool(pred) else (else_f, else_caps)
    captured = args[:n_caps]
    return f._run([captured[p] for p in positions])


@_if.def_grad
def _if_grad(op, *dys):
    pred, captured = op.inputs[0], op.inputs[1:1 + op.get_attr("n_caps")]
    variables = op.inputs[1 + len(captured):]
    then_f, else_f = op.get_attr("then_f"), op.get_attr("else_f")
    outputs = op.outputs
    dys = [basic_ops.zeros_like(t) if g is None else convert_to_tensor(g) for g, t in zip(dys, outputs)]
    branches = []
    for f, positions in ((then_f, op.get_attr("then_caps")), (else_f, op.get_attr("else_caps"))):
        branches.append(_branch_grads(f, positions, captured, variables, dys))
    present = [a is not None or b is not None for a, b in zip(*[mask for _, mask in branches])]
    targets = list(captured) + list(variables)

    def pick(k):
        fill = branches[k][0]
        return lambda: [fill(i) for i, p in enumerate(present) if p] or [Tensor(np.zeros((), np.float32))]

    chosen = cond(pred, pick(0), pick(1)) if any(present) else []
    chosen = iter(chosen if isinstance(chosen, (list, tuple)) else [chosen])
    grads = [next(chosen) if p else None for p, t in zip(present, targets)]
    return [None] + grads


def _branch_grads(f, positions, captured, variables, dys):
    """For one branch: a function giving the gradient of union input i (zeros when the
    branch does not use it), and a mask of the inputs it reaches."""
    trainable = [i for i, t in enumerate(f._flat_tensor_outputs) if _trainable(t)]
    backward = f._backward_function()
    n_caps = len(captured)
    reach = [None] * (n_caps + len(variables))
    for j, p in enumerate(positions):
        if backward._grad_mask[j]:
            reach[p] = j
    var_index = {v._id: k for k, v in enumerate(f.graph.variables)}
    for k, v in enumerate(variables):
        local = var_index.get(v._id)
        if local is not None and backward._grad_mask[len(positions) + local]:
            reach[n_caps + k] = len(positions) + local
    cache = {}

    def grad(i):
        if "grads" not in cache:
            flat = backward._call_flat([captured[p] for p in positions] + [dys[i] for i in trainable])
            it = iter(flat)
            cache["grads"] = [next(it) if m else None for m in backward._grad_mask]
        local = reach[i]
        target = captured[i] if i < n_caps else variables[i - n_caps]
        g = None if local is None else cache["grads"][local]
        return basic_ops.zeros_like(target.value() if isinstance(target, Variable) else target) if g is None else convert_to_tensor(g)
    return grad, reach


@tf_export("cond")
def cond(pred, true_fn=None, false_fn=None, name=None):
    """`true_fn()` if `pred` else `false_fn()`; in a graph both branches are traced into one "If" op.

    Raises:
      TypeError: a branch is not callable, or the branches' outputs differ in dtype.
      TypeError: the branches return different structures (TensorFlow's class for this).

    >>> import tapeflow as tf
    >>> float(tf.cond(tf.constant(2.0) > 1.0, lambda: tf.constant(1.0), lambda: tf.constant(0.0)))
    1.0
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable.")
    if not state.graphs:
        if _vectorized(pred):
            if len(state.vmaps) > 1:                     # Note [nested vectorized control flow]
                return _select(pred, true_fn(), false_fn())
            return _traced(lambda: cond(pred, true_fn, false_fn))
        return true_fn() if bool(pred) else false_fn()
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool in a graph (tf.function): use a boolean tensor, or "
                        "plain Python `if` for a value known while tracing.")
    pred = convert_to_tensor(pred)
    then_f, then_out = _trace(lambda _: true_fn(), [], "cond_true")
    else_f, else_out = _trace(lambda _: false_fn(), [], "cond_false")
    _check_branches(then_out, else_out)
    metas = []
    for a, b in zip(then_f._flat_tensor_outputs, else_f._flat_tensor_outputs):
        _check_dtypes(a, b)
        metas.append(Meta(_merge_shapes(a._value.shape, b._value.shape), a._value.dtype))
    captured, (then_caps, else_caps) = _union_captures([then_f, else_f])
    variables = _union_variables([then_f, else_f])
    for v in variables:
        v._note_access()
    outs = _build(_if, [pred] + captured + variables,
                  {"then_f": then_f, "else_f": else_f, "then_caps": then_caps, "else_caps": else_caps,
                   "n_caps": len(captured)}, metas)
    return then_f._structured(list(outs))


def _check_branches(then_out, else_out):
    try:
        nest.assert_same_structure(then_out, else_out)
    except ValueError:
        raise TypeError("true_fn and false_fn arguments to tf.cond must have the same number, type, and overall "
                        f"structure of return values.\n\ntrue_fn output: {then_out}\nfalse_fn output: {else_out}") from None


def _check_dtypes(a, b):
    if a._value.dtype != b._value.dtype:
        raise TypeError(f"true_fn and false_fn arguments to tf.cond must have the same dtypes; got "
                        f"{a.dtype.name} and {b.dtype.name}.")


def _select(pred, then_out, else_out):
    """Each example's values from the branch it takes, both branches having run on all."""
    _check_branches(then_out, else_out)
    picked = []
    for a, b in zip(nest.flatten(then_out), nest.flatten(else_out)):
        a, b = convert_to_tensor(a), convert_to_tensor(b)
        _check_dtypes(a, b)
        picked.append(math_ops.where(pred, a, b))
    return nest.pack_sequence_as(then_out, picked)


def _traced(fn):
    """`fn()`, control flow on values that differ per example run eagerly inside a vectorized
    function, traced into a function and called, as TensorFlow's vectorized_map traces its
    function: the call's rule runs each example's own branch or iterations only (the If and
    While rules)."""
    graph = FuncGraph("vectorized_control_flow", outer_graph=None)
    with vectorization.per_example_trace(), graph.as_default():
        result = fn()
        flat = [output_of(graph, o) for o in nest.flatten(result)]
    f = ConcreteFunction(graph, result, flat)
    return f._structured(f._call_flat([]))


@_if.def_batch
def _if_batch(xs, batched, then_f, else_f, then_caps, else_caps, n_caps):
    # Note [functions in vectorized code]: each branch runs batched on the examples taking it
    # (all of them for an unbatched predicate: an If of batched branches), as TensorFlow's pfor
    # does; a branch then never sees the examples it would fail on (or give NaN gradients for).
    pred, captured, flags = xs[0], xs[1:1 + n_caps], batched[1:1 + n_caps]

    def branch(f, positions, rows=None, traced=False):
        def run():
            caps, used = [captured[p] for p in positions], [flags[p] for p in positions]
            count = primitives.batch_size_of(next(x for x, b in zip(xs, batched) if b))
            if traced:                                  # traced by cond: capture what it uses
                caps = _own(caps)
            elif rows is not None:                      # only the examples in `rows`
                caps = [scatter_ops.gather(c, rows) if b else c for c, b in zip(caps, used)]
                count = basic_ops.shape(rows)[0]
            outs, out_batched = vectorization.run_vectorized(lambda args: run_body(f, args), caps, used)
            return [o if b else primitives.broadcast_batch(o, count) for o, b in zip(outs, out_batched)]
        return run

    if not batched[0]:
        return tuple(cond(pred, branch(then_f, then_caps, traced=True), branch(else_f, else_caps, traced=True))), True
    if any(x._is_batched for x in xs):                 # Note [nested vectorized control flow]
        return tuple(math_ops.where(*primitives.align_ranks([pred, a, b], (True, True, True)))
                     for a, b in zip(branch(then_f, then_caps)(), branch(else_f, else_caps)())), True
    taken, other = math_ops.where_indices(pred), math_ops.where_indices(math_ops.logical_not(pred))
    a = branch(then_f, then_caps, primitives.reshape(taken, [-1]))()
    b = branch(else_f, else_caps, primitives.reshape(other, [-1]))()
    size = primitives.batch_size_of(pred)
    out = []
    for x, y in zip(a, b):
        dims = [size] + primitives.dims_of(x)[1:]
        shape = tuple(dims) if all(isinstance(d, int) for d in dims) else primitives.stack(
            [basic_ops.cast(d, dtypes.int32) for d in dims])
        out.append(scatter_ops.tensor_scatter_nd_update(scatter_ops.scatter_nd(taken, x, shape), other, y))
    return tuple(out), True


def _merge_shapes(a, b):
    if a is None or b is None:              # unknown rank (Note [unknown rank] in framework/shapes/symbolic_tensors.py)
        return None
    if len(a) != len(b):
        raise ValueError(f"The branches of tf.cond return tensors of different ranks: {a} and {b}.")
    return tuple(x if x == y else None for x, y in zip(a, b))


# -- while_loop ----------------------------------------------------------------------------

@op("While", same_dtype=False, num_outputs=-1, stateful=True, accepts_none=ALL, reads_variables_itself=True)
def _while(max_iter, *args, cond_f, body_f, n, cond_caps, body_caps, n_caps, keep_history):
    loop_vars = list(args[:n])
    captured = args[n:n + n_caps]
    cond_extra = [captured[p] for p in cond_caps]
    body_extra = [captured[p] for p in body_caps]
    history = [[] for _ in range(n)] if keep_history else None
    limit = int(max_iter)
    count = 0
    while (limit < 0 or count < limit) and bool(cond_f._run(loop_vars + cond_extra)[0]):
        if history is not None:
            for k in range(n):
                history[k].append(loop_vars[k])
        loop_vars = list(body_f._run(loop_vars + body_extra))
        count += 1
    extra = []
    if history is not None:
        for k in range(n):
            init = np.asarray(args[k])
            extra.append(_stack_history(history[k], init))
    return tuple(loop_vars) + tuple(extra) + (np.int32(count),)


def _stack_history(values, init):
    """The values a loop variable took, stacked; when `shape_invariants` let its shape
    change, a 1-D object array of them (gathering step i still gives step i's array)."""
    if not values:
        return np.zeros((0,) + np.shape(init), np.asarray(init).dtype)
    first = np.shape(values[0])
    if all(np.shape(v) == first for v in values):
        return np.stack(values)
    ragged = np.empty(len(values), object)
    for i, v in enumerate(values):
        ragged[i] = np.asarray(v)
    return ragged


@tf_export("while_loop")
def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """Repeats `body` while `cond` is true; returns the loop variables (same structure as `loop_vars`).

    In a graph the loop is one "While" op, differentiable with respect to the
    initial loop values and to the tensors and variables the body uses.

    Raises:
      TypeError: cond/body are not callable, or the body changes a loop variable's dtype.
      ValueError: the body changes the structure of the loop variables, or a shape
        not allowed by `shape_invariants`.

    >>> import tapeflow as tf
    >>> float(tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2.0), (0, 1.0))[1])
    16.0
    """
    if not callable(cond) or not callable(body):
        raise TypeError("cond and body must be callable.")
    if loop_vars is None or (isinstance(loop_vars, (list, tuple)) and not loop_vars):
        raise ValueError("'loop_vars' must be provided.")
    single = not isinstance(loop_vars, (list, tuple))
    packed = [loop_vars] if single else loop_vars
    flat = nest.flatten(packed)
    if not state.graphs:
        return _eager_loop(cond, body, loop_vars, packed, single, maximum_iterations)
    return _graph_loop(cond, body, packed, single, flat, shape_invariants, back_prop, maximum_iterations)


def _call_body(fn, packed, single):
    out = fn(*packed)
    if len(packed) == 1 and not isinstance(out, (list, tuple)):
        out = [out]
    return out


def _eager_loop(cond, body, loop_vars, packed, single, maximum_iterations):
    packed = nest.map_structure(lambda v: v if isinstance(v, (Tensor, Variable)) else convert_to_tensor(v), packed)
    limit = None if maximum_iterations is None else int(maximum_iterations)
    count = 0
    while limit is None or count < limit:
        going = cond(*packed)
        per_example = _vectorized(going)       # examples stop at different steps: the While rule's loop
        if per_example and len(state.vmaps) == 1:
            rest = None if limit is None else limit - count
            return _traced(lambda: while_loop(cond, body, packed[0] if single else packed, maximum_iterations=rest))
        if not (_any_example(going) if per_example else bool(going)):
            break
        out = body(*packed)
        if single:
            out = [out]
        nest.assert_same_structure(list(packed), list(out))
        if per_example:                        # Note [nested vectorized control flow]
            out = nest.map_structure(lambda new, old: math_ops.where(going, new, old), list(out), list(packed))
        packed = type(packed)(out) if isinstance(packed, (list, tuple)) else out
        count += 1
    return packed[0] if single else packed


def _any_example(going):
    """Whether a batched predicate holds for some example (eagerly)."""
    while going._is_batched:
        going = going._stacked
    return bool(reduction_ops.reduce_any(going))


def _graph_loop(cond, body, packed, single, flat, shape_invariants, back_prop, maximum_iterations, raw=False):
    flat = [convert_to_tensor(v) if not isinstance(v, Tensor) else v for v in flat]
    flat = [v.value() if isinstance(v, Variable) else v for v in flat]
    for v in flat:
        known_rank(v, "While")
    invariants = [None] * len(flat) if shape_invariants is None else nest.flatten(
        [shape_invariants] if single else shape_invariants)
    metas = [Meta(tuple(TensorShape(inv).as_list()) if inv is not None else tuple(v._value.shape), v._value.dtype)
             for v, inv in zip(flat, invariants)]

    def rebuild(args):
        return nest.pack_sequence_as(packed, args)

    body_f, body_out = _trace(lambda args: _call_body(body, rebuild(args), single), metas, "while_body")
    cond_f, _ = _trace(lambda args: cond(*rebuild(args)), metas, "while_cond")
    try:
        nest.assert_same_structure(list(packed), list(body_out))
    except ValueError:
        raise ValueError(f"The body of tf.while_loop returned {body_out!r}, whose structure differs from "
                         f"loop_vars {packed!r}.") from None
    for k, (m, out) in enumerate(zip(metas, body_f._flat_tensor_outputs)):
        if out._value.dtype != m.dtype:
            raise TypeError(f"Loop variable {k} enters the loop with type {np.dtype(m.dtype).name}, but has type "
                            f"{np.dtype(out._value.dtype).name} after one iteration.")
        if not TensorShape(m.shape).is_compatible_with(out._value.shape) or len(m.shape) != len(out._value.shape):
            raise ValueError(f"Input tensor {k} enters the loop with shape {TensorShape(m.shape)}, but has shape "
                             f"{TensorShape(out._value.shape)} after one iteration. To allow the shape to vary across "
                             "iterations, use the `shape_invariants` argument of tf.while_loop to specify a "
                             "less-specific shape.")
    captured, (cond_caps, body_caps) = _union_captures([cond_f, body_f])
    variables = _union_variables([cond_f, body_f])
    for v in variables:
        v._note_access()
    keep = bool(back_prop) and any(m.dtype in dtypes.TRAINABLE_NP for m in metas)
    max_iter = convert_to_tensor(-1 if maximum_iterations is None else maximum_iterations)
    out_metas = list(metas)
    if keep:
        out_metas += [Meta((None,) + tuple(m.shape), m.dtype) for m in metas]
    out_metas.append(Meta((), np.dtype(np.int32)))
    attrs = {"cond_f": cond_f, "body_f": body_f, "n": len(flat), "cond_caps": cond_caps,
             "body_caps": body_caps, "n_caps": len(captured), "keep_history": keep}
    outs = _build(_while, [max_iter] + flat + captured + variables, attrs, out_metas)
    if raw:                     # all the op's outputs: loop variables, histories, iteration count
        return outs
    result = nest.pack_sequence_as(packed, list(outs[:len(flat)]))
    return result[0] if single else result


@_while.def_batch
def _while_batch(xs, batched, cond_f, body_f, n, cond_caps, body_caps, n_caps, keep_history):
    # Note [vectorized while loops]: as TensorFlow's pfor, first find which loop variables
    # differ per example (those batched on entry, and those the body makes batched, to a
    # fixed point).  When the condition then does not, every example runs the same steps:
    # one loop over the batched body, the other variables left as they are.  Otherwise one
    # loop runs while some example's condition holds, each step running the body (then the
    # condition) on the examples still running only, gathered and scattered back: the others
    # keep their values, and a body that would fail past an example's end (an index out of
    # range) never sees them.  Each example counts its own steps, so the histories and
    # counts feed the loop's gradient as that example's own loop would.
    #
    # Note [nested vectorized control flow]: gathering the examples of one level is not
    # vectorizable at an outer one (Where has a size that depends on the values).  So when a
    # rule's inputs are batched at an outer level too (nested vectorized maps), or an eager
    # tf.cond/while_loop meets a batched predicate under nested levels, If runs both branches
    # on every example and picks with `where`, and the loop runs the body on every example,
    # those done keeping their values with `where`: the same values, but a branch or body
    # also runs where its example does not take it (an error there, or a NaN gradient, shows).
    if batched[0]:
        raise batching.NotBatchable                     # an iteration limit per example
    loop = _VectorizedLoop(xs, batched, cond_f, body_f, n, cond_caps, body_caps, n_caps)
    if not loop.per_example_condition():
        return loop.uniform(keep_history)
    if any(v._value.dtype == object for v in xs[1:1 + n]):
        raise batching.NotBatchable                     # TensorArray flows: not gathered per example
    return loop.per_example(keep_history)


class _VectorizedLoop:
    """The While rule's two loops (Note [vectorized while loops])."""

    def __init__(self, xs, batched, cond_f, body_f, n, cond_caps, body_caps, n_caps):
        self.max_iter, self.n, self.cond_f, self.body_f = xs[0], n, cond_f, body_f
        self.cond_caps, self.body_caps = cond_caps, body_caps
        self.loop_vars, self.entering = list(xs[1:1 + n]), list(batched[1:1 + n])
        self.captured, self.cap_flags = xs[1 + n:1 + n + n_caps], list(batched[1 + n:1 + n + n_caps])
        self.size = primitives.batch_size_of(next(x for x, b in zip(xs, batched) if b))
        self.static = self.size if isinstance(self.size, int) else None
        self.nested = any(x._is_batched for x in xs)     # batched at an outer level too
        self.flags = self._differing()

    def going(self, args):
        return run_body(self.cond_f, args[:self.n] + [args[self.n + p] for p in self.cond_caps])

    def body(self, args):
        return run_body(self.body_f, args[:self.n] + [args[self.n + p] for p in self.body_caps])

    def run(self, fn, vs, flags, caps=None):
        """fn on loop values `vs` (stacked where `flags`) and the captures, in a new level."""
        caps = _own(self.captured) if caps is None else caps
        return vectorization.run_vectorized(fn, list(vs) + list(caps), list(flags) + self.cap_flags)

    def _trial(self, fn, f, flags):
        """Which outputs of `fn` (running function `f`) are batched for loop values batched where `flags`."""
        trial = FuncGraph("while_batching", outer_graph=state.graphs[-1])
        with vectorization.per_example_trace(), trial.as_default():
            args = [trial._new_placeholder(self._shape(p, b), p._value.dtype, "arg") for p, b in zip(f.graph.inputs, flags)]
            return self.run(fn, args, flags)[1]

    def _shape(self, placeholder, batched):
        return _stacked_shape(self.static, placeholder._value.shape) if batched else TensorShape(placeholder._value.shape)

    def _differing(self):
        """Which loop variables differ per example: a fixed point over traces of the body."""
        flags = list(self.entering)
        while True:
            grown = [f or b for f, b in zip(flags, self._trial(self.body, self.body_f, flags))]
            if grown == flags:
                return flags
            flags = grown

    def per_example_condition(self):
        return self._trial(self.going, self.cond_f, self.flags)[0]

    def _loop(self, cond, body, start, flags, keep_history):
        invariants = [self._shape(p, f) for p, f in zip(self.body_f.graph.inputs, flags)]
        invariants += [TensorShape([self.static])] * (len(start) - self.n)       # per-example state
        return _graph_loop(cond, body, start, False, start, invariants, keep_history, self.max_iter, raw=True)

    def _result(self, outs, flags, keep_history, count, count_batched):
        """The original op's outputs: loop variables, [histories,] iteration count."""
        n, histories = self.n, ()
        if keep_history:                                # [steps, B, ...] -> each example's [steps, ...]
            histories = tuple(primitives.transpose(h, (1, 0) + tuple(range(2, h._value.ndim))) if f else h
                              for h, f in zip(outs[len(outs) // 2:len(outs) // 2 + n], flags))
        return (tuple(outs[:n]) + histories + (count,),
                tuple(flags[:n]) + (tuple(flags[:n]) if keep_history else ()) + (count_batched,))

    def uniform(self, keep_history):
        """Every example runs the same steps: one loop of the batched body."""
        flags = self.flags

        def body(*vs):
            outs, out_batched = self.run(self.body, vs, flags)
            return [primitives.broadcast_batch(o, self.size) if f and not b else o
                    for o, b, f in zip(outs, out_batched, flags)]
        start = [primitives.broadcast_batch(v, self.size) if f and not b else v
                 for v, f, b in zip(self.loop_vars, flags, self.entering)]
        outs = self._loop(lambda *vs: self.run(self.going, vs, flags)[0][0], body, start, flags, keep_history)
        return self._result(outs, flags, keep_history, outs[-1], False)

    def per_example(self, keep_history):
        """Examples stop at different steps: each step runs those still going."""
        n, size, every = self.n, self.size, [True] * self.n

        def step(args):
            new = self.body(args)
            return self.going(new + args[n:]) + new

        def body(*carry):
            vs, active, counts = carry[:n], carry[n], carry[n + 1]
            if self.nested:                             # Note [nested vectorized control flow]
                still, *new = _all_stacked(*self.run(step, vs, every), size)
                vs = [math_ops.where(*primitives.align_ranks([active, u, v], (True, True, True)))
                      for u, v in zip(new, vs)]
                return vs + [math_ops.logical_and(active, still), counts + basic_ops.cast(active, dtypes.int32)]
            rows = math_ops.where_indices(active)                   # [k, 1]: the examples still going
            at = primitives.reshape(rows, [-1])
            caps = [scatter_ops.gather(c, at) if f else c for c, f in zip(_own(self.captured), self.cap_flags)]
            outs, out_batched = self.run(step, [scatter_ops.gather(v, at) for v in vs], every, caps)
            still, *new = _all_stacked(outs, out_batched, basic_ops.shape(at)[0])
            vs = [scatter_ops.tensor_scatter_nd_update(v, rows, u) for v, u in zip(vs, new)]
            active = scatter_ops.tensor_scatter_nd_update(basic_ops.zeros_like(active), rows, still)
            return vs + [active, counts + basic_ops.cast(carry[n], dtypes.int32)]

        stacked = primitives.stacked_all(self.loop_vars, self.entering, size)
        (active,) = _all_stacked(*self.run(self.going, stacked, every), size)
        counts = primitives.broadcast_batch(Tensor(np.int32(0)), size)
        outs = self._loop(lambda *carry: reduction_ops.reduce_any(carry[n]), body, stacked + [active, counts],
                          every, keep_history)
        return self._result(outs, every, keep_history, outs[n + 1], True)


def _all_stacked(outs, out_batched, count):
    return [o if b else primitives.broadcast_batch(o, count) for o, b in zip(outs, out_batched)]


def _stacked_shape(size, shape):
    return TensorShape(None) if shape is None else TensorShape((size,) + tuple(TensorShape(shape).as_list()))


@_while.def_grad
def _while_grad(op, *dys):
    # Note [while gradients]: with x_i the loop variables entering iteration i
    # (the stacked history) and g the gradient of the variables leaving it,
    # the body's backward function maps (x_i, g) to the gradient of x_i and of
    # the captured values; a while_loop runs it for i = n-1 ... 0, adding the
    # direct gradient of the history and summing the captured values' gradients.
    n, n_caps = op.get_attr("n"), op.get_attr("n_caps")
    if not op.get_attr("keep_history"):
        raise LookupError("This while_loop was built with back_prop=False (or has no float loop variables) "
                          "and cannot be differentiated.")
    body_f, body_caps = op.get_attr("body_f"), op.get_attr("body_caps")
    loop_inputs = op.inputs[1:1 + n]
    captured = op.inputs[1 + n:1 + n + n_caps]
    variables = op.inputs[1 + n + n_caps:]
    history, count = op.outputs[n:2 * n], op.outputs[2 * n]
    d_final, d_history = dys[:n], dys[n:2 * n]
    backward = body_f._backward_function()
    mask = backward._grad_mask
    trainable = [k for k in range(n) if _trainable(loop_inputs[k])]
    var_local = {v._id: k for k, v in enumerate(body_f.graph.variables)}
    n_body = n + len(body_caps)
    cap_trainable = [j for j in range(n_caps) if _trainable(captured[j])]
    d_hist = {k: convert_to_tensor(d_history[k]) for k in trainable if d_history[k] is not None}

    def step(i, *carry):
        dv = list(carry[:len(trainable)])
        acc_c = list(carry[len(trainable):len(trainable) + len(cap_trainable)])
        acc_v = list(carry[len(trainable) + len(cap_trainable):])
        x_i = [scatter_ops.gather(history[k], i) for k in range(n)]
        flat = iter(backward._call_flat(x_i + [captured[p] for p in body_caps] + dv))
        grads = [next(flat) if m else None for m in mask]
        new_dv = []
        for t, k in enumerate(trainable):
            g = grads[k]
            g = basic_ops.zeros_like(dv[t]) if g is None else convert_to_tensor(g)
            if k in d_hist:
                g = _add(g, scatter_ops.gather(d_hist[k], i))
            new_dv.append(g)
        for local, p in enumerate(body_caps):
            g = grads[n + local]
            if g is not None and p in cap_trainable:
                slot = cap_trainable.index(p)
                acc_c[slot] = _add(acc_c[slot], convert_to_tensor(g))
        for k, v in enumerate(variables):
            local = var_local.get(v._id)
            if local is not None and grads[n_body + local] is not None:
                acc_v[k] = _add(acc_v[k], convert_to_tensor(grads[n_body + local]))
        return [i - 1] + new_dv + acc_c + acc_v

    dv0 = [basic_ops.zeros_like(loop_inputs[k]) if d_final[k] is None else convert_to_tensor(d_final[k]) for k in trainable]
    acc_c0 = [basic_ops.zeros_like(captured[j]) for j in cap_trainable]
    acc_v0 = [basic_ops.zeros_like(v.value()) for v in variables]
    result = while_loop(lambda i, *_: i >= 0, step, [count - 1] + dv0 + acc_c0 + acc_v0)
    carry = result[1:]
    grads = [None] * (1 + n + n_caps + len(variables))
    for t, k in enumerate(trainable):
        grads[1 + k] = carry[t]
    for s, j in enumerate(cap_trainable):
        grads[1 + n + j] = carry[len(trainable) + s]
    for k in range(len(variables)):
        grads[1 + n + n_caps + k] = carry[len(trainable) + len(cap_trainable) + k]
    return grads
