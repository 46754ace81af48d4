"""Text normalisation: the same story from any site, script or encoding becomes the same text."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

import numpy as np

from fingerprint import speedups
from fingerprint._tables import t2s_map
from fingerprint.cache import cached_array

SENTENCE_END = "。"
CLAUSE = "，"
_SENTENCE_PUNCT = "。！？!?；;"
_CLAUSE_PUNCT = "，、,：:"
# Marks whose style differs between sites and scripts (「」 vs “”, 《》 vs <>) carry no content.
_DROPPED_PUNCT = "“”‘’\"'「」『』《》〈〉【】〔〕[]()<>—～~·•・*#|"
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\ufeff"

_ELLIPSIS = re.compile(r"(?:\.{2,}|…+|⋯+)")
_SPACES = re.compile(r" {2,}")
# A space between two Han characters. The pattern opens with the space itself so the regex engine jumps
# from space to space (a leading lookbehind made it try every position: 8x slower on news text).
_HAN_GAP = re.compile(r" (?<=[\u3400-\u9fff] )(?=[\u3400-\u9fff])")
_BLANK_LINES = re.compile(r" ?\n[ \n]*")
_REPEATED_PUNCT = re.compile(r"([。，])[。，]+")
_SENTENCE_SPLIT = re.compile(r"[^。\n]+[。]?")


@lru_cache(maxsize=None)
def _table() -> dict[int, str | None]:
    table: dict[int, str | None] = dict(t2s_map())
    for cp in range(0x20):
        if chr(cp) != "\n":
            table[cp] = None
    for ch in "\t\u00a0\u3000\u2002\u2003\u2009":
        table[ord(ch)] = " "
    table[0x7F] = None
    for ch in _INVISIBLE:
        table[ord(ch)] = None
    for ch in _SENTENCE_PUNCT:
        table[ord(ch)] = SENTENCE_END
    for ch in _CLAUSE_PUNCT:
        table[ord(ch)] = CLAUSE
    for ch in _DROPPED_PUNCT:
        table[ord(ch)] = None
    for cp in range(ord("A"), ord("Z") + 1):
        table[cp] = chr(cp + 32)
    return table


_DELETE = 0xFFFFFFFF
_EXPAND = 0xFFFFFFFE
_LUT_RANGES = ((0, 0x10000), (0x1D400, 0x1D800), (0x1F100, 0x1F300), (0x2F800, 0x2FA20))


@lru_cache(maxsize=None)
def _lut() -> np.ndarray:
    """Code point -> code point after NFKC and _table(), all in one vectorised lookup: built once per
    machine (~20 ms, a loop over 80,000 code points), then loaded from a cache file named by a digest of
    what it is built from: this module's and fingerprint/_tables.py's source, the t2s table and the
    Unicode version (fingerprint/cache.py)."""
    lut = cached_array("normalize-lut", _lut_sources(), _build_lut)
    if lut.shape != (0x110000,) or lut.dtype != np.uint32:  # not this table: build it (and keep it in memory)
        lut = _build_lut()
    return lut


def _lut_sources() -> list[bytes]:
    from fingerprint import _tables

    return [b"normalize-lut 1", unicodedata.unidata_version.encode(), Path(__file__).read_bytes(),
            Path(_tables.__file__).read_bytes(), (_tables.DATA_DIR / "t2s_chars.tsv").read_bytes()]


def _build_lut() -> np.ndarray:
    """_lut() built from NFKC and _table(), character by character."""
    lut = np.arange(0x110000, dtype=np.uint32)
    table = _table()
    for lo, hi in _LUT_RANGES:
        for cp in range(lo, hi):
            ch = chr(cp)
            folded = unicodedata.normalize("NFKC", ch).translate(table)
            if unicodedata.combining(ch):
                lut[cp] = _EXPAND  # composes with its neighbour: needs whole-string NFKC
            elif folded != ch:
                lut[cp] = ord(folded) if len(folded) == 1 else (_DELETE if not folded else _EXPAND)
    lut[ord("…")] = lut[ord("⋯")] = ord(SENTENCE_END)
    for surrogate in range(0xD800, 0xE000):
        lut[surrogate] = _DELETE
    return lut


_SURROGATES = re.compile("[\ud800-\udfff]")


def _fold_chars(text: str) -> str:
    """NFKC + _table() per character; whole-string NFKC only for expanding or combining characters."""
    kernel = speedups.KERNEL
    if kernel is not None:  # the same table in one compiled pass (4x faster); None: an expanding character
        folded = kernel.fold_text(text, _lut())
        if folded is not None:
            return folded
    codes = _lut()[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)]
    if (codes == _EXPAND).any():
        text = _SURROGATES.sub("", text)  # lone surrogates are deleted on this path too (they cannot be tokenised)
        return _ELLIPSIS.sub(SENTENCE_END, unicodedata.normalize("NFKC", text)).translate(_table())
    return codes[codes != _DELETE].tobytes().decode("utf-32-le")


def normalize(text: str) -> str:
    """NFKC, full->half width, traditional->simplified, folded punctuation and white space."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if ".." in text:
        text = _ELLIPSIS.sub(SENTENCE_END, text)
    text = _fold_chars(text)  # after this, white space is only " " and "\n"
    if " " in text:
        text = _HAN_GAP.sub("", _SPACES.sub(" ", text) if "  " in text else text)
    if _has_blank_run(text):
        text = _BLANK_LINES.sub("\n", text)
    return _collapse_repeated_punct(text).strip()


def _has_blank_run(text: str) -> bool:
    """Would _BLANK_LINES change text? Only a match other than a lone "\n" (which it replaces by itself)
    does, and every such match holds " \n", "\n " or "\n\n"."""
    if speedups.KERNEL is not None:  # one pass for the three (two-character `in` scans are slow: ~3 us each)
        return speedups.KERNEL.has_pair(text, " \n\n \n\n")
    return " \n" in text or "\n " in text or "\n\n" in text


def _collapse_repeated_punct(text: str) -> str:
    """_REPEATED_PUNCT's substitution: each run of 。 and ， becomes its first mark."""
    if speedups.KERNEL is not None:  # one compiled pass, no regex (the test and the sub took ~15 us a page)
        return speedups.KERNEL.collapse_runs(text, "。，")
    return _REPEATED_PUNCT.sub(r"\1", text) if _has_repeated_punct(text) else text


def _has_repeated_punct(text: str) -> bool:
    """A cheap pre-test for _REPEATED_PUNCT (substring tests scan far faster than the regex)."""
    return "。。" in text or "。，" in text or "，。" in text or "，，" in text


_NOT_ALNUM = re.compile(r"[\W_]+")  # \w is str.isalnum() or "_", character by character


@lru_cache(maxsize=None)
def _alnum() -> np.ndarray:
    """Code point -> is it a letter or digit (str.isalnum), for vectorised compact(): one regex pass over
    all the code points instead of a loop (3x faster; a test compares it with str.isalnum for each)."""
    every = np.arange(0x30000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    kept = _NOT_ALNUM.sub("", every)
    table = np.zeros(0x30000, dtype=bool)
    table[np.frombuffer(kept.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)] = True
    return table


def compact(normalized: str) -> str:
    """The normalised text without white space or punctuation: what the exact hash sees."""
    if speedups.KERNEL is not None:  # the same table, one compiled pass without the UTF-32 round trip
        return speedups.KERNEL.keep_chars(normalized, _alnum())
    cps = np.frombuffer(normalized.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return cps[_alnum()[np.minimum(cps, 0x2FFFF)] & (cps < 0x30000)].tobytes().decode("utf-32-le")


def sentences(normalized: str) -> list[str]:
    """Sentences of a normalised text, split at sentence ends and line breaks."""
    return [s.strip() for s in _SENTENCE_SPLIT.findall(normalized) if s.strip(" 。，")]
