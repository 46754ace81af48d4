"""Pause and resume with JOBDIR: Ctrl-C (SIGINT, graceful) and SIGKILL mid-crawl, then the same command.

Finished pages are not fetched again, no story is stored twice, and the pages that were in flight at
the kill are fetched again (never lost). Real `scrapy crawl` processes, the session's real servers.
"""
from __future__ import annotations

import base64
import pickle
import signal
from pathlib import Path

import pytest

from crawler.journal import JOURNAL
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


def journal_done(jobdir: Path) -> set[str]:
    """URLs the crawl has durably marked finished in its frontier journal (`- fp` after `+ fp request`),
    read while the crawl runs (each line is one write; a torn last line is ignored, as resume does)."""
    url_of, done = {}, set()
    try:
        data = (jobdir / JOURNAL).read_bytes()
    except FileNotFoundError:
        return set()
    for raw in data.split(b"\n")[:-1]:
        kind, fp, *rest = raw.decode("ascii").split(" ", 2)
        if kind == "+":
            url_of[fp] = pickle.loads(base64.b64decode(rest[0]))["url"]
        elif kind == "-":
            done.add(fp)
    return {url_of[fp] for fp in done if fp in url_of}


def test_sigkill_mid_crawl_then_same_command_resumes(store, sites, tmp_path):
    """SIGKILL mid-crawl (the sites hold back all but 12 articles until then, so the crawl cannot end
    first); the same command finishes the crawl: nothing lost, nothing twice. A page is finished once
    the journal says so durably (its `- fp` line, written after the page or its copy record is in
    MongoDB): finished pages are not fetched again, and every page fetched but not yet finished at the
    kill (in flight, or stored but killed before its journal line) is fetched again."""
    env, jobdir = crawl_env(store.config), tmp_path / "job"
    articles = {u for urls in sites.expected.groups.values() for u in urls}
    before = sites.article_hits()
    with sites.held_after(12):   # 12 articles are >= 6 stories (a story has at most 2 URLs here)
        first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", {"JOBDIR": str(jobdir)})
        wait_until(lambda: len(journal_done(jobdir) & articles) >= 6, 90, "6 finished articles", first)
        first.kill()
    finished = journal_done(jobdir) & articles
    stored_at_kill = done_urls(store)
    fetched_first = fetched_since(sites, before)
    assert finished <= stored_at_kill, f"marked finished, not stored: {sorted(finished - stored_at_kill)}"
    assert len(fetched_first) <= 12 + CONCURRENT and count_pages(store) < len(sites.expected.groups), \
        "the kill came too late to test anything"
    mid = sites.article_hits()
    second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", {"JOBDIR": str(jobdir)})
    assert second.wait() == 0, second.log[-3000:]
    assert "did not stop cleanly" in second.log
    assert_every_story_once(store, sites.expected)
    again = fetched_since(sites, mid)
    assert not finished & set(again), f"finished pages fetched again: {sorted(finished & set(again))}"
    assert set(again) & set(fetched_first) == set(fetched_first) - finished, \
        f"unfinished pages not fetched again: {sorted(set(fetched_first) - finished - set(again))}"
    assert all(n == 1 for n in again.values()), f"fetched twice by the resumed crawl: {again}"
    assert set(fetched_since(sites, before)) == articles


def test_ctrl_c_then_resume_fetches_every_page_once(store, sites, tmp_path):
    """SIGUSR1 writes every thread's stack into the log and the crawl goes on; SIGINT stops gracefully
    (in-flight pages finish); resume fetches each article exactly once in total; a third run of the finished
    crawl fetches no article at all. The sites hold back all but 12 articles until the crawl says it is
    shutting down, so the stop always lands mid-crawl."""
    env, job = crawl_env(store.config), {"JOBDIR": str(tmp_path / "job")}
    before = sites.article_hits()
    with sites.held_after(12):   # the crawl cannot end before the stop; released once it is stopping
        first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", job)
        wait_until(lambda: count_pages(store) >= 6, 90, "6 stored pages", first)
        first.signal(signal.SIGUSR1)   # every thread's stack into the log; the crawl goes on
        wait_until(lambda: "most recent call first" in first.log, 30, "the crawl's stack dump", first)
        first.signal(signal.SIGINT)
        wait_until(lambda: "shutting down gracefully" in first.log, 60, "the graceful shutdown", first)
    assert first.wait() == 0, first.log[-3000:]
    assert first.log.count("most recent call first") >= 3   # the event loop, the store's threads, pymongo's...
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
    with sites.held_after(0):   # the first crawl cannot finish (and free the JOBDIR) before the second starts
        first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", {"JOBDIR": str(jobdir)})
        try:
            wait_until(lambda: (jobdir / "frontier.journal").exists(), 60, "the first crawl's journal", first)
            second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", {"JOBDIR": str(jobdir)})
            assert second.wait(60) == 2, second.log[-3000:]
            assert "Traceback" not in second.log
            assert f"JOBDIR {jobdir} is in use by another crawl (pid {first.proc.pid})" in second.log
        finally:
            first.kill()
