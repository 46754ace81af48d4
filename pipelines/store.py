"""StorePipeline: the kept page, its text and fingerprints, into MongoDB through the store."""
from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter

from pipelines import stats
from pipelines._store import run_blocking, store_for

# Item fields that are transport only, never stored.
TRANSIENT = {"body", "headers", "profile", "dedup", "matches"}
logger = logging.getLogger(__name__)


class StorePipeline:
    """Saves every item that reached it (new pages) with save_page; counts zhdedup/stored."""

    def __init__(self, crawler, log_stored: bool = False) -> None:
        self.crawler = crawler
        self.store = store_for(crawler)
        self.log_stored = log_stored

    @classmethod
    def from_crawler(cls, crawler) -> "StorePipeline":
        """Open the shared store; ZHDEDUP_LOG_STORED=True logs a line per stored page."""
        return cls(crawler, crawler.settings.getbool("ZHDEDUP_LOG_STORED", False))

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
        """save_page, then pass the item on (to feeds)."""
        a = ItemAdapter(item)
        page_id = await run_blocking(self.crawler, self.store.save_page, self.document(item))
        a["page_id"] = page_id or a.get("page_id")
        for field in ("body", "headers"):  # raw bytes were kept for match evidence; feeds get no bytes
            a.pop(field, None)
        unchanged = (a.get("dedup") or {}).get("kind") == "unchanged"
        self.crawler.stats.inc_value(stats.UNCHANGED if unchanged else stats.STORED)
        if self.log_stored and not unchanged:
            logger.info("stored %s %s", a.get("url"), repr(a.get("title") or ""))
        return item
