"""Redis goes away under a distributed scheduler: new requests wait in a local backlog, the spider does
not close, nothing is fetched twice or lost, and everything reaches the shared queue when Redis is back.
Real embedded Redis (storage.servers), killed with SIGKILL and restarted on its port and data."""
from __future__ import annotations

import os
import signal
import time

import pytest
import redis
import scrapy
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.test import get_crawler

from crawler.distributed import DistributedScheduler, distributed_settings, dumps

pytestmark = pytest.mark.timeout(120)


class OutageSpider(scrapy.Spider):
    """A real spider for the scheduler to serve."""

    name = "outage"

    def parse(self, response):
        """Unused: nothing is downloaded here."""


def _built(url: str) -> tuple[DistributedScheduler, scrapy.Spider]:
    """A scheduler built for a real spider, not opened yet."""
    settings = {**distributed_settings(url, "tout:", idle_close_seconds=0),
                "REQUEST_FINGERPRINTER_CLASS": "crawler.urls.CanonicalRequestFingerprinter",
                "DISTRIBUTED_POLL_SECONDS": 3600}
    crawler = get_crawler(OutageSpider, settings)
    spider = OutageSpider.from_crawler(crawler)
    crawler.spider = spider
    return DistributedScheduler.from_crawler(crawler), spider


def _scheduler(url: str) -> tuple[DistributedScheduler, scrapy.Spider]:
    sched, spider = _built(url)
    sched.open(spider)
    return sched, spider


def test_requests_wait_locally_while_redis_is_down(tmp_path):
    """Enqueue during the outage keeps the request; pops return nothing; the idle check keeps the spider open."""
    from storage import servers as srv

    var = tmp_path / "var"
    url = srv.ensure(var, "redis").uri
    try:
        sched, spider = _scheduler(url)
        first = scrapy.Request("http://127.0.0.1:1/news/2018/1101/10001.html", priority=1)
        second = scrapy.Request("http://127.0.0.1:1/news/2018/1101/10002.html?utm_source=x")
        assert sched.enqueue_request(first) is True
        redis.Redis.from_url(url).save()            # the queue survives the crash below
        os.kill(srv.info(var, "redis").pid, signal.SIGKILL)
        while srv.pid_alive(srv.info(var, "redis").pid, "redis"):
            time.sleep(0.05)

        assert sched.enqueue_request(second) is True     # kept locally, not lost
        assert sched.backlog == [second] and sched.has_pending_requests() is True
        assert sched.next_request() is None
        with pytest.raises(DontCloseSpider):
            sched.spider_idle(spider)
        assert sched.stats.get_value("distributed/redis_errors/enqueue") == 1

        assert srv.ensure(var, "redis").uri == url   # restarted after the crash on its port and data
        got = [sched.next_request(), sched.next_request()]
        assert [r.url for r in got] == [first.url, second.url] and sched.backlog == []
        assert sched.next_request() is None
        # the copy without tracking parameters was seen (through the backlog) and is filtered
        assert sched.enqueue_request(scrapy.Request("http://127.0.0.1:1/news/2018/1101/10002.html")) is False
        sched.spider_idle(spider)        # queue empty, nobody busy, idle_close 0: no DontCloseSpider
        sched.close("finished")
        r = redis.Redis.from_url(url)
        r.delete(*r.keys("tout:*"))
    finally:
        srv.stop(var, ("redis",))


def test_redis_gone_between_start_and_open_is_an_outage_not_a_crash(tmp_path):
    """Redis answers when the scheduler is built and is gone when it opens (a crawler started in the middle of
    a Redis restart; invariant seed 418 ended 'Engine slot not assigned', exit 1): open() enters the outage,
    and once Redis is back the worker joins (alive mark, requests that failed last time queued again)."""
    from storage import servers as srv

    var = tmp_path / "var"
    url = srv.ensure(var, "redis").uri
    try:
        sched, spider = _built(url)
        failed_last_time = "http://127.0.0.1:1/news/2018/1101/10003.html"
        entry = dumps(scrapy.Request(failed_last_time).to_dict(spider=spider))   # as the queue holds it
        redis.Redis.from_url(url).zadd(sched.failed_key % {"spider": spider.name}, {entry: 0})
        redis.Redis.from_url(url).save()
        os.kill(srv.info(var, "redis").pid, signal.SIGKILL)
        while srv.pid_alive(srv.info(var, "redis").pid, "redis"):
            time.sleep(0.05)

        sched.open(spider)                               # no exception: an outage
        assert sched.redis_down and not sched.joined
        assert sched.next_request() is None

        assert srv.ensure(var, "redis").uri == url
        got = sched.next_request() or sched.next_request()   # Redis answers: the worker joins; a pop gets it
        assert sched.joined and not sched.redis_down
        assert got is not None and got.url == failed_last_time
        sched.close("finished")
        r = redis.Redis.from_url(url)
        keys = r.keys("tout:*")
        if keys:
            r.delete(*keys)
    finally:
        srv.stop(var, ("redis",))


@pytest.mark.parametrize("back", [True, False])
def test_a_dupefilter_whose_client_cannot_be_made_at_open_waits_then_says_so(tmp_path, back):
    """A Redis Cluster client asks a node for the slot map as it is made: with a node away just then (a wipe,
    a restart) the scheduler's open raised (RedisClusterException, which is no RedisError), and the crawler
    died with a traceback (invariant seeds 1387, 1407). It
    waits like any outage; a Redis that stays away ends in CrawlCannotStart (one line, exit 2)."""
    from redis.exceptions import RedisClusterException

    from crawler import distributed
    from pipelines.errors import CrawlCannotStart
    from storage import servers as srv

    url = srv.ensure(tmp_path / "var", "redis").uri
    calls = []

    class NodeAway(distributed.FingerprintDupeFilter):
        @classmethod
        def from_spider(cls, spider):
            calls.append(time.monotonic())
            if not back or len(calls) < 3:
                raise RedisClusterException("Redis Cluster cannot be connected. Please provide at least one "
                                            "reachable node: Error 111 connecting to 127.0.0.1:1. Connection refused.")
            return super().from_spider(spider)

    try:
        sched, spider = _built(url)
        sched.dupefilter_cls = NodeAway
        sched.outage_limit = 1.0
        if back:
            sched.open(spider)
            assert len(calls) == 3 and sched.df is not None and not sched.redis_down
            sched.close("finished")
        else:
            with pytest.raises(CrawlCannotStart, match="unavailable for 1 s at start"):
                sched.open(spider)
    finally:
        srv.stop(tmp_path / "var")


def test_a_scheduler_whose_cluster_client_cannot_be_made_waits_then_says_so(dead_port):
    """The scheduler's own client is made before open (scrapy-redis's from_crawler): a Redis Cluster node away
    then (a wipe, a restart) crashed the crawler with 'Engine slot not assigned' (invariant seed 1407). It waits
    like any outage; a node that stays away ends in CrawlCannotStart (one line, exit 2)."""
    from pipelines.errors import CrawlCannotStart

    url = f"redis://127.0.0.1:{dead_port}/0"
    settings = {**distributed_settings(url, "tout:", idle_close_seconds=0),
                "REQUEST_FINGERPRINTER_CLASS": "crawler.urls.CanonicalRequestFingerprinter",
                "DISTRIBUTED_REDIS_OUTAGE_SECONDS": 1.0}
    settings["REDIS_PARAMS"] = {**settings["REDIS_PARAMS"], "redis_cls": "redis.cluster.RedisCluster"}
    crawler = get_crawler(OutageSpider, settings)
    crawler.spider = OutageSpider.from_crawler(crawler)
    started = time.monotonic()
    with pytest.raises(CrawlCannotStart, match="unavailable for 1 s at start"):
        DistributedScheduler.from_crawler(crawler)
    assert time.monotonic() - started >= 1.0
