"""Fixtures for watch mode: an isolated store, the loopback pirate site of bench_watch, and a runner for
`python -m crawler watch` (the command users run) as a subprocess on that store."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from benchmarks.bench_watch import LOCAL, PROJECT_ROOT, PirateSite


@dataclass
class WatchRun:
    """One finished `python -m crawler watch` process."""

    returncode: int
    log: str


class Watcher:
    """Runs the watch command on one isolated store (database name + Redis key prefix)."""

    def __init__(self, config) -> None:
        self.config = config

    @property
    def env(self) -> dict[str, str]:
        """How the subprocess finds the same store."""
        return {**os.environ, "MONGO_URI": self.config.mongo_uri, "REDIS_URL": self.config.redis_url,
                "ZHDEDUP_DB": self.config.db_name, "ZHDEDUP_PREFIX": self.config.key_prefix,
                "ZHDEDUP_VAR": str(self.config.var_dir),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}

    def __call__(self, *args: str, settings: list[str] | None = None, timeout: float = 120) -> WatchRun:
        """Run `python -m crawler watch ARGS` with loopback settings; fail the test if it crashes."""
        cmd = [sys.executable, "-m", "crawler", "watch", *args]
        for s in LOCAL + (settings or []):
            cmd += ["-s", s]
        proc = subprocess.run(cmd, cwd=PROJECT_ROOT, env=self.env, capture_output=True, text=True, timeout=timeout)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"watch exited {proc.returncode}:\n{log[-4000:]}"
        return WatchRun(proc.returncode, log)


@pytest.fixture
def watcher(store, store_config) -> Watcher:
    """A watch runner on the test's own store."""
    return Watcher(store_config)


@pytest.fixture
def pirate() -> Iterator[PirateSite]:
    """The loopback pirate book site with validators (ETag, Last-Modified, 304s)."""
    site = PirateSite().start()
    try:
        yield site
    finally:
        site.stop()
