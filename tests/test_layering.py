"""The package's layers point down only:
framework <- ops.core <- ops <- {eager, graph} <- the rest.

A module may import its own layer and the layers below it; eager and graph do not
import each other (what both need lives in ops: `ops/gradient_rules.py`).  The check
reads every import statement, at module level or inside a function (tests/import_graph.py).
"""

import ast
import pathlib

import pytest

import import_graph
import tapeflow
from tapeflow.framework import op_def

ROOT = pathlib.Path(tapeflow.__file__).parent

# A module's layer is the longest entry its name starts with; modules in none of them
# (the features above and the public namespaces) are the top layer and are not checked.
RANK = {
    "tapeflow.framework": 0,    # dtypes, Tensor, shapes (framework/shapes/), op records, context
    "tapeflow.ops.core": 1,     # the ops machinery: presets, batching, gradient helpers, size inputs, primitive ops
    "tapeflow.ops": 2,          # the op families
    "tapeflow.eager": 3,        # the tape, GradientTape, ForwardAccumulator, Jacobians
    "tapeflow.graph": 3,        # Graph, tf.function, sessions, tf.gradients, control flow
}
TOP = max(RANK.values()) + 1


def _layer(module):
    """The RANK entry `module` belongs to, or None (the top layer)."""
    inside = [layer for layer in RANK if module == layer or module.startswith(layer + ".")]
    return max(inside, key=len, default=None)


def _violations(package_dir):
    found = []
    for imp in import_graph.imports(package_dir):
        layer, target = _layer(imp.source), _layer(imp.target)
        if layer is None or target == layer:
            continue
        if RANK.get(target, TOP) >= RANK[layer]:
            found.append(f"{imp.source}:{imp.line} imports {imp.target}")
    return found


def test_layers_point_down():
    found = _violations(ROOT)
    assert not found, "imports that point up or sideways:\n" + "\n".join(f"  {v}" for v in found)


def test_the_check_sees_violations(tmp_path):
    files = {
        "__init__.py": "from tapeflow import ops, eager, graph\n",
        "framework/__init__.py": "",
        "framework/shapes/__init__.py": "",
        "framework/shapes/rules.py": "def f():\n    from tapeflow.ops import math_ops\n",
        "ops/__init__.py": "from tapeflow.ops import math_ops\n",
        "ops/math_ops.py": "from tapeflow.ops.core import presets\nfrom tapeflow.framework.shapes import rules\n",
        "ops/core/__init__.py": "",
        "ops/core/presets.py": "from tapeflow.ops.core import grad\nfrom tapeflow.ops import math_ops\n",
        "ops/core/grad.py": "import tapeflow.ops\nfrom tapeflow import random\n",
        "eager/__init__.py": "",
        "eager/tape.py": "from tapeflow.ops import core\nfrom tapeflow.graph import graph\n",
        "graph/__init__.py": "",
        "graph/graph.py": "from tapeflow.eager.tape import Tape\n",
        "random.py": "from tapeflow.graph import graph\n",
    }
    for name, text in files.items():
        (tmp_path / "tapeflow" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tapeflow" / name).write_text(text)
    assert _violations(tmp_path / "tapeflow") == [
        "tapeflow.eager.tape:2 imports tapeflow.graph.graph",
        "tapeflow.framework.shapes.rules:2 imports tapeflow.ops.math_ops",
        "tapeflow.graph.graph:1 imports tapeflow.eager.tape",
        "tapeflow.ops.core.grad:1 imports tapeflow.ops",
        "tapeflow.ops.core.grad:2 imports tapeflow.random",
        "tapeflow.ops.core.presets:2 imports tapeflow.ops.math_ops",
    ]


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
