"""`DistributedScheduler`: scrapy-redis's Scheduler with leases, a shared idle close and outage handling."""
from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any

from redis.exceptions import RedisError
from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http import Request
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task

from crawler import settings as defaults   # every setting's default, declared once
from crawler.outcomes import recorder_of
from pipelines.errors import CrawlCannotStart

from .memory import WorkerMemory
from .outage import UNREACHABLE, RedisOutageMixin, until_redis_answers
from .queue import BEAT, FAIL_LEASE, IDLE, LEASE, MOVE_ALL, RECLAIM, ClaimingPriorityQueue

POP_SKIP_MAX = 100   # requests of our own popped back in one next_request call at most


class DistributedScheduler(RedisOutageMixin, Scheduler):
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
        sched.last_alive = 0.0
        sched.alive_marked = False   # our alive mark was written once: finding it gone = Redis lost its data
        sched.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        sched.idle_since, sched.last_state = None, None
        sched.busy = True
        sched.last_claim = 0.0
        sched.loop = None
        sched.round_trips = 0
        sched.memory = WorkerMemory(s.getint("DISTRIBUTED_SEEN_CACHE", defaults.DISTRIBUTED_SEEN_CACHE))
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
        else:
            self.memory.confirmed(self.leases)
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
        popped, known, again = self.memory.forget()
        self._inc("distributed/redis_data_lost")
        queued = sum(bool(self.enqueue_request(r)) for r in again)
        self.spider.logger.warning("distributed: the shared queue's Redis lost its data (queue, seen URLs, leases); "
                                   "this worker forgets the %d request(s) it took and the %d URL(s) it knew as seen, "
                                   "and queues again its start requests and the pages it fetched since the loss may "
                                   "have begun (%d of %d reached the queue)", popped, known, queued, len(again))

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
        self.memory.started(request)
        if fp is not None and self.memory.knows_seen(fp):
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
        if fp is not None:
            self.memory.saw(fp)
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
                self.memory.leased(token, request)
            return request
        return None

    def _taken_back(self, request: Request, raw: bytes) -> bool:
        """True when this worker popped this very entry before in this run (another worker queued it again
        while our mark had expired): it is ours, in progress or done; the second pop's lease is dropped
        unless we still hold it."""
        member = self.worker.encode() + b"\n" + raw
        ours = self._holds(member) or (not request.dont_filter and self.memory.took_before(raw)
                                       and self._nothing_lost())
        if not ours:
            if not request.dont_filter:
                self.memory.took(raw)
            return False
        self._inc("distributed/own_request_popped_again")
        self.spider.logger.info("distributed: %s came back to the queue while this worker had it (its mark had "
                                "expired); not fetched again", request.url)
        if not self._holds(member):
            self._release_member(member)
        return True

    def _nothing_lost(self) -> bool:
        """Is our memory of what we popped still true? Our alive mark is looked at now (one round trip, only
        for a request that comes back): Redis that lost its data would have a page we fetched queued again
        by its links, and skipping it loses the links it had queued (invariant seed 4003)."""
        before = self.memory.losses
        try:
            self.keep_alive(force=True)
        except RedisError as exc:   # cannot tell: fetched again (its outcome is recorded once)
            self._redis_failed("heartbeat", exc)
            return False
        return self.memory.losses == before

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
