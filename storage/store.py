"""Store: the one object through which pipelines and the admin read and write MongoDB and Redis.

MongoDB is the truth (pages, duplicates, sources, matches, runs); Redis is an index that can be
rebuilt from it (`rebuild_index`). Operations that fail because a server went away are retried with
backoff for `retry_seconds`; writes that still fail go to the local spool and are replayed when a
store next opens (`replay_spool`).
"""
from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import time
from typing import Any, Callable, Iterable, TypeVar

import bson
import pymongo
import redis
from bson import ObjectId
from redis.backoff import NoBackoff
from redis.retry import Retry
from pymongo.errors import AutoReconnect, ConnectionFailure, DuplicateKeyError, PyMongoError

from . import servers as srv
from .config import StoreConfig
from .errors import BadDocument, StorageUnavailable
from .redis_index import DedupResult, RedisSeedIndex, RedisSketchIndex, SimHashIndex, delete_matching, _glob
from .spool import Spool

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_BSON = 16 * 1024 * 1024
SAFE_BSON = MAX_BSON - 64 * 1024
INT64_MAX = 2**63 - 1
REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
MONGO_ERRORS = (AutoReconnect, ConnectionFailure)
HINTS = {
    "redis": "run `python -m storage status`; embedded servers restart on the next open, or check REDIS_URL "
             "(start Redis with `redis-server`)",
    "mongo": "run `python -m storage status`; embedded servers restart on the next open, or check MONGO_URI "
             "(start MongoDB with `mongod`)",
}
SERVER_NAMES = {"redis": "Redis", "mongo": "MongoDB"}
MATCH_STATUSES = {"confirm": "confirmed", "dismiss": "dismissed", "license": "licensed", "reopen": "new"}
MATCH_SORTS = {"score", "created", "updated", "site", "status", "source_id", "suspect_url"}


def now() -> dt.datetime:
    """Timezone-aware UTC now (what every timestamp field holds)."""
    return dt.datetime.now(dt.timezone.utc)


def to_signed64(v: int) -> int:
    """Unsigned 64-bit SimHash -> signed int64 for MongoDB."""
    return v - 2**64 if v >= 2**63 else v


def to_unsigned64(v: int) -> int:
    """Signed int64 from MongoDB -> unsigned 64-bit SimHash."""
    return v + 2**64 if v < 0 else v


def to_oid(page_id: Any) -> Any:
    """A 24-hex id string as ObjectId; any other id unchanged."""
    if isinstance(page_id, str) and ObjectId.is_valid(page_id) and len(page_id) == 24:
        return ObjectId(page_id)
    return page_id


def _out(doc: dict | None) -> dict | None:
    """A stored document as callers see it: string ids, unsigned SimHash, ints for DNA."""
    if doc is None:
        return None
    doc = dict(doc)
    doc["_id"] = str(doc["_id"])
    doc["id"] = doc["_id"]
    if isinstance(doc.get("simhash"), int):
        doc["simhash"] = to_unsigned64(doc["simhash"])
    if isinstance(doc.get("sketch"), list):
        doc["sketch"] = [to_unsigned64(v) for v in doc["sketch"]]
    if isinstance(doc.get("dna"), list):
        doc["dna"] = [int(x) if isinstance(x, str) else x for x in doc["dna"]]
    return doc


def _check_keys(doc: Any, path: str = "") -> None:
    """Refuse keys MongoDB cannot store safely (non-str, $-prefixed, NUL)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if not isinstance(key, str):
                raise BadDocument(f"field name {key!r} at {path or 'top level'} is not a string")
            if key.startswith("$") or "\0" in key or (key and "." in key):
                raise BadDocument(f"field name {key!r} at {path or 'top level'} contains '$', '.' or NUL")
            _check_keys(value, f"{path}.{key}" if path else key)
    elif isinstance(doc, (list, tuple)):
        for i, value in enumerate(doc):
            _check_keys(value, f"{path}[{i}]")


def _check_text(doc: dict, fields: Iterable[str]) -> None:
    """Text must be valid Unicode that encodes as UTF-8 (no lone surrogates, no undecodable bytes)."""
    for f in fields:
        v = doc.get(f)
        if isinstance(v, bytes):
            try:
                doc[f] = v.decode("utf-8")
            except UnicodeDecodeError as e:
                raise BadDocument(f"field {f!r} is not valid UTF-8 (byte {e.start}); decode it first") from None
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as e:
                raise BadDocument(f"field {f!r} is not valid UTF-8 text (lone surrogate at character "
                                  f"{e.start}); nothing was stored") from None


def fit_bson(doc: dict, field: str = "text") -> dict:
    """Keep a document under MongoDB's 16 MB limit by truncating one text field, saying why."""
    try:
        size = len(bson.encode(doc))
    except bson.errors.InvalidDocument as e:
        raise BadDocument(f"document cannot be stored: {e}") from None
    if size <= SAFE_BSON:
        return doc
    text = doc.get(field)
    if not isinstance(text, str):
        raise BadDocument(f"document is {size} bytes, over MongoDB's 16 MB limit; nothing was stored")
    raw = text.encode("utf-8")
    keep = len(raw) - (size - SAFE_BSON) - 1024
    if keep <= 0:
        raise BadDocument(f"document is {size} bytes without its {field!r}; over MongoDB's 16 MB limit")
    doc = dict(doc)
    doc[field] = raw[:keep].decode("utf-8", "ignore")
    doc["truncated"] = {"field": field, "original_chars": len(text), "kept_chars": len(doc[field]),
                        "reason": f"document was {size} bytes, over MongoDB's 16 MB limit"}
    log.warning("page %s: %s truncated from %d to %d characters (16 MB limit)", doc.get("url"), field,
                len(text), len(doc[field]))
    return doc


class Store:
    """Every read and write of pages, duplicates, sources, matches and runs, plus the Redis index."""

    def __init__(self, config: StoreConfig, mongo_uri: str, redis_url: str, embedded: dict[str, bool]) -> None:
        self.config = config
        self.mongo_uri = mongo_uri
        self.redis_url = redis_url
        self.embedded = embedded
        self.spool = Spool(config.spool_dir)
        self.spooled = 0
        self._restart_lock = threading.Lock()
        self._down_until: dict[str, float] = {}
        self._connect_mongo()
        self._connect_redis()

    # ---- connections -------------------------------------------------------------------------
    def _connect_mongo(self) -> None:
        ms = int(self.config.timeout_seconds * 1000)
        self.mongo = pymongo.MongoClient(self.mongo_uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms,
                                         socketTimeoutMS=max(ms * 15, 30000), tz_aware=True, appname="zhdedup",
                                         journal=True)  # j:true: an acknowledged write survives a SIGKILL
        self.db = self.mongo[self.config.db_name]
        self.pages = self.db["pages"]
        self.duplicates = self.db["duplicates"]
        self.sources = self.db["sources"]
        self.matches = self.db["matches"]
        self.runs = self.db["runs"]

    def _connect_redis(self) -> None:
        t = self.config.timeout_seconds
        # no retries inside redis-py: _retry below owns the policy (bounded, with backoff, then spool)
        self.redis = redis.Redis.from_url(self.redis_url, socket_timeout=max(t, 5.0), socket_connect_timeout=t,
                                          retry=Retry(NoBackoff(), 0))
        self.index = SimHashIndex(self.redis, self.config.key_prefix, self.config.simhash_k)
        self.sketches = RedisSketchIndex(self.redis, self.config.key_prefix)

    def _restart(self, name: str) -> None:
        """Restart a dead embedded server (same data, same port when free) and reconnect to it."""
        if not (self.embedded.get(name) and self.config.auto_restart):
            return
        try:
            with self._restart_lock:
                info = srv.ensure(self.config.var_path, name)
        except (StorageUnavailable, OSError) as e:
            log.warning("could not restart the embedded %s: %s", SERVER_NAMES[name], e)
            return
        if name == "redis" and info.uri != self.redis_url:
            # same client object (scripts and seed indexes hold it), new connection pool
            old = self.redis.connection_pool
            kwargs = {k: v for k, v in old.connection_kwargs.items() if k not in ("host", "port", "db")}
            self.redis.connection_pool = redis.ConnectionPool.from_url(info.uri, **kwargs)
            old.disconnect()
            self.redis_url = info.uri
        elif name == "mongo" and info.uri != self.mongo_uri:
            log.warning("the embedded MongoDB came back on another port (%s); open the store again", info.uri)

    def _retry(self, name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call fn, retrying connection failures with backoff for retry_seconds.

        After a give-up, calls in the next retry_seconds try once only (the server is known to be
        down), so a long outage spools items quickly instead of stalling the crawl on each one.
        """
        errors = REDIS_ERRORS if name == "redis" else MONGO_ERRORS
        start = time.monotonic()
        budget = 0.0 if start < self._down_until.get(name, 0.0) else self.config.retry_seconds
        deadline = start + budget
        delay, attempts = 0.05, 0
        while True:
            attempts += 1
            try:
                if name == "redis" and (attempts > 1 or name in self._down_until):
                    self._after_redis_outage()   # before the retried call: it may be a dedup check
                result = fn(*args, **kwargs)
                self._down_until.pop(name, None)
                return result
            except errors as e:
                left = deadline - time.monotonic()
                if left <= 0 and (attempts >= 2 or not budget):
                    self._down_until[name] = time.monotonic() + self.config.retry_seconds
                    raise StorageUnavailable(SERVER_NAMES[name], f"{type(e).__name__}: {e}", HINTS[name]) from e
                log.info("%s not answering (%s); retrying", SERVER_NAMES[name], e)
                self._restart(name)
                time.sleep(min(delay, max(left, 0.01)))
                delay = min(delay * 2, 1.0)

    def _after_redis_outage(self) -> None:
        """Redis failed and we retry: it may have come back with lost data (AOF everysec, a wiped disk,
        a configured server restarted empty); re-add what MongoDB has and the index lacks first."""
        if getattr(self, "_repairing", False):
            return
        self._repairing = True
        try:
            self.reconcile_index()
        except StorageUnavailable as e:
            log.warning("index repair after a Redis outage failed: %s", e)
        finally:
            self._repairing = False

    def ping(self) -> None:
        """Raise StorageUnavailable unless both servers answer (one attempt each, no retries)."""
        try:
            self.mongo.admin.command("ping")
        except PyMongoError as e:
            raise StorageUnavailable("MongoDB", f"no answer from {self.mongo_uri} ({type(e).__name__})",
                                     HINTS["mongo"]) from None
        try:
            self.redis.ping()
        except redis.RedisError as e:
            raise StorageUnavailable("Redis", f"no answer from {self.redis_url} ({type(e).__name__})",
                                     HINTS["redis"]) from None

    def ensure_indexes(self) -> None:
        """Create the MongoDB indexes every reader and writer relies on (idempotent)."""
        asc, desc = pymongo.ASCENDING, pymongo.DESCENDING
        self.pages.create_index("url", unique=True)
        for f in ("canonical_url", "site", "content_hash", "fetched", "cluster_id", "run_id"):
            self.pages.create_index(f)
        self.duplicates.create_index("url", unique=True)
        for f in ("original_id", "site", "fetched"):
            self.duplicates.create_index(f)
        self.matches.create_index([("suspect_url", asc), ("source_id", asc)], unique=True)
        for f in ("status", "site", "source_id", "created"):
            self.matches.create_index(f)
        self.matches.create_index([("score", desc)])
        self.runs.create_index([("spider", asc), ("started", desc)])

    # ---- dedup ---------------------------------------------------------------------------------
    @staticmethod
    def new_page_id() -> str:
        """A fresh page id (ObjectId hex) to use for check_and_insert and then save_page."""
        return str(ObjectId())

    def check_and_insert(self, page_id: str, content_hash: str, simhash: int, k: int | None = None) -> DedupResult:
        """Atomically: exact duplicate? near duplicate within k bits? else index this page. One round trip."""
        k = self.config.simhash_k if k is None else k
        for _ in range(3):
            try:
                res = self._retry("redis", self.index.check, page_id, content_hash, simhash, k)
            except StorageUnavailable:
                self._spool("index", page_id=page_id, content_hash=content_hash, simhash=simhash, k=k)
                return DedupResult("new", spooled=True)
            if res.original_id == page_id:  # re-check of a page already indexed (resume, replay)
                return DedupResult("new")
            if res.kind == "exact" and res.original_id is None:
                return self._exact_owner(res, content_hash)
            if not (res.is_duplicate and self._is_phantom(res.original_id)):
                return res
            # the original was indexed by a crawler that died before saving it: this page takes its place
            log.warning("index entry %s has no page in MongoDB (crawler killed before saving?): replacing it",
                        res.original_id)
            self._retry("redis", self.index.evict, res.original_id, res.original_simhash,
                        content_hash if res.kind == "exact" else None)
        return res

    def claim_sketch(self, page_id: str, values: list[int], min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """Add a kept page's passage sketch; (its claim number, earlier-or-later pages sharing values).

        With Redis away the page is simply not compared by passages (logged): SimHash and the exact
        hash still ran, and the spool replays those.
        """
        try:
            return self._retry("redis", self.sketches.claim, page_id, values, min_shared)
        except StorageUnavailable:
            log.warning("Redis unavailable: page %s not checked for shared passages", page_id)
            return 0, []

    def forget_copy(self, page_id: str, content_hash: str, simhash: int, sketch: list[int]) -> None:
        """Undo a page's index entries after it turned out to be a copy (third dedup step)."""
        self._retry("redis", self.sketches.unclaim, page_id, sketch)
        self._retry("redis", self.index.remove, page_id, content_hash, simhash)

    def _is_phantom(self, page_id: str | None) -> bool:
        """True for an index entry older than phantom_seconds whose page MongoDB does not have."""
        if not page_id or not (ObjectId.is_valid(page_id) and len(page_id) == 24):
            return False
        age = (now() - ObjectId(page_id).generation_time).total_seconds()
        if age < self.config.phantom_seconds:
            return False  # its crawler may still be saving it
        try:
            return self.pages.find_one({"_id": ObjectId(page_id)}, {"_id": 1}) is None \
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

    def lookup(self, content_hash: str, simhash: int, k: int | None = None) -> DedupResult:
        """Like check_and_insert but never inserts (what would this page be?)."""
        k = self.config.simhash_k if k is None else k
        res = self._retry("redis", self.index.check, "", content_hash, simhash, k, False)
        return self._exact_owner(res, content_hash) if res.kind == "exact" and res.original_id is None else res

    # ---- pages and duplicates --------------------------------------------------------------------
    def _page_doc(self, doc: dict) -> dict:
        """Validate and convert a page for MongoDB (ids, signed SimHash, DNA, size)."""
        if not isinstance(doc, dict) or not doc.get("url"):
            raise BadDocument("a page needs a 'url'")
        d = {k: v for k, v in doc.items() if k != "id"}
        d["_id"] = to_oid(doc.get("_id") or doc.get("id") or str(ObjectId()))
        _check_keys({k: v for k, v in d.items() if k != "_id"})
        _check_text(d, ("url", "canonical_url", "site", "title", "text", "author", "spider"))
        if d.get("simhash") is not None:
            sh = int(d["simhash"])
            if not -(2**63) <= sh < 2**64:
                raise BadDocument(f"simhash {sh} is not a 64-bit value")
            d["simhash"] = to_signed64(sh) if sh >= 0 else sh
        if d.get("dna") is not None:
            d["dna"] = [int(x) if -(2**63) <= int(x) <= INT64_MAX else str(int(x)) for x in d["dna"]]
        if d.get("sketch") is not None:
            d["sketch"] = [to_signed64(int(v)) for v in d["sketch"]]
        d["fetched"] = Store._date(d["fetched"]) if d.get("fetched") else now()
        return fit_bson(d)

    def save_page(self, doc: dict) -> str:
        """Store a page (upsert by id); returns its id. Spooled if MongoDB stays away."""
        d = self._page_doc(doc)
        try:
            return self._retry("mongo", self._save_page, d)
        except StorageUnavailable:
            self._spool("save_page", doc=d)
            return str(d["_id"])

    def _save_page(self, d: dict) -> str:
        try:
            self.pages.replace_one({"_id": d["_id"]}, d, upsert=True)
            return str(d["_id"])
        except DuplicateKeyError:
            # Same URL stored under another id (a re-crawl): update that page, keep its id.
            old = self.pages.find_one({"url": d["url"]}, {"_id": 1, "content_hash": 1, "simhash": 1})
            if old is None:
                raise
            body = {k: v for k, v in d.items() if k != "_id"}
            self.pages.replace_one({"_id": old["_id"]}, body)
            if d.get("content_hash") and d.get("simhash") is not None:
                try:
                    self.index.remove(str(d["_id"]), d["content_hash"], to_unsigned64(d["simhash"]))
                except (redis.RedisError, ValueError):
                    pass
            return str(old["_id"])

    def get_page(self, page_id: str) -> dict | None:
        """One page by id (simhash unsigned again), or None."""
        return _out(self._retry("mongo", self.pages.find_one, {"_id": to_oid(page_id)}))

    def page_by_url(self, url: str) -> dict | None:
        """One page by URL, or None."""
        return _out(self._retry("mongo", self.pages.find_one, {"url": url}))

    def record_duplicate(self, doc: dict) -> None:
        """Remember that doc["url"] copies doc["original_id"] (method exact|near|passages, distance); upsert by url."""
        if not doc.get("url") or not doc.get("original_id"):
            raise BadDocument("a duplicate needs 'url' and 'original_id'")
        if doc.get("method", "near") not in ("exact", "near", "passages"):
            raise BadDocument(f"duplicate method must be exact, near or passages, not {doc.get('method')!r}")
        d = {k: v for k, v in doc.items() if k not in ("_id", "id")}
        _check_keys(d)
        _check_text(d, ("url", "original_url", "site", "title"))
        d["original_id"] = str(d["original_id"])
        d.setdefault("method", "near")
        d.setdefault("distance", 0)
        d["fetched"] = Store._date(d["fetched"]) if d.get("fetched") else now()
        d = fit_bson(d)
        try:
            self._retry("mongo", self.duplicates.update_one, {"url": d["url"]}, {"$set": d}, upsert=True)
        except StorageUnavailable:
            self._spool("record_duplicate", doc=d)

    def replace_original(self, old_id: str, new: dict, method: str, distance: int | None = None,
                         coverage: float | None = None) -> None:
        """A page found to copy `old_id` was published earlier: it becomes the original (Nutch's rule).

        The old page moves to `duplicates` (as a copy of the new one), its copies are re-pointed, its
        matches keep its text, and the Redis entries change owner. `new` holds the new page's id, url,
        content_hash, simhash and sketch; the caller then saves the new page as usual. Not atomic across
        crawlers: two crawlers promoting copies of one story at the same instant could both win.
        """
        old = self._retry("mongo", self.pages.find_one, {"_id": to_oid(old_id)})
        if old is None:
            return
        self.record_duplicate({"url": old["url"], "original_id": new["id"], "original_url": new["url"],
                               "method": method, "distance": distance, "coverage": coverage,
                               "site": old.get("site"), "title": old.get("title"), "fetched": old.get("fetched"),
                               "content_hash": old.get("content_hash"), "replaced_by_earlier": True})
        self._retry("mongo", self.duplicates.update_many, {"original_id": str(old["_id"])},
                    {"$set": {"original_id": new["id"], "original_url": new["url"]}})
        self._retry("mongo", self.matches.update_many, {"suspect_page_id": str(old["_id"])},
                    {"$set": {"suspect_text": (old.get("text") or "")[:200_000]}})
        self._retry("mongo", self.pages.delete_one, {"_id": old["_id"]})
        if isinstance(old.get("content_hash"), str) and isinstance(old.get("simhash"), int):
            self._retry("redis", self.index.remove, str(old["_id"]), old["content_hash"], to_unsigned64(old["simhash"]))
        if old.get("sketch"):
            self._retry("redis", self.sketches.unclaim, str(old["_id"]), [to_unsigned64(v) for v in old["sketch"]])
        self._retry("redis", self.index.check, new["id"], new["content_hash"], int(new["simhash"]),
                    self.config.simhash_k, True)
        if new.get("sketch"):
            self._retry("redis", self.sketches.claim, new["id"], new["sketch"], 10 ** 6)

    def duplicates_of(self, original_id: str) -> list[dict]:
        """Every recorded copy of one page (the cluster), oldest first."""
        cur = self.duplicates.find({"original_id": str(original_id)}).sort("fetched", 1)
        return [_out(d) for d in self._retry("mongo", list, cur)]

    # ---- runs -------------------------------------------------------------------------------------
    def start_run(self, spider: str) -> str:
        """Record the start of a crawl; returns the run id."""
        rid = ObjectId()
        doc = {"_id": rid, "spider": spider, "started": now(), "finished": None, "counts": {}}
        try:
            self._retry("mongo", self.runs.insert_one, doc)
        except StorageUnavailable:
            self._spool("start_run", doc=doc)
        return str(rid)

    def finish_run(self, run_id: str, counts: dict) -> None:
        """Record the end of a crawl and its counts."""
        upd = {"$set": {"finished": now(), "counts": dict(counts)}}
        try:
            self._retry("mongo", self.runs.update_one, {"_id": to_oid(run_id)}, upd, upsert=True)
        except StorageUnavailable:
            self._spool("finish_run", run_id=run_id, counts=dict(counts))

    def list_runs(self, limit: int = 50) -> list[dict]:
        """Most recent crawl runs first."""
        return [_out(d) for d in self._retry("mongo", list, self.runs.find().sort("started", -1).limit(limit))]

    # ---- sources ------------------------------------------------------------------------------------
    def add_source(self, source_id: str, title: str, text: str, author: str | None = None,
                   url: str | None = None, segments: list | None = None) -> bool:
        """Register a work; False if it is already there with the same text (True when added or changed)."""
        if not source_id or not isinstance(source_id, str):
            raise BadDocument("a source needs a non-empty string id")
        doc = {"_id": source_id, "title": title, "author": author, "url": url, "text": text,
               "segments": segments, "chars": len(text or "")}
        _check_text(doc, ("title", "author", "url", "text"))
        _check_keys(doc)
        old = self._retry("mongo", self.sources.find_one, {"_id": source_id}, {"text": 1})
        if old is not None and old.get("text") == text:
            return False
        doc["added"] = now()
        self._retry("mongo", self.sources.replace_one, {"_id": source_id}, fit_bson(doc), upsert=True)
        return True

    def list_sources(self) -> list[dict]:
        """Every registered work without its text (id, title, author, url, chars, added)."""
        cur = self.sources.find({}, {"text": 0, "segments": 0}).sort("_id", 1)
        return [_out(d) for d in self._retry("mongo", list, cur)]

    def get_source(self, source_id: str) -> dict | None:
        """One registered work with its text, or None."""
        return _out(self._retry("mongo", self.sources.find_one, {"_id": source_id}))

    def remove_source(self, source_id: str) -> bool:
        """Forget a work and its segments' seeds in the Redis seed index; True if it existed."""
        doc = self._retry("mongo", self.sources.find_one, {"_id": source_id}, {"segments": 1})
        index = self.seed_index()
        for seg_id in [source_id] + [s["id"] for s in (doc or {}).get("segments") or []]:
            self._retry("redis", index.remove, seg_id)
        res = self._retry("mongo", self.sources.delete_one, {"_id": source_id})
        return res.deleted_count > 0

    def is_licensed(self, source_id: str, site: str | None) -> bool:
        """Has a reviewer licensed this site for this source (admin: "license the whole site")?"""
        if not site:
            return False
        return self._retry("mongo", self.db.licenses.find_one, {"_id": f"{source_id}|{site}"}) is not None

    def seed_index(self) -> RedisSeedIndex:
        """The copy matcher's seed index (SeedIndex protocol) in Redis."""
        return RedisSeedIndex(self.redis, self.config.key_prefix)

    # ---- matches ---------------------------------------------------------------------------------------
    def upsert_match(self, doc: dict) -> str:
        """Insert or refresh a match keyed on (suspect_url, source_id); review status and history are kept."""
        if not doc.get("suspect_url") or not doc.get("source_id"):
            raise BadDocument("a match needs 'suspect_url' and 'source_id'")
        body = {k: v for k, v in doc.items()
                if k not in ("_id", "id", "status", "created", "history", "reviewer", "note", "reviewed")}
        _check_keys(body)
        body["updated"] = now()
        key = {"suspect_url": doc["suspect_url"], "source_id": doc["source_id"]}
        upd = {"$set": body, "$setOnInsert": {"status": "new", "created": body["updated"], "history": []}}
        try:
            res = self._retry("mongo", self.matches.find_one_and_update, key, upd, upsert=True,
                              projection={"_id": 1}, return_document=pymongo.ReturnDocument.AFTER)
            return str(res["_id"])
        except StorageUnavailable:
            self._spool("upsert_match", doc=dict(doc))
            return ""

    @staticmethod
    def _match_query(filters: dict | None) -> dict:
        f = dict(filters or {})
        q: dict[str, Any] = {}
        for key in ("status", "site", "source_id", "suspect_url"):
            v = f.get(key)
            if v not in (None, "", []):
                q[key] = {"$in": list(v)} if isinstance(v, (list, tuple, set)) else v
        score = {}
        if f.get("min_score") not in (None, ""):
            score["$gte"] = float(f["min_score"])
        if f.get("max_score") not in (None, ""):
            score["$lte"] = float(f["max_score"])
        if score:
            q["score"] = score
        created = {}
        if f.get("since"):
            created["$gte"] = f["since"]
        if f.get("until"):
            created["$lt"] = f["until"]
        if created:
            q["created"] = created
        if f.get("q"):
            rx = {"$regex": re.escape(str(f["q"])), "$options": "i"}
            q["$or"] = [{"suspect_url": rx}, {"title": rx}, {"source_title": rx}]
        return q

    def list_matches(self, filters: dict | None = None, sort: str = "-score", page: int = 1,
                     per_page: int = 50) -> dict:
        """One page of matches: {'items', 'total', 'page', 'per_page', 'pages'}.

        filters: status, site, source_id, suspect_url (value or list), min_score, max_score,
        since/until (datetimes on created), q (substring of url/title). sort: field, '-' for descending.
        """
        field = (sort or "-score").lstrip("-")
        if field not in MATCH_SORTS:
            raise ValueError(f"cannot sort matches by {field!r}; choose from {sorted(MATCH_SORTS)}")
        direction = -1 if (sort or "-").startswith("-") else 1
        page, per_page = max(1, int(page)), min(max(1, int(per_page)), 1000)
        q = self._match_query(filters)
        total = self._retry("mongo", self.matches.count_documents, q)
        cur = self.matches.find(q).sort([(field, direction), ("_id", 1)]).skip((page - 1) * per_page).limit(per_page)
        items = [_out(d) for d in self._retry("mongo", list, cur)]
        return {"items": items, "total": total, "page": page, "per_page": per_page,
                "pages": max(1, -(-total // per_page))}

    def get_match(self, match_id: str) -> dict | None:
        """One match by id, or None."""
        return _out(self._retry("mongo", self.matches.find_one, {"_id": to_oid(match_id)}))

    def review_match(self, match_id: str, action: str, reviewer: str, note: str | None = None) -> dict | None:
        """Confirm, dismiss or reopen a match; the decision is appended to its history. None if no such match."""
        if action not in MATCH_STATUSES:
            raise ValueError(f"review action must be one of {sorted(MATCH_STATUSES)}, not {action!r}")
        at = now()
        entry = {"action": action, "reviewer": reviewer, "note": note, "at": at}
        upd = {"$set": {"status": MATCH_STATUSES[action], "reviewer": reviewer, "note": note, "reviewed": at},
               "$push": {"history": entry}}
        res = self._retry("mongo", self.matches.find_one_and_update, {"_id": to_oid(match_id)}, upd,
                          return_document=pymongo.ReturnDocument.AFTER)
        return _out(res)

    # ---- maintenance ----------------------------------------------------------------------------------
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
        """Re-add kept pages' passage sketches from MongoDB, oldest first (claim order = page order)."""
        n = 0
        for d in self.pages.find({"sketch": {"$type": "array"}}, {"_id": 1, "sketch": 1}).sort("fetched", 1):
            self._retry("redis", self.sketches.claim, str(d["_id"]), [to_unsigned64(v) for v in d["sketch"]], 10 ** 6)
            n += 1
        return n

    def reconcile_index(self, exclude: set[str] | None = None) -> int:
        """Re-add pages MongoDB has but Redis lost (idempotent, nothing removed); returns pages re-added."""
        if not self._retry("redis", self.index.layout_ok):
            log.warning("the Redis index has an older layout: rebuilding it from MongoDB")
            self.rebuild_index()
        self._retry("redis", self.index.mark_layout)
        exclude = exclude or set()
        indexed = self._retry("redis", self.index.count)
        stored = self._retry("mongo", self.pages.count_documents, {}) - len(exclude)
        if stored <= 0 or (indexed is not None and indexed >= stored):
            return 0
        log.warning("Redis index has %s pages, MongoDB %s: re-adding from MongoDB", indexed, stored)
        self._retry("redis", self.index.add_many, (p for p in self._indexable() if p[0] not in exclude))
        if not self._retry("redis", self.redis.exists, f"{self.config.key_prefix}skseq"):
            self._reclaim_sketches()
        return stored - (indexed or 0)

    @staticmethod
    def _date(value: Any) -> dt.datetime:
        """A datetime (UTC when naive) from a datetime, a date or an ISO string; ValueError otherwise."""
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
        try:
            return Store._date(dt.datetime.fromisoformat(str(value)))
        except ValueError:
            raise ValueError(f"not a date: {value!r} (use YYYY-MM-DD)") from None

    def purge(self, site: str | None = None, url: str | None = None, before: Any = None) -> dict:
        """Remove pages (and their copies and matches) of a site, a URL, or fetched before a date, from both stores."""
        q: dict[str, Any] = {}
        if site:
            q["site"] = site
        if url:
            q["url"] = url
        if before is not None:
            q["fetched"] = {"$lt": self._date(before)}
        if not q:
            raise ValueError("purge needs site, url or before (refusing to delete everything)")
        counts = {"pages": 0, "duplicates": 0, "matches": 0}
        while True:  # in batches, so a purge of millions of pages never builds one huge query
            batch = self._retry("mongo", list, self.pages.find(q, {"_id": 1, "url": 1, "content_hash": 1,
                                                                   "simhash": 1, "sketch": 1}).limit(1000))
            if not batch:
                break
            for d in batch:
                if isinstance(d.get("content_hash"), str) and isinstance(d.get("simhash"), int):
                    self._retry("redis", self.index.remove, str(d["_id"]), d["content_hash"],
                                to_unsigned64(d["simhash"]))
                if d.get("sketch"):
                    self._retry("redis", self.sketches.unclaim, str(d["_id"]), [to_unsigned64(v) for v in d["sketch"]])
            ids = [d["_id"] for d in batch]
            deleted = self._retry("mongo", self.pages.delete_many, {"_id": {"$in": ids}}).deleted_count
            counts["pages"] += deleted
            counts["duplicates"] += self._retry("mongo", self.duplicates.delete_many,
                                                {"original_id": {"$in": [str(i) for i in ids]}}).deleted_count
            counts["matches"] += self._retry("mongo", self.matches.delete_many,
                                             {"suspect_url": {"$in": [d["url"] for d in batch]}}).deleted_count
            if not deleted:
                break
        counts["duplicates"] += self._retry("mongo", self.duplicates.delete_many, q).deleted_count
        extra = [{"site": site}] if site else []
        extra += [{"suspect_url": url}] if url else []
        if extra:
            counts["matches"] += self._retry("mongo", self.matches.delete_many, {"$or": extra}).deleted_count
        return counts

    def counts(self) -> dict[str, int]:
        """Documents in each collection."""
        return {name: self._retry("mongo", self.db[name].count_documents, {})
                for name in ("pages", "duplicates", "sources", "matches", "runs")}

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
            out["counts"] = {n: self.db[n].count_documents({}) for n in
                             ("pages", "duplicates", "sources", "matches", "runs")}
        except PyMongoError as e:
            out["counts"] = None
            out["mongo"]["error"] = str(e)
        try:
            out["index"] = {"pages": self.index.count() or 0,
                            "used_memory": self.redis.info("memory").get("used_memory")}
        except redis.RedisError:
            out["index"] = None
        out["spool"] = {"entries": self.spool.count(), "dir": str(self.spool.dir)}
        return out

    # ---- spool ---------------------------------------------------------------------------------------
    def _spool(self, op: str, **args: Any) -> None:
        try:
            path = self.spool.append(op, **args)
        except OSError as e:
            raise StorageUnavailable("local spool", f"cannot write {self.spool.dir}: {e}",
                                     "free disk space or make var/ writable") from e
        self.spooled += 1
        log.warning("%s: server unavailable, spooled to %s", op, path)

    def replay_spool(self) -> dict[str, int]:
        """Replay spooled writes (oldest first); entries that still fail are spooled again.

        Pages stored while Redis was away are left out of the index repair until their spooled
        check runs, so a copy seen during the outage is still found to be a copy.
        """
        stats = {"replayed": 0, "demoted": 0, "failed": 0}
        claimed = [c for c in (self.spool.claim(p) for p in self.spool.pending()) if c is not None]
        entries = [e for c in claimed for e in self.spool.entries(c)]
        pending_ids = {e["args"]["page_id"] for e in entries if e["op"] == "index"}
        try:
            self.reconcile_index(exclude=pending_ids)
        except StorageUnavailable as e:
            log.warning("index repair skipped: %s", e)
        demoted: dict[str, DedupResult] = {}
        for entry in entries:
            try:
                if self._replay_one(entry["op"], entry["args"], demoted, stats) is not False:
                    stats["replayed"] += 1
            except (StorageUnavailable, PyMongoError, redis.RedisError) as e:
                stats["failed"] += 1
                log.warning("replay of %s failed (%s); kept in the spool", entry["op"], e)
                self._spool(entry["op"], **entry["args"])
        for c in claimed:
            self.spool.done(c)
        if stats["replayed"] or stats["failed"]:
            log.warning("spool replay: %s", stats)
        return stats

    def _replay_one(self, op: str, a: dict, demoted: dict[str, DedupResult], stats: dict) -> bool | None:
        if op == "index":
            res = self.check_and_insert(a["page_id"], a["content_hash"], int(a["simhash"]), int(a["k"]))
            if res.spooled:  # Redis still away: check_and_insert has spooled it again
                stats["failed"] += 1
                return False
            if res.is_duplicate:
                demoted[a["page_id"]] = res
                page = self._retry("mongo", self.pages.find_one, {"_id": to_oid(a["page_id"])})
                if page is not None:
                    self._demote(page, res)
                    stats["demoted"] += 1
        elif op == "save_page":
            doc = a["doc"]
            res = demoted.get(str(doc["_id"]))
            if res is not None:
                self._demote(doc, res)
                stats["demoted"] += 1
            else:
                self._retry("mongo", self._save_page, doc)
        elif op == "record_duplicate":
            self._retry("mongo", self.duplicates.update_one, {"url": a["doc"]["url"]}, {"$set": a["doc"]}, upsert=True)
        elif op == "start_run":
            self._retry("mongo", self.runs.replace_one, {"_id": a["doc"]["_id"]}, a["doc"], upsert=True)
        elif op == "finish_run":
            self.finish_run(a["run_id"], a["counts"])
        elif op == "upsert_match":
            self.upsert_match(a["doc"])
        else:
            raise ValueError(f"unknown spool operation {op!r}")

    def _demote(self, page: dict, res: DedupResult) -> None:
        """A page stored as new while Redis was away turned out to be a copy: record it as a duplicate."""
        orig = self._retry("mongo", self.pages.find_one, {"_id": to_oid(res.original_id)}, {"url": 1})
        self._retry("mongo", self.duplicates.update_one, {"url": page["url"]}, {"$set": {
            "url": page["url"], "original_id": res.original_id, "original_url": orig and orig.get("url"),
            "method": res.kind, "distance": res.distance, "site": page.get("site"), "title": page.get("title"),
            "fetched": page.get("fetched") or now()}}, upsert=True)
        self._retry("mongo", self.pages.delete_one, {"_id": page["_id"]})

    # ---- lifecycle ------------------------------------------------------------------------------------
    def drop_all(self) -> None:
        """Delete this store's database and every Redis key under its prefix (tests, resets)."""
        self.mongo.drop_database(self.config.db_name)
        delete_matching(self.redis, [_glob(self.config.key_prefix) + "*"])

    def close(self) -> None:
        """Close both connections (the embedded servers keep running for other processes)."""
        self.mongo.close()
        self.redis.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def resolve_servers(config: StoreConfig) -> tuple[str, str, dict[str, bool]]:
    """URIs to use: configured ones, else the embedded servers under var/ (started if needed)."""
    embedded = {"mongo": not config.mongo_uri, "redis": not config.redis_url}
    redis_url = config.redis_url or srv.ensure(config.var_path, "redis").uri
    mongo_uri = config.mongo_uri or srv.ensure(config.var_path, "mongo").uri
    return mongo_uri, redis_url, embedded


def open_store(config: StoreConfig | None = None) -> Store:
    """Connect (starting embedded servers when no URIs are configured), create indexes, replay the spool."""
    config = config or StoreConfig.from_env()
    try:
        mongo_uri, redis_url, embedded = resolve_servers(config)
    except OSError as e:
        raise StorageUnavailable("embedded servers", f"cannot use {config.var_path}: {e}",
                                 "make var/ writable or set ZHDEDUP_VAR") from None
    store = Store(config, mongo_uri, redis_url, embedded)
    try:
        store.ping()
        store._retry("mongo", store.ensure_indexes)
        if config.replay_spool:
            store.replay_spool()   # repairs the index too
        else:
            store.reconcile_index()
    except Exception:
        store.close()
        raise
    return store
