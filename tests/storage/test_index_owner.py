"""The Redis index belongs to one MongoDB store: an index kept from another database, from this database
before a reset, or from a later state than a MongoDB restored from an older backup is repaired when the
store opens (one process repairs, the others wait), so no page is called a copy of a page MongoDB lacks."""
from __future__ import annotations

import logging
import random
import re
import threading
from dataclasses import dataclass

import pytest
import redis

from storage import open_store
from storage.identity import lock_key
from storage.schema import to_oid, to_signed64

BOTH = pytest.mark.parametrize("redis_mode", ["single", "cluster"])  # one Redis, and a 3-master Redis Cluster


@dataclass(frozen=True)
class Kept:
    id: str
    content_hash: str
    simhash: int


def keep(store, n: int, seed: int) -> list[Kept]:
    """n pages checked new and saved, as a crawl keeps them (far apart in SimHash)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        page = Kept(store.new_page_id(), "%032x" % rng.getrandbits(128), rng.getrandbits(64))
        assert store.check_and_insert(page.id, page.content_hash, page.simhash).kind == "new"
        out.append(page)
    store.pages.insert_many([{"_id": to_oid(p.id), "url": f"http://t/{p.id}", "content_hash": p.content_hash,
                              "simhash": to_signed64(p.simhash), "text": "x"} for p in out])
    return out


def answers(store, page: Kept) -> str | None:
    """The page the index names for this page's content (None: it says "new")."""
    res = store.lookup(page.content_hash, page.simhash)
    return res.original_id if res.is_duplicate else None


def rebuilt_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "rebuilt from MongoDB" in line]


@BOTH
def test_index_of_another_database_is_rebuilt_for_this_one(store, store_config, caplog):
    x_pages = keep(store, 5, seed=1)
    other = store_config.with_(db_name=store_config.db_name + "y")   # same Redis, same key prefix
    store.mongo[other.db_name].pages.insert_one({"url": "http://y/1", "content_hash": "%032x" % 99,
                                                 "simhash": 12345, "text": "y"})
    y_id = str(store.mongo[other.db_name].pages.find_one()["_id"])
    try:
        with caplog.at_level(logging.WARNING, logger="storage"):
            with open_store(other) as y:
                assert answers(y, Kept(y_id, "%032x" % 99, 12345)) == y_id
                for page in x_pages:
                    assert answers(y, page) is None
                fresh = y.new_page_id()
                assert y.check_and_insert(fresh, x_pages[0].content_hash, x_pages[0].simhash).kind == "new"
        (line,) = rebuilt_lines(caplog.text)
        assert "belonged to another store" in line and "(1 pages)" in line, line
        assert re.search(r"in \d+\.\d s", line), line
    finally:
        store.mongo.drop_database(other.db_name)


@BOTH
def test_mongodb_reset_under_a_kept_redis(store, store_config):
    pages = keep(store, 5, seed=2)
    store.mongo.drop_database(store_config.db_name)   # MongoDB reset; Redis kept
    with open_store(store_config) as again:
        for page in pages:
            assert answers(again, page) is None
        assert again.check_and_insert(again.new_page_id(), pages[0].content_hash, pages[0].simhash).kind == "new"
        assert again.index.count() == 1


@BOTH
def test_mongodb_restored_from_an_older_backup(store, store_config, caplog):
    early = keep(store, 3, seed=3)
    backup = list(store.db["meta"].find())          # what a copy of var/mongo taken now holds
    with open_store(store_config) as later:          # a later crawl
        late = keep(later, 5, seed=4)
    store.pages.delete_many({"_id": {"$in": [to_oid(p.id) for p in late]}})   # the backup put back
    store.db["meta"].delete_many({})
    if backup:
        store.db["meta"].insert_many(backup)
    with caplog.at_level(logging.WARNING, logger="storage"):
        with open_store(store_config) as st:
            assert [answers(st, p) for p in late] == [None] * 5
            assert [answers(st, p) for p in early] == [p.id for p in early]
            assert st.index.count() == 3
    (line,) = rebuilt_lines(caplog.text)
    assert "newer than MongoDB" in line, line


@BOTH
def test_pages_mongodb_lost_leave_the_index_unless_they_may_be_in_flight(store, store_config, caplog):
    pages = keep(store, 300, seed=5)
    lost, left = pages[:250], pages[250:]
    store.claim_sketch(lost[0].id, [1, 2, 3], 2)
    store.pages.delete_many({"_id": {"$in": [to_oid(p.id) for p in lost]}})   # same store, same generation
    with open_store(store_config) as st:   # seconds-old ids: another crawler may still be saving them
        assert all(answers(st, p) == p.id for p in lost)
    with caplog.at_level(logging.WARNING, logger="storage"):
        with open_store(store_config.with_(phantom_seconds=0)) as st:
            assert [p for p in lost if answers(st, p) is not None] == []
            assert [answers(st, p) for p in left] == [p.id for p in left]
            assert st.index.count() == 50
            assert st.claim_sketch(st.new_page_id(), [1, 2, 3], 2)[1] == []   # its sketch no longer answers
    assert "dropped 250 entries of pages MongoDB lacks" in caplog.text, caplog.text


@BOTH
def test_two_processes_opening_at_once_rebuild_once(store, store_config, caplog):
    pages = keep(store, 40, seed=6)
    store.db["meta"].delete_many({})   # a new store id: the index is another store's now
    seen: list[list[str | None]] = []

    def opener() -> None:
        with open_store(store_config) as st:
            seen.append([answers(st, p) for p in pages])

    with caplog.at_level(logging.WARNING, logger="storage"):
        threads = [threading.Thread(target=opener) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert len(rebuilt_lines(caplog.text)) == 1, caplog.text
    assert seen == [[p.id for p in pages]] * 3   # every opener saw the whole index


@BOTH
def test_a_repair_that_meets_a_redis_outage_re_fills_the_index_inside_itself(store):
    """Invariant seed 7515 (cluster, Redis wiped): a crawler's store open was rebuilding the index when Redis
    went away. Once Redis answered, the outage's re-fill ran a repair inside the repair, which waited for the
    lock its own thread held (renewed by its own keeper): it hung, and every crawler after it. The thread that
    holds the lock now repairs inside it, and the index ends whole."""
    pages = keep(store, 20, seed=9)
    real, failed = store.index.add_many, []

    def away_once(*args, **kwargs):
        if not failed:
            failed.append(True)
            raise redis.ConnectionError("Redis went away in the middle of the rebuild")
        return real(*args, **kwargs)

    store.index.add_many = away_once
    rebuilt: list[int] = []
    repair = threading.Thread(target=lambda: rebuilt.append(store.rebuild_index()), daemon=True)
    repair.start()
    repair.join(120)
    assert not repair.is_alive(), "the repair waits for the lock its own thread holds"
    assert failed and rebuilt == [len(pages)]
    assert [answers(store, p) for p in pages] == [p.id for p in pages]
    assert store.redis.get(lock_key(store.config.key_prefix)) is None   # released: the next process repairs at once


def test_a_process_waiting_for_the_repair_lock_names_its_holder_and_says_so_again(store, monkeypatch):
    """A wait for the repair lock says whom it waits for (host and pid), at once and then every WAIT_REPORT s
    as a WARNING: seed 7515's crawlers waited three minutes and no log said for whom."""
    import os

    import storage.identity as identity

    monkeypatch.setattr(identity, "WAIT_REPORT", 0.2)
    key = lock_key(store.config.key_prefix)
    taken, release, said = threading.Event(), threading.Event(), []

    class ReleaseOnceWarned(logging.Handler):   # the holder lets go once the waiter has warned: no race
        def emit(self, record: logging.LogRecord) -> None:
            said.append((record.levelno, record.getMessage()))
            if record.levelno == logging.WARNING:
                release.set()

    def hold() -> None:
        with identity.RepairLock(store.redis, key).held():
            taken.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(60)
    logger, handler = logging.getLogger("storage.identity"), ReleaseOnceWarned(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with identity.RepairLock(store.redis, key).held():
            pass
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        release.set()
        holder.join(60)
    assert said[0][0] == logging.INFO and f"pid {os.getpid()}" in said[0][1], said
    assert said[-1][0] == logging.WARNING and "s so far" in said[-1][1] and f"pid {os.getpid()}" in said[-1][1], said
