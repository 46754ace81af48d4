"""A story in a table cell, given back one paragraph per line.

Why: trafilatura writes a table row as one line, so on a table-layout page (most Chinese sites of the 2000s) the
whole story, its dateline above and its posting line, trackback and comment heading below come out as one line of
thousands of characters, and no line rule (edges, credits, the article's end) can see where the story starts or ends.
The row's cell in the page's tree still has the paragraphs: its block lines that trafilatura kept replace the row.
"""
from __future__ import annotations

from typing import Any

from extract.dom import container_lines

CELL_LINE_MIN = 300          # a row line this long (non-space characters) may hold a flattened story
CELL_COVER = 0.95            # the cell's kept lines must give back this share of the row's characters
PROBE = 20                   # characters at each end of a row that find its cell


def squeeze(text: str) -> str:
    """Text without whitespace (how a row line and a cell's text are compared)."""
    return "".join(text.split())


def cell_of(row: str, cells: list[tuple[Any, str]]) -> Any | None:
    """The innermost cell, row or table that holds the row line's start and is long enough to hold all of it (the
    row's other end may be a link trafilatura wrote out differently)."""
    head, least = row[:PROBE], CELL_COVER * len(row)
    found = [(len(text), el) for el, text in cells if len(text) >= least and head in text]
    return min(found, key=lambda f: f[0])[1] if found else None


def cell_lines(row: str, el: Any) -> list[str] | None:
    """The cell's block lines found in the row line in their order, when they give back almost all of it; else
    None (a line trafilatura dropped is skipped; nothing is added to what it kept)."""
    kept, at = [], 0
    for line in container_lines(el):
        text = squeeze(line)
        found = row.find(text, at) if text else -1
        if found >= 0:
            kept.append(line)
            at = found + len(text)
    return kept if sum(len(squeeze(x)) for x in kept) >= CELL_COVER * len(row) else None


def split_cells(lines: list[str], tree: Any) -> list[str]:
    """Lines of trafilatura's output with each long table-row line replaced by its cell's paragraphs."""
    cells: list[tuple[Any, str]] | None = None
    out: list[str] = []
    for line in lines:
        row = squeeze(line)
        if len(row) < CELL_LINE_MIN or not line.lstrip().startswith("|"):
            out.append(line)
            continue
        if cells is None:
            cells = [(el, squeeze(el.text_content())) for el in tree.iter("td", "th", "tr", "table")]
        row = squeeze(line.replace("\\|", " ").strip().strip("|").replace("|", ""))
        el = cell_of(row, cells)
        split = cell_lines(row, el) if el is not None else None
        out.extend(split if split else [line])
    return out
