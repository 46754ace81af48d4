"""How the distributed scheduler waits out a Redis outage: backlog, probe thread, following a restarted
embedded server, giving up after DISTRIBUTED_REDIS_OUTAGE_SECONDS."""
from __future__ import annotations

import logging
import time
from typing import Any

from redis.exceptions import RedisClusterException, RedisError
from twisted.internet import threads

logger = logging.getLogger(__name__)

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


class RedisOutageMixin:
    """DistributedScheduler's outage handling: count and log failures, bring Redis back in a thread, stop the
    crawl with one CRITICAL line once it stayed away too long (state set up in DistributedScheduler.from_crawler)."""

    crawler: Any
    spider: Any
    server: Any
    stats: Any

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


def _open_store_of(crawler: Any) -> Any:
    """The crawler's store if the pipelines opened it (never opened from here)."""
    holder = getattr(crawler, "_zhdedup_store", None)   # pipelines.crawl_store keeps it there
    return getattr(holder, "store", None)


def _same_server(url: str, host_port: str) -> bool:
    """url (redis://...) names the server at host:port."""
    from urllib.parse import urlsplit

    parts = urlsplit(url or "")
    return f"{parts.hostname}:{parts.port or 6379}" == host_port
