"""`StorageGuard`: stops the crawl with one clear error when the store can write neither a server nor its spool."""
from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals

from pipelines import stats

logger = logging.getLogger(__name__)


class StorageGuard:
    """Scrapy extension: when the store can neither reach a server nor write its local spool (disk full,
    read-only var/), stop the crawl with one clear error instead of failing every page. The pages that
    failed are not marked finished, so a JOBDIR crawl fetches them again when resumed. A storage error
    of a page is one log line, never a traceback per page (the outcome records keep the reason)."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.stopping = False
        self.filter = _StorageErrorLines()

    @classmethod
    def from_crawler(cls, crawler) -> "StorageGuard":
        """Hook item errors; shorten the scraper's storage error lines."""
        ext = cls(crawler)
        crawler.signals.connect(ext.item_error, signal=signals.item_error)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        logging.getLogger("scrapy.core.scraper").addFilter(ext.filter)
        return ext

    def item_error(self, item: Any, response=None, spider=None, failure=None) -> None:
        """A pipeline raised StorageUnavailable for the local spool: close the spider once."""
        exc = getattr(failure, "value", None)
        if self.stopping or getattr(exc, "server", None) != "local spool":
            return
        self.stopping = True
        logger.critical("stopping the crawl: %s", exc)
        self.crawler.stats.set_value(stats.failed("spool_unwritable"), 1)
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(self.crawler.engine.close_spider_async(reason="storage_unavailable"))

    def spider_closed(self, spider, reason: str = "") -> None:
        """Leave the scraper's logger as it was."""
        logging.getLogger("scrapy.core.scraper").removeFilter(self.filter)


class _StorageErrorLines(logging.Filter):
    """"Error processing" records of storage errors: the spool's are left to StorageGuard's one CRITICAL
    line; a server's become one line with the page's URL and no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Drop or shorten a storage error record; pass everything else unchanged."""
        from storage import StorageError

        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, StorageError):
            return True
        if getattr(exc, "server", None) == "local spool":
            return False
        item = getattr(record, "item", None)
        url = ItemAdapter(item).get("url") if item is not None else None
        record.msg, record.args = "page %s not processed: %s", (url, str(exc).splitlines()[0])
        record.exc_info, record.exc_text = None, None
        return True
