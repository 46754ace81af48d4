"""StorePipeline: the kept page, its text and fingerprints, into MongoDB through the store.

Group commit: a write waits ZHDEDUP_STORE_BATCH_MS (30) and takes every page that arrived meanwhile or during
the write before (one look-up and one bulk write, up to ZHDEDUP_STORE_BATCH pages): each write costs the server
far more than its bytes. No item passes on before its page is written (or spooled). A page claimed in Redis
but not yet in MongoDB is in flight (storage/inflight.py): a Redis data loss meanwhile re-adds it.
"""
from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter

from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines import stats
from pipelines.crawl_store import GroupCommit, store_for

# Item fields that are transport only, never stored.
TRANSIENT = {"body", "headers", "exchange", "profile", "dedup", "matches"}
logger = logging.getLogger(__name__)


class StorePipeline:
    """Saves every item that reached it (new pages) with save_pages; counts zhdedup/stored."""

    def __init__(self, crawler, log_stored: bool = False, batch: int = defaults.ZHDEDUP_STORE_BATCH,
                 batch_ms: float = defaults.ZHDEDUP_STORE_BATCH_MS) -> None:
        self.crawler = crawler
        self.store = store_for(crawler)
        self.log_stored = log_stored
        self.batcher = GroupCommit(crawler, self._save_many, batch, batch_ms)

    @classmethod
    def from_crawler(cls, crawler) -> "StorePipeline":
        """Open the shared store; ZHDEDUP_LOG_STORED=True logs a line per stored page; ZHDEDUP_STORE_BATCH
        (100) pages at most per write, ZHDEDUP_STORE_BATCH_MS (30) wait before a write."""
        s = crawler.settings
        return cls(crawler, s.getbool("ZHDEDUP_LOG_STORED", defaults.ZHDEDUP_LOG_STORED),
                   s.getint("ZHDEDUP_STORE_BATCH", defaults.ZHDEDUP_STORE_BATCH),
                   s.getfloat("ZHDEDUP_STORE_BATCH_MS", defaults.ZHDEDUP_STORE_BATCH_MS))

    @staticmethod
    def document(item: Any) -> dict:
        """The page document: item fields minus raw body/headers, id = the page id, content type kept."""
        a = ItemAdapter(item)
        doc = {k: v for k, v in a.items() if k not in TRANSIENT and v is not None}
        doc["_id"] = doc.pop("page_id", None) or doc.get("canonical_url") or doc["url"]
        if (a.get("dedup") or {}).get("spooled"):   # decided by a spool replay: no index repair may add it
            doc["undecided"] = True
        ctype = (a.get("headers") or {}).get("content-type")
        if ctype:
            doc["content_type"] = ctype
        return doc

    def _save_many(self, records: list[tuple[dict, bool]]) -> list:
        """One batch of (page, its text found new by the dedup step): a new text's URL is not looked up first."""
        return self.store.save_pages([doc for doc, _ in records], [new for _, new in records])

    async def process_item(self, item: Any) -> Any:
        """Save the page (in a batch), then pass the item on (to feeds)."""
        a = ItemAdapter(item)
        page_id = await self.batcher.save((self.document(item), (a.get("dedup") or {}).get("kind") == "new"))
        a["page_id"] = page_id or a.get("page_id")
        for field in ("body", "headers", "exchange"):  # raw bytes were kept for match evidence; feeds get no bytes
            a.pop(field, None)
        unchanged = (a.get("dedup") or {}).get("kind") == "unchanged"
        self.crawler.stats.inc_value(stats.UNCHANGED if unchanged else stats.STORED)
        if self.log_stored and not unchanged:
            logger.info("stored %s %s", a.get("url"), repr(a.get("title") or ""))
        return item
