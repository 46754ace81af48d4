"""CrawlProgress: one line of running counts every few seconds, so a person sees the crawl move.

    progress: fetched 120 (4.1/s), stored 80, duplicates 25, matches 2, failed 13, queued 340, in flight 8

Every ZHDEDUP_PROGRESS_INTERVAL seconds; 0 (the default) means 5 s when stderr is a terminal and 30 s
otherwise (a log file does not need a line every 5 s). ZHDEDUP_PROGRESS_ENABLED = False switches it off.
The counts are the zhdedup/* stats the spiders and pipelines increment.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from crawler import settings as defaults   # every setting's default, declared once
from pipelines import stats as names

logger = logging.getLogger(__name__)
TERMINAL_INTERVAL = 5.0
LOG_INTERVAL = 30.0


def progress_counts(stats: dict[str, Any]) -> dict[str, int]:
    """fetched / stored / duplicates / matches / failed from the zhdedup/* stats."""
    def total(prefix: str) -> int:
        return sum(v for k, v in stats.items() if k.startswith(prefix) and isinstance(v, int))

    return {"fetched": stats.get(names.FETCHED, 0), "stored": stats.get(names.STORED, 0),
            "duplicates": sum(stats.get(names.dropped(kind), 0) for kind in names.DUPLICATE_KINDS),
            "matches": stats.get(names.MATCHED, 0), "failed": total(names.FAILED_PREFIX)}


def auto_interval(setting: float, isatty: bool) -> float:
    """The configured interval, or the terminal / log-file default when the setting is 0."""
    if setting < 0:
        raise NotConfigured("ZHDEDUP_PROGRESS_INTERVAL is negative")
    return setting or (TERMINAL_INTERVAL if isatty else LOG_INTERVAL)


class CrawlProgress:
    """Scrapy extension: logs the progress line every `interval` seconds while the spider runs."""

    def __init__(self, crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.task = None
        self.last: tuple[float, int] = (time.monotonic(), 0)

    @classmethod
    def from_crawler(cls, crawler) -> "CrawlProgress":
        """Read ZHDEDUP_PROGRESS_ENABLED and ZHDEDUP_PROGRESS_INTERVAL; hook spider open/close."""
        if not crawler.settings.getbool("ZHDEDUP_PROGRESS_ENABLED", defaults.ZHDEDUP_PROGRESS_ENABLED):
            raise NotConfigured("ZHDEDUP_PROGRESS_ENABLED is off")
        interval = auto_interval(crawler.settings.getfloat("ZHDEDUP_PROGRESS_INTERVAL", defaults.ZHDEDUP_PROGRESS_INTERVAL), sys.stderr.isatty())
        ext = cls(crawler, interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider) -> None:
        """Start the clock and the periodic line."""
        self.last = (time.monotonic(), 0)
        self.task = create_looping_call(self.log)
        self.task.start(self.interval, now=False)

    def spider_closed(self, spider, reason: str = "") -> None:
        """Stop the periodic line (the closing summary follows from CrawlSummary)."""
        if self.task is not None and self.task.running:
            self.task.stop()

    def line(self) -> str:
        """The progress line for the current stats."""
        counts = progress_counts(self.crawler.stats.get_stats())
        now = time.monotonic()
        then, fetched_then = self.last
        rate = (counts["fetched"] - fetched_then) / max(now - then, 1e-6)
        self.last = (now, counts["fetched"])
        text = (f"progress: fetched {counts['fetched']} ({rate:.1f}/s), stored {counts['stored']}, "
                f"duplicates {counts['duplicates']}, matches {counts['matches']}, failed {counts['failed']}")
        queued, in_flight = self.queue_sizes()
        if queued is not None:
            text += f", queued {queued}"
        return text + f", in flight {in_flight}"

    def queue_sizes(self) -> tuple[int | None, int]:
        """Requests waiting in the scheduler (None when it cannot tell) and downloads in progress."""
        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None)
        try:
            queued = len(scheduler) if scheduler is not None else None
        except TypeError:  # a scheduler without __len__
            queued = None
        return queued, len(getattr(engine.downloader, "active", ()))

    def log(self) -> None:
        """Log one progress line."""
        logger.info(self.line())
