"""A benchmark stopped by SIGTERM leaves no crawler and no server behind (they used to outlive it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def _ours(marker: str) -> dict[int, str]:
    """Live processes whose environment, command line or working directory names marker, a directory (the
    benchmark's TMPDIR; Redis writes its title over its environment, its working directory stays): pid -> cmdline."""
    inside = marker.rstrip(os.sep) + os.sep
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace").split("\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(entry / "cwd")
        except OSError:   # gone meanwhile, or not ours to read
            continue
        named = f"TMPDIR={marker}" in environ or inside in cmdline or (cwd + os.sep).startswith(inside)
        if state != "Z" and named:
            found[int(entry.name)] = cmdline
    return found


def _wait_for(cond, timeout: float) -> bool:
    """Poll cond until true or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.2)
    return False


def _stopped_mid_crawl(args: list[str], tmp_path: Path, started: str) -> None:
    """Run a benchmark with TMPDIR (and its var/) in tmp_path, SIGTERM it once a crawler and a server whose
    working directory contains `started` run, and check it exits 143 leaving nothing of its own running."""
    marker = str(tmp_path)
    env = {**os.environ, "TMPDIR": marker, "ZHDEDUP_VAR": str(tmp_path / "var")}
    for name in ("MONGO_URI", "REDIS_URL"):   # embedded servers, ours to find
        env.pop(name, None)
    bench = subprocess.Popen([sys.executable, "-m", *args], cwd=PROJECT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def crawling() -> bool:
        ours = _ours(marker)
        return (any("scrapy crawl" in c for c in ours.values())
                and any(started in _cwd(pid) and ("secantus" in c or "redis-server" in c) for pid, c in ours.items()))

    try:
        assert _wait_for(crawling, 180), f"no crawler with its servers seen: {_ours(marker)}"
        bench.send_signal(signal.SIGTERM)
        rc = bench.wait(120)
        assert rc == 128 + signal.SIGTERM, bench.stderr.read().decode(errors="replace")[-2000:]
        assert _wait_for(lambda: not _ours(marker), 30), f"left running: {_ours(marker)}"
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
        for pid in _ours(marker):   # what a failure left: not to outlive the test
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _cwd(pid: int) -> str:
    """A process's working directory ('' once it is gone)."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def test_sigterm_stops_the_invariant_harness_with_its_crawlers_and_servers(tmp_path):
    _stopped_mid_crawl(["benchmarks.bench_invariant", "--seed", "3", "--kind", "embedded", "--fault", "none"],
                       tmp_path, "bench_invariant_3_")


def test_sigterm_stops_the_crawl_benchmark_with_its_crawl_and_the_servers_of_its_cold_start(tmp_path):
    _stopped_mid_crawl(["benchmarks.bench_crawl", "--pages", "400", "--repeat", "2", "--only", "full-cold"],
                       tmp_path, "bench-crawl-")
