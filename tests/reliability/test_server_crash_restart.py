"""A process SIGKILLed while it starts an embedded server (a crawler killed ~4 s after its start) must not
block the next run: the next `ensure` reuses the server left behind or stops it, and exactly one server
ever runs on a data directory (SecantusDB refuses a second one: "WiredTiger database is already being
managed by another process"; two redis-servers would share one append-only file).

Real processes only: a starter subprocess calls `storage.servers.ensure(var, name)` in a fresh var dir and
is SIGKILLed at several moments (a sweep), or deterministically while its server is spawned but not yet
answering (the starter's readiness check is frozen), or the run/ files naming a server are lost. Then this
process calls `ensure` and checks the server answers with its credentials and is the only server process
on that data directory (found in /proc, independently of storage.servers). Every var dir is private to one
test; teardown stops its servers and SIGKILLs anything left that names it.
"""
from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from storage import servers as srv

pytestmark = pytest.mark.timeout(120)

PROJECT = Path(__file__).resolve().parents[2]

# argv: project, var dir, server name, mode: "run"; "freeze" (the starter never sees the server that needs
# the password answer: mongo's user is provisioned, then it hangs after spawning the real server) or
# "freeze-all" (it never sees any server answer: mongo hangs after spawning the provisioning server).
STARTER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from storage import servers as srv
real, mode = srv.port_answers, sys.argv[4]
if mode.startswith("freeze"):
    srv.START_TIMEOUT = 600.0
    srv.port_answers = lambda name, port, timeout=1.0, secret=None: (
        False if secret or mode == "freeze-all" else real(name, port, timeout, secret))
print("go", flush=True)
srv.ensure(sys.argv[2], sys.argv[3])
print("up", flush=True)
time.sleep(600)
"""


def _args(pid: int) -> list[str]:
    """The command line of a process ([] when it is gone or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _link(pid: int, what: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/{what}")
    except OSError:
        return ""


def _pids() -> Iterator[int]:
    """Our live processes other than this one."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if d.stat().st_uid == os.geteuid():
                    yield int(d.name)
            except OSError:
                continue


def server_pids(var: Path, name: str) -> list[int]:
    """Server processes (not shells) on var/<name>: SecantusDB by --storage-path, redis-server by its --dir
    or, once it has rewritten its title, by its working directory."""
    data = str((var / name).resolve())
    out = []
    for pid in _pids():
        args = _args(pid)
        if name == "mongo":
            hit = any(a == "--storage-path" and b == data for a, b in zip(args, args[1:]))
            hit = hit and any("secantus" in a for a in args) and Path(_link(pid, "exe")).name.startswith("python")
        else:
            hit = Path(_link(pid, "exe")).name == "redis-server" and (_link(pid, "cwd") == data or data in args)
        if hit:
            out.append(pid)
    return out


def leftovers(var: Path) -> list[int]:
    """Every process of ours naming var in its command line or working directory (servers, shells, starters)."""
    root = str(var.resolve())
    inside = re.compile(re.escape(root) + r"(?=[/\s'\"]|$)")
    return [pid for pid in _pids()
            if any(inside.search(a) for a in _args(pid)) or inside.match(_link(pid, "cwd") + " ")]


def wait_for(cond: Callable[[], object], timeout: float, what: str) -> object:
    """Poll cond until it is truthy (generous timeouts: a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def var(tmp_path: Path) -> Iterator[Path]:
    """A private var dir; afterwards its servers are stopped and anything still naming it is SIGKILLed."""
    var = tmp_path / "var"
    yield var
    try:
        srv.stop(var)
    finally:
        for pid in leftovers(var):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not leftovers(var), 30, f"no process left on {var}")


class Starter:
    """A subprocess that starts one embedded server in var and is SIGKILLed before (or after) it is done."""

    def __init__(self, var: Path, name: str, mode: str = "run") -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", STARTER, str(PROJECT), str(var), name, mode],
                                     cwd=str(var.parent), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.out = b""
        assert b"go" in self.read_until(b"go", 60), self.out

    def read_until(self, marker: bytes, timeout: float) -> bytes:
        """Read the starter's output until marker (or timeout, or its end)."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while marker not in self.out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                self.out += chunk
        return self.out

    def sigkill(self) -> bool:
        """SIGKILL the starter (never its server: that runs detached); True if it had finished starting."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.read_until(b"\0", 0.2)
        self.proc.stdout.close()
        return b"up" in self.out


def assert_one_server_answers(var: Path, name: str) -> srv.ServerInfo:
    """The next run's `ensure` succeeds; its server answers with the credentials and is alone on the data dir."""
    t0 = time.monotonic()
    got = srv.ensure(var, name)
    took = time.monotonic() - t0
    assert got.running and srv.port_answers(name, got.port, secret=got.secret)
    assert got.secret and got.secret == srv.credentials(var, create=False)[name]
    if name == "redis":
        import redis

        client = redis.Redis.from_url(got.uri, socket_timeout=10)
        assert client.set("crash:probe", "1") and client.get("crash:probe") == b"1"
        client.close()
    else:
        import pymongo

        client = pymongo.MongoClient(got.uri, serverSelectionTimeoutMS=10000)
        try:
            client.crash.probe.insert_one({"_id": 1})
            assert client.crash.probe.find_one({"_id": 1}) == {"_id": 1}
        finally:
            client.close()
        assert "--auth" in _args(got.pid), "the provisioning server (no --auth) was reused"
    assert server_pids(var, name) == [got.pid], (server_pids(var, name), got)
    assert srv.info(var, name).pid == got.pid
    print(f"{name}: next ensure took {took:.2f}s")
    return got


SWEEP = [("redis", d) for d in (0.0, 0.05, 0.1, 0.2, 0.4)] + [("mongo", d) for d in (0.3, 1.5, 3.2)]


@pytest.mark.parametrize("name,delay", SWEEP)
def test_starter_sigkilled_during_start_then_next_run_starts(var, name, delay):
    """SIGKILL the starter `delay` s after it calls ensure on a fresh var (for mongo: while the user is
    provisioned without auth, while that server stops, while the real one starts); the next run works."""
    starter = Starter(var, name)
    time.sleep(delay)
    finished = starter.sigkill()
    print(f"{name} killed {delay}s into ensure (finished: {finished}); on the data dir: {server_pids(var, name)}")
    assert_one_server_answers(var, name)


def _spawned(var: Path, name: str, mode: str) -> list[int]:
    """The server the frozen starter waits for: any for freeze-all, else the one with the password."""
    pids = server_pids(var, name)
    return pids if mode == "freeze-all" or name == "redis" else [p for p in pids if "--auth" in _args(p)]


@pytest.mark.parametrize("name,mode", [("redis", "freeze"), ("mongo", "freeze"), ("mongo", "freeze-all")])
def test_starter_sigkilled_between_spawn_and_answer(var, name, mode):
    """Deterministic: the starter's server is spawned (mongo: the real one, or with freeze-all the provisioning
    one without auth) but the starter never sees it answer; SIGKILLed then, it leaves a server behind that
    (before the fix) no pid file names."""
    starter = Starter(var, name, mode=mode)
    wait_for(lambda: _spawned(var, name, mode), 60, f"the {name} server spawned")
    time.sleep(1.0)  # the server is starting or up; the starter still waits for it
    assert not starter.sigkill()
    assert len(server_pids(var, name)) == 1
    assert_one_server_answers(var, name)


@pytest.mark.parametrize("name", ["redis", "mongo"])
def test_server_whose_run_files_are_lost_is_replaced_and_stopped(var, name):
    """A running server that run/ no longer names (a starter killed before writing them, or files lost):
    the next `ensure` stops it before starting one, and `stop` finds such a server too."""
    first = srv.ensure(var, name)
    for suffix in ("pid", "port"):
        (var / "run" / f"{name}.{suffix}").unlink()
    assert server_pids(var, name) == [first.pid]
    second = assert_one_server_answers(var, name)
    assert second.pid != first.pid
    for suffix in ("pid", "port"):
        (var / "run" / f"{name}.{suffix}").unlink()
    assert srv.stop(var, (name,)) == {name: True}
    assert server_pids(var, name) == []
