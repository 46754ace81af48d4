"""StorePipeline: the kept page, its text and fingerprints, into MongoDB through the store.

Group commit: pages that arrive while a write is under way are written together in the next one (one
look-up and one bulk write, up to ZHDEDUP_STORE_BATCH pages): each write costs the server far more than
its bytes. No item passes on before its page is written (or spooled), and no page waits longer than the
write before it -- a page claimed in Redis but not yet in MongoDB is lost if Redis loses its data, so
that window stays as short as one write (ZHDEDUP_STORE_BATCH_MS adds an extra wait; default 0).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from itemadapter import ItemAdapter

from pipelines import stats
from pipelines._store import run_blocking, store_for

# Item fields that are transport only, never stored.
TRANSIENT = {"body", "headers", "profile", "dedup", "matches"}
BATCH = 100
BATCH_MS = 0.0
logger = logging.getLogger(__name__)


class PageBatcher:
    """Group commit: a page is written at once when no write is under way; pages arriving during a write
    go together in the next one (up to max_pages), after an optional extra wait of wait_ms."""

    def __init__(self, crawler, store, max_pages: int = BATCH, wait_ms: float = BATCH_MS) -> None:
        self.crawler = crawler
        self.store = store
        self.max_pages = max(1, max_pages)
        self.wait = max(0.0, wait_ms) / 1000
        self.pending: list[tuple[dict, asyncio.Future]] = []
        self.writer: asyncio.Task | None = None  # referenced: a task nobody holds may be collected mid-write

    async def save(self, doc: dict) -> str:
        """The page's id once its batch is written (or spooled); its BadDocument raised if it has one."""
        future = asyncio.get_running_loop().create_future()
        self.pending.append((doc, future))
        if self.writer is None or self.writer.done():
            self.writer = asyncio.ensure_future(self._write_all())
        return await future

    async def _write_all(self) -> None:
        """Write batches until nothing is pending."""
        while self.pending:
            if self.wait and len(self.pending) < self.max_pages:
                await asyncio.sleep(self.wait)
            batch, self.pending = self.pending[:self.max_pages], self.pending[self.max_pages:]
            await self._write(batch)

    async def _write(self, batch: list[tuple[dict, asyncio.Future]]) -> None:
        try:
            results = await run_blocking(self.crawler, self.store.save_pages, [doc for doc, _ in batch])
        except Exception as exc:  # every page of the batch fails with the error (each item says so)
            results = [exc] * len(batch)
        for (_, future), result in zip(batch, results):
            if future.done():
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)


class StorePipeline:
    """Saves every item that reached it (new pages) with save_pages; counts zhdedup/stored."""

    def __init__(self, crawler, log_stored: bool = False, batch: int = BATCH, batch_ms: float = BATCH_MS) -> None:
        self.crawler = crawler
        self.store = store_for(crawler)
        self.log_stored = log_stored
        self.batcher = PageBatcher(crawler, self.store, batch, batch_ms)

    @classmethod
    def from_crawler(cls, crawler) -> "StorePipeline":
        """Open the shared store; ZHDEDUP_LOG_STORED=True logs a line per stored page; ZHDEDUP_STORE_BATCH
        (100) pages at most per write, ZHDEDUP_STORE_BATCH_MS (0) extra wait before a write."""
        s = crawler.settings
        return cls(crawler, s.getbool("ZHDEDUP_LOG_STORED", False), s.getint("ZHDEDUP_STORE_BATCH", BATCH),
                   s.getfloat("ZHDEDUP_STORE_BATCH_MS", BATCH_MS))

    @staticmethod
    def document(item: Any) -> dict:
        """The page document: item fields minus raw body/headers, id = the page id, content type kept."""
        a = ItemAdapter(item)
        doc = {k: v for k, v in a.items() if k not in TRANSIENT and v is not None}
        doc["_id"] = doc.pop("page_id", None) or doc.get("canonical_url") or doc["url"]
        ctype = (a.get("headers") or {}).get("content-type")
        if ctype:
            doc["content_type"] = ctype
        return doc

    async def process_item(self, item: Any) -> Any:
        """Save the page (in a batch), then pass the item on (to feeds)."""
        a = ItemAdapter(item)
        page_id = await self.batcher.save(self.document(item))
        a["page_id"] = page_id or a.get("page_id")
        for field in ("body", "headers"):  # raw bytes were kept for match evidence; feeds get no bytes
            a.pop(field, None)
        unchanged = (a.get("dedup") or {}).get("kind") == "unchanged"
        self.crawler.stats.inc_value(stats.UNCHANGED if unchanged else stats.STORED)
        if self.log_stored and not unchanged:
            logger.info("stored %s %s", a.get("url"), repr(a.get("title") or ""))
        return item
