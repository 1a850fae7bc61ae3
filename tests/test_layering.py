"""The package's layers point down only: framework <- ops <- {eager, graph} <- the rest.

A module may import its own layer and the layers below it; eager and graph do not
import each other (what both need lives in ops: `ops/gradient_rules.py`).  The check
reads every import statement, at module level or inside a function.
"""

import ast
import pathlib

import pytest

import tapeflow
from tapeflow.framework import op_def

ROOT = pathlib.Path(tapeflow.__file__).parent
RANK = {"framework": 0, "ops": 1, "eager": 2, "graph": 2}       # other top-level modules: 3


def _layer(parts):
    return parts[0] if len(parts) > 1 and parts[0] in RANK else None


def _imported_packages(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "tapeflow" else [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "tapeflow" and len(parts) > 1:
                yield node.lineno, parts[1]


def _violations():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        layer = _layer(path.relative_to(ROOT).parts)
        if layer is None:
            continue
        for line, target in _imported_packages(ast.parse(path.read_text())):
            rank = RANK.get(target, 3)
            if rank > RANK[layer] or (rank == RANK[layer] and target != layer):
                found.append(f"{path.relative_to(ROOT)}:{line} imports tapeflow.{target}")
    return found


def test_layers_point_down():
    assert _violations() == []


def test_the_check_sees_a_violation(tmp_path):
    tree = ast.parse("def f():\n    from tapeflow.graph import graph\n    from tapeflow import random\n")
    assert list(_imported_packages(tree)) == [(2, "graph"), (3, "random")]


def test_op_is_a_declared_record():
    exp = op_def.get_op("Exp")
    assert not hasattr(exp, "__dict__")
    with pytest.raises(AttributeError):
        exp.some_property = True


_TYPES = frozenset(op_def._OPS)


def _op_type_tables(tree):
    """String constants naming op types used as table keys or compared against:
    dict keys, set literals, `==` / `in` operands."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            candidates = node.keys
        elif isinstance(node, ast.Set):
            candidates = node.elts
        elif isinstance(node, ast.Compare):
            candidates = [node.left, *node.comparators]
            candidates += [e for c in node.comparators if isinstance(c, (ast.Tuple, ast.List, ast.Set))
                           for e in c.elts]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("frozenset", "set"):
            candidates = [e for a in node.args if isinstance(a, (ast.Tuple, ast.List, ast.Set)) for e in a.elts]
        else:
            continue
        for c in candidates:
            if isinstance(c, ast.Constant) and c.value in _TYPES:
                yield c.lineno, c.value


def test_no_string_keyed_op_tables():
    """Op properties live in the op records; nothing else looks ops up by type name."""
    found = [f"{path.relative_to(ROOT)}:{line} '{name}'"
             for path in sorted(ROOT.rglob("*.py"))
             for line, name in _op_type_tables(ast.parse(path.read_text()))]
    assert found == []


# Packages whose modules sit in no import circle (module-level or in-function imports): what
# two of their modules both need lives in a lower module (distribute/thread_mode.py).
CIRCLE_FREE = ("eager", "distribute")


def _module_graph():
    """{module: the tapeflow modules it imports}, from every import statement."""
    modules = {".".join(("tapeflow",) + p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
               for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                               for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _circle_through(graph, start):
    """An import path from `start` back to itself, or None."""
    parent, todo = {}, [start]
    while todo:
        module = todo.pop()
        for target in sorted(graph[module]):
            if target == start:
                path = [module]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return " -> ".join([start, *reversed(path[:-1]), start])
            if target not in parent:
                parent[target] = module
                todo.append(target)
    return None


def test_no_import_circles_in_eager_and_distribute():
    graph = _module_graph()
    circles = [c for m in sorted(graph) if m.split(".")[1:2] and m.split(".")[1] in CIRCLE_FREE
               for c in [_circle_through(graph, m)] if c]
    assert circles == []


def test_the_circle_check_sees_a_circle():
    graph = {"tapeflow.eager.a": {"tapeflow.eager.b"}, "tapeflow.eager.b": {"tapeflow.ops.c"},
             "tapeflow.ops.c": {"tapeflow.eager.a"}}
    assert _circle_through(graph, "tapeflow.eager.a") == ("tapeflow.eager.a -> tapeflow.eager.b -> tapeflow.ops.c -> "
                                                          "tapeflow.eager.a")
    assert _circle_through({"tapeflow.eager.a": set()}, "tapeflow.eager.a") is None
