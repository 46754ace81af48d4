"""The worker pool's socket: calls of any size answered in order, errors raised where the call was made, a
worker that dies mid-call loses nothing (real worker processes, forkserver as in a crawl)."""
from __future__ import annotations

import asyncio
import multiprocessing
import operator
import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing import forkserver
from pathlib import Path

import pytest

from pipelines._workers import WorkerPool
from pipelines._worker_tasks import warm_up_extract
from pipelines.stats import WORKERS_CPU_MS, WORKERS_GROWN

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]


class Stats:
    """The one stats call the pool makes."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


@pytest.fixture
def pool():
    pool = WorkerPool(1, Stats())
    pool.start(warm_up_extract)
    yield pool
    pool.close()


def test_many_calls_at_once_each_get_their_own_answer(pool):
    async def go():
        return await asyncio.gather(*(pool.run(operator.mul, n, 3) for n in range(200)))

    assert asyncio.run(go()) == [3 * n for n in range(200)]


def test_calls_and_answers_larger_than_the_socket_buffer(pool):
    big = bytes(range(256)) * 40_000    # 10 MB each way: the socket takes a few hundred KB at a time

    async def go():
        return await asyncio.gather(pool.run(bytes.upper, big), pool.run(len, big), pool.run(bytes.upper, b"ab"))

    upper, length, small = asyncio.run(go())
    assert upper == big.upper() and length == len(big) and small == b"AB"


def test_an_error_in_the_worker_is_raised_to_the_caller_and_the_worker_goes_on(pool):
    async def go():
        with pytest.raises(ValueError, match="invalid literal"):
            await pool.run(int, "not a number")
        return await pool.run(int, "42")

    assert asyncio.run(go()) == 42 and not pool.broken


def test_ctrl_c_in_the_terminal_leaves_the_workers_to_the_crawler(pool):
    """SIGINT goes to the whole foreground process group; the crawler then closes gracefully and its pages in
    the pipelines still go to the worker."""
    [pid] = pool.pids()
    os.kill(pid, signal.SIGINT)
    assert asyncio.run(pool.run(operator.mul, 6, 7)) == 42 and not pool.broken and pool.pids() == [pid]


def test_ctrl_c_while_the_workers_start_leaves_them_running():
    """A worker is born ignoring Ctrl-C: pressed while it starts, it still stops the crawler only (a worker
    that only ignored it from its main loop on was killed 1 time in 3 here)."""
    for _ in range(10):
        pool = WorkerPool(1, Stats())
        pool.start(warm_up_extract)
        try:
            [pid] = pool.pids()
            os.kill(pid, signal.SIGINT)
            assert asyncio.run(pool.run(operator.mul, 6, 7)) == 42 and not pool.broken
        finally:
            pool.close()


def test_calls_in_flight_when_the_worker_dies_are_done_here(pool, caplog):
    [pid] = pool.pids()

    async def go():
        slow = [pool.run(pow, 3, 2_000_000 + n) for n in range(4)]   # busy the worker ~ a second in all
        await asyncio.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        return await asyncio.gather(*slow)

    results = asyncio.run(go())
    assert [r % 1_000_003 for r in results] == [pow(3, 2_000_000 + n, 1_000_003) for n in range(4)]
    assert pool.broken and "worker processes stopped" in caplog.text
    assert asyncio.run(pool.run(operator.add, 1, 2)) == 3   # from now on here, said once


def test_close_stops_the_workers_and_counts_their_cpu():
    stats = Stats()
    pool = WorkerPool(2, stats)
    pool.start(warm_up_extract)
    pids = pool.pids()
    assert len(pids) == 2 and asyncio.run(pool.run(operator.neg, 5)) == -5
    pool.close()
    assert not pool.started and stats.values[WORKERS_CPU_MS] > 0
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert asyncio.run(pool.run(operator.neg, 6)) == -6   # a closed pool works here


def test_a_worker_dead_before_its_first_page_loses_nothing():
    """Killed between its start and the pipelines' warm-up (the early start began it): the warm-up does not
    fail the crawl's start, and the pages are done here."""
    pool = WorkerPool(1)
    pool.start(warm_up_extract)
    [pid] = pool.pids()
    os.kill(pid, signal.SIGKILL)
    pool.channels[0].process.join(10)
    pool.start(operator.truth)   # the second warm-up, written to a socket nobody reads any more
    assert asyncio.run(pool.run(operator.add, 2, 2)) == 4 and pool.broken
    pool.close()


class TwoArgumentError(Exception):
    """Pickles, but does not unpickle: its args hold one message, its __init__ wants two values."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")


def fails_oddly(n: int) -> int:
    """In the worker: an error whose answer the crawler cannot read; here: the work done."""
    if os.environ.get("ZHDEDUP_WORKER_TEST_PARENT") != str(os.getpid()):
        raise TwoArgumentError("odd", "failure")
    return n * 2


def test_an_answer_that_cannot_be_read_here_is_done_here(pool, monkeypatch):
    """An answer that does not unpickle in the crawler is not a call left waiting for ever: that call is done
    in the crawler, and the worker goes on with the next ones."""
    monkeypatch.setenv("ZHDEDUP_WORKER_TEST_PARENT", str(os.getpid()))
    assert asyncio.run(asyncio.wait_for(pool.run(fails_oddly, 21), 30)) == 42
    assert not pool.broken and asyncio.run(pool.run(operator.mul, 6, 7)) == 42


@pytest.mark.parametrize("fast_exit", [True, False])
def test_the_forkserver_leaves_without_tearing_down_what_it_preloaded(tmp_path, fast_exit):
    """Whoever reads a crawl's output waits until the forkserver, which shares the pipe, has exited too: its
    preload's last module makes that exit skip the interpreter's teardown (the exit handlers registered
    before it, as by the modules it preloaded, no longer run). Without that module they do."""
    marker = tmp_path / "torn-down"
    code = ("import atexit, sys; atexit.register(lambda: open(sys.argv[1], 'w').write('x'))\n"
            + ("import pipelines._forkserver_exit\n" if fast_exit else "")
            + "print('preloaded', file=sys.stderr, end='')")
    out = subprocess.run([sys.executable, "-c", code, str(marker)], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and out.stderr == "preloaded"   # flushed before the exit
    assert marker.exists() is not fast_exit


def test_the_workers_forkserver_preloads_the_fast_exit_last():
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver on this platform")
    from pipelines._workers import PRELOAD, _context

    _context()
    assert PRELOAD[-1] == "pipelines._forkserver_exit"
    assert forkserver._forkserver._preload_modules == list(PRELOAD)


def _held_spawn(monkeypatch) -> threading.Event:
    """The pool's spawn held until the returned event is set, as a spawn waits for a forkserver still warming."""
    from pipelines import _workers

    go, spawn = threading.Event(), _workers._spawn

    def held(context):
        assert go.wait(60), "the test never let the spawn go"
        return spawn(context)

    monkeypatch.setattr(_workers, "_spawn", held)
    return go


def test_the_spider_opens_while_the_workers_start_and_the_first_page_waits_for_them(monkeypatch):
    """open_spider returns while the spawn still waits (the first requests need not wait for the workers);
    the first page then waits for them and is done in a worker, not here."""
    from scrapy.utils.test import get_crawler

    from pipelines.extract import ExtractPipeline

    go = _held_spawn(monkeypatch)
    ex = ExtractPipeline.from_crawler(get_crawler(settings_dict={"ZHDEDUP_EXTRACT_WORKERS": 1}))
    try:
        opened = threading.Thread(target=ex.open_spider)
        opened.start()
        opened.join(10)
        if opened.is_alive():   # it waits for the spawn: let that go before failing
            go.set()
            opened.join(60)
            pytest.fail("open_spider waited for the worker processes")
        assert not ex.pool.started

        async def first_page():
            threading.Timer(0.3, go.set).start()
            return await ex.pool.run(os.getpid)

        pid = asyncio.run(first_page())
        assert pid != os.getpid() and pid in ex.pool.pids() and not ex.pool.broken
    finally:
        go.set()
        ex.pool.close()


def test_workers_that_cannot_start_leave_the_work_here(monkeypatch, caplog):
    from pipelines import _workers

    def fails(context):
        raise OSError("no more processes")

    monkeypatch.setattr(_workers, "_spawn", fails)
    pool = WorkerPool(1)
    pool.start_soon(warm_up_extract)
    assert asyncio.run(pool.run(operator.mul, 6, 7)) == 42 and pool.broken and not pool.started
    assert "worker processes could not start (no more processes)" in caplog.text
    pool.close()


def _calls_until(pool: WorkerPool, done, seconds: float, pause: float = 0.0) -> set[int]:
    """Keep 8 calls of os.getpid in flight (pause s between rounds) until done() or seconds pass; the pids
    that answered."""
    async def go() -> set[int]:
        seen: set[int] = set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline and not done():
            seen.update(await asyncio.gather(*(pool.run(os.getpid) for _ in range(8))))
            await asyncio.sleep(pause)
        seen.update(await asyncio.gather(*(pool.run(os.getpid) for _ in range(8))))
        return seen
    return asyncio.run(go())


def test_a_busy_auto_pool_grows_to_its_limit_and_the_new_worker_gets_pages():
    """grow_busy 0: every window counts as busy (how busy a worker gets depends on the machine, not tested
    here): the pool grows one worker at a time, warmed as the first, to `most` and no further."""
    pool = WorkerPool(1, Stats(), most=3, grow_busy=0.0, grow_seconds=0.1)
    pool.start(warm_up_extract)
    try:
        seen = _calls_until(pool, lambda: len(pool.pids()) == 3, 60)
        assert len(pool.pids()) == 3 and warm_up_extract in pool.warmed and pool.stats.values[WORKERS_GROWN] == 2
        seen |= _calls_until(pool, lambda: seen >= set(pool.pids()), 30)
        assert seen == set(pool.pids())   # each worker answered
        _calls_until(pool, lambda: False, 0.5)
        assert len(pool.pids()) == 3 and not pool.growing
    finally:
        pool.close()


def test_an_auto_pool_whose_worker_idles_stays_one_worker():
    pool = WorkerPool(1, Stats(), most=2, grow_seconds=0.1)
    pool.start(warm_up_extract)
    try:
        _calls_until(pool, lambda: False, 1.5, pause=0.02)
        assert len(pool.pids()) == 1 and WORKERS_GROWN not in pool.stats.values
    finally:
        pool.close()


def test_a_pool_closed_while_it_grows_leaves_no_worker():
    pool = WorkerPool(1, Stats(), most=2, grow_busy=0.0, grow_seconds=0.0)
    pool.start(warm_up_extract)
    _calls_until(pool, lambda: pool.growing, 30)
    pool.close()
    deadline = time.monotonic() + 30
    while pool.growing and time.monotonic() < deadline:
        time.sleep(0.05)
    children = multiprocessing.active_children()
    assert not pool.channels and not [c for c in children if c.name == "zhdedup-worker"]


def test_work_the_crawler_could_do_stays_here_once_it_has_room_and_goes_back_when_it_is_busy():
    """here_below 1.0: this test process, idle between calls, counts as having room; grow_busy 0.0: any window
    counts as busy again (how busy a process gets depends on the machine, not tested here)."""
    pool = WorkerPool(1, Stats(), grow_seconds=0.1, here_below=1.0)
    pool.start(warm_up_extract)
    try:
        assert pool.offload   # a crawl starts with its page facts in the workers
        _calls_until(pool, lambda: not pool.offload, 30, pause=0.02)
        assert not pool.offload
        pool.here_below, pool.grow_busy = 0.0, 0.0
        _calls_until(pool, lambda: pool.offload, 30, pause=0.02)
        assert pool.offload
        pool.grow_busy = 2.0   # never busy: a pool at its size limit keeps its size and its placement
        _calls_until(pool, lambda: False, 0.5, pause=0.02)
        assert pool.offload and len(pool.pids()) == 1
    finally:
        pool.close()
