"""Crawl-time near-duplicate detection in three steps, cheapest first.

1. Exact: the 128-bit hash of the normalised text (fingerprint/exact.py).
2. SimHash within k bits (the seeds' contract, k = 3): cheap, finds re-edits that keep most words.
3. Passages: a sketch of the page's winnowed pinyin-initial seeds (the `sketch_size` smallest hashes,
   a bottom-k MinHash of the seed set) finds candidates that share at least `min_shared` values;
   a candidate is a near duplicate when aligned passages cover at least `min_coverage` of both
   texts. This catches what SimHash misses: 5-20% edits, reordered sentences, homophones,
   traditional script, different boilerplate, while partial copies (a chapter quoted inside another
   page) stay distinct pages (they are the infringement matcher's business).

Only kept pages are indexed (Single-Pass: duplicates join their original's cluster).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fingerprint.document import Fingerprints, fingerprint_text
from fingerprint.hamming_index import HammingIndex
from fingerprint.matcher import MatchParams, _Letters, align
from fingerprint.seeds import seeds
from fingerprint.simhash import hamming


@dataclass(frozen=True)
class NearDupParams:
    """Thresholds of the crawl-time dedup (measured in benchmarks/accuracy)."""

    k: int = 3
    sketch_size: int = 8
    min_shared: int = 2
    min_coverage: float = 0.75
    max_candidates: int = 8


def sketch(text: str, size: int = NearDupParams.sketch_size) -> list[int]:
    """The `size` smallest distinct seed hashes of a text (empty for texts without Han characters)."""
    letters = _Letters.of(text)
    hashes, _ = seeds(letters.codes)
    return np.unique(hashes)[:size].tolist()


class SketchIndex(Protocol):
    """Where kept pages' sketches live: in memory (MemorySketchIndex) or in Redis (storage/)."""

    def add(self, doc_id: Hashable, values: Sequence[int]) -> None: ...
    def remove(self, doc_id: Hashable) -> None: ...
    def candidates(self, values: Sequence[int]) -> dict[Hashable, int]: ...


class MemorySketchIndex:
    """SketchIndex in a dict: sketch value -> doc ids."""

    def __init__(self) -> None:
        self._postings: dict[int, list[Hashable]] = {}
        self._values: dict[Hashable, list[int]] = {}

    def add(self, doc_id: Hashable, values: Sequence[int]) -> None:
        self.remove(doc_id)
        self._values[doc_id] = list(values)
        for v in values:
            self._postings.setdefault(v, []).append(doc_id)

    def remove(self, doc_id: Hashable) -> None:
        for v in self._values.pop(doc_id, ()):
            self._postings[v].remove(doc_id)

    def candidates(self, values: Sequence[int]) -> dict[Hashable, int]:
        """doc id -> number of shared sketch values."""
        shared: dict[Hashable, int] = {}
        for v in values:
            for doc in self._postings.get(v, ()):
                shared[doc] = shared.get(doc, 0) + 1
        return shared


@dataclass(frozen=True)
class Verdict:
    """new, or a duplicate of `original` found by `method` (exact, simhash or passages)."""

    kind: str
    original: Hashable | None = None
    method: str | None = None
    distance: int | None = None
    coverage: float | None = None


def passage_coverage(a: str, b: str) -> float:
    """min(share of a, share of b) covered by passages the two texts share."""
    la, lb = _Letters.of(a), _Letters.of(b)
    if not len(la.codes) or not len(lb.codes):
        return 0.0
    runs_a, runs_b = align(la, lb, MatchParams())
    return min(sum(e - s for s, e in runs_a) / len(la.codes), sum(e - s for s, e in runs_b) / len(lb.codes))


class NearDuplicateDetector:
    """In-memory crawl-time dedup: check a page against the kept ones, keep it if it is new."""

    def __init__(self, params: NearDupParams | None = None,
                 get_text: Callable[[Hashable], str | None] | None = None) -> None:
        self.params = params or NearDupParams()
        self.exact: dict[str, Hashable] = {}
        self.simhashes = HammingIndex(self.params.k)
        self.sketches = MemorySketchIndex()
        self._texts: dict[Hashable, str] = {}
        self._get_text = get_text or self._texts.get

    def check(self, text: str, fp: Fingerprints | None = None) -> Verdict:
        """Is text a duplicate of a kept page? Changes nothing."""
        fp = fp or fingerprint_text(text)
        if fp.content_hash in self.exact:
            return Verdict("exact", self.exact[fp.content_hash], "exact", 0, 1.0)
        near = self.simhashes.nearest(fp.simhash, self.params.k)
        if near is not None:
            return Verdict("near", near[0], "simhash", near[1])
        return self._by_passages(text, fp)

    def _by_passages(self, text: str, fp: Fingerprints) -> Verdict:
        shared = self.sketches.candidates(sketch(text, self.params.sketch_size))
        ranked = sorted((n, str(d), d) for d, n in shared.items() if n >= self.params.min_shared)[::-1]
        for _, _, doc in ranked[: self.params.max_candidates]:
            other = self._get_text(doc)
            if other is None:
                continue
            coverage = passage_coverage(other, text)
            if coverage >= self.params.min_coverage:
                return Verdict("near", doc, "passages", None, coverage)
        return Verdict("new")

    def add(self, doc_id: Hashable, text: str, fp: Fingerprints | None = None) -> None:
        """Keep a page: index its exact hash, SimHash and sketch."""
        fp = fp or fingerprint_text(text)
        self.exact.setdefault(fp.content_hash, doc_id)
        self.simhashes.add(fp.simhash, doc_id)
        self.sketches.add(doc_id, sketch(text, self.params.sketch_size))
        if self._get_text == self._texts.get:
            self._texts[doc_id] = text

    def check_and_add(self, doc_id: Hashable, text: str) -> Verdict:
        """check(), then add() when the page is new (a Single-Pass step)."""
        fp = fingerprint_text(text)
        verdict = self.check(text, fp)
        if verdict.kind == "new":
            self.add(doc_id, text, fp)
        return verdict


def is_near_duplicate(a: str, b: str, params: NearDupParams | None = None) -> Verdict:
    """Would the crawl drop b after keeping a? (pairwise form, for benchmarks and `compare`)."""
    detector = NearDuplicateDetector(params)
    detector.add("a", a)
    return detector.check(b)


__all__ = ["MemorySketchIndex", "NearDupParams", "NearDuplicateDetector", "SketchIndex", "Verdict",
           "hamming", "is_near_duplicate", "passage_coverage", "sketch"]
