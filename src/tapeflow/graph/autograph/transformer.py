"""The source transformation: a function's syntax tree with its control flow made
into calls of `ag__` operators (operators.py, loops.py).

After lowering.py and analysis.py, each statement becomes:

    if test: ...            def if_true(<inputs>): ...; return (<outputs>,)
    else: ...          ->   def if_false(<inputs>): ...; return (<outputs>,)
                            (<outputs>,) = ag__.if_stmt(test, if_true, if_false, (<inputs>,), ('<outputs>',))

    while test: ...    ->   def loop_test(<state>): return test
                            def loop_body(<state>): ...; return (<state>,)
                            (<state>,) = ag__.while_stmt(loop_test, loop_body, (<state>,), ('<state>',), {})

    for x in it: ...   ->   def loop_body(itr, <state>): x = itr; ...; return (<state>,)
                            (<state>,) = ag__.for_stmt(it, extra_test, loop_body, (<state>,), ('<state>',), {})

The outputs of an `if` are the variables it assigns that are live after it;
its inputs add those a branch reads before assigning.  A loop's state is what
its body assigns that is live at the top of an iteration or after the loop.
A variable that may be unassigned enters as `ag__.ld(locals(), 'name')`.
Expressions: every call `f(...)` becomes `ag__.call(f)(...)` (converting user
functions, Note [which functions are converted] in conversion.py), and
`and`, `or`, `not` and `a if c else b` become operators that stage on
tensors (`assert` stays Python, as in TensorFlow).  Generated statements
carry the line of the statement they replace, so tracebacks point into the
user's source (Note [generated positions] in lowering.py).
"""

import ast

from tapeflow.graph.autograph import analysis
from tapeflow.graph.autograph.lowering import SCOPES, Lowering, ag_call, located

_UNWRAPPED_CALLS = frozenset({"super", "locals", "globals", "vars", "eval", "exec"})


class Namer:
    """Fresh names that no name of the function uses."""

    def __init__(self, node):
        self.used = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                self.used.add(n.id)
            elif isinstance(n, ast.arg):
                self.used.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.used.add(n.name)

    def new(self, base):
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def _load(name):
    return ast.Name(name, ast.Load())


def _store(name):
    return ast.Name(name, ast.Store())


def _lambda(body):
    return ast.Lambda(args=_arguments([]), body=body)


def _arguments(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def _def(name, params, body):
    return ast.FunctionDef(name=name, args=_arguments(params), body=body, decorator_list=[], returns=None)


def _tuple(names):
    return ast.Tuple([_load(n) for n in names], ast.Load())


def _strings(names):
    return ast.Tuple([ast.Constant(n) for n in names], ast.Load())


def _is_ag(node):
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ag__"


class _Expressions(ast.NodeTransformer):
    """Calls, `and`/`or`/`not` and conditional expressions (not inside nested functions,
    which are converted on their own).  In a method, `super()` gets its arguments
    (`super(__class__, self)`): it may run inside a generated branch or loop function."""

    def __init__(self, self_name=None):
        self.self_name = self_name

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args and self.self_name:
            node.args = [located(_load("__class__"), node), located(_load(self.self_name), node)]
        if _is_ag(node.func) or (isinstance(node.func, ast.Name) and node.func.id in _UNWRAPPED_CALLS):
            return node
        node.func = located(ag_call("call", node.func), node.func)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for v in node.values for n in ast.walk(v)):
            return node         # a walrus inside a thunk would bind in the thunk
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        return located(ag_call(name, *[_lambda(v) for v in node.values]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return located(ag_call("not_", node.operand), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node
        return located(ag_call("if_exp", node.test, _lambda(node.body), _lambda(node.orelse)), node)


class _ControlFlow:
    """Turns `if`, `while` and `for` statements into operator calls (see the module docstring)."""

    def __init__(self, namer, declared, closure_reads):
        self.namer = namer
        self.declared = declared                  # name -> ast.Global or ast.Nonlocal
        self.always_live = closure_reads          # None: every variable is live

    def block(self, stmts, bound):
        """Converts a statement list; `bound`: the parameters of the function it runs in."""
        out = []
        for s in stmts:
            if isinstance(s, ast.If):
                out.extend(self._if(s, bound))
            elif isinstance(s, ast.While):
                out.extend(self._while(s, bound))
            elif isinstance(s, ast.For):
                out.extend(self._for(s, bound))
            else:
                if not isinstance(s, SCOPES):
                    for field in ("body", "orelse", "finalbody"):
                        if isinstance(getattr(s, field, None), list):
                            setattr(s, field, self.block(getattr(s, field), bound))
                    for handler in getattr(s, "handlers", ()):
                        handler.body = self.block(handler.body, bound)
                out.append(s)
        return out

    def _live(self, names, live):
        if self.always_live is None:
            return set(names)
        return set(names) & (live | self.always_live)

    def _modified(self, nodes):
        return analysis.writes(nodes) - set(self.declared)

    def _inputs(self, names, node, bound):
        """The values of `names` before `node`: `ag__.ld(locals(), n)` where n may be unassigned."""
        return ast.Tuple([_load(n) if n in node._defined or n in bound else
                          ag_call("ld", ast.Call(_load("locals"), [], []), ast.Constant(n)) for n in names],
                         ast.Load())

    def _function(self, name, params, body, returns, bound):
        """`def name(*params): <body converted>; return (*returns,)`."""
        converted = self.block(body, bound | set(params))
        decls = [self.declared[n](names=[n]) for n in sorted(analysis.writes(body) & set(self.declared))]
        return _def(name, params, decls + converted + [ast.Return(_tuple(returns))])

    def _result(self, names, call):
        if not names:
            return ast.Expr(call)
        return ast.Assign(targets=[ast.Tuple([_store(n) for n in names], ast.Store())], value=call)

    def _if(self, node, bound):
        modified = self._modified(node.body + node.orelse)
        outputs = sorted(self._live(modified, node._live_out))
        inputs = sorted(set(outputs) | (modified & (node._live_body | node._live_orelse)))
        true_name, false_name = self.namer.new("if_true"), self.namer.new("if_false")
        stmts = [self._function(true_name, inputs, node.body, outputs, bound),
                 self._function(false_name, inputs, node.orelse, outputs, bound),
                 self._result(outputs, ag_call("if_stmt", node.test, _load(true_name), _load(false_name),
                                               self._inputs(inputs, node, bound), _strings(outputs)))]
        return [located(s, node) for s in stmts]

    def _loop_state(self, node, modified):
        return sorted(self._live(modified, node._live_head | node._live_out))

    def _options(self, node, extra):
        keys = [ast.Constant(k.arg) for k in node._ag_opts] + [ast.Constant(k) for k in extra]
        values = [k.value for k in node._ag_opts] + [ast.Constant(v) for v in extra.values()]
        return ast.Dict(keys=keys, values=values)

    def _stop_flags(self, node):
        return [ag_call("not_", _load(flag)) for flag in node._ag_extra]

    def _while(self, node, bound):
        state = self._loop_state(node, self._modified(node.body))
        test_name, body_name = self.namer.new("loop_test"), self.namer.new("loop_body")
        flags = self._stop_flags(node)
        test = ag_call("and_", *[_lambda(t) for t in flags + [node.test]]) if flags else node.test
        stmts = [_def(test_name, state, [ast.Return(test)]),
                 self._function(body_name, state, node.body, state, bound),
                 self._result(state, ag_call("while_stmt", _load(test_name), _load(body_name),
                                             self._inputs(state, node, bound), _strings(state),
                                             self._options(node, {})))]
        return [located(s, node) for s in stmts]

    def _for(self, node, bound):
        targets = analysis.writes([node.target]) - set(self.declared)
        state = self._loop_state(node, self._modified(node.body) | targets)
        body_name, item = self.namer.new("loop_body"), self.namer.new("itr")
        target_assign = located(ast.Assign(targets=[node.target], value=_load(item)), node)
        stmts = [self._function(body_name, [item] + state, [target_assign] + node.body, state, bound)]
        flags = self._stop_flags(node)
        extra = ast.Constant(None)
        if flags:
            extra_name = self.namer.new("extra_test")
            test = ag_call("and_", *[_lambda(t) for t in flags]) if len(flags) > 1 else flags[0]
            stmts.append(_def(extra_name, state, [ast.Return(test)]))
            extra = _load(extra_name)
        options = {"iterate_names": node.target.id} if isinstance(node.target, ast.Name) else {}
        stmts.append(self._result(state, ag_call("for_stmt", node.iter, extra, _load(body_name),
                                                 self._inputs(state, node, bound), _strings(state),
                                                 self._options(node, options))))
        return [located(s, node) for s in stmts]


def _nested_functions(stmts):
    """The functions defined directly in this scope (not inside other functions)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
            continue
        if not isinstance(node, (ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _decorated_do_not_convert(fn):
    return any("do_not_convert" in ast.unparse(d) for d in fn.decorator_list)


def convert_function(fn, name, in_class=False):
    """Converts the syntax tree of one function (its nested functions first); returns it.
    `in_class`: the function is a method using `super()` (its code has a `__class__` cell)."""
    closure_reads = analysis.closure_reads(fn)
    for inner in list(_nested_functions(fn.body)):
        if isinstance(inner, ast.FunctionDef) and not _decorated_do_not_convert(inner):
            convert_function(inner, inner.name)
    namer = Namer(fn)
    lowering = Lowering(namer)
    fn.body = lowering.loops(fn.body)
    lowering.returns(fn)
    analysis.annotate(fn)
    positional = fn.args.posonlyargs + fn.args.args
    expressions = _Expressions(positional[0].arg if in_class and positional else None)
    fn.body = [expressions.visit(s) for s in fn.body]
    declared = analysis.declared(fn)
    params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a}
    fn.body = _ControlFlow(namer, declared, closure_reads).block(fn.body, params)
    return fn
