"""Distributed mode: a worker SIGKILLed while it still holds outcome records in memory (they are written in
batches) loses none of them. A request stays leased in Redis until the outcome of its page is written,
so the pages whose outcomes died with the worker are fetched again by another worker; every fetched URL
ends with an outcome and no URL has two in one run; a page that failed in a pipeline is fetched again by
the next run. Real `scrapy crawl` processes, real servers."""
from __future__ import annotations

import json
import socket
from collections import Counter

import pytest

from tests.reliability.reliability_helpers import (DISTRIBUTED, CrawlProc, NewsSites, assert_every_story_once,
                                                   crawl_env, wait_until)

pytestmark = pytest.mark.timeout(120)
SHARED = DISTRIBUTED


def test_killed_worker_loses_no_outcome(store, tmp_path):
    """Two workers (outcomes written 500 at a time, the default); one is SIGKILLed after some pages."""
    sites = NewsSites()
    try:
        env = crawl_env(store.config)
        with sites.held_after(20):   # the rest wait: the victim finishes some and holds others at the kill
            survivor = CrawlProc(sites.start_urls, env, tmp_path / "survivor.log", SHARED)
            victim = CrawlProc(sites.start_urls, env, tmp_path / "victim.log", SHARED)
            inflight = f"{store.config.key_prefix}crawl:{{news}}:inflight"
            mine = f"{socket.gethostname()}:{victim.proc.pid}:".encode()

            peak = [0]

            def victim_finished_some() -> bool:
                """The victim has finished pages (released some of its requests) and still holds others."""
                held = sum(1 for m in store.redis.zrange(inflight, 0, -1) if m.startswith(mine))
                peak[0] = max(peak[0], held)
                return 0 < held < peak[0]

            wait_until(victim_finished_some, 60, "the victim finishing pages", victim)
            victim.kill()
        assert survivor.wait(60) == 0, survivor.log[-3000:]
        assert "request(s) of a worker that died (killed?) queued again" in survivor.log
        fetched = {sites.server.base(h) + path for h in sites.hosts for path in sites.server.hits(h)}
    finally:
        sites.stop()
    assert_every_story_once(store, sites.expected)
    outcomes = list(store.outcomes.find({}, {"url": 1, "run": 1}))
    twice = [(o, n) for o, n in Counter((o["run"], o["url"]) for o in outcomes).items() if n > 1]
    assert not twice, f"URLs with two outcomes in one run: {twice[:5]}"
    missing = fetched - {o["url"] for o in outcomes}
    assert not missing, f"{len(missing)} fetched URL(s) without an outcome: {sorted(missing)[:5]}"


def test_a_page_that_failed_in_a_pipeline_is_fetched_again_by_the_next_run(store, tmp_path):
    """A distributed crawl whose pipeline raised for one page (outcome failed): the same command run again
    fetches that page (as a JOBDIR resume does) instead of skipping it as seen; every story ends stored."""
    from crawler import settings as project

    sites = NewsSites()
    try:
        failing = sites.expected.groups[3][0]
        pipelines = {**project.ITEM_PIPELINES, "tests.reliability.failing_pipeline.FailNamedUrls": 290}
        env = crawl_env(store.config)
        first = CrawlProc(sites.start_urls, {**env, "ZHDEDUP_TEST_FAIL_URLS": failing}, tmp_path / "first.log",
                          {**SHARED, "ITEM_PIPELINES": json.dumps(pipelines)})
        first.wait(90)
        assert store.outcomes.find_one({"url": failing})["outcome"] == "failed", first.log[-3000:]
        assert "failed in a pipeline; the next run fetches it again" in first.log
        second = CrawlProc(sites.start_urls, env, tmp_path / "second.log", SHARED)
        assert second.wait(90) == 0, second.log[-3000:]
        assert "1 request(s) whose pages failed in a pipeline last time queued again" in second.log
        hits = sites.article_hits()
    finally:
        sites.stop()
    assert hits[failing] == 2
    assert_every_story_once(store, sites.expected)
    assert {o["outcome"] for o in store.outcomes.find({"url": failing})} - {"failed"}
