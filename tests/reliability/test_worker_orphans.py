"""Issue 31: a crawler that dies without closing (SIGKILL, OOM kill) leaves nothing behind.

A real `scrapy crawl news` with one extraction/fingerprint worker process crawls the slow loopback news
site; mid-crawl it is SIGKILLed, and within a generous deadline its worker, the worker's multiprocessing
forkserver and multiprocessing's resource tracker must be gone. The crawler's descendants are found by a
marker in their environment (inherited from the crawler, unique to this test run), so orphans reparented to
init are found too; the embedded Redis / SecantusDB servers (the session's, meant to outlive a crawler) are
never counted.
"""
from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from storage.servers import MARKS
from tests.reliability.reliability_helpers import CrawlProc, NewsSites, count_pages, crawl_env, wait_until

pytestmark = pytest.mark.timeout(150)

MARKER = "ZHDEDUP_ORPHAN_TEST"
DEADLINE = 20.0     # seconds the processes get to go after the kill (the machine may be loaded)
WORKERS = {"ZHDEDUP_EXTRACT_WORKERS": "1", "ZHDEDUP_FINGERPRINT_WORKERS": "1"}


@pytest.fixture(scope="module")
def sites() -> Iterator[NewsSites]:
    """The A/B news sites, slow enough that a kill after a few pages lands mid-crawl."""
    s = NewsSites(delay=0.25)
    yield s
    s.stop()


@pytest.fixture
def token() -> Iterator[str]:
    """This test's marker value; whatever still carries it at the end is killed (no leak if the test fails)."""
    value = uuid.uuid4().hex
    yield value
    for pid in marked(value):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _read(path: str) -> bytes:
    """A /proc file's bytes (empty if the process is gone or unreadable)."""
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def marked(token: str) -> dict[int, str]:
    """Live (non-zombie) processes whose environment carries MARKER=token, except embedded servers:
    pid -> command line."""
    needle = f"{MARKER}={token}".encode()
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or needle not in _read(f"/proc/{name}/environ").split(b"\0"):
            continue
        stat = _read(f"/proc/{name}/stat").rsplit(b")", 1)
        cmd = _read(f"/proc/{name}/cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip()
        if len(stat) == 2 and stat[1].split()[0] not in (b"Z", b"X") and not any(m in cmd for m in MARKS.values()):
            out[int(name)] = cmd
    return out


def parent(pid: int) -> int:
    """The parent pid of a process (0 if gone)."""
    stat = _read(f"/proc/{pid}/stat").rsplit(b")", 1)
    return int(stat[1].split()[1]) if len(stat) == 2 else 0


def workers_up(token: str) -> dict[int, str]:
    """The marked processes once a worker exists (a forkserver's child) next to the resource tracker, else {}."""
    procs = marked(token)
    servers = {p for p, cmd in procs.items() if "multiprocessing.forkserver" in cmd}
    workers = {p for p in servers if parent(p) in servers}
    tracker = any("multiprocessing.resource_tracker" in cmd for cmd in procs.values())
    return procs if workers and tracker else {}


def test_sigkilled_crawler_leaves_no_worker_forkserver_or_resource_tracker(store, sites, tmp_path, token):
    """SIGKILL a crawl whose worker process is busy: worker, forkserver and resource tracker all exit."""
    env = {**crawl_env(store.config), MARKER: token}
    crawl = CrawlProc(sites.start_urls, env, tmp_path / "crawl.log", WORKERS)
    try:
        wait_until(lambda: workers_up(token), 90, "the worker processes", crawl)
        wait_until(lambda: count_pages(store) >= 3, 90, "3 stored pages", crawl)
        procs = marked(token)
        assert crawl.proc.poll() is None and count_pages(store) < len(sites.expected.groups), \
            "the crawl ended before the kill: nothing to test"
    finally:
        crawl.kill()
    left = {p: cmd for p, cmd in procs.items() if p != crawl.proc.pid}
    assert any("multiprocessing" in cmd for cmd in left.values()), procs
    try:
        wait_until(lambda: not (set(marked(token)) & set(left)), DEADLINE, "the crawler's processes to exit")
    except AssertionError:
        alive = {p: cmd for p, cmd in marked(token).items() if p in left}
        raise AssertionError(f"still running {DEADLINE:.0f} s after the crawler's SIGKILL: {alive}") from None
