"""Servers dying under a running crawl: SIGKILL of Redis (data kept or lost) and of the MongoDB-wire
server. The crawl never hangs, what could not be written is spooled and replayed, Redis is rebuilt from
MongoDB when its data is gone, and the final stores hold every story exactly once with every copy.

These tests start their OWN embedded servers in a private var dir (never the session's shared ones).
"""
from __future__ import annotations

import shutil

import pytest

from storage import StoreConfig, open_store
from storage import servers as srv
from tests.reliability.reliability_helpers import (CrawlProc, NewsSites, assert_every_story_once, crawl_env, embedded_var,
                                                   fresh_db, sigkill, stored, wait_until)

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def var(tmp_path_factory):
    """A private var dir whose embedded servers these tests kill; stopped at the end."""
    yield from embedded_var(tmp_path_factory.mktemp("relvar"))


@pytest.fixture(scope="module")
def sites():
    """The slow A/B news sites, for this module."""
    s = NewsSites()
    yield s
    s.stop()


@pytest.fixture
def db(var):
    """A fresh database name / key prefix on the private servers; dropped afterwards."""
    yield from fresh_db(var, "r")


def final_store(var, db: str):
    """The store as the next run opens it (which replays the spool and repairs the index)."""
    return open_store(StoreConfig(var_dir=str(var), db_name=db, key_prefix=f"{db}:"))


def run_with_kill(var, db, sites, tmp_path, victim: str, store: dict | None = None, after=None) -> CrawlProc:
    """Start a crawl, SIGKILL `victim` after 6 stored pages (then call `after`), wait for the crawl. The
    sites answer 14 articles (at least 7 stories) until then: the kill always comes mid-crawl."""
    with sites.held_after(14):
        proc = CrawlProc(sites.start_urls, crawl_env(var_dir=var, db=db), tmp_path / "crawl.log", store=store)
        wait_until(lambda: stored(var, db) >= 6, 60, "6 stored pages", proc)
        old = sigkill(var, victim)
        if after is not None:
            after()
    assert proc.wait(120) == 0, proc.log[-3000:]
    assert stored(var, db) or srv.info(var, "mongo").running is False
    proc.old_pid = old
    return proc


def test_redis_sigkill_mid_crawl_is_restarted_and_nothing_lost(var, db, sites, tmp_path):
    """Redis killed: the store restarts it on the same data (AOF), the crawl finishes, every story once."""
    proc = run_with_kill(var, db, sites, tmp_path, "redis", store={"retry_seconds": 3})
    assert srv.info(var, "redis").running and srv.info(var, "redis").pid != proc.old_pid
    with final_store(var, db) as st:
        assert_every_story_once(st, sites.expected)


def test_redis_data_lost_mid_crawl_is_rebuilt_from_mongodb(var, db, sites, tmp_path):
    """Redis killed AND its data deleted: the index comes back empty; copies of stories stored before
    the loss must still be recognised (the index is rebuilt from MongoDB, the truth)."""
    def wipe() -> None:
        shutil.rmtree(var / "redis", ignore_errors=True)
        (var / "redis").mkdir()

    run_with_kill(var, db, sites, tmp_path, "redis", store={"retry_seconds": 3}, after=wipe)
    with final_store(var, db) as st:
        assert_every_story_once(st, sites.expected)
        for page in st.pages.find({}, {"_id": 1, "content_hash": 1, "simhash": 1}):
            assert st.lookup(page["content_hash"], page["simhash"] % 2**64).original_id == str(page["_id"])


def test_redis_down_for_the_rest_of_the_crawl_spools_then_replays(var, db, sites, tmp_path):
    """Redis killed and NOT restarted (auto_restart off, as with a configured REDIS_URL): the crawl does
    not hang, checks are spooled; the next open (Redis back, data lost) rebuilds and replays: copies
    stored during the outage are moved to duplicates."""
    proc = run_with_kill(var, db, sites, tmp_path, "redis", store={"retry_seconds": 0.5, "auto_restart": False})
    assert "spooled" in proc.log
    assert not srv.info(var, "redis").running
    assert list((var / "spool").rglob("*.jsonl")), "nothing spooled"
    shutil.rmtree(var / "redis", ignore_errors=True)
    srv.ensure(var, "redis")
    with final_store(var, db) as st:
        assert_every_story_once(st, sites.expected)
        assert st.spool.count() == 0


def test_mongodb_sigkill_mid_crawl_nothing_lost(var, db, sites, tmp_path):
    """The MongoDB-wire server killed: writes are retried (the server restarted on the same data) or
    spooled and replayed; every story once, every copy recorded."""
    run_with_kill(var, db, sites, tmp_path, "mongo", store={"retry_seconds": 3})
    srv.ensure(var, "mongo")
    with final_store(var, db) as st:
        assert_every_story_once(st, sites.expected)
