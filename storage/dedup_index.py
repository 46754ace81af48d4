"""RedisDedupIndex: the crawl's DedupIndex (fingerprint.neardup) on the store's Redis index and MongoDB pages.

The decision itself lives in fingerprint.neardup.DedupEngine; this adapter only says where kept pages'
keys and texts are: exact hashes and SimHash block tables in one Lua check-and-insert, passage sketches
with an atomic ordered claim, texts and publish dates from MongoDB.

A lookup that fails (a server away) is never a miss: it raises neardup.LookupUnavailable, the engine keeps
the page for now and calls `defer`, which queues the page's whole decision in the spool (`recheck`).
"""
from __future__ import annotations

import datetime as dt
import logging
import time
import zlib
from collections import OrderedDict
from typing import Any

from fingerprint.neardup import DedupDoc, IndexHit, LookupUnavailable, Verdict, publish_date

from .errors import StorageUnavailable
from .inflight import Flight
from .redis_index import DedupResult
from .schema import to_oid

log = logging.getLogger(__name__)
RECENT = 10_000  # pages kept by this process, whose save to MongoDB may still be on its way
POLL = (0.05, 0.1, 0.2, 0.4, 0.0)  # another crawler may have claimed a page and still be saving it
SETTLE_POLL = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 0.0)   # a page's decision, and its save, may wait out an outage
TEXT_TTL = 24 * 3600  # a claimed page's text waits in Redis until its page is in MongoDB (or a day)
TEXT_LEVEL = 1   # zlib level of a waiting text: read once or twice, gone within seconds; level 6 cost 3x the CPU
WITHDRAWN = b""  # the text key of a claim taken back (its page was a copy): no such page, nothing to wait for


class EntriesNotTakenBack(StorageUnavailable, LookupUnavailable):
    """Redis went away while a page's index entries were taken back (a copy found by its passages). To the
    engine a lookup that could not be answered (the page is kept and its whole decision spooled); to any
    other caller (the spool replay) an outage like every other."""


class RedisDedupIndex:
    """DedupIndex over a Store (storage.store): Redis for the keys, MongoDB for the texts.

    `pending` holds pages whose save is still in the spool (spool replay), by id. A spool replay also passes
    what it decided so far (`replayed`: page id -> True if it stands); a decision it cannot make yet is then
    `postponed` (the replay tries it again once the rest of its spool is decided) instead of spooled.
    """

    def __init__(self, store: Any, pending: dict[str, dict] | None = None,
                 replayed: dict[str, bool] | None = None) -> None:
        self.store = store
        self.k = store.index.k
        self.pending = pending if pending is not None else {}
        self.replayed = replayed
        self.postponed: dict[str, str] = {}   # page id -> why its decision waits (spool replay only)
        self._recent: OrderedDict[str, tuple[str | None, dt.date | None]] = OrderedDict()
        self._pages: OrderedDict[str, dict] = OrderedDict()
        self._deciding: set[str] = set()   # pages kept by this process whose decision is still running

    def check_and_insert(self, doc: DedupDoc) -> IndexHit:
        """Exact, then SimHash within k (one Redis round trip); a new page is remembered for its copies."""
        res = self.store.check_and_insert(doc.page_id, doc.content_hash, doc.simhash)
        if res.kind == "unchanged" and doc.page_id not in self.pending:
            try:   # its own entry: a re-crawl if the page is saved, else a decision left half done (a killed crawler)
                saved = self.store._retry("mongo", self.store.pages.find_one, {"_id": to_oid(doc.page_id)},
                                          {"_id": 1, "undecided": 1})
            except StorageUnavailable as e:
                self.defer(doc, f"is page {doc.page_id} saved: {e.detail}")
                return IndexHit("new", spooled=True)
            if saved is None:   # never saved: decided in full (its passage step too), as with its own SimHash entry
                res = DedupResult("new")
            elif saved.get("undecided") and not self.store.replaying:   # its check waits in a spool: this entry
                # is one of a check cut short (a cluster slot written), not a decision (invariant seed 1715)
                self.defer(doc, f"page {doc.page_id} is saved undecided: its spooled check decides it")
                return IndexHit("new", spooled=True)
        if res.kind in ("new", "unchanged"):
            self._deciding.add(doc.page_id)
            self._remember(doc)
        if res.kind == "new" and not res.spooled:
            self._in_flight(doc)
            if doc.published is not None and not doc.sketch:   # no passage claim to carry its date: say it here
                try:
                    self.store._retry("redis", self.store.redis.set, date_key(self.store, doc.page_id),
                                      doc.published.isoformat(), ex=TEXT_TTL)
                except StorageUnavailable as e:   # kept, but unseen by an earlier copy: decided again later
                    self.defer(doc, f"publish date of {doc.page_id}: {e.detail}")
                    return IndexHit("new", spooled=True)
        return IndexHit(res.kind, res.original_id, int(res.distance), bool(res.spooled))

    def claim_sketch(self, doc: DedupDoc, min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """The store's atomic sketch claim, after the page's text: whoever sees the claim can verify it."""
        text = zlib.compress(doc.text.encode("utf-8"), TEXT_LEVEL)
        self.store.inflight.keep_text(doc.page_id, text)
        try:
            self.store._retry("redis", self._keep_claimed, doc, text)
            return self.store.claim_sketch(doc.page_id, list(doc.sketch), min_shared)
        except StorageUnavailable as e:
            raise LookupUnavailable(f"passage claim: {e.detail}") from e

    def _keep_claimed(self, doc: DedupDoc, text: bytes) -> None:
        """The claimed page's text, and its publish date, for other crawlers until its save lands (one round trip)."""
        pipe = self.store.redis.pipeline(transaction=False)
        pipe.set(text_key(self.store, doc.page_id), text, ex=TEXT_TTL)
        if doc.published is not None:
            pipe.set(date_key(self.store, doc.page_id), doc.published.isoformat(), ex=TEXT_TTL)
        pipe.execute()

    def text_of(self, page_id: str) -> str | None:
        """The kept page's text: from its claim while the page may be in flight, else from MongoDB.

        None only for a page that is known not to exist (a phantom); a text that cannot be read now
        raises LookupUnavailable (the caller's page is re-decided later)."""
        if page_id in self.pending:
            return self.pending[page_id].get("text")
        try:
            raw = self.store._retry("redis", self.store.redis.get, text_key(self.store, page_id))
            if raw == WITHDRAWN:  # no waiting: the page is stored (kept again later) or it never will be
                page = self.store._retry("mongo", self.store.get_page, page_id)
                return page.get("text") if page else None
            if raw is not None:
                return zlib.decompress(raw).decode("utf-8")
            page = self._page(page_id)
        except StorageUnavailable as e:
            raise LookupUnavailable(f"text of {page_id}: {e.detail}") from e
        if page is not None:
            return page.get("text")
        if self.store._is_phantom(page_id):
            return None
        raise LookupUnavailable(f"page {page_id} is claimed but neither its text nor its page can be read yet")

    def published_of(self, page_id: str) -> dt.date | None:
        """The kept page's publish date (this process's recent pages first, then MongoDB; None if unreadable)."""
        recent = self._recent.get(page_id)
        if recent is not None:
            return recent[1]
        try:   # another crawler's page whose save may not have landed yet
            claimed = self.store._retry("redis", self.store.redis.get, date_key(self.store, page_id))
        except StorageUnavailable:
            claimed = None
        if claimed:
            return publish_date(claimed.decode())
        return publish_date((self._page_or_none(page_id) or {}).get("published"))

    def settled(self, page_id: str) -> bool:
        """Wait for a kept page's own decision to end: True once MongoDB holds it decided, False when it was taken
        back as a copy or displaced; LookupUnavailable when neither happens in time (the caller is deferred).

        A page kept undecided (its decision waits in a spool) has not settled: an undated one may still turn
        out a copy of a page dated after the caller, and a copy recorded against it now would follow it there
        past the earliest-published rule (invariant seed 4003)."""
        if self.replayed is not None and page_id in self.replayed:   # this replay decided it
            return self.replayed[page_id]
        if page_id in self.pending:   # its save waits in this very spool
            return self._decided(self.pending[page_id], page_id)
        if page_id in self._pages and not self._pages[page_id].get("undecided"):   # read already (published_of)
            return True
        if page_id in self.store.undecided:   # this process spooled its decision
            raise LookupUnavailable(f"page {page_id} is kept undecided: its own decision waits in the spool")
        if page_id in self._recent and page_id not in self._deciding:   # kept by this process, its decision over
            return True
        store = self.store
        for delay in SETTLE_POLL:
            try:
                page = store._retry("mongo", store.pages.find_one, {"_id": to_oid(page_id)}, {"undecided": 1})
                if page is not None:
                    return self._decided(page, page_id)
                if store._retry("redis", store.redis.get, text_key(store, page_id)) == WITHDRAWN or \
                        store._retry("mongo", store.demotions.find_one, {"_id": page_id}, {"_id": 1}) is not None:
                    return False
            except StorageUnavailable as e:
                raise LookupUnavailable(f"is page {page_id} decided: {e.detail}") from e
            time.sleep(delay)
        raise LookupUnavailable(f"page {page_id} was neither saved nor taken back in {sum(SETTLE_POLL):.0f} s")

    @staticmethod
    def _decided(page: dict, page_id: str) -> bool:
        """True for a held page whose decision is over; LookupUnavailable while it waits in a spool."""
        if page.get("undecided"):
            raise LookupUnavailable(f"page {page_id} is kept undecided: its own decision waits in a spool")
        return True

    def done(self, doc: DedupDoc) -> None:
        """The page's decision is over: kept, it stands for `settled` without waiting for its save."""
        self._deciding.discard(doc.page_id)

    def url_of(self, page_id: str) -> str | None:
        """The kept page's URL, for the copy record."""
        recent = self._recent.get(page_id)
        if recent is not None and recent[0]:
            return recent[0]
        return (self._page_or_none(page_id) or {}).get("url")

    def forget(self, doc: DedupDoc) -> None:
        """Undo the page's exact, SimHash and sketch entries, and its claimed text.

        Redis away meanwhile raises EntriesNotTakenBack: to the engine a copy that cannot be taken back yet
        is kept and decided again by the spool replay (which takes its entries out first), never lost."""
        try:
            self.store.forget_copy(doc.page_id, doc.content_hash, doc.simhash, list(doc.sketch))
            # a page that saw this claim reads "withdrawn" instead of waiting for a page that will never be saved
            self.store._retry("redis", self.store.redis.set, text_key(self.store, doc.page_id), WITHDRAWN,
                              ex=TEXT_TTL)
        except StorageUnavailable as e:
            raise EntriesNotTakenBack(e.server, f"taking back the index entries of {doc.page_id}: {e.detail}",
                                      e.hint) from e
        self._recent.pop(doc.page_id, None)
        self.store.inflight.pop(doc.page_id)

    def forward(self, doc: DedupDoc, verdict: Verdict) -> None:
        """A copy whose entries others could see before they left (a passage claim, a Redis Cluster block)
        is forwarded to its original, so that their copy records follow it there."""
        if not verdict.by_passages and not self.store.index.cluster:
            return
        url = (self._recent.get(verdict.original) or (None,))[0]
        try:
            self.store.forward_copy(doc.page_id, verdict.original, url, verdict.recorded_as)
        except StorageUnavailable as e:
            raise LookupUnavailable(f"forwarding {doc.page_id}: {e.detail}") from e

    def replace_original(self, old_id: str, doc: DedupDoc, verdict: Verdict) -> str | None:
        """The store marks old_id displaced by doc and gives its index entries to doc (None), unless another
        copy displaced old_id first (that copy's id)."""
        method = verdict.recorded_as
        flight = self.store.inflight.get(old_id)
        old_keys = flight.keys() if flight is not None else None
        new = {"id": doc.page_id, "url": doc.url, "content_hash": doc.content_hash, "simhash": doc.simhash,
               "sketch": list(doc.sketch)}
        # the hand-over claims doc's sketch: its text first, as for every claim (a passage copy's claim was
        # taken back and its text marked withdrawn: a copy seeing the new claim read "no such page", and was kept)
        text = zlib.compress(doc.text.encode("utf-8"), TEXT_LEVEL) if doc.sketch else None
        try:
            if text is not None:
                self.store._retry("redis", self._keep_claimed, doc, text)
            winner = self.store.replace_original(old_id, new, method, verdict.distance, verdict.coverage, old_keys)
            if winner is not None and text is not None:   # doc stays a copy: nothing to wait for
                self.store._retry("redis", self.store.redis.set, text_key(self.store, doc.page_id), WITHDRAWN,
                                  ex=TEXT_TTL)
        except StorageUnavailable as e:
            raise LookupUnavailable(f"displacing {old_id}: {e.detail}") from e
        if winner is not None:
            return winner
        self.store.inflight.pop(old_id)
        self._recent.pop(old_id, None)
        self._remember(doc)
        self._in_flight(doc)
        if text is not None:   # a Redis refill puts the text back with the claim
            self.store.inflight.keep_text(doc.page_id, text)
        return None

    def resolve(self, page_id: str) -> str:
        """The page that stands for page_id now (an earlier-published copy may have displaced it)."""
        try:
            return self.store.resolve_original(page_id)[0]
        except StorageUnavailable as e:
            raise LookupUnavailable(f"displacements of {page_id}: {e.detail}") from e

    def join(self, doc: DedupDoc, other: str, method: str) -> None:
        """doc and other tell one story: the store keeps the earlier published, the other becomes its copy."""
        try:
            joined = self.store._join(doc.page_id, other, method, deciding=doc.page_id)
        except StorageUnavailable as e:
            raise LookupUnavailable(f"joining {doc.page_id} and {other}: {e.detail}") from e
        if not joined:   # decided again by the spool replay, once the page that stands can be read
            raise LookupUnavailable(f"joining {doc.page_id} and {other}: the page that stands cannot be read yet")

    def defer(self, doc: DedupDoc, why: str) -> None:
        """Queue the page's whole decision for the spool replay (a failed lookup is never a miss); in a replay,
        for the replay's next round."""
        if self.replayed is not None:
            self.postponed[doc.page_id] = why
            return
        self.store._spool("recheck", page_id=doc.page_id, k=self.k, why=why)

    def _remember(self, doc: DedupDoc) -> None:
        self._recent[doc.page_id] = (doc.url, doc.published)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    def _in_flight(self, doc: DedupDoc) -> None:
        """Keep what a Redis refill needs until MongoDB surely has the page (storage/inflight.py)."""
        self.store.inflight.add(doc.page_id, Flight(doc.content_hash, doc.simhash, tuple(doc.sketch), None,
                                                    doc.published.isoformat() if doc.published else None))

    def _page_or_none(self, page_id: str) -> dict | None:
        try:
            return self._page(page_id)
        except StorageUnavailable as e:
            log.info("page %s unreadable for now (%s)", page_id, e.detail)
            return None

    def _page(self, page_id: str) -> dict | None:
        """A kept page from MongoDB, read once per decision (a small cache), polled while it may be in flight."""
        page = self._pages.get(page_id) or self.pending.get(page_id)
        if page is not None:
            return page
        for delay in POLL:
            page = self.store.get_page(page_id)
            if page:
                break
            time.sleep(delay)
        if page:
            self._pages[page_id] = page
            while len(self._pages) > 64:
                self._pages.popitem(last=False)
        return page


def date_key(store: Any, page_id: str) -> str:
    """Where a claimed page's publish date waits for other crawlers until the page is saved (or a day)."""
    return f"{store.config.key_prefix}pd:{page_id}"


def text_key(store: Any, page_id: str) -> str:
    """Where a claimed page's compressed text waits until the page is saved (deleted by save_page)."""
    return f"{store.config.key_prefix}tx:{page_id}"
