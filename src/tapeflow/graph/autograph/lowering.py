"""AutoGraph's first step: `break`, `continue` and `return` become assignments to flags.

A staged loop or branch is a function called by an operator, so the jumps
out of it must become data: `break` sets a flag that the loop tests before
each iteration, `continue` a flag tested by the rest of the body, `return`
sets `do_return`/`retval_` and every loop it is in stops on `do_return`.
Statements after one that may set a flag run under `if not flag:`; an `if`
whose one branch always returns takes the statements after it into its other
branch (so `if c: return a` then `return b` needs no flag test at all).

`tf.autograph.experimental.set_loop_options(...)` calls are taken out of
loop bodies here too; their keywords become the loop's options.

The loops get two attributes read by transformer.py: `_ag_extra`, the flags
that end the loop, and `_ag_opts`, the option keywords.
"""

import ast

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
LOOPS = (ast.While, ast.For)
_BLOCKS = ("body", "orelse", "finalbody")


def contains(nodes, kinds, stop=SCOPES):
    """Whether a node of `kinds` is among `nodes` or below them, not looking inside `stop` nodes."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, stop))
    return False


def _name(id_, store=False):
    return ast.Name(id_, ast.Store() if store else ast.Load())


def assign(name, value):
    return ast.Assign(targets=[_name(name, store=True)], value=value)


def ag_call(attr, *args):
    """`ag__.attr(*args)`."""
    return ast.Call(func=ast.Attribute(_name("ag__"), attr, ast.Load()), args=list(args), keywords=[])


def _unless(flag, stmts):
    return ast.If(test=ast.UnaryOp(ast.Not(), _name(flag)), body=stmts, orelse=[])


def located(new, node):
    """`new` placed at the start of `node` (one line: Note [generated positions]); left for
    `fill_positions` when `node` is generated too."""
    if getattr(node, "lineno", None) is None:
        return new
    new.lineno, new.col_offset = node.lineno, node.col_offset
    new.end_lineno, new.end_col_offset = node.lineno, node.col_offset
    return new


def fill_positions(tree):
    """Note [generated positions]: generated nodes take the position of the start of the
    nearest placed node above them, on one line.  (Spanning the lines of the statement
    they replace, a method call such as `ag__.if_stmt(...)` would be reported at its
    last line in tracebacks.)"""
    def fill(node, where):
        if "lineno" in node._attributes:
            if getattr(node, "lineno", None) is None:
                located(node, where)
            where = node
        for child in ast.iter_child_nodes(node):
            fill(child, where)
    for child in ast.iter_child_nodes(tree):
        fill(child, child)
    return tree


def _at(node, stmts):
    return [located(s, node) for s in stmts]


class Lowering:
    """Lowers the jumps of one function body (not of the functions defined inside it)."""

    def __init__(self, namer):
        self.namer = namer

    # -- break and continue: loops inside out ------------------------------------------
    def loops(self, stmts):
        out = []
        for s in stmts:
            for field in _BLOCKS:
                if not isinstance(s, SCOPES) and isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.loops(getattr(s, field)))
            for handler in getattr(s, "handlers", ()):
                handler.body = self.loops(handler.body)
            out.extend(self._loop(s) if isinstance(s, LOOPS) else [s])
        return out

    def _loop(self, loop):
        loop._ag_extra = []
        loop._ag_opts = []
        loop.body = [s for s in loop.body if not self._is_options(s, loop)] or [ast.Pass()]
        own = SCOPES + LOOPS
        if contains(loop.body, ast.Continue, own):
            flag = self.namer.new("continue_")
            body, _ = self._flag_block(loop.body, ast.Continue, flag)
            loop.body = _at(loop, [assign(flag, ast.Constant(False))]) + body
        result = [loop]
        if contains(loop.body, ast.Break, own):
            flag = self.namer.new("break_")
            loop.body, _ = self._flag_block(loop.body, ast.Break, flag)
            loop._ag_extra.append(flag)
            result = _at(loop, [assign(flag, ast.Constant(False))]) + result
            if loop.orelse:
                result.append(_at(loop.orelse[0], [_unless(flag, loop.orelse)])[0])
        else:
            result.extend(loop.orelse)
        loop.orelse = []
        return result

    @staticmethod
    def _is_options(stmt, loop):
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        func = stmt.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != "set_loop_options":
            return False
        loop._ag_opts.extend(stmt.value.keywords)
        return True

    def _flag_block(self, stmts, kind, flag):
        """`stmts` with each `kind` jump setting `flag`; returns them and whether the flag
        is set on every path through them."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, kind):
                out.extend(_at(s, [assign(flag, ast.Constant(True))]))
                return out, True
            if not contains([s], kind, SCOPES + LOOPS):
                out.append(s)
                continue
            if isinstance(s, ast.If):
                s.body, in_body = self._flag_block(s.body, kind, flag)
                s.orelse, in_orelse = self._flag_block(s.orelse, kind, flag)
                always = in_body and in_orelse
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                s.body, always = self._flag_block(s.body, kind, flag)
            else:
                self._flag_parts(s, kind, flag)
                always = False
            s.body = s.body or [ast.Pass()]
            out.append(s)
            rest = stmts[i + 1:]
            if always or not rest:
                return out, always
            rest, always = self._flag_block(rest, kind, flag)
            out.append(_at(rest[0], [_unless(flag, rest)])[0])
            return out, always
        return out, False

    def _flag_parts(self, s, kind, flag):
        for field in _BLOCKS:
            block = getattr(s, field, None)
            if isinstance(block, list) and block:
                setattr(s, field, self._flag_block(block, kind, flag)[0])
        for handler in getattr(s, "handlers", ()):
            handler.body = self._flag_block(handler.body, kind, flag)[0] or [ast.Pass()]

    # -- return ---------------------------------------------------------------------------
    def returns(self, fn):
        """Lowers the returns of `fn` when one is inside a branch or a loop."""
        if not any(contains(s.body + s.orelse, ast.Return) for s in self._compound(fn.body)):
            return
        self.do_return, self.retval = self.namer.new("do_return"), self.namer.new("retval_")
        body, _ = self._return_block(fn.body)
        start = _at(fn.body[0], [assign(self.do_return, ast.Constant(False)),
                                 assign(self.retval, ag_call("UndefinedReturnValue"))])
        end = _at(fn.body[-1], [ast.Return(ag_call("retval", _name(self.retval)))])
        fn.body = start + body + end

    @staticmethod
    def _compound(stmts):
        stack = list(stmts)
        while stack:
            s = stack.pop()
            if isinstance(s, (ast.If,) + LOOPS):
                yield s
            if not isinstance(s, SCOPES):
                stack.extend(c for c in ast.iter_child_nodes(s) if isinstance(c, ast.stmt))
                stack.extend(c for h in getattr(s, "handlers", ()) for c in h.body)

    def _return_block(self, stmts):
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, ast.Return):
                value = s.value if s.value is not None else ast.Constant(None)
                out.extend(_at(s, [assign(self.do_return, ast.Constant(True)), assign(self.retval, value)]))
                return out, True
            if not contains([s], ast.Return):
                out.append(s)
                continue
            always = False
            if isinstance(s, ast.If):
                body, in_body = self._return_block(s.body)
                orelse, in_orelse = self._return_block(s.orelse)
                if rest and in_body and not in_orelse:
                    (orelse, in_orelse), rest = self._return_block(s.orelse + rest), []
                elif rest and in_orelse and not in_body:
                    (body, in_body), rest = self._return_block(s.body + rest), []
                s.body, s.orelse = body or [ast.Pass()], orelse
                always = in_body and in_orelse
            elif isinstance(s, LOOPS):
                s.body = self._return_block(s.body)[0] or [ast.Pass()]
                s._ag_extra = getattr(s, "_ag_extra", []) + [self.do_return]
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                s.body, always = self._return_block(s.body)
            else:
                for field in _BLOCKS:
                    block = getattr(s, field, None)
                    if isinstance(block, list) and block:
                        setattr(s, field, self._return_block(block)[0])
                for handler in getattr(s, "handlers", ()):
                    handler.body = self._return_block(handler.body)[0] or [ast.Pass()]
            out.append(s)
            if always or not rest:
                return out, always
            rest, always = self._return_block(rest)
            out.append(_at(rest[0], [_unless(self.do_return, rest)])[0])
            return out, always
        return out, False
