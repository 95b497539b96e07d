"""The house rules a reader relies on: no Kedro node takes more than five inputs, and no
function of the package is longer than 80 lines.

Both are read from the code itself, not from a list: the nodes of every registered pipeline
(``register_pipelines``) and every function and method in ``src/hindsight`` (its syntax
tree). A node that needs more inputs is two nodes (the Stage-1 mixture is
``make_skill_use_examples`` then ``make_stage1_examples``), not one node over a bundled
dataset; a long function is split where its steps are.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hindsight.pipeline_registry import register_pipelines

pytestmark = pytest.mark.unit

SOURCE = Path(__file__).resolve().parents[2] / "src" / "hindsight"
MAX_NODE_INPUTS = 5
MAX_FUNCTION_LINES = 80


def long_functions(root: Path = SOURCE, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function or method under ``root`` longer than
    ``limit`` lines (decorators and docstring included)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_node_takes_more_than_five_inputs():
    crowded = sorted({
        f"{node.name} ({len(node.inputs)}: {', '.join(node.inputs)})"
        for pipeline in register_pipelines().values() for node in pipeline.nodes if len(node.inputs) > MAX_NODE_INPUTS
    })
    assert crowded == [], f"nodes with more than {MAX_NODE_INPUTS} inputs: {crowded}"


def test_no_function_is_longer_than_80_lines():
    assert long_functions() == [], f"functions longer than {MAX_FUNCTION_LINES} lines: {long_functions()}"


def test_the_line_count_catches_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(f"def too_long():\n{body}\n")
    (tmp_path / "pkg" / "short.py").write_text("def short():\n    return 1\n")
    assert long_functions(tmp_path / "pkg") == [f"pkg/long.py:1 too_long ({MAX_FUNCTION_LINES + 1} lines)"]
