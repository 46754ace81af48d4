"""MemoryDedupIndex: the dedup engine's kept pages in this process (`python -m fingerprint dedup`, the
accuracy benchmarks, pairwise checks); the crawl's index lives in Redis (storage.dedup_index)."""
from __future__ import annotations

import datetime as dt
import itertools
from collections import Counter
from dataclasses import dataclass, field

from fingerprint.hamming_index import HammingIndex
from fingerprint.neardup import DedupDoc, IndexHit, Verdict, check_k


@dataclass
class MemoryDedupIndex:
    """DedupIndex in this process: a dict of exact hashes, a HammingIndex, sketch postings, the texts."""

    k: int = 3
    kept: dict[str, DedupDoc] = field(default_factory=dict)
    exact: dict[str, str] = field(default_factory=dict)
    postings: dict[int, list[str]] = field(default_factory=dict)
    claims: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)   # displaced page -> the page that displaced it

    def __post_init__(self) -> None:
        self.simhashes = HammingIndex(check_k(self.k))
        self._seq = itertools.count(1)

    def check_and_insert(self, doc: DedupDoc) -> IndexHit:
        """Exact, then nearest within k; insert when new."""
        owner = self.exact.get(doc.content_hash)
        if owner is not None:
            owner = self.resolve(owner)
            return IndexHit("unchanged" if owner == doc.page_id else "exact", owner)
        near = self.simhashes.nearest(doc.simhash, self.k)
        if near is not None and near[0] != doc.page_id:
            return IndexHit("near", self.resolve(near[0]), near[1])
        self._insert(doc)
        return IndexHit("new")

    def holds_content(self, content_hash: str) -> bool:
        """Whether check_and_insert would answer "exact" or "unchanged" for a page with this content hash."""
        return content_hash in self.exact

    def _insert(self, doc: DedupDoc) -> None:
        self.exact.setdefault(doc.content_hash, doc.page_id)
        if doc.page_id not in self.simhashes:
            self.simhashes.add(doc.simhash, doc.page_id)
        self.kept[doc.page_id] = doc

    def claim_sketch(self, doc: DedupDoc, min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """Add the sketch with the next claim number; report pages sharing >= min_shared values."""
        seq = self.claims.setdefault(doc.page_id, next(self._seq))
        lists = [self.postings.setdefault(v, []) for v in dict.fromkeys(doc.sketch)]   # one list per value
        shared = Counter(itertools.chain.from_iterable(lists))   # counted in C, in first-seen order
        shared.pop(doc.page_id, None)
        for ids in lists:
            if doc.page_id not in ids:
                ids.append(doc.page_id)
        return seq, [(o, n, self.claims[o]) for o, n in shared.items() if n >= min_shared]

    def text_of(self, page_id: str) -> str | None:
        """The kept page's text."""
        kept = self.kept.get(page_id)
        return kept.text if kept else None

    def published_of(self, page_id: str) -> dt.date | None:
        """The kept page's publish date."""
        kept = self.kept.get(page_id)
        return kept.published if kept else None

    def settled(self, page_id: str) -> bool:
        """Decisions here run one at a time: a kept page's is over."""
        return True

    def forget(self, doc: DedupDoc) -> None:
        """Remove every entry that points at this page."""
        if self.exact.get(doc.content_hash) == doc.page_id:
            del self.exact[doc.content_hash]
        if doc.page_id in self.simhashes:
            self.simhashes.remove(doc.page_id)
        for v in dict.fromkeys(doc.sketch):
            ids = self.postings.get(v, [])
            if doc.page_id in ids:
                ids.remove(doc.page_id)
        self.claims.pop(doc.page_id, None)
        self.kept.pop(doc.page_id, None)

    def forward(self, doc: DedupDoc, verdict: Verdict) -> None:
        """In memory no other decision runs in between: nothing saw doc."""

    def done(self, doc: DedupDoc) -> None:
        """Decisions here run one at a time: nothing to track."""

    def defer(self, doc: DedupDoc, why: str) -> None:
        """Never called: an index in memory always answers."""

    def replace_original(self, old_id: str, doc: DedupDoc, verdict: Verdict) -> str | None:
        """Swap the kept page: doc in (with a fresh claim); old_id's exact and SimHash entries answer for doc
        from now on (its text still stands for the story), its passage claim goes."""
        self._insert(doc)
        self.claim_sketch(doc, len(doc.sketch) + 1)
        old = self.kept.pop(old_id, None)
        if old is not None:
            for v in dict.fromkeys(old.sketch):
                ids = self.postings.get(v, [])
                if old_id in ids:
                    ids.remove(old_id)
            self.claims.pop(old_id, None)
        self.aliases[old_id] = doc.page_id
        return None

    def join(self, doc: DedupDoc, other: str, method: str) -> None:
        """Of doc and other (their standing pages) one stands, as storage's `_standing` picks it: the earlier
        published; of an undated and a dated page the undated one; else the one kept first."""
        a, b = self.resolve(doc.page_id), self.resolve(other)
        if a == b:
            return
        da, db = self.published_of(a), self.published_of(b)
        if da is not None and db is not None and da != db:
            keep = a if da < db else b
        elif (da is None) != (db is None):
            keep = a if da is None else b
        else:
            keep = min(a, b, key=list(self.kept).index)
        lose = b if keep == a else a
        self.replace_original(lose, self.kept[keep], Verdict("near", lose, method))

    def resolve(self, page_id: str) -> str:
        """The page that stands for page_id: itself, or the page that displaced it (to the end of the chain)."""
        seen = {page_id}
        while page_id in self.aliases and self.aliases[page_id] not in seen:
            page_id = self.aliases[page_id]
            seen.add(page_id)
        return page_id
