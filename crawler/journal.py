"""The frontier journal of a JOBDIR: one line per request accepted (`+ fp request`), finished (`- fp`),
and per run's start and clean stop (`= open|clean`), each written in one write() so a SIGKILL leaves a
consistent prefix; `recover` rebuilds Scrapy's JOBDIR state from it (see crawler/resume.py for why).
"""
from __future__ import annotations

import base64
import errno
import fcntl
import logging
import os
import pickle
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from scrapy.dupefilters import _read_fingerprints
from scrapy.http import Request
from scrapy.utils.request import request_from_dict

logger = logging.getLogger("crawler.resume")   # one logger name for the resume feature's lines
JOURNAL = "frontier.journal"
LOCK = "frontier.lock"


class JobdirBusy(RuntimeError):
    """Another live process holds this JOBDIR."""


class Journal:
    """Append-only frontier journal: `+ fp request`, `- fp`, `= open|clean` lines."""

    def __init__(self, jobdir: str | os.PathLike) -> None:
        self.dir = Path(jobdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / JOURNAL
        self._lock_fd = self._lock()
        self._fd: int | None = None
        self.broken = False   # a write failed: write nothing more, so the journal stays a consistent prefix

    def _lock(self) -> int:
        """Exclusive, non-blocking lock: one crawl per JOBDIR (the kernel drops it if we die)."""
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise JobdirBusy(f"JOBDIR {self.dir} is in use by another crawl (pid {holder}); "
                             "wait for it, or use another JOBDIR") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    # ---- reading -------------------------------------------------------------------------------
    def records(self) -> Iterator[tuple[str, str, str]]:
        """(kind, fp, payload) of every complete line; a torn last line is ignored."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    break  # torn by a kill in the middle of a write
                parts = raw.decode("ascii", "replace").rstrip("\n").split(" ", 2)
                if len(parts) >= 2:
                    yield parts[0], parts[1], parts[2] if len(parts) > 2 else ""

    def state(self) -> "JournalState":
        """Replay the journal: clean stop?, pending requests, journaled fingerprints, trusted seen bytes."""
        st = JournalState(exists=self.path.exists())
        for kind, fp, payload in self.records():
            if kind == "+":
                st.pending[fp] = payload
                st.seen.add(fp)
                st.clean = False
            elif kind == "-":
                st.pending.pop(fp, None)
                st.clean = False
            elif kind == "=":
                st.clean = fp == "clean"
                size = payload.split(" ")[-1] if fp == "open" else ""
                if size.isdigit():
                    st.seen_bytes = int(size)
        return st

    # ---- writing -------------------------------------------------------------------------------
    def _write(self, line: str) -> None:
        """One line in one write() on an O_APPEND fd: in the kernel at once, survives SIGKILL."""
        if self.broken:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = line.encode("ascii")
        if os.write(self._fd, data) != len(data):   # a full disk can take part of a line
            self.broken = True   # nothing after the torn line: the next start drops it
            raise OSError(errno.ENOSPC, "short write (disk full?)", str(self.path))

    def added(self, fp: str, encoded: str) -> None:
        """A request entered the queue."""
        self._write(f"+ {fp} {encoded}\n")

    def done(self, fp: str) -> None:
        """A request's response and all its items are finished."""
        self._write(f"- {fp}\n")

    def mark(self, what: str, seen_bytes: int | None = None) -> None:
        """`open <pid> <bytes of requests.seen to trust>` when a run starts, `clean <pid>` at a clean stop."""
        extra = f" {seen_bytes}" if seen_bytes is not None else ""
        self._write(f"= {what} {os.getpid()}{extra}\n")
        if what == "clean" and self._fd is not None:
            os.fsync(self._fd)

    def rewrite(self, pending: dict[str, str], last: str | None = None) -> None:
        """Replace the journal by the pending requests (and a marker line), atomically."""
        tmp = self.path.with_name(JOURNAL + ".tmp")
        with open(tmp, "w", encoding="ascii") as f:
            for fp, encoded in pending.items():
                f.write(f"+ {fp} {encoded}\n")
            if last:
                f.write(f"= {last}\n")
            f.flush()
            os.fsync(f.fileno())
        self.close_fd()
        os.replace(tmp, self.path)

    def size(self) -> int:
        """Bytes in the journal file."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def close_fd(self) -> None:
        """Close the append fd (reopened on the next write)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def release(self) -> None:
        """Close files and drop the JOBDIR lock."""
        self.close_fd()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


@dataclass
class JournalState:
    """What a journal says about the previous runs."""

    exists: bool
    clean: bool = False
    pending: dict[str, str] = field(default_factory=dict)   # fp -> encoded request, not finished
    seen: set[str] = field(default_factory=set)             # every journaled fingerprint
    seen_bytes: int | None = None                           # requests.seen prefix written before the last run


def encode_request(request: Request, spider: Any) -> str | None:
    """A request as one ASCII token (pickled dict, as Scrapy's disk queue does); None if it cannot be."""
    try:
        return base64.b64encode(pickle.dumps(request.to_dict(spider=spider), protocol=4)).decode("ascii")
    except Exception:  # noqa: BLE001 - lambdas, sockets...: Scrapy keeps those in memory only, as do we
        return None


def decode_request(encoded: str, spider: Any) -> Request:
    """Inverse of encode_request (the journal is our own file in our own JOBDIR, never shared)."""
    return request_from_dict(pickle.loads(base64.b64decode(encoded)), spider=spider)


def write_seen(jobdir: Path, fingerprints: Iterable[bytes]) -> int:
    """Rewrite JOBDIR/requests.seen in Scrapy's format (2-byte length + fingerprint), atomically; its size."""
    path = jobdir / "requests.seen"
    tmp = jobdir / "requests.seen.tmp"
    data = b"".join(len(fp).to_bytes(2, "big") + fp for fp in fingerprints)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return len(data)


def recover(journal: Journal) -> tuple[dict[str, str], int]:
    """Rebuild Scrapy's JOBDIR state from the journal; returns (requests to queue again, seen bytes)."""
    jobdir = journal.dir
    seen_path = jobdir / "requests.seen"
    st = journal.state()
    if not st.exists:  # first run, or a JOBDIR of plain Scrapy: its own state is all there is
        return {}, seen_path.stat().st_size if seen_path.exists() else 0
    old = seen_path.read_bytes() if seen_path.exists() else b""
    if st.seen_bytes is not None:
        old = old[:st.seen_bytes]   # later entries may belong to requests the journal never got
    fps = set(_read_fingerprints(old)) | {bytes.fromhex(fp) for fp in st.seen}
    size = write_seen(jobdir, fps)
    shutil.rmtree(jobdir / "requests.queue", ignore_errors=True)
    journal.rewrite(st.pending)
    if st.clean:
        logger.info("JOBDIR %s: resuming; %d URLs already seen, %d unfinished requests queued again",
                    jobdir, len(fps), len(st.pending))
    else:
        logger.warning("JOBDIR %s: the previous run did not stop cleanly (killed?); rebuilt its state from %s: "
                       "%d URLs already seen, %d unfinished requests queued again",
                       jobdir, JOURNAL, len(fps), len(st.pending))
    return st.pending, size
