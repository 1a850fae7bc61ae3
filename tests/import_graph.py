"""The import graph of a package, read from its source with `ast` (nothing is imported).

Every import statement counts, at module level or inside a function.  A statement
points at the module it loads: `import a.b.c` at `a.b.c`; `from a.b import c` at
`a.b.c` when that is a module, else at `a.b` (a name defined there); relative
imports resolve against the importing module's package.  Imports of anything
outside the package are left out.
"""

import ast
import dataclasses
import pathlib


@dataclasses.dataclass(frozen=True)
class Import:
    source: str                 # the importing module
    target: str                 # the module the statement loads
    line: int                   # the statement's first and last lines
    end_line: int
    in_function: bool           # inside a def (runs when the function is called)


def modules(package_dir):
    """{dotted name: path} of every module of the package at `package_dir`
    (a package's `__init__.py` under the package's own name)."""
    root = pathlib.Path(package_dir)
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(package_dir):
    """Every `Import` of every module of the package, in file and line order."""
    known = modules(package_dir)
    found = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found += _visit(ast.parse(path.read_text(), str(path)), name, package, known, False)
    return found


def circles(found):
    """The import circles among `found` (from `imports`): the strongly connected
    components of more than one module, each a sorted list of module names."""
    edges = {}
    for imp in found:
        edges.setdefault(imp.source, set()).add(imp.target)
    reach = {m: _reachable(m, edges) for m in edges}
    parts = {frozenset({m} | {w for w in reach[m] if m in reach.get(w, ())}) for m in edges}
    return sorted(sorted(p) for p in parts if len(p) > 1)


def _reachable(start, edges):
    seen, todo = set(), [start]
    while todo:
        for w in edges.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _visit(node, source, package, known, in_function):
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            targets = [_within(a.name, known) for a in child.names]
        elif isinstance(child, ast.ImportFrom):
            base = _absolute(child, package)
            targets = [_within(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base, known)
                       for a in child.names]
        else:
            targets = []
        found += [Import(source, t, child.lineno, child.end_lineno, in_function)
                  for t in dict.fromkeys(targets) if t is not None and t != source]
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        found += _visit(child, source, package, known, inner)
    return found


def _absolute(node, package):
    """The module an `ImportFrom` names, relative levels resolved against `package`."""
    if not node.level:
        return node.module
    parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _within(name, known):
    """The deepest module of the package that `name` lies in; None outside the package."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None
