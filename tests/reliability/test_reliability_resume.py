"""Pause and resume with JOBDIR: Ctrl-C (SIGINT, graceful) and SIGKILL mid-crawl, then the same command.

Finished pages are not fetched again, no story is stored twice, and the pages that were in flight at
the kill are fetched again (never lost). Real `scrapy crawl` processes, the session's real servers.
"""
from __future__ import annotations

import signal

import pytest

from tests.reliability.reliability_helpers import (CONCURRENT, CrawlProc, NewsSites, assert_every_story_once,
                                                   count_pages, crawl_env, wait_until)

pytestmark = pytest.mark.timeout(150)


@pytest.fixture(scope="module")
def sites():
    """The slow A/B news sites, for this module."""
    s = NewsSites()
    yield s
    s.stop()


def fetched_since(sites: NewsSites, before: dict[str, int]) -> dict[str, int]:
    """Article fetches since `before`, per URL."""
    now = sites.article_hits()
    return {u: n - before.get(u, 0) for u, n in now.items() if n - before.get(u, 0)}


def done_urls(store) -> set[str]:
    """URLs whose page or duplicate record is in MongoDB."""
    return {d["url"] for d in store.pages.find({}, {"url": 1})} | \
        {d["url"] for d in store.duplicates.find({}, {"url": 1})}


def test_sigkill_mid_crawl_then_same_command_resumes(store, sites, tmp_path):
    """SIGKILL after a few pages; the same command finishes the crawl: nothing lost, nothing twice,
    finished pages not fetched again (only those in flight at the kill, at most CONCURRENT)."""
    env, job = crawl_env(store.config), {"JOBDIR": str(tmp_path / "job")}
    before = sites.article_hits()
    first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", job)
    wait_until(lambda: count_pages(store) >= 6, 60, "6 stored pages", first)
    first.kill()
    finished = done_urls(store)
    fetched_first = fetched_since(sites, before)
    assert count_pages(store) < len(sites.expected.groups), "the kill came too late to test anything"
    mid = sites.article_hits()
    second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", job)
    assert second.wait() == 0, second.log[-3000:]
    assert "did not stop cleanly" in second.log
    assert_every_story_once(store, sites.expected)
    again = fetched_since(sites, mid)
    assert not finished & set(again), f"finished pages fetched again: {sorted(finished & set(again))}"
    refetched = set(again) & set(fetched_first)
    assert len(refetched) <= CONCURRENT, f"{len(refetched)} pages fetched twice: {sorted(refetched)}"
    every = fetched_since(sites, before)
    assert set(every) == {u for urls in sites.expected.groups.values() for u in urls}


def test_ctrl_c_then_resume_fetches_every_page_once(store, sites, tmp_path):
    """SIGINT stops gracefully (in-flight pages finish); resume fetches each article exactly once in
    total; a third run of the finished crawl fetches no article at all."""
    env, job = crawl_env(store.config), {"JOBDIR": str(tmp_path / "job")}
    before = sites.article_hits()
    first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", job)
    wait_until(lambda: count_pages(store) >= 6, 60, "6 stored pages", first)
    first.signal(signal.SIGINT)
    assert first.wait() == 0, first.log[-3000:]
    assert "shutdown" in first.log
    assert count_pages(store) < len(sites.expected.groups), "the stop came too late to test anything"
    second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", job)
    assert second.wait() == 0, second.log[-3000:]
    assert "did not stop cleanly" not in second.log
    assert_every_story_once(store, sites.expected)
    every = fetched_since(sites, before)
    assert every == {u: 1 for urls in sites.expected.groups.values() for u in urls}
    mid = sites.article_hits()
    third = CrawlProc(sites.start_urls, env, tmp_path / "3.log", job)
    assert third.wait() == 0, third.log[-3000:]
    assert fetched_since(sites, mid) == {}


def test_two_crawls_cannot_share_one_jobdir(store, sites, tmp_path):
    """A second crawl on a JOBDIR in use stops at once with a message naming the directory."""
    env, jobdir = crawl_env(store.config), tmp_path / "job"
    first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", {"JOBDIR": str(jobdir)})
    try:
        wait_until(lambda: (jobdir / "frontier.journal").exists(), 60, "the first crawl's journal", first)
        second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", {"JOBDIR": str(jobdir)})
        assert second.wait(60) == 2
        assert "Traceback" not in second.log
        assert f"JOBDIR {jobdir} is in use by another crawl (pid {first.proc.pid})" in second.log
    finally:
        first.kill()
