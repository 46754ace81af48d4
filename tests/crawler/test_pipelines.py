"""The pipelines on their own, with a real store: dedup reasons, licences, store documents, settings."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest
from scrapy import signals
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from crawler import settings as project_settings
from crawler.demo_site.content import BOOK, STORIES
from crawler.extensions import reason_key
from crawler.items import utc_now
from crawler.urls import page_id
from pipelines.dedup import DedupPipeline
from pipelines.fingerprint import FingerprintPipeline
from pipelines.infringement import InfringementPipeline
from pipelines.store import StorePipeline


def crawler_for(store_config, **extra):
    """A Scrapy crawler whose pipelines open the test's store."""
    cfg = {k: v for k, v in dataclasses.asdict(store_config).items()}
    inline = {"ZHDEDUP_EXTRACT_WORKERS": 0, "ZHDEDUP_FINGERPRINT_WORKERS": 0}  # workers: test_pipeline_levers
    return get_crawler(settings_dict={"ZHDEDUP_STORE": cfg, **inline, **extra})


def item(url: str, text: str, site: str = "s.example") -> dict:
    """An extracted item as ExtractPipeline leaves it."""
    return {"url": url, "canonical_url": url, "page_id": page_id(url), "site": site, "spider": "news",
            "title": "标题", "text": text, "fetched": utc_now()}


async def through(pipes, it):
    """Run an item through pipelines in order."""
    for pipe in pipes:
        it = await pipe.process_item(it)
    return it


def test_pipeline_chain_keeps_new_drops_copies_and_skips_licensed_sites(store, store_config):
    crawler = crawler_for(store_config)
    crawler.stats.open_spider()
    fp, dedup = FingerprintPipeline.from_crawler(crawler), DedupPipeline.from_crawler(crawler)
    infringe, keep = InfringementPipeline.from_crawler(crawler), StorePipeline.from_crawler(crawler)
    pipes = [fp, infringe, dedup, keep]  # the order of crawler/settings.py
    source, licensed = ("\n".join(BOOK["chapters"][n][1]) for n in (0, 1))
    for sid, text in (("src-1", source), ("src-2", licensed)):
        infringe.library.register(sid, sid, text)
    store.db.sources.update_one({"_id": "src-2"}, {"$set": {"licensed_sites": ["partner.example"]}})
    story = "\n".join(STORIES[0]["paragraphs"])

    async def scenario():
        first = await through(pipes, item("http://a.example/1.html", story))
        with pytest.raises(DropItem, match=r"^exact duplicate of http://a\.example/1\.html$"):
            await through(pipes, item("http://b.example/9.html", story))
        pirate = await through(pipes, item("http://p.example/1.html", "广告\n" + source, site="p.example"))
        partner = await through(pipes, item("http://partner.example/1.html", licensed + "\n转载", site="partner.example"))
        return first, pirate, partner

    first, pirate, partner = asyncio.run(scenario())
    assert first["dedup"]["kind"] == "new" and len(first["content_hash"]) == 32
    assert store.get_page(first["page_id"])["url"] == "http://a.example/1.html"
    dup = store.duplicates.find_one({"url": "http://b.example/9.html"})
    assert (dup["original_url"], dup["method"], dup["original_id"]) == ("http://a.example/1.html", "exact", first["page_id"])
    assert [m["source_id"] for m in pirate.get("matches", [])] == ["src-1"]
    assert "matches" not in partner  # licensed: no match record
    assert {m["suspect_url"] for m in store.db.matches.find({})} == {"http://p.example/1.html"}
    stats = crawler.stats.get_stats()
    assert stats["zhdedup/dropped/exact"] == 1 and stats["zhdedup/matched"] == 1
    assert stats["zhdedup/stored"] == 3 and stats["zhdedup/matches_licensed"] == 1
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="done")


def test_items_without_text_are_dropped_with_a_reason(store_config):
    crawler = crawler_for(store_config)
    crawler.stats.open_spider()
    with pytest.raises(DropItem, match="no text to fingerprint"):
        asyncio.run(FingerprintPipeline.from_crawler(crawler).process_item(item("http://x/1", "  ")))


def test_reason_keys():
    assert reason_key("no article body: page says 404") == "no_article_body"
    assert reason_key("no text to fingerprint: http://x") == "no_text_to_fingerprint"


def test_polite_defaults():
    s = project_settings
    assert s.ROBOTSTXT_OBEY and s.AUTOTHROTTLE_ENABLED and s.CONCURRENT_REQUESTS_PER_DOMAIN <= 2
    assert s.REMOTE_CONTROL_ENABLED is False and s.TELNETCONSOLE_ENABLED is False
    assert s.DOWNLOAD_MAXSIZE == 16 * 1024 * 1024 and s.DOWNLOAD_WARNSIZE < s.DOWNLOAD_MAXSIZE
    assert "http" in s.USER_AGENT and s.HTTPCACHE_ENABLED is False and s.REDIRECT_MAX_TIMES == 5
    order = [name.rsplit(".", 1)[1] for name, _ in sorted(s.ITEM_PIPELINES.items(), key=lambda kv: kv[1])]
    assert order == ["ExtractPipeline", "FingerprintPipeline", "InfringementPipeline", "DedupPipeline", "StorePipeline"]
    assert s.ZHDEDUP_DISTRIBUTED is False and "crawler.distributed.DistributedAddon" in s.ADDONS


def test_copies_simhash_misses_are_dropped_by_shared_passages(store, store_config):
    """A reordered, re-punctuated reprint is past SimHash's k = 3 but shares its passages."""
    crawler = crawler_for(store_config)
    crawler.stats.open_spider()
    fp, dedup, keep = (FingerprintPipeline.from_crawler(crawler), DedupPipeline.from_crawler(crawler),
                       StorePipeline.from_crawler(crawler))
    story = "\n".join(STORIES[1]["paragraphs"])
    reordered = "广告：专业装修公司，免费上门量房。扫码下载客户端阅读更多\n" + "\n".join(reversed(STORIES[1]["paragraphs"]))
    other = "\n".join(STORIES[2]["paragraphs"])

    async def scenario():
        first = await through([fp, dedup, keep], item("http://a.example/2.html", story))
        copy = await through([fp], item("http://c.example/2.html", reordered))
        with pytest.raises(DropItem, match=r"^near duplicate of http://a\.example/2\.html \(shared passages cover \d+%\)$"):
            await through([dedup, keep], copy)
        kept = await through([fp, dedup, keep], item("http://a.example/3.html", other))
        return first, copy, kept

    first, copy, kept = asyncio.run(scenario())
    from fingerprint import hamming
    assert hamming(first["simhash"], copy["simhash"]) > 3  # SimHash alone would have kept it
    dup = store.duplicates.find_one({"url": "http://c.example/2.html"})
    assert (dup["method"], dup["original_id"], dup["distance"]) == ("passages", first["page_id"], None)
    assert dup["coverage"] >= 0.75
    assert kept["dedup"]["kind"] == "new" and crawler.stats.get_value("zhdedup/dropped/passages") == 1
    # the copy left nothing behind in the index: a third copy is still compared with the original
    assert store.claim_sketch("probe", copy["sketch"], 1)[1][0][0] == first["page_id"]


def test_a_copy_published_earlier_becomes_the_original(store, store_config):
    """Nutch's rule: the earliest published copy is the original, whichever was crawled first."""
    crawler = crawler_for(store_config)
    crawler.stats.open_spider()
    pipes = [FingerprintPipeline.from_crawler(crawler), DedupPipeline.from_crawler(crawler),
             StorePipeline.from_crawler(crawler)]
    story = "\n".join(STORIES[3]["paragraphs"])

    def dated(url: str, text: str, published: str) -> dict:
        return {**item(url, text), "published": published}

    async def scenario():
        late = await through(pipes, dated("http://reprint.example/1.html", story + "（转载）", "2025-03-12"))
        early = await through(pipes, dated("http://origin.example/1.html", story, "2025-03-10"))
        with pytest.raises(DropItem, match=r"duplicate of http://origin\.example/1\.html"):
            await through(pipes, dated("http://third.example/1.html", story + "（完）", "2025-03-15"))
        return late, early

    late, early = asyncio.run(scenario())
    assert early["dedup"] == {"kind": "new", "spooled": False, "replaced": late["page_id"]}
    assert store.get_page(late["page_id"]) is None and store.get_page(early["page_id"])["url"] == "http://origin.example/1.html"
    moved = store.duplicates.find_one({"url": "http://reprint.example/1.html"})
    assert moved["original_id"] == early["page_id"] and moved["replaced_by_earlier"] is True
    third = store.duplicates.find_one({"url": "http://third.example/1.html"})
    assert third["original_id"] == early["page_id"]
    assert crawler.stats.get_value("zhdedup/replaced_original") == 1


@pytest.mark.parametrize("k", range(7))
def test_the_crawl_serves_every_k_exactly(store, store_config, k):
    """Through DedupPipeline (the crawl's path): a page k bits away is a copy, k+1 bits away is new."""
    import hashlib

    from pipelines.drops import DuplicateItem

    crawler = crawler_for(store_config, ZHDEDUP_SIMHASH_K=k, ZHDEDUP_PASSAGES=False)
    crawler.stats.open_spider()
    dedup = DedupPipeline.from_crawler(crawler)
    base = 0x5A5A_1234_F0F0_0F0F

    def fp_item(n: int, bits: int, offset: int) -> dict:
        # bits spread over the whole fingerprint: four fixed 16-bit blocks would miss every k >= 4
        simhash = base ^ sum(1 << ((offset + 64 * i // bits) % 64) for i in range(bits))
        return {**item(f"http://k.example/{n}.html", f"文本{n}"), "simhash": simhash,
                "content_hash": hashlib.md5(f"k{n}".encode()).hexdigest(), "sketch": []}

    async def scenario():
        await dedup.process_item(fp_item(1, 0, 0))
        kept = await dedup.process_item(fp_item(2, k + 1, 3))   # k+1 bits from page 1
        with pytest.raises(DuplicateItem) as dropped:
            await dedup.process_item(fp_item(3, k, 5))          # k bits from page 1, 2k+1 from page 2
        return kept, dropped.value

    kept, dropped = asyncio.run(scenario())
    assert kept["dedup"]["kind"] == "new"
    assert (dropped.kind, dropped.distance) == ("near", k)
    assert dedup.store.index.k == k


def test_a_save_never_waits_behind_a_decision_that_waits_for_it(store, store_config):
    """A dated copy's decision may wait for its original's save (DedupIndex.settled), holding a store thread.
    With every store thread waiting so, the saves queued behind them, each wait ran out, and the pages were
    kept undecided until the next open. Group-committed writes have threads of their own."""
    import threading

    from pipelines.crawl_store import GroupCommit, _holder, run_blocking

    crawler = crawler_for(store_config, ZHDEDUP_STORE_THREADS=1)
    saved = threading.Event()

    def write_many(records):
        saved.set()
        return records

    commit = GroupCommit(crawler, write_many)

    async def scenario():
        waiting = run_blocking(crawler, saved.wait, 30)      # the only store thread waits for the save
        assert await commit.save("page") == "page"
        assert await waiting is True

    try:
        asyncio.run(asyncio.wait_for(scenario(), 20))
    finally:
        saved.set()
        _holder(crawler).spider_closed(None)


@pytest.mark.parametrize("trace", [True, False])
def test_trace_decisions_logs_every_verdict_at_info(store, store_config, caplog, trace):
    """ZHDEDUP_TRACE_DECISIONS: the invariant harness reads a failing run back from these lines."""
    import logging

    from pipelines.crawl_store import _holder

    crawler = crawler_for(store_config, ZHDEDUP_TRACE_DECISIONS=trace)
    crawler.stats.open_spider()
    fp, dedup = FingerprintPipeline.from_crawler(crawler), DedupPipeline.from_crawler(crawler)
    story = "\n".join(STORIES[0]["paragraphs"])
    caplog.set_level(logging.INFO, logger="zhdedup.decisions")
    try:
        asyncio.run(through([fp, dedup], item("http://a.example/1.html", story)))
    finally:
        _holder(crawler).spider_closed(None)
    lines = [r.getMessage() for r in caplog.records if r.name == "zhdedup.decisions" and r.levelno == logging.INFO]
    assert (len(lines) == 1 and "http://a.example/1.html" in lines[0] and "kind='new'" in lines[0]) is trace, lines
