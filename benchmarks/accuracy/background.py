"""How often two unrelated documents fall within k bits: the false-alarm rate a larger k pays at scale.

The labelled set has a few hundred negatives, too few to see rates of 1e-4. Here every pair among
a sample of real documents from different groups (news category / novel) is compared: millions of
unrelated pairs for the cost of fingerprinting a couple of thousand documents.
"""
from __future__ import annotations

import random
from typing import Callable, Sequence

import numpy as np

from .corpus import Doc
from .pairs import shingle_containment


def distance_histogram(fps: np.ndarray, groups: Sequence[str], close: int = 16
                       ) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Counts of Hamming distances 0..64 over all pairs from different groups, and the (i, j, d)
    pairs within `close` bits (to be checked by hand or by content)."""
    ids = {name: i for i, name in enumerate(sorted(set(groups)))}
    g = np.array([ids[x] for x in groups], dtype=np.int64)
    hist = np.zeros(65, dtype=np.int64)
    near: list[tuple[int, int, int]] = []
    for i in range(len(fps) - 1):
        d = np.bitwise_count(fps[i] ^ fps[i + 1:]).astype(np.int64)
        other = g[i + 1:] != g[i]
        hist += np.bincount(d[other], minlength=65)
        for j in np.flatnonzero(other & (d <= close)).tolist():
            near.append((i, i + 1 + j, int(d[j])))
    return hist, near


def sample_docs(docs: Sequence[Doc], n: int, rng: random.Random, min_len: int = 200) -> list[Doc]:
    """n documents with some text, drawn with the run's seed."""
    ok = [d for d in docs if len(d.text) >= min_len]
    return rng.sample(ok, min(n, len(ok)))


def simhash_background(docs: Sequence[Doc], fingerprint: Callable[[str], int]) -> tuple[np.ndarray, int]:
    """Histogram of SimHash distances between unrelated documents; pairs of different groups that
    share > 20% of their 8-grams (the same article filed under two categories) are taken out."""
    fps = np.array([fingerprint(d.text) for d in docs], dtype=np.uint64)
    hist, near = distance_histogram(fps, [f"{d.kind}:{d.group}" for d in docs])
    removed = 0
    for i, j, d in near:
        if shingle_containment(docs[i].text, docs[j].text) > 0.2:
            hist[d] -= 1
            removed += 1
    return hist, removed


def markdown(hist: np.ndarray, n_docs: int, removed: int = 0, ks: Sequence[int] = tuple(range(0, 17))) -> str:
    """Rate of unrelated pairs within k, and what it means for a store of a million pages."""
    total = int(hist.sum())
    cum = np.cumsum(hist)
    lines = [f"All {total:,} pairs among {n_docs} sampled documents of different groups (news category or "
             f"novel), SimHash as the product computes it ({removed} pairs within 16 bits that share > 20% of "
             "their 8-grams, the same article filed under two categories, were taken out). *per new page at "
             "1M pages* = how many stored, unrelated pages a new page would be within k of, on average, in a "
             "store of a million pages (each one is a wrong 'near duplicate' unless another check rules it out).",
             "", "| k | unrelated pairs within k | rate | per new page at 1M pages |", "|---|---|---|---|"]
    for k in ks:
        n = int(cum[k])
        rate = n / total if total else float("nan")
        lines.append(f"| {k} | {n} | {rate:.2e} | {rate * 1e6:.3g} |")
    return "\n".join(lines)
