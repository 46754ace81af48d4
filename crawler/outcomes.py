"""What became of every URL the crawl touched: one outcome each, in the store (per run) and in the stats.

stored | unchanged | duplicate (of what, how) | skipped (why) | failed (why). Spiders and middlewares
report pages that never become items with the `page_outcome` signal (PageSpider.skip / fail); the
pipelines' verdicts arrive as item_scraped / item_dropped / item_error. At the end of a crawl every
fetched URL must have exactly one outcome: the recorder checks responses + requests that failed = the
outcomes of fetched URLs, and says so in a WARNING when it does not hold.
"""
from __future__ import annotations

import hashlib
import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured

from pipelines import stats
from pipelines._store import run_id_of, store_for, submit
from pipelines.drops import DuplicateItem, SkippedItem, reason_of

logger = logging.getLogger(__name__)
page_outcome = object()  # signal: url, outcome, reason, detail="", fetched=True
FLUSH_EVERY = 500
SEEN_MAX = 2_000_000  # unfetched URLs (depth limit, robots) remembered to record each once


class OutcomeRecorder:
    """Scrapy extension: one outcome record per URL, written to the store in batches; the invariant checked."""

    def __init__(self, crawler, flush_every: int = FLUSH_EVERY) -> None:
        self.crawler = crawler
        self.flush_every = flush_every
        self.buffer: list[dict] = []
        self.unfetched_seen: set[bytes] = set()
        self.fetched_outcomes = 0

    @classmethod
    def from_crawler(cls, crawler) -> "OutcomeRecorder":
        """Off with ZHDEDUP_OUTCOMES=False (counts stay in the stats, nothing is written)."""
        if not crawler.settings.getbool("ZHDEDUP_OUTCOMES", True):
            raise NotConfigured("ZHDEDUP_OUTCOMES is off")
        ext = cls(crawler, crawler.settings.getint("ZHDEDUP_OUTCOMES_BATCH", FLUSH_EVERY))
        crawler.signals.connect(ext.page_outcome, signal=page_outcome)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(ext.item_error, signal=signals.item_error)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
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
            how = (f"distance {exception.distance}" if exception.kind != "passages"
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
        """Count the outcome and queue its record; a full batch goes to the store in a store thread."""
        self.crawler.stats.inc_value(stats.outcome(doc["outcome"]))
        self.fetched_outcomes += bool(doc.get("fetched"))
        self.buffer.append(doc)
        if len(self.buffer) >= self.flush_every:
            self.flush(wait=False)

    def flush(self, wait: bool) -> None:
        """Write the queued records to the run (a failing write is logged with what it lost, never silent)."""
        batch, self.buffer = self.buffer, []
        run_id = run_id_of(self.crawler)
        if not batch or run_id is None:
            if batch:
                logger.warning("%d URL outcomes not written: the crawl run was not recorded", len(batch))
            return
        submit(self.crawler, self._write, run_id, batch, wait=wait)

    def _write(self, run_id: str, batch: list[dict]) -> None:
        try:
            store_for(self.crawler).record_outcomes(run_id, batch)
        except Exception as exc:  # the outcome log must not stop the crawl; the loss is said
            logger.warning("%d URL outcomes not written: %s", len(batch), exc)

    def spider_closed(self, spider, reason: str = "") -> None:
        """Write what is left; check fetched = the outcomes of fetched URLs."""
        self.flush(wait=True)
        get = self.crawler.stats.get_value
        fetched = get(stats.FETCHED, 0) + get(stats.FETCH_FAILED, 0)
        if fetched != self.fetched_outcomes:
            logger.warning("outcomes do not add up: %d URLs fetched, %d with an outcome (%s)", fetched,
                           self.fetched_outcomes, "a page may still have been in the pipelines at shutdown"
                           if reason != "finished" else "please report this")
