"""The invariant harness stopped by SIGTERM leaves no crawler and no server behind (they used to outlive it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def _ours(marker: str) -> dict[int, str]:
    """Live processes whose environment, command line or working directory names marker (the harness's TMPDIR;
    Redis writes its title over its environment, its working directory stays): pid -> cmdline."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(entry / "cwd")
        except OSError:   # gone meanwhile, or not ours to read
            continue
        if state != "Z" and (marker in environ or marker in cmdline or cwd.startswith(marker)):
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


def test_sigterm_stops_the_harness_with_its_crawlers_and_servers(tmp_path):
    marker = str(tmp_path)
    env = {**os.environ, "TMPDIR": marker}
    harness = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_invariant", "--seed", "3", "--kind",
                                "embedded", "--fault", "none"], cwd=PROJECT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        crawling = _wait_for(lambda: any("scrapy crawl" in c for c in _ours(marker).values())
                             and any("secantus" in c or "redis-server" in c for c in _ours(marker).values()), 180)
        assert crawling, f"no crawler with its servers seen: {_ours(marker)}"
        harness.send_signal(signal.SIGTERM)
        rc = harness.wait(120)
        assert rc == 128 + signal.SIGTERM, harness.stderr.read().decode(errors="replace")[-2000:]
        assert _wait_for(lambda: not _ours(marker), 30), f"left running: {_ours(marker)}"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        for pid in _ours(marker):   # what a failure left: not to outlive the test
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
