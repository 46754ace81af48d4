"""Faults on real embedded servers: SIGKILL of Redis / the MongoDB-wire server mid-crawl, spool replay."""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from storage import StorageUnavailable, StoreConfig, open_store
from storage import servers as srv
from storage.inflight import Flight
from tests.reliability.reliability_helpers import embedded_var, sigkill


@pytest.fixture(scope="module")
def var(tmp_path_factory):
    """A private var dir whose embedded servers these tests may kill."""
    yield from embedded_var(tmp_path_factory.mktemp("faultvar"))


def cfg(var: Path, **kw) -> StoreConfig:
    tag = uuid.uuid4().hex[:8]
    return StoreConfig(var_dir=str(var), db_name=f"f_{tag}", key_prefix=f"f{tag}:", retry_seconds=0.5,
                       timeout_seconds=0.5, **kw)




def story(i: int) -> tuple[str, int]:
    import hashlib

    h = hashlib.md5(f"story{i}".encode()).hexdigest()
    return h, int(hashlib.sha256(h.encode()).hexdigest()[:16], 16)


def crawl(store, name: str, content_hash: str, fp: int) -> str:
    """What the dedup + storage pipelines do with one page."""
    pid = store.new_page_id()
    r = store.check_and_insert(pid, content_hash, fp)
    if r.is_duplicate:
        orig = store.get_page(r.original_id)
        store.record_duplicate({"url": f"http://t/{name}", "original_id": r.original_id,
                                "original_url": orig and orig["url"], "method": r.kind, "distance": r.distance})
        return r.kind
    store.save_page({"_id": pid, "url": f"http://t/{name}", "content_hash": content_hash, "simhash": fp,
                     "text": name, "site": "t"})
    return "spooled" if r.spooled else "new"


def test_redis_sigkill_then_restart_loses_nothing(var):
    c = cfg(var, auto_restart=False)
    st = open_store(c)
    for i in range(20):
        assert crawl(st, f"p{i}", *story(i)) == "new"
    sigkill(var, "redis")
    kinds = [crawl(st, f"new{i}", *story(100 + i)) for i in range(5)]          # new stories
    kinds += [crawl(st, f"copy{i}", story(500 + i)[0], story(i)[1] ^ 1) for i in range(5)]  # near copies
    kinds += [crawl(st, "copy-of-new0", story(600)[0], story(100)[1] ^ 6)]    # copy of a story seen in the outage
    assert kinds == ["spooled"] * 11
    assert st.spool.count() == 11
    st.close()
    # the next run: the embedded Redis restarts on its data, the spool is replayed
    srv.ensure(var, "redis")
    st = open_store(c)
    try:
        assert st.spool.count() == 0
        assert st.pages.count_documents({}) == 25           # every distinct story exactly once
        dups = {d["url"]: d for d in st.duplicates.find()}
        assert set(dups) == {f"http://t/copy{i}" for i in range(5)} | {"http://t/copy-of-new0"}
        assert dups["http://t/copy-of-new0"]["original_url"] == "http://t/new0"
        assert all(d["method"] == "near" and d["distance"] in (1, 2) for d in dups.values())
        assert st.index.count() == 25
        assert crawl(st, "again", story(3)[0], story(3)[1]) == "exact"
    finally:
        st.drop_all()
        st.close()


def test_redis_sigkill_midcrawl_auto_restart(var):
    c = cfg(var)
    st = open_store(c)
    try:
        for i in range(10):
            crawl(st, f"p{i}", *story(i))
        port = srv.info(var, "redis").port
        old = sigkill(var, "redis")
        assert crawl(st, "p10", *story(10)) == "new"          # retried, Redis restarted, not spooled
        info = srv.info(var, "redis")
        assert info.running and info.pid != old and info.port == port
        assert crawl(st, "c3", story(3)[0], story(3)[1]) == "exact"
        assert st.spool.count() == 0
    finally:
        st.drop_all()
        st.close()


def test_mongo_sigkill_spools_writes_and_replays(var):
    c = cfg(var, auto_restart=False)
    st = open_store(c)
    run = st.runs.start("news")
    for i in range(5):
        crawl(st, f"p{i}", *story(i))
    st.sources.add("src1", "作品", "正文" * 10)
    mid = st.matches.save({"suspect_url": "http://t/p1", "source_id": "src1", "score": 0.5})
    st.matches.review(mid, "confirm", "ann", "copied")
    time.sleep(1.0)
    sigkill(var, "mongo")
    t0 = time.monotonic()
    for i in range(5, 8):
        crawl(st, f"p{i}", *story(i))
    assert time.monotonic() - t0 < 15  # bounded retries, never hangs
    st.matches.save({"suspect_url": "http://t/p1", "source_id": "src1", "score": 0.9, "spans": [[0, 4]]})
    st.runs.finish(run, {"pages": 8})
    with pytest.raises(StorageUnavailable, match="MongoDB"):
        st.get_page("0" * 24)
    assert st.spool.count() == 5
    st.close()
    srv.ensure(var, "mongo")
    st = open_store(c)
    try:
        assert st.spool.count() == 0
        assert st.pages.count_documents({}) == 8
        m = st.matches.get(mid)
        assert (m["score"], m["status"], m["spans"]) == (0.9, "confirmed", [[0, 4]])
        assert st.db.runs.find_one()["counts"] == {"pages": 8}
    finally:
        st.drop_all()
        st.close()


def test_down_at_start_gives_one_clear_message(var, tmp_path, dead_port):
    port = dead_port
    c = cfg(var, mongo_uri=f"mongodb://127.0.0.1:{port}/?directConnection=true",
            redis_url=srv.info(var, "redis").uri)
    t0 = time.monotonic()
    with pytest.raises(StorageUnavailable) as e:
        open_store(c)
    assert "MongoDB" in str(e.value) and str(port) in str(e.value) and "MONGO_URI" in str(e.value)
    assert time.monotonic() - t0 < 10


def test_torn_spool_line_is_kept_aside(store):
    from bson import json_util

    store.spool.dir.mkdir(parents=True, exist_ok=True)
    good = json_util.dumps({"op": "save_page", "args": {"doc": {"_id": "p1", "url": "http://t/p1", "text": "正文"}}})
    (store.spool.dir / "other-1-1.jsonl").write_text(good + "\n" + good[:20])  # crash mid-write
    stats = store.replay_spool()
    assert stats["replayed"] == 1 and store.get_page("p1")["text"] == "正文"
    bad = list(store.spool.dir.glob("*.bad"))
    assert len(bad) == 1 and bad[0].read_text().strip() == good[:20].strip()
    assert store.spool.count() == 0


def test_unusable_var_dir_names_the_path(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(StorageUnavailable, match="not-a-dir"):
        open_store(StoreConfig(var_dir=str(blocker / "var")))


def test_redis_restarted_after_the_retry_window_and_refilled(var, caplog):
    """Redis dies with its data and cannot be restarted for longer than the retry window: checks are
    spooled meanwhile, it is restarted as soon as it can be (not only in the first window), the index is
    re-filled from MongoDB (and pages in flight), and ONE WARNING line says what it cost."""
    import logging
    import shutil

    c = cfg(var)
    st = open_store(c)
    try:
        for i in range(6):
            assert crawl(st, f"p{i}", *story(i)) == "new"
        flight = st.new_page_id()                       # indexed, its save still on its way
        assert st.check_and_insert(flight, *story(50)).kind == "new"
        st.inflight.add(flight, Flight(story(50)[0], story(50)[1]))
        sigkill(var, "redis")
        shutil.rmtree(var / "redis")
        (var / "redis").write_text("in the way")        # the restart fails until this is gone
        caplog.set_level(logging.INFO, "storage")
        t0 = time.monotonic()
        kinds = [crawl(st, f"out{i}", *story(100 + i)) for i in range(4)]
        assert kinds == ["spooled"] * 4 and time.monotonic() - t0 > c.retry_seconds
        (var / "redis").unlink()
        (var / "redis").mkdir()
        time.sleep(1.1)                                  # the next restart attempt is due
        assert crawl(st, "c3", story(3)[0], story(3)[1]) == "exact"   # refilled from MongoDB (not the 4 undecided)
        assert crawl(st, "c50", story(50)[0], story(50)[1]) == "exact"  # refilled from the pages in flight
        assert srv.info(var, "redis").running
        st.close()
        lines = [r.getMessage() for r in caplog.records if "was unavailable for" in r.getMessage()]
        assert len(lines) == 1, lines
        assert "Redis was unavailable" in lines[0] and "restarted 1 time(s)" in lines[0]
        assert "data lost: index re-filled (6 pages from MongoDB, 1 in flight)" in lines[0]
        assert "4 checks spooled for replay" in lines[0]
        assert not [r for r in caplog.records if "spooled to" in r.getMessage() and r.levelno >= logging.WARNING]
    finally:
        st = open_store(c)
        st.drop_all()
        st.close()


def test_a_page_saved_while_the_index_is_refilled_stays_indexed(var):
    """After a Redis data loss the refill reads MongoDB, then re-adds the pages in flight. A page whose save
    lands between the two was in neither (CI: redis_wipe, a story stored twice): pages in flight are
    re-added whenever the index lacks them, saved or not."""
    st = open_store(cfg(var))
    try:
        assert crawl(st, "p0", *story(0)) == "new"
        late = st.new_page_id()                            # indexed; its save waits in the writer's buffer
        assert st.check_and_insert(late, *story(1)).kind == "new"
        st.inflight.add(late, Flight(story(1)[0], story(1)[1]))
        st.index.clear()                                   # Redis came back empty
        st.reconcile_index()                               # reads MongoDB: p0 only
        st.save_page({"_id": late, "url": "http://t/late", "content_hash": story(1)[0], "simhash": story(1)[1],
                      "text": "late", "site": "t"})        # the save lands now
        assert st._refill_inflight() == 1
        assert st.check_and_insert(st.new_page_id(), story(9)[0], story(1)[1] ^ 3).original_id == late
    finally:
        st.drop_all()
        st.close()


def test_readonly_redis_is_an_outage_not_a_crash(var):
    """A Redis that answers READONLY (a replica) is retried like a dead one, then spooled; no exception."""
    c = cfg(var)
    st = open_store(c)
    try:
        crawl(st, "p0", *story(0))
        st.redis.execute_command("REPLICAOF", "127.0.0.1", "1")
        assert crawl(st, "p1", *story(1)) == "spooled"
        st.redis.execute_command("REPLICAOF", "NO", "ONE")
        time.sleep(1.1)
        assert crawl(st, "p2", *story(2)) == "new"
        assert crawl(st, "c0", *story(0)) == "exact"
    finally:
        st.redis.execute_command("REPLICAOF", "NO", "ONE")
        st.drop_all()
        st.close()


def test_every_redis_error_class_is_transient():
    """MISCONF, READONLY, LOADING, BUSY and cluster redirections are outages; a script bug is not."""
    import redis.exceptions as rx

    from storage.connection import is_transient

    for exc in (rx.ResponseError("MISCONF Redis is configured to save RDB snapshots, but it's not able to"),
                rx.ResponseError("BUSY Redis is busy running a script."), rx.ReadOnlyError("READONLY replica"),
                rx.BusyLoadingError("LOADING Redis is loading the dataset in memory"),
                rx.MovedError("3999 127.0.0.1:6381"), rx.AskError("3999 127.0.0.1:6381"),
                rx.TryAgainError("TRYAGAIN"), rx.ClusterDownError("CLUSTERDOWN"), rx.ConnectionError("gone")):
        assert is_transient("redis", exc), exc
    assert is_transient("redis", rx.ResponseError("Error running script (call to f_1): @user_script:53: -READONLY You"))
    assert not is_transient("redis", rx.ResponseError("WRONGTYPE Operation against a key"))
    assert not is_transient("redis", rx.ResponseError("Error running script: user_script:1: ASKING is not a command"))
    assert not is_transient("mongo", rx.ConnectionError("a Redis error is not a MongoDB outage"))


def test_unreadable_original_is_deferred_then_demoted_by_replay(var):
    """A passage copy whose original's text cannot be read (MongoDB down, text no longer in Redis) is
    never decided "new": it is kept for now with a `recheck` in the spool, and the replay moves it to
    duplicates."""
    from fingerprint.neardup import DedupDoc, DedupEngine
    from storage.dedup_index import RedisDedupIndex
    from tests.reliability.reliability_helpers import make_stories, passage_copy

    title, paragraphs = make_stories(1)[0]
    c = cfg(var, auto_restart=False)
    st = open_store(c)
    engine = DedupEngine(index=RedisDedupIndex(st))
    original = DedupDoc.of(st.new_page_id(), "\n".join(paragraphs), url="http://t/o")
    copy = DedupDoc.of(st.new_page_id(), "\n".join(passage_copy(paragraphs, 0)), url="http://t/c")
    assert engine.decide(original).kind == "new"
    st.save_page(_page(original))
    sigkill(var, "mongo")
    verdict = engine.decide(copy)
    assert (verdict.kind, verdict.spooled) == ("new", True)
    st.save_page(_page(copy))                            # spooled too
    assert [e["op"] for p in st.spool.pending() + [st.spool._path] for e in st.spool.entries(p)] == \
        ["recheck", "save_page"]
    st.close()
    srv.ensure(var, "mongo")
    st = open_store(c)
    try:
        assert [p["url"] for p in st.pages.find()] == ["http://t/o"]
        dup = st.duplicates.find_one()
        assert (dup["url"], dup["original_id"], dup["method"]) == ("http://t/c", original.page_id, "passages")
        assert st.spool.count() == 0
    finally:
        st.drop_all()
        st.close()


def _page(doc) -> dict:
    return {"_id": doc.page_id, "url": doc.url, "text": doc.text, "content_hash": doc.content_hash,
            "simhash": doc.simhash, "sketch": list(doc.sketch), "site": "t"}


def test_status_reports_mongodb_when_redis_is_down(var):
    """`storage status --json` with Redis dead: MongoDB's counts and the spool are still reported."""
    import json
    import subprocess
    import sys

    c = cfg(var, auto_restart=False)
    st = open_store(c)
    try:
        crawl(st, "p0", *story(0))
        sigkill(var, "redis")
        env = {**os.environ, "ZHDEDUP_VAR": str(var), "ZHDEDUP_DB": c.db_name, "ZHDEDUP_PREFIX": c.key_prefix}
        env.pop("MONGO_URI", None)
        env.pop("REDIS_URL", None)
        res = subprocess.run([sys.executable, "-m", "storage", "status", "--json"], env=env, capture_output=True,
                             text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
        out = json.loads(res.stdout)
        assert out["redis"]["ok"] is False and out["mongo"]["ok"] is True
        assert out["counts"]["pages"] == 1
        assert out["spool"]["entries"] == 0
        assert not srv.info(var, "redis").running        # status starts nothing
    finally:
        srv.ensure(var, "redis")
        st.drop_all()
        st.close()


def test_runs_of_killed_crawlers_are_closed_as_interrupted(var):
    """A run whose process is gone on this host is closed as interrupted by the next start_run; runs of
    live processes, and young runs of other hosts, are left alone."""
    import datetime as dt
    import socket
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host, old = socket.gethostname(), dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3)
    c = cfg(var)
    st = open_store(c)
    try:
        st.db.runs.insert_many([
            {"_id": "dead", "spider": "news", "started": old, "finished": None, "pid": dead.pid, "host": host},
            {"_id": "live", "spider": "news", "started": old, "finished": None, "pid": os.getppid(), "host": host},
            {"_id": "away", "spider": "news", "started": dt.datetime.now(dt.timezone.utc), "finished": None,
             "pid": 1, "host": "elsewhere"},
            {"_id": "away-old", "spider": "news", "started": old, "finished": None, "pid": 1, "host": "elsewhere"},
        ])
        rid = st.runs.start("news")
        runs = {str(r["_id"]): r for r in st.db.runs.find()}
        assert runs["dead"]["status"] == "interrupted" and runs["dead"]["finished"] is not None
        assert runs["away-old"]["status"] == "interrupted"
        assert runs["live"]["finished"] is None and runs["away"]["finished"] is None
        assert (runs[rid]["pid"], runs[rid]["host"]) == (os.getpid(), host)
    finally:
        st.drop_all()
        st.close()


def test_replayed_page_whose_exact_entry_is_its_own_is_indexed(var):
    """Two processes at start-up (test_storage_servers): the second page's exact entry (68 bits: the two
    hashes share them) answered 'no saved page yet', its decision was spooled; the replay found the page
    itself behind the entry. It must end in the SimHash index, not be left 'unchanged' outside it."""
    c = cfg(var)
    st = open_store(c)
    try:
        pids = []
        for n in (1, 2):
            pid, fp = st.new_page_id(), n * 0x5555_3333_0F0F_00FF
            st.check_and_insert(pid, "%032x" % n, fp)
            st.save_page({"_id": pid, "url": f"http://t/{n}", "simhash": fp, "content_hash": "%032x" % n})
            pids.append(pid)
        assert st.spool.count() == 1 and st.index.count() == 1
        st.close()
        st = open_store(c)   # the replay runs at open
        assert st.spool.count() == 0 and st.index.count() == 2
        assert st.check_and_insert(st.new_page_id(), "f" * 32, 2 * 0x5555_3333_0F0F_00FF ^ 1).original_id == pids[1]
    finally:
        st.close()


@pytest.mark.parametrize("dies_at", ["taking_back_a_passage_copy", "saying_a_new_pages_date"])
def test_redis_lost_mid_decision_keeps_the_page_for_the_replay(var, dies_at):
    """Redis SIGKILLed in the middle of a decision, after its lookups: while a passage copy's own index
    entries are taken back (invariant seed 305: the copy failed with 'Redis is unavailable', its URL counted
    as seen by the distributed crawl, the copy never recorded), or while a new dated page without a sketch
    says its date. The page is kept with its whole decision spooled, never failed; the replay at the next
    open records the copy as a duplicate of the original."""
    import dataclasses
    import datetime as dt

    from fingerprint.neardup import DedupDoc, DedupEngine
    from storage.dedup_index import RedisDedupIndex
    from tests.reliability.reliability_helpers import make_stories, passage_copy

    class RedisDiesMidDecision(RedisDedupIndex):
        """The real index; the real Redis is SIGKILLed at one point of the decision (no restart)."""

        def forget(self, doc):
            if dies_at == "taking_back_a_passage_copy":
                sigkill(var, "redis")
            super().forget(doc)

        def _in_flight(self, doc):
            super()._in_flight(doc)
            if dies_at == "saying_a_new_pages_date" and doc.url == "http://t/c":
                sigkill(var, "redis")

    title, paragraphs = make_stories(1, seed=305)[0]
    c = cfg(var, auto_restart=False)
    st = open_store(c)
    engine = DedupEngine(index=RedisDiesMidDecision(st))
    original = DedupDoc.of(st.new_page_id(), "\n".join(paragraphs), url="http://t/o")
    if dies_at == "taking_back_a_passage_copy":
        copy = DedupDoc.of(st.new_page_id(), "\n".join(passage_copy(paragraphs, 0)), url="http://t/c")
    else:   # another story, dated, without a sketch (its date goes to Redis on its own)
        other = make_stories(2, seed=306)[1][1]
        copy = dataclasses.replace(DedupDoc.of(st.new_page_id(), "\n".join(other), url="http://t/c"), sketch=(),
                                   published=dt.date(2024, 5, 1))
    try:
        assert engine.decide(original).kind == "new"
        st.save_page(_page(original))
        verdict = engine.decide(copy)            # old code: StorageUnavailable out of decide (the page failed)
        assert (verdict.kind, verdict.spooled) == ("new", True)
        st.save_page(_page(copy))
        assert [e["op"] for p in st.spool.pending() + [st.spool._path] for e in st.spool.entries(p)] == ["recheck"]
        st.close()
        srv.ensure(var, "redis")
        st = open_store(c)                       # the replay decides the page again
        assert st.spool.count() == 0
        if dies_at == "taking_back_a_passage_copy":
            assert [p["url"] for p in st.pages.find()] == ["http://t/o"]
            dup = st.duplicates.find_one()
            assert (dup["url"], dup["original_id"], dup["method"]) == ("http://t/c", original.page_id, "passages")
        else:                                    # another story: both stored, and indexed
            assert sorted(p["url"] for p in st.pages.find()) == ["http://t/c", "http://t/o"]
            assert st.duplicates.count_documents({}) == 0
            assert st.check_and_insert(st.new_page_id(), "f" * 32, copy.simhash).original_id == copy.page_id
    finally:
        srv.ensure(var, "redis")
        st.drop_all()
        st.close()


def test_a_redis_data_loss_is_met_by_every_crawler_before_it_decides(var):
    """Redis restarts empty while two crawlers run, neither of them calling it while it was down (CI: invariant
    seed 418, redis_wipe, 3 crawlers: the crawler that had seen Redis fail made no call until it closed, the
    others went on deciding against the empty index and stored a copy of a saved story as a new one). The
    check script meets the loss itself: the index is re-filled from MongoDB before the check decides; a
    crawler's page in flight is put back by its own next save or check; a page found new while the loss is
    recent (another crawler's pages may not be back yet) is decided again by the spool replay."""
    from storage.redis_index import delete_matching, glob_escape

    c = cfg(var)
    a, b = open_store(c), open_store(c)
    try:
        assert crawl(a, "p0", *story(0)) == "new"                   # saved before the loss
        late = b.new_page_id()                                      # B: indexed, its save still on its way
        assert b.check_and_insert(late, *story(1)).kind == "new"
        b.inflight.add(late, Flight(story(1)[0], story(1)[1]))
        delete_matching(a.redis, [glob_escape(c.key_prefix) + "*"])       # Redis came back empty
        assert crawl(a, "c0", story(10)[0], story(0)[1] ^ 3) == "near"   # A re-fills from MongoDB first
        assert crawl(a, "c1", story(11)[0], story(1)[1] ^ 5) == "new"    # B's page not back yet: provisional
        assert {e["args"]["page_id"] for p in a.spool.pending() + [a.spool._path] for e in a.spool.entries(p)
                if e["op"] == "recheck"} == {a.page_by_url("http://t/c1")["_id"]}
        b.save_page({"_id": late, "url": "http://t/late", "content_hash": story(1)[0], "simhash": story(1)[1],
                     "text": "late", "site": "t"})                  # B's save meets the loss: its page is back
        assert crawl(a, "c2", story(12)[0], story(1)[1] ^ 1 << 40) == "near"   # B's page is found now
        assert a.duplicates.find_one({"url": "http://t/c2"})["original_id"] == late
        assert crawl(a, "n0", *story(20)) == "new"                       # a new story in the window: provisional
    finally:
        a.close()
        b.close()
    st = open_store(c)                                              # the next run replays A's provisional page
    try:
        assert sorted(p["url"] for p in st.pages.find()) == ["http://t/late", "http://t/n0", "http://t/p0"]
        dups = {d["url"]: d["original_id"] for d in st.duplicates.find()}
        assert dups["http://t/c0"] == st.page_by_url("http://t/p0")["_id"]
        assert dups["http://t/c1"] == late and dups["http://t/c2"] == late
        assert st.spool.count() == 0   # the replay's own decisions stand (inside the loss window too)
    finally:
        st.drop_all()
        st.close()
