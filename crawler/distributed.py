"""Distributed crawling: N `scrapy crawl` processes share one request queue and URL dupefilter in Redis.

Built on scrapy-redis 0.9.1 (its Scheduler, PriorityQueue and RFPDupeFilter) with a thin adapter for
Scrapy 2.13+/2.19 and for what a shared crawl needs (docs/scale-out.md says what and why):

- `FingerprintDupeFilter`: URL dedup with the crawler's REQUEST_FINGERPRINTER (tracking parameters
  removed), not scrapy-redis's own SHA1 of the raw URL.
- `ClaimingPriorityQueue`: enqueue is one Lua call (SADD to the dupefilter + ZADD to the queue, so a
  crash between the two cannot lose a URL); pop is one Lua call that also marks this worker busy
  and keeps the request as a lease (`inflight`) until crawler.resume.ResumeMiddleware says its page
  is finished AND crawler.outcomes says the page's outcome is written; leases of a worker whose alive
  mark expired (SIGKILL) go back to the queue (at-least-once fetching; a worker never takes back a
  request of its own, so one run records one outcome per URL).
- `DistributedScheduler`: closes the spider once the shared queue has stayed empty, with no worker
  busy in ANY process, for DISTRIBUTED_IDLE_CLOSE_SECONDS (scrapy-redis spiders idle forever). While
  Redis does not answer, a thread brings it back through the store's retry/restart path (a dead
  embedded Redis is started again); down for DISTRIBUTED_REDIS_OUTAGE_SECONDS, the crawl stops with
  one CRITICAL line (reason storage_unavailable, exit code 1), its leases left in Redis.
- JSON request serialization (`dumps`/`loads`): nothing from a shared Redis is ever unpickled.
- `DistributedAddon`: `ZHDEDUP_DISTRIBUTED=1` (setting or env) merges `distributed_settings(...)` on
  the store's Redis (embedded or REDIS_URL) and key prefix.

    python -m crawler.distributed status news     # queue length, seen URLs, busy workers
    python -m crawler.distributed reset news      # forget a finished crawl (queue + seen URLs)
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import socket
import sys
import time
import uuid
from collections import OrderedDict
from typing import Any

from redis.exceptions import RedisClusterException, RedisError
from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http import Request
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task, threads

from crawler import settings as defaults   # every setting's default, declared once
from crawler.outcomes import recorder_of
from fingerprint.cliparser import OneLineParser
from pipelines.errors import CrawlCannotStart

ENABLE_ENV = "ZHDEDUP_DISTRIBUTED"
POP_SKIP_MAX = 100   # requests of our own popped back in one next_request call at most
logger = logging.getLogger(__name__)

# --- key layout ----------------------------------------------------------------------------------


def crawl_keys(key_prefix: str, job: str) -> dict[str, str]:
    """Redis keys of one distributed crawl; the {job} hash tag keeps them on one Redis Cluster shard."""
    if "%" in key_prefix or "%" in job.replace("%(spider)s", ""):
        raise ValueError(f"key prefix / job must not contain '%' (scrapy-redis formats keys): {key_prefix!r} {job!r}")
    if any(c in job.replace("%(spider)s", "") for c in "{}"):
        raise ValueError(f"job name must not contain braces (used as the Redis Cluster hash tag): {job!r}")
    base = f"{key_prefix}crawl:{{{job}}}"
    return {"requests": f"{base}:requests", "dupefilter": f"{base}:seen", "workers": f"{base}:workers",
            "inflight": f"{base}:inflight", "alive": f"{base}:alive", "failed": f"{base}:failed"}


def distributed_settings(redis_url: str, key_prefix: str, job: str = "%(spider)s",
                         idle_close_seconds: float = defaults.DISTRIBUTED_IDLE_CLOSE_SECONDS) -> dict[str, Any]:
    """Scrapy settings that make this process one worker of a shared crawl (merge them, or use the addon)."""
    if not redis_url:
        raise ValueError("distributed mode needs a Redis URL (the store's: embedded or REDIS_URL)")
    keys = crawl_keys(key_prefix, job)
    # short timeouts: Redis calls run in the reactor thread, a hung server must not freeze the crawl
    params: dict[str, Any] = {"socket_timeout": 5, "socket_connect_timeout": 2, "retry_on_timeout": True}
    if _is_cluster(redis_url):  # every key of a crawl carries the {job} hash tag: one slot, scripts work
        params["redis_cls"] = "redis.cluster.RedisCluster"
    return {
        "SCHEDULER": "crawler.distributed.DistributedScheduler",
        "DUPEFILTER_CLASS": "crawler.distributed.FingerprintDupeFilter",
        "SCHEDULER_QUEUE_CLASS": "crawler.distributed.ClaimingPriorityQueue",
        "SCHEDULER_SERIALIZER": "crawler.distributed",       # this module's dumps/loads: JSON, never pickle
        "SCHEDULER_PERSIST": True,          # one process finishing must not flush the queue of the others
        "SCHEDULER_FLUSH_ON_START": False,  # a late joiner must not wipe a running crawl
        "SCHEDULER_QUEUE_KEY": keys["requests"],
        "SCHEDULER_DUPEFILTER_KEY": keys["dupefilter"],
        "DISTRIBUTED_WORKERS_KEY": keys["workers"],
        "DISTRIBUTED_INFLIGHT_KEY": keys["inflight"],   # requests popped and not finished (leases)
        "DISTRIBUTED_ALIVE_KEY": keys["alive"],         # worker -> expiry, refreshed busy or idle
        "DISTRIBUTED_FAILED_KEY": keys["failed"],       # pages that failed in a pipeline: queued by the next run
        "DISTRIBUTED_IDLE_CLOSE_SECONDS": idle_close_seconds,
        "REDIS_URL": redis_url,
        "REDIS_PARAMS": params,
    }


def _is_cluster(redis_url: str) -> bool:
    """The store's Redis is a Redis Cluster (asked from the server, as the store does)."""
    from storage.connection import is_cluster_url

    return is_cluster_url(redis_url)


def store_redis(overrides: dict[str, Any] | None = None) -> tuple[str, str]:
    """(redis_url, key_prefix) of the store: REDIS_URL when set, else the embedded server (started if needed)."""
    from storage import StoreConfig
    from storage import servers as srv

    config = StoreConfig.from_env(**(overrides or {}))
    url = config.redis_url or srv.ensure(config.var_path, "redis").uri
    return url, config.key_prefix


def enabled(settings: Any) -> bool:
    """Distributed mode is on: setting ZHDEDUP_DISTRIBUTED or env ZHDEDUP_DISTRIBUTED=1."""
    env = os.environ.get(ENABLE_ENV, "").strip().lower()
    return settings.getbool("ZHDEDUP_DISTRIBUTED") or env in ("1", "true", "yes", "on")


class DistributedAddon:
    """Scrapy add-on: with distributed mode on, point scheduler and dupefilter at the store's Redis."""

    def update_settings(self, settings: Any) -> None:
        """Merge distributed_settings() at add-on priority (command-line -s values still win)."""
        if not enabled(settings):
            return
        overrides = dict(settings.getdict("ZHDEDUP_STORE"))
        url, prefix = store_redis(overrides)
        url = settings.get("REDIS_URL") or url
        job = settings.get("DISTRIBUTED_JOB") or os.environ.get("ZHDEDUP_CRAWL_JOB") or "%(spider)s"
        idle = settings.getfloat("DISTRIBUTED_IDLE_CLOSE_SECONDS", defaults.DISTRIBUTED_IDLE_CLOSE_SECONDS)
        for name, value in distributed_settings(url, prefix, job, idle).items():
            settings.set(name, value, priority="addon")


# --- request serialization (SCHEDULER_SERIALIZER = "crawler.distributed") -------------------------


def _encode(obj: Any, path: str) -> Any:
    """JSON-safe form of a request dict: bytes and bytes-keyed dicts (headers) tagged."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, bytes):
        return {"$b": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, (list, tuple)):
        return [_encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj) and "$b" not in obj and "$d" not in obj:
            return {k: _encode(v, f"{path}.{k}") for k, v in obj.items()}
        return {"$d": [[_encode(k, path), _encode(v, f"{path}.{k!r}")] for k, v in obj.items()]}
    raise TypeError(f"request field {path} has a {type(obj).__name__}, which cannot go through the shared "
                    "Redis queue; keep meta/cb_kwargs to str, numbers, bytes, lists and dicts")


def _decode(obj: Any) -> Any:
    """Inverse of _encode."""
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if isinstance(obj, dict):
        if set(obj) == {"$b"}:
            return base64.b64decode(obj["$b"])
        if set(obj) == {"$d"}:
            return {_decode(k): _decode(v) for k, v in obj["$d"]}
        return {k: _decode(v) for k, v in obj.items()}
    return obj


def dumps(obj: dict) -> bytes:
    """Serialize a Request.to_dict() for the shared queue (JSON: readable, and safe to load)."""
    return json.dumps(_encode(obj, "request"), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def loads(data: bytes) -> dict:
    """Deserialize a queued request dict; a corrupt entry raises ValueError naming the problem."""
    try:
        return _decode(json.loads(data))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"corrupt entry in the shared request queue ({exc}): {data[:80]!r}") from None


# --- dupefilter and queue ------------------------------------------------------------------------


class FingerprintDupeFilter(RFPDupeFilter):
    """scrapy-redis RFPDupeFilter using the crawler's REQUEST_FINGERPRINTER (canonical URL, no tracking)."""

    fingerprinter: Any = None

    @classmethod
    def from_spider(cls, spider: Any) -> "FingerprintDupeFilter":
        """Key from SCHEDULER_DUPEFILTER_KEY; fingerprints from crawler.request_fingerprinter."""
        df = super().from_spider(spider)
        df.fingerprinter = spider.crawler.request_fingerprinter
        return df

    def request_fingerprint(self, request: Request) -> str:
        """Hex of the project fingerprint (scrapy-redis's own ignores REQUEST_FINGERPRINTER_CLASS)."""
        if self.fingerprinter is None:
            return super().request_fingerprint(request)
        return self.fingerprinter.fingerprint(request).hex()


PUSH_UNSEEN = """
if ARGV[4] == '0' and redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
"""
POP_CLAIM = """
local r = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #r == 0 then return false end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(ARGV[2]), ARGV[1])
if #KEYS >= 3 then redis.call('ZADD', KEYS[3], r[2], ARGV[1] .. '\\n' .. r[1]) end
return r[1]
"""
# Leases (KEYS: inflight, alive, queue; ARGV: this worker, '1' to drop its own leases, '1' to move
# nothing back). A lease is "<worker>\n<queued entry>" scored with the entry's priority. Leases of a
# worker whose alive mark expired (killed) go back to the queue with their priority, unless ARGV[3]
# holds them (right after an outage every mark may have expired: the others get one TTL to refresh
# theirs); returns {moved back, others' leases left}.
RECLAIM = """
local t = tonumber(redis.call('TIME')[1])
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local moved, left = 0, 0
for i = 1, #all, 2 do
  local m = all[i]
  local cut = string.find(m, '\\n', 1, true)
  local w = string.sub(m, 1, cut - 1)
  if w == ARGV[1] then
    if ARGV[2] == '1' then redis.call('ZREM', KEYS[1], m) end
  else
    local alive = redis.call('ZSCORE', KEYS[2], w)
    if ((not alive) or tonumber(alive) < t) and ARGV[3] ~= '1' then
      redis.call('ZADD', KEYS[3], all[i + 1], string.sub(m, cut + 1))
      redis.call('ZREM', KEYS[1], m)
      moved = moved + 1
    else
      left = left + 1
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (t - 86400))
return {moved, left}
"""
# A page that failed in a pipeline (KEYS: inflight, failed; ARGV: its lease): its queued entry is kept
# aside with its priority, not fetched again in this run (no loop on a page that always fails).
FAIL_LEASE = """
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then return 0 end
local cut = string.find(ARGV[1], '\\n', 1, true)
redis.call('ZADD', KEYS[2], s, string.sub(ARGV[1], cut + 1))
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
"""
# The entries kept aside go back to the queue when a worker starts (KEYS: failed, queue); returns how many.
MOVE_ALL = """
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #all, 2 do redis.call('ZADD', KEYS[2], all[i + 1], all[i]) end
redis.call('DEL', KEYS[1])
return #all / 2
"""
LEASE = "zhdedup_lease"   # request.meta key: this worker's token for the lease of a popped request
BEAT = """
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) + tonumber(ARGV[2]), ARGV[1])
return 1
"""
IDLE = """
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. t[1])
return {redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[1])}
"""


class ClaimingPriorityQueue(PriorityQueue):
    """scrapy-redis PriorityQueue whose pop also marks the worker busy, and with an atomic push-if-unseen."""

    worker = "?"
    workers_key = ""
    inflight_key = ""
    ttl = defaults.DISTRIBUTED_WORKER_TTL
    last_raw: bytes | None = None

    def __init__(self, server: Any, spider: Any, key: str, serializer: Any = None) -> None:
        super().__init__(server, spider, key, serializer)
        self._push_unseen = server.register_script(PUSH_UNSEEN)
        self._pop_claim = server.register_script(POP_CLAIM)

    def push_unseen(self, request: Request, fingerprint: str | None, seen_key: str) -> bool:
        """Queue the request unless its fingerprint was seen (one round trip); None = dont_filter."""
        dont_filter = "1" if fingerprint is None else "0"
        args = [fingerprint or "", -request.priority, self._encode_request(request), dont_filter]
        return bool(self._push_unseen(keys=[seen_key, self.key], args=args))

    def pop(self, timeout: int = 0) -> Request | None:
        """Highest-priority request, claimed by this worker (busy marker) in the same round trip."""
        if not self.workers_key:
            return super().pop(timeout)
        keys = [self.key, self.workers_key] + ([self.inflight_key] if self.inflight_key else [])
        data = self._pop_claim(keys=keys, args=[self.worker, int(self.ttl)])
        self.last_raw = data
        return self._decode_request(data) if data else None


# --- scheduler -----------------------------------------------------------------------------------

# what a Redis client raises while it cannot reach the queue's server; a Redis Cluster client that reaches no
# node as it is made raises RedisClusterException, which is no RedisError
UNREACHABLE = (RedisError, RedisClusterException)


def until_redis_answers(make: Any, limit: float, may_retry: Any = lambda: True) -> Any:
    """make(), tried again while Redis refuses and may_retry() allows, for up to `limit` seconds (negative:
    forever): a Redis Cluster client asks a node for the slot map as it is made, and a node away just then
    (a wipe, a restart) is an outage to wait out, not a crash. The last error goes to the caller."""
    start, delay = time.monotonic(), 0.1
    while True:
        try:
            return make()
        except UNREACHABLE:
            if not may_retry() or 0 <= limit < time.monotonic() - start:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


class DistributedScheduler(Scheduler):
    """scrapy-redis Scheduler that closes the spider when the whole shared crawl is done.

    A worker is "busy" (a member of the workers sorted set, score = expiry on the Redis clock) from
    opening, and from every pop, until its engine reports idle. It closes after the shared queue has
    been empty and no worker busy for DISTRIBUTED_IDLE_CLOSE_SECONDS (negative: never, like
    scrapy-redis). A crashed worker's mark expires after DISTRIBUTED_WORKER_TTL seconds.

    A popped request stays leased in Redis until its page is finished and the page's outcome is written
    (crawler.outcomes.OutcomeRecorder.when_durable). While Redis does not answer, requests found wait in
    a local backlog and a thread brings Redis back through the store's retry/restart path; after
    DISTRIBUTED_REDIS_OUTAGE_SECONDS (negative: never) the crawl stops with one CRITICAL line.
    """

    crawler: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> "DistributedScheduler":
        """Build on scrapy-redis's constructor, then read the idle/heartbeat settings and hook spider_idle."""
        s = crawler.settings
        limit = s.getfloat("DISTRIBUTED_REDIS_OUTAGE_SECONDS", defaults.DISTRIBUTED_REDIS_OUTAGE_SECONDS)
        try:   # a Redis Cluster client reads the slot map as it is made (invariant seed 1407: a node restarting)
            sched = until_redis_answers(lambda: super(DistributedScheduler, cls).from_crawler(crawler), limit)
        except UNREACHABLE as exc:
            from storage.errors import mask_credentials

            raise CrawlCannotStart(f"Redis (distributed crawl queue at {mask_credentials(s.get('REDIS_URL') or '')}) "
                                   f"unavailable for {limit:.0f} s at start ({type(exc).__name__}: {exc}): start it "
                                   "(python -m storage start), fix REDIS_URL, or run without ZHDEDUP_DISTRIBUTED") from None
        sched.crawler = crawler
        sched.idle_close = s.getfloat("DISTRIBUTED_IDLE_CLOSE_SECONDS", defaults.DISTRIBUTED_IDLE_CLOSE_SECONDS)
        sched.poll = max(0.05, s.getfloat("DISTRIBUTED_POLL_SECONDS", defaults.DISTRIBUTED_POLL_SECONDS))
        sched.ttl = max(2.0, s.getfloat("DISTRIBUTED_WORKER_TTL", defaults.DISTRIBUTED_WORKER_TTL))
        sched.outage_limit = s.getfloat("DISTRIBUTED_REDIS_OUTAGE_SECONDS", defaults.DISTRIBUTED_REDIS_OUTAGE_SECONDS)
        sched.workers_key = s.get("DISTRIBUTED_WORKERS_KEY") or ""
        sched.inflight_key = s.get("DISTRIBUTED_INFLIGHT_KEY") or ""
        sched.alive_key = s.get("DISTRIBUTED_ALIVE_KEY") or ""
        sched.failed_key = s.get("DISTRIBUTED_FAILED_KEY") or ""
        sched.leases: dict[str, bytes] = {}      # token -> lease member, for requests this worker popped
        sched.finishing: dict[str, bytes] = {}   # done, waiting for their outcomes to be written
        sched.unacked: list[bytes] = []          # finished leases not yet removed (Redis was away)
        sched.popped: OrderedDict[bytes, None] = OrderedDict()   # digests of entries popped in this run
        sched.last_alive = 0.0
        sched.alive_marked = False   # our alive mark was written once: finding it gone = Redis lost its data
        sched.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        sched.idle_since, sched.last_state = None, None
        sched.busy = True
        sched.last_claim = 0.0
        sched.loop = None
        sched.round_trips = 0
        sched.seen_cache: OrderedDict[str, None] = OrderedDict()
        sched.seen_cache_size = s.getint("DISTRIBUTED_SEEN_CACHE", defaults.DISTRIBUTED_SEEN_CACHE)
        sched.backlog: list[Request] = []   # requests that could not reach Redis yet: pushed on the next tick
        sched.outage_since: float | None = None   # Redis failing since (monotonic); None: it answers
        sched.outage_error = ""
        sched.probing = False      # a thread is bringing Redis back
        sched.shares_store: bool | None = None   # the queue is on the store's embedded Redis (None: not known yet)
        sched.hold_until = 0.0     # after an outage, others' expired marks are not trusted until then
        sched.gave_up = False
        crawler.signals.connect(sched.spider_idle, signal=signals.spider_idle)
        return sched

    @property
    def redis_down(self) -> bool:
        """Redis failed and has not answered since."""
        return self.outage_since is not None

    def _key(self, template: str) -> str:
        return template % {"spider": self.spider.name}

    def _open_clients(self, spider: Any) -> None:
        """scrapy-redis's open; its only Redis call is the last one (the queue's length), but a Redis Cluster
        client asks a node for the slot map as it is made: a node away then (a wipe, a restart) is waited for
        like any outage, up to DISTRIBUTED_REDIS_OUTAGE_SECONDS, not a crash (invariant seed 1387)."""
        return until_redis_answers(lambda: super(DistributedScheduler, self).open(spider), self.outage_limit,
                                   lambda: getattr(self, "df", None) is None)

    def open(self, spider: Any) -> None:
        """Open queue and dupefilter, register this worker as busy, start the idle poll / heartbeat. Redis
        gone meanwhile (it answered in from_crawler): an outage like any later one, not a crash."""
        try:
            self._open_clients(spider)
        except UNREACHABLE as exc:
            if getattr(self, "df", None) is None:
                raise CrawlCannotStart(f"Redis (distributed crawl queue at {self._host()}) unavailable for "
                                       f"{self.outage_limit:.0f} s at start: {exc}") from exc
            self._redis_failed("open", exc)
        if not isinstance(self.queue, ClaimingPriorityQueue):
            raise NotConfigured("DistributedScheduler needs SCHEDULER_QUEUE_CLASS = "
                                "'crawler.distributed.ClaimingPriorityQueue'")
        self.workers = self._key(self.workers_key) if self.workers_key else ""
        self.inflight = self._key(self.inflight_key) if self.inflight_key and self.alive_key else ""
        self.alive = self._key(self.alive_key) if self.inflight else ""
        self.failed = self._key(self.failed_key) if self.failed_key and self.inflight else ""
        self.queue.worker, self.queue.workers_key, self.queue.ttl = self.worker, self.workers, self.ttl
        self.queue.inflight_key = self.inflight
        self._beat = self.server.register_script(BEAT)
        self._idle = self.server.register_script(IDLE)
        self._reclaim = self.server.register_script(RECLAIM)
        self._fail_lease = self.server.register_script(FAIL_LEASE)
        self.last_claim = time.monotonic()
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(self.poll, now=False)
        self.joined = False
        try:
            self._join(spider)
        except RedisError as exc:
            self._redis_failed("open", exc)

    def _join(self, spider: Any) -> None:
        """Queue again what failed last time, mark this worker busy and alive, say what is queued."""
        if self.failed:
            again = self.server.register_script(MOVE_ALL)(keys=[self.failed, self.queue.key])
            if again:
                spider.logger.warning("distributed: %d request(s) whose pages failed in a pipeline last time queued "
                                      "again", again)
        if self.workers:
            self._beat(keys=[self.workers], args=[self.worker, int(self.ttl)])
        self.keep_alive(force=True)
        spider.logger.info("distributed worker %s on queue %s (%d queued)", self.worker, self.queue.key,
                           len(self.queue))
        self.joined = True

    def close(self, reason: str) -> None:
        """Stop polling and leave the busy set; the shared queue and seen set persist for the others.
        Outcomes are written first, then the leases of finished pages go; the leases of requests not
        finished (a crawl stopped early) stay, and go back to the queue for the others or the next run."""
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        recorder = recorder_of(self.crawler)
        if recorder is not None:
            recorder.flush(wait=True)   # answers when_durable: finished leases are released
        if self.stats:
            self.stats.set_value("distributed/redis_round_trips", self.round_trips)
        if self.backlog:
            self.spider.logger.error("closing with %d request(s) that never reached Redis (not marked seen; found "
                                     "again when the pages linking to them are fetched again): %s",
                                     len(self.backlog), " ".join(r.url for r in self.backlog[:20]))
        if getattr(self, "workers", ""):
            try:
                self.server.zrem(self.workers, self.worker)
                if self.inflight:
                    while self.unacked:
                        self.server.zrem(self.inflight, self.unacked[0])
                        self.unacked.pop(0)
                    if reason == "finished":   # idle: every popped request was finished, its outcome written
                        self._reclaim(keys=[self.inflight, self.alive, self.queue.key], args=[self.worker, "1", "1"])
                    elif self.leases or self.finishing:
                        self.spider.logger.info("distributed: %d request(s) not finished stay in Redis for the "
                                                "other workers or the next run", len(self.leases) + len(self.finishing))
                    self.server.zrem(self.alive, self.worker)   # the others take the rest at once
            except Exception as exc:  # the crawl is ending anyway; the mark expires after the TTL
                self.spider.logger.warning("could not leave the worker set: %s", exc)
        super().close(reason)

    # ---- leases: a popped request stays in Redis until it is finished ------------------------------
    def keep_alive(self, force: bool = False) -> None:
        """Refresh this worker's alive mark (busy or idle) and put back the leases of dead workers."""
        if not self.inflight or (not force and time.monotonic() - self.last_alive < self.ttl / 3):
            return
        self.round_trips += 2
        added = self.server.zadd(self.alive, {self.worker: float(self.server.time()[0]) + self.ttl})
        if added and self.alive_marked:   # only close() removes our mark: Redis restarted empty (or was flushed)
            self._data_lost()
        self.alive_marked = True
        self.last_alive = time.monotonic()
        self.reclaim(drop_own=False)
        while self.unacked:
            self.server.zrem(self.inflight, self.unacked[0])
            self.unacked.pop(0)

    def _data_lost(self) -> None:
        """The queue's Redis lost its data (seen set, queue, leases): what this process remembers of it is
        wrong now. Links queued and not yet fetched are gone; they are found again only by fetching again the
        pages that link to them, so a URL this worker popped before may be fetched again in this run (its
        outcome is recorded once: crawler.outcomes), and known fingerprints are pushed again."""
        popped, known = len(self.popped), len(self.seen_cache)
        self.popped.clear()
        self.seen_cache.clear()
        self._inc("distributed/redis_data_lost")
        self.spider.logger.warning("distributed: the shared queue's Redis lost its data (queue, seen URLs, leases); "
                                   "this worker forgets the %d request(s) it took and the %d URL(s) it knew as "
                                   "seen: pages found again are fetched again", popped, known)

    def reclaim(self, drop_own: bool) -> int:
        """Queue again the leases of dead workers (and forget our own when idle); others' leases left.
        Right after an outage of ours no mark is trusted to be dead for one TTL (nobody could refresh)."""
        self.round_trips += 1
        hold = "1" if time.monotonic() < self.hold_until else "0"
        moved, left = self._reclaim(keys=[self.inflight, self.alive, self.queue.key],
                                    args=[self.worker, "1" if drop_own else "0", hold])
        if moved:
            if self.stats:
                self.stats.inc_value("distributed/reclaimed", moved)
            self.spider.logger.warning("distributed: %d request(s) of a worker that died (killed?) queued again",
                                       moved)
        return left

    def request_done(self, request: Request) -> None:
        """The request's items are stored or dropped and the requests it found are queued: its lease goes
        once its page's outcome is written (a worker killed before that leaves it to be fetched again)."""
        token = request.meta.pop(LEASE, "")
        member = self.leases.pop(token, None)
        if member is None:
            return
        recorder = recorder_of(self.crawler)
        if recorder is None:
            self._release_member(member)
            return
        self.finishing[token] = member
        from twisted.internet import reactor

        # next turn: the outcome signals of this request's last item have all run by then
        reactor.callLater(0, recorder.when_durable, lambda ok: self._outcome_written(token, ok))

    def request_failed(self, request: Request) -> None:
        """An item of the request hit a pipeline error (its outcome says so): its entry is kept aside and the
        next run's first worker queues it again, as a JOBDIR resume does; never again in this run. Redis
        away: said with the URL (the lease is dropped when idle, as for an unwritten outcome)."""
        token = request.meta.pop(LEASE, "")
        member = self.leases.pop(token, None)
        if member is None or not self.failed:
            return
        try:
            self.round_trips += 1
            self._fail_lease(keys=[self.inflight, self.failed], args=[member])
            self._inc("distributed/failed_kept_for_next_run")
            self.spider.logger.info("distributed: %s failed in a pipeline; the next run fetches it again", request.url)
        except RedisError as exc:
            self._redis_failed("keep a failed request", exc)
            self.spider.logger.warning("distributed: %s failed in a pipeline and Redis is away: the next run will "
                                       "not fetch it again by itself", request.url)

    def _outcome_written(self, token: str, ok: bool) -> None:
        member = self.finishing.pop(token, None)
        if member is not None and ok:   # not written: the lease stays (dropped when idle, else fetched again)
            self._release_member(member)

    def _release(self, token: str) -> None:
        member = self.leases.pop(token, None)
        if member is not None:
            self._release_member(member)

    def _release_member(self, member: bytes) -> None:
        if self.redis_down:
            self.unacked.append(member)
            return
        try:
            self.round_trips += 1
            self.server.zrem(self.inflight, member)
        except RedisError as exc:
            self._redis_failed("release", exc)
            self.unacked.append(member)

    def _holds(self, member: bytes) -> bool:
        """This worker holds this lease right now (in progress, or waiting for its outcome)."""
        return member in self.leases.values() or member in self.finishing.values()

    def enqueue_request(self, request: Request) -> bool:
        """Queue the request unless any process has seen its URL fingerprint (one Lua round trip, none
        when this process already knows the fingerprint is in the shared set: the set only grows).
        While Redis is unreachable requests wait in a local backlog: nothing is lost."""
        fp = None if request.dont_filter else self.df.request_fingerprint(request)
        if fp is not None and fp in self.seen_cache:
            self.seen_cache.move_to_end(fp)
            return self._settled(request, self._filtered(request))
        if self.backlog:
            self.backlog.append(request)
            return True
        token = request.meta.pop(LEASE, None)   # a retry or redirect of a leased request
        try:
            pushed = self._push(request, fp)
        except RedisError as exc:
            if token:
                request.meta[LEASE] = token
            self._redis_failed("enqueue", exc)
            self.backlog.append(request)
            return True
        self._redis_ok()
        if token:   # its successor is safely queued: the old lease can go
            self._release(token)
        if not pushed:
            return self._settled(request, self._filtered(request))
        self._inc("scheduler/enqueued/redis")
        return self._settled(request, True)

    def _settled(self, request: Request, result: bool) -> bool:
        """Tell the resume middleware this child request is in the shared queue (or known)."""
        mw = getattr(self.crawler, "_zhdedup_resume_mw", None)
        if mw is not None:
            mw.settled(request)
        return result

    def _push(self, request: Request, fp: str | None) -> bool:
        """One push-if-unseen round trip; remember the fingerprint as seen."""
        self.round_trips += 1
        pushed = self.queue.push_unseen(request, fp, self.df.key)
        if fp is not None and self.seen_cache_size > 0:
            self.seen_cache[fp] = None
            if len(self.seen_cache) > self.seen_cache_size:
                self.seen_cache.popitem(last=False)
        return pushed

    def flush_backlog(self) -> None:
        """Push the requests that waited for Redis, oldest first; stop at the first failure."""
        while self.backlog:
            request = self.backlog[0]
            fp = None if request.dont_filter else self.df.request_fingerprint(request)
            token = request.meta.pop(LEASE, None)
            try:
                pushed = self._push(request, fp)   # RedisError propagates: the rest keeps waiting
            except RedisError:
                if token:
                    request.meta[LEASE] = token
                raise
            self.backlog.pop(0)
            if token:
                self._release(token)
            self._inc("scheduler/enqueued/redis" if pushed else "dupefilter/filtered")
            self._settled(request, pushed)
        self.spider.logger.info("distributed: the local backlog is in the shared queue")

    # ---- Redis outages -----------------------------------------------------------------------------
    def _redis_failed(self, what: str, exc: Exception) -> None:
        """Count the failure; log the first one of an outage (the engine retries many times a second)."""
        self._inc(f"distributed/redis_errors/{what}")
        if self.outage_since is None:
            self.outage_since = time.monotonic()
            self.outage_error = f"{type(exc).__name__}: {exc}"
            self.spider.logger.warning("distributed %s: Redis unavailable (%s); keeping requests locally and "
                                       "retrying", what, self.outage_error)

    def _redis_ok(self) -> None:
        """A Redis call succeeded: an outage is over. Every alive mark may have expired meanwhile, ours too:
        refresh ours at once, and leave the others one TTL to refresh theirs before calling them dead."""
        if self.outage_since is None:
            return
        took = time.monotonic() - self.outage_since
        self.outage_since = None
        self.hold_until = time.monotonic() + self.ttl
        self.last_alive = 0.0
        self.spider.logger.info("distributed: Redis answers again (unavailable for %.1f s)", took)
        try:   # before the request just popped is judged: did Redis come back empty? (started in an outage: join)
            self._join(self.spider) if not self.joined else self.keep_alive(force=True)
        except RedisError:
            pass   # the next tick refreshes the mark (last_alive is 0)
        self._wake()

    def _wake(self) -> None:
        """Make the engine look at the scheduler now (its private slot in Scrapy 2.19; without it the
        engine re-checks every 5 s)."""
        try:
            slot = getattr(self.crawler.engine, "_slot", None)
        except RuntimeError:   # no engine yet (a scheduler used on its own)
            return
        if slot is not None:
            slot.nextcall.schedule()

    def _outage_step(self) -> None:
        """During an outage (each tick): stop the crawl once it lasted too long, else bring Redis back in a
        thread (the store's retry/restart path), so no Redis call of ours blocks the reactor meanwhile."""
        down = time.monotonic() - (self.outage_since or time.monotonic())
        if 0 <= self.outage_limit < down:
            self._give_up(down)
        elif not self.probing:
            self.probing = True
            threads.deferToThread(self._probe).addBoth(self._probed)

    def _probe(self) -> tuple[bool, str | None]:
        """In a thread: when the queue lives on the store's embedded Redis, let the store bring it back (its
        retry/restart path: a dead server is started again); then ask ours. (answers, URL it moved to)."""
        store = _open_store_of(self.crawler)
        if store is not None and self.shares_store:
            try:
                store.wait_for("redis")   # StorageUnavailable after the store's retry_seconds
            except Exception as exc:  # noqa: BLE001 - still down: the next tick tries again
                logger.debug("distributed: the store could not bring Redis back yet: %s", exc)
            if not _same_server(store.redis_url, self._host()):
                return False, store.redis_url   # started again on another port
        try:
            self.server.ping()
            return True, None
        except RedisError:
            return False, None

    def _probed(self, result: Any) -> None:
        """Back in the reactor thread after a probe."""
        self.probing = False
        if not isinstance(result, tuple):   # a Failure (a bug): said, and the next tick tries again
            self.spider.logger.warning("distributed: Redis probe failed: %s", result)
            return
        answers, moved = result
        if moved:
            self._follow(moved)   # the next tick (or pop) reaches it there
        elif answers:
            self._redis_ok()

    def _host(self) -> str:
        """host:port of the queue's Redis now (no credentials: it goes into log lines)."""
        kw = getattr(getattr(self.server, "connection_pool", None), "connection_kwargs", None) or {}
        return f"{kw.get('host')}:{kw.get('port')}"

    def _check_store(self) -> None:
        """Once the store is open (and Redis answers): does the queue live on the store's embedded Redis?"""
        if self.shares_store is None:
            store = _open_store_of(self.crawler)
            if store is not None:
                self.shares_store = bool(store.embedded.get("redis")) and _same_server(store.redis_url, self._host())

    def _follow(self, url: str) -> None:
        """The embedded Redis came back on another port: point the queue's client there (same client
        object: the queue and the registered scripts hold it)."""
        import redis

        old = getattr(self.server, "connection_pool", None)
        if old is None:   # a cluster client: not an embedded server
            return
        kwargs = {k: v for k, v in old.connection_kwargs.items() if k not in ("host", "port", "db", "password",
                                                                              "username")}
        self.server.connection_pool = redis.ConnectionPool.from_url(url, **kwargs)
        old.disconnect()
        self.spider.logger.info("distributed: the embedded Redis came back on another port; following it")

    def _give_up(self, down: float) -> None:
        """Redis stayed away too long: stop the crawl with one CRITICAL line. Nothing is lost: the queue and
        this worker's leases are in Redis (its mark expires, the others or the next run take them); the
        requests in the local backlog are found again from their pages, which stay leased."""
        if self.gave_up:
            return
        self.gave_up = True
        taken = len(self.leases) + len(self.finishing) + len(self.unacked)
        self.spider.logger.critical(
            "stopping the crawl: Redis (distributed crawl queue at %s) unavailable for %.0f s (%s)%s. Nothing is "
            "lost: the shared queue, the seen URLs and the %d request(s) this worker took stay in Redis, and the "
            "other workers or the next run (the same command, once Redis is back) fetch what is left%s. Set "
            "DISTRIBUTED_REDIS_OUTAGE_SECONDS to wait longer", self._host(), down, self.outage_error,
            "" if self.shares_store else " (not this store's embedded server: start it yourself)", taken,
            f"; {len(self.backlog)} link(s) found meanwhile are found again from the pages (or start URLs) "
            "they came from" if self.backlog else "")
        if self.stats:
            from pipelines import stats as names

            self.stats.set_value(names.failed("redis_unavailable"), 1)
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(self.crawler.engine.close_spider_async(reason="storage_unavailable"))

    def _filtered(self, request: Request) -> bool:
        self.df.log(request, self.spider)
        self._inc("dupefilter/filtered")
        return False

    def next_request(self) -> Request | None:
        """Pop (and claim) the next request of the shared queue (None while Redis is unreachable). A request
        of our own that another worker queued again (our mark had expired) is not fetched a second time."""
        if self.gave_up:
            return None
        for _ in range(POP_SKIP_MAX):
            try:
                if self.backlog:
                    self.flush_backlog()
                self.round_trips += 1
                request = self.queue.pop(0)
            except RedisError as exc:
                self._redis_failed("pop", exc)
                return None
            self._redis_ok()
            if request is None:
                return None
            raw = self.queue.last_raw
            if self.inflight and raw and self._taken_back(request, raw):
                continue
            self.busy, self.idle_since = True, None
            self.last_claim = time.monotonic()
            self._inc("scheduler/dequeued/redis")
            if self.inflight and raw:
                token = uuid.uuid4().hex[:12]
                self.leases[token] = self.worker.encode() + b"\n" + raw
                request.meta[LEASE] = token
            return request
        return None

    def _taken_back(self, request: Request, raw: bytes) -> bool:
        """True when this worker popped this very entry before in this run (another worker queued it again
        while our mark had expired): it is ours, in progress or done; the second pop's lease is dropped
        unless we still hold it."""
        member = self.worker.encode() + b"\n" + raw
        digest = hashlib.blake2b(raw, digest_size=12).digest()
        ours = self._holds(member) or (not request.dont_filter and digest in self.popped)
        if not ours:
            if not request.dont_filter and self.seen_cache_size > 0:
                self.popped[digest] = None
                if len(self.popped) > self.seen_cache_size:
                    self.popped.popitem(last=False)
            return False
        self._inc("distributed/own_request_popped_again")
        self.spider.logger.info("distributed: %s came back to the queue while this worker had it (its mark had "
                                "expired); not fetched again", request.url)
        if not self._holds(member):
            self._release_member(member)
        return True

    def has_pending_requests(self) -> bool:
        """Anything in the shared queue or the local backlog (asked only when this process is otherwise
        idle); an unreachable Redis counts as pending, so the spider does not close on a hiccup."""
        if self.backlog or self.redis_down:
            return True
        try:
            self.round_trips += 1
            return len(self.queue) > 0
        except RedisError as exc:
            self._redis_failed("length", exc)
            return True

    def _inc(self, key: str) -> None:
        if self.stats:
            self.stats.inc_value(key)

    def tick(self) -> None:
        """Busy: refresh this worker's mark. Idle: wake the engine so it pulls new requests / re-checks.
        Redis away: bring it back (or give up), without calling it from here."""
        if self.gave_up:
            return
        if self.redis_down:
            self._outage_step()
            return
        try:
            self._check_store()
            if self.backlog:
                self.flush_backlog()
            self.keep_alive()
            if self.busy:
                if self.workers and time.monotonic() - self.last_claim > self.ttl / 3:
                    self.round_trips += 1
                    self._beat(keys=[self.workers], args=[self.worker, int(self.ttl)])
                    self.last_claim = time.monotonic()
                return
            self._wake()
        except RedisError as exc:
            self._redis_failed("heartbeat", exc)
        except Exception as exc:  # a bug must not kill the loop; the next tick retries
            self.spider.logger.warning("distributed heartbeat failed: %s", exc)

    def spider_idle(self, spider: Any) -> None:
        """Keep the spider open until the shared queue is empty and nobody is busy for idle_close seconds."""
        self.busy = False
        if self.redis_down:
            raise DontCloseSpider   # the tick brings Redis back, or gives up and closes the spider
        if self.backlog:   # links found during an outage reach Redis before their pages' leases go
            try:
                self.flush_backlog()
            except RedisError as exc:
                self._redis_failed("enqueue", exc)
                raise DontCloseSpider from None
        recorder = recorder_of(self.crawler)
        if self.finishing or (recorder is not None and not recorder.all_durable()):
            if recorder is not None:
                recorder.when_durable(lambda ok: None)   # write them now; our leases go after that
            raise DontCloseSpider
        try:
            leased = 0
            if self.inflight:   # idle, outcomes written: nothing of ours is in progress; dead workers' go back
                self.leases.clear()
                leased = self.reclaim(drop_own=True)
            if not self.workers:
                queued, busy = len(self.queue), 0
            else:
                self.round_trips += 1
                queued, busy = self._idle(keys=[self.workers, self.queue.key], args=[self.worker])
            queued += leased   # another worker's requests in flight may still come back
        except RedisError as exc:
            self._redis_failed("idle check", exc)
            raise DontCloseSpider from None
        self._redis_ok()
        queued += len(self.backlog)
        if queued or busy:
            if (queued, busy) != self.last_state:
                spider.logger.info("shared crawl not done: %d request(s) queued, %d other worker(s) busy", queued, busy)
            self.idle_since, self.last_state = None, (queued, busy)
            raise DontCloseSpider
        self.last_state = (0, 0)
        now = time.monotonic()
        if self.idle_since is None:
            self.idle_since = now
            spider.logger.info("shared queue empty and no worker busy; closing in %.1f s unless work appears",
                               self.idle_close)
        if self.idle_close < 0 or now - self.idle_since < self.idle_close:
            raise DontCloseSpider
        self._inc("distributed/idle_closed")


def _open_store_of(crawler: Any) -> Any:
    """The crawler's store if the pipelines opened it (never opened from here)."""
    holder = getattr(crawler, "_zhdedup_store", None)   # pipelines._store keeps it there
    return getattr(holder, "store", None)


def _same_server(url: str, host_port: str) -> bool:
    """url (redis://...) names the server at host:port."""
    from urllib.parse import urlsplit

    parts = urlsplit(url or "")
    return f"{parts.hostname}:{parts.port or 6379}" == host_port


# --- RedisSpider on Scrapy 2.13+ ------------------------------------------------------------------


class RedisStartMixin:
    """Put before scrapy_redis.spiders.RedisMixin/RedisSpider: Scrapy 2.13+ never calls start_requests(),
    so RedisSpider would read its start URLs only at the first idle signal; this reads them at start."""

    async def start(self) -> Any:
        """The first batch of start URLs from the spider's redis_key, as RedisMixin.start_requests did."""
        for request in self.next_requests():  # type: ignore[attr-defined]
            yield request

    def setup_redis(self, crawler: Any = None) -> None:
        """RedisMixin keeps the idle clock in a class attribute set at import; start it per spider."""
        super().setup_redis(crawler)  # type: ignore[misc]
        self.spider_idle_start_time = int(time.time())


# --- command line --------------------------------------------------------------------------------


def _resolve_keys(spider: str, job: str | None) -> tuple[Any, dict[str, str]]:
    from storage.connection import redis_client

    url, prefix = store_redis()
    keys = {k: v % {"spider": spider} for k, v in crawl_keys(prefix, job or "%(spider)s").items()}
    return redis_client(url), keys


def main(argv: list[str] | None = None, prog: str = "python -m crawler.distributed") -> int:
    """`python -m crawler.distributed status|reset SPIDER [--job NAME]`."""
    parser = OneLineParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["status", "reset"])
    parser.add_argument("spider", help="spider name (the default job name)")
    parser.add_argument("--job", help="job name when the crawl used DISTRIBUTED_JOB / ZHDEDUP_CRAWL_JOB")
    args = parser.parse_args(argv)
    r, keys = _resolve_keys(args.spider, args.job)
    if args.command == "status":
        now = float(r.time()[0])
        busy = r.zrangebyscore(keys["workers"], now, "+inf")
        print(f"queued requests  {r.zcard(keys['requests'])}\nseen URLs        {r.scard(keys['dupefilter'])}\n"
              f"in flight        {r.zcard(keys['inflight'])} (leased by workers; a dead worker's come back)\n"
              f"busy workers     {len(busy)}")
        for w in busy:
            print(f"  {w.decode()}")
        return 0
    if r.zcount(keys["workers"], float(r.time()[0]), "+inf"):
        print("workers are still registered; stop them first (or wait for their marks to expire)", file=sys.stderr)
        return 1
    print(f"deleted {r.delete(*keys.values())} key(s) of {keys['requests'].rsplit(':', 1)[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
