"""Connection: the MongoDB and Redis clients, retry with backoff, restarts of dead embedded servers,
and the local spool that takes writes when a server stays away."""
from __future__ import annotations

import functools
import logging
import math
import re
import shutil
import socket
import itertools
import threading
import time
import uuid
from pathlib import Path
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Self, TypeVar
from urllib.parse import urlsplit

import pymongo
import redis
from pymongo.errors import AutoReconnect, ConnectionFailure, PyMongoError
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import (AskError, ClusterDownError, MasterDownError, MovedError, ReadOnlyError,
                              ResponseError, TryAgainError)
from redis.retry import Retry

from . import servers as srv
from .config import StoreConfig
from .errors import StorageUnavailable
from .identity import lost_key, owner_key
from .inflight import InFlight
from .redis_index import RedisSketchIndex, SimHashIndex, delete_matching, glob_escape
from .schema import count_all, counts_exactly, ensure_indexes
from .spool import Spool

log = logging.getLogger(__name__)
T = TypeVar("T")

REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError, ClusterDownError, MasterDownError,
                ReadOnlyError, TryAgainError, MovedError, AskError)
MONGO_ERRORS = (AutoReconnect, ConnectionFailure)
SERVER_ERRORS = MONGO_ERRORS + REDIS_ERRORS  # a server went away (callers outside storage/ catch these)
# replies of a Redis that is there but cannot serve now: retried like a connection failure
REDIS_TRANSIENT_REPLIES = ("MISCONF", "READONLY", "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN",
                           "MOVED", "ASK", "NOREPLICAS", "OOM")
# the error code opens the reply, or follows a '-' when a Lua script relays it ("Error running script ...: -READONLY")
_TRANSIENT_REPLY = re.compile(r"(?:^|\s-)(?:%s)\b" % "|".join(REDIS_TRANSIENT_REPLIES))
RESTART_EVERY = 1.0  # seconds between restart attempts of a dead embedded server, for as long as it is down
SETTLE = 2.0         # an outage is only over (and reported) after this long without a new failure
LOSS_WINDOW_MAX = 3600   # seconds: a Redis data loss is recorded at most this long (phantom_seconds may be inf)


def is_transient(name: str, exc: BaseException) -> bool:
    """True when exc means the server is away or cannot serve for now (retry, restart, spool), not a bug."""
    if name != "redis":
        return isinstance(exc, MONGO_ERRORS)
    if isinstance(exc, REDIS_ERRORS):
        return True
    return isinstance(exc, ResponseError) and _TRANSIENT_REPLY.search(str(exc)) is not None


@dataclass
class Outage:
    """One server's outage, from the first failed call until it answers again (and, for Redis, the
    index is whole again): what it cost is said in one WARNING line when it ends."""

    server: str
    since: float
    error: str
    restarts: int = 0
    last_restart: float = 0.0
    gave_up: bool = False       # a call ran out of retry budget: later calls try once and spool
    spooled: int = 0
    repairer: int | None = None  # thread re-filling the index (its calls go straight through)
    recovered: float = 0.0      # when it answered again (the outage settles SETTLE s later)
    refills: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """The one line a person reads: how long, what was done, what it cost."""
        took = (self.recovered or time.monotonic()) - self.since
        error = self.error.splitlines()[0].split(" (configured timeouts")[0][:160]
        parts = [f"{SERVER_NAMES[self.server]} was unavailable for {took:.1f} s ({error})",
                 f"restarted {self.restarts} time(s)" if self.restarts else "not restarted by us"]
        parts += list(dict.fromkeys(self.refills))
        what = "checks" if self.server == "redis" else "writes"
        parts.append(f"{self.spooled} {what} spooled for replay" if self.spooled else f"no {what} spooled")
        return "; ".join(parts)


def _port_open(uri: str, timeout: float = 0.5) -> bool:
    """True unless the URI's first host refuses a TCP connection (unparsable URIs: True, let the ping say)."""
    try:
        if uri.startswith("mongodb"):
            host, port = pymongo.uri_parser.parse_uri(uri)["nodelist"][0]
        else:
            parsed = urlsplit(uri)
            host, port = parsed.hostname, parsed.port or 6379
        if not host or str(host).startswith("/"):
            return True
    except (ValueError, IndexError, pymongo.errors.PyMongoError):
        return True
    try:
        socket.create_connection((host, port), timeout).close()
        return True
    except OSError:
        return False


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


def spool_dir(config: StoreConfig) -> Path:
    """This database's spool (one directory per database: a replay never writes into another one)."""
    return config.spool_dir / config.db_name


class Connection:
    """Both clients, their collections and indexes, and the retry/restart/spool policy every write uses."""

    def __init__(self, config: StoreConfig, mongo_uri: str, redis_url: str, embedded: dict[str, bool]) -> None:
        self.config = config
        self.mongo_uri = mongo_uri
        self.redis_url = redis_url
        self.embedded = embedded
        self.spool = Spool(spool_dir(config))
        self.spooled = 0
        # a data-loss token per check: this process's random id and a count (one urandom call per process,
        # not per check: 1,800 a 1,000-page crawl cost the store thread ~0.25 s)
        self._token_id, self._token_seq = uuid.uuid4().hex[:16], itertools.count()
        self._restart_lock = threading.Lock()
        self._repair_here = threading.local()   # whether this thread holds the index repair lock (identity.RepairLock)
        self._recover_locks = {"mongo": threading.RLock(), "redis": threading.RLock()}
        self.outages: dict[str, Outage] = {}    # down: calls go through _recover
        self._settling: dict[str, Outage] = {}  # answering again; reported once SETTLE s pass without a failure
        self.inflight = InFlight()   # pages indexed whose save may still be on its way (refilled after a loss)
        self._old_clients: list[pymongo.MongoClient] = []
        self.undecided: set[str] = set()   # pages kept with their dedup decision in the spool: not re-indexed
        # the Redis data loss (its token under `lost`) this process has re-filled its pages in flight for
        self.loss_seen: bytes = b""
        self.replaying = False   # the spool replay is deciding (its decisions are final: storage/maintenance.py)
        self._connect_mongo()
        self._connect_redis()

    def _connect_mongo(self) -> None:
        ms = int(self.config.timeout_seconds * 1000)
        # The embedded server (SecantusDB) scans its whole retryable-write registry on every retryable write
        # (~5 ms of CPU a write once it holds 10,000): there _retry alone retries, and every write is
        # idempotent under it (ids fixed before the first attempt, insert_once, guarded $push/$inc).
        self.mongo = pymongo.MongoClient(self.mongo_uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms,
                                         socketTimeoutMS=max(ms * 15, 30000), tz_aware=True, appname="zhdedup",
                                         journal=True,  # j:true: an acknowledged write survives a SIGKILL
                                         retryWrites=self.retry_writes)
        self.db = self.mongo[self.config.db_name]
        self.pages = self.db["pages"]
        self.duplicates = self.db["duplicates"]
        self.outcomes = self.db["outcomes"]
        self.demotions = self.db["demotions"]  # page id -> the earlier-published copy that took its place

    @property
    def retry_writes(self) -> bool:
        """The driver's retryable writes: as configured, else off for the embedded server only."""
        if self.config.retry_writes is not None:
            return self.config.retry_writes
        return not self.embedded.get("mongo")

    def _connect_redis(self) -> None:
        t = self.config.timeout_seconds
        # no retries inside redis-py: _retry below owns the policy (bounded, with backoff, then spool)
        self.redis = redis_client(self.redis_url, socket_timeout=max(t, 5.0), socket_connect_timeout=t,
                                  retry=Retry(NoBackoff(), 0))
        self.index = SimHashIndex(self.redis, self.config.key_prefix, self.config.simhash_k)
        self.sketches = RedisSketchIndex(self.redis, self.config.key_prefix)

    def _restart(self, name: str) -> bool:
        """Restart a dead embedded server (same data, same port when free) and reconnect to it."""
        if not (self.embedded.get(name) and self.config.auto_restart):
            return False
        try:
            with self._restart_lock:
                if srv.info(self.config.var_path, name).running:
                    return False   # alive (busy, loading) or already restarted by another process
                info = srv.ensure(self.config.var_path, name)
        except (StorageUnavailable, OSError) as e:
            log.info("could not restart the embedded %s yet: %s", SERVER_NAMES[name], e)
            return False
        if name == "redis" and info.uri != self.redis_url:
            # same client object (scripts and seed indexes hold it), new connection pool
            old = self.redis.connection_pool
            kwargs = {k: v for k, v in old.connection_kwargs.items() if k not in ("host", "port", "db")}
            self.redis.connection_pool = redis.ConnectionPool.from_url(info.uri, **kwargs)
            old.disconnect()
            self.redis_url = info.uri
        elif name == "mongo" and info.uri != self.mongo_uri:
            # its old port was taken: reconnect (collections are looked up on self at every call)
            log.info("the embedded MongoDB came back on another port; reconnecting")
            self._old_clients.append(self.mongo)   # other threads may still hold it: closed with the store
            self.mongo_uri = info.uri
            self._connect_mongo()
        return True

    def _retry(self, name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call fn through the server's outage state machine.

        up: call; a transient error opens an outage. down: restart the embedded server (at most every
        RESTART_EVERY s, for as long as it is down), probe it; once it answers, Redis's index is re-filled
        (pages in flight included) before any other call runs, and one WARNING line closes the outage.
        A call retries with backoff for retry_seconds, then raises StorageUnavailable (the caller spools);
        after a give-up, calls try once only, so a long outage spools quickly instead of stalling.
        """
        start = time.monotonic()
        deadline: float | None = None
        delay = 0.05
        self._settle(name, start)
        while True:
            outage = self.outages.get(name)
            if outage is not None and outage.repairer == threading.get_ident():
                return fn(*args, **kwargs)   # the re-fill's own calls
            if outage is not None:
                self._recover(name)
            if name not in self.outages:
                try:
                    return fn(*args, **kwargs)
                except Exception as e:
                    if not is_transient(name, e):
                        raise
                    outage = self._begin(name, e)
            outage = self.outages.get(name)
            if outage is None:
                continue
            if deadline is None:
                deadline = start + (0.0 if outage.gave_up else self.config.retry_seconds)
            left = deadline - time.monotonic()
            if left <= 0:
                outage.gave_up = True
                raise StorageUnavailable(SERVER_NAMES[name], outage.error, HINTS[name])
            time.sleep(min(delay, left))
            delay = min(delay * 2, 1.0)

    def _begin(self, name: str, exc: BaseException) -> Outage:
        """Open an outage (once, whichever thread sees the first failure)."""
        with self._recover_locks[name]:
            outage = self.outages.get(name)
            if outage is None:
                outage = self._settling.pop(name, None)   # failing again soon after: the same outage
                if outage is None:
                    outage = Outage(name, time.monotonic(), f"{type(exc).__name__}: {exc}")
                    log.info("%s not answering (%s); retrying", SERVER_NAMES[name], outage.error)
                outage.recovered = 0.0
                self.outages[name] = outage
            return outage

    def _settle(self, name: str, now: float) -> None:
        """Report an outage once its server has answered for SETTLE s (one WARNING line)."""
        outage = self._settling.get(name)
        if outage is not None and now - outage.recovered >= SETTLE:
            with self._recover_locks[name]:
                if self._settling.get(name) is outage:
                    del self._settling[name]
                    log.warning(outage.summary())

    def _recover(self, name: str, force: bool = False) -> None:
        """One step of recovery (one thread at a time): restart if due, probe, re-fill, close the outage."""
        with self._recover_locks[name]:
            outage = self.outages.get(name)
            if outage is None:
                return
            now = time.monotonic()
            if force or now - outage.last_restart >= RESTART_EVERY:
                outage.last_restart = now
                outage.restarts += self._restart(name)
            if not self._answers(name):
                return
            if name == "redis":
                outage.repairer = threading.get_ident()
                try:
                    outage.refills.append(self._after_redis_outage())
                except Exception as e:  # noqa: BLE001 - still down or failing: stay in the outage
                    if not is_transient("redis", e) and not isinstance(e, StorageUnavailable):
                        raise
                    outage.error = f"{type(e).__name__}: {e}"
                    return
                finally:
                    outage.repairer = None
            del self.outages[name]
            outage.recovered = time.monotonic()
            self._settling[name] = outage

    def _answers(self, name: str) -> bool:
        """One ping, no retries (a refused TCP connection answers at once, without a server-selection wait)."""
        if not _port_open(self.redis_url if name == "redis" else self.mongo_uri):
            return False
        try:
            if name == "redis":
                self.redis.ping()
            else:
                self.mongo.admin.command("ping")
            return True
        except Exception:  # noqa: BLE001 - any failure means "not yet"
            return False

    def _after_redis_outage(self) -> str:
        """Redis is back: it may have lost data (AOF everysec, a wiped disk, a configured server restarted
        empty); re-fill every index kind from MongoDB and this process's pages in flight, before any
        other call. Returns what was done, for the outage's line.

        An index without its owner key lost its data: the loss is recorded under `lost` for the loss window
        (phantom_seconds, the time a page in flight takes to be saved at most), so that every other process
        re-fills its own pages in flight on its next check or save (they may never have seen Redis fail),
        and a page found new meanwhile is decided again by the spool replay (`loss_guard`)."""
        prefix = self.config.key_prefix
        if self._retry("redis", self.redis.get, owner_key(prefix)) is None or \
                self._retry("redis", self.index.lost_slots):   # one server / a cluster node came back empty
            self._retry("redis", self.redis.set, lost_key(prefix), uuid.uuid4().hex, nx=True, ex=self._loss_window())
        token = self._retry("redis", self.redis.get, lost_key(prefix)) or b""
        lost = self.index.count() is None
        added = self.reconcile_index(exclude=self.still_undecided(self.undecided))   # the spool replay decides those
        inflight = self._refill_inflight()   # AOF everysec loses the last second: pages not saved yet too
        self.loss_seen = token
        if not (lost or added or inflight):
            return "index intact"
        return f"data lost: index re-filled ({added} pages from MongoDB, {inflight} in flight)"

    def _loss_window(self) -> int:
        """Seconds a Redis data loss is recorded: decisions meanwhile are provisional (pages in flight elsewhere)."""
        return max(1, math.ceil(min(self.config.phantom_seconds, LOSS_WINDOW_MAX)))

    def loss_guard(self) -> tuple[Any, ...]:
        """The check script's data-loss guard (redis_index/lua/check_and_insert.lua: no extra round trip, the
        script reads two more keys; on a cluster every script reads its slot's marker, storage/sentinels.py)."""
        prefix = self.config.key_prefix
        return (owner_key(prefix), lost_key(prefix), self.loss_seen, self._loss_window(),
                f"{self._token_id}-{next(self._token_seq):x}")

    def _after_index_loss(self, token: bytes | None) -> None:
        """A check or a save met a Redis data loss this process has not re-filled for (it may never have seen
        Redis fail): re-fill the index from MongoDB and this process's pages in flight, once per loss."""
        with self._recover_locks["redis"]:
            if token is not None and token == self.loss_seen and \
                    self._retry("redis", self.redis.exists, owner_key(self.config.key_prefix)) and \
                    not self._retry("redis", self.index.lost_slots):
                return   # another thread of this process did it
            t = time.monotonic()
            what = self._after_redis_outage()
            log.warning("the Redis index lost its data (Redis restarted empty?); %s in %.2f s; pages found new "
                        "in the next %d s are decided again by the spool replay", what, time.monotonic() - t,
                        self._loss_window())

    def _refill_inflight(self) -> int:
        """Re-add the pages this process indexed but MongoDB may not hold yet (storage/dedup.py)."""
        return 0

    def reconcile_index(self, exclude: set[str] | None = None) -> int:
        """Re-add what the index lost (storage/maintenance.py; nothing to do on a bare connection)."""
        return 0

    def _spool(self, op: str, **args: Any) -> None:
        """Keep a write that could not reach its server, to be replayed by the next open_store."""
        if op in ("index", "recheck") and self.config.dedup_params is not None:
            args.setdefault("params", asdict(self.config.dedup_params))   # the replay decides as this crawl would
        try:
            path = self.spool.append(op, **args)
        except OSError as e:
            raise StorageUnavailable("local spool", f"cannot write {self.spool.dir}: {e}",
                                     "free disk space or make var/ writable") from e
        self.spooled += 1
        if op in ("index", "recheck"):
            self.undecided.add(str(args.get("page_id")))
        outage = self._outage_of(op)
        if outage is not None:
            outage.spooled += 1   # counted in the outage's one WARNING line
            log.debug("%s: server unavailable, spooled to %s", op, path)
        elif op == "recheck":     # a lookup that could not be answered yet, not an outage
            log.info("page %s: dedup decision deferred (%s), spooled to %s", args.get("page_id"), args.get("why"), path)
        elif op == "join_pages":  # a page another crawler has in flight, not an outage
            log.warning("pages %s and %s tell one story but cannot be joined yet (the page that stands has not "
                        "landed); spooled to %s", args.get("displacer"), args.get("original"), path)
        else:
            log.warning("%s: server unavailable, spooled to %s", op, path)

    def _outage_of(self, op: str) -> Outage | None:
        """The outage that made op spool (a recheck may wait for either server)."""
        servers = ("mongo", "redis") if op == "recheck" else ("redis",) if op == "index" else ("mongo",)
        for server in servers:
            outage = self.outages.get(server) or self._settling.get(server)
            if outage is not None:
                return outage
        return None

    def ping(self) -> None:
        """Raise StorageUnavailable unless both servers answer: a configured server gets one attempt (a wrong
        URI is said at once); an embedded one that died while starting is restarted like any outage."""
        checks = (("mongo", "MongoDB", self.mongo_uri, lambda: self.mongo.admin.command("ping")),
                  ("redis", "Redis", self.redis_url, self.redis.ping))
        for name, label, uri, call in checks:
            try:
                self._retry(name, call) if self.embedded.get(name) else call()
            except (PyMongoError, redis.RedisError, StorageUnavailable) as e:
                raise StorageUnavailable(label, f"no answer from {uri} ({type(e).__name__})", HINTS[name]) from None

    def wait_for(self, name: str) -> None:
        """One ping of "redis" or "mongo" through the retry/restart path every store call takes (a dead
        embedded server is started again); StorageUnavailable after retry_seconds. For code with its own
        client of the same server (the distributed crawl queue, crawler/distributed/)."""
        self._retry(name, self.redis.ping if name == "redis" else lambda: self.mongo.admin.command("ping"))

    def ensure_indexes(self) -> None:
        """Create the MongoDB indexes every reader and writer relies on (idempotent; storage/schema.py)."""
        ensure_indexes(self.db)

    def counts(self) -> dict[str, int]:
        """Documents in each collection."""
        return {name: self.count(name) for name in COLLECTIONS}

    def count(self, name: str) -> int:
        """Documents in one collection, exactly (schema.count_all: none decoded on SecantusDB)."""
        return self._retry("mongo", lambda: count_all(self.db[name], self.count_is_exact))

    @functools.cached_property
    def count_is_exact(self) -> bool:
        """Whether this MongoDB's `count` of a collection is exact (schema.counts_exactly), asked once; read
        inside a retried call or a status's try (a server away raises PyMongoError, and nothing is cached)."""
        return counts_exactly(self.mongo)

    def drop_all(self) -> None:
        """Delete this store's database, every Redis key under its prefix and its spool (tests, resets)."""
        self.mongo.drop_database(self.config.db_name)
        delete_matching(self.redis, [glob_escape(self.config.key_prefix) + "*"])
        shutil.rmtree(spool_dir(self.config), ignore_errors=True)  # writes for the dropped database

    def close(self) -> None:
        """Close both connections (the embedded servers keep running for other processes); an outage
        still open is said in its one WARNING line."""
        for name in list(self.outages):
            try:
                self._recover(name, force=True)   # leave an embedded server running after the run
            except Exception as e:  # noqa: BLE001 - closing: say it, never raise
                log.info("last recovery attempt of %s failed: %s", SERVER_NAMES[name], e)
        for outage in list(self.outages.values()):
            log.warning("%s; still unavailable when the store closed", outage.summary())
        for outage in list(self._settling.values()):
            log.warning(outage.summary())
        self.outages.clear()
        self._settling.clear()
        for client in self._old_clients:
            client.close()
        self.mongo.close()
        self.redis.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
