"""Traditional-script pages (Taiwan, Hong Kong) read with the simplified-script boilerplate rules.

Why: every rule of extract.boilerplate and extract.tails is written in simplified characters (相关新闻, 责任编辑,
版权所有, 下载APP); a Taiwan page writes 相關新聞, 責任編輯, 版權所有, 下載APP, so without this its tails, credits and
footers stay in the body.  The lines are matched through a one-to-one character map (the fingerprint's frozen
OpenCC table: offsets never move), and the lines the rules keep are given back in the page's own characters.
"""
from __future__ import annotations

import re
from functools import lru_cache

TRADITIONAL_MIN = 5          # this many traditional-only characters in a body's first SAMPLE characters
SAMPLE = 3000


@lru_cache(maxsize=1)
def _t2s() -> dict[int, str]:
    """The character map (loaded once, from fingerprint's frozen table)."""
    from fingerprint import t2s_table
    return t2s_table()


@lru_cache(maxsize=1)
def _traditional() -> re.Pattern:
    """One character class of every character the map changes."""
    return re.compile("[" + "".join(re.escape(chr(cp)) for cp in sorted(_t2s())) + "]")


def is_traditional(lines: list[str]) -> bool:
    """Whether a body is written in traditional characters (a few 著/乾 in a simplified page are too few)."""
    return len(_traditional().findall("\n".join(lines)[:SAMPLE])) >= TRADITIONAL_MIN


def to_simplified(text: str) -> str:
    """The text in simplified characters, character for character."""
    return text.translate(_t2s())


def restore(kept: list[str], originals: list[str], simplified: list[str]) -> list[str]:
    """The lines the rules kept, in the page's own characters: each kept line is a line (or a stripped or cut part
    of a line) of the simplified view, at the same offsets as in the original; a line glued from two keeps the
    simplified form."""
    whole = {s: o for s, o in zip(simplified, originals)}
    out = []
    for line in kept:
        if line in whole:
            out.append(whole[line])
            continue
        for s, o in zip(simplified, originals):
            at = s.find(line)
            if at >= 0:
                out.append(o[at:at + len(line)])
                break
        else:
            out.append(line)
    return out
