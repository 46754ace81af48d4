"""MaintenanceStore: keeping Redis in step with MongoDB (rebuild, reconcile), purges, status; the spool
written while a server was away is replayed by storage/replay.py."""
from __future__ import annotations

import itertools
import logging
import time
from typing import Any, Iterable

import redis
from pymongo.errors import PyMongoError
from redis.crc import REDIS_CLUSTER_HASH_SLOTS

from .connection import COLLECTIONS
from .dedup import DedupStore
from .errors import StorageUnavailable, mask_credentials
from .identity import Identity, RepairLock, lock_key, lost_key, owner_key, store_identity
from .pages import PageStore
from .redis_index import decode_id, exact_key_parts, used_memory
from . import replay
from .replay import dedup_doc
from .schema import count_all, id_age_seconds, to_date, to_oid, to_unsigned64

log = logging.getLogger(__name__)
LOST_ALLOWANCE = 100   # pages the index may count beyond MongoDB's (in flight: indexed, not saved yet), +1%


class MaintenanceStore(DedupStore, PageStore):
    """Whole-store operations over pages, duplicates, matches and both indexes."""

    def _indexable(self) -> Iterable[tuple[str, str, int]]:
        """(page id, content hash, SimHash) of every index entry MongoDB implies: the kept pages, then the
        displaced ones, whose entries answer for the page that displaced them (pages.py `_hand_over`)."""
        wanted = {"content_hash": {"$type": "string"}, "simhash": {"$ne": None}}
        for d in self.pages.find(wanted, {"_id": 1, "content_hash": 1, "simhash": 1}).batch_size(5000):
            if isinstance(d.get("content_hash"), str) and isinstance(d.get("simhash"), int):
                yield str(d["_id"]), d["content_hash"], to_unsigned64(d["simhash"])
        for d in self.duplicates.find({"replaced_by_earlier": True, "index_alias": True, **wanted},
                                      {"original_id": 1, "content_hash": 1, "simhash": 1}).batch_size(5000):
            if isinstance(d.get("content_hash"), str) and isinstance(d.get("simhash"), int) and d.get("original_id"):
                yield str(d["original_id"]), d["content_hash"], to_unsigned64(d["simhash"])

    def _index_size(self) -> int:
        """Index entries MongoDB implies (`_indexable`): kept pages, and displaced ones whose own entry answers
        for the page that stands (`index_alias`, read from the index when the page moved: one entry when the
        two share their fingerprint, none when the displaced page's entry was not its own)."""
        return self.count("pages") + \
            self._retry("mongo", self.duplicates.count_documents, {"replaced_by_earlier": True, "index_alias": True})

    def rebuild_index(self) -> int:
        """Rebuild the Redis indexes from MongoDB (after a Redis loss or a parameter change), one process at a time."""
        with self._repair_lock().held():
            return self._rebuild_index(exclude=self.undecided_pages())

    def undecided_pages(self) -> set[str]:
        """Pages kept while Redis was away, whose decision waits in some crawler's spool: no repair indexes
        them (another process's repair did, and a later page took one for an original: seed 1286)."""
        return {str(d["_id"]) for d in self._retry("mongo", list, self.pages.find({"undecided": True}, {"_id": 1}))}

    def still_undecided(self, page_ids: set[str]) -> set[str]:
        """Of pages whose decision was spooled, those MongoDB does not hold as decided (same text saved by a
        crawler with Redis up, `pages._over_held`): a repair leaves those out, and indexes the others."""
        if not page_ids:
            return set()
        decided = self._retry("mongo", list, self.pages.find(
            {"_id": {"$in": [to_oid(i) for i in page_ids]}, "undecided": {"$ne": True}}, {"_id": 1}))
        return page_ids - {str(d["_id"]) for d in decided}

    def _rebuild_index(self, saving: dict[str, dict] | None = None,
                       exclude: set[str] | frozenset[str] = frozenset()) -> int:
        """rebuild_index under the lock; pages whose save waits in the spool (`saving`) are indexed too, pages
        the spool replay decides (`exclude`) not yet."""
        from storage.sources import SourceLibrary

        self._retry("redis", self.redis.delete, owner_key(self.config.key_prefix))   # cut short: redone on open
        self._retry("redis", self.index.clear)
        n = self._retry("redis", self.index.add_many, (p for p in self._indexable() if p[0] not in exclude))
        self._retry("redis", self.index.mark_layout)
        self._retry("redis", self.sources.seed_index().clear)
        SourceLibrary(self).reindex()
        self._retry("redis", self.sketches.clear)
        self._reclaim_sketches(exclude)
        docs = [d for d in map(dedup_doc, (saving or {}).values()) if d is not None]
        if docs:   # indexed before MongoDB went away: they stay indexed
            n += self._retry("redis", self.index.add_many, [(d.page_id, d.content_hash, d.simhash) for d in docs])
            self._retry("redis", self.sketches.add_many, [(d.page_id, d.sketch) for d in docs if d.sketch])
        self._retry("redis", self.index.mark_whole)
        self._mark_owner()
        return n

    def _reclaim_sketches(self, exclude: set[str] | frozenset[str] = frozenset()) -> int:
        """Re-add kept pages' passage sketches from MongoDB, oldest first (claim order = page order), in bulk;
        not those of `exclude`: pages the spool replay decides, which are no one's original until it has."""
        n, chunk = 0, []
        cur = self.pages.find({"sketch": {"$type": "array"}}, {"_id": 1, "sketch": 1}).sort("fetched", 1)
        for d in cur.batch_size(5000):
            if str(d["_id"]) in exclude:
                continue
            chunk.append((str(d["_id"]), [to_unsigned64(v) for v in d["sketch"]]))
            if len(chunk) >= 50_000:
                n += self._retry("redis", self.sketches.add_many, chunk)
                chunk = []
        return n + (self._retry("redis", self.sketches.add_many, chunk) if chunk else 0)

    def reconcile_index(self, exclude: set[str] | None = None, saving: dict[str, dict] | None = None) -> int:
        """Check every Redis index the crawl relies on against MongoDB and repair it: an index of another
        store, layout or later MongoDB generation is rebuilt; entries of pages MongoDB lost are dropped;
        what is missing is re-added (exact + SimHash tables, passage sketches, source seeds).
        `exclude`: pages this process's spool replay decides; `saving`: pages whose save waits in the spool.
        Pages any process kept undecided (`undecided_pages`) are left out as well.
        Logs a WARNING naming what was repaired and how long it took; returns pages re-added."""
        exclude = (exclude or set()) | self.undecided_pages()
        # a data loss recorded before this repair read MongoDB is met by it (pages in flight: `_after_redis_outage`)
        loss = self._retry("redis", self.redis.get, lost_key(self.config.key_prefix)) or b""
        added = self._reconcile_index(exclude, saving)
        self.loss_seen = loss
        return added

    def _reconcile_index(self, exclude: set[str], saving: dict[str, dict] | None) -> int:
        stored = self._index_size()
        if self._index_problem(stored) is None:
            added = self._refill(exclude, stored, self._retry("redis", self.index.lost_slots))
            self._mark_owner(only_update=True)   # this generation; never over a rebuild under way
            return added
        with self._repair_lock().held():
            stored = self._index_size()
            problem = self._index_problem(stored)   # decided again: another process may have repaired it meanwhile
            t = time.monotonic()
            if problem is not None and problem[0] == "rebuild":
                n = self._rebuild_index(saving, exclude)
                log.warning("the Redis index at %s %s: rebuilt from MongoDB (%s pages) in %.1f s",
                            mask_credentials(self.redis_url), problem[1], f"{n:,}", time.monotonic() - t)
                return n
            if problem is not None and problem[0] == "lost":
                dropped = self._drop_lost(exclude | set(saving or ()))
                (log.warning if dropped else log.info)(
                    "the Redis index at %s %s: dropped %s entries of pages MongoDB lacks (older than %.0f s: "
                    "not in flight) in %.1f s", mask_credentials(self.redis_url), problem[1], f"{dropped:,}",
                    self.config.phantom_seconds, time.monotonic() - t)
            # no owner key: the index lost its data since its last repair; what other processes claimed
            # since (their pages in flight, claims made before they saw the loss) hides the loss from counts
            added = self._refill(exclude, stored, self._retry("redis", self.index.lost_slots),
                                 force=problem is not None and problem[0] == "empty")
            self._mark_owner()
            return added

    def settle_displacements(self, chunk: int = 10_000) -> int:
        """Finish displacements a killed crawler left half done (its marker written, the displaced page still
        kept, or copies still pointing to it): whoever opens the store next completes them; returns how many."""
        ids = [m["_id"] for m in self._retry("mongo", list, self.demotions.find({}, {"_id": 1}))]
        done = 0
        for i in range(0, len(ids), chunk):
            part = ids[i:i + chunk]
            held = self._retry("mongo", list, self.pages.find({"_id": {"$in": [to_oid(x) for x in part]}}))
            done += self.settle_pages(held) if held else 0
            pointed = self._retry("mongo", self.duplicates.distinct, "original_id", {"original_id": {"$in": part}})
            done += self.settle_copies(pointed) if pointed else 0
        if done:
            log.warning("finished %d displacements left half done (a crawler stopped mid-way)", done)
        return done

    def _refill(self, exclude: set[str], stored: int, lost_slots: int = 0, force: bool = False) -> int:
        """Re-add, kind by kind, what the index lacks (idempotent, nothing removed); returns pages re-added.
        `lost_slots`: cluster slots that came back empty (storage/sentinels.py): counts cannot tell what a
        third of the index lost, so everything is re-added; the slots are marked whole only after that.
        `force`: everything re-added too (the index lost its data; counts may not show it)."""
        force = force or bool(lost_slots)
        self._retry("redis", self.index.mark_layout)
        added = self._repair_simhash(exclude, stored, force=force)
        self._repair_sketches(exclude, force=force)
        self._repair_seeds()
        if lost_slots:
            self._retry("redis", self.index.mark_whole)
            (log.info if lost_slots == REDIS_CLUSTER_HASH_SLOTS else log.warning)(   # all: a new index, or all lost
                "%d Redis Cluster slots had no marker (came back empty): index re-filled from MongoDB", lost_slots)
        return added

    def _repair_lock(self) -> RepairLock:
        """The lock every index repair holds, so that two processes never repair at once (identity.py)."""
        return RepairLock(self.redis, lock_key(self.config.key_prefix), lambda fn, *a: self._retry("redis", fn, *a),
                          self._repair_here)

    def store_identity(self, bump: bool = False) -> Identity:
        """This database's id and generation (identity.py); open_store raises the generation."""
        return self._retry("mongo", lambda: store_identity(self.db, bump))

    def new_generation(self) -> None:
        """Raise MongoDB's epoch, then record it with the index (after its repair: Redis never runs ahead)."""
        try:
            self.store_identity(bump=True)
            self._mark_owner(only_update=True)
        except StorageUnavailable as e:   # the next open records it; an older epoch in Redis is harmless
            log.info("store generation not recorded: %s", e)

    def _mark_owner(self, only_update: bool = False) -> None:
        """Record in Redis that the index is this store's, as of this generation."""
        self._retry("redis", self.redis.set, owner_key(self.config.key_prefix), self.store_identity().encode(),
                    xx=only_update)

    def _index_problem(self, stored: int) -> tuple[str, str] | None:
        """Why the Redis index cannot serve this store (`stored` pages in MongoDB) as it is: ("rebuild" |
        "empty" | "lost", what was found), or None. Redis is read before MongoDB's identity (identity.py)."""
        seen = Identity.decode(self._retry("redis", self.redis.get, owner_key(self.config.key_prefix)))
        indexed = self._retry("redis", self.index.count)
        mine = self.store_identity()
        if not self._retry("redis", self.index.layout_ok):
            return "rebuild", f"has an older layout or another k (this one: {self.index.layout_id})"
        if seen is None:
            return ("empty", "is empty") if indexed is None else ("rebuild", "recorded no store")
        if seen.store_id != mine.store_id:
            return "rebuild", f"belonged to another store (id {seen.store_id}, this one {mine.store_id})"
        if seen.epoch > mine.epoch:
            return "rebuild", (f"is newer than MongoDB (generation {seen.epoch}, MongoDB's {mine.epoch}: "
                               "MongoDB restored from an older backup?)")
        if indexed is not None and indexed > stored + LOST_ALLOWANCE + stored // 100:
            return "lost", f"counts {indexed:,} pages, MongoDB holds {stored:,}"
        return None

    def _drop_lost(self, keep: set[str]) -> int:
        """Take out entries whose page MongoDB lacks and that are older than phantom_seconds, their sketch
        names and exact entries too. An entry younger than that (or of an id whose age is unknown) may be a
        page another crawler is saving right now: it stays whole, its exact entry included. On one server an
        exact entry does not say whose hash it is, so while such pages wait nothing is dropped (a later open
        does it; a page meeting a lost one's entries replaces it meanwhile, see DedupStore._is_phantom).
        Nothing while spooled saves wait (as _is_phantom: a page in the spool is not lost)."""
        if self.spool.count():
            return 0
        # exact entries read BEFORE the pages: each one read belongs to a page that `entries` then lists
        # (or that left the index meanwhile); one written later is never taken out
        exact = self._retry("redis", lambda: list(self.index.exact_entries()))
        entries = self._retry("redis", lambda: list(self.index.entries()))
        held: set[str] = set()
        held_exact: set[tuple[str, bytes]] = set()

        def held_ones() -> None:   # one scan of MongoDB's ids: far cheaper than $in lookups of each
            held.clear()
            held_exact.clear()
            pages = self.pages.find({}, {"_id": 1, "content_hash": 1}).batch_size(5000)
            displaced = self.duplicates.find({"replaced_by_earlier": True}, {"_id": 0, "content_hash": 1})
            for d in itertools.chain(pages, displaced.batch_size(5000)):   # a displaced page's entries stay
                if "_id" in d:
                    held.add(str(d["_id"]))
                if isinstance(d.get("content_hash"), str):
                    try:
                        held_exact.add(exact_key_parts(d["content_hash"]))
                    except ValueError:
                        pass

        self._retry("mongo", held_ones)
        unsaved = {p: h for p, h in entries if p not in held}
        lost = {p: h for p, h in unsaved.items()
                if p not in keep and (id_age_seconds(p) or -1) >= self.config.phantom_seconds}
        saving = set(unsaved) - set(lost)
        if self.index.cluster:   # an exact entry names its page: those of pages lost (or gone already) go
            live = held | saving
            stale = [e for e in exact if e[:2] not in held_exact and decode_id(e[2]) not in live]
        elif not saving:         # one server: every exact entry MongoDB lacks is a lost page's
            stale = [e for e in exact if e[:2] not in held_exact]
        elif lost:               # ... but here any may be a page being saved: all stay for now
            log.info("the Redis index keeps %d entries of pages MongoDB lacks for now: %d pages may be being "
                     "saved, and an exact entry does not say whose it is", len(lost), len(saving))
            return 0
        else:
            stale = []
        for page_id, simhash in lost.items():
            self._retry("redis", self.index.remove, page_id, None, simhash)
        self._retry("redis", self.sketches.drop_names, set(lost))
        self._retry("redis", self.index.drop_exact, stale)
        self._retry("redis", self.index.add_many, (p for p in self._indexable() if p[0] not in keep))
        return len(lost)

    def _repair_simhash(self, exclude: set[str], stored: int, force: bool = False) -> int:
        """Re-add pages MongoDB has (`stored` of them) and the exact/SimHash tables lost (all of them: `force`)."""
        indexed = self._retry("redis", self.index.count)
        stored -= len(exclude)
        if stored <= 0 or (indexed is not None and indexed >= stored and not force):
            return 0
        t = time.monotonic()
        self._retry("redis", self.index.add_many, (p for p in self._indexable() if p[0] not in exclude))
        log.warning("Redis exact/SimHash index had %s pages, MongoDB %s: re-added in %.2f s",
                    indexed or 0, stored, time.monotonic() - t)
        return max(0, stored - (indexed or 0))

    def _repair_sketches(self, exclude: set[str], force: bool = False) -> int:
        """Re-claim kept pages' passage sketches when Redis has none (or lost some: `force`) and MongoDB has
        some, but not those of the pages the spool replay decides (`exclude`, as for SimHash: a replayed page
        that met one took it for an original, and a copy published earlier displaced it: seed 1129). Re-claimed
        pages that kept theirs hold two records each (later claims still come after both)."""
        if not force and self._retry("redis", self.sketches.claimed_any):
            return 0
        if self._retry("mongo", self.pages.find_one, {"sketch": {"$type": "array"}}, {"_id": 1}) is None:
            return 0
        t = time.monotonic()
        n = self._reclaim_sketches(exclude)
        log.warning("Redis had no passage sketches: re-claimed %d pages' sketches in %.2f s", n, time.monotonic() - t)
        return n

    def _repair_seeds(self) -> int:
        """Re-index the registered works whose seeds Redis lacks (infringement matching needs them)."""
        from storage.sources import SourceLibrary

        missing = self.sources.unindexed()
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
        sources = self._retry("mongo", self.db.sources.count_documents, {})
        with_sketch = self._retry("mongo", self.pages.count_documents, {"sketch": {"$type": "array"}})
        return {
            "simhash": {"mongo": self._index_size(),
                        "redis": self._retry("redis", self.index.count) or 0},
            "sketches": {"mongo": with_sketch, "redis": with_sketch if self._retry("redis", self.sketches.claimed_any)
                         else 0},
            "seeds": {"mongo": sources, "redis": sources - len(self.sources.unindexed())},
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
            counts["matches"] += self._retry("mongo", self.db.matches.delete_many,
                                             {"suspect_url": {"$in": [d["url"] for d in batch]}}).deleted_count
            gone = [str(i) for i in ids]   # displacements to or of a purged page: a re-crawl decides afresh
            self._retry("mongo", self.demotions.delete_many, {"$or": [{"_id": {"$in": gone}}, {"by": {"$in": gone}}]})
            if not deleted:
                break
        counts["duplicates"] += self._retry("mongo", self.duplicates.delete_many, q).deleted_count
        extra = [{"site": site}] if site else []
        extra += [{"suspect_url": url}] if url else []
        if extra:
            counts["matches"] += self._retry("mongo", self.db.matches.delete_many, {"$or": extra}).deleted_count
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
            out["counts"] = {n: count_all(self.db[n], self.count_is_exact) for n in COLLECTIONS}
            out["counts"]["undecided"] = self.pages.count_documents({"undecided": True})   # waiting for a replay
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
        log = getattr(self, "evidence", None)   # the Store's part (a bare maintenance store has none)
        try:
            out["evidence"] = log.stamp_status().summary() if log is not None else None
        except (StorageUnavailable, PyMongoError) as e:
            out["evidence"] = f"unreadable ({type(e).__name__}: {e})"
        return out

    def replay_spool(self) -> dict[str, int]:
        """Replay spooled writes and dedup decisions (storage/replay.py)."""
        return replay.replay_spool(self)

    def adopt_undecided(self) -> list[dict]:
        """Checks to replay for pages kept undecided past adopt_undecided_seconds (storage/replay.py)."""
        return replay.adopt_undecided(self)
