"""Crash-safe pause/resume for single-process crawls (JOBDIR): a write-ahead journal of the frontier.

Scrapy's JOBDIR state is only consistent after a clean stop: `requests.queue/active.json` and the disk
queues' headers are written when the scheduler closes, and `requests.seen` is a buffered file. After a
SIGKILL (or a power cut, an OOM kill) the requests that had been dequeued but not finished are gone
from the disk queue while their fingerprints may already be in `requests.seen`: resuming would never
fetch them again (or, with the buffer unflushed, fetch everything again). So every request accepted by
the scheduler is also appended to `JOBDIR/frontier.journal` (one line, in the kernel at once), and
marked done once its response was parsed and every item it produced was stored or dropped by the
pipelines. The journal is the truth; on every start with a journal:

- `requests.seen` is rewritten as what it held when the previous run started plus every journaled
  fingerprint (so finished pages are never fetched again),
- Scrapy's queue directory is discarded and the journaled requests that never finished (queued, in
  flight at a kill, failed downloads, items that hit a pipeline error) are queued again. Page-level
  dedup (deterministic page ids, upserts) makes storing a page again a no-op.

If the journal cannot be written (disk full, read-only JOBDIR) the crawl stops at once with an error
naming the path and leaves the journal a consistent prefix; the same command resumes once there is
space. A lock file keeps two processes from using one JOBDIR at the same time. The journal itself is
crawler/journal.py; this module holds the scheduler, middleware and addon that write it.
"""
from __future__ import annotations

import logging
import os
from typing import Any, AsyncIterator, Iterable, Iterator

from scrapy import signals
from scrapy.core.scheduler import Scheduler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.utils.job import job_dir

from pipelines import stats
from pipelines.errors import CrawlCannotStart

from .journal import JobdirBusy, Journal, decode_request, encode_request, recover

logger = logging.getLogger(__name__)
COMPACT_BYTES = 64 * 1024 * 1024   # rewrite the journal (pending requests only) beyond this size
_ATTR = "_zhdedup_journal"
_MW_ATTR = "_zhdedup_resume_mw"


def _skip_state_file(crawler) -> None:
    """Scrapy's SpiderState would write JOBDIR/spider.state on close and fail the same way (a traceback
    after our one error): the previous state file stays, the journal is what resumes."""
    from scrapy.extensions.spiderstate import SpiderState

    for ext in getattr(getattr(crawler, "extensions", None), "middlewares", ()):
        if isinstance(ext, SpiderState):
            ext.jobdir = None


class ResumableScheduler(Scheduler):
    """Scrapy's scheduler plus the frontier journal when JOBDIR is set (unchanged without JOBDIR)."""

    journal: Journal | None = None
    failed: OSError | None = None

    @classmethod
    def from_crawler(cls, crawler) -> "ResumableScheduler":
        """Lock the JOBDIR and rebuild it from the journal, before Scrapy reads it."""
        jobdir = job_dir(crawler.settings)
        journal, pending, seen_bytes = None, {}, 0
        if jobdir:
            try:
                journal = Journal(jobdir)
            except (JobdirBusy, OSError) as exc:
                # before anything was fetched: the command line makes this one line and exit code 2
                raise CrawlCannotStart(str(exc) if isinstance(exc, JobdirBusy) else
                                       f"cannot use JOBDIR {jobdir}: {exc.strerror or exc}") from None
            try:
                pending, seen_bytes = recover(journal)
            except OSError as exc:
                journal.release()
                raise CrawlCannotStart(f"cannot write the crawl state in JOBDIR {jobdir} ({exc.filename}): "
                                       f"{exc.strerror}; free disk space or make it writable, then run the same "
                                       "command") from None
        sched = super().from_crawler(crawler)
        sched.journal, sched.replay, sched.seen_bytes = journal, pending, seen_bytes
        setattr(crawler, _ATTR, journal)
        return sched

    def open(self, spider) -> Any:
        """Open queues, then queue again the requests the journal says are unfinished."""
        result = super().open(spider)
        if self.journal is not None:
            self._guard(self.journal.mark, "open", self.seen_bytes)
            for fp, encoded in self.replay.items():
                try:
                    request = decode_request(encoded, spider)
                except Exception as exc:  # noqa: BLE001 - a spider changed its callbacks between runs
                    logger.warning("cannot restore a journaled request (%s): %s", fp, exc)
                    continue
                if not self._guard(self._dqpush, request):
                    self._mqpush(request)
                self.stats.inc_value(stats.RESUME_REQUEUED)
            self.replay = {}
        return result

    def enqueue_request(self, request: Request) -> bool:
        """Enqueue as Scrapy does, then journal the accepted request; a disk error stops the crawl."""
        if self.failed is not None:
            self._mqpush(request)   # stopping: the parent request stays unfinished in the journal
            return True
        try:
            ok = super().enqueue_request(request)
        except OSError as exc:
            self._disk_error(exc)
            self._mqpush(request)
            return True
        if ok and self.journal is not None:
            encoded = encode_request(request, self.spider)
            if encoded is not None:
                self._guard(self.journal.added, self.crawler.request_fingerprinter.fingerprint(request).hex(),
                            encoded)
        if self.failed is None:   # journaled (or already known): its parent may now be marked done
            mw = getattr(self.crawler, _MW_ATTR, None)
            if mw is not None:
                mw.settled(request)
        return ok

    def next_request(self) -> Request | None:
        """After a disk error the disk queue may hold a torn record: use the memory queue only."""
        if self.failed is None:
            try:
                return super().next_request()
            except OSError as exc:   # queuelib writes when it pops (truncate, header): a full disk fails here too
                self._disk_error(exc)
        return self.mqs.pop()

    def _guard(self, fn: Any, *args: Any) -> Any:
        """Call fn; an OSError (disk full, read-only) stops the crawl cleanly instead of losing requests."""
        if self.failed is not None:
            return None
        try:
            return fn(*args)
        except OSError as exc:
            self._disk_error(exc)
            return None

    def _disk_error(self, exc: OSError) -> None:
        """Say which path failed and why, stop writing the journal, and close the spider."""
        if self.failed is not None:
            return
        self.failed = exc
        where = exc.filename or (self.journal.dir if self.journal else self.dqdir)
        logger.error("cannot write the crawl state to %s: %s. Stopping the crawl; nothing finished is lost. "
                     "Free disk space (or make the JOBDIR writable) and run the same command to resume.",
                     where, exc.strerror or exc)
        self.stats.set_value(stats.failed("jobdir_unwritable"), 1)
        if self.journal is not None:
            self.journal.broken = True
        _skip_state_file(self.crawler)
        engine = self.crawler.engine
        if engine is not None:
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason="jobdir_unwritable"))

    def close(self, reason: str) -> Any:
        """Scrapy saves its queue; then the journal keeps only what is still pending, marked clean."""
        try:
            result = super().close(reason)
        except OSError as exc:
            self._disk_error(exc)
            result = None
        if self.journal is not None:
            try:
                if self.failed is None:
                    # no "open" marker after a clean stop: all of requests.seen (flushed now) is trusted
                    self.journal.rewrite(self.journal.state().pending, last="clean")
            except OSError as exc:
                self._disk_error(exc)
            finally:
                self.journal.release()
        return result

    def maybe_compact(self) -> None:
        """Keep the journal small on long crawls: rewrite it with the pending requests only."""
        if self.journal is None or self.failed is not None or self.journal.size() < COMPACT_BYTES:
            return
        df_file = getattr(self.df, "file", None)
        if df_file is not None:
            df_file.flush()   # fingerprints of finished requests must be in requests.seen first
            os.fsync(df_file.fileno())
            size = os.fstat(df_file.fileno()).st_size
        else:
            size = None
        self._guard(self.journal.rewrite, self.journal.state().pending, f"open {os.getpid()} {size}")


class _Tracker:
    """What one response still waits for: its items (until stored or dropped) and the requests it
    yielded (until the scheduler journaled them). Done when the callback is exhausted and both are 0."""

    __slots__ = ("fp", "request", "waiting", "exhausted", "failed")

    def __init__(self, fp: str, request: Request) -> None:
        self.fp = fp
        self.request = request
        self.waiting = 0
        self.exhausted = False
        self.failed = False   # an item hit a pipeline error: leave the request for the next run


class ResumeMiddleware:
    """Spider middleware: marks a request done in the journal once its items left the pipelines and
    the requests it produced are journaled (Scrapy schedules a callback's output asynchronously, so
    the end of the callback is not enough: a kill in between would lose the children)."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.open: dict[int, _Tracker] = {}   # id(item or request) -> tracker; only objects in flight

    @classmethod
    def from_crawler(cls, crawler) -> "ResumeMiddleware":
        """Only with JOBDIR (journal) or in distributed mode (leases in Redis)."""
        from crawler.distributed import enabled

        if not job_dir(crawler.settings) and not enabled(crawler.settings):
            raise NotConfigured("no JOBDIR and not distributed")
        mw = cls(crawler)
        for sig in (signals.item_scraped, signals.item_dropped):
            crawler.signals.connect(mw.settled, signal=sig)
        crawler.signals.connect(mw.item_error, signal=signals.item_error)
        setattr(crawler, _MW_ATTR, mw)
        return mw

    @property
    def journal(self) -> Journal | None:
        """The scheduler's journal (None when another scheduler is in use)."""
        return getattr(self.crawler, _ATTR, None)

    def _start(self, response) -> _Tracker | None:
        if response.request is None:
            return None
        return _Tracker(self.crawler.request_fingerprinter.fingerprint(response.request).hex(), response.request)

    def _track(self, tracker: _Tracker | None, obj: Any) -> None:
        if tracker is not None and obj is not None:
            tracker.waiting += 1
            self.open[id(obj)] = tracker

    def _finish(self, tracker: _Tracker | None) -> None:
        if tracker is not None:
            tracker.exhausted = True
            self._maybe_done(tracker)

    def _maybe_done(self, tracker: _Tracker) -> None:
        if not (tracker.exhausted and tracker.waiting == 0):
            return
        scheduler = getattr(getattr(self.crawler.engine, "_slot", None), "scheduler", None)
        journal = self.journal
        if tracker.failed:   # journal: left unfinished, queued again on resume; distributed: the same for the next run
            if journal is None and hasattr(scheduler, "request_failed"):
                scheduler.request_failed(tracker.request)
            return
        if journal is None:
            if hasattr(scheduler, "request_done"):   # distributed: release the lease in Redis
                scheduler.request_done(tracker.request)
            return
        if journal._lock_fd is None or journal.broken:
            return
        if isinstance(scheduler, ResumableScheduler):
            scheduler._guard(journal.done, tracker.fp)
            scheduler.maybe_compact()
        else:
            journal.done(tracker.fp)

    def settled(self, item: Any = None, **kwargs: Any) -> None:
        """An item was stored or dropped, or a request was journaled by the scheduler."""
        tracker = self.open.pop(id(item), None)
        if tracker is not None:
            tracker.waiting -= 1
            self._maybe_done(tracker)

    def item_error(self, item: Any, **kwargs: Any) -> None:
        """A pipeline raised (server error, full disk...): the page is fetched again on resume."""
        tracker = self.open.get(id(item))
        if tracker is not None:
            tracker.failed = True
        self.settled(item)

    def process_spider_output(self, response, result: Iterable[Any]) -> Iterator[Any]:
        """Pass everything through, counting items and requests."""
        tracker = self._start(response)
        for obj in result:
            self._track(tracker, obj)
            yield obj
        self._finish(tracker)

    async def process_spider_output_async(self, response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Async variant of process_spider_output."""
        tracker = self._start(response)
        async for obj in result:
            self._track(tracker, obj)
            yield obj
        self._finish(tracker)


class ResumeAddon:
    """Scrapy add-on: with JOBDIR the journaled scheduler; with JOBDIR or distributed mode the middleware
    that says when a request is finished (journal line, or release of its lease in Redis)."""

    def update_settings(self, settings: Any) -> None:
        """Set SCHEDULER at add-on priority (a -s SCHEDULER=... still wins)."""
        from crawler.distributed import enabled

        distributed = enabled(settings)
        if not settings.get("JOBDIR") and not distributed:
            return
        if not distributed:
            settings.set("SCHEDULER", "crawler.resume.ResumableScheduler", priority="addon")
        # whatever priority the project's SPIDER_MIDDLEWARES has (a plain set at "addon" would lose to it)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", ResumeMiddleware, 10)
