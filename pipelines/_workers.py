"""One pool of worker processes per crawler, shared by the pipelines that move CPU work off the reactor.

Extraction (ZHDEDUP_EXTRACT_WORKERS) and fingerprinting (ZHDEDUP_FINGERPRINT_WORKERS) send their pages to
the same processes; the pool has as many as the larger of the two settings asks for. "auto" (the default)
is one worker on a machine with two or more CPUs: the crawler is bound to one core by the GIL, so the work
pays on the other (docs/performance.md). Under "auto" the pool grows, one worker at a time up to one a CPU,
while its workers stay busy (GROW_BUSY of their time over GROW_SECONDS): pages of real sites' weight keep
one worker busy all the time, where small pages leave it idle more than half of it (docs/performance.md,
twenty-seventh pass). The spider's page facts go to the workers while the crawler process is the busy one
(`offload`, twenty-eighth pass). A pool that breaks (a worker killed) is said once in the log and the work goes
on in the crawler process: nothing is lost. Each worker is reached through one socket that the event loop reads
and writes (`Channel`; the worker's side is pipelines/worker_process.py). Workers end with their crawler however
it ends (SIGKILL, OOM kill): each watches the crawler's pid and exits when it is gone, and with the last worker
the forkserver and multiprocessing's resource tracker see their pipes close and exit too (issue 31).
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import threading
import time
from collections import deque
from concurrent.futures import Future
from multiprocessing import forkserver, resource_tracker
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from scrapy import signals

from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines import stats as st
from pipelines.errors import CrawlCannotStart
from pipelines.worker_process import HEADER, frame, serve

logger = logging.getLogger(__name__)
T = TypeVar("T")
_ATTR = "_zhdedup_workers"
SETTINGS = ("ZHDEDUP_EXTRACT_WORKERS", "ZHDEDUP_FINGERPRINT_WORKERS")
READ_BYTES = 1 << 20    # most bytes read from a worker's socket at once
CLOSE_SECONDS = 5.0     # how long a closing pool waits for a worker to exit before it kills it
GROW_BUSY = 0.85        # "auto": one more worker when the workers' CPU was this share of their time ...
GROW_SECONDS = 2.0      # ... over this long (counted from their first answer, so not their warm-up)
HERE_BELOW = 0.70       # work the crawler could do itself stays there while it is this busy, until GROW_BUSY
# in that order; the extractor is preloaded by name (pipelines._worker_tasks imports it only at its first use,
# because the crawler process imports that module too and never extracts), then warmed up with the tokenizer
PRELOAD = ("pipelines.worker_process", "pipelines._worker_tasks", "extract.article", "pipelines._forkserver_warm",
           "pipelines._forkserver_exit")


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


def worker_limit(settings: Any, name: str) -> int:
    """How many workers the setting lets a busy pool grow to: "auto" one a usable CPU (with two or more), a
    number itself."""
    return count_setting(settings, name, lambda cpus: cpus if cpus >= 2 else 0, 0,
                         "worker processes (0 = in the crawler)")


def process_cpu_seconds(pid: int, children: bool = True) -> float:
    """utime + stime of a process and (`children`) its waited-for children (Linux /proc; 0.0 where unreadable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")


class WorkerGone(Exception):
    """A worker process ended (killed, or its socket closed) before it answered."""


class UnreadableAnswer(Exception):
    """A worker's answer that does not unpickle in the crawler; the worker itself is fine."""


class Channel:
    """The crawler's end of one worker's socket, driven by the event loop: calls leave without blocking (what
    the socket does not take waits in a buffer), answers come back in order through a reader callback. No
    thread of its own: ProcessPoolExecutor's wake-up pipe, manager and feeder threads cost the crawler about
    1 ms of CPU a page (docs/performance.md, sixth pass)."""

    def __init__(self, sock: socket.socket, process: Any) -> None:
        self.sock = sock
        self.process = process
        self.pending: deque[asyncio.Future] = deque()
        self.outbox = bytearray()
        self.inbox = bytearray()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.gone: WorkerGone | None = None
        self.lock = threading.Lock()   # warm-ups may be written from the early-start thread

    def warm(self, fn: Callable[[], None]) -> None:
        """Send a call nobody waits for (from any thread): before the channel is on a loop, written at once."""
        data = frame(pickle.dumps((False, fn, ()), pickle.HIGHEST_PROTOCOL))
        with self.lock:
            if self.gone is not None:
                return
            if self.loop is None or self.loop.is_closed():
                try:
                    self.sock.setblocking(True)
                    self.sock.sendall(data)
                    self.sock.setblocking(self.loop is None)
                except OSError as exc:   # the worker died before its first page: the pages go inline
                    self._lost(f"cannot write to it: {exc}")
                return
        self.loop.call_soon_threadsafe(self._write, data)

    def call(self, fn: Callable[..., T], args: tuple) -> "asyncio.Future[T]":
        """Send fn(*args) to the worker; the future gets its answer (or WorkerGone)."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self._bind(loop)
        future = loop.create_future()
        if self.gone is not None:
            future.set_exception(self.gone)
            return future
        self.pending.append(future)
        self._write(frame(pickle.dumps((True, fn, args), pickle.HIGHEST_PROTOCOL)))
        return future

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read and write through `loop` from now on (a new loop, as in tests, takes over from a closed one)."""
        with self.lock:
            self._unbind()
            self.loop = loop
            self.sock.setblocking(False)
            if self.gone is None:
                loop.add_reader(self.sock.fileno(), self._readable)
                if self.outbox:
                    loop.add_writer(self.sock.fileno(), self._flush)

    def _unbind(self) -> None:
        """Stop watching the socket on the loop it was on (if that loop still runs)."""
        if self.loop is not None and not self.loop.is_closed() and self.sock.fileno() >= 0:
            self.loop.remove_reader(self.sock.fileno())
            self.loop.remove_writer(self.sock.fileno())

    def _write(self, data: bytes) -> None:
        """Send what the socket takes now; keep the rest for when it is writable."""
        if self.gone is not None:
            return
        if self.outbox:
            self.outbox += data
            return
        try:
            sent = self.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            self._lost(f"cannot write to it: {exc}")
            return
        if sent < len(data):
            self.outbox += data[sent:]
            self.loop.add_writer(self.sock.fileno(), self._flush)

    def _flush(self) -> None:
        """Writable again: send more of the buffer."""
        try:
            sent = self.sock.send(self.outbox)
        except BlockingIOError:
            return
        except OSError as exc:
            self._lost(f"cannot write to it: {exc}")
            return
        del self.outbox[:sent]
        if not self.outbox:
            self.loop.remove_writer(self.sock.fileno())

    def _readable(self) -> None:
        """Answers arrived: hand each complete one to the oldest waiting call."""
        try:
            data = self.sock.recv(READ_BYTES)
        except BlockingIOError:
            return
        except OSError as exc:
            self._lost(f"cannot read from it: {exc}")
            return
        if not data:
            self._lost(f"process {self.process.pid} closed its socket (exit code {self.process.exitcode})")
            return
        self.inbox += data
        while len(self.inbox) >= HEADER.size:
            size = HEADER.unpack_from(self.inbox)[0]
            if len(self.inbox) < HEADER.size + size:
                break
            ok, value = _unpickled(self.inbox[HEADER.size:HEADER.size + size])
            del self.inbox[:HEADER.size + size]
            _settle(self.pending.popleft(), ok, value)

    def _lost(self, why: str) -> None:
        """The worker is gone: every waiting call gets WorkerGone (its caller does the work itself)."""
        self.gone = WorkerGone(why)
        self._unbind()
        while self.pending:
            _settle(self.pending.popleft(), False, self.gone)

    def close(self) -> None:
        """Close the crawler's end (the worker reads end of stream and exits); waiting calls get WorkerGone."""
        if self.gone is None:
            self._lost("the pool was closed")
        self.sock.close()


class WorkerPool:
    """The crawler's worker processes (started on first use, shut down when the spider closes); the CPU they
    used goes into the stats (zhdedup/workers/cpu_ms), so that a benchmark counts it."""

    def __init__(self, size: int, stats: Any = None, most: int | None = None, grow_busy: float = GROW_BUSY,
                 grow_seconds: float = GROW_SECONDS, here_below: float = HERE_BELOW) -> None:
        self.size = size
        self.most = max(size, most or 0)   # grown to while busy (a fixed size when no larger)
        self.grow_busy, self.grow_seconds, self.here_below = grow_busy, grow_seconds, here_below
        # (monotonic time, the workers' CPU seconds, this process's CPU seconds) the window began at
        self.window: tuple[float, float, float] | None = None
        self.offload = True   # whether work this process could do itself goes to the workers (`_place`)
        self.growing = False
        self.stats = stats
        self.channels: list[Channel] = []
        self.broken = False
        self.warmed: set[Callable[[], None]] = set()
        self.lock = threading.Lock()   # started from the early-start thread and from open_spider
        self.closed = False   # closed once: a start still on its way (early start) starts nothing
        self.starting: list[Future] = []   # starts begun by start_soon: run() waits for them

    @property
    def started(self) -> bool:
        """Whether worker processes are running for this pool."""
        return bool(self.channels)

    def pids(self) -> list[int]:
        """The worker processes' pids."""
        return [channel.process.pid for channel in self.channels]

    def start(self, warm_up: Callable[[], None]) -> None:
        """Start the processes (if not yet) and run warm_up in each (once per warm_up), before the first
        page arrives."""
        if self.broken or self.size <= 0:
            return
        with self.lock:
            if warm_up in self.warmed or self.closed:
                return
            self.warmed.add(warm_up)
            if not self.channels:   # not fork: the crawler's store threads may hold locks a fork would copy
                self.channels = [_spawn(_context()) for _ in range(self.size)]
            for channel in self.channels:
                channel.warm(warm_up)

    def start_soon(self, *warm_ups: Callable[[], None]) -> None:
        """start() each warm-up in a background thread, and return: a spawn waits for the forkserver's own
        warm-up (~1 s of CPU on a fresh start), and the spider's first requests need not wait with it. The
        first run() waits for it instead. A start that fails leaves the work to the crawler process. Warm-ups
        already begun (the early start's, when the pipelines open) get no thread of their own."""
        warm_ups = tuple(w for w in warm_ups if w not in self.warmed)   # start() checks again, under the lock
        if self.broken or self.size <= 0 or not warm_ups:
            return
        done: Future = Future()
        self.starting.append(done)
        threading.Thread(target=self._start_all, args=(warm_ups, done), name="zhdedup-workers-start",
                         daemon=True).start()

    def _start_all(self, warm_ups: tuple[Callable[[], None], ...], done: Future) -> None:
        """start_soon's thread: done is set however the start ends, so that no page waits for ever."""
        try:
            for warm_up in warm_ups:
                self.start(warm_up)
        except Exception as exc:
            logger.warning("worker processes could not start (%s): the crawler process does their work", exc)
            self.broken = True
        finally:
            done.set_result(None)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) in a worker process (once a start on its way has ended), or here when there is no
        (working) pool."""
        for done in self.starting:
            if not done.done():
                await asyncio.wrap_future(done)
        if not self.channels or self.broken:
            return fn(*args)
        channel = min(self.channels, key=lambda c: len(c.pending))
        try:
            answer = await channel.call(fn, args)
            self._measure()
            return answer
        except UnreadableAnswer as exc:   # this call only: the worker goes on with the others
            logger.warning("%s: %s done in the crawler process", exc, getattr(fn, "__name__", fn))
            return fn(*args)
        except WorkerGone as exc:
            if not self.broken and not self.closed:
                logger.warning("worker processes stopped (%s): the crawler process does their work from now on",
                               exc)
            self.broken = True
            return fn(*args)

    def _measure(self) -> None:
        """At the end of each window of grow_seconds, how busy the workers and this process were (/proc): one more
        worker when the workers were busy grow_busy of their time and the pool may grow; `_place`."""
        if self.growing:
            return
        now = time.monotonic()
        if self.window is None:
            self.window = (now, self._cpu(), process_cpu_seconds(os.getpid(), children=False))
            return
        began, cpu_then, here_then = self.window
        if now - began < self.grow_seconds:
            return
        cpu, here = self._cpu(), process_cpu_seconds(os.getpid(), children=False)
        self.window = (now, cpu, here)
        self._place((here - here_then) / (now - began))
        busy = (cpu - cpu_then) / ((now - began) * len(self.channels))
        if busy >= self.grow_busy and len(self.channels) < self.most and not (self.broken or self.closed):
            self.growing = True
            threading.Thread(target=self._grow, args=(busy,), name="zhdedup-workers-grow", daemon=True).start()

    def _place(self, here_busy: float) -> None:
        """Work this process could do itself (the spider's page facts) goes to the workers while it is busy (small
        pages), and stays here once it is less than here_below busy (real sites' pages), until grow_busy again."""
        if self.offload and here_busy < self.here_below:
            self.offload = False
            logger.info("crawler process busy %.0f%% of a CPU: the pages' facts are measured here", 100 * here_busy)
        elif not self.offload and here_busy >= self.grow_busy:
            self.offload = True
            logger.info("crawler process busy %.0f%% of a CPU: the pages' facts go to the workers", 100 * here_busy)

    def _cpu(self) -> float:
        """The workers' CPU seconds so far."""
        return sum(process_cpu_seconds(channel.process.pid, children=False) for channel in self.channels)

    def _grow(self, busy: float) -> None:
        """_maybe_grow's thread: a worker started and warmed as the others were, then given pages."""
        try:
            channel = _spawn(_context())
            with self.lock:
                if self.closed:
                    channel.close()
                    channel.process.kill()
                    channel.process.join()
                    return
                for warm_up in self.warmed:
                    channel.warm(warm_up)
                self.channels = [*self.channels, channel]
            if self.stats is not None:
                self.stats.inc_value(st.WORKERS_GROWN)
            logger.info("worker processes busy %.0f%% of their time: %d now", 100 * busy, len(self.channels))
        except Exception as exc:   # the pool goes on as it was
            logger.warning("one more worker process could not start (%s)", exc)
            self.most = len(self.channels)
        finally:
            self.window = None
            self.growing = False

    def close(self, spider: Any = None) -> None:
        """Stop the worker processes, waiting for them (a process still starting when the crawler exits
        reads its state from a parent gone: a traceback on the console)."""
        with self.lock:
            self.closed = True
            channels, self.channels = self.channels, []
            self.warmed.clear()
        if not channels:
            return
        # and the forkserver's own CPU (its preload and warm-up: pipelines._forkserver_warm), read while the
        # workers it forked still run, so that none of theirs is in it yet (every crawler of a process counts it)
        server = getattr(forkserver._forkserver, "_forkserver_pid", None)
        cpu = sum(process_cpu_seconds(channel.process.pid) for channel in channels) + \
            (process_cpu_seconds(server, children=False) if server else 0.0)
        if self.stats is not None:
            self.stats.inc_value(st.WORKERS_CPU_MS, round(cpu * 1000))
        for channel in channels:
            channel.close()
        for channel in channels:
            channel.process.join(CLOSE_SECONDS)
            if channel.process.is_alive():
                channel.process.kill()
                channel.process.join()


def _unpickled(payload: bytearray) -> tuple[bool, Any]:
    """(ok, value) of an answer; one that does not unpickle here (an exception class whose arguments do not
    round-trip) becomes an error for its caller, who then does that call itself, instead of a call never answered."""
    try:
        return pickle.loads(payload)
    except Exception as exc:
        return False, UnreadableAnswer(f"an answer from a worker could not be read: {exc!r}")


def _settle(future: asyncio.Future, ok: bool, value: Any) -> None:
    """Give a waiting call its answer, unless its caller has gone on (cancelled) or its event loop is closed
    (tests run one loop per call)."""
    if future.done():
        return
    try:
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
    except RuntimeError:
        logger.debug("an answer for a call of a closed event loop dropped")


def _spawn(context: Any) -> Channel:
    """One worker process with a socket to it."""
    ours, theirs = socket.socketpair()
    process = context.Process(target=serve, args=(theirs, os.getpid()), name="zhdedup-worker", daemon=True)
    try:
        with _sigint_blocked():
            process.start()
    finally:
        theirs.close()
    return Channel(ours, process)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Ctrl-C may reach a worker as soon as it exists: it is born with SIGINT blocked (the mask passes through
    fork and exec, so through a forkserver started in this thread) and unblocks it once it ignores it. The
    resource tracker is started first: its own start unblocks SIGINT in this thread (bpo-33613)."""
    resource_tracker.ensure_running()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def start_forkserver() -> None:
    """Start the workers' forkserver now, in the background: it preloads and warms the workers' code
    (pipelines._forkserver_warm) on the second core while this process is still importing Scrapy's parts, so
    the first worker is forked warm. Nothing where there is no forkserver; a pool that never starts leaves it
    idle, and it exits with this process."""
    if _context().get_start_method() != "forkserver":
        return

    def start() -> None:
        try:
            with _sigint_blocked():
                forkserver.ensure_running()
        except Exception as exc:   # only a head start: the pool's first worker starts it otherwise
            logger.debug("early start of the workers' forkserver failed: %s", exc)

    threading.Thread(target=start, name="zhdedup-forkserver-start", daemon=True).start()


def _context() -> Any:
    """forkserver where there is one (else spawn), its server preloading only the workers' own modules (by
    default it would import the crawler's __main__, Scrapy's command line, before forking the first worker),
    and an exit that skips the teardown of what it preloaded (pipelines._forkserver_exit)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def pool_of(crawler: Any) -> WorkerPool | None:
    """The crawler's pool if one was made."""
    return getattr(crawler, _ATTR, None)


def pool_for(crawler: Any) -> WorkerPool:
    """The crawler's shared pool, sized by the larger of ZHDEDUP_EXTRACT_WORKERS / ZHDEDUP_FINGERPRINT_WORKERS."""
    pool = getattr(crawler, _ATTR, None)
    if pool is None:
        pool = WorkerPool(max(worker_count(crawler.settings, name) for name in SETTINGS), crawler.stats,
                          most=max(worker_limit(crawler.settings, name) for name in SETTINGS))
        setattr(crawler, _ATTR, pool)
        crawler.signals.connect(pool.close, signal=signals.spider_closed)
    return pool
