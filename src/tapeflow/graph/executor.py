"""Compiled execution plans: a graph pruned to what the fetches need, ordered
once, and run as a flat list of kernel calls over value slots.

Note [plan slots]: every symbolic tensor the plan touches gets a slot index.
Feeds are written into their slots, eager constants sit in slots filled once
when the plan is built, and each step frees the slots whose last reader it
was, so intermediates die as early as in eager mode.
"""

from typing import NamedTuple

import numpy as np

from tapeflow.framework import device as device_lib
from tapeflow.framework.op_def import KERNEL_ERRORS, kernel_error
from tapeflow.framework.shapes.symbolic_tensors import SymbolicTensor, _const
from tapeflow.framework.tensor import Tensor
from tapeflow.ops.core import half
from tapeflow.ops.variables import Variable
from tapeflow.graph import lanes
from tapeflow.graph.graph import Operation


class _Call(NamedTuple):
    """A step while the plan is being built: an op and its slots."""
    op: Operation
    ins: tuple              # input slots
    variables: tuple        # (input position, Variable) for each variable input
    outs: tuple             # output slots


class Step(NamedTuple):
    """One kernel call of a built plan, as the generated code makes it (Note [generated
    plans]); lanes.py groups them (Note [parallel lanes])."""
    kernel: object          # the function called: the op's kernel, or one chosen for half precision
    ins: tuple              # input slots
    attrs: dict             # keyword arguments (with `donated`: Note [donated inputs])
    out: object             # the output slot; a tuple of slots when not `single`
    single: bool            # the op has one output
    variables: tuple        # (input position, Variable): read when the step runs
    frees: tuple            # slots whose last reader this step is, deleted after it
    buffer: object          # the dying input slot the result is written into (Note [buffer reuse]), or None
    op: Operation

    def made(self):
        """The slots this step assigns."""
        return (self.out,) if self.single else self.out


def _needed_ops(fetch_ops, feeds, extra_ops):
    """The ops the fetches depend on (through data and control edges), in creation order.

    Note [plan order]: creation order is topological (an op's inputs exist
    before it), and it is the order the program was written in: a backward pass
    built by a tape computes each layer's weight gradient right after the
    gradient flowing into that layer, so each of those dies at once.  A
    depth-first order from the first fetch would instead run the whole chain of
    input gradients first and keep every one of them alive until the weight
    gradients at the end.
    """
    order = []
    visited = set()
    fed = {t._id for t in feeds}
    for root in list(fetch_ops) + list(extra_ops):
        stack = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if expanded:
                order.append(op)
                continue
            if op._id in visited:
                continue
            visited.add(op._id)
            stack.append((op, True))
            for c in reversed(op.control_inputs):
                if c._id not in visited:
                    stack.append((c, False))
            for t in reversed(op.inputs):
                if isinstance(t, SymbolicTensor) and t._id not in fed and t.op._id not in visited:
                    stack.append((t.op, False))
    order.sort(key=lambda op: op._id)
    return order


def _cse_key(op, ins):
    """A key equal for ops computing the same value (None for stateful or unhashable ones)."""
    if op.op_def.stateful:
        return None
    try:
        attrs = tuple(sorted(op.attrs.items())) if op.attrs else ()
        hash(attrs)
    except TypeError:
        return None
    return (op.op_def.type, ins, attrs)


def _kernel(op):
    """The op's kernel for its first input's dtype, chosen once per plan: its half kernel
    for float16 and bfloat16 when it declares one (Note [half precision] in ops/core/half.py)."""
    op_def = op.op_def
    if op_def.half is None or not op.inputs:
        return op_def.kernel
    return op_def.kernel_for(op.inputs[0].dtype._np)


def _plan_kernels(steps, keep, known, template):
    """Each step's kernel; half steps that read or write wide slots run through
    `half.plan_kernel` (Note [half precision in plans] in ops/core/half.py).  Constants read
    only by half steps are widened here, once."""
    kernels = [_kernel(call.op) for call in steps]
    halves = {n: call.op.inputs[0].dtype._np for n, call in enumerate(steps)      # step -> its half dtype
              if isinstance(kernels[n], half.HalfKernel)}
    if not halves:
        return kernels
    readers = {}
    for n, call in enumerate(steps):
        for index in call.ins:
            readers.setdefault(index, []).append(n)

    def only_half_readers(index, dtype):
        return index not in keep and index in readers and all(halves.get(n) == dtype for n in readers[index])

    wide = set()
    for n, dtype in halves.items():
        outs = steps[n].outs
        if len(outs) == 1 and steps[n].op.outputs[0]._value.dtype == dtype and only_half_readers(outs[0], dtype):
            wide.add(outs[0])
    for index in known:
        value = template[index]
        if isinstance(value, np.ndarray) and value.dtype in half.HALF_NP and only_half_readers(index, value.dtype):
            template[index] = half.to_float32(value)
            wide.add(index)
    for n, dtype in halves.items():
        ins, outs = steps[n].ins, steps[n].outs
        wide_out = len(outs) == 1 and outs[0] in wide
        if wide_out or any(index in wide for index in ins):
            kernels[n] = half.plan_kernel(kernels[n], dtype, wide_out)
    return kernels


def _dying_own_slots(steps, last_use, pinned):
    """`(owned, producer)`: `owned(index, n)` tells whether slot `index` dies at step n holding
    an array of its own (Note [buffer reuse]); `producer` maps slots to the tensors made there."""
    producer, readers = {}, {}
    for n, call in enumerate(steps):
        for index in call.ins:
            readers.setdefault(index, []).append((n, call.op.op_def))
        for index, t in zip(call.outs, call.op.outputs):
            producer[index] = t

    def owned(index, n):
        source = producer.get(index)
        return (source is not None and index not in pinned and last_use.get(index) == n
                and _fresh(source.op.op_def) and all(_fresh(r) for m, r in readers[index] if m != n))
    return owned, producer


def _reusable_buffers(steps, owned, producer):
    """Elementwise steps that can write their result into a dying input: step -> slot.

    Note [buffer reuse]: an op with an `into` kernel (`into(*inputs, out=buffer)`,
    e.g. a ufunc) may overwrite an input slot whose last reader it is, when
    that slot's array is its own: made fresh by an op that never returns a
    view or a variable's array (`into` ops, and `fresh_outputs` ops such as
    MatMul), read otherwise only by such ops (so no view of it lives on), neither
    fed, fetched nor constant (`_dying_own_slots`), and of the result's static
    shape and dtype.  It saves an allocation and keeps the data in cache, as
    `d *= mask` does in hand-written NumPy.
    """
    reuse = {}
    for n, call in enumerate(steps):
        op = call.op
        if (op.op_def.into is None or op.attrs or call.variables or len(call.outs) != 1
                or _kernel(op) is not op.op_def.kernel):
            continue
        meta = op.outputs[0]._value
        if not meta.shape or None in meta.shape:
            continue
        for index in call.ins:
            if (owned(index, n) and producer[index]._value.shape == meta.shape
                    and producer[index]._value.dtype == meta.dtype):
                reuse[n] = index
                break
    return reuse


def _donated_inputs(steps, owned):
    """Steps of ops that may overwrite inputs (`donates`): step -> the input positions they may.

    Note [donated inputs]: a collective such as MpiAllReduce writes its results into new
    arrays unless it may overwrite its inputs, and a fresh array of megabytes costs page
    faults and cache misses on every run (about 0.8 ms for the MLP's gradients on the
    project machine, a tenth of what a whole step loses to the all-reduce).  A plan knows
    when an input dies at such a step with an array of its own (Note [buffer reuse]'s
    conditions, `_dying_own_slots`); one passed twice to the step is not donated.  The
    kernel gets their positions in its `donated` attr; eagerly no input is ever donated.
    """
    donated = {}
    for n, call in enumerate(steps):
        if not call.op.op_def.donates or _kernel(call.op) is not call.op.op_def.kernel:
            continue
        ins = call.ins
        positions = tuple(k for k, index in enumerate(ins) if ins.count(index) == 1 and owned(index, n))
        if positions:
            donated[n] = positions
    return donated


def _fresh(op_def):
    """Whether the op's outputs are always new arrays, never views of its inputs."""
    return op_def.into is not None or op_def.fresh_outputs


class Plan:
    """A runnable plan for `fetches` (tensors and ops of one graph) given `feeds`.

    Args:
      fetches: symbolic tensors (values returned) and Operations (only run).
      feeds: placeholders whose values `run` receives, in this order.
      run_stateful: also run every stateful op of the graph (tf.function semantics).

    Note [pass-through ops]: an op whose kernel returns its first inputs as they are
    (`passes_through`: CustomGradient, whose other inputs are there for its gradient only)
    runs no step: its outputs take its inputs' slots, as a common subexpression does.  So
    the arguments of a custom gradient are not read when its results are, and die at their
    last real reader (a fused all-reduce sums them in place, Note [donated inputs]).  An op
    reading a variable, or with an output fed, stays a step.
    """

    __slots__ = ("_steps", "_template", "_feed_slots", "_fetch_slots", "graph", "_run", "_line_step")

    def __init__(self, graph, fetches, feeds, run_stateful=False):
        self.graph = graph
        slot_of = {}
        template = []

        def slot(key, value=None):
            index = slot_of.get(key)
            if index is None:
                index = slot_of[key] = len(template)
                template.append(value)
            return index

        self._feed_slots = [slot(t._id) for t in feeds]
        fed = {t._id for t in feeds}
        fetch_ops = []
        for f in fetches:
            if isinstance(f, Operation):
                fetch_ops.append(f)
            elif isinstance(f, SymbolicTensor) and f._id not in fed:
                fetch_ops.append(f.op)
        extra = graph._stateful_ops if run_stateful else ()
        ops = _needed_ops(fetch_ops, feeds, extra)
        steps = []
        known = set()       # slots whose value is known when the plan is built
        seen = {}           # (op type, input slots, attrs) -> output slots, for CSE
        for op in ops:
            ins, variables = [], []
            for k, t in enumerate(op.inputs):
                if isinstance(t, SymbolicTensor):
                    ins.append(slot(t._id))
                elif isinstance(t, Variable):
                    ins.append(slot(("var", t._id)))
                    variables.append((k, t))
                else:
                    ins.append(slot(("const", t._id), t._value))
                    known.add(ins[-1])
            ins = tuple(ins)
            if op.op_def is _const:
                known.add(slot(op.outputs[0]._id, op.attrs["value"]))
                continue
            if op.op_def.passes_through and not variables and not any(t._id in slot_of for t in op.outputs):
                # Note [pass-through ops]
                for t, index in zip(op.outputs, ins):
                    slot_of[t._id] = index
                continue
            if self._fold(op, ins, variables, known, template, slot):
                continue
            key = None if variables else _cse_key(op, ins)   # variable reads see earlier writes
            if key is not None and key in seen:       # the same computation again: reuse its outputs
                for t, index in zip(op.outputs, seen[key]):
                    slot_of[t._id] = index
                continue
            outs = tuple(slot(t._id) for t in op.outputs)
            if key is not None:
                seen[key] = outs
            steps.append(_Call(op, ins, tuple(variables), outs))
        last_use = {}
        for n, call in enumerate(steps):
            for index in call.ins:
                if index not in known:
                    last_use[index] = n
        fetch_slots = []
        for f in fetches:
            if isinstance(f, SymbolicTensor):
                fetch_slots.append(slot(f._id))
            elif isinstance(f, Operation):
                fetch_slots.append(None)
            else:   # an eager value fetched as is
                fetch_slots.append(slot(("const", id(f)), f._value if isinstance(f, Tensor) else f))
                known.add(fetch_slots[-1])
        keep = set(fetch_slots) | set(self._feed_slots)
        frees = {}
        for index, n in last_use.items():
            if index not in keep:
                frees.setdefault(n, []).append(index)
        kernels = _plan_kernels(steps, keep, known, template)
        owned, producer = _dying_own_slots(steps, last_use, keep | known)
        reuse = _reusable_buffers(steps, owned, producer)
        donated = _donated_inputs(steps, owned)
        self._steps = tuple(
            Step(kernels[n], ins, op.attrs if n not in donated else {**op.attrs, "donated": donated[n]},
                 outs[0] if op.op_def.num_outputs == 1 else outs, op.op_def.num_outputs == 1, variables,
                 tuple(frees.get(n, ())), reuse.get(n), op)
            for n, (op, ins, variables, outs) in enumerate(steps))
        self._template = template
        self._fetch_slots = fetch_slots
        self._run, self._line_step = self._compile(known)

    @staticmethod
    def _fold(op, ins, variables, known, template, slot):
        """Constant folding: runs a pure op whose inputs are all known now."""
        if op.op_def.stateful or variables or not ins or any(i not in known for i in ins):
            return False
        try:
            result = _kernel(op)(*[template[i] for i in ins], **op.attrs)
        except Exception:      # left for run time, where it raises with the node's name
            return False
        results = (result,) if op.op_def.num_outputs == 1 else tuple(result)
        for t, value in zip(op.outputs, results):
            index = slot(t._id)
            template[index] = value
            known.add(index)
        return True

    def _compile(self, known):
        """Generates one straight-line Python function for the plan.

        Note [generated plans]: each step becomes `s7 = k3(s2, s5)` on local
        variables, constants and kernels are globals of the generated code, and
        slots are deleted after their last use. An exception is mapped back to
        its step by the line it was raised on.  Steps that run in parallel lanes
        (Note [parallel lanes] in graph/lanes.py) go into one nested function per
        lane, which assigns and deletes the plan's slots as `nonlocal`s; a slot
        that another lane of the group reads is deleted after the group.
        """
        namespace = {"_run_lanes": lanes.run_lanes}
        lines = ["def _plan(feeds):"]
        feed_names = [f"s{i}" for i in self._feed_slots]
        if feed_names:
            lines.append(f"    {', '.join(feed_names)}{',' if len(feed_names) == 1 else ''} = feeds")
        line_step = {}
        defined = set(self._feed_slots)

        def ref(index):
            if index in known:
                namespace[f"c{index}"] = self._template[index]
                return f"c{index}"
            return f"s{index}"

        def emit(n, indent, keep=()):
            """The lines of step n; returns the slots it defines and those it deletes."""
            step = self._steps[n]
            op_def = step.op.op_def
            namespace[f"k{n}"] = step.kernel if step.buffer is None else op_def.into
            args = [ref(i) for i in step.ins]
            by_value = not op_def.reads_variables_itself
            for k, var in step.variables:
                namespace[f"v{n}_{k}"] = var
                args[k] = f"v{n}_{k}._value" if by_value else "None"
            if step.attrs:
                namespace[f"a{n}"] = step.attrs
                args.append(f"**a{n}")
            if step.buffer is not None:          # Note [buffer reuse]
                args.append(f"out=s{step.buffer}")
            call = f"k{n}({', '.join(args)})"
            target = f"s{step.out}" if step.single else f"r{n}"
            line_step[len(lines) + 1] = n
            lines.append(f"{indent}{target} = {call}")
            out = step.out
            if not step.single:
                if out:
                    lines.append(f"{indent}{', '.join(f's{o}' for o in out)}{',' if len(out) == 1 else ''} = r{n}")
                lines.append(f"{indent}del r{n}")
            made = step.made()
            defined.update(made)
            live = [i for i in step.frees if i in defined and i not in known and i not in keep]
            if live:
                lines.append(f"{indent}del {', '.join(f's{i}' for i in live)}")
            return made, live

        group = 0
        for item in lanes.schedule(self._steps, device_lib.runtime.inter_op_threads or 0):
            if type(item) is int:
                emit(item, "    ")
                continue
            group += 1
            reads = [{i for n in lane for i in self._steps[n].ins} for lane in item]
            made = [s for lane in item for n in lane for s in self._steps[n].made()]
            if made:                            # bound here, so that the lanes can assign them
                lines.append(f"    {' = '.join(f's{i}' for i in made)} = None")
            deferred = []
            for k, lane in enumerate(item):
                shared = set().union(*(r for j, r in enumerate(reads) if j != k))
                start = len(lines)
                lines.append(f"    def _lane{group}_{k}():")
                lines.append("        nonlocal _")           # replaced below by the lane's slots
                touched = []
                for n in lane:
                    outs, live = emit(n, "        ", keep=shared)
                    touched += outs
                    touched += live
                    deferred += [i for i in self._steps[n].frees if i in shared and i not in known]
                if touched:
                    lines[start + 1] = f"        nonlocal {', '.join(dict.fromkeys(f's{i}' for i in touched))}"
                else:
                    lines[start + 1] = "        pass"
            lines.append(f"    _run_lanes({', '.join(f'_lane{group}_{k}' for k in range(len(item)))})")
            deferred = [i for i in dict.fromkeys(deferred) if i in defined]
            if deferred:
                lines.append(f"    del {', '.join(f's{i}' for i in deferred)}")
        results = ", ".join("None" if i is None else ref(i) for i in self._fetch_slots)
        lines.append(f"    return [{results}]")
        exec(compile("\n".join(lines), "<plan>", "exec"), namespace)   # noqa: S102 - generated from the graph
        return namespace["_plan"], line_step

    def run(self, feed_values):
        """Runs the plan on NumPy feed values; returns the fetched NumPy values (None for ops)."""
        try:
            return self._run(feed_values)
        except KERNEL_ERRORS as e:             # Note [kernel errors] in framework/op_def.py
            op = self._failed_op(e)
            if op is None:
                raise
            raise kernel_error(e, op.type, node=op) from None

    def _failed_op(self, error):
        """The op of the step that raised `error` (the innermost plan line that is a step's:
        in a lane, the plan's own frame is at the group's call)."""
        tb, step = error.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<plan>":
                step = self._line_step.get(tb.tb_lineno, step)
            tb = tb.tb_next
        return None if step is None else self._steps[step].op
