"""Every list of the built-in methods that is written by hand is held against the methods
themselves: a new method in ``src/hindsight/methods/`` fails here until each list names it
(docs/methods.md, "Adding a method", lists the files). The hook table of docs/methods.md is
generated and held by ``tests/tools/test_docgen_method_hooks.py``."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import hindsight.methods
from hindsight.methods import Method, method_class
from hindsight.methods.registry import BUILT_IN
from hindsight.training import rl_config

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(cls.name for cls in BUILT_IN)


def _section(page: str, title: str) -> str:
    """The text of ``## title`` in a docs page, up to the next ``## ``."""
    text = (ROOT / "docs" / page).read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_built_in_lists_every_method_class_of_the_package():
    defined = set()
    for module in pkgutil.iter_modules(hindsight.methods.__path__):
        loaded = importlib.import_module(f"hindsight.methods.{module.name}")
        defined |= {
            cls for _, cls in inspect.getmembers(loaded, inspect.isclass)
            if issubclass(cls, Method) and cls.__module__ == loaded.__name__ and vars(cls).get("name")
        }
    assert defined == set(BUILT_IN)
    assert len(NAMES) == len(set(NAMES)) and all(method_class(name).name == name for name in NAMES)


def test_the_table_of_built_in_methods_names_each_with_its_module_and_settings():
    rows = {}
    for line in _section("methods.md", "The built-in methods").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3 and cells[0] != "`algorithm`":
            rows[cells[0].strip("`")] = cells[1:]
    assert sorted(rows) == NAMES
    for name, (module, settings) in rows.items():
        cls = method_class(name)
        assert re.findall(r"`([\w/]+\.py)`", module)[0] == f"methods/{cls.__module__.rsplit('.', 1)[1]}.py", name
        fields = {field.name for field in dataclasses.fields(cls.Settings)}
        assert set(re.findall(r"`(\w+)`", settings)) == fields and (settings == "none") == (not fields), name


def test_what_the_overrides_do_has_a_line_for_each_method_that_overrides_a_hook():
    from tools.docgen.method_hooks import defining_class, hooks

    text = _section("methods.md", "The hooks a method may override")
    described = set(re.findall(r"^- `(\w+)`:", text, flags=re.MULTILINE))
    overriding = {cls.name for cls in BUILT_IN if any(defining_class(cls, hook) is not None for hook in hooks())}
    assert described == overriding


def test_fidelity_has_a_section_for_each_method():
    headings = re.findall(r"^## .*\(`algorithm: (\w+)`", (ROOT / "docs/fidelity.md").read_text(), flags=re.MULTILINE)
    assert sorted(headings) == NAMES


def _algorithm_doc() -> str:
    """The docstring of ``RLConfig.algorithm``, as the generated settings pages show it."""
    body = next(node for node in ast.parse(inspect.getsource(rl_config)).body if getattr(node, "name", "") == "RLConfig").body
    index = next(i for i, node in enumerate(body) if isinstance(node, ast.AnnAssign) and node.target.id == "algorithm")
    return body[index + 1].value.value


def test_the_choices_of_training_rl_algorithm_name_every_built_in_method():
    assert set(re.findall(r"\b(\w+)\b", _algorithm_doc())) >= set(NAMES)
    line = next(line for line in (ROOT / "conf/base/parameters_training.yml").read_text().splitlines() if "algorithm:" in line)
    choices = line.split("#", 1)[1].split(" or ")[0]
    assert sorted(name.strip() for name in choices.split("|")) == NAMES


def test_the_package_docstring_and_the_layout_name_every_method_module():
    modules = {cls.__module__.rsplit(".", 1)[1] for cls in BUILT_IN}
    package_doc = hindsight.methods.__doc__
    lines = (ROOT / "docs/layout.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  methods/"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("    "))
    layout = " ".join(lines[start:end])  # the entry of methods/ with its continuation lines
    for module in modules:
        assert f"``{module}``" in package_doc, module
        assert re.search(rf"\b{module}\b", layout), module
