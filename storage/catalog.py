"""Sources (`store.sources`): the rights holder's registered works in MongoDB (collection `sources`) and the
Redis seed index the copy matcher looks them up in (matching itself: storage/sources.py)."""
from __future__ import annotations

from .connection import Connection
from .documents import check_keys, check_text, fit_bson, out
from .errors import BadDocument
from .redis_index import RedisSeedIndex
from .schema import now


class Sources:
    """Add, list, read and remove registered works."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages, spool


    def add(self, source_id: str, title: str, text: str, author: str | None = None,
                   url: str | None = None, segments: list | None = None) -> bool:
        """Register a work; False if it is already there with the same text (True when added or changed)."""
        if not source_id or not isinstance(source_id, str):
            raise BadDocument("a source needs a non-empty string id")
        doc = {"_id": source_id, "title": title, "author": author, "url": url, "text": text,
               "segments": segments, "chars": len(text or "")}
        check_text(doc, ("title", "author", "url", "text"))
        check_keys(doc)
        old = self.conn._retry("mongo", self.conn.db.sources.find_one, {"_id": source_id}, {"text": 1})
        if old is not None and old.get("text") == text:
            return False
        doc["added"] = now()
        self.conn._retry("mongo", self.conn.db.sources.replace_one, {"_id": source_id}, fit_bson(doc), upsert=True)
        return True

    def all(self) -> list[dict]:
        """Every registered work without its text (id, title, author, url, chars, added)."""
        cur = self.conn.db.sources.find({}, {"text": 0, "segments": 0}).sort("_id", 1)
        return [out(d) for d in self.conn._retry("mongo", list, cur)]

    def get(self, source_id: str) -> dict | None:
        """One registered work with its text, or None."""
        return out(self.conn._retry("mongo", self.conn.db.sources.find_one, {"_id": source_id}))

    def remove(self, source_id: str) -> bool:
        """Forget a work and its segments' seeds in the Redis seed index; True if it existed."""
        doc = self.conn._retry("mongo", self.conn.db.sources.find_one, {"_id": source_id}, {"segments": 1})
        index = self.seed_index()
        for seg_id in [source_id] + [s["id"] for s in (doc or {}).get("segments") or []]:
            self.conn._retry("redis", index.remove, seg_id)
        res = self.conn._retry("mongo", self.conn.db.sources.delete_one, {"_id": source_id})
        return res.deleted_count > 0

    def unindexed(self) -> list[str]:
        """Registered works with a segment whose seeds are not in Redis (a lost or new, empty Redis)."""
        works = self.conn._retry("mongo", list, self.conn.db.sources.find({}, {"segments.id": 1}))
        segs = [(str(w["_id"]), s["id"]) for w in works for s in (w.get("segments") or [])]
        present = self.conn._retry("redis", self.seed_index().indexed, [seg for _, seg in segs])
        return sorted({work for (work, _), ok in zip(segs, present) if not ok})

    def seed_index(self) -> RedisSeedIndex:
        """The copy matcher's seed index (SeedIndex protocol) in Redis."""
        return RedisSeedIndex(self.conn.redis, self.conn.config.key_prefix)
