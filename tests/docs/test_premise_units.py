"""Every figure in nats on the pages says what it is per: SEED's teacher gap (and a paired
difference of two gaps) is a token-weighted mean, in nats per non-forced action token; the
copy test, log P(X | `do: X`) - log P(X | `do: Y`), sums an action's tokens, in nats per
action. A bare "+0.074 nats" beside a "+1.73 nats" reads as one scale when it is two.

The rule is kept simple: a number followed by "nats" (README.md and ``docs/**/*.md``; the
lab journal ``docs/journal/`` keeps its dated figures as written and is left out) must say
its unit right after, within ``WINDOW`` characters: "per token", "per action", "/token",
"/action" or "per non-forced ...". A table whose header or caption declares the unit
carries bare numbers and is not what this checks.

It also keeps the tiny Stage-1 policy's copy test, given in section 3 of
docs/hidden_information.md and quoted again in its section 5, the same figure in both.

Run it as a script to list the bare mentions: ``python tests/docs/test_premise_units.py``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 25
NATS = re.compile(r"(?<![\w.])[+\-\u2212]?\d+(?:\.\d+)?(?:e-?\d+)?\**\s+nats?\b", re.IGNORECASE)
UNIT = re.compile(r"per token|per action|/token|/action|per non-forced", re.IGNORECASE)


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/, the journal left out."""
    docs = root / "docs"
    found = [root / "README.md"] if (root / "README.md").exists() else []
    found += sorted(p for p in docs.rglob("*.md") if "journal" not in p.relative_to(docs).parts)
    return found


def bare_nats(root: Path = ROOT) -> list[str]:
    """``page:line: text`` of every number-then-"nats" without its unit right after."""
    bare = []
    for page in pages(root):
        text = page.read_text()
        for match in NATS.finditer(text):
            after = " ".join(text[match.end() : match.end() + WINDOW + 10].split())[:WINDOW]
            if not UNIT.search(after):
                line = text.count("\n", 0, match.start()) + 1
                bare.append(f"{page.relative_to(root)}:{line}: {match.group(0)}{after}")
    return bare


def test_every_figure_in_nats_says_per_what():
    bare = bare_nats()
    assert not bare, (
        f"{len(bare)} figures in nats without their unit: write 'nats per token' (teacher gaps, paired "
        "differences: per non-forced action token) or 'nats per action' (the copy test) right after "
        "the number:\n" + "\n".join(bare)
    )


def test_the_rule_sees_a_bare_figure_and_not_a_unit(tmp_path):
    (tmp_path / "README.md").write_text(
        "The copy test gives +1.73 nats per action.\n"
        "The paired gap is +0.074 nats, paired (-0.024 to +0.176).\n"  # bare
        "The gap is **-0.105** nats/token on won episodes.\n"
    )
    (tmp_path / "docs" / "journal").mkdir(parents=True)
    (tmp_path / "docs" / "page.md").write_text(
        "lowered by 0.1 nats a token\n"  # bare: 'a token' is not the unit's spelling
        "nats per non-forced action token: 1.2 nats per non-forced action token\n"
        "| teacher gap (nats) | -0.3 |\n"  # a header's unit: not a number then nats
    )
    (tmp_path / "docs" / "journal" / "2026-12-01.md").write_text("a gap of 0.5 nats\n")
    assert [hit.split(":")[:2] for hit in bare_nats(tmp_path)] == [["README.md", "2"], ["docs/page.md", "1"]]


HIDDEN = ROOT / "docs" / "hidden_information.md"
NUMBER = r"([+\-\u2212]?\d+(?:\.\d+)?)"
SECTION_3 = re.compile(
    r"\*\*Copy test:\s+" + NUMBER + r"(?:\s+nats per action)?\s+\(" + NUMBER + r"\s+to\s+" + NUMBER + r"\),\s+"
    + NUMBER + r"%\s+of\s+(\d+)\s+pairs above 0"
)
SECTION_5 = re.compile(
    r"The tiny Stage-1 policy of section 3 gives\s+" + NUMBER + r"(?:\s+nats per action)?"
    + r"(?:\s+\(" + NUMBER + r"\s+to\s+" + NUMBER + r"\))?,?\s+with\s+" + NUMBER + r"%(?:\s+of\s+(\d+)\s+pairs)?"
)
"""Section 5's quote: its mean and share above 0 at least; an interval and pair count if given."""


def section(text: str, number: int) -> str:
    """The text of ``## <number>.`` up to the next ``## `` heading."""
    start = re.search(rf"^## {number}\. ", text, re.MULTILINE)
    assert start, f"docs/hidden_information.md has no section '## {number}.'"
    end = re.search(r"^## ", text[start.end() :], re.MULTILINE)
    return text[start.start() : start.end() + end.start()] if end else text[start.start() :]


def copy_figures(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(section 3's tiny copy test, section 5's quote of it): mean, low, high, share above 0
    in %, pairs; a part the quote leaves out is left out of its dict."""
    measured = SECTION_3.search(section(text, 3))
    quoted = SECTION_5.search(section(text, 5))
    assert measured, (
        "section 3 of docs/hidden_information.md no longer gives "
        "'**Copy test: <mean> [nats per action] (<low> to <high>), <share>% of <n> pairs above 0'"
    )
    assert quoted, (
        "section 5 of docs/hidden_information.md no longer quotes "
        "'The tiny Stage-1 policy of section 3 gives <mean> [nats per action] [(<low> to <high>)] with <share>%'"
    )
    keys = ("mean", "low", "high", "share above 0, %", "pairs")
    as_figures = lambda match: {k: float(v.replace("\u2212", "-")) for k, v in zip(keys, match.groups()) if v is not None}
    return as_figures(measured), as_figures(quoted)


def test_the_tiny_copy_test_is_one_figure_on_the_hidden_information_page():
    measured, quoted = copy_figures(HIDDEN.read_text())
    differ = {k: (v, measured[k]) for k, v in quoted.items() if v != measured[k]}
    assert not differ, (
        "docs/hidden_information.md quotes the tiny Stage-1 policy's copy test in section 5 other than "
        f"section 3 measures it (quoted, measured): {differ}; quote section 3's figure"
    )


def test_the_copy_test_check_sees_a_stale_quote():
    page = (
        "## 3. The premise\n\n**Copy test: +0.017 nats per action (-0.013 to +0.050), 46.0% of 200 pairs above 0**\n\n"
        "## 5. At 135M\n\nThe tiny Stage-1 policy of section 3 gives -0.043\nwith 48.5% above 0 on the same test.\n"
    )
    measured, quoted = copy_figures(page)
    assert measured == {"mean": 0.017, "low": -0.013, "high": 0.05, "share above 0, %": 46.0, "pairs": 200.0}
    assert quoted == {"mean": -0.043, "share above 0, %": 48.5}


if __name__ == "__main__":
    print("\n".join(bare_nats()) or "every figure in nats says its unit")
