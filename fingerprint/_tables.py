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
    table = initials()
    t2s = t2s_map()
    for ch, letter in table.items():
        lut[ord(ch)] = LETTERS.index(letter) + 1
    # A traditional character takes the letter of its simplified form, so both scripts agree.
    for trad_cp, simp in t2s.items():
        if simp in table:
            lut[trad_cp] = LETTERS.index(table[simp]) + 1
    return lut


@lru_cache(maxsize=None)
def stopwords() -> frozenset[str]:
    """Chinese function words and punctuation-like tokens that carry no content."""
    return frozenset(w for w in _read("stopwords_zh.txt").split() if w and not w.startswith("#"))
