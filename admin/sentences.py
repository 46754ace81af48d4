"""The aligned-sentences view shared by a match and a crawl-time duplicate: the product's own pairing
(fingerprint.sentpairs, on the matcher's passages) computed from the stored texts when the page is viewed
(nothing stored is rewritten), with long stretches of unaligned sentences folded into one line."""
from __future__ import annotations

from typing import Any

from fingerprint.sentpairs import Row, SentencePairs, sentence_pairs

FOLD_AFTER = 4          # a stretch of more unaligned sentences than this shows its first and last two
MAX_VIEW_CHARS = 200_000  # longer texts are paired on their first 200,000 characters (said on the page)


def pair_view(original: str, copy: str) -> dict[str, Any]:
    """What the template needs: the pairs' rows (folded), the counts and shares, and what was cut."""
    cut = len(original) > MAX_VIEW_CHARS or len(copy) > MAX_VIEW_CHARS
    pairs = sentence_pairs(original[:MAX_VIEW_CHARS], copy[:MAX_VIEW_CHARS]) if original and copy else SentencePairs()
    return {"pairs": pairs, "rows": fold(pairs.rows), "cut": cut, "available": bool(original and copy)}


def fold(rows: list[Row]) -> list[Any]:
    """Rows with every stretch of over FOLD_AFTER unaligned ones cut to its two ends and a count between."""
    out: list[Any] = []
    stretch: list[Row] = []
    for row in [*rows, None]:
        if row is not None and row.kind != "pair":
            stretch.append(row)
            continue
        if len(stretch) > FOLD_AFTER:
            out += [*stretch[:2], {"kind": "folded", "n": len(stretch) - 4}, *stretch[-2:]]
        else:
            out += stretch
        stretch = []
        if row is not None:
            out.append(row)
    return out
