"""`CrawlSummary`: counts every dropped item by reason and prints a readable summary at close."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DropItem

from crawler import settings as defaults   # every setting's default, declared once
from pipelines import stats
from pipelines.drops import DuplicateItem, SkippedItem, reason_of

logger = logging.getLogger(__name__)


def reason_key(message: str) -> str:
    """A stats-friendly slug of a DropItem message: 'no article body: 404 page' -> 'no_article_body'."""
    return reason_of(DropItem(message))


class CrawlSummary:
    """Scrapy extension: failure reasons in the stats, a summary in the log, and an optional JSON
    report (ZHDEDUP_REPORT=path) listing every kept page and every dropped page with its reason."""

    def __init__(self, crawler, report: str, max_entries: int = defaults.ZHDEDUP_REPORT_MAX_ENTRIES) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.report_path = report
        self.max_entries = max_entries
        self.kept: list[dict] = []
        self.dropped: list[dict] = []
        self.left_out = {"kept": 0, "dropped": 0}
        self.started = time.monotonic()

    @classmethod
    def from_crawler(cls, crawler) -> "CrawlSummary":
        """Hook the item and spider signals."""
        ext = cls(crawler, crawler.settings.get("ZHDEDUP_REPORT") or "",
                  crawler.settings.getint("ZHDEDUP_REPORT_MAX_ENTRIES", defaults.ZHDEDUP_REPORT_MAX_ENTRIES))
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(ext.item_error, signal=signals.item_error)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        return ext

    def spider_opened(self, spider) -> None:
        """Start the clock (the report's elapsed_seconds excludes process start-up)."""
        self.started = time.monotonic()

    def item_scraped(self, item: Any, response=None, spider=None) -> None:
        """A page went through every pipeline (it was kept)."""
        if self.report_path and self._room("kept"):
            a = ItemAdapter(item)
            self.kept.append({k: a.get(k) for k in ("url", "site", "title", "page_id", "book",
                                                      "chapter_number", "chapter_title", "matches")
                              if a.get(k) is not None})

    def item_dropped(self, item: Any, response=None, exception: BaseException | None = None, spider=None) -> None:
        """Duplicates are counted by DedupPipeline; everything else is a failure with a reason."""
        message = str(exception or "dropped")
        duplicate = isinstance(exception, DuplicateItem)
        if isinstance(exception, SkippedItem):
            self.stats.inc_value(stats.skipped(exception.reason))
        elif not duplicate:
            self.stats.inc_value(stats.failed(reason_of(exception)))
        if self.report_path and self._room("dropped"):
            entry = {"url": ItemAdapter(item).get("url"), "reason": message}
            if duplicate:
                entry.update(kind=exception.kind, original=exception.original_url,
                             distance=exception.distance, coverage=exception.coverage)
            if ItemAdapter(item).get("matches"):
                entry["matches"] = ItemAdapter(item).get("matches")
            self.dropped.append(entry)

    def item_error(self, item: Any, response=None, spider=None, failure=None) -> None:
        """An exception in a pipeline: counted, the traceback is already in the log."""
        name = type(getattr(failure, "value", None)).__name__ if failure is not None else "error"
        self.stats.inc_value(stats.failed(f"pipeline_{name.lower()}"))
        if self.report_path and self._room("dropped"):
            self.dropped.append({"url": ItemAdapter(item).get("url"), "reason": f"pipeline error: {failure}"})

    def _room(self, which: str) -> bool:
        """True while the report's list has room; past max_entries pages are only counted (a days-long
        crawl must not keep every URL in memory)."""
        if len(getattr(self, which)) < self.max_entries:
            return True
        self.left_out[which] += 1
        return False

    def spider_closed(self, spider, reason: str = "") -> None:
        """Log the summary and write the report."""
        get = self.stats.get_value
        if get("extract/ok") is not None:
            self.stats.set_value(stats.EXTRACTED, get("extract/ok"))
        lines = [f"zhdedup summary for spider {spider.name!r} ({reason}):",
                 f"  pages fetched        {get(stats.FETCHED, 0)}",
                 f"  candidate pages      {get(stats.ITEMS, 0)}",
                 f"  extracted            {get(stats.EXTRACTED, 0)}",
                 f"  stored               {get(stats.STORED, 0)}",
                 f"  unchanged (re-crawl) {get(stats.UNCHANGED, 0)}",
                 f"  dropped, exact dup   {get(stats.dropped('exact'), 0)}",
                 f"  dropped, near dup    {get(stats.dropped('near'), 0)}",
                 f"  dropped, passages    {get(stats.dropped('passages'), 0)}",
                 f"  dropped, rewrite     {get(stats.dropped('rewrite'), 0)}",
                 f"  matched to sources   {get(stats.MATCHED, 0)}"]
        failed = stats.failures(self.stats)
        skipped = stats.failures(self.stats, stats.SKIPPED_PREFIX)
        for title, counts in (("skipped", skipped), ("failed", failed)):
            lines.append(f"  {title:<20} {sum(counts.values())}")
            lines += [f"    {name:<22} {count}" for name, count in sorted(counts.items())]
        lines += self._limit_lines()
        logger.info("\n".join(lines))
        if self.report_path:
            self.write_report(spider.name, reason, failed, skipped)

    def _limit_lines(self) -> list[str]:
        """How many URLs each crawl limit cut, with the setting that sets it (nothing cut: no line)."""
        settings = self.crawler.settings
        cut = {"DEPTH_LIMIT": self.stats.get_value(stats.skipped("depth_limit"), 0),
               "DOWNLOAD_MAXSIZE": self.stats.get_value(stats.failed("too_large"), 0)}
        return [f"  cut by {name}={settings.get(name)}: {n} URL(s)" for name, n in cut.items() if n]

    def write_report(self, spider: str, reason: str, failed: dict, skipped: dict) -> None:
        """JSON report: counts, kept pages, dropped pages with reasons (written atomically)."""
        counts = stats.ours(self.stats)
        data = {"spider": spider, "finish_reason": reason, "elapsed_seconds": time.monotonic() - self.started,
                "responses": self.stats.get_value("response_received_count", 0),
                "counts": counts, "failed": failed, "skipped": skipped,
                "kept": self.kept, "dropped": self.dropped, "left_out": self.left_out}
        path = Path(self.report_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        tmp.replace(path)
