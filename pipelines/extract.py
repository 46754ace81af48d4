"""Scrapy adapter around the ``extract`` package: raw page bytes in, article fields out, or SkippedItem.

``python -m pipelines.extract PAGE.html`` is kept as an alias of ``python -m extract PAGE.html``.
"""
from __future__ import annotations

import asyncio
import sys
from typing import Any
from urllib.parse import urlsplit

from itemadapter import ItemAdapter

from extract.article import MAX_BYTES, MIN_CHARS, NotArticle, extract
from extract.template import SiteTemplates
from pipelines.drops import SkippedItem
from pipelines.stats import TEMPLATE_STRIPPED

FIELDS = (("title", "title"), ("text", "text"), ("published", "date"), ("author", "author"),
          ("language", "language"), ("encoding", "encoding"))


class ExtractPipeline:
    """Item pipeline: fills title/text/published/author/language/encoding from item['body'] (the bytes stay
    for match evidence until StorePipeline).

    With site templates on (the default), lines that repeat across the site's pages are removed from
    ``text`` before it is fingerprinted; the extracted text before that is kept as ``raw_text`` and the
    number of removed lines as ``template_lines``.  The model lives in this process for one crawl.
    """

    def __init__(self, stats: Any = None, min_chars: int = MIN_CHARS, fast: bool = False,
                 max_bytes: int = MAX_BYTES, templates: SiteTemplates | None = None,
                 warmup_seconds: float = 5.0) -> None:
        self.stats = stats
        self.min_chars = min_chars
        self.fast = fast
        self.max_bytes = max_bytes
        self.templates = templates
        self.warmup_seconds = warmup_seconds
        self.warm: dict[str, asyncio.Event] = {}

    @classmethod
    def from_crawler(cls, crawler: Any) -> "ExtractPipeline":
        """Read EXTRACT_MIN_CHARS (50), EXTRACT_FAST (False), EXTRACT_MAX_BYTES (2,000,000),
        EXTRACT_TEMPLATES (True), EXTRACT_TEMPLATE_MIN_PAGES (3) and EXTRACT_TEMPLATE_WARMUP_SECONDS (5:
        how long a site's first pages may wait for its template)."""
        s = crawler.settings
        min_chars = s.getint("EXTRACT_MIN_CHARS", MIN_CHARS)
        templates = None
        if s.getbool("EXTRACT_TEMPLATES", True):
            templates = SiteTemplates(min_pages=s.getint("EXTRACT_TEMPLATE_MIN_PAGES", 3), min_keep=min_chars)
        return cls(stats=crawler.stats, min_chars=min_chars, fast=s.getbool("EXTRACT_FAST", False),
                   max_bytes=s.getint("EXTRACT_MAX_BYTES", MAX_BYTES), templates=templates,
                   warmup_seconds=s.getfloat("EXTRACT_TEMPLATE_WARMUP_SECONDS", 5.0))

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        """The item with its article fields; SkippedItem(reason, "no article body: ...") when there is none."""
        adapter = ItemAdapter(item)
        try:
            result = extract(adapter.get("body") or b"", url=adapter.get("url") or "",
                             headers=adapter.get("headers"), profile=adapter.get("profile"),
                             min_chars=self.min_chars, fast=self.fast, max_bytes=self.max_bytes)
        except NotArticle as exc:
            self._inc(f"extract/dropped/{exc.reason}")
            raise SkippedItem(exc.reason, f"no article body: {exc.message}") from None
        for field, attr in FIELDS:
            adapter[field] = getattr(result, attr)
        if self.templates is not None:
            await self._strip_template(adapter)
        self._inc("extract/ok")
        return item

    async def _strip_template(self, adapter: ItemAdapter) -> None:
        """Drop the site's template lines from text; the text before is kept as raw_text. A site's first
        pages wait (at most warmup_seconds) until enough of its pages were seen to know its template."""
        site = adapter.get("site") or urlsplit(adapter.get("url") or "").netloc
        lines = adapter["text"].split("\n")
        self.templates.observe(site, adapter.get("title"), lines)
        await self._warm_up(site)
        stripped = self.templates.strip(site, adapter.get("title"), lines, learn=False)
        if stripped.removed:
            adapter["raw_text"] = adapter["text"]
            adapter["text"] = "\n".join(stripped.lines)
            adapter["template_lines"] = stripped.removed
            self._inc(TEMPLATE_STRIPPED)

    async def _warm_up(self, site: str) -> None:
        """Hold a page until its site has min_pages pages (then all wait no more) or the wait runs out."""
        ready = self.warm.setdefault(site, asyncio.Event())
        if self.templates.pages_seen(site) >= self.templates.min_pages:
            ready.set()
        if ready.is_set() or self.warmup_seconds <= 0:
            return
        try:
            await asyncio.wait_for(ready.wait(), self.warmup_seconds)
        except asyncio.TimeoutError:
            ready.set()  # a small site: what is known by now is its template

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)


if __name__ == "__main__":
    from extract.__main__ import main
    sys.exit(main(prog="python -m pipelines.extract"))
