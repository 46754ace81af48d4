"""The crawl-time dedup engine: one decision, three steps cheapest first, over a small index interface.

1. Exact: the 128-bit hash of the normalised text (fingerprint/exact.py).
2. SimHash within k bits (the seeds' contract, k = 3): cheap, finds re-edits that keep most words.
3. Passages: a sketch of the page's winnowed pinyin-initial seeds (the `sketch_size` smallest hashes,
   a bottom-k MinHash of the seed set) finds kept pages that share at least `min_shared` values;
   the `max_candidates` best of those claimed earlier are verified, and a candidate is a near
   duplicate when aligned passages cover at least `min_coverage` of both texts. This catches what
   SimHash misses (5-20% edits, reordered sentences, homophones, traditional script, other
   boilerplate), while partial copies stay distinct pages (they are the infringement matcher's business).

Then the original is the earliest published copy: a copy published before its original takes its
place (the old page becomes the copy). Only kept pages are indexed (Single-Pass).

Where the kept pages live is a `DedupIndex` (as datasketch separates LSH from its storage):
`MemoryDedupIndex` here, `storage.dedup_index.RedisDedupIndex` for the crawl. Every caller (the
crawl's DedupPipeline, `python -m fingerprint dedup`, the accuracy benchmark) runs `DedupEngine`.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
import unicodedata
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from fingerprint import semantic, synonyms
from fingerprint.document import canonical_letters, fingerprint_text, text_sketch
from fingerprint.matcher import MAX_LETTERS, VERIFY_K, MatchParams, _Letters, align
from fingerprint.seeds import smallest_seeds
from fingerprint.simhash import hamming

decisions = logging.getLogger("zhdedup.decisions")   # DEBUG: every verdict, to read a run back

MAX_RACES = 8  # displacements of one story lost to other crawlers before a copy settles for what it found
MAX_K = 8  # beyond 8 bits the k+1 blocks are under 8 bits wide: every lookup scans a large share of the index


def check_k(k: object) -> int:
    """The SimHash distance as an int in 0..MAX_K, or a ValueError naming the accepted range."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_K:
        raise ValueError(f"SimHash distance k must be a whole number from 0 to {MAX_K}, not {k!r}")
    return k


@dataclass(frozen=True)
class NearDupParams:
    """Thresholds of the crawl-time dedup (measured in benchmarks/accuracy); the one place k lives."""

    k: int = 3
    sketch_size: int = 16   # 8 before issue 27: a spun copy shared 2 of 8 values too rarely (13% of washes missed)
    min_shared: int = 2
    min_coverage: float = 0.75
    max_candidates: int = 8
    passages: bool = True
    rewrites: bool = True          # a spun copy (伪原创): shared passages spread over the whole of both texts
    rewrite_coverage: float = 0.5  # ... covering at least this much of both,
    rewrite_gap: float = 0.12      # ... and no stretch without one longer than this share of either text
    rewrite_phrase: int = 8        # ... where a reworded sentence's phrases of this many letters (shared 8-grams,
                                   # under a passage's 20) count: the part a partial copy left out has none
    numbers_shared: float = 0.5    # a passage copy or rewrite: this share of the numbers of the side with fewer
                                   # (3+) found in the other; two fillings of one template differ there
    semantic: float = 0.0          # > 0: a rewrite's aligned sentence pairs must reach this cosine (semantic.py)

    def __post_init__(self) -> None:
        check_k(self.k)
        if not 1 <= self.min_shared <= self.sketch_size:
            raise ValueError(f"min_shared must be from 1 to sketch_size ({self.sketch_size}), not {self.min_shared}")
        if not 0.0 < self.min_coverage <= 1.0:
            raise ValueError(f"passage coverage must be in (0, 1], not {self.min_coverage}")
        if self.max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, not {self.max_candidates}")
        if not 0.0 < self.rewrite_coverage <= 1.0 or not 0.0 <= self.rewrite_gap < 1.0 or not 0.0 <= self.semantic < 1.0:
            raise ValueError(f"rewrite coverage must be in (0, 1], gap and semantic cosine in [0, 1), not "
                             f"{self.rewrite_coverage}, {self.rewrite_gap}, {self.semantic}")
        if not VERIFY_K <= self.rewrite_phrase <= MatchParams.min_run:
            raise ValueError(f"a rewrite's shared phrases are {VERIFY_K} to {MatchParams.min_run} letters, not "
                             f"{self.rewrite_phrase}")
        if not 0.0 <= self.numbers_shared <= 1.0:
            raise ValueError(f"the share of numbers a copy keeps must be in [0, 1], not {self.numbers_shared}")


def sketch(text: str, size: int = NearDupParams.sketch_size) -> list[int]:
    """The `size` smallest distinct seed hashes of a text (empty for texts without Han characters)."""
    return text_sketch(text, size)


@dataclass(frozen=True)
class Alignment:
    """How two texts' shared passages lie: min share of a and of b they cover, the longest stretch of
    either without one (share of its text); per side, the covered letters, their offsets and the text."""

    coverage: float
    gap: float
    sides: tuple = ()

    @property
    def sentences(self) -> float:
        """Share of sentences holding a shared passage (the smaller side): read for rewrites only."""
        return min((_sentence_share(m, x.offsets, t) for m, x, t in self.sides), default=0.0)

    def phrase_gap(self, min_run: int) -> float:
        """The longest stretch of either text without a shared phrase of `min_run` letters (share of its text):
        a sentence reworded past its passages (a synonym every few words) keeps names and phrases between
        the swaps, while the part a partial copy left out, or its host page, shares none."""
        if len(self.sides) != 2:
            return self.gap
        (_, la, _), (_, lb, _) = self.sides
        runs = align(la, lb, MatchParams(min_run=min_run))
        return max(_longest_gap(_covered_mask(len(x.codes), r)) for x, r in zip((la, lb), runs))


_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
MIN_NUMBERS = 3   # fewer distinct numbers on a side tell nothing


def numbers_agree(a: str, b: str, share: float) -> bool:
    """A copy keeps its source's facts: of the side with fewer distinct numbers (3+), at least `share` are in
    the other. Two fillings of one template (a company's earnings-call notice, a weather report) share most
    sentences and differ exactly there: dates, figures, telephone numbers (the one false pair the rewrite
    rule made among 3.7 million pairs of real news)."""
    na, nb = _numbers(a), _numbers(b)
    few, many = (na, nb) if len(na) <= len(nb) else (nb, na)
    return len(few) < MIN_NUMBERS or len(few & many) >= share * len(few)


def _numbers(text: str) -> set[str]:
    """The distinct numbers of a text, full-width digits as ASCII (a copy in full-width form keeps them)."""
    return {unicodedata.normalize("NFKC", m) for m in _NUMBER.findall(text)}


_SENTENCE_ENDS = re.compile(r"[。！？!?；;…\n]")


def passage_alignment(a: str, b: str) -> Alignment:
    """Align a and b (the matcher's passages) and measure how the shared passages lie in both."""
    (la, ta), (lb, tb) = _passage_letters(a), _passage_letters(b)
    if not len(la.codes) or not len(lb.codes):
        return Alignment(0.0, 1.0)
    runs = align(la, lb, MatchParams())
    sides = tuple((_covered_mask(len(x.codes), r), x, t) for x, r, t in zip((la, lb), runs, (ta, tb)))
    return Alignment(min(float(m.mean()) for m, _, _ in sides), max(_longest_gap(m) for m, _, _ in sides), sides)


def _passage_letters(text: str) -> tuple[_Letters, str]:
    """The letters passages are aligned on, and the string their offsets point into: with synonyms on the
    canonical normalised tokens the sketch was taken from (computed once a page), else the text itself."""
    if not synonyms.enabled():
        return _Letters.of(text), text
    c = canonical_letters(text)
    return _Letters(c.codes[:MAX_LETTERS], c.offsets[:MAX_LETTERS]), c.text


def _covered_mask(n: int, runs: list[tuple[int, int]]) -> np.ndarray:
    """Letters inside the runs."""
    mask = np.zeros(n, dtype=bool)
    for s, e in runs:
        mask[s:e] = True
    return mask


def _longest_gap(mask: np.ndarray) -> float:
    """The longest stretch of uncovered letters, as a share of all: a partial copy leaves one large one."""
    edges = np.flatnonzero(np.concatenate([[True], mask, [True]]))
    return float((np.diff(edges) - 1).max()) / len(mask)


def _sentence_share(mask: np.ndarray, offsets: np.ndarray, text: str) -> float:
    """Share of sentences (with Han letters) that hold a shared passage."""
    ends = np.array([m.start() for m in _SENTENCE_ENDS.finditer(text)], dtype=np.int64)
    sentence = np.searchsorted(ends, offsets)
    letters = np.bincount(sentence)
    held = np.bincount(sentence, weights=mask)
    return float((held > 0).sum() / max(1, (letters > 0).sum()))


def passage_coverage(a: str, b: str) -> float:
    """min(share of a, share of b) covered by passages the two texts share."""
    return passage_alignment(a, b).coverage


def publish_date(value: object) -> dt.date | None:
    """A publish date as a date ("YYYY-MM-DD..." strings, dates, datetimes; None when unknown or unreadable)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


@dataclass(frozen=True)
class DedupDoc:
    """What the engine needs of one page: its id, text and fingerprints, and its publish date if known."""

    page_id: str
    text: str
    content_hash: str
    simhash: int
    sketch: tuple[int, ...] = ()
    published: dt.date | None = None
    url: str | None = None

    @classmethod
    def of(cls, page_id: str, text: str, params: NearDupParams | None = None, **extra: object) -> "DedupDoc":
        """Fingerprint a text (the crawl gets these fields from FingerprintPipeline instead)."""
        fp = fingerprint_text(text, dna_params=None, sketch_size=(params or NearDupParams()).sketch_size)
        return cls(page_id, text, fp.content_hash, int(fp.simhash), fp.sketch, **extra)  # type: ignore[arg-type]


class LookupUnavailable(Exception):
    """The index could not answer a lookup (a server away): the page is kept for now and its whole decision
    runs again later (the index has queued it); a failed lookup never makes a page "new"."""


class OriginalTakenBack(Exception):
    """The undated page a dated one was found to copy turned out a copy itself (or was displaced) while its
    own decision ran: the dated page is decided again, against what stands now."""


@dataclass(frozen=True)
class IndexHit:
    """What an index's check-and-insert found: kind "new" | "exact" | "near", the original, the distance."""

    kind: str              # "unchanged": the page itself, same text, kept before (a re-crawl)
    original: str | None = None
    distance: int = 0
    spooled: bool = False  # the index was unreachable: the page is kept unchecked and the check waits in a spool


@dataclass(frozen=True)
class Verdict:
    """new (possibly replacing a later-published original), or a duplicate of `original` found by `method`."""

    kind: str                      # "new" | "exact" | "near" | "unchanged" (this very page, kept before)
    original: str | None = None
    method: str | None = None      # "exact" | "simhash" | "passages" | "rewrite"
    distance: int | None = None    # SimHash bits (exact: 0); None for passages
    coverage: float | None = None  # shared passages' coverage; None for SimHash
    spooled: bool = False
    replaced: str | None = None    # the later-published page this one displaced as the original
    sentences: float | None = None  # rewrite: share of sentences holding a shared passage (the smaller side)

    @property
    def is_duplicate(self) -> bool:
        """True for exact and near duplicates."""
        return self.kind in ("exact", "near")

    @property
    def by_passages(self) -> bool:
        """Found by the passage step (a plain copy or a rewrite): the page had claimed its sketch, so other
        crawlers may have seen it (storage forwards such a copy to its original)."""
        return self.method in ("passages", "rewrite")

    @property
    def recorded_as(self) -> str:
        """How the store and the stats name the copy: exact | near | passages | rewrite."""
        return str(self.method) if self.by_passages else self.kind


class DedupIndex(Protocol):
    """Where kept pages' dedup keys live. Implementations: MemoryDedupIndex, storage's RedisDedupIndex."""

    k: int

    def check_and_insert(self, doc: DedupDoc) -> IndexHit:
        """Atomically: exact duplicate? nearest kept SimHash within k bits? else index the page."""

    def claim_sketch(self, doc: DedupDoc, min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """Add the page's sketch; (its claim number, [(kept page, shared values, its claim number)])."""

    def text_of(self, page_id: str) -> str | None:
        """A kept page's text (None when there is no such page; LookupUnavailable when it cannot be read now)."""

    def published_of(self, page_id: str) -> dt.date | None:
        """A kept page's publish date (None when unknown)."""

    def settled(self, page_id: str) -> bool:
        """Once a kept page's own decision is over: True if it stands, False if it was taken back or displaced."""

    def forget(self, doc: DedupDoc) -> None:
        """Undo a page's index entries (it turned out to be a copy after its claim)."""

    def forward(self, doc: DedupDoc, verdict: Verdict) -> None:
        """doc was decided a copy: a page that saw doc's entries before they left follows it to its original."""

    def done(self, doc: DedupDoc) -> None:
        """doc's decision is over, whatever it was: kept, it stands from now on (`settled` need not wait)."""

    def defer(self, doc: DedupDoc, why: str) -> None:
        """Queue the page's whole decision to run again later (a lookup raised LookupUnavailable)."""

    def replace_original(self, old_id: str, doc: DedupDoc, verdict: Verdict) -> str | None:
        """doc, a copy of old_id published earlier, becomes the original; old_id becomes its copy.
        None when doc took the place, else the id of the copy that displaced old_id first."""

    def resolve(self, page_id: str) -> str:
        """The kept page that stands for page_id now (itself, or the copy that displaced it)."""

    def join(self, doc: DedupDoc, other: str, method: str) -> None:
        """doc, a page that stands, tells other's story too: one of the two stands (the earlier published)."""


class DedupEngine:
    """The one crawl-time dedup decision: check a page against the kept ones, keep it if it is new."""

    def __init__(self, params: NearDupParams | None = None, index: DedupIndex | None = None,
                 trace: bool = False) -> None:
        self.params = params or NearDupParams()
        self.trace = logging.INFO if trace else logging.DEBUG   # the level every verdict is logged at
        if index is None:
            from fingerprint.memory_index import MemoryDedupIndex
            index = MemoryDedupIndex(self.params.k)
        self.index = index
        if self.index.k != self.params.k:
            raise ValueError(f"the index serves k={self.index.k}, the parameters ask for k={self.params.k}")

    def decide(self, doc: DedupDoc) -> Verdict:
        """Exact -> SimHash -> passages; a copy published before its original takes its place."""
        try:
            verdict = self._decide(doc)
        finally:
            self.index.done(doc)
        if decisions.isEnabledFor(self.trace):   # the trail a lost invariant is read back from
            decisions.log(self.trace, "page %s %s (published %s): %s", doc.page_id, doc.url, doc.published, verdict)
        return verdict

    def _decide(self, doc: DedupDoc, again: int = MAX_RACES) -> Verdict:
        hit = self.index.check_and_insert(doc)
        if hit.kind == "unchanged":
            return Verdict("unchanged", doc.page_id)
        if hit.kind == "exact":
            verdict = Verdict("exact", hit.original, "exact", 0, 1.0)
        elif hit.kind == "near":
            verdict = Verdict("near", hit.original, "simhash", hit.distance)
        elif hit.spooled or not (self.params.passages and doc.sketch):
            return Verdict("new", spooled=hit.spooled)
        else:
            try:
                verdict = self._by_passages(doc)
            except LookupUnavailable as e:
                return self._defer(doc, e)
            if not verdict.is_duplicate:
                return verdict
        if verdict.original == doc.page_id:   # its own entry (two crawlers, or a replay, on one page)
            return Verdict("unchanged", doc.page_id)
        try:
            found, verdict = verdict, self._earliest_published(doc, verdict)
            if verdict.is_duplicate:
                self.index.forward(doc, verdict)
            elif verdict.replaced is not None or (verdict.kind == "unchanged" and found.by_passages):
                verdict = self._settle_relatives(doc, verdict)
            return verdict
        except OriginalTakenBack as e:
            if again:
                return self._decide(doc, again - 1)
            return self._defer(doc, LookupUnavailable(f"original {e} taken back {MAX_RACES} times"))
        except LookupUnavailable as e:
            return self._defer(doc, e)

    def _defer(self, doc: DedupDoc, why: LookupUnavailable) -> Verdict:
        """Kept for now, not decided: the index re-runs the whole decision later."""
        self.index.defer(doc, str(why))
        return Verdict("new", spooled=True)

    def _by_passages(self, doc: DedupDoc) -> Verdict:
        """Claim the sketch; verify the best pages claimed earlier (of two racing copies the later is the copy)."""
        p = self.params
        seq, others = self.index.claim_sketch(doc, p.min_shared)
        earlier = sorted((o for o in others if o[2] < seq and o[0] != doc.page_id), key=lambda o: (-o[1], o[2]))
        if others and decisions.isEnabledFor(self.trace):
            decisions.log(self.trace, "page %s claim %d shares passages with (page, values, claim) %s", doc.page_id,
                          seq, others)
        for other, _, _ in earlier[: p.max_candidates]:
            text = self.index.text_of(other)
            verdict = self._compare(other, text, doc) if text else None
            if verdict is not None:
                self.index.forget(doc)
                return verdict
        return Verdict("new")

    def _settle_relatives(self, doc: DedupDoc, verdict: Verdict) -> Verdict:
        """A page that stands without having compared its passages with pages claimed before it (it displaced
        a page found by hash or SimHash; or this process took it for a passage copy, took its claim back, and
        found another crawler's decision had just made it stand) claims its sketch now and joins the relatives
        claimed before it: else a relative claimed meanwhile, that no one compares with it, stands beside it
        (invariant seed 1592). Pages claimed after it compare with it themselves. A lookup that fails defers
        the page's whole decision to the spool replay, which compares it with everything (seed 4617)."""
        p = self.params
        if not (p.passages and doc.sketch):
            return verdict
        try:
            seq, others = self.index.claim_sketch(doc, p.min_shared)
            earlier = sorted((o for o in others if o[2] < seq), key=lambda o: (-o[1], o[2]))   # later ones compare
            for other, _, _ in earlier[: p.max_candidates]:
                text = self.index.text_of(other) if self.index.resolve(other) != doc.page_id else None
                related = self._compare(other, text, doc) if text else None
                if related is not None:
                    decisions.log(self.trace, "page %s stands and tells the story of page %s too (%s)",
                                  doc.page_id, other, related.recorded_as)
                    self.index.join(doc, other, related.recorded_as)
        except LookupUnavailable as e:
            decisions.warning("page %s stands for now; its passage relatives could not be checked (%s): its "
                              "decision is spooled, to be made again", doc.page_id, e)
            self.index.defer(doc, f"passage relatives unchecked: {e}")
            return replace(verdict, spooled=True)
        return verdict

    def _compare(self, other: str, text: str, doc: DedupDoc) -> Verdict | None:
        """doc a copy of other (its text)? Aligned passages decide; the semantic check, when on, can only take
        a rewrite back."""
        verdict = self._verify(other, passage_alignment(text, doc.text))
        p = self.params
        if verdict is None or not numbers_agree(text, doc.text, p.numbers_shared):
            return None
        if verdict.method == "rewrite" and p.semantic > 0:
            return verdict if semantic.confirms_rewrite(text, doc.text, p.semantic) else None
        return verdict

    def _verify(self, other: str, al: Alignment) -> Verdict | None:
        """A copy of other: passages cover both texts, or (a rewrite) cover most of both with no large
        stretch left over without a shared phrase (a partial copy leaves one: the part not copied, or the host
        page)."""
        p = self.params
        if al.coverage >= p.min_coverage:
            return Verdict("near", other, "passages", None, al.coverage)
        if p.rewrites and al.coverage >= p.rewrite_coverage and (
                al.gap <= p.rewrite_gap or al.phrase_gap(p.rewrite_phrase) <= p.rewrite_gap):
            return Verdict("near", other, "rewrite", None, al.coverage, sentences=al.sentences)
        return None

    def _earliest_published(self, doc: DedupDoc, verdict: Verdict) -> Verdict:
        """Nutch's rule: the original is the earliest published copy (else the first crawled). The original
        found may have been displaced meanwhile, or be displaced by another crawler at this very moment:
        compare with the page that stands for it, and with the winner of a displacement lost."""
        if verdict.original is None or verdict.original == doc.page_id:
            return verdict
        standing = self.index.resolve(verdict.original)
        if doc.published is None:   # no date to compare; but the page may have displaced its original meanwhile
            return Verdict("unchanged", doc.page_id) if standing == doc.page_id else verdict
        verdict = replace(verdict, original=standing)
        for _ in range(MAX_RACES):
            if verdict.original == doc.page_id:   # this very page took the place (another crawler fetched it too)
                return Verdict("unchanged", doc.page_id)
            theirs = self.index.published_of(verdict.original)
            if theirs is None:   # undated, or its date not visible yet: wait for its own decision to end
                if not self.index.settled(verdict.original):   # a copy itself (seed 1286: a later one stood)
                    raise OriginalTakenBack(verdict.original)
                theirs = self.index.published_of(verdict.original)   # saved: its date (seed 1339)
            if theirs is None or not doc.published < theirs:
                return verdict
            winner = self.index.replace_original(verdict.original, doc, verdict)
            if winner is None:
                return replace(verdict, kind="new", replaced=verdict.original, original=None)
            verdict = replace(verdict, original=winner)
        return verdict

    def forget(self, doc: DedupDoc) -> None:
        """Take a kept page out of the index (a purge; a benchmark pair done)."""
        self.index.forget(doc)


def is_near_duplicate(a: str, b: str, params: NearDupParams | None = None) -> Verdict:
    """Would the crawl drop b after keeping a? (pairwise form, for `compare` and the tests)."""
    engine = DedupEngine(params)
    engine.decide(DedupDoc.of("a", a, engine.params))
    return engine.decide(DedupDoc.of("b", b, engine.params))


__all__ = ["Alignment", "DedupDoc", "DedupEngine", "DedupIndex", "IndexHit", "LookupUnavailable", "MAX_K", "MemoryDedupIndex",
           "NearDupParams", "Verdict", "check_k", "publish_date", "hamming", "is_near_duplicate", "passage_alignment",
           "passage_coverage",
           "sketch"]


def __getattr__(name: str) -> object:
    """MemoryDedupIndex, re-exported from its own module (which needs the types above: imported on use)."""
    if name == "MemoryDedupIndex":
        from fingerprint.memory_index import MemoryDedupIndex
        return MemoryDedupIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
