"""Import circles among the modules of a package: the module import graph read with ``ast``
(every import statement counts, those inside functions and under ``TYPE_CHECKING`` too), and
its strongly connected components of more than one module (or a module importing itself).

An edge goes from a module to the module it names: ``import a.b`` and ``from a import b``
(when ``a/b.py`` or ``a/b/`` exists) point at ``a.b``; ``from a.b import name`` points at
``a.b``; relative imports are resolved against the importing module's package. From the
project root::

    python -m tools.import_cycles            # src/hindsight: one line per circle, then the count
    python -m tools.import_cycles src/other  # another package directory

``tests/tools/test_import_cycles.py`` holds ``hindsight`` at 0 circles.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> its file, for every ``.py`` file under ``package_dir`` (a
    package's ``__init__.py`` is the package itself)."""
    root = package_dir.parent
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The known modules one import statement names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        submodule = f"{target}.{alias.name}"
        if submodule in known:
            out.append(submodule)
        elif target in known:
            out.append(target)
    return out


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (anywhere in its body)."""
    files = module_files(package_dir)
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[module] = {
            target for node in ast.walk(tree) for target in _imported(node, module, is_package, known)
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a circle (Tarjan's algorithm, iterative), each
    sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def main() -> None:
    """Print each circle of the package directory given (default ``src/hindsight``) and their count."""
    package_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "src/hindsight")
    found = cycles(import_graph(package_dir))
    for component in found:
        print(f"{len(component)} modules: " + " ".join(component))
    print(f"{len(found)} import circles in {package_dir}")


if __name__ == "__main__":
    main()
