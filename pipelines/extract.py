"""Scrapy adapter around the ``extract`` package: raw page bytes in, article fields out, or SkippedItem.

``python -m pipelines.extract PAGE.html`` is kept as an alias of ``python -m extract PAGE.html``.
"""
from __future__ import annotations

import sys
from typing import Any, Callable
from urllib.parse import urlsplit

from itemadapter import ItemAdapter

from extract.limits import MAX_BYTES, MIN_CHARS
from extract.template import HeldTemplates, SiteTemplates
from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines._worker_tasks import FIELDS, article_fields  # noqa: F401 (FIELDS: kept importable from here)
from pipelines._worker_tasks import page_facts_of  # noqa: F401 (what facts_workers run, for the spiders)
from pipelines._worker_tasks import warm_up_extract as _warm_up
from pipelines._workers import WorkerPool, pool_for, pool_of, worker_count
from pipelines.drops import SkippedItem
from pipelines.stats import TEMPLATE_STRIPPED

def crawl_drained(crawler: Any) -> Callable[[], bool]:
    """Whether the crawl can bring no more pages: start requests all read, nothing scheduled, downloading or
    waiting for the spider (items in the pipelines, such as pages waiting for their site's template, do not
    count). Private engine attributes are read defensively: unknown means "not drained"."""
    def drained() -> bool:
        try:
            engine = crawler.engine
        except (AttributeError, RuntimeError):   # before the crawl starts (or a crawler without one)
            return False
        scraper_slot = getattr(getattr(engine, "scraper", None), "slot", None)
        scheduler = getattr(engine, "scheduler", None)
        if engine is None or scraper_slot is None or scheduler is None:
            return False
        if getattr(engine, "_start", True) is not None or engine.downloader.active or scraper_slot.queue:
            return False
        return not scheduler.has_pending_requests()
    return drained


def facts_workers(crawler: Any) -> WorkerPool | None:
    """The worker processes that measure a spider's pages (`page_facts_of`) while their `offload` says so: the
    crawl's pool, the one extraction and fingerprints use, or None when the crawl has none (the spider measures
    the page itself)."""
    return pool_of(crawler) if crawler is not None else None


class ExtractPipeline:
    """Item pipeline: fills title/text/published/author/language/encoding from item['body'] (the bytes stay
    for match evidence until StorePipeline).

    With site templates on (the default), lines that repeat across the site's pages are removed from
    ``text`` before it is fingerprinted; the extracted text before that is kept as ``raw_text`` and the
    number of removed lines as ``template_lines``. The model lives in this process for one crawl.
    ZHDEDUP_EXTRACT_WORKERS = N > 0 extracts in worker processes (shared with fingerprinting).
    """

    def __init__(self, stats: Any = None, min_chars: int = MIN_CHARS, fast: bool = False,
                 max_bytes: int = MAX_BYTES, templates: SiteTemplates | None = None,
                 warmup_seconds: float = 5.0, pool: WorkerPool | None = None,
                 drained: Callable[[], bool] | None = None) -> None:
        self.stats = stats
        self.min_chars = min_chars
        self.fast = fast
        self.max_bytes = max_bytes
        self.templates = HeldTemplates(templates, warmup_seconds, drained) if templates is not None else None
        self.pool = pool

    @classmethod
    def from_crawler(cls, crawler: Any) -> "ExtractPipeline":
        """Read EXTRACT_MIN_CHARS (50), EXTRACT_FAST (False), EXTRACT_MAX_BYTES (2,000,000), EXTRACT_TEMPLATES
        (True), EXTRACT_TEMPLATE_MIN_PAGES (3), EXTRACT_TEMPLATE_WARMUP_SECONDS (5: how long at most a site's
        first pages wait for its template; less once the crawl has nothing more to fetch) and
        ZHDEDUP_EXTRACT_WORKERS (auto)."""
        s = crawler.settings
        min_chars = s.getint("EXTRACT_MIN_CHARS", defaults.EXTRACT_MIN_CHARS)
        templates = None
        if s.getbool("EXTRACT_TEMPLATES", defaults.EXTRACT_TEMPLATES):
            templates = SiteTemplates(min_pages=s.getint("EXTRACT_TEMPLATE_MIN_PAGES", defaults.EXTRACT_TEMPLATE_MIN_PAGES), min_keep=min_chars)
        pool = pool_for(crawler) if worker_count(s, "ZHDEDUP_EXTRACT_WORKERS") > 0 else None
        return cls(stats=crawler.stats, min_chars=min_chars, fast=s.getbool("EXTRACT_FAST", defaults.EXTRACT_FAST),
                   max_bytes=s.getint("EXTRACT_MAX_BYTES", defaults.EXTRACT_MAX_BYTES), templates=templates,
                   warmup_seconds=s.getfloat("EXTRACT_TEMPLATE_WARMUP_SECONDS", defaults.EXTRACT_TEMPLATE_WARMUP_SECONDS), pool=pool,
                   drained=crawl_drained(crawler))

    def open_spider(self, spider: Any = None) -> None:
        """Begin starting and warming the worker processes, when extraction uses them (the first page waits
        for them, not the spider's first requests)."""
        if self.pool is not None:
            self.pool.start_soon(_warm_up)

    def close_spider(self, spider: Any = None) -> None:
        """Stop the worker processes once the last item is through (their CPU goes into the stats now,
        before the crawl summary is written)."""
        if self.pool is not None:
            self.pool.close()

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        """The item with its article fields; SkippedItem(reason, "no article body: ...") when there is none."""
        args = self._arguments(item)
        if self.pool is not None:
            fields, skipped = await self.pool.run(article_fields, *args)
        else:
            fields, skipped = article_fields(*args)
        self._fill(item, fields, skipped)
        if self.templates is not None:
            await self._strip_template(ItemAdapter(item))
        return item

    def _arguments(self, item: Any) -> tuple:
        a = ItemAdapter(item)
        return (a.get("body") or b"", a.get("url") or "", a.get("headers"), a.get("profile"), self.min_chars,
                self.fast, self.max_bytes)

    def _fill(self, item: Any, fields: dict[str, Any] | None, skipped: tuple[str, str] | None) -> None:
        """Copy the article fields into the item, or raise SkippedItem with extraction's reason."""
        if skipped is not None:
            self._inc(f"extract/dropped/{skipped[0]}")
            raise SkippedItem(skipped[0], f"no article body: {skipped[1]}")
        adapter = ItemAdapter(item)
        for field, value in (fields or {}).items():
            adapter[field] = value
        self._inc("extract/ok")

    async def _strip_template(self, adapter: ItemAdapter) -> None:
        """Drop the site's template lines from text (a site's first pages wait for it); raw_text keeps the text."""
        site = adapter.get("site") or urlsplit(adapter.get("url") or "").netloc
        stripped = await self.templates.strip(site, adapter.get("title"), adapter["text"].split("\n"))
        if stripped.removed:
            adapter["raw_text"] = adapter["text"]
            adapter["text"] = "\n".join(stripped.lines)
            adapter["template_lines"] = stripped.removed
            self._inc(TEMPLATE_STRIPPED)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)


if __name__ == "__main__":
    from extract.__main__ import main
    sys.exit(main(prog="python -m pipelines.extract"))
