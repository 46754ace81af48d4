"""Full or read-only disks, simulated with tiny tmpfs mounts (we run as root in a container with
CAP_SYS_ADMIN; without it the tests are skipped, naming why): a clear error naming the path, the crawl
stops instead of grinding through failures, nothing half-written is taken as data, and the same command
finishes the crawl once there is space again.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from storage import StoreConfig, open_store
from storage import servers as srv
from tests.reliability.reliability_helpers import CrawlProc, NewsSites, assert_every_story_once, crawl_env, wait_until

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def mount(tmp_path):
    """mount(name, size, read_only=False) -> a fresh tmpfs directory; all unmounted afterwards."""
    mounted: list[Path] = []

    def make(name: str, size: str, read_only: bool = False) -> Path:
        path = tmp_path / name
        path.mkdir()
        opts = f"size={size}" + (",ro" if read_only else "")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()}): needs root / CAP_SYS_ADMIN")
        mounted.append(path)
        return path

    yield make
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(directory: Path, leave: int) -> Path:
    """Fill a filesystem until `leave` bytes are free; returns the filler file (delete it to free space)."""
    st = os.statvfs(directory)
    free = st.f_bavail * st.f_frsize
    filler = directory / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


@pytest.fixture(scope="module")
def sites():
    """The slow A/B news sites, for this module."""
    s = NewsSites()
    yield s
    s.stop()


def test_read_only_var_is_one_clear_error(mount, tmp_path, sites):
    """Embedded servers under a read-only var/: exit code 2, one message naming the path, no traceback,
    no server started."""
    ro = mount("ro", "1m", read_only=True)
    env = crawl_env(var_dir=ro / "var", db="ro")
    proc = CrawlProc(sites.start_urls, env, tmp_path / "crawl.log")
    assert proc.wait(60) == 2, proc.log[-3000:]
    log = proc.log
    assert f"cannot use {ro / 'var'}" in log and "Read-only file system" in log
    assert "how to fix: make var/ writable or set ZHDEDUP_VAR" in log
    assert "Traceback" not in log
    assert not (ro / "var").exists()


def test_full_jobdir_stops_the_crawl_and_the_same_command_resumes(store, mount, sites, tmp_path):
    """JOBDIR on a nearly full filesystem: the crawl stops with an error naming the path; after space
    is freed the same command finishes it: every story once, every copy recorded."""
    disk = mount("jobfs", "512k")
    job = {"JOBDIR": str(disk / "job")}
    filler = fill(disk, 24 * 1024)
    env = crawl_env(store.config)
    first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", job)
    first.wait(90)
    log = first.log
    assert f"cannot write the crawl state to {disk / 'job'}" in log, log[-3000:]
    assert "No space left on device" in log or "disk full" in log
    assert "'finish_reason': 'jobdir_unwritable'" in log
    assert log.count("cannot write the crawl state") == 1 and "Traceback" not in log, log[-5000:]
    stored_first = store.pages.count_documents({})
    assert stored_first < len(sites.expected.groups), "the disk filled too late to test anything"
    filler.unlink()
    second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", job)
    assert second.wait(90) == 0, second.log[-3000:]
    assert "'finish_reason': 'finished'" in second.log
    assert_every_story_once(store, sites.expected)


@pytest.fixture
def private(tmp_path_factory):
    """Private embedded servers (in a normal tmp dir) that a test may kill; stopped afterwards."""
    path = tmp_path_factory.mktemp("diskvar")
    srv.ensure_all(path)
    yield path
    srv.stop(path)


def test_mongodb_down_and_spool_disk_full_stops_then_resumes(private, mount, sites, tmp_path):
    """MongoDB killed (a configured server: nobody restarts it) while the spool's disk is full: the
    crawl stops with one error naming the spool directory; no torn spool line is ever replayed as
    data; with MongoDB back and space freed, the same command (JOBDIR) finishes the crawl."""
    spool_fs = mount("spoolfs", "256k")
    db = f"d{uuid.uuid4().hex[:8]}"
    config = StoreConfig(mongo_uri=srv.info(private, "mongo").uri, redis_url=srv.info(private, "redis").uri,
                         var_dir=str(spool_fs / "var"), db_name=db, key_prefix=f"{db}:")
    (spool_fs / "var" / "spool").mkdir(parents=True)
    filler = fill(spool_fs, 300)
    env = crawl_env(config)
    job = {"JOBDIR": str(tmp_path / "job")}

    def stored() -> int:
        import pymongo

        c = pymongo.MongoClient(config.mongo_uri, serverSelectionTimeoutMS=500)
        try:
            return c[db].pages.count_documents({})
        finally:
            c.close()

    with sites.held_after(14):   # at least 7 stories answered until the kill: it always comes mid-crawl
        first = CrawlProc(sites.start_urls, env, tmp_path / "1.log", job, store={"retry_seconds": 0.5})
        wait_until(lambda: stored() >= 6, 60, "6 stored pages", first)
        mongo_pid = srv.info(private, "mongo").pid
        os.kill(mongo_pid, signal.SIGKILL)
        while srv.pid_alive(mongo_pid, "mongo"):
            time.sleep(0.02)
    first.wait(120)
    log = first.log
    assert f"cannot write {spool_fs / 'var' / 'spool'}" in log, log[-3000:]
    assert "'finish_reason': 'storage_unavailable'" in log
    assert log.count("stopping the crawl") == 1       # one clear error, no traceback per page
    assert "Error processing" not in log and "Traceback" not in log, log[-5000:]
    assert "zhdedup summary for spider" in log        # the summary survives (stats hold numbers)
    srv.ensure(private, "mongo")
    filler.unlink()
    second = CrawlProc(sites.start_urls, env, tmp_path / "2.log", job)
    assert second.wait(90) == 0, second.log[-3000:]
    with open_store(config) as st:
        assert_every_story_once(st, sites.expected)
        st.drop_all()
