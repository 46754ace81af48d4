"""DedupStore: the Redis index calls of the dedup pipeline (check-and-insert, passage sketches),
with phantom entries (indexed, never saved) replaced and Redis outages spooled."""
from __future__ import annotations

import logging

from pymongo.errors import PyMongoError

from .connection import Connection
from .dedup_index import TEXT_TTL, date_key, text_key
from .errors import IndexLost, StorageUnavailable
from .redis_index import DedupResult
from .schema import id_age_seconds, new_id, to_oid

log = logging.getLogger(__name__)


class DedupStore(Connection):
    """Is this page new, an exact copy or a near copy, answered by Redis in one round trip."""

    @staticmethod
    def new_page_id() -> str:
        """A fresh page id (ObjectId hex) to use for check_and_insert and then save_page."""
        return new_id()

    def check_and_insert(self, page_id: str, content_hash: str, simhash: int, k: int | None = None) -> DedupResult:
        """Atomically: exact duplicate? near duplicate within k bits? else index this page. One round trip."""
        k = self.config.simhash_k if k is None else k
        losses = 0
        for _ in range(3):
            try:
                res = self._retry("redis", self.index.check, page_id, content_hash, simhash, k, True, self.loss_guard())
                while res.kind in ("lost", "loss") and losses < 3:   # a data loss: re-fill first, then decide
                    losses += 1
                    self._after_index_loss(res.loss)
                    res = self._retry("redis", self.index.check, page_id, content_hash, simhash, k, True,
                                      self.loss_guard())
            except StorageUnavailable:
                self._spool("index", page_id=page_id, content_hash=content_hash, simhash=simhash, k=k)
                return DedupResult("new", spooled=True)
            if res.kind in ("lost", "loss"):   # lost again and again: decided by the replay
                self._spool("index", page_id=page_id, content_hash=content_hash, simhash=simhash, k=k)
                return DedupResult("new", spooled=True)
            if res.kind == "new" and res.loss is not None:   # a cluster: a loss met after deciding, re-fill now
                self._after_index_loss(res.loss)
            if res.provisional and not self.replaying:
                # a data loss is recent: another crawler may not have put its pages in flight back yet, so this
                # page, kept and indexed as new, is decided again by the spool replay against the whole index
                # (the replay's own decisions stand: spooled again, they would wait for a later open)
                self._spool("recheck", page_id=page_id, k=k, why="found new while the index is re-filled after "
                            "a Redis data loss")
                res = DedupResult("new")
            if res.original_id == page_id:  # re-check of a page already indexed (re-crawl, resume, replay)
                return DedupResult("unchanged" if res.kind == "exact" else "new")
            if res.kind == "exact" and res.original_id is None:
                try:
                    held = self._retry("mongo", self.pages.find_one, {"content_hash": content_hash}, {"_id": 1})
                except StorageUnavailable:   # whose it is cannot be told now: decided again later
                    self._spool("index", page_id=page_id, content_hash=content_hash, simhash=simhash, k=k)
                    return DedupResult("new", spooled=True)
                if held is not None and str(held["_id"]) == page_id:   # its own exact entry, its SimHash one lost
                    self._retry("redis", self.index.add_many, [(page_id, content_hash, simhash)])
                    return DedupResult("unchanged")
                if held is not None:
                    return DedupResult("exact", str(held["_id"]), 0)
                # same text under another SimHash whose page is not saved yet (or an entry an outage left
                # without its page): never a copy of nothing; the whole decision runs again in the replay
                log.info("exact-hash entry %s names no saved page yet: page %s decided again later", content_hash,
                         page_id)
                self._spool("index", page_id=page_id, content_hash=content_hash, simhash=simhash, k=k)
                return DedupResult("new", spooled=True)
            if not (res.is_duplicate and self._is_phantom(res.original_id)):
                return res
            # the original was indexed by a crawler that died before saving it: this page takes its place
            log.warning("index entry %s has no page in MongoDB (crawler killed before saving?): replacing it",
                        res.original_id)
            self._retry("redis", self.index.evict, res.original_id, res.original_simhash,
                        content_hash if res.kind == "exact" else None)
        if res.is_duplicate and res.original_id is None:   # never a copy of nothing: decided again later
            self._spool("index", page_id=page_id, content_hash=content_hash, simhash=simhash, k=k)
            return DedupResult("new", spooled=True)
        return res

    def lookup(self, content_hash: str, simhash: int, k: int | None = None) -> DedupResult:
        """Like check_and_insert but never inserts (what would this page be?)."""
        k = self.config.simhash_k if k is None else k
        res = self._retry("redis", self.index.check, "", content_hash, simhash, k, False)
        return self._exact_owner(res, content_hash) if res.kind == "exact" and res.original_id is None else res

    def claim_sketch(self, page_id: str, values: list[int], min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """Add a kept page's passage sketch; (its claim number, earlier-or-later pages sharing values).

        Raises StorageUnavailable with Redis away: the caller (RedisDedupIndex) queues the page's whole
        decision for the spool replay instead of calling it new.
        """
        try:
            return self._retry("redis", self.sketches.claim, page_id, values, min_shared, self.loss_guard())
        except IndexLost as e:   # a cluster slot came back empty mid-claim: re-fill, then claim once more
            self._after_index_loss(e.token)
        try:
            return self._retry("redis", self.sketches.claim, page_id, values, min_shared, self.loss_guard())
        except IndexLost as e:
            raise StorageUnavailable("redis", "a Redis Cluster node lost the index's data twice during one "
                                     "passage claim") from e

    def _refill_inflight(self) -> int:
        """After a Redis data loss: re-add the pages this process indexed lately that the index lacks, with
        their sketches, claimed texts and dates; returns how many. Saved ones too: a page whose save landed
        after the refill read MongoDB, and before this, is in neither (its copy would then be kept as new).
        A page's SimHash entry may be back while its sketch or text is not (on a cluster they lie in other
        slots; on one server the refill from MongoDB re-adds SimHash entries, and sketches only when none
        survived): every page in flight gets those back (a claim already there stays one)."""
        entries = self.inflight.snapshot()
        missing = [(pid, f) for pid, f in entries.items() if not self._indexed(pid, f.content_hash, f.simhash)]
        self._retry("redis", self.index.add_many, ((pid, f.content_hash, f.simhash) for pid, f in missing))
        for pid, f in entries.items():
            if f.sketch:
                self._retry("redis", self.sketches.claim, pid, list(f.sketch), 10 ** 6)
            if f.text is not None:
                self._retry("redis", self.redis.set, text_key(self, pid), f.text, ex=TEXT_TTL)
            if f.published:
                self._retry("redis", self.redis.set, date_key(self, pid), f.published, ex=TEXT_TTL)
        return len(missing)

    def _indexed(self, page_id: str, content_hash: str, simhash: int) -> bool:
        """True when the index still points at this page (its entry survived the outage)."""
        res = self._retry("redis", self.index.check, "", content_hash, simhash, self.config.simhash_k, False)
        return res.original_id == page_id

    def forget_copy(self, page_id: str, content_hash: str, simhash: int, sketch: list[int]) -> None:
        """Undo a page's index entries after it turned out to be a copy (third dedup step)."""
        self._retry("redis", self.sketches.unclaim, page_id, sketch)
        self._retry("redis", self.index.remove, page_id, content_hash, simhash)

    def _is_phantom(self, page_id: str | None) -> bool:
        """True for an index entry older than phantom_seconds whose page MongoDB does not have (and that no
        displacement names: entries of a displaced page answer for the page that stands, as its copies do)."""
        age = id_age_seconds(page_id)
        if age is None or age < self.config.phantom_seconds:
            return False  # not our id, or its crawler may still be saving it
        try:
            return self.pages.find_one({"_id": to_oid(page_id)}, {"_id": 1}) is None \
                and self.demotions.find_one({"_id": str(page_id)}, {"_id": 1}) is None \
                and not self.spool.count()
        except PyMongoError:
            return False

    def _exact_owner(self, res: DedupResult, content_hash: str) -> DedupResult:
        """Same content indexed under another SimHash: find its page in MongoDB."""
        try:
            doc = self._retry("mongo", self.pages.find_one, {"content_hash": content_hash}, {"_id": 1})
        except StorageUnavailable:
            doc = None
        return DedupResult("exact", str(doc["_id"]) if doc else None, 0)
