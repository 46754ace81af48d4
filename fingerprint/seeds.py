"""Winnowed k-gram seeds over the pinyin-initial letter stream: the copy matcher's index keys.

Working on pinyin initials (fingerprint/dna.py's letter stream) makes the seeds blind to homophone
substitutions, traditional script and encodings. A k-gram of 12 letters is packed exactly into 60
bits and mixed (splitmix64) so that winnowing (Schleimer et al.) picks positions uniformly: every
shared run of at least k + w - 1 letters yields at least one common seed in both texts.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

LETTER_BITS = 5
SEED_K = 12
SEED_W = 12


def gram_codes(codes: np.ndarray, k: int) -> np.ndarray:
    """Exact code of every k-gram of letters (k <= 12), as uint64."""
    n = len(codes) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    c = codes.astype(np.uint64)
    out = np.zeros(n, dtype=np.uint64)
    for j in range(k):
        out = (out << np.uint64(LETTER_BITS)) | c[j:j + n]
    return out


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a fixed bijection that spreads gram codes uniformly."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def winnow(hashes: np.ndarray, w: int) -> np.ndarray:
    """Positions selected by winnowing: the minimum of every window of w hashes (leftmost on ties)."""
    if len(hashes) == 0:
        return np.zeros(0, dtype=np.intp)
    if len(hashes) <= w:
        return np.array([int(np.argmin(hashes))], dtype=np.intp)
    picks = sliding_window_view(hashes, w).argmin(axis=1) + np.arange(len(hashes) - w + 1)
    return np.unique(picks)


def seeds(codes: np.ndarray, k: int = SEED_K, w: int = SEED_W) -> tuple[np.ndarray, np.ndarray]:
    """(seed hashes, letter positions) of a letter stream."""
    hashes = mix64(gram_codes(codes, k))
    picks = winnow(hashes, w)
    return hashes[picks], picks
