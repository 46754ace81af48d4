"""Pinyin-initial "DNA" (seed 004, section 3), with windows anchored to sentence ends.

A text becomes the stream of the first pinyin letters of its Han characters: homophones, traditional
script and encoding differences all map to the same letters. The stream is cut into windows of about
`granularity` letters overlapping by `overlap`; each window's letter counts, minus what a reference
distribution expects, are quantised into `levels` levels per letter and packed in letter order into
one integer: the window's DNA. A text's DNA is the sequence of its windows' DNAs.

Choices where the seed's pseudo-code is garbled: 23 letters (pinyin never starts with i, u or v);
the reference is the letter distribution of jieba's word-frequency dictionary; a count is quantised by
its deviation from the expected count in units of sqrt(expected) (a Poisson standard deviation), so
4 levels cut at -1, 0, +1. With 4 levels a window's DNA is 46 bits.

`anchored=True` (the default) starts and ends windows at sentence ends, so an inserted or deleted
character changes only the windows around it; `anchored=False` is the seed's fixed grid, where one
inserted character shifts every later window.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fingerprint import speedups
from fingerprint._tables import LETTERS, initial_codes, _read

DNA_LETTERS = "abcdefghjklmnopqrstwxyz"
_SENTENCE_ENDS = "。！？!?；;….\n"  # "." too: pages that write 。 as ASCII "."


@dataclass(frozen=True)
class DnaParams:
    """Window size in letters, overlap between windows, quantisation levels, window placement."""

    granularity: int = 48
    overlap: float = 0.5
    levels: int = 4
    anchored: bool = True

    def __post_init__(self) -> None:
        if self.granularity < 8:
            raise ValueError("granularity must be >= 8 letters")
        if not 0 <= self.overlap < 1:
            raise ValueError("overlap must be in [0, 1)")
        if self.levels < 2 or self.levels ** len(DNA_LETTERS) > 2 ** 64:
            raise ValueError(f"levels must be 2..{int(2 ** (64 / len(DNA_LETTERS)))} to fit 64 bits")

    @property
    def step(self) -> int:
        return max(1, round(self.granularity * (1 - self.overlap)))

    @property
    def id(self) -> str:
        return f"dna{self.granularity}o{int(self.overlap * 100)}l{self.levels}{'a' if self.anchored else 'f'}"


SEED_PARAMS = DnaParams(granularity=48, overlap=0.5, levels=4, anchored=False)
DEFAULT_PARAMS = DnaParams()


@lru_cache(maxsize=None)
def _reference() -> np.ndarray:
    """Expected share of each DNA letter (index = letter code 1..26)."""
    ref = np.zeros(27, dtype=np.float64)
    for line in _read("initial_reference.tsv").splitlines():
        letter, share = line.split("\t")
        ref[LETTERS.index(letter) + 1] = float(share)
    return ref


@lru_cache(maxsize=None)
def _end_mask() -> np.ndarray:
    mask = np.zeros(0x30000, dtype=bool)
    for ch in _SENTENCE_ENDS:
        mask[ord(ch)] = True
    return mask


def _codepoints(text: str) -> np.ndarray:
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return np.minimum(cps, 0x2FFFF)


def _stream(text: str, cuts: bool) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Letter codes, their offsets and (if asked) the sentence cuts, from one pass over the text."""
    cps = _codepoints(text)
    all_codes = initial_codes()[cps]
    offsets = np.flatnonzero(all_codes)
    if not cuts:
        return all_codes[offsets], offsets, []
    ends = np.flatnonzero(_end_mask()[cps])
    return all_codes[offsets], offsets, np.unique(np.searchsorted(offsets, ends)).tolist()


def letter_stream(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(letter codes 1..26, their character offsets in text) for the Han characters of text."""
    if speedups.KERNEL is not None:  # one compiled pass instead of four numpy ones (~30 -> ~8 us a page)
        codes, offsets = speedups.KERNEL.letter_codes(text, initial_codes())
        return np.frombuffer(codes, dtype=np.uint8), np.frombuffer(offsets, dtype=np.int32).astype(np.intp)
    codes, offsets, _ = _stream(text, cuts=False)
    return codes, offsets


def initials_text(text: str) -> str:
    """The pinyin-initial letters of text's Han characters, as a string (for people and tests)."""
    codes, _ = letter_stream(text)
    return "".join(LETTERS[c - 1] for c in codes.tolist())


def windows(n_letters: int, cuts: list[int], params: DnaParams = DEFAULT_PARAMS) -> list[tuple[int, int]]:
    """[start, end) letter ranges of the DNA windows."""
    m, step = params.granularity, params.step
    if n_letters == 0:
        return []
    if n_letters <= m:
        return [(0, n_letters)]
    if not params.anchored:
        return [(s, min(s + m, n_letters)) for s in range(0, n_letters - m + step, step)
                if s < n_letters and (s == 0 or s + m <= n_letters + step // 2)]
    bounds = sorted({0, n_letters, *[c for c in cuts if 0 < c < n_letters]})
    out, start, find = [], 0, bisect.bisect_left
    while True:
        # window end: the first sentence end after m letters, unless that is more than 2m away
        at = start + m
        i = find(bounds, at)
        end = bounds[i] if i < len(bounds) and bounds[i] <= start + 2 * m else min(at, n_letters)
        out.append((start, end))
        if end >= n_letters:
            return out
        at = start + step
        i = find(bounds, at)
        start = bounds[i] if i < len(bounds) and bounds[i] <= start + 2 * step else min(at, n_letters)


@lru_cache(maxsize=None)
def _letter_tables(levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(letter code -> DNA column, expected share per column, place value per column)."""
    column = np.full(27, len(DNA_LETTERS), dtype=np.intp)  # i, u, v and "no letter" -> spare column
    for i, ch in enumerate(DNA_LETTERS):
        column[LETTERS.index(ch) + 1] = i
    shares = np.array([_reference()[LETTERS.index(ch) + 1] for ch in DNA_LETTERS])
    radix = np.array([levels ** p for p in range(len(DNA_LETTERS) - 1, -1, -1)], dtype=np.uint64)
    return column, shares, radix


def window_values(codes: np.ndarray, spans: list[tuple[int, int]], params: DnaParams) -> list[int]:
    """One DNA integer per window: quantised deviation of letter counts from the reference."""
    if not spans:
        return []
    column, shares, radix = _letter_tables(params.levels)
    # Letters before position p, per column, for every window bound: one sort, one searchsorted.
    n = len(codes) + 1
    keys = np.sort(column[codes] * n + np.arange(len(codes)))
    bounds = np.array(spans, dtype=np.intp)
    base = (np.arange(len(DNA_LETTERS)) * n)[:, None]
    below_end = np.searchsorted(keys, base + bounds[:, 1])
    below_start = np.searchsorted(keys, base + bounds[:, 0])
    counts = (below_end - below_start).T.astype(np.float64)
    expected = (bounds[:, 1] - bounds[:, 0])[:, None] * shares
    z = (counts - expected) / np.sqrt(expected + 1.0)
    levels = np.clip(np.floor(z + params.levels / 2), 0, params.levels - 1).astype(np.uint64)
    return (levels * radix).sum(axis=1, dtype=np.uint64).tolist()


def dna(text: str, params: DnaParams = DEFAULT_PARAMS) -> tuple[int, ...]:
    """The DNA of a text: one integer per window, in text order."""
    kernel = speedups.KERNEL
    if kernel is not None:
        column, shares, _ = _letter_tables(params.levels)
        return tuple(kernel.dna(text, initial_codes(), _end_mask(), column, shares,
                                params.granularity, params.step, params.levels, params.anchored))
    codes, _, cuts = _stream(text, cuts=params.anchored)
    return tuple(window_values(codes, windows(len(codes), cuts, params), params))


def dna_containment(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """Share of the smaller DNA set found in the other: how much of one text the other contains."""
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))
