"""Winnowed k-gram seeds over the pinyin-initial letter stream: the copy matcher's index keys.

Working on pinyin initials (fingerprint/dna.py's letter stream) makes the seeds blind to homophone
substitutions, traditional script and encodings. A k-gram of 12 letters is packed exactly into 60
bits and mixed (splitmix64) so that winnowing (Schleimer et al.) picks positions uniformly: every
shared run of at least k + w - 1 letters yields at least one common seed in both texts.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from fingerprint import speedups

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


def smallest_seeds(codes: np.ndarray, size: int, k: int = SEED_K, w: int = SEED_W) -> list[int]:
    """The `size` smallest distinct seed hashes, as sorted(set(seeds(codes)[0]))[:size], without winnowing
    the whole stream: only the smallest k-gram hashes are tested for being a window's leftmost minimum."""
    kernel = speedups.KERNEL
    if kernel is not None and k <= 12 and codes.dtype == np.uint8:
        return kernel.smallest_seeds(np.ascontiguousarray(codes), size, k, w)
    hashes = mix64(gram_codes(codes, k))
    n = len(hashes)
    if n <= w or size <= 0:
        return np.unique(seeds(codes, k, w)[0])[:size].tolist()
    want = min(n, max(4 * size, 32))
    while True:
        cand = np.argpartition(hashes, want - 1)[:want] if want < n else np.arange(n)
        cand = cand[np.lexsort((cand, hashes[cand]))]
        chosen = np.unique(hashes[cand[_window_minima(hashes, cand, w)]])
        if len(chosen) >= size or want == n:
            # every position whose hash is below the largest candidate's is a candidate: these are exact
            return chosen[:size].tolist()
        want = min(n, want * 4)


def _window_minima(hashes: np.ndarray, pos: np.ndarray, w: int) -> np.ndarray:
    """For each position: is it the leftmost minimum of at least one window of w hashes?"""
    n = len(hashes)
    top = np.iinfo(np.uint64).max
    padded = np.concatenate([np.full(w - 1, top, np.uint64), hashes, np.full(w - 1, top, np.uint64)])
    around = padded[pos[:, None] + np.arange(2 * w - 1)]       # column w-1 is the position itself
    h = around[:, w - 1:w]
    left = np.minimum.accumulate(around[:, w - 2::-1], axis=1)[:, ::-1]   # min of columns o..w-2
    left = np.concatenate([left, np.full((len(pos), 1), top, np.uint64)], axis=1)
    right = np.minimum.accumulate(around[:, w:], axis=1)                  # min of columns w..w+o-1
    right = np.concatenate([np.full((len(pos), 1), top, np.uint64), right], axis=1)[:, :w]
    start = pos[:, None] - (w - 1) + np.arange(w)              # the window's first position
    valid = (start >= 0) & (start <= n - w)
    return ((left > h) & (right >= h) & valid).any(axis=1)
