"""Connection: the MongoDB and Redis clients, retry with backoff, restarts of dead embedded servers,
and the local spool that takes writes when a server stays away."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Self, TypeVar

import pymongo
import redis
from pymongo.errors import AutoReconnect, ConnectionFailure, PyMongoError
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import ClusterDownError, MasterDownError
from redis.retry import Retry

from . import servers as srv
from .config import StoreConfig
from .errors import StorageUnavailable
from .redis_index import RedisSketchIndex, SimHashIndex, _glob, delete_matching
from .schema import ensure_indexes
from .spool import Spool

log = logging.getLogger(__name__)
T = TypeVar("T")

REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, ClusterDownError, MasterDownError)
MONGO_ERRORS = (AutoReconnect, ConnectionFailure)
SERVER_ERRORS = MONGO_ERRORS + REDIS_ERRORS  # a server went away (callers outside storage/ catch these)


def server_of(exc: BaseException) -> str:
    """Which server a connection error came from, as people name it."""
    return "MongoDB" if isinstance(exc, MONGO_ERRORS) else "Redis"
HINTS = {
    "redis": "run `python -m storage status`; embedded servers restart on the next open, or check REDIS_URL "
             "(start Redis with `redis-server`)",
    "mongo": "run `python -m storage status`; embedded servers restart on the next open, or check MONGO_URI "
             "(start MongoDB with `mongod`)",
}
SERVER_NAMES = {"redis": "Redis", "mongo": "MongoDB"}
COLLECTIONS = ("pages", "duplicates", "sources", "matches", "runs")


def redis_client(url: str, **kwargs: Any) -> redis.Redis | RedisCluster:
    """A client for url: a RedisCluster when the server says ``cluster_enabled:1``, else a plain Redis.

    No new URL scheme: any node of a cluster will do. A server that does not answer yet gets a plain
    client (the retry policy reports it); `Connection.reconnect` asks again.
    """
    client = redis.Redis.from_url(url, **kwargs)
    try:
        enabled = client.info("cluster").get("cluster_enabled") == 1
    except redis.ResponseError:   # INFO renamed or disabled: a plain server as far as we can tell
        return client
    except redis.RedisError:
        return client
    if not enabled:
        return client
    client.close()
    return RedisCluster.from_url(url, **kwargs)


def is_cluster_url(url: str, timeout: float = 2.0) -> bool:
    """True when the Redis at url is a cluster node (False too when it does not answer)."""
    probe = redis_client(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))
    try:
        return isinstance(probe, RedisCluster)
    finally:
        probe.close()


class Connection:
    """Both clients, their collections and indexes, and the retry/restart/spool policy every write uses."""

    def __init__(self, config: StoreConfig, mongo_uri: str, redis_url: str, embedded: dict[str, bool]) -> None:
        self.config = config
        self.mongo_uri = mongo_uri
        self.redis_url = redis_url
        self.embedded = embedded
        self.spool = Spool(config.spool_dir)
        self.spooled = 0
        self._restart_lock = threading.Lock()
        self._down_until: dict[str, float] = {}
        self._repairing = False
        self._connect_mongo()
        self._connect_redis()

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
        self.outcomes = self.db["outcomes"]

    def _connect_redis(self) -> None:
        t = self.config.timeout_seconds
        # no retries inside redis-py: _retry below owns the policy (bounded, with backoff, then spool)
        self.redis = redis_client(self.redis_url, socket_timeout=max(t, 5.0), socket_connect_timeout=t,
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
        if self._repairing:
            return
        self._repairing = True
        try:
            self.reconcile_index()
        except StorageUnavailable as e:
            log.warning("index repair after a Redis outage failed: %s", e)
        finally:
            self._repairing = False

    def reconcile_index(self, exclude: set[str] | None = None) -> int:
        """Re-add what the index lost (storage/maintenance.py; nothing to do on a bare connection)."""
        return 0

    def _spool(self, op: str, **args: Any) -> None:
        """Keep a write that could not reach its server, to be replayed by the next open_store."""
        try:
            path = self.spool.append(op, **args)
        except OSError as e:
            raise StorageUnavailable("local spool", f"cannot write {self.spool.dir}: {e}",
                                     "free disk space or make var/ writable") from e
        self.spooled += 1
        log.warning("%s: server unavailable, spooled to %s", op, path)

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
        """Create the MongoDB indexes every reader and writer relies on (idempotent; storage/schema.py)."""
        ensure_indexes(self.db)

    def counts(self) -> dict[str, int]:
        """Documents in each collection."""
        return {name: self._retry("mongo", self.db[name].count_documents, {}) for name in COLLECTIONS}

    def drop_all(self) -> None:
        """Delete this store's database and every Redis key under its prefix (tests, resets)."""
        self.mongo.drop_database(self.config.db_name)
        delete_matching(self.redis, [_glob(self.config.key_prefix) + "*"])

    def close(self) -> None:
        """Close both connections (the embedded servers keep running for other processes)."""
        self.mongo.close()
        self.redis.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
