"""The configuration environments section of ``docs/configuration.md``: every folder of
``conf/`` but ``base`` and ``local`` (what ``kedro run --env <name>`` can name), each with the
first sentence of the comment that opens its ``parameters.yml``.

``configuration.render`` puts this section after the page's header, so the page's
regeneration writes it (``tests/tools/test_docgen_configuration.py`` and
``tests/tools/test_docgen_environments.py`` fail when the page and the folders differ). From
the project root::

    python -m tools.docgen.configuration > docs/configuration.md
"""

from __future__ import annotations

import re
from pathlib import Path

NOT_ENVIRONMENTS = ("base", "local")
"""``conf/base`` is what every run reads; ``conf/local`` holds the machine's credentials."""

TITLE = "## Configuration environments"
SENTENCE = re.compile(r"^(.*?[.!?])(?:\s|$)", re.DOTALL)


def environments(conf: Path) -> list[str]:
    """The configuration environments: the folders of ``conf`` but ``base`` and ``local``."""
    return sorted(path.name for path in conf.iterdir() if path.is_dir() and path.name not in NOT_ENVIRONMENTS)


def description(conf: Path, name: str) -> str:
    """The first sentence of the comment that opens ``conf/<name>/parameters.yml`` (its
    first comment lines, up to a blank comment line), less its ``conf/<name>:`` prefix."""
    path = conf / name / "parameters.yml"
    if not path.is_file():
        raise ValueError(f"conf/{name} has no parameters.yml: every configuration environment opens one with what it is")
    lines = []
    for line in path.read_text().splitlines():
        text = line.strip()
        if not text.startswith("#") or not text.lstrip("#").strip():
            break
        lines.append(text.lstrip("#").strip())
    text = " ".join(lines).removeprefix(f"conf/{name}:").strip()
    if not text:
        raise ValueError(f"conf/{name}/parameters.yml does not open with a comment saying what the environment is")
    found = SENTENCE.match(text)
    return _markdown(found.group(1) if found else text)


def _markdown(text: str) -> str:
    """Outside code spans: ``docs/<page>.md`` as a link to the page, ``conf/<name>`` as code."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):
        part = re.sub(r"\bdocs/([\w-]+\.md)", r"[\1](\1)", parts[index])
        parts[index] = re.sub(r"\bconf/(\w+)", r"`conf/\1`", part)
    return "`".join(parts)


def render(conf: Path) -> str:
    """The section, for the configuration folder ``conf``."""
    lines = [
        TITLE,
        "",
        "<!-- Generated from the folders of conf/ and the comment that opens each one's parameters.yml "
        "(tools/docgen/environments.py): regenerate with `python -m tools.docgen.configuration > docs/configuration.md`. -->",
        "",
        "`kedro run --env <name>` reads `conf/base`, then `conf/<name>` over it: each top-level key of the "
        "environment's files replaces conf/base's whole (a parameters block's keys left out take the dataclass defaults).",
        "",
    ]
    lines += [f"- `{name}`: {description(conf, name)}" for name in environments(conf)]
    return "\n".join(lines) + "\n"
