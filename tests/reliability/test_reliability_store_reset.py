"""MongoDB reset under a kept Redis: the next crawl rebuilds the index from the (empty) MongoDB when it
opens, instead of calling the stories it finds copies of pages MongoDB no longer has.

These tests start their OWN embedded servers in a private var dir (never the session's shared ones).
"""
from __future__ import annotations

import time

import pymongo
import pytest

from storage import StoreConfig, open_store
from storage import servers as srv
from tests.reliability.reliability_helpers import (ALL_COPIES, CrawlProc, NewsSites, assert_every_story_once,
                                                   crawl_env, embedded_var, fresh_db)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def var(tmp_path_factory):
    yield from embedded_var(tmp_path_factory.mktemp("resetvar"))


@pytest.fixture
def db(var):
    yield from fresh_db(var, "reset")


def crawl(var, db: str, log) -> tuple[NewsSites, CrawlProc, float]:
    """One crawl of freshly served sites (new ports: the same stories under other URLs)."""
    sites = NewsSites(copies=ALL_COPIES)
    try:
        t = time.monotonic()
        proc = CrawlProc(sites.start_urls, crawl_env(var_dir=var, db=db), log)
        assert proc.wait(150) == 0, proc.log[-3000:]
        return sites, proc, time.monotonic() - t
    finally:
        sites.stop()


def test_crawl_after_mongodb_reset_stores_every_story_once(var, db, tmp_path):
    first, _, took_first = crawl(var, db, tmp_path / "crawl1.log")
    client = pymongo.MongoClient(srv.info(var, "mongo").uri)
    client.drop_database(db)   # MongoDB reset (as a new, empty server would be); Redis keeps its index
    client.close()
    second, proc, took_second = crawl(var, db, tmp_path / "crawl2.log")
    with open_store(StoreConfig(var_dir=str(var), db_name=db, key_prefix=f"{db}:")) as st:
        counts = assert_every_story_once(st, second.expected)
    assert counts["pages"] == len(second.expected.groups)
    assert "belonged to another store" in proc.log, proc.log[-3000:]
    assert took_second < took_first * 2 + 5, (took_first, took_second)   # no waiting for pages never saved
