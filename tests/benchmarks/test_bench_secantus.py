"""benchmarks/bench_secantus.py measures a real SecantusDB daemon: the server's CPU for a small mix and its start are
positive figures, and the baseline daemon comes out of git history as a runnable script."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks import bench_secantus

pytestmark = pytest.mark.timeout(120)


def test_the_server_cpu_of_a_small_mix_is_measured(tmp_path: Path):
    cpu, wall, start = bench_secantus.server_ms_per_command(bench_secantus.DAEMON, per_thread=3, threads=2)
    assert 0 < cpu < 1000 and 0 < wall < 1000 and 0 < start < 60


def test_the_baseline_daemon_is_read_from_git(tmp_path: Path):
    if subprocess.run(["git", "cat-file", "-e", bench_secantus.BASELINE], cwd=bench_secantus.ROOT).returncode:
        pytest.skip("a checkout without the baseline commit (a shallow clone)")
    path = bench_secantus.daemon_of(bench_secantus.BASELINE, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "class CatalogMemo" in text and "def main(" in text
