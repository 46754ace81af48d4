"""MaintenanceStore: keeping Redis in step with MongoDB (rebuild, reconcile), purges, status, and
replaying the spool written while a server was away."""
from __future__ import annotations

import logging
import time
from typing import Any, Iterable

import redis
from bson import ObjectId
from pymongo.errors import PyMongoError

from fingerprint.neardup import DedupDoc, DedupEngine, NearDupParams, Verdict, publish_date

from .catalog import SourceStore
from .connection import COLLECTIONS
from .dedup import DedupStore
from .dedup_index import RedisDedupIndex
from .documents import insert_once
from .errors import StorageUnavailable
from .matches import MatchStore
from .pages import PageStore
from .redis_index import used_memory
from .runs import RunStore
from .schema import now, to_date, to_oid, to_unsigned64

log = logging.getLogger(__name__)


class MaintenanceStore(DedupStore, PageStore, RunStore, MatchStore, SourceStore):
    """Whole-store operations over pages, duplicates, matches and both indexes."""

    def _indexable(self, query: dict | None = None) -> Iterable[tuple[str, str, int]]:
        cur = self.pages.find(query or {"content_hash": {"$type": "string"}, "simhash": {"$ne": None}},
                              {"_id": 1, "content_hash": 1, "simhash": 1}).batch_size(5000)
        for d in cur:
            if isinstance(d.get("content_hash"), str) and isinstance(d.get("simhash"), int):
                yield str(d["_id"]), d["content_hash"], to_unsigned64(d["simhash"])

    def rebuild_index(self) -> int:
        """Rebuild the Redis indexes from MongoDB (after a Redis loss or a parameter change)."""
        from storage.sources import SourceLibrary

        self._retry("redis", self.index.clear)
        n = self._retry("redis", self.index.add_many, self._indexable())
        self._retry("redis", self.index.mark_layout)
        self._retry("redis", self.seed_index().clear)
        SourceLibrary(self).reindex()
        self._retry("redis", self.sketches.clear)
        self._reclaim_sketches()
        return n

    def _reclaim_sketches(self) -> int:
        """Re-add kept pages' passage sketches from MongoDB, oldest first (claim order = page order), in bulk."""
        n, chunk = 0, []
        cur = self.pages.find({"sketch": {"$type": "array"}}, {"_id": 1, "sketch": 1}).sort("fetched", 1)
        for d in cur.batch_size(5000):
            chunk.append((str(d["_id"]), [to_unsigned64(v) for v in d["sketch"]]))
            if len(chunk) >= 50_000:
                n += self._retry("redis", self.sketches.add_many, chunk)
                chunk = []
        return n + (self._retry("redis", self.sketches.add_many, chunk) if chunk else 0)

    def reconcile_index(self, exclude: set[str] | None = None) -> int:
        """Check every Redis index the crawl relies on against MongoDB and rebuild what is missing
        (idempotent, nothing removed): exact + SimHash tables, passage sketches, source seeds.
        Logs a WARNING naming what was rebuilt and how long it took; returns pages re-added."""
        if not self._retry("redis", self.index.layout_ok):
            log.warning("the Redis index has an older layout: rebuilding it from MongoDB")
            t = time.monotonic()
            n = self.rebuild_index()
            log.warning("rebuilt every Redis index (%d pages) in %.2f s", n, time.monotonic() - t)
            return n
        self._retry("redis", self.index.mark_layout)
        added = self._repair_simhash(exclude or set())
        self._repair_sketches()
        self._repair_seeds()
        return added

    def _repair_simhash(self, exclude: set[str]) -> int:
        """Re-add pages MongoDB has and the exact/SimHash tables lost."""
        indexed = self._retry("redis", self.index.count)
        stored = self._retry("mongo", self.pages.count_documents, {}) - len(exclude)
        if stored <= 0 or (indexed is not None and indexed >= stored):
            return 0
        t = time.monotonic()
        self._retry("redis", self.index.add_many, (p for p in self._indexable() if p[0] not in exclude))
        log.warning("Redis exact/SimHash index had %s pages, MongoDB %s: re-added in %.2f s",
                    indexed or 0, stored, time.monotonic() - t)
        return stored - (indexed or 0)

    def _repair_sketches(self) -> int:
        """Re-claim kept pages' passage sketches when Redis has none and MongoDB has some."""
        if self._retry("redis", self.sketches.claimed_any):
            return 0
        if self._retry("mongo", self.pages.find_one, {"sketch": {"$type": "array"}}, {"_id": 1}) is None:
            return 0
        t = time.monotonic()
        n = self._reclaim_sketches()
        log.warning("Redis had no passage sketches: re-claimed %d pages' sketches in %.2f s", n, time.monotonic() - t)
        return n

    def _repair_seeds(self) -> int:
        """Re-index the registered works whose seeds Redis lacks (infringement matching needs them)."""
        from storage.sources import SourceLibrary

        missing = self.unindexed_sources()
        if not missing:
            return 0
        t = time.monotonic()
        n = SourceLibrary(self).reindex(missing)
        log.warning("Redis lacked the seeds of %d registered work(s) (%s): re-indexed %d segments in %.2f s",
                    len(missing), ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""), n,
                    time.monotonic() - t)
        return n

    def index_health(self) -> dict[str, dict[str, int]]:
        """Per index the crawl relies on: what MongoDB says should be there and what Redis has (numbers)."""
        sources = self._retry("mongo", self.sources.count_documents, {})
        with_sketch = self._retry("mongo", self.pages.count_documents, {"sketch": {"$type": "array"}})
        return {
            "simhash": {"mongo": self._retry("mongo", self.pages.count_documents, {}),
                        "redis": self._retry("redis", self.index.count) or 0},
            "sketches": {"mongo": with_sketch, "redis": with_sketch if self._retry("redis", self.sketches.claimed_any)
                         else 0},
            "seeds": {"mongo": sources, "redis": sources - len(self.unindexed_sources())},
        }

    def purge(self, site: str | None = None, url: str | None = None, before: Any = None) -> dict:
        """Remove pages (and their copies and matches) of a site, a URL, or fetched before a date, from both stores."""
        q: dict[str, Any] = {}
        if site:
            q["site"] = site
        if url:
            q["url"] = url
        if before is not None:
            q["fetched"] = {"$lt": to_date(before)}
        if not q:
            raise ValueError("purge needs site, url or before (refusing to delete everything)")
        counts = {"pages": 0, "duplicates": 0, "matches": 0}
        while True:  # in batches, so a purge of millions of pages never builds one huge query
            batch = self._retry("mongo", list, self.pages.find(q, {"_id": 1, "url": 1, "content_hash": 1,
                                                                   "simhash": 1, "sketch": 1}).limit(1000))
            if not batch:
                break
            for d in batch:
                self._unindex(d)
            ids = [d["_id"] for d in batch]
            deleted = self._retry("mongo", self.pages.delete_many, {"_id": {"$in": ids}}).deleted_count
            counts["pages"] += deleted
            counts["duplicates"] += self._retry("mongo", self.duplicates.delete_many,
                                                {"original_id": {"$in": [str(i) for i in ids]}}).deleted_count
            counts["matches"] += self._retry("mongo", self.matches.delete_many,
                                             {"suspect_url": {"$in": [d["url"] for d in batch]}}).deleted_count
            gone = [str(i) for i in ids]   # displacements to or of a purged page: a re-crawl decides afresh
            self._retry("mongo", self.demotions.delete_many, {"$or": [{"_id": {"$in": gone}}, {"by": {"$in": gone}}]})
            if not deleted:
                break
        counts["duplicates"] += self._retry("mongo", self.duplicates.delete_many, q).deleted_count
        extra = [{"site": site}] if site else []
        extra += [{"suspect_url": url}] if url else []
        if extra:
            counts["matches"] += self._retry("mongo", self.matches.delete_many, {"$or": extra}).deleted_count
        return counts

    def status(self) -> dict:
        """Which servers are in use, whether they answer, counts, index size, spool backlog."""
        out: dict[str, Any] = {"var_dir": str(self.config.var_path), "db_name": self.config.db_name,
                               "key_prefix": self.config.key_prefix}
        for name, uri, probe in (("mongo", self.mongo_uri, lambda: self.mongo.admin.command("ping")),
                                 ("redis", self.redis_url, self.redis.ping)):
            entry = {"uri": uri, "embedded": bool(self.embedded.get(name)), "ok": True}
            try:
                probe()
            except Exception as e:  # noqa: BLE001 - status reports, never raises
                entry.update(ok=False, error=f"{type(e).__name__}: {e}")
            out[name] = entry
        try:
            out["counts"] = {n: self.db[n].count_documents({}) for n in COLLECTIONS}
        except PyMongoError as e:
            out["counts"] = None
            out["mongo"]["error"] = str(e)
        try:
            health = self.index_health()
            out["index"] = dict(health, pages=health["simhash"]["redis"], used_memory=used_memory(self.redis),
                                cluster=bool(self.index.cluster))
        except (redis.RedisError, StorageUnavailable, PyMongoError) as e:
            out["index"] = None
            out["index_error"] = f"{type(e).__name__}: {e}"
        out["spool"] = {"entries": self.spool.count(), "dir": str(self.spool.dir)}
        return out

    # ---- spool replay --------------------------------------------------------------------------------
    def replay_spool(self) -> dict[str, int]:
        """Replay spooled writes (oldest first); entries that still fail are spooled again.

        A page kept while its dedup decision could not be made (Redis away: `index`; a lookup failed:
        `recheck`) goes through the WHOLE decision again (DedupEngine over RedisDedupIndex: exact,
        SimHash, passages) and is moved to duplicates if it is a copy. Those pages are left out of the
        index repair until then, so a copy seen during the outage is still found to be a copy.
        """
        stats = {"replayed": 0, "demoted": 0, "failed": 0}
        claimed = [c for c in (self.spool.claim(p) for p in self.spool.pending()) if c is not None]
        entries = [e for c in claimed for e in self.spool.entries(c)]
        pending = {str(e["args"]["doc"]["_id"]): e["args"]["doc"] for e in entries if e["op"] == "save_page"}
        undecided = {e["args"]["page_id"] for e in entries if e["op"] in DECISION_OPS}
        try:
            self.reconcile_index(exclude=undecided)
        except StorageUnavailable as e:
            log.warning("index repair skipped: %s", e)
        replay = _Replay(self, pending)
        for entry in entries:
            try:
                if self._replay_one(entry["op"], entry["args"], replay, stats) is not False:
                    stats["replayed"] += 1
            except (StorageUnavailable, PyMongoError, redis.RedisError) as e:
                stats["failed"] += 1
                log.warning("replay of %s failed (%s); kept in the spool", entry["op"], e)
                self._spool(entry["op"], **entry["args"])
        for c in claimed:
            self.spool.done(c)
        if stats["replayed"] or stats["failed"]:
            log.warning("spool replay: %d replayed, %d copies found and moved to duplicates, %d kept for later",
                        stats["replayed"], stats["demoted"], stats["failed"])
        return stats

    def _replay_one(self, op: str, a: dict, replay: "_Replay", stats: dict) -> bool | None:
        if op in DECISION_OPS:
            return self._replay_decision(a, replay, stats)
        if op == "save_page":
            doc = a["doc"]
            verdict = replay.demoted.get(str(doc["_id"]))
            if verdict is not None:
                self._demote(doc, verdict, replay.index)
                stats["demoted"] += 1
            else:
                self._settle_saved([{**doc, "_id": self._retry("mongo", self._save_page, doc)}])
        elif op == "settle_pages":
            ids = [to_oid(i) for i in a["ids"]]
            self.settle_pages(self._retry("mongo", list, self.pages.find({"_id": {"$in": ids}})))
        elif op == "record_duplicate":
            self._retry("mongo", self.duplicates.update_one, {"url": a["doc"]["url"]}, {"$set": a["doc"]}, upsert=True)
            self.settle_copies([a["doc"]["original_id"]])
        elif op == "record_outcomes":
            records = [r if "_id" in r else {**r, "_id": ObjectId()} for r in a["records"]]  # older spools
            self._retry("mongo", insert_once, self.outcomes, records)
        elif op == "start_run":
            self._retry("mongo", self.runs.replace_one, {"_id": a["doc"]["_id"]}, a["doc"], upsert=True)
        elif op == "finish_run":
            self.finish_run(a["run_id"], a["counts"])
        elif op == "upsert_match":
            self.upsert_match(a["doc"])
        else:
            raise ValueError(f"unknown spool operation {op!r}")
        return None

    def _replay_decision(self, a: dict, replay: "_Replay", stats: dict) -> bool | None:
        """Decide again, from scratch, a page kept without a full dedup decision; demote it if it is a copy."""
        pid = a["page_id"]
        if pid in replay.decided:
            return None
        page = replay.pending.get(pid) or self._retry("mongo", self.pages.find_one, {"_id": to_oid(pid)})
        doc = dedup_doc(page) if page is not None else None
        if doc is None:   # never saved (its crawler died first) or fingerprinting was off: nothing to decide
            log.info("spooled check of page %s: no stored page to decide on", pid)
            return None
        replay.index.forget(doc)   # its own entries out: it is compared with everything else, in spool order
        verdict = replay.engine.decide(doc)
        if verdict.spooled:        # Redis away again: check_and_insert or the index re-spooled it
            stats["failed"] += 1
            return False
        replay.decided.add(pid)
        if verdict.is_duplicate:
            replay.demoted[pid] = verdict
            if pid not in replay.pending:
                self._demote(page, verdict, replay.index)
                stats["demoted"] += 1
        return None

    def _demote(self, page: dict, verdict: Verdict, index: RedisDedupIndex) -> None:
        """A page stored as new without a full dedup decision turned out to be a copy: record it as a
        duplicate, re-point copies recorded against it, and take it out of pages."""
        pid = str(page["_id"])
        original_url = index.url_of(verdict.original) if verdict.original else None
        method = "passages" if verdict.method == "passages" else verdict.kind
        self._retry("mongo", self.duplicates.update_one, {"url": page["url"]}, {"$set": {
            "url": page["url"], "original_id": verdict.original, "original_url": original_url,
            "method": method, "distance": verdict.distance, "coverage": verdict.coverage,
            "site": page.get("site"), "title": page.get("title"), "fetched": page.get("fetched") or now(),
            "content_hash": page.get("content_hash"), "found_by": "spool replay"}}, upsert=True)
        self._retry("mongo", self.pages.delete_one, {"_id": page["_id"]})
        self.forward_copy(pid, verdict.original, original_url, method)   # its copies, now and later


DECISION_OPS = ("index", "recheck")   # spooled dedup decisions (check-and-insert, a failed lookup)


class _Replay:
    """One replay's dedup engine over the store, the pages still in the spool, and what it decided."""

    def __init__(self, store: Any, pending: dict[str, dict]) -> None:
        self.pending = pending
        self.index = RedisDedupIndex(store, pending)
        self.engine = DedupEngine(NearDupParams(k=store.config.simhash_k), self.index)
        self.demoted: dict[str, Verdict] = {}
        self.decided: set[str] = set()


def dedup_doc(page: dict) -> DedupDoc | None:
    """What the engine needs of a stored (or spooled) page; None without fingerprints."""
    if not isinstance(page.get("content_hash"), str) or page.get("simhash") is None:
        return None
    return DedupDoc(str(page["_id"]), page.get("text") or "", page["content_hash"], to_unsigned64(int(page["simhash"])),
                    tuple(to_unsigned64(int(v)) for v in page.get("sketch") or ()), publish_date(page.get("published")),
                    page.get("url"))
