"""No module name repeats in two packages of ``hindsight`` unless the package holding both
says why (``tools.module_names``), and the tool finds an unexplained repeat."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.module_names import common_package, repeated_names, unexplained

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "hindsight"


def test_every_repeated_module_name_of_hindsight_is_explained():
    missing = {name: [str(d.relative_to(PACKAGE)) for d in dirs] for name, dirs in unexplained(PACKAGE).items()}
    assert not missing, (
        f"module names repeated without a reason: {missing}; rename one, or say in the docstring of the "
        "package holding both why the name repeats (naming the file, e.g. ``report.py``)"
    )


def test_a_repeat_is_explained_only_by_the_common_packages_docstring(tmp_path):
    package = tmp_path / "pkg"
    for name, text in {
        "__init__.py": '"""A package."""\n',
        "a/__init__.py": '"""``run.py`` here is a."""\n',
        "a/run.py": "",
        "b/__init__.py": "",
        "b/run.py": "",
        "b/c/__init__.py": "",
        "b/c/__main__.py": "",
        "a/__main__.py": "",
    }.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert repeated_names(package) == {"run.py": [package / "a", package / "b"]}
    assert common_package([package / "a", package / "b" / "c"]) == package
    assert set(unexplained(package)) == {"run.py"}  # a's own docstring does not count
    (package / "__init__.py").write_text('"""Both a and b have a ``run.py``: each runs its own thing."""\n')
    assert unexplained(package) == {}
