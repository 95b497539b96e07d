"""Every test file names its tiers once, at its top, and the ``pipeline`` tier is exactly the
files that run a Kedro project. Read from the syntax trees of the files under ``tests/``.

The tiers (``slow``, ``unit``, ``pipeline``; declared in ``pyproject.toml``) are set by one
mechanism: a module-level ``pytestmark`` in the test file (``pytest.mark.unit``, or a list of
marks). Nothing else may name a tier mark: no decorator on a test or class, no class-level
``pytestmark``, no ``pytest.param(..., marks=...)``, no ``add_marker`` in a conftest. A file
whose tests differ in tier is split in two.

A file runs a Kedro project (and so carries ``pytest.mark.pipeline``; a file that does not
must not) when its syntax tree

1. names ``KedroProject`` (``tests/pipelines/kedro_project.py``, or the benchmarks' copy of
   it), ``KedroSession`` or ``bootstrap_project``: imported, called, or as an attribute;
2. takes as a parameter the trained project (``tests/conftest.py``) or one of the stages run
   on it (``tests/pipelines/conftest.py``), read from those files; or
3. holds the string ``"kedro"`` as a whole constant: the ``kedro`` command of a
   ``subprocess`` (``[sys.executable, "-m", "kedro", "run"]``, ``with_name("kedro")``).

A message that mentions ``kedro run`` inside a longer string does not count.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from pathlib import Path

import pytest

from tools.docgen.test_tiers import MARKERS, file_tiers

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
KEDRO_NAMES = {"KedroProject", "KedroSession", "bootstrap_project"}


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def pipeline_fixtures() -> set[str]:
    """The fixtures that run Kedro: every fixture of tests/pipelines/conftest.py, and those of
    tests/conftest.py that build a ``KedroProject`` (the trained project)."""
    found = set()
    for conftest, kedro_only in ((TESTS / "pipelines" / "conftest.py", False), (TESTS / "conftest.py", True)):
        for node in ast.parse(conftest.read_text()).body:
            if not isinstance(node, ast.FunctionDef) or not any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list):
                continue
            if not kedro_only or "KedroProject" in ast.unparse(node):
                found.add(node.name)
    return found


def is_module_pytestmark(statement: ast.stmt) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, ast.AnnAssign) else []
    return any(isinstance(target, ast.Name) and target.id == "pytestmark" for target in targets)


def marks_one_by_one(tree: ast.Module, allow_pytestmark: bool = True) -> list[int]:
    """The lines where a tier mark is named outside a module-level ``pytestmark``: an
    attribute ``<...>.mark.<tier>``, or a tier's name given to ``add_marker``/``applymarker``."""
    allowed = {id(node) for statement in tree.body if allow_pytestmark and is_module_pytestmark(statement) for node in ast.walk(statement)}
    lines = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Attribute) and node.attr in MARKERS and ast.unparse(node.value).split(".")[-1] == "mark":
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("add_marker", "applymarker"):
            if any(isinstance(arg, ast.Constant) and arg.value in MARKERS for arg in node.args):
                lines.append(node.lineno)
    return sorted(lines)


def runs_kedro(tree: ast.Module, fixtures: set[str]) -> list[str]:
    """Why the file runs a Kedro project (the module docstring's rules), empty when it does not."""
    reasons = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in KEDRO_NAMES:
            reasons.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in KEDRO_NAMES:
            reasons.add(node.attr)
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in KEDRO_NAMES:
            reasons.add(node.name.split(".")[-1])
        elif isinstance(node, ast.arg) and node.arg in fixtures:
            reasons.add(f"the fixture {node.arg}")
        elif isinstance(node, ast.Constant) and node.value == "kedro":
            reasons.add('the command "kedro"')
    return sorted(reasons)


def test_no_test_is_marked_with_a_tier_one_by_one():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        lines = marks_one_by_one(syntax_tree(path), allow_pytestmark=path.name.startswith("test_"))
        if lines:
            found[path.relative_to(ROOT).as_posix()] = lines
    assert found == {}, f"tier marks outside a test file's module-level pytestmark (file: lines): {found}; split the file by tier"


def test_the_files_that_run_kedro_are_exactly_those_marked_pipeline():
    fixtures = pipeline_fixtures()
    assert {"trained_project", "world_model_run", "state2state_run"} <= fixtures
    unmarked, wrongly_marked = {}, []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path == Path(__file__):
            continue  # the rules' own source names what they look for
        reasons, marked = runs_kedro(syntax_tree(path), fixtures), "pipeline" in file_tiers(path.read_text())
        name = path.relative_to(ROOT).as_posix()
        if reasons and not marked:
            unmarked[name] = reasons
        if marked and not reasons:
            wrongly_marked.append(name)
    assert unmarked == {}, f"files that run Kedro without `pytest.mark.pipeline` in their pytestmark: {unmarked}"
    assert wrongly_marked == [], f"files marked pipeline that run no Kedro project: {wrongly_marked}"


def test_the_tiers_are_declared_markers():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert {line.split(":", 1)[0] for line in declared} >= set(MARKERS)


def test_the_rules_on_known_sources():
    one_by_one = (
        "import pytest\n"
        "pytestmark = [pytest.mark.slow, pytest.mark.pipeline]\n"  # line 2: allowed
        "@pytest.mark.unit\n"  # line 3
        "def test_a():\n    pass\n"
        "class TestB:\n    pytestmark = pytest.mark.slow\n"  # line 7: a class's
        "@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.pipeline)])\n"  # line 8
        "def test_c(x, request):\n    request.applymarker('slow')\n"  # line 10
        "@pytest.mark.filterwarnings('ignore')\ndef test_d():\n    pass\n"  # not a tier
    )
    assert marks_one_by_one(ast.parse(one_by_one)) == [3, 7, 8, 10]
    assert marks_one_by_one(ast.parse("import pytest\npytestmark = pytest.mark.unit\n"), allow_pytestmark=False) == [2]

    fixtures = {"trained_project"}
    def reasons(source: str) -> list[str]:
        return runs_kedro(ast.parse(source), fixtures)
    assert reasons("from kedro_project import KedroProject\ndef test_a(tmp_path):\n    KedroProject(tmp_path).run()\n") == ["KedroProject"]
    assert reasons("def test_a(harness, tmp_path):\n    harness.KedroProject(tmp_path)\n") == ["KedroProject"]
    assert reasons("def test_a(trained_project):\n    pass\n") == ["the fixture trained_project"]
    assert reasons("import subprocess, sys\ndef test_a():\n    subprocess.run([sys.executable, '-m', 'kedro', 'run'])\n") == [
        'the command "kedro"']
    assert reasons("def test_a():\n    assert 'kedro run --pipeline wmr1' in message()\n") == []
    assert reasons("from kedro.io import DataCatalog\ndef test_a():\n    DataCatalog()\n") == []
