"""Module names that repeat across a package's subpackages, and whether each is explained.

Two modules of one name in different packages (``report.py`` in ``evaluation/`` and
``experiments/``) make a reader ask which one is meant. A repeated name is explained when the
docstring of the closest package holding every copy (``hindsight`` for ``evaluation/report.py``
and ``experiments/report.py``) names the module file (``report.py``) and so says why it
repeats. From the project root::

    python -m tools.module_names            # src/hindsight: each repeated name, its places, explained or not
    python -m tools.module_names src/other  # another package directory

``tests/tools/test_module_names.py`` fails on a repeated name that is not explained.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def repeated_names(package_dir: Path) -> dict[str, list[Path]]:
    """Module file name -> the packages (directories) holding one, for every name held by
    more than one (``__init__.py`` and ``__main__.py`` not counted)."""
    places: dict[str, list[Path]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            places.setdefault(path.name, []).append(path.parent)
    return {name: dirs for name, dirs in places.items() if len(dirs) > 1}


def common_package(dirs: list[Path]) -> Path:
    """The closest directory holding all of ``dirs``."""
    parts = [d.parts for d in dirs]
    common = []
    for level in zip(*parts):
        if len(set(level)) > 1:
            break
        common.append(level[0])
    return Path(*common)


def package_docstring(directory: Path) -> str:
    """The docstring of the package ``directory`` ("" without one)."""
    init = directory / "__init__.py"
    return (ast.get_docstring(ast.parse(init.read_text())) or "") if init.is_file() else ""


def unexplained(package_dir: Path) -> dict[str, list[Path]]:
    """The repeated names whose common package's docstring does not name them."""
    return {
        name: dirs for name, dirs in repeated_names(package_dir).items()
        if name not in package_docstring(common_package(dirs))
    }


def main() -> None:
    """Print each repeated name with its packages, and whether it is explained."""
    package_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "src/hindsight")
    missing = unexplained(package_dir)
    for name, dirs in repeated_names(package_dir).items():
        where = ", ".join(str(d.relative_to(package_dir.parent)) for d in dirs)
        said = "NOT EXPLAINED" if name in missing else f"explained in {common_package(dirs).relative_to(package_dir.parent)}"
        print(f"{name}: {where} ({said})")
    print(f"{len(repeated_names(package_dir))} repeated names, {len(missing)} not explained")


if __name__ == "__main__":
    main()
