"""Copy matcher: does a page contain a substantial part of a registered work, and where?

Two stages (seed 004 replaced by a candidate/verify design):
1. Candidates: winnowed 12-letter seeds of the page's pinyin-initial stream (fingerprint/seeds.py)
   looked up in a SeedIndex of the sources' seeds; sources sharing at least `min_seed_hits` seeds
   are candidates. Unrelated pages share almost none.
2. Verification: for each candidate, every 8-letter gram of the page is checked against the source
   (both directions); letters covered by shared grams form runs; runs shorter than `min_run` letters
   (shared names, stock phrases of the genre) are discarded. What is left are the copied passages,
   with character offsets in both texts, whatever order they appear in.

A page copies a source when the passages cover >= `min_coverage` of the source or >= `min_chars`
Han characters of it, or when one unbroken passage of >= `min_passage` Han characters is shared. Scores are plain shares a reviewer can read: source_coverage (how much of the
work was copied) and suspect_coverage (how much of the page is copied text).
"""
from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import numpy as np

from fingerprint import speedups, synonyms
from fingerprint.dna import letter_stream
from fingerprint.seeds import gram_codes, seeds

VERIFY_K = 8
MAX_LETTERS = 400_000  # longer pages are matched on their first 400,000 Han characters


class SeedIndex(Protocol):
    """Where the sources' seeds live: in memory (MemorySeedIndex) or in Redis (storage/)."""

    def add(self, doc_id: str, seeds: Sequence[tuple[int, int]]) -> None: ...
    def remove(self, doc_id: str) -> None: ...
    def lookup(self, hashes: Sequence[int]) -> dict[int, list[tuple[str, int]]]: ...


class MemorySeedIndex:
    """SeedIndex in numpy arrays sorted by seed hash: 16 bytes per seed, binary-search lookups."""

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._number: dict[str, int] = {}
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._docs = np.zeros(0, dtype=np.uint32)
        self._pos = np.zeros(0, dtype=np.uint32)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._removed: set[int] = set()

    def __len__(self) -> int:
        return len(self._number)

    def add(self, doc_id: str, seeds: Sequence[tuple[int, int]]) -> None:
        """Index doc_id's seeds (replacing any it had)."""
        self.remove(doc_id)
        number = len(self._ids)
        self._ids.append(doc_id)
        self._number[doc_id] = number
        pairs = np.array(seeds, dtype=np.uint64).reshape(-1, 2)
        self._pending.append((pairs[:, 0], np.full(len(pairs), number, dtype=np.uint32),
                              pairs[:, 1].astype(np.uint32)))

    def remove(self, doc_id: str) -> None:
        """Forget doc_id's seeds (dropped from the arrays at the next merge)."""
        number = self._number.pop(doc_id, None)
        if number is not None:
            self._removed.add(number)

    def _merge(self) -> None:
        parts = [(self._hashes, self._docs, self._pos), *self._pending]
        hashes, docs, pos = (np.concatenate([p[i] for p in parts]) for i in range(3))
        if self._removed:
            keep = ~np.isin(docs, np.fromiter(self._removed, dtype=np.uint32))
            hashes, docs, pos = hashes[keep], docs[keep], pos[keep]
            self._removed = set()
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._docs, self._pos = hashes[order], docs[order], pos[order]
        self._pending = []

    def lookup(self, hashes: Sequence[int]) -> dict[int, list[tuple[str, int]]]:
        """Postings of every hash that has any."""
        if self._pending or self._removed:
            self._merge()
        q = np.asarray(hashes, dtype=np.uint64)
        lo = np.searchsorted(self._hashes, q, "left")
        hi = np.searchsorted(self._hashes, q, "right")
        out: dict[int, list[tuple[str, int]]] = {}
        for i in np.flatnonzero(hi > lo).tolist():
            rows = range(lo[i], hi[i])
            out[int(q[i])] = [(self._ids[self._docs[r]], int(self._pos[r])) for r in rows]
        return out

    def memory_bytes(self) -> int:
        """Bytes held by the seed arrays."""
        return int(self._hashes.nbytes + self._docs.nbytes + self._pos.nbytes)


@dataclass(frozen=True)
class MatchParams:
    """Thresholds of the matcher, measured in benchmarks/accuracy (see README)."""

    min_seed_hits: int = 3
    max_candidates: int = 20
    max_postings: int = 200
    min_run: int = 20
    merge_gap: int = 3
    min_coverage: float = 0.30
    min_chars: int = 300
    min_passage: int = 160  # one unbroken passage this long (in both texts) is a copy whatever its share
    min_copied: int = 60


@dataclass
class Match:
    """One source found in one page, with the copied passages in both texts."""

    source_id: str
    score: float
    source_coverage: float
    suspect_coverage: float
    copied_chars: int
    source_spans: list[tuple[int, int]] = field(default_factory=list)
    suspect_spans: list[tuple[int, int]] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"source": self.source_id, "score": round(self.score, 4),
                "source_coverage": round(self.source_coverage, 4),
                "suspect_coverage": round(self.suspect_coverage, 4),
                "copied_chars": self.copied_chars,
                "source_spans": [list(s) for s in self.source_spans],
                "suspect_spans": [list(s) for s in self.suspect_spans], "methods": self.methods}


@dataclass(frozen=True)
class _Letters:
    codes: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, text: str) -> _Letters:
        """Letters of text after synonym canonicalisation (when on), with offsets into text itself: what
        passages are verified on."""
        return _letters_of(text, synonyms.enabled())

    @classmethod
    def raw(cls, text: str) -> _Letters:
        """Letters of text as written: what seeds are taken from (the index of the sources' seeds does not
        depend on the thesaurus, and a page without candidates is never tokenized)."""
        return _letters_of(text, False)


@lru_cache(maxsize=16)
def _letters_of(text: str, canonical: bool) -> _Letters:
    """_Letters.of and .raw, kept for the last few texts: a page's letters serve its seeds and then the
    verification of each candidate, and canonicalising costs a tokenizer pass."""
    canon, origin = synonyms.canonical_text(text) if canonical else (text, None)
    codes, offsets = letter_stream(canon)
    if origin is not None:
        offsets = origin[offsets]
    codes.flags.writeable = offsets.flags.writeable = False   # shared by every caller of the cache
    return _Letters(codes[:MAX_LETTERS], offsets[:MAX_LETTERS])


def _covered(present: np.ndarray, n: int, k: int) -> np.ndarray:
    """Letters covered by the k-grams flagged present (gram i covers letters i..i+k-1)."""
    starts = np.zeros(n + 1, dtype=np.int32)
    idx = np.flatnonzero(present)
    starts[idx] += 1        # idx has no repeats, so plain fancy indexing counts like np.add.at, far faster
    starts[idx + k] -= 1
    return np.cumsum(starts[:n]) > 0


def _present(values: np.ndarray, sorted_other: np.ndarray) -> np.ndarray:
    """np.isin(values, sorted_other) for a sorted, non-empty sorted_other: a binary search per value
    (np.isin sorts both arrays together, twice per align: 3x slower on 3,000-character pages)."""
    pos = np.searchsorted(sorted_other, values)
    pos[pos == len(sorted_other)] = 0
    return sorted_other[pos] == values


def _shared(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(np.isin(a, b), np.isin(b, a)) for non-empty a and b: each sorted once, then searched with sorted keys
    (binary searches in key order stay in cache: 1.7x faster than searching with the keys unsorted)."""
    order_a, order_b = np.argsort(a), np.argsort(b)
    sorted_a, sorted_b = a[order_a], b[order_b]
    in_b = np.empty(len(a), dtype=bool)
    in_b[order_a] = _present(sorted_a, sorted_b)
    in_a = np.empty(len(b), dtype=bool)
    in_a[order_b] = _present(sorted_b, sorted_a)
    return in_b, in_a


def _runs(mask: np.ndarray, merge_gap: int, min_run: int) -> list[tuple[int, int]]:
    """[start, end) runs of True, gaps of <= merge_gap letters bridged, short runs dropped."""
    if not mask.any():
        return []
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    merged: list[list[int]] = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        if merged and s - merged[-1][1] <= merge_gap:
            merged[-1][1] = e
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged if e - s >= min_run]


def _char_spans(runs: list[tuple[int, int]], offsets: np.ndarray) -> list[tuple[int, int]]:
    return [(int(offsets[s]), int(offsets[e - 1]) + 1) for s, e in runs]


def align(source: _Letters, suspect: _Letters, params: MatchParams) -> tuple[list, list]:
    """Copied passages as letter runs (source_runs, suspect_runs)."""
    kernel = speedups.KERNEL
    if kernel is not None and hasattr(kernel, "align_runs") and source.codes.dtype == suspect.codes.dtype == np.uint8:
        runs = kernel.align_runs(np.ascontiguousarray(source.codes), np.ascontiguousarray(suspect.codes), VERIFY_K,
                                 params.merge_gap, params.min_run)   # the same runs, from hash sets (_speedups.c)
        if runs is not None:
            return runs
    src = gram_codes(source.codes, VERIFY_K)
    sus = gram_codes(suspect.codes, VERIFY_K)
    if len(src) == 0 or len(sus) == 0:
        return [], []
    src_in_sus, sus_in_src = _shared(src, sus)
    src_mask = _covered(src_in_sus, len(source.codes), VERIFY_K)
    sus_mask = _covered(sus_in_src, len(suspect.codes), VERIFY_K)
    return (_runs(src_mask, params.merge_gap, params.min_run),
            _runs(sus_mask, params.merge_gap, params.min_run))


def compare_texts(source: str, suspect: str, params: MatchParams | None = None,
                  source_id: str = "source") -> Match | None:
    """Verify one (source, suspect) pair directly, without an index."""
    return _verify(source_id, _Letters.of(source), _Letters.of(suspect), params or MatchParams())


def _verify(source_id: str, source: _Letters, suspect: _Letters, params: MatchParams) -> Match | None:
    src_runs, sus_runs = align(source, suspect, params)
    src_letters = sum(e - s for s, e in src_runs)
    sus_letters = sum(e - s for s, e in sus_runs)
    copied = min(src_letters, sus_letters)
    if copied < params.min_copied or not len(source.codes):
        return None
    coverage = src_letters / len(source.codes)
    if coverage < params.min_coverage and copied < params.min_chars and not _one_passage(src_runs, sus_runs, params):
        return None
    return Match(source_id=source_id, score=min(1.0, coverage), source_coverage=coverage,
                 suspect_coverage=sus_letters / len(suspect.codes), copied_chars=copied,
                 source_spans=_char_spans(src_runs, source.offsets),
                 suspect_spans=_char_spans(sus_runs, suspect.offsets), methods=["pinyin-passages"])


def _one_passage(src_runs: list[tuple[int, int]], sus_runs: list[tuple[int, int]], params: MatchParams) -> bool:
    """An excerpt (10-20% of a chapter inside an unrelated page) is one long run on both sides; text that
    merely shares names and stock phrases is many short ones."""
    longest = min(max((e - s for s, e in runs), default=0) for runs in (src_runs, sus_runs))
    return longest >= params.min_passage


_HEADING = re.compile(r"^\s*第[0-9一二三四五六七八九十百千零〇两]+[回章节卷集篇].{0,40}$", re.M)


def split_segments(text: str, max_chars: int = 20_000) -> list[tuple[int, int]]:
    """[start, end) segments of a long work: its chapters, long chapters cut at paragraph ends."""
    starts = sorted({0, *[m.start() for m in _HEADING.finditer(text)]})
    bounds = [(a, b) for a, b in zip(starts, starts[1:] + [len(text)]) if text[a:b].strip()]
    out: list[tuple[int, int]] = []
    for a, b in bounds:
        while b - a > max_chars:
            cut = text.rfind("\n", a + max_chars // 2, a + max_chars)
            cut = cut + 1 if cut > 0 else a + max_chars
            out.append((a, cut))
            a = cut
        out.append((a, b))
    return out


class CopyMatcher:
    """Index sources, then find which of them a page copies."""

    def __init__(self, index: SeedIndex | None = None,
                 get_text: Callable[[str], str | None] | None = None,
                 params: MatchParams | None = None, cache_size: int = 256) -> None:
        self.index = index if index is not None else MemorySeedIndex()
        self.params = params or MatchParams()
        self._texts: dict[str, str] = {}
        self._get_text = get_text or self._texts.get
        self._letters: OrderedDict[str, _Letters] = OrderedDict()
        self._cache_size = cache_size

    def add_source(self, doc_id: str, text: str) -> int:
        """Index one source text (a chapter or segment); returns its number of seeds."""
        letters = _Letters.raw(text)
        hashes, positions = seeds(letters.codes)
        self.index.add(doc_id, list(zip(hashes.tolist(), positions.tolist())))
        if self._get_text == self._texts.get:
            self._texts[doc_id] = text
        self._letters.pop(doc_id, None)
        return len(hashes)

    def remove_source(self, doc_id: str) -> None:
        """Forget a source."""
        self.index.remove(doc_id)
        self._texts.pop(doc_id, None)
        self._letters.pop(doc_id, None)

    def candidates(self, letters: _Letters) -> list[tuple[str, int]]:
        """(source id, distinct shared seeds), most first, above min_seed_hits."""
        hashes, _ = seeds(letters.codes)
        postings = self.index.lookup(np.unique(hashes).tolist())
        hits: Counter[str] = Counter()
        for plist in postings.values():
            if len(plist) <= self.params.max_postings:  # a seed in hundreds of sources tells nothing
                hits.update({doc for doc, _ in plist})
        ranked = [(d, n) for d, n in hits.most_common() if n >= self.params.min_seed_hits]
        return ranked[: self.params.max_candidates]

    def match(self, text: str) -> list[Match]:
        """Every indexed source the text copies, best first."""
        found, suspect = [], None
        for doc_id, _ in self.candidates(_Letters.raw(text)):
            source = self._source_letters(doc_id)
            if source is None:
                continue
            suspect = suspect or _Letters.of(text)   # canonicalised once, only for a page with candidates
            m = _verify(doc_id, source, suspect, self.params)
            if m:
                found.append(m)
        return sorted(found, key=lambda m: (-m.copied_chars, m.source_id))

    def _source_letters(self, doc_id: str) -> _Letters | None:
        if doc_id in self._letters:
            self._letters.move_to_end(doc_id)
            return self._letters[doc_id]
        text = self._get_text(doc_id)
        if text is None:
            return None
        letters = _Letters.of(text)
        self._letters[doc_id] = letters
        if len(self._letters) > self._cache_size:
            self._letters.popitem(last=False)
        return letters
