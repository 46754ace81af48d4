"""The scrapy-redis adapter on its own: settings, JSON request serialization, the project fingerprint in
the shared dupefilter, atomic push-if-unseen and pop-with-claim, against the session's real Redis."""
from __future__ import annotations

import json

import pytest
import redis
import scrapy
from scrapy.utils.request import request_from_dict

import crawler.distributed as distributed
from crawler.distributed import (ClaimingPriorityQueue, DistributedAddon, FingerprintDupeFilter, crawl_keys,
                                 distributed_settings, dumps, enabled, loads, store_redis)
from scrapy_redis.dupefilter import RFPDupeFilter

from crawler.urls import CanonicalRequestFingerprinter


class TinySpider(scrapy.Spider):
    """A real spider whose methods requests can name as callbacks."""

    name = "tiny"

    def parse_page(self, response, site):
        """Callback used by the serialized requests."""

    def on_error(self, failure):
        """Errback used by the serialized requests."""


def _request(url: str = "http://127.0.0.1:1/news/2018/1101/10001.html?utm_source=x", **kw) -> scrapy.Request:
    spider = TinySpider()
    return scrapy.Request(url, spider.parse_page, errback=spider.on_error, priority=3, method="POST",
                          body="正文".encode("gbk"), headers={"X-Bin": b"\xff\x00"},
                          cb_kwargs={"site": "甲日报"}, meta={"start": True, "depth": 2, "ids": (1, 2)}, **kw)


def test_settings_put_every_key_under_the_prefix_with_a_hash_tag():
    """One crawl's keys share the {job} hash tag; SCHEDULER_PERSIST stays on so one worker cannot flush."""
    s = distributed_settings("redis://127.0.0.1:1/0", "zhd:")
    assert s["SCHEDULER"] == "crawler.distributed.DistributedScheduler"
    assert s["DUPEFILTER_CLASS"] == "crawler.distributed.FingerprintDupeFilter"
    assert s["SCHEDULER_PERSIST"] is True and s["REDIS_URL"] == "redis://127.0.0.1:1/0"
    assert s["SCHEDULER_QUEUE_KEY"] == "zhd:crawl:{%(spider)s}:requests"
    assert crawl_keys("zhd:", "nightly")["dupefilter"] == "zhd:crawl:{nightly}:seen"
    with pytest.raises(ValueError, match="'%'"):
        distributed_settings("redis://127.0.0.1:1/0", "zhd%:")
    with pytest.raises(ValueError, match="braces"):
        crawl_keys("zhd:", "a{b}")
    with pytest.raises(ValueError, match="Redis URL"):
        distributed_settings("", "zhd:")


def test_one_switch_setting_or_environment(monkeypatch):
    """ZHDEDUP_DISTRIBUTED as a setting or as an environment variable; off by default."""
    from scrapy.settings import Settings

    monkeypatch.delenv("ZHDEDUP_DISTRIBUTED", raising=False)
    assert not enabled(Settings()) and enabled(Settings({"ZHDEDUP_DISTRIBUTED": "1"}))
    monkeypatch.setenv("ZHDEDUP_DISTRIBUTED", "1")
    assert enabled(Settings())


def test_addon_merges_the_settings_only_when_switched_on(monkeypatch):
    """The add-on in ADDONS leaves a normal crawl alone; switched on, it points at the store's Redis."""
    from scrapy.settings import Settings

    monkeypatch.delenv("ZHDEDUP_DISTRIBUTED", raising=False)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6399/2")
    monkeypatch.setenv("ZHDEDUP_PREFIX", "proj7:")
    off = Settings()
    DistributedAddon().update_settings(off)
    assert off.get("SCHEDULER") != "crawler.distributed.DistributedScheduler"
    on = Settings({"ZHDEDUP_DISTRIBUTED": True, "DISTRIBUTED_IDLE_CLOSE_SECONDS": 3})
    DistributedAddon().update_settings(on)
    assert on.get("SCHEDULER") == "crawler.distributed.DistributedScheduler"
    assert on.get("REDIS_URL") == "redis://127.0.0.1:6399/2"
    assert on.get("SCHEDULER_DUPEFILTER_KEY") == "proj7:crawl:{%(spider)s}:seen"
    assert on.getfloat("DISTRIBUTED_IDLE_CLOSE_SECONDS") == 3


def test_store_redis_follows_the_store_environment(monkeypatch):
    """REDIS_URL and ZHDEDUP_PREFIX are the storage's own variables: the queue lives next to the index."""
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6399/2")
    monkeypatch.setenv("ZHDEDUP_PREFIX", "proj7:")
    assert store_redis() == ("redis://127.0.0.1:6399/2", "proj7:")


def test_requests_round_trip_through_json_not_pickle():
    """Bytes body, binary headers, unicode cb_kwargs, callbacks by name; the queue entry is plain JSON."""
    spider = TinySpider()
    req = _request()
    data = dumps(req.to_dict(spider=spider))
    json.loads(data)  # readable with redis-cli, nothing executable
    back = request_from_dict(loads(data), spider=spider)
    assert (back.url, back.method, back.body, back.priority) == (req.url, "POST", req.body, 3)
    assert back.headers.get("X-Bin") == b"\xff\x00"
    assert back.callback == spider.parse_page and back.errback == spider.on_error
    assert back.cb_kwargs == {"site": "甲日报"} and back.meta["ids"] == [1, 2] and back.meta["start"] is True


def test_unserializable_meta_and_corrupt_entries_fail_clearly():
    """A set in meta names the field; garbage in the queue names the entry."""
    spider = TinySpider()
    bad = scrapy.Request("http://127.0.0.1:1/", spider.parse_page, meta={"tags": {"a"}})
    with pytest.raises(TypeError, match=r"request field request\.meta\.tags has a set"):
        dumps(bad.to_dict(spider=spider))
    with pytest.raises(ValueError, match="corrupt entry in the shared request queue"):
        loads(b"\x80\x04\x95 pickled")


@pytest.fixture
def shared(servers):
    """A real Redis client and a fresh key namespace, deleted afterwards."""
    r = redis.Redis.from_url(servers.redis_url)
    keys = {k: v % {"spider": "tiny"} for k, v in crawl_keys("tadapter:", "%(spider)s").items()}
    r.delete(*keys.values())
    yield r, keys
    r.delete(*keys.values())


def test_dupefilter_uses_the_project_fingerprint_and_push_is_atomic(shared):
    """The same article with and without tracking parameters is queued once; dont_filter bypasses the set."""
    r, keys = shared
    spider = TinySpider()
    df = FingerprintDupeFilter(r, keys["dupefilter"])
    df.fingerprinter = CanonicalRequestFingerprinter()
    queue = ClaimingPriorityQueue(r, spider, keys["requests"], serializer=distributed)
    plain = _request("http://127.0.0.1:1/news/2018/1101/10001.html")
    tracked = _request("http://127.0.0.1:1/news/2018/1101/10001.html?utm_source=weibo&spm=a.b")
    assert df.request_fingerprint(plain) == df.request_fingerprint(tracked)
    stock = RFPDupeFilter(r, keys["dupefilter"])   # scrapy-redis's own fingerprint keeps utm_/spm
    assert stock.request_fingerprint(plain) != stock.request_fingerprint(tracked)
    assert queue.push_unseen(plain, df.request_fingerprint(plain), df.key) is True
    assert queue.push_unseen(tracked, df.request_fingerprint(tracked), df.key) is False
    assert queue.push_unseen(tracked, None, df.key) is True       # dont_filter
    assert len(queue) == 2 and r.scard(keys["dupefilter"]) == 1


def test_pop_claims_the_request_for_this_worker(shared):
    """Popping marks the worker busy (score = Redis time + TTL) in the same Lua call; empty pop claims nothing."""
    r, keys = shared
    spider = TinySpider()
    queue = ClaimingPriorityQueue(r, spider, keys["requests"], serializer=distributed)
    queue.worker, queue.workers_key, queue.ttl = "host:1:abc", keys["workers"], 30
    low = _request("http://127.0.0.1:1/a.html")
    high = _request("http://127.0.0.1:1/b.html", dont_filter=True).replace(priority=9)
    queue.push_unseen(low, "fp-a", keys["dupefilter"])
    queue.push_unseen(high, "fp-b", keys["dupefilter"])
    assert queue.pop().url == "http://127.0.0.1:1/b.html"    # highest priority first
    now = float(r.time()[0])
    assert now + 25 <= r.zscore(keys["workers"], "host:1:abc") <= now + 31
    assert queue.pop().url == "http://127.0.0.1:1/a.html"
    r.delete(keys["workers"])
    assert queue.pop() is None and r.zcard(keys["workers"]) == 0
