"""A crawler's spool while it runs is its own: another process's replay (a second crawler closing, a store
opened by the CLI) leaves it alone, and takes it once that crawler has ended.

Why: a crawler spools a page's decision before the page's save lands. A replay in another process that took
the file then found no page to decide on and dropped the entry; the page, saved a moment later, stayed
undecided and stored, a copy kept beside its original. And an entry the crawler appended after the other
process had read the claimed file was lost with it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from storage.replay import replay_spool
from storage.spool import Spool

CHILD = """
import sys
from storage.spool import Spool
Spool(sys.argv[1]).append("recheck", page_id=sys.argv[2], k=3, why="a passage candidate's text unreadable")
print("spooled", flush=True)
sys.stdin.read()
"""


def _writer(spool_dir: Path, page_id: str) -> subprocess.Popen:
    """Another crawler process: spools a decision for page_id, then runs on until its stdin closes."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(spool_dir), page_id], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "spooled"
    return proc


def _page(pid: str, url: str, fp: int, **extra) -> dict:
    return {"_id": pid, "url": url, "content_hash": "c" * 32, "simhash": fp, "text": "同一篇报道的全文。",
            "site": "t", **extra}


def test_a_running_crawlers_decision_waits_for_it_then_is_made(store):
    """The copy's decision, spooled by a live crawler before its page is saved: a replay meanwhile keeps it;
    the replay after that crawler ended takes the copy back to a duplicate of the original."""
    fp = 0x1234_5678_9ABC_DEF0
    original = store.new_page_id()
    assert store.check_and_insert(original, "c" * 32, fp).kind == "new"
    store.save_page(_page(original, "http://a/1", fp))
    copy = store.new_page_id()
    writer = _writer(store.spool.dir, copy)
    try:
        files = store.spool.pending()
        assert len(files) == 1 and store.spool.claimable() == [] and store.spool.count() == 1
        assert replay_spool(store)["left_to_running_crawlers"] == 1   # another process's replay meanwhile
        assert files[0].exists() and store.spool.count() == 1
        store.save_page(_page(copy, "http://b/1", fp, undecided=True))   # the crawler's save lands
    finally:
        writer.stdin.close()
        writer.wait(30)
    assert store.spool.claimable() == files
    assert replay_spool(store)["left_to_running_crawlers"] == 0
    assert [p["url"] for p in store.pages.find()] == ["http://a/1"]
    dup = store.duplicates.find_one({"url": "http://b/1"})
    assert dup is not None and dup["original_id"] == original
    assert store.spool.count() == 0


def test_files_of_this_process_and_of_ended_or_reused_pids_are_claimable(tmp_path):
    """Only another live process that made the file holds it: not ours, not a dead pid, not a pid reused by a
    process started after the file was made."""
    spool = Spool(tmp_path)
    host = os.uname().nodename
    ours = spool.append("record_outcomes", run_id="r", records=[])
    spool.rotate()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / f"{host}-{dead}-{time.time_ns()}.jsonl").write_text("{}\n")
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as live:
        try:
            reused = tmp_path / f"{host}-{live.pid}-{time.time_ns() - 3600 * 10 ** 9}.jsonl"   # made an hour ago
            reused.write_text("{}\n")
            running = tmp_path / f"{host}-{live.pid}-{time.time_ns()}.jsonl"
            running.write_text("{}\n")
            elsewhere = tmp_path / f"other-host-{live.pid}-{time.time_ns()}.jsonl"
            elsewhere.write_text("{}\n")
            claimable = set(spool.claimable())
            assert ours in claimable and reused in claimable and elsewhere in claimable
            assert running not in claimable and running in spool.pending()
            assert len(claimable) == 4
        finally:
            live.stdin.close()
    assert running in spool.claimable()
