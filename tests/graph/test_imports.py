"""The modules of tapeflow.graph import each other one way only.

An import circle among them made `import tapeflow.graph.autograph.loops`, first in a
process, fail half-way (leaving the Assert op registered by a module that then failed
to import).  The check reads every import statement, at module level or inside a
function.
"""

import ast
import pathlib
import subprocess
import sys

import tapeflow

ROOT = pathlib.Path(tapeflow.__file__).parent
GRAPH = ROOT / "graph"


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(GRAPH.rglob("*.py"))}


def _imports(path):
    """(line, module imported) for each import of a graph module, in the module or its functions."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for name in names:
            if name in MODULES:
                yield node.lineno, name
                break


def _cycles():
    edges = {m: {t for _, t in _imports(p) if t != m and not m.startswith(t + ".")} for m, p in MODULES.items()}
    found, done = [], set()

    def visit(m, path):
        if m in path:
            found.append(path[path.index(m):] + [m])
            return
        if m in done:
            return
        for t in sorted(edges[m]):
            visit(t, path + [m])
        done.add(m)

    for m in MODULES:
        visit(m, [])
    return found


def test_no_import_circle_in_graph():
    assert _cycles() == []


def test_no_import_at_the_bottom_of_a_module():
    late = []
    for name, path in MODULES.items():
        body = ast.parse(path.read_text()).body
        seen_code = False
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                seen_code = True
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and seen_code:
                late.append(f"{name}:{node.lineno}")
    assert late == []


def test_a_module_deep_in_graph_imports_first_in_a_fresh_process():
    program = "import tapeflow.graph.autograph.loops, tapeflow as tf; print(float(tf.function(lambda x: x + 1)(1.0)))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2.0"
