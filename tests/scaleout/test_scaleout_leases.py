"""Leases of popped requests when workers only look dead: a worker whose alive mark expired while it was
still working (Redis away longer than DISTRIBUTED_WORKER_TTL, a starved process) gets its requests
queued again by the others. It must not fetch such a request a second time itself (two outcomes for one
URL in one run), and a worker that just lost Redis itself waits one TTL before it takes the requests of
workers that could not refresh their marks either. Real embedded Redis, killed with SIGKILL."""
from __future__ import annotations

import os
import signal
import time

import pytest
import redis
import scrapy
from scrapy.utils.test import get_crawler

from crawler.distributed import DistributedScheduler, distributed_settings

pytestmark = pytest.mark.timeout(60)


class LeaseSpider(scrapy.Spider):
    """A real spider for the schedulers to serve."""

    name = "leases"

    def parse(self, response):
        """Unused: nothing is downloaded here."""


def _scheduler(url: str, ttl: float = 2.0) -> DistributedScheduler:
    settings = {**distributed_settings(url, "tlease:", idle_close_seconds=0),
                "REQUEST_FINGERPRINTER_CLASS": "crawler.urls.CanonicalRequestFingerprinter",
                "DISTRIBUTED_POLL_SECONDS": 3600, "DISTRIBUTED_WORKER_TTL": ttl}
    crawler = get_crawler(LeaseSpider, settings)
    spider = LeaseSpider.from_crawler(crawler)
    crawler.spider = spider
    sched = DistributedScheduler.from_crawler(crawler)
    sched.open(spider)
    return sched


@pytest.fixture
def redis_var(tmp_path):
    """An embedded Redis of our own (the tests kill it); its keys and process go at the end."""
    from storage import servers as srv

    var = tmp_path / "var"
    url = srv.ensure(var, "redis").uri
    yield var, url
    try:
        r = redis.Redis.from_url(url)
        keys = r.keys("tlease:*")
        if keys:
            r.delete(*keys)
    finally:
        srv.stop(var, ("redis",))


def _expire(url: str, sched: DistributedScheduler) -> None:
    """Make a worker look dead: its alive mark in the past (as after a long outage or a stall)."""
    redis.Redis.from_url(url).zadd(sched.alive, {sched.worker: 1})


def test_a_worker_never_takes_its_own_requeued_request_again(redis_var):
    """A's lease is queued again by B (A's mark expired while A still works on it); A does not pop it a
    second time, and once A finishes it the lease is gone."""
    var, url = redis_var
    a, b = _scheduler(url), _scheduler(url)
    try:
        assert a.enqueue_request(scrapy.Request("http://127.0.0.1:1/news/1.html")) is True
        got = a.next_request()
        assert got is not None and got.url.endswith("/news/1.html")
        _expire(url, a)
        b.reclaim(drop_own=False)                       # B thinks A died: the request is queued again
        assert len(a.queue) == 1
        assert a.next_request() is None                 # A already has it: not fetched twice in A's run
        a.request_done(got)
        r = redis.Redis.from_url(url)
        assert r.zcard(a.inflight) == 0 and len(a.queue) == 0
    finally:
        a.close("finished")
        b.close("finished")


def test_no_worker_is_declared_dead_right_after_an_outage(redis_var):
    """Redis SIGKILLed and restarted (every worker's mark expired meanwhile): B, back from the outage,
    leaves A's leases alone for one TTL (A refreshes its mark in that time); a mark still expired after
    that is a dead worker, and its leases are queued again."""
    from storage import servers as srv

    var, url = redis_var
    a, b = _scheduler(url), _scheduler(url)
    try:
        assert a.enqueue_request(scrapy.Request("http://127.0.0.1:1/news/2.html")) is True
        assert a.next_request() is not None
        redis.Redis.from_url(url).save()                # the lease survives the crash below
        pid = srv.info(var, "redis").pid
        os.kill(pid, signal.SIGKILL)
        while srv.pid_alive(pid, "redis"):
            time.sleep(0.02)
        assert b.next_request() is None                 # B sees the outage
        assert srv.ensure(var, "redis").uri == url      # back on its port, with its data
        _expire(url, a)
        assert b.next_request() is None                 # B answers again; A's lease is not taken yet
        assert b.reclaim(drop_own=False) == 1 and len(b.queue) == 0
        time.sleep(b.ttl + 0.2)
        b.reclaim(drop_own=False)
        assert len(b.queue) == 1                        # A never came back: its request is queued again
    finally:
        a.close("finished")
        b.close("finished")


def _kill(var) -> None:
    """SIGKILL the embedded Redis and wait until it is gone."""
    from storage import servers as srv

    pid = srv.info(var, "redis").pid
    os.kill(pid, signal.SIGKILL)
    while srv.pid_alive(pid, "redis"):
        time.sleep(0.02)


def test_after_redis_lost_its_data_a_page_found_again_is_fetched_again(redis_var):
    """Redis SIGKILLed and back EMPTY (queue, seen set and leases gone): the links A's page had queued are
    lost with the queue, so when another worker queues that page again (its start request), A, which fetched
    it before the loss, fetches it again instead of skipping it as its own: else its links are never found
    again and the next run skips the page as seen (seed 408 lost a whole site this way)."""
    from storage import servers as srv

    var, url = redis_var
    a, b = _scheduler(url), _scheduler(url)
    start = "http://127.0.0.1:1/"
    try:
        assert a.enqueue_request(scrapy.Request(start)) is True
        got = a.next_request()
        assert got is not None and got.url == start
        assert a.enqueue_request(scrapy.Request("http://127.0.0.1:1/list/0.html")) is True   # a link it found
        a.request_done(got)
        _kill(var)
        assert a.next_request() is None                 # A sees the outage
        assert srv.ensure(var, "redis").uri == url
        redis.Redis.from_url(url).flushall()            # ... and Redis comes back with nothing
        assert b.enqueue_request(scrapy.Request(start)) is True   # B's start(): the seen set is empty
        again = a.next_request()
        assert again is not None and again.url == start  # fetched again: its links are found again
        assert a.enqueue_request(scrapy.Request("http://127.0.0.1:1/list/0.html")) is True   # not "known"
        assert a.stats.get_value("distributed/redis_data_lost") == 1
    finally:
        a.close("finished")
        b.close("finished")


def test_a_loss_no_outage_showed_queues_again_the_start_and_the_pages_fetched_since(redis_var):
    """Seed 4003 (cluster, redis_wipe): the node holding the queue came back empty and worker A saw no outage.
    A popped a list page another worker had queued again, skipped it as one of its own (popped before the
    loss) and never found the links it had queued: seven URLs without an outcome. A now looks at its alive
    mark before it skips a page of its own; on a loss it queues again its start requests and the pages it
    fetched since its mark was last in place, and forgets what it knew as seen."""
    var, url = redis_var
    a, b = _scheduler(url), _scheduler(url)
    start, listing, link = "http://127.0.0.1:1/", "http://127.0.0.1:1/list/0.html", "http://127.0.0.1:1/news/1.html"
    try:
        assert a.enqueue_request(scrapy.Request(start, meta={"is_start_request": True})) is True
        got = a.next_request()
        assert got.url == start and a.enqueue_request(scrapy.Request(listing)) is True
        a.request_done(got)
        a.keep_alive(force=True)                        # mark in place: the start page's links are safe
        got = a.next_request()
        assert got.url == listing and a.enqueue_request(scrapy.Request(link)) is True
        a.request_done(got)
        redis.Redis.from_url(url).flushall()            # the loss: queue, seen set, leases, marks
        assert b.enqueue_request(scrapy.Request(listing)) is True   # found again from another page
        again = a.next_request()
        assert again is not None and again.url == listing
        assert a.stats.get_value("distributed/redis_data_lost") == 1
        queued = []
        while (r := a.next_request()) is not None:
            queued.append(r.url)
        assert sorted(queued) == [start, listing], queued   # the start again; the page fetched since the mark
        assert a.enqueue_request(scrapy.Request(link)) is True   # no longer "seen" by A's memory
    finally:
        a.close("finished")
        b.close("finished")


def test_a_url_fetched_twice_in_one_run_keeps_one_outcome(redis_var):
    """A distributed worker that fetches a URL again in its run (Redis lost the seen set, the page that links
    to it was fetched again) records its outcome once: the first stands, the second fetch is counted."""
    from crawler.outcomes import OutcomeRecorder
    from pipelines.drops import DuplicateItem

    var, url = redis_var
    sched = _scheduler(url)
    try:
        recorder = OutcomeRecorder.from_crawler(sched.crawler)
        item = {"url": "http://127.0.0.1:1/news/7.html"}
        drop = DuplicateItem("exact", "p1", "http://127.0.0.1:2/news/1.html", distance=0)
        recorder.item_dropped(item, exception=drop)
        recorder.item_dropped(item, exception=DuplicateItem("exact", "p1", drop.original_url, distance=0, known=True))
        recorder.item_dropped({"url": "http://127.0.0.1:1/news/8.html"}, exception=drop)
        assert [d["url"] for d in recorder.buffer] == [item["url"], "http://127.0.0.1:1/news/8.html"]
        assert recorder.fetched_outcomes == 2 and recorder.fetched_again == 1
        assert sched.stats.get_value("zhdedup/fetched_again") == 1
        assert sched.stats.get_value("zhdedup/outcome/duplicate") == 2
    finally:
        sched.close("finished")
