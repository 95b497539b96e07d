"""``hindsight`` has no import circle among its modules (``tools.import_cycles``: every
import statement counts, inside functions and under ``TYPE_CHECKING`` too), and the tool
finds the circles it should."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.import_cycles import cycles, import_graph

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "hindsight"


def test_hindsight_has_no_import_circle():
    found = cycles(import_graph(PACKAGE))
    assert found == [], f"import circles in hindsight: {found}"


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_circle_through_a_function_level_and_a_type_checking_import_is_found(tmp_path):
    package = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg.b import thing\n",
        "b.py": "def thing():\n    from . import c\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n",
        "d.py": "import pkg.a\n",
        "sub/__init__.py": "",
        "sub/e.py": "from ..d import y\nfrom .f import z\n",
        "sub/f.py": "from pkg.sub import e\n",
    })
    graph = import_graph(package)
    assert graph["pkg.d"] == {"pkg.a"} and graph["pkg.sub.e"] == {"pkg.d", "pkg.sub.f"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.sub.e", "pkg.sub.f"]]


def test_a_chain_without_a_circle_has_none(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "a.py": "import pkg.b\n", "b.py": "from pkg import c\n", "c.py": ""})
    assert cycles(import_graph(package)) == []
