"""Faults on real embedded servers: SIGKILL of Redis / the MongoDB-wire server mid-crawl, spool replay."""
from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from storage import StorageUnavailable, StoreConfig, open_store
from storage import servers as srv


@pytest.fixture(scope="module")
def var(tmp_path_factory):
    """A private var dir whose embedded servers these tests may kill."""
    path = tmp_path_factory.mktemp("faultvar")
    srv.ensure_all(path)
    yield path
    srv.stop(path)


def cfg(var: Path, **kw) -> StoreConfig:
    tag = uuid.uuid4().hex[:8]
    return StoreConfig(var_dir=str(var), db_name=f"f_{tag}", key_prefix=f"f{tag}:", retry_seconds=0.5,
                       timeout_seconds=0.5, **kw)


def sigkill(var: Path, name: str) -> int:
    pid = int((var / "run" / f"{name}.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    while srv.pid_alive(pid, name):
        time.sleep(0.02)
    return pid


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
    run = st.start_run("news")
    for i in range(5):
        crawl(st, f"p{i}", *story(i))
    st.add_source("src1", "作品", "正文" * 10)
    mid = st.upsert_match({"suspect_url": "http://t/p1", "source_id": "src1", "score": 0.5})
    st.review_match(mid, "confirm", "ann", "copied")
    time.sleep(1.0)
    sigkill(var, "mongo")
    t0 = time.monotonic()
    for i in range(5, 8):
        crawl(st, f"p{i}", *story(i))
    assert time.monotonic() - t0 < 15  # bounded retries, never hangs
    st.upsert_match({"suspect_url": "http://t/p1", "source_id": "src1", "score": 0.9, "spans": [[0, 4]]})
    st.finish_run(run, {"pages": 8})
    with pytest.raises(StorageUnavailable, match="MongoDB"):
        st.get_page("0" * 24)
    assert st.spool.count() == 5
    st.close()
    srv.ensure(var, "mongo")
    st = open_store(c)
    try:
        assert st.spool.count() == 0
        assert st.pages.count_documents({}) == 8
        m = st.get_match(mid)
        assert (m["score"], m["status"], m["spans"]) == (0.9, "confirmed", [[0, 4]])
        assert st.runs.find_one()["counts"] == {"pages": 8}
    finally:
        st.drop_all()
        st.close()


def test_down_at_start_gives_one_clear_message(var, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = cfg(var, mongo_uri=f"mongodb://127.0.0.1:{port}/?directConnection=true",
            redis_url=srv.info(var, "redis").uri)
    t0 = time.monotonic()
    with pytest.raises(StorageUnavailable) as e:
        open_store(c)
    assert "MongoDB" in str(e.value) and str(port) in str(e.value) and "MONGO_URI" in str(e.value)
    assert time.monotonic() - t0 < 10


def test_torn_spool_line_is_kept_aside(store):
    from bson import json_util

    store.config.spool_dir.mkdir(parents=True, exist_ok=True)
    good = json_util.dumps({"op": "save_page", "args": {"doc": {"_id": "p1", "url": "http://t/p1", "text": "正文"}}})
    (store.config.spool_dir / "other-1-1.jsonl").write_text(good + "\n" + good[:20])  # crash mid-write
    stats = store.replay_spool()
    assert stats["replayed"] == 1 and store.get_page("p1")["text"] == "正文"
    bad = list(store.config.spool_dir.glob("*.bad"))
    assert len(bad) == 1 and bad[0].read_text().strip() == good[:20].strip()
    assert store.spool.count() == 0


def test_unusable_var_dir_names_the_path(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(StorageUnavailable, match="not-a-dir"):
        open_store(StoreConfig(var_dir=str(blocker / "var")))
