"""The package imports cleanly: every module imports first in a fresh interpreter, no
import circles between modules, and an import inside a function says why it is there.

Note [first imports]: `import tapeflow.a.b` runs `tapeflow/__init__.py` to its end before
it even looks for `tapeflow.a`, so the first import of any module starts as a first
`import tapeflow`.  One fresh interpreter importing `tapeflow` therefore checks every module
that `import tapeflow` loads (importing one of them first comes to exactly that); each
module it leaves unloaded gets a fresh interpreter of its own.  The check takes a few
interpreters, not one per module.
"""

import ast
import concurrent.futures
import io
import json
import os
import re
import subprocess
import sys
import tokenize

import import_graph
import tapeflow

ROOT = os.path.dirname(tapeflow.__file__)


def _fresh_python(code):
    """Runs `code` in a new interpreter that finds the tapeflow under test first."""
    path = [os.path.dirname(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def _tail(run, lines=6):
    return "\n".join("    " + line for line in run.stderr.strip().splitlines()[-lines:])


def _first_import_failures():
    """{module: the end of its traceback} for each module whose import fails when it is the
    first import of a fresh interpreter (Note [first imports])."""
    probe = _fresh_python("import json, sys, tapeflow; print(json.dumps([tapeflow.__file__, list(sys.modules)]))")
    if probe.returncode:
        return {"tapeflow (so every module)": _tail(probe)}
    where, loaded = json.loads(probe.stdout.splitlines()[-1])
    assert os.path.dirname(where) == ROOT, f"the fresh interpreter imported {where}, not {ROOT}"
    loaded = set(loaded)
    alone = [m for m in import_graph.modules(ROOT) if m not in loaded]
    with concurrent.futures.ThreadPoolExecutor(min(os.cpu_count() or 2, 8)) as pool:
        runs = dict(zip(alone, pool.map(lambda m: _fresh_python(f"import {m}"), alone), strict=True))
    return {m: _tail(run) for m, run in runs.items() if run.returncode}


def test_every_module_imports_first():
    failures = _first_import_failures()
    assert not failures, "modules that fail as the first import of an interpreter:\n" + "\n".join(
        f"  {m}:\n{tail}" for m, tail in sorted(failures.items()))



def test_a_module_deep_in_graph_imports_first_and_functions_trace_after_it():
    """The structure issue's bug: importing autograph's loops first failed in a circle and left
    the Assert op half-declared, so every later tf.function raised."""
    run = _fresh_python("import tapeflow.graph.autograph.loops, tapeflow as tf\n"
                        "print(float(tf.function(lambda x: x + 1)(1.0)))")
    assert run.returncode == 0, _tail(run)
    assert run.stdout.strip() == "2.0"


def test_no_import_below_code():
    """Imports open a module: none follows a function or class (imports at the bottom hid circles)."""
    late = []
    for name, path in import_graph.modules(ROOT).items():
        seen_code = False
        for node in ast.parse(path.read_text()).body:
            seen_code = seen_code or isinstance(node, (ast.FunctionDef, ast.ClassDef))
            if seen_code and isinstance(node, (ast.Import, ast.ImportFrom)):
                late.append(f"{name}:{node.lineno}")
    assert late == []


# -- import circles -------------------------------------------------------------------

def _describe_circles(found):
    """One paragraph per circle: its modules, then the imports between them."""
    text = []
    for circle in import_graph.circles(found):
        members = set(circle)
        text.append(f"  {len(circle)} modules: {', '.join(circle)}")
        text += [f"    {i.source}:{i.line} -> {i.target}{' (in a function)' if i.in_function else ''}"
                 for i in found if i.source in members and i.target in members]
    return "\n".join(text)


def test_no_import_circles():
    """Imports point one way between modules, at module level and inside functions alike
    (a function-level import hides a circle; it does not remove it)."""
    found = import_graph.imports(ROOT)
    assert not import_graph.circles(found), "import circles:\n" + _describe_circles(found)


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_circle_check_sees_circles(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg import a\n",
        "pkg/a.py": "import numpy\nfrom pkg import b\n",                    # b is a module
        "pkg/b.py": "def f():\n    from . import a  # a imports b\n",        # relative, in a function
        "pkg/c.py": "import pkg.sub.d\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/d.py": "from ..c import helper\n",                          # helper: a name in c
        "pkg/e.py": "from pkg.a import name\nimport pkg.sub\n",             # imports into circles, in none
    })
    found = import_graph.imports(tmp_path / "pkg")
    assert import_graph.circles(found) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"]]
    assert "pkg.b:2 -> pkg.a (in a function)" in _describe_circles(found)


# -- imports inside functions ------------------------------------------------------------

_PRAGMA = re.compile(r"noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?", re.IGNORECASE)


def _is_reason(comment):
    """Whether a comment says something beyond linter pragmas (`# noqa: PLC0415` alone does not)."""
    return comment is not None and any(c.isalpha() for c in _PRAGMA.sub("", comment))


def _unexplained_function_imports(package_dir):
    """`path:line statement` of each import of a package module inside a function with no
    reason comment on its lines or on a comment line just above it."""
    paths, statements, found = import_graph.modules(package_dir), {}, []
    for imp in import_graph.imports(package_dir):
        if imp.in_function:
            statements.setdefault(paths[imp.source], set()).add((imp.line, imp.end_line))
    for path, spans in sorted(statements.items()):
        source = path.read_text()
        lines = source.splitlines()
        comments = {t.start[0]: t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT}
        for line, end in sorted(spans):
            above = comments.get(line - 1) if lines[line - 2].lstrip().startswith("#") else None
            if not _is_reason(above) and not any(_is_reason(comments.get(n)) for n in range(line, end + 1)):
                found.append(f"{path.relative_to(os.path.dirname(package_dir))}:{line} {lines[line - 1].strip()}")
    return found


def test_function_level_imports_give_a_reason():
    """An import of a tapeflow module inside a function carries a one-line reason (why it
    cannot be at module level), on its line or on the comment line above it."""
    offenders = _unexplained_function_imports(ROOT)
    assert not offenders, f"{len(offenders)} imports inside functions without a reason comment:\n" + \
        "\n".join(f"  {o}" for o in offenders)


def test_the_reason_check_sees_bare_imports(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "import pkg.b\n",
        "pkg/b.py": (
            "import os\n"
            "def f():\n"
            "    import json\n"                                        # not a package module
            "    from pkg import a  # a imports b at module level\n"
            "    # a imports b at module level\n"
            "    from pkg import a\n"
            "    from pkg import (\n        a,  # a imports b\n    )\n"
            "    x = 1  # a trailing comment on the line above is not a reason\n"
            "    from pkg import a\n"
            "    from pkg import a  # noqa: PLC0415\n"
            "    #\n"
            "    from pkg import a\n"
        ),
    })
    assert _unexplained_function_imports(tmp_path / "pkg") == [
        "pkg/b.py:11 from pkg import a",
        "pkg/b.py:12 from pkg import a  # noqa: PLC0415",
        "pkg/b.py:14 from pkg import a",
    ]
