"""Distributed mode (ZHDEDUP_DISTRIBUTED=1) with the embedded Redis SIGKILLed: the scheduler's Redis calls
go through the store's retry/restart path, so a dead embedded Redis is started again even when no page
is in the pipelines (workers idle, waiting for the shared crawl to end); one held down past
DISTRIBUTED_REDIS_OUTAGE_SECONDS ends the crawl with one clear error and exit code 1, nothing lost: the
same command run again finishes the crawl. Real `scrapy crawl` processes, real embedded servers.
Every story stored once, every fetched URL with an outcome, no URL twice in one run."""
from __future__ import annotations

import time

import pytest

from tests.reliability.reliability_helpers import (DISTRIBUTED, CrawlProc, HeldDown, NewsSites, assert_every_story_once,
                                                   crawl_env, embedded_var, fresh_db, sigkill, wait_until)

pytestmark = pytest.mark.timeout(120)
SHARED = DISTRIBUTED


@pytest.fixture(scope="module")
def var(tmp_path_factory):
    """A private var dir whose embedded servers these tests kill; stopped at the end."""
    yield from embedded_var(tmp_path_factory.mktemp("dist_outage"))


@pytest.fixture
def db(var):
    """A fresh database name / key prefix on the private servers; dropped afterwards."""
    yield from fresh_db(var, "do")


@pytest.fixture
def sites():
    """Sites A and B (28 stories, 8 exact copies), 80 ms a response."""
    s = NewsSites()
    yield s
    s.stop()


def fetched_urls(sites: NewsSites) -> set[str]:
    """Every URL the sites were asked for (each must end with an outcome)."""
    return {sites.server.base(h) + path for h in sites.hosts for path in sites.server.hits(h)}


def check_store(var, db: str, sites: NewsSites) -> None:
    """Every story once, every copy recorded; every fetched URL has an outcome; none twice in one run."""
    from collections import Counter

    from storage import StoreConfig, open_store

    with open_store(StoreConfig(var_dir=str(var), db_name=db, key_prefix=f"{db}:")) as st:
        assert_every_story_once(st, sites.expected)
        outcomes = list(st.outcomes.find({}, {"url": 1, "run": 1}))
        assert st.spool.count() == 0
    twice = [(o, n) for o, n in Counter((o["run"], o["url"]) for o in outcomes).items() if n > 1]
    assert not twice, f"URLs with two outcomes in one run: {twice[:5]}"
    missing = fetched_urls(sites) - {o["url"] for o in outcomes}
    assert not missing, f"fetched URLs without an outcome: {sorted(missing)}"


def test_redis_killed_while_workers_wait_is_restarted(var, db, sites, tmp_path):
    """Two workers done with their pages wait for the shared crawl to end; Redis is SIGKILLed then. No
    page is in the pipelines, so only the scheduler's calls can bring the embedded Redis back: they do,
    and both workers close by themselves (the old code waited forever, 'distributed heartbeat failed')."""
    env = crawl_env(var_dir=var, db=db)
    settings = {**SHARED, "DISTRIBUTED_IDLE_CLOSE_SECONDS": "4"}
    workers = [CrawlProc(sites.start_urls, env, tmp_path / f"w{i}.log", settings) for i in range(2)]
    waiting = "shared queue empty and no worker busy"
    wait_until(lambda: any(waiting in w.log for w in workers), 60, "a worker waiting for the crawl's end", workers[0])
    sigkill(var, "redis")
    for w in workers:
        assert w.wait(40) == 0, w.log[-3000:]
    assert any("Redis answers again" in w.log for w in workers)
    check_store(var, db, sites)


def test_redis_held_down_ends_the_crawl_clearly_and_loses_nothing(var, db, sites, tmp_path):
    """Redis SIGKILLed mid-crawl and kept from restarting: the worker stops after
    DISTRIBUTED_REDIS_OUTAGE_SECONDS with one CRITICAL line and exit code 1 (it used to hang). The
    requests it had taken stay in Redis; once Redis can start again, the same command finishes the crawl."""
    env = crawl_env(var_dir=var, db=db)
    settings = {**SHARED, "DISTRIBUTED_REDIS_OUTAGE_SECONDS": "3"}
    with sites.held_after(12):   # the rest wait until Redis is down: the outage always comes mid-crawl
        first = CrawlProc(sites.start_urls, env, tmp_path / "first.log", settings, store={"retry_seconds": 0.5})
        wait_until(lambda: len(sites.article_hits()) >= 8, 60, "8 articles fetched", first)
        fetched_before = len(sites.article_hits())
        held = HeldDown(var, ["redis"])
        sigkill(var, "redis")
    try:
        t0 = time.monotonic()
        rc = first.wait(40)
        took = time.monotonic() - t0
    finally:
        held.release()
    assert rc == 1, first.log[-3000:]
    assert took < 30, f"took {took:.1f} s to give up"
    critical = [line for line in first.log.splitlines() if "CRITICAL" in line]
    assert critical and "Redis" in critical[0] and "unavailable" in critical[0], first.log[-3000:]
    assert fetched_before < sites.expected.pages, "the outage came too late to test anything"
    second = CrawlProc(sites.start_urls, env, tmp_path / "second.log", SHARED)
    assert second.wait(60) == 0, second.log[-3000:]
    check_store(var, db, sites)
