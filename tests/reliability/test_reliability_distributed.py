"""Distributed mode (shared Redis queue): a worker SIGKILLed mid-crawl loses nothing. Every request a
worker pops stays in Redis as a lease until its page is finished; the leases of a worker whose alive
mark expired go back to the queue, so the other worker (or the same command started again) fetches
them. Every story stored once, every copy recorded, every article fetched."""
from __future__ import annotations

import socket

import pytest

from tests.reliability.reliability_helpers import (DISTRIBUTED, CrawlProc, NewsSites, assert_every_story_once, count_pages,
                                                   crawl_env, wait_until)

pytestmark = pytest.mark.timeout(150)
SHARED = DISTRIBUTED


def test_killed_worker_requests_are_taken_over(store, tmp_path):
    """Two workers; one is SIGKILLed after a few pages; the survivor finishes the whole crawl."""
    sites = NewsSites()
    try:
        env = crawl_env(store.config)
        with sites.held_after(14):   # at least 7 stories answered, the rest wait: the kill comes mid-crawl
            survivor = CrawlProc(sites.start_urls, env, tmp_path / "survivor.log", SHARED)
            victim = CrawlProc(sites.start_urls, env, tmp_path / "victim.log", SHARED)
            inflight = f"{store.config.key_prefix}crawl:{{news}}:inflight"
            mine = f"{socket.gethostname()}:{victim.proc.pid}:".encode()

            def victim_busy() -> bool:
                """Some pages stored and the victim holds leases right now."""
                return count_pages(store) >= 6 and any(m.startswith(mine) for m in store.redis.zrange(inflight, 0, -1))

            wait_until(victim_busy, 60, "the victim holding requests", victim)
            victim.kill()
        assert count_pages(store) < len(sites.expected.groups), "the kill came too late to test anything"
        assert survivor.wait(120) == 0, survivor.log[-3000:]
        hits = sites.article_hits()
    finally:
        sites.stop()
    assert_every_story_once(store, sites.expected)
    assert set(hits) == {u for urls in sites.expected.groups.values() for u in urls}
    assert "request(s) of a worker that died (killed?) queued again" in survivor.log
