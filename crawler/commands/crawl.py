"""`scrapy crawl`, with the project's rules for a newcomer's mistakes and for the exit code.

- A spider argument our spiders cannot use (unknown name, bad URL, unknown profile, no target) ends the
  command before anything starts: one line on stderr naming the problem and the accepted values, exit 2.
- A bad setting, or a store or JOBDIR the crawl cannot use (CrawlCannotStart, raised while the crawl is
  set up): one CRITICAL line naming it and the fix, exit 2.
- A crawl that finished without fetching a single page because every request failed (e.g. offline), or
  that was stopped because the store could not be written, exits 1 after a line saying why.
"""
from __future__ import annotations

import argparse
import asyncio
import atexit
import faulthandler
import logging
import signal
import sys
from typing import Any

# Scrapy's HTTP download handler, imported here, while the stack is shallow and few modules are loaded: its
# deprecated-class shims (contextfactory, tls) call inspect.stack(), which reads every frame's source and
# searches sys.modules; imported from inside the reactor, after the store's imports, that took ~0.2 s.
import scrapy.core.downloader.handlers.http11  # noqa: F401,E402
from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import (CannotResolveHostError, DownloadConnectionRefusedError, DownloadFailedError,
                               DownloadTimeoutError)
from scrapy.spiderloader import get_spider_loader
from twisted.internet.defer import Deferred

from crawler.collector import set_young_threshold
from crawler.siteprofiles import ProfileError
from crawler.spiders.base import PageSpider, SpiderArgumentError
from pipelines import stats as names
from pipelines.errors import CrawlCannotStart

logger = logging.getLogger(__name__)
FAILED_EXIT = 1
USAGE_EXIT = 2
NETWORK_ERRORS = (CannotResolveHostError, DownloadConnectionRefusedError, DownloadFailedError, DownloadTimeoutError)
QUIET_LOGGERS = ("scrapy.downloadermiddlewares.robotstxt",)
CHATTY_LOGGERS = ("pymongo",)   # a DEBUG record per MongoDB command, ~28 a page


def quiet_below(level: str | int | None) -> None:
    """Chatty libraries' records below the crawl's LOG_LEVEL are not made at all: Scrapy's handler would drop
    them, after their formatting arguments and caller lookup cost the store's thread ~0.4 ms of CPU a page."""
    number = logging.getLevelName(level) if isinstance(level, str) else level
    if isinstance(number, int) and number > logging.DEBUG:
        for name in CHATTY_LOGGERS:
            logging.getLogger(name).setLevel(number)


class NoNetworkTraceback(logging.Filter):
    """An unreachable host's robots.txt: Scrapy's one-line error without its 30-line traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Strip the traceback of network errors; keep the record."""
        if record.exc_info and isinstance(record.exc_info[1], NETWORK_ERRORS):
            record.exc_info = record.exc_text = None
        return True


def crawl_failure(stats: dict[str, Any]) -> str | None:
    """Why a finished crawl counts as failed (None when it did not): nothing fetched, or storage lost."""
    reason = stats.get("finish_reason")
    if reason == "storage_unavailable":
        return "the store could not be written (see the CRITICAL line above)"
    if reason != "finished" or stats.get(names.FETCHED, 0):
        return None
    failed = {k[len(names.FAILED_PREFIX):]: v for k, v in stats.items()
              if k.startswith(names.FAILED_PREFIX) and isinstance(v, (int, float))}
    if not failed:
        return None  # e.g. a distributed worker whose share of the queue was empty
    shown = ", ".join(f"{name} x{n}" for name, n in sorted(failed.items(), key=lambda kv: -kv[1]))
    return f"nothing could be fetched: every request failed ({shown})"


def catch_cannot_start(crawl: Deferred | asyncio.Future) -> list[CrawlCannotStart]:
    """Log a crawl's CrawlCannotStart as one CRITICAL line instead of a traceback; the returned list holds
    it once the crawl process has run, so the command can exit USAGE_EXIT."""
    caught: list[CrawlCannotStart] = []

    def seen(exc: BaseException | None) -> bool:
        while exc is not None and not isinstance(exc, CrawlCannotStart):
            exc = exc.__context__   # Scrapy's cleanup of a half-opened engine can fail on top of ours
        if exc is None:
            return False
        logger.critical("%s", exc)
        caught.append(exc)
        return True

    def done(task: asyncio.Future) -> None:
        exc = None if task.cancelled() else task.exception()
        if exc is not None and not seen(exc):   # reading it stopped asyncio's own report: report it as asyncio would
            task.get_loop().call_exception_handler({"message": "Task exception was never retrieved",
                                                    "exception": exc, "future": task})

    if isinstance(crawl, Deferred):   # a Twisted reactor runs the crawl
        crawl.addErrback(lambda failure: None if seen(failure.value) else failure)
    else:                             # an asyncio task (Scrapy 2.14+)
        crawl.add_done_callback(done)
    return caught


def skip_pymongo_exit_join() -> None:
    """pymongo's exit hook joins every client's monitor threads, each asleep for up to 0.5 s between checks:
    after a crawl, whose clients are closed, that was up to a second of nothing before the process ended.
    Its threads are daemon threads, which end with the process anyway. Only for the command's own process."""
    try:
        from pymongo.synchronous import monitor
    except ImportError:
        return
    atexit.unregister(getattr(monitor, "_shutdown_resources", None))


def fast_exit() -> None:
    """The crawl is over (items flushed, store closed): let the process end without pymongo's wait and
    without the interpreter's last garbage collection of the crawl's objects (0.2-0.5 s on a busy machine)."""
    import gc

    skip_pymongo_exit_join()
    gc.freeze()


STACK_DUMP_SIGNAL = getattr(signal, "SIGUSR1", None)   # `kill -USR1 PID`: every thread's stack on stderr


def dump_stacks_on(signum: int | None) -> None:
    """Every thread's stack written to stderr when the process gets signum, from the C signal handler, so a
    crawl that hangs (a thread blocked in a lock, a join, a socket) can say where without a debugger."""
    if signum is not None:
        faulthandler.register(signum, file=sys.stderr, all_threads=True)


class Command(ScrapyCrawl):
    """Scrapy's crawl command with spider arguments checked up front and a failing exit code."""

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Scrapy's option parsing, then our spiders' argument check (before any logging starts)."""
        super().process_options(args, opts)
        set_young_threshold(self.settings.getint("ZHDEDUP_GC_THRESHOLD"))   # for the rest of the start too
        if len(args) == 1:
            self.check_spider_arguments(args[0], opts.spargs)
            self.start_early()

    def start_early(self) -> None:
        """The workers' forkserver starts now, ~0.2-0.4 s before Scrapy builds EarlyStart (imported here: the
        other commands, which Scrapy imports too, stay light)."""
        from crawler.early_start import enabled_pipelines
        from pipelines.early import start_forkserver_early

        start_forkserver_early(self.settings, enabled_pipelines(self.settings))

    def check_spider_arguments(self, name: str, spargs: dict[str, str]) -> None:
        """Build the spider once without a crawler: its __init__ is where arguments are validated."""
        loader = get_spider_loader(self.settings)
        try:
            spidercls = loader.load(name)
        except KeyError:
            print(f"scrapy crawl {name}: no such spider; the spiders are {', '.join(sorted(loader.list()))}",
                  file=sys.stderr)
            sys.exit(USAGE_EXIT)
        if not issubclass(spidercls, PageSpider):
            return
        try:
            spidercls(**spargs)
        except (SpiderArgumentError, ProfileError) as exc:
            print(f"scrapy crawl {name}: {exc}", file=sys.stderr)
            sys.exit(USAGE_EXIT)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        """Run the crawl; a crawl that fetched nothing exits FAILED_EXIT."""
        if len(args) != 1:
            super().run(args, opts)
            return
        assert self.crawler_process is not None
        dump_stacks_on(STACK_DUMP_SIGNAL)
        for name in QUIET_LOGGERS:
            logging.getLogger(name).addFilter(NoNetworkTraceback())
        quiet_below(self.settings.get("LOG_LEVEL"))
        crawler = self._create_crawler(args[0])
        cannot_start = catch_cannot_start(self.crawler_process.crawl(crawler, **opts.spargs))
        self.crawler_process.start()
        from pipelines.early import stop_workers   # here: the command's start-up stays light

        stop_workers(crawler)
        fast_exit()
        if cannot_start:
            self.exitcode = USAGE_EXIT
            return
        if self.crawler_process.bootstrap_failed:
            self.exitcode = FAILED_EXIT
            return
        failure = crawl_failure(crawler.stats.get_stats() if crawler.stats else {})
        if failure:
            logger.error("crawl failed: %s", failure)
            self.exitcode = FAILED_EXIT
