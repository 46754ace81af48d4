"""The crawl's speed levers change nothing but speed: batched saves, extraction and fingerprints in workers."""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import re
import signal

import pytest
from scrapy import signals
from scrapy.utils.test import get_crawler

from crawler.demo_site.content import STORIES
from crawler.urls import page_id
from pipelines.drops import SkippedItem
from pipelines.errors import CrawlCannotStart
from pipelines.extract import ExtractPipeline
from pipelines.fingerprint import FingerprintPipeline
from pipelines.stats import WORKERS_CPU_MS
from pipelines.store import StorePipeline

STORY = "\n".join(STORIES[0]["paragraphs"])
PAGE = ("<html><head><meta charset='utf-8'><title>新闻标题</title></head><body><div class='nav'><a href='/'>首页</a>"
        "</div><div class='content'>" + "".join(f"<p>{p}</p>" for p in STORIES[1]["paragraphs"]) + "</div></body></html>")


def crawler_for(store_config=None, **extra):
    """A Scrapy crawler with the test's store (when given) and extra settings."""
    cfg = {"ZHDEDUP_STORE": dataclasses.asdict(store_config)} if store_config is not None else {}
    crawler = get_crawler(settings_dict={**cfg, **extra})
    crawler.stats.open_spider()
    return crawler


def page_item(n: int) -> dict:
    url = f"http://a.example/{n}.html"
    return {"url": url, "canonical_url": url, "page_id": page_id(url), "site": "a.example", "spider": "news",
            "title": f"标题{n}", "text": f"{STORY}\n{n}", "body": b"<html/>", "headers": {}}


def test_pages_arriving_together_are_saved_in_one_batch(store, store_config):
    crawler = crawler_for(store_config, ZHDEDUP_STORE_BATCH=4)
    pipe = StorePipeline.from_crawler(crawler)
    sizes: list[int] = []
    real = pipe.batcher.write_many
    pipe.batcher.write_many = lambda docs: sizes.append(len(docs)) or real(docs)

    async def save_all():
        return await asyncio.gather(*(pipe.process_item(page_item(n)) for n in range(6)))

    items = asyncio.run(save_all())
    assert sizes == [4, 2]  # all six arrive before the first write starts: batches of at most 4
    assert [store.get_page(it["page_id"])["url"] for it in items] == [f"http://a.example/{n}.html" for n in range(6)]
    assert all("body" not in it for it in items) and crawler.stats.get_value("zhdedup/stored") == 6
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="done")


@pytest.mark.parametrize("wait_ms, sizes", [(0, [1, 2]), (1000, [3])])
def test_copy_records_wait_to_batch_as_page_saves_do(store, store_config, wait_ms, sizes):
    """ZHDEDUP_STORE_BATCH_MS holds copy records too: one arriving a moment after another goes in its write."""
    from pipelines.dedup import DedupPipeline

    crawler = crawler_for(store_config, ZHDEDUP_STORE_BATCH_MS=wait_ms)
    pipe = DedupPipeline.from_crawler(crawler)
    seen: list[int] = []
    real = pipe.copies.write_many
    pipe.copies.write_many = lambda records: seen.append(len(records)) or real(records)
    original = page_id("http://a.example/0.html")

    def copy(n: int) -> dict:
        return {"url": f"http://b.example/{n}.html", "original_id": original, "method": "exact"}

    async def arrive():
        first = asyncio.ensure_future(pipe.copies.save(copy(0)))
        for _ in range(3):   # the first record queued, its writer started: writing (no wait) or waiting
            await asyncio.sleep(0)
        return await asyncio.gather(first, pipe.copies.save(copy(1)), pipe.copies.save(copy(2)))

    try:
        assert asyncio.run(arrive()) == [True, True, True]
        assert seen == sizes
        assert {d["url"] for d in store.find_duplicates()} == {f"http://b.example/{n}.html" for n in range(3)}
    finally:
        crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="done")


def test_a_bad_page_fails_alone_in_its_batch(store, store_config):
    from storage import BadDocument

    crawler = crawler_for(store_config, ZHDEDUP_STORE_BATCH_MS=20)
    pipe = StorePipeline.from_crawler(crawler)
    bad = {**page_item(1), "text": "坏\ud800"}

    async def save_both():
        return await asyncio.gather(pipe.process_item(page_item(0)), pipe.process_item(bad), return_exceptions=True)

    good, error = asyncio.run(save_both())
    assert isinstance(error, BadDocument) and store.get_page(good["page_id"])["url"] == "http://a.example/0.html"
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="done")


def _run(pipe, item):
    """process_item on its own loop, whether it returns the item or an awaitable of it."""
    async def go():
        out = pipe.process_item(item)
        return await out if inspect.isawaitable(out) else out
    return asyncio.run(go())


def test_extraction_and_fingerprints_in_workers_equal_inline():
    inline = crawler_for(ZHDEDUP_EXTRACT_WORKERS=0, ZHDEDUP_FINGERPRINT_WORKERS=0)
    pooled = crawler_for(ZHDEDUP_EXTRACT_WORKERS=1, ZHDEDUP_FINGERPRINT_WORKERS=1)
    results = []
    for crawler in (inline, pooled):
        ex, fp = ExtractPipeline.from_crawler(crawler), FingerprintPipeline.from_crawler(crawler)
        ex.open_spider(), fp.open_spider()
        item = _run(ex, {"url": "http://a.example/s.html", "body": PAGE.encode(), "headers": {}})
        results.append(_run(fp, item))
        with pytest.raises(SkippedItem, match="^no article body: binary"):
            _run(ex, {"url": "http://a.example/x.png", "body": b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "headers": {}})
        assert crawler.stats.get_value("extract/dropped/binary") == 1
        crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="done")
    assert (ex.pool is not None) and ex.pool is fp.pool and not ex.pool.started  # shared, shut down
    assert results[0]["text"] and results[0] == results[1]
    assert pooled.stats.get_value(WORKERS_CPU_MS, 0) > 0 and inline.stats.get_value(WORKERS_CPU_MS) is None


def test_a_killed_worker_loses_no_page(caplog):
    crawler = crawler_for(ZHDEDUP_EXTRACT_WORKERS=1)
    ex = ExtractPipeline.from_crawler(crawler)
    ex.open_spider()
    first = _run(ex, {"url": "http://a.example/1.html", "body": PAGE.encode(), "headers": {}})
    for pid in ex.pool.pids():
        os.kill(pid, signal.SIGKILL)
    second = _run(ex, {"url": "http://a.example/2.html", "body": PAGE.encode(), "headers": {}})
    assert second["text"] == first["text"] and ex.pool.broken
    assert "worker processes stopped" in caplog.text
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="done")


def test_worker_settings_auto_and_bad_values(monkeypatch):
    from scrapy.settings import Settings

    from pipelines import _workers

    for cpus, expected, limit in ((1, 0, 0), (2, 1, 2), (16, 1, 16)):
        monkeypatch.setattr(_workers, "usable_cpus", lambda cpus=cpus: cpus)
        assert _workers.worker_count(Settings({}), "ZHDEDUP_EXTRACT_WORKERS") == expected
        assert _workers.worker_count(Settings({"ZHDEDUP_EXTRACT_WORKERS": " Auto "}), "ZHDEDUP_EXTRACT_WORKERS") == expected
        assert _workers.worker_limit(Settings({}), "ZHDEDUP_EXTRACT_WORKERS") == limit   # grown to while busy
    assert _workers.worker_count(Settings({"ZHDEDUP_EXTRACT_WORKERS": "3"}), "ZHDEDUP_EXTRACT_WORKERS") == 3
    assert _workers.worker_limit(Settings({"ZHDEDUP_EXTRACT_WORKERS": "3"}), "ZHDEDUP_EXTRACT_WORKERS") == 3
    for bad in ("many", "-1", "1.5"):
        with pytest.raises(CrawlCannotStart, match=re.escape(f"ZHDEDUP_FINGERPRINT_WORKERS={bad!r}")):
            _workers.worker_count(Settings({"ZHDEDUP_FINGERPRINT_WORKERS": bad}), "ZHDEDUP_FINGERPRINT_WORKERS")


def test_store_threads_auto_and_bad_values(monkeypatch):
    from scrapy.settings import Settings

    from pipelines import _workers
    from pipelines.crawl_store import store_threads

    for cpus, expected in ((1, 2), (2, 2), (3, 4), (16, 4)):
        monkeypatch.setattr(_workers, "usable_cpus", lambda cpus=cpus: cpus)
        assert store_threads(Settings({})) == expected
        assert store_threads(Settings({"ZHDEDUP_STORE_THREADS": " AUTO "})) == expected
    assert store_threads(Settings({"ZHDEDUP_STORE_THREADS": "6"})) == 6
    for bad in ("many", "0", "-2", "1.5"):
        with pytest.raises(CrawlCannotStart, match=re.escape(f"ZHDEDUP_STORE_THREADS={bad!r}")):
            store_threads(Settings({"ZHDEDUP_STORE_THREADS": bad}))
