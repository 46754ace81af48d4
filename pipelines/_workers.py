"""One pool of worker processes per crawler, shared by the pipelines that move CPU work off the reactor.

Extraction (ZHDEDUP_EXTRACT_WORKERS) and fingerprinting (ZHDEDUP_FINGERPRINT_WORKERS) send their pages to
the same processes; the pool has as many as the larger of the two settings asks for. "auto" (the default)
is one worker on a machine with two or more CPUs: the crawler is bound to one core by the GIL, so the work
pays on the other (docs/performance.md). A pool that breaks (a worker killed) is said once in the log and
the work goes on in the crawler process: nothing is lost. Workers end with their crawler however it ends
(SIGKILL, OOM kill): each watches the crawler's pid and exits when it is gone, and with the last worker the
forkserver and multiprocessing's resource tracker see their pipes close and exit too (issue 31).
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import select
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, TypeVar

from scrapy import signals

from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines import stats as st
from pipelines.errors import CrawlCannotStart

logger = logging.getLogger(__name__)
T = TypeVar("T")
_ATTR = "_zhdedup_workers"
SETTINGS = ("ZHDEDUP_EXTRACT_WORKERS", "ZHDEDUP_FINGERPRINT_WORKERS")
POLL_SECONDS = 0.5      # how often a worker checks on its crawler where the OS has no pidfd
ORPHAN_EXIT = 3         # exit code of a worker whose crawler is gone


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. a container's share), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def count_setting(settings: Any, name: str, auto: Callable[[int], int], minimum: int, what: str) -> int:
    """A count setting as a number: "auto" is auto(usable CPUs); below `minimum` or not a whole number raises
    CrawlCannotStart naming `what` is wanted (nothing fetched yet)."""
    value = settings.get(name, getattr(defaults, name))
    if str(value).strip().lower() == "auto":
        return auto(usable_cpus())
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = minimum - 1
    if count < minimum:
        raise CrawlCannotStart(f"bad setting {name}={value!r}: give a number of {what} or auto")
    return count


def worker_count(settings: Any, name: str) -> int:
    """A workers setting as a number: "auto" is 1 with two or more usable CPUs, else 0 (inline)."""
    return count_setting(settings, name, lambda cpus: 1 if cpus >= 2 else 0, 0,
                         "worker processes (0 = in the crawler)")


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its waited-for children (Linux /proc; 0.0 where unreadable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def watch_crawler(pid: int) -> None:
    """Worker initializer: exit when the crawler (pid) ends, so a killed crawler leaves no worker behind
    (with forkserver the worker's parent is the forkserver, so the crawler's pid is passed in)."""
    threading.Thread(target=_exit_after, args=(pid,), name="zhdedup-crawler-watch", daemon=True).start()


def _exit_after(pid: int) -> None:
    """Wait for pid to end, then end this process at once (no cleanup: nobody is left to hand results to)."""
    wait_for_exit(pid)
    os._exit(ORPHAN_EXIT)


def wait_for_exit(pid: int) -> None:
    """Block until process pid has ended: on a pidfd where the OS has them (no polling), else by polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        _poll_until_gone(pid)
        return
    try:
        _wait_readable(fd)
    except OSError:
        _poll_until_gone(pid)
    finally:
        os.close(fd)


def _wait_readable(fd: int) -> None:
    """Block until fd is readable (a pidfd is once its process has ended); poll(), as select() is limited
    to fds below FD_SETSIZE (Linux, the one OS with pidfds, always has poll)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not poller.poll():
        pass


def _poll_until_gone(pid: int) -> None:
    """Return once kill(pid, 0) says no such process (for systems without pidfd_open)."""
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        time.sleep(POLL_SECONDS)


class WorkerPool:
    """The crawler's worker processes (started on first use, shut down when the spider closes); the CPU they
    used goes into the stats (zhdedup/workers/cpu_ms), so that a benchmark counts it."""

    def __init__(self, size: int, stats: Any = None) -> None:
        self.size = size
        self.stats = stats
        self.executor: ProcessPoolExecutor | None = None
        self.broken = False
        self.warmed: set[Callable[[], None]] = set()
        self.lock = threading.Lock()   # started from the early-start thread and from open_spider
        self.closed = False   # closed once: a start still on its way (early start) starts nothing

    def start(self, warm_up: Callable[[], None]) -> None:
        """Start the processes (if not yet) and run warm_up in each (once per warm_up), before the first
        page arrives."""
        if self.broken or self.size <= 0:
            return
        with self.lock:
            if warm_up in self.warmed or self.closed:
                return
            self.warmed.add(warm_up)
            if self.executor is None:  # not fork: the crawler's store threads may hold locks a fork would copy
                self.executor = ProcessPoolExecutor(max_workers=self.size, mp_context=_context(),
                                                    initializer=watch_crawler, initargs=(os.getpid(),))
            for _ in range(self.size):
                self.executor.submit(warm_up)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) in a worker process, or here when there is no (working) pool."""
        if self.executor is None or self.broken:
            return fn(*args)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)
        except BrokenProcessPool as exc:
            if not self.broken:
                logger.warning("worker processes stopped (%s): the crawler process does their work from now on",
                               exc)
            self.broken = True
            return fn(*args)

    def close(self, spider: Any = None) -> None:
        """Stop the worker processes, waiting for them (a process still starting when the crawler exits
        reads its state from a parent gone: a traceback on the console)."""
        with self.lock:
            self.closed = True
            executor, self.executor = self.executor, None
            self.warmed.clear()
        if executor is not None:
            cpu = sum(process_cpu_seconds(pid) for pid in list(executor._processes or {}))
            if self.stats is not None:
                self.stats.inc_value(st.WORKERS_CPU_MS, round(cpu * 1000))
            executor.shutdown(wait=True, cancel_futures=True)


def _context() -> Any:
    """forkserver where there is one (else spawn), its server preloading only the workers' own module: by
    default it would import the crawler's __main__ (Scrapy's command line) before forking the first worker."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["pipelines._worker_tasks"])
    return context


def pool_of(crawler: Any) -> WorkerPool | None:
    """The crawler's pool if one was made."""
    return getattr(crawler, _ATTR, None)


def pool_for(crawler: Any) -> WorkerPool:
    """The crawler's shared pool, sized by the larger of ZHDEDUP_EXTRACT_WORKERS / ZHDEDUP_FINGERPRINT_WORKERS."""
    pool = getattr(crawler, _ATTR, None)
    if pool is None:
        pool = WorkerPool(max(worker_count(crawler.settings, name) for name in SETTINGS), crawler.stats)
        setattr(crawler, _ATTR, pool)
        crawler.signals.connect(pool.close, signal=signals.spider_closed)
    return pool
