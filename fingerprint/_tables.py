"""Loads the frozen character tables shipped in fingerprint/data/ (built by fingerprint.tables)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

DATA_DIR = Path(__file__).with_name("data")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _read(name: str) -> str:
    return (DATA_DIR / name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def t2s_map() -> dict[int, str]:
    """Traditional -> simplified, one character to one character (offsets never move)."""
    table = {}
    for line in _read("t2s_chars.tsv").splitlines():
        trad, simp = line.split("\t")
        table[ord(trad)] = simp
    return table


@lru_cache(maxsize=None)
def initials() -> dict[str, str]:
    """Simplified or traditional Han character -> first letter of its pinyin."""
    table = {}
    for line in _read("initials.tsv").splitlines():
        letter, chars = line.split("\t")
        for ch in chars:
            table[ch] = letter
    return table


@lru_cache(maxsize=None)
def initial_codes() -> np.ndarray:
    """Code point -> letter code 1..26 (0: not a Han character), for vectorised lookup."""
    lut = np.zeros(0x30000, dtype=np.uint8)
    for line in _read("initials.tsv").splitlines():  # the data of initials(), without a dict of 20,000 keys
        letter, chars = line.split("\t")
        lut[np.frombuffer(chars.encode("utf-32-le"), dtype=np.uint32)] = LETTERS.index(letter) + 1
    # A traditional character takes the letter of its simplified form, so both scripts agree.
    t2s = t2s_map()
    trad = np.fromiter(t2s.keys(), dtype=np.uint32, count=len(t2s))
    simp = np.frombuffer("".join(t2s.values()).encode("utf-32-le"), dtype=np.uint32)
    # read before any write: a simplified form's own letter, 0 when it has none (or lies past the table)
    letters = np.where(simp < len(lut), lut[np.minimum(simp, len(lut) - 1)], 0)
    has = letters > 0
    lut[trad[has]] = letters[has]
    return lut


@lru_cache(maxsize=None)
def stopwords() -> frozenset[str]:
    """Chinese function words and punctuation-like tokens that carry no content."""
    return frozenset(w for w in _read("stopwords_zh.txt").split() if w and not w.startswith("#"))
