"""Generated blocks inside hand-written pages: a page keeps its prose by hand and one block,
from a ``BEGIN`` comment line to an ``END`` one, is written by a generator. ``embedded``
puts a fresh block in place of the committed one (a test compares the result with the page,
writing nothing); ``write_block`` writes it into the page (the generators' command line)."""

from __future__ import annotations

from pathlib import Path


def embedded(page: str, block: str, begin: str, end: str) -> str:
    """``page`` with the text from its ``begin`` line to its ``end`` line replaced by
    ``block`` (which starts with ``begin`` and ends with ``end``)."""
    start, stop = page.find(begin), page.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"the page has no generated block (a line {begin!r} ... {end!r})")
    return page[:start] + block + page[stop + len(end):]


def write_block(path: Path, block: str, begin: str, end: str) -> None:
    """Replace the generated block of the page at ``path`` with ``block``."""
    path.write_text(embedded(path.read_text(), block, begin, end))
