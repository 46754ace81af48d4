"""Local spool: writes that could not reach a server wait in var/spool/*.jsonl until replayed.

Each entry is one line of MongoDB extended JSON written with a single O_APPEND write() and fsync, so
a crash leaves at worst one torn last line, which replay detects and keeps aside in a .bad file.
A replaying process first renames the file (atomic), so two processes never replay the same entries, and
leaves alone the files of another crawler still running on the machine (it replays them when it closes).
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any, Iterator

from bson import json_util

from .processes import pid_alive, started_at


class Spool:
    """Append-only spool files under one directory."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self._path: Path | None = None

    def _file(self) -> Path:
        if self._path is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            name = f"{socket.gethostname()}-{os.getpid()}-{time.time_ns()}.jsonl"
            self._path = self.dir / name
        return self._path

    def append(self, op: str, **args: Any) -> Path:
        """Write one entry durably (one write call + fsync); raises OSError if the disk refuses."""
        line = json_util.dumps({"op": op, "args": args, "ts": time.time()}) + "\n"
        path = self._file()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = line.encode("utf-8")
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to spool file {path}")
            os.fsync(fd)
        finally:
            os.close(fd)
        return path

    def rotate(self) -> None:
        """Later entries go to a new file: the current one is pending from now on, for this process to replay
        too (a crawl replays what it deferred before it closes)."""
        self._path = None

    def pending(self) -> list[Path]:
        """Spool files waiting for replay, oldest first (including abandoned claims of dead processes)."""
        if not self.dir.exists():
            return []
        out = []
        for p in self.dir.iterdir():
            if p.suffix == ".jsonl" and p != self._path:
                out.append(p)
            elif ".replaying-" in p.name:
                pid = p.name.rsplit("-", 1)[1]
                if pid.isdigit() and not pid_alive(int(pid)):
                    out.append(p)
        return sorted(out, key=lambda p: p.stat().st_mtime if p.exists() else 0)

    def claimable(self) -> list[Path]:
        """Pending files this process may replay now: not those of another crawler still running on this
        machine, which replays them itself when it closes. That crawler may still append to its file (an entry
        written after a claim read the file would be lost with it), and the pages its spooled decisions are
        about may not be saved yet (a replay finds no page to decide on, and the page stays undecided)."""
        return [p for p in self.pending() if not _writer_running(p)]

    def count(self) -> int:
        """Entries waiting in the spool."""
        n = 0
        for p in self.pending() + ([self._path] if self._path and self._path.exists() else []):
            try:
                n += sum(1 for line in p.read_bytes().splitlines() if line.strip())
            except OSError:
                pass
        return n

    def claim(self, path: Path) -> Path | None:
        """Take a spool file for replay; None if another process took it first."""
        target = path.with_name(path.name.split(".replaying-")[0] + f".replaying-{os.getpid()}")
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return None
        return target

    def entries(self, claimed: Path) -> Iterator[dict]:
        """Parse a claimed file; torn or corrupt lines are kept aside in <file>.bad."""
        for raw in claimed.read_bytes().splitlines():
            if not raw.strip():
                continue
            try:
                yield json_util.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                with open(claimed.with_suffix(".bad"), "ab") as bad:
                    bad.write(raw + b"\n")

    def done(self, claimed: Path) -> None:
        """Forget a fully replayed file."""
        claimed.unlink(missing_ok=True)


def _writer_running(path: Path) -> bool:
    """True when the process that wrote this spool file (<host>-<pid>-<ns>.jsonl) is another live process of
    this machine (a pid reused by a process started after the file was made is not its writer)."""
    try:
        host, pid, made_ns = path.name.split(".replaying-")[0].removesuffix(".jsonl").rsplit("-", 2)
        pid_n, made = int(pid), int(made_ns) / 1e9
    except ValueError:
        return False
    if host != socket.gethostname() or pid_n == os.getpid() or not pid_alive(pid_n):
        return False
    started = started_at(pid_n)
    return started is None or started <= made + 1.0   # clock ticks and boot time are coarse: a second's slack
