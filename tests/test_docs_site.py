"""The documentation site builds cleanly, and the README's links into it resolve.

``mkdocs build --strict`` with ``mkdocs.yml``'s validation settings turns every broken link
between pages, every missing anchor and every page left out of the nav into a warning, and
a warning into a failed build. Links from the docs to files outside ``docs/`` are written as
code spans (``src/hindsight/...``), since the site cannot link to them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    return out, result


def test_the_site_builds_in_strict_mode_without_a_warning(site):
    _, result = site
    output = result.stdout + result.stderr
    warnings = [line for line in output.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert result.returncode == 0 and not warnings, (
        "mkdocs build --strict failed (run `python -m mkdocs build --strict -d /tmp/site`):\n" + output
    )


def test_every_page_under_docs_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    missing = [page for page in pages if f": {page}" not in nav]
    assert not missing, f"pages missing from mkdocs.yml's nav: {missing}"


def _readme_links() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", target)]


def test_the_readme_links_resolve_to_files_and_anchors_of_the_site(site):
    out, result = site
    assert result.returncode == 0, result.stdout + result.stderr
    links = _readme_links()
    assert any(link.startswith("docs/") for link in links)
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        if not (ROOT / path).exists():
            broken.append(f"{link}: no file {path}")
            continue
        if anchor:
            assert path.startswith("docs/") and path.endswith(".md"), f"{link}: anchors only into docs pages"
            page = out / path[len("docs/"):-len(".md")] / "index.html"
            if f'id="{anchor}"' not in page.read_text():
                broken.append(f"{link}: no anchor #{anchor} in {path}")
    assert not broken, "README links that do not resolve:\n" + "\n".join(broken)


def test_the_docs_stand_alone():
    """No page points outside the repository or at the machine it was written on."""
    texts = {p: p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]}
    for path, text in texts.items():
        for pattern in (r"\.\./shared", r"ALGORITHMS\.md", r"DESIGN\.md", r"STYLE\.md", r"/work/", r"/home/"):
            assert not re.search(pattern, text), f"{path.relative_to(ROOT)} mentions {pattern}"
