"""What became of every URL the crawl touched: one outcome each, in the store (per run) and in the stats.

stored | unchanged | duplicate (of what, how) | skipped (why) | failed (why). Spiders and middlewares
report pages that never become items with the `page_outcome` signal (PageSpider.skip / fail); the
pipelines' verdicts arrive as item_scraped / item_dropped / item_error. At the end of a crawl every
fetched URL must have exactly one outcome: the recorder checks responses + requests that failed = the
outcomes of fetched URLs, and says so in a WARNING when it does not hold.

Outcomes are written in batches (ZHDEDUP_OUTCOMES_BATCH). A distributed worker keeps each request leased
in Redis until the outcome of its page is written: `when_durable(callback)` calls back once every outcome
recorded so far is in the store (or its spool), flushing at once (a batch under way is followed by one
with everything recorded meanwhile), so a SIGKILLed worker's unwritten outcomes belong to requests that
another worker fetches again.

A URL fetched twice in one run gets one outcome, the first: a distributed worker fetches a URL again when
the shared queue's Redis lost its data (seen set and queue gone: a page fetched again finds its links
again, some of them pages this worker already fetched). The recorder remembers a digest of every fetched
URL of the run (in memory: no store or Redis call); the second fetch is counted (`zhdedup/fetched_again`).
Only in distributed mode: the watch spider re-visits its listings every round, one outcome per visit.
"""
from __future__ import annotations

import hashlib
import logging
import sys
import threading
from typing import Any, Callable

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler import settings as defaults   # every setting's default, declared once
from pipelines import stats
from pipelines.crawl_store import run_id_of, store_for, submit
from pipelines.drops import DuplicateItem, SkippedItem, reason_of

logger = logging.getLogger(__name__)
page_outcome = object()  # signal: url, outcome, reason, detail="", fetched=True
SEEN_MAX = 2_000_000  # unfetched URLs (depth limit, robots) remembered to record each once
DIGEST = 12          # bytes of the blake2b digest a fetched URL is remembered by (one outcome per run)
WAIT_SECONDS = 120   # a flush that must wait (closing) waits this long for a batch under way
ATTR = "_zhdedup_outcomes"   # the crawler's OutcomeRecorder (crawler.distributed asks it before releasing leases)


def recorder_of(crawler) -> "OutcomeRecorder | None":
    """The crawler's OutcomeRecorder (None when outcomes are off)."""
    return getattr(crawler, ATTR, None)


def _distributed(settings: Any) -> bool:
    """The crawl's scheduler is the shared Redis queue (crawler.distributed). Asked without importing that
    scheduler (scrapy-redis, redis: ~0.1 s of every crawl's start): a subclass of it has loaded its module."""
    from scrapy.utils.misc import load_object

    try:
        scheduler = load_object(settings.get("SCHEDULER"))
    except (TypeError, ValueError, ImportError, AttributeError, NameError):
        return False
    module = sys.modules.get("crawler.distributed.scheduler")
    return module is not None and isinstance(scheduler, type) and issubclass(scheduler, module.DistributedScheduler)


class _Batch:
    """Outcomes first..last (recording order) on their way to the store; ok once written or spooled."""

    def __init__(self, first: int, last: int) -> None:
        self.first, self.last, self.ok = first, last, False
        self.done = threading.Event()

    def finish(self, ok: bool) -> None:
        """The write returned (any thread)."""
        self.ok = ok
        self.done.set()


class OutcomeRecorder:
    """Scrapy extension: one outcome record per URL, written to the store in batches; the invariant checked."""

    def __init__(self, crawler, flush_every: int = defaults.ZHDEDUP_OUTCOMES_BATCH) -> None:
        self.crawler = crawler
        self.flush_every = flush_every
        self.buffer: list[dict] = []
        self.unfetched_seen: set[bytes] = set()
        self.once = False   # one outcome per fetched URL and run even if fetched twice (distributed mode)
        self.fetched_seen: set[bytes] = set()   # digests of the URLs fetched in this run that have an outcome
        self.fetched_outcomes = 0
        self.fetched_again = 0   # outcomes not recorded: their URL had one in this run already
        self.recorded = 0   # outcomes recorded so far: outcome n (1-based) is durable once durable >= n
        self.durable = 0
        self.batches: list[_Batch] = []   # batches being written, in recording order
        self.waiters: list[tuple[int, Callable[[bool], None]]] = []   # (recorded when asked, callback)

    @classmethod
    def from_crawler(cls, crawler) -> "OutcomeRecorder":
        """Off with ZHDEDUP_OUTCOMES=False (counts stay in the stats, nothing is written)."""
        if not crawler.settings.getbool("ZHDEDUP_OUTCOMES", defaults.ZHDEDUP_OUTCOMES):
            raise NotConfigured("ZHDEDUP_OUTCOMES is off")
        ext = cls(crawler, crawler.settings.getint("ZHDEDUP_OUTCOMES_BATCH", defaults.ZHDEDUP_OUTCOMES_BATCH))
        ext.once = _distributed(crawler.settings)
        crawler.signals.connect(ext.page_outcome, signal=page_outcome)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(ext.item_error, signal=signals.item_error)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        setattr(crawler, ATTR, ext)
        return ext

    def page_outcome(self, url: str, outcome: str, reason: str, detail: str = "", fetched: bool = True,
                     **extra: Any) -> None:
        """A URL that never became an item: skipped or failed by the spider or a middleware."""
        if not fetched:
            key = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            if key in self.unfetched_seen or len(self.unfetched_seen) >= SEEN_MAX:
                return
            self.unfetched_seen.add(key)
        self.record({"url": url, "outcome": outcome, "reason": reason, "detail": detail[:500] or None,
                     "fetched": fetched, **extra})

    def item_scraped(self, item: Any, response=None, spider=None) -> None:
        """The page went through every pipeline: stored, or unchanged since the last crawl."""
        a = ItemAdapter(item)
        dedup = a.get("dedup") or {}
        outcome = "unchanged" if dedup.get("kind") == "unchanged" else "stored"
        reason = "replaced_later_copy" if dedup.get("replaced") else ("spooled" if dedup.get("spooled") else "")
        self.record({"url": a.get("url"), "outcome": outcome, "reason": reason, "fetched": True})

    def item_dropped(self, item: Any, response=None, exception: BaseException | None = None, spider=None) -> None:
        """A pipeline dropped the page: a duplicate (of what, how), skipped (why) or failed (why)."""
        url = ItemAdapter(item).get("url")
        if isinstance(exception, DuplicateItem):
            how = (f"distance {exception.distance}" if exception.kind not in ("passages", "rewrite")
                   else f"passages cover {exception.coverage or 0:.0%}")
            self.record({"url": url, "outcome": "duplicate", "reason": exception.kind, "detail": how,
                         "original_url": exception.original_url, "method": exception.kind, "fetched": True})
        elif isinstance(exception, SkippedItem):
            self.record({"url": url, "outcome": "skipped", "reason": exception.reason, "detail": str(exception),
                         "fetched": True})
        else:
            self.record({"url": url, "outcome": "failed", "reason": reason_of(exception),
                         "detail": str(exception or "dropped"), "fetched": True})

    def item_error(self, item: Any, response=None, spider=None, failure=None) -> None:
        """A pipeline raised: the page is lost to an error (its traceback is in the log)."""
        name = type(getattr(failure, "value", None)).__name__ if failure is not None else "error"
        self.record({"url": ItemAdapter(item).get("url"), "outcome": "failed", "reason": f"pipeline_{name.lower()}",
                     "detail": str(getattr(failure, "value", ""))[:500], "fetched": True})

    def record(self, doc: dict) -> None:
        """Count the outcome and queue its record; a full batch goes to the store in a store thread. A fetched
        URL that has an outcome in this run already (fetched again) keeps that one."""
        if self.once and doc.get("fetched") and doc.get("url"):
            key = hashlib.blake2b(str(doc["url"]).encode("utf-8", "surrogatepass"), digest_size=DIGEST).digest()
            if key in self.fetched_seen:
                self.fetched_again += 1
                self.crawler.stats.inc_value(stats.FETCHED_AGAIN)
                logger.debug("%s was fetched again in this run (%s/%s); its first outcome stands", doc["url"],
                             doc["outcome"], doc.get("reason") or "")
                return
            self.fetched_seen.add(key)
        self.crawler.stats.inc_value(stats.outcome(doc["outcome"]))
        self.fetched_outcomes += bool(doc.get("fetched"))
        self.buffer.append(doc)
        self.recorded += 1
        if len(self.buffer) >= self.flush_every:
            self.flush(wait=False)

    def when_durable(self, callback: Callable[[bool], None]) -> None:
        """callback(ok) once every outcome recorded so far is written to the store or its spool (ok False:
        the batch holding the latest of them could not be written, its loss was logged). Called in the
        reactor thread; writes start at once, one batch at a time while anyone waits (group commit)."""
        if self.durable >= self.recorded:
            callback(True)
            return
        self.waiters.append((self.recorded, callback))
        self._kick()

    def all_durable(self) -> bool:
        """Nothing recorded is waiting to be written."""
        return self.durable >= self.recorded

    def _kick(self) -> None:
        """Write what is buffered when someone waits for it and no batch is under way."""
        if self.waiters and self.buffer and not self.batches:
            self.flush(wait=False)

    def flush(self, wait: bool) -> None:
        """Write the queued records to the run (a failing write is logged with what it lost, never silent).
        With wait, return once they and every batch under way are written (the waiters answered)."""
        batch, self.buffer = self.buffer, []
        if batch:
            entry = _Batch(self.recorded - len(batch) + 1, self.recorded)
            self.batches.append(entry)
            run_id = run_id_of(self.crawler)
            if run_id is None:
                logger.warning("%d URL outcomes not written: the crawl run was not recorded", len(batch))
                entry.finish(False)
            elif wait:
                submit(self.crawler, self._write_batch, run_id, batch, entry, wait=True)
            else:
                submit(self.crawler, self._write_batch, run_id, batch, entry)
        if wait:
            for entry in list(self.batches):
                if not entry.done.wait(WAIT_SECONDS):
                    logger.warning("outcome batch %d-%d still being written after %d s", entry.first, entry.last,
                                   WAIT_SECONDS)
            self._written()
        elif batch and self.batches and self.batches[-1].done.is_set():
            self._written()   # written in this thread (the store threads were shut down)

    def _write_batch(self, run_id: str, batch: list[dict], entry: "_Batch") -> None:
        """In a store thread: write, then tell the reactor thread (which may also be the caller)."""
        entry.finish(self._write(run_id, batch))
        from twisted.python.threadable import isInIOThread

        if not isInIOThread():
            from twisted.internet import reactor

            reactor.callFromThread(self._written)

    def _write(self, run_id: str, batch: list[dict]) -> bool:
        try:
            store_for(self.crawler).runs.record_outcomes(run_id, batch)
            return True
        except Exception as exc:  # the outcome log must not stop the crawl; the loss is said
            logger.warning("%d URL outcomes not written: %s", len(batch), exc)
            return False

    def _written(self) -> None:
        """Advance `durable` over the batches written, in recording order; answer who waited for them."""
        while self.batches and self.batches[0].done.is_set():
            entry = self.batches.pop(0)
            self.durable = max(self.durable, entry.last)
            ready = [w for w in self.waiters if w[0] <= entry.last]
            self.waiters = [w for w in self.waiters if w[0] > entry.last]
            for seq, callback in ready:
                callback(entry.ok or seq < entry.first)
        self._kick()

    def spider_closed(self, spider, reason: str = "") -> None:
        """Write what is left; check fetched = the outcomes of fetched URLs."""
        self.flush(wait=True)
        get = self.crawler.stats.get_value
        fetched = get(stats.FETCHED, 0) + get(stats.FETCH_FAILED, 0)
        if self.fetched_again:
            logger.info("%d URL(s) were fetched a second time in this run (the shared queue's Redis lost its data?); "
                        "each keeps its first outcome", self.fetched_again)
        if fetched != self.fetched_outcomes + self.fetched_again:
            logger.warning("outcomes do not add up: %d URLs fetched, %d with an outcome (%s)", fetched,
                           self.fetched_outcomes, "a page may still have been in the pipelines at shutdown"
                           if reason != "finished" else "please report this")
