"""What AutoGraph needs to know about a function body's variables.

For each `if`, `while` and `for` statement (after lowering.py):

* `_live_out`: the variables read after it before being assigned again; for
  an `if`, `_live_body`/`_live_orelse` the variables each branch reads before
  assigning them; for a loop, `_live_head` those live at the top of an
  iteration.  A staged statement hands on exactly the variables it assigns
  that are live: the others are temporaries of one branch or one iteration.
* `_defined`: the variables certainly assigned before it (the others may be
  undefined, and are read with a fallback to `Undefined`).

Liveness runs backwards over the structured statements (loops to a fixed
point), definedness forwards; both are per function scope: a nested function
or lambda counts as reading its free variables where it is defined.
"""

import ast

from tapeflow.graph.autograph.lowering import SCOPES

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec"})
_TRY = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def reads(node):
    """The variables `node` reads (in its own scope, and freely from scopes inside it)."""
    if isinstance(node, ast.Name):
        return {node.id} if not isinstance(node.ctx, ast.Store) else set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        outer = _reads_all(node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d])
        return outer | (_reads_all(node.body) - _params(node.args) - writes(node.body))
    if isinstance(node, ast.Lambda):
        outer = _reads_all(node.args.defaults + [d for d in node.args.kw_defaults if d])
        return outer | (reads(node.body) - _params(node.args))
    if isinstance(node, _COMPREHENSIONS):
        inner = _reads_all(list(ast.iter_child_nodes(node)))
        return inner - set().union(*(writes([g.target]) for g in node.generators))
    if isinstance(node, ast.AugAssign):
        return reads(node.target) | reads(node.value) | writes([node.target])
    return _reads_all(list(ast.iter_child_nodes(node)))


def _reads_all(nodes):
    out = set()
    for n in nodes:
        out |= reads(n)
    return out


def _params(args):
    every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    return {a.arg for a in every}


def writes(nodes):
    """The variables bound by `nodes` in their scope (assignments, loop and `with` targets,
    imports, definitions, `del`); not those of scopes inside them."""
    out = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                out.add(node.id)
            continue
        if isinstance(node, SCOPES):
            if not isinstance(node, ast.Lambda):
                out.add(node.name)
            continue
        if isinstance(node, _COMPREHENSIONS):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return out


def declared(fn):
    """The names `fn` declares `global` or `nonlocal` (never state of its statements)."""
    out = {}
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update((n, type(node)) for n in node.names)
        elif not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    return out


def closure_reads(fn):
    """Variables read by functions defined inside `fn` (live wherever they are assigned,
    since the inner function may run later); None when `fn` reads its own frame
    (`locals()`, `eval`...), which makes every variable live."""
    out = set()
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and node.id in _FRAME_READERS:
            return None
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out |= reads(node)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


# -- liveness ---------------------------------------------------------------------------

def _loop_head_reads(loop):
    flags = set(getattr(loop, "_ag_extra", ()))
    return flags | _reads_all([k.value for k in getattr(loop, "_ag_opts", ())])


def live_block(stmts, live):
    """The variables live before `stmts` given those live after; annotates compound statements."""
    live = set(live)
    for s in reversed(stmts):
        live = _live_stmt(s, live)
    return live


def _live_stmt(s, out):
    if isinstance(s, ast.If):
        s._live_out = out
        s._live_body = live_block(s.body, out)
        s._live_orelse = live_block(s.orelse, out)
        return reads(s.test) | s._live_body | s._live_orelse
    if isinstance(s, ast.While):
        head = out | reads(s.test) | _loop_head_reads(s)
        while True:
            grown = head | live_block(s.body, head)
            if grown == head:
                break
            head = grown
        s._live_out, s._live_head = out, head
        return head
    if isinstance(s, ast.For):
        targets = writes([s.target])
        head = out | _loop_head_reads(s)
        while True:
            grown = head | (live_block(s.body, head) - targets)
            if grown == head:
                break
            head = grown
        s._live_out, s._live_head = out, head
        return head | reads(s.iter) | reads(s.target)
    if isinstance(s, (ast.With, ast.AsyncWith)):
        inside = live_block(s.body, out) - writes([i.optional_vars for i in s.items if i.optional_vars])
        return inside | _reads_all([i.context_expr for i in s.items])
    if isinstance(s, _TRY):
        after = live_block(s.finalbody, out)
        handlers = set().union(*(live_block(h.body, after) for h in s.handlers)) if s.handlers else set()
        handlers |= _reads_all([h.type for h in s.handlers if h.type])
        return live_block(s.body, live_block(s.orelse, after) | handlers) | handlers | after
    if isinstance(s, ast.Return):
        return reads(s.value) if s.value else set()
    if isinstance(s, (ast.Raise, ast.Break, ast.Continue)):
        return out | reads(s)
    if isinstance(s, ast.Match):
        return out | reads(s)
    return (out - _kills(s)) | reads(s)


def _kills(s):
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Delete)) or \
            isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return writes([s])
    if isinstance(s, ast.AnnAssign) and s.value is not None:
        return writes([s.target])
    return set()


# -- definedness ------------------------------------------------------------------------

def defined_block(stmts, defined):
    """The variables certainly assigned after `stmts` given those before; annotates
    compound statements with `_defined`."""
    for s in stmts:
        defined = _defined_stmt(s, defined)
    return defined


def _defined_stmt(s, before):
    if isinstance(s, ast.If):
        s._defined = before
        return before | (defined_block(s.body, before) & defined_block(s.orelse, before))
    if isinstance(s, ast.While):
        s._defined = before
        defined_block(s.body, before)
        return before
    if isinstance(s, ast.For):
        s._defined = before
        defined_block(s.body, before | writes([s.target]))
        return before
    if isinstance(s, (ast.With, ast.AsyncWith)):
        return defined_block(s.body, before | writes([i.optional_vars for i in s.items if i.optional_vars]))
    if isinstance(s, _TRY):
        defined_block(s.body + s.orelse, before)
        for h in s.handlers:
            defined_block(h.body, before | ({h.name} if h.name else set()))
        return defined_block(s.finalbody, before)
    if isinstance(s, ast.Match):
        for case in s.cases:
            defined_block(case.body, before)
        return before
    if isinstance(s, ast.Delete):
        return before - writes([s])
    return before | _kills(s)


def annotate(fn):
    """Annotates the statements of the function `fn` (see the module docstring)."""
    live_block(fn.body, set())
    defined_block(fn.body, _params(fn.args))
