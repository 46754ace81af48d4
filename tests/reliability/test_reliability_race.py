"""Two crawler processes racing over the same sites on one store: every story stored exactly once, every
other copy recorded as a duplicate of that one page, no URL stored or recorded twice."""
from __future__ import annotations

import pytest

from tests.reliability.reliability_helpers import CrawlProc, NewsSites, assert_every_story_once, crawl_env

pytestmark = pytest.mark.timeout(150)


def test_two_crawlers_on_the_same_sites(store, tmp_path):
    """Both crawl A and B at the same moment (same URLs, copies racing their originals)."""
    sites = NewsSites(delay=0.03)
    try:
        env = crawl_env(store.config)
        procs = [CrawlProc(sites.start_urls, env, tmp_path / f"{i}.log") for i in (1, 2)]
        for p in procs:
            assert p.wait(120) == 0, p.log[-3000:]
        hits = sites.article_hits()
    finally:
        sites.stop()
    assert_every_story_once(store, sites.expected, [p.log_path for p in procs])
    assert all(n == 2 for n in hits.values()), "each process should fetch every article once"


def test_one_crawler_per_site_copies_race_originals(store, tmp_path):
    """A on one process and B on another: each copy on B races its original on A."""
    sites = NewsSites(delay=0.02)
    try:
        env = crawl_env(store.config)
        a, b = sites.start_urls.split(",")
        procs = [CrawlProc(u, env, tmp_path / f"{i}.log") for i, u in enumerate((a, b))]
        for p in procs:
            assert p.wait(120) == 0, p.log[-3000:]
    finally:
        sites.stop()
    counts = assert_every_story_once(store, sites.expected, [p.log_path for p in procs])
    assert counts["duplicates"] == sum(len(v) - 1 for v in sites.expected.groups.values())
