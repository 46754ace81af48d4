"""A decision the crawl deferred (a lookup failed) is replayed with the crawl's dedup settings, not the
defaults: a pair that is a copy only at the crawl's passage coverage is found to be a copy on replay."""
from __future__ import annotations

import dataclasses

from scrapy.utils.test import get_crawler

from crawler.demo_site.content import STORIES
from fingerprint.neardup import DedupDoc, DedupEngine, LookupUnavailable, NearDupParams, is_near_duplicate
from pipelines.crawl_store import store_for
from pipelines.params import dedup_params
from storage import open_store
from storage.dedup_index import RedisDedupIndex

ORIGINAL = "\n".join(STORIES[0]["paragraphs"])
extra = "\n".join(STORIES[1]["paragraphs"])
COPY = ORIGINAL + "\n" + extra[: int(len(extra) * 0.7)]   # shared passages cover ~60% of it


def page(doc: DedupDoc, url: str) -> dict:
    return {"_id": doc.page_id, "url": url, "text": doc.text, "content_hash": doc.content_hash,
            "simhash": doc.simhash, "sketch": list(doc.sketch)}


def crawl_with_a_deferred_copy(store_config) -> tuple:
    """A crawl's store (ZHDEDUP_PASSAGE_COVERAGE 0.5) holding an original and a copy whose decision it deferred
    (the copy's verification could not read the original): (crawler, store, original, copy)."""
    settings = {"ZHDEDUP_STORE": {k: v for k, v in dataclasses.asdict(store_config).items() if v is not None},
                "ZHDEDUP_PASSAGE_COVERAGE": 0.5}
    crawler = get_crawler(settings_dict=settings)
    crawl = store_for(crawler)                     # the store as the crawl opens it
    index = RedisDedupIndex(crawl)
    engine = DedupEngine(dedup_params(crawler.settings), index)
    original = DedupDoc.of(crawl.new_page_id(), ORIGINAL)
    assert engine.decide(original).kind == "new"
    crawl.save_page(page(original, "http://a/1"))

    def unreadable(page_id: str) -> str:
        raise LookupUnavailable("MongoDB away for a moment")

    index.text_of = unreadable                     # the copy's verification cannot read the original now
    copy = DedupDoc.of(crawl.new_page_id(), COPY)
    verdict = engine.decide(copy)
    assert verdict.kind == "new" and verdict.spooled   # kept for now, its decision deferred to the spool
    crawl.save_page(page(copy, "http://b/1"))
    return crawler, crawl, original, copy


def test_deferred_decision_is_replayed_with_the_crawls_passage_coverage(store, store_config):
    assert is_near_duplicate(ORIGINAL, COPY, NearDupParams()).kind == "new"           # not at the default 0.75
    assert is_near_duplicate(ORIGINAL, COPY, NearDupParams(min_coverage=0.5)).method == "passages"
    _, crawl, original, copy = crawl_with_a_deferred_copy(store_config)
    crawl.close()

    with open_store(store_config) as st:           # the next open (no crawl settings) replays the spool
        assert st.get_page(copy.page_id) is None
        dup = st.duplicates.find_one({"url": "http://b/1"})
        assert (dup["original_id"], dup["method"]) == (original.page_id, "passages")
        assert st.get_page(original.page_id) is not None


def test_a_crawls_deferred_decision_is_replayed_when_it_closes(store, store_config):
    """The crawl's last deferral does not wait for the next crawl: the spider's close replays the spool
    (invariant seed 2739 kept a copy undecided beside its original after the last run)."""
    from scrapy import signals

    crawler, _, original, copy = crawl_with_a_deferred_copy(store_config)
    crawler.signals.send_catch_log(signal=signals.spider_closed, spider=None, reason="finished")

    with open_store(dataclasses.replace(store_config, replay_spool=False)) as st:   # no replay at this open
        assert st.get_page(copy.page_id) is None and st.spool.count() == 0
        dup = st.duplicates.find_one({"url": "http://b/1"})
        assert (dup["original_id"], dup["method"]) == (original.page_id, "passages")
