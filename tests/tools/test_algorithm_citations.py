"""Every public function of ``src/hindsight/algorithms/`` names its source in its docstring,
as verl-agent tags each function of ``core_gigpo.py`` with its equation: a paper (its
arXiv id, or a venue and year in parentheses, with the equation or section implemented), an
official code base (``github.com/<owner>/<repo>``), or "project's own" where no paper
defines it. A reader checks the code against the paper line by line; a new function
without a source fails here.

Read from the syntax tree: the module-level functions and the methods of the public classes
whose names do not start with an underscore.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ALGORITHMS = Path(__file__).resolve().parents[2] / "src" / "hindsight" / "algorithms"
SOURCE = re.compile(
    r"|".join(
        (
            r"arXiv:\d{4}\.\d{4,5}",  # arXiv:2505.10978
            r"\((?:[A-Z][\w.&-]*\s)+(?:19|20)\d{2}\)",  # (AAAI 2020), (JASA 1987)
            r"github\.com/[\w.-]+/[\w.-]+",  # an official code base
            r"project's own",
        )
    )
)


def public_functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module-level public functions of ``path`` and the public methods of its public classes."""
    functions = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            functions.append(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            functions.extend(
                member for member in node.body
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and not member.name.startswith("_")
            )
    return functions


def uncited_functions(root: Path = ALGORITHMS) -> list[str]:
    """``file:line name`` of every public function under ``root`` whose docstring names no source."""
    return [
        f"{path.name}:{function.lineno} {function.name}"
        for path in sorted(root.glob("*.py"))
        for function in public_functions(path)
        if not SOURCE.search(ast.get_docstring(function) or "")
    ]


def test_every_public_function_of_algorithms_names_its_source():
    missing = uncited_functions()
    assert not missing, (
        "these functions of src/hindsight/algorithms/ name no source; add to the docstring the paper "
        "and equation they implement, e.g. 'Source: GiGPO (arXiv:2505.10978), Eq. 7', or "
        "\"Source: project's own: ...\":\n" + "\n".join(missing)
    )


def test_the_walk_finds_the_known_functions():
    names = {function.name for path in ALGORITHMS.glob("*.py") for function in public_functions(path)}
    assert {"gigpo_advantages", "ppo_clip_loss", "opd_loss", "kl_low_var", "discounted_returns"} <= names


def test_the_check_fails_on_a_function_without_a_source(tmp_path):
    (tmp_path / "math.py").write_text(
        'def cited():\n    """A loss.\n\n    Source: PPO (arXiv:1707.06347), Eq. 7.\n    """\n\n\n'
        'def by_venue():\n    """Source: dual clip (AAAI 2020)."""\n\n\n'
        'def ours():\n    """Source: project\'s own: a helper."""\n\n\n'
        'def bare():\n    """A loss with no source."""\n\n\n'
        'def _private():\n    """Not public."""\n\n\n'
        'class Interval:\n    def width(self):\n        """No source either."""\n'
    )
    assert uncited_functions(tmp_path) == ["math.py:16 bare", "math.py:25 width"]
