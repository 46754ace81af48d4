"""InfringementPipeline: compare each kept page with the registered source library; record matches."""
from __future__ import annotations

import logging
import time
from functools import lru_cache
from typing import Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines import stats
from pipelines.crawl_store import run_blocking, store_for
from storage.errors import StorageUnavailable
from storage.sources import SourceLibrary

logger = logging.getLogger(__name__)
SOURCES_RECHECK = 30.0  # seconds between "is the source library still empty?" checks
SUSPECT_TEXT_MAX = 200_000  # characters of the page kept in its match record


class InfringementPipeline:
    """CopyMatcher over the store's seed index; every match (score >= ZHDEDUP_MIN_MATCH_SCORE) of a
    source not licensed to the page's site becomes a match record for review. Never drops items."""

    def __init__(self, crawler, min_score: float) -> None:
        self.crawler = crawler
        self.min_score = min_score
        self.store = store_for(crawler)
        self.source = lru_cache(maxsize=512)(self._load_source)
        self.library = SourceLibrary(self.store)
        self._has_sources: tuple[float, bool] = (0.0, True)

    @classmethod
    def from_crawler(cls, crawler) -> "InfringementPipeline":
        """Off with ZHDEDUP_INFRINGEMENT=False; reads ZHDEDUP_MIN_MATCH_SCORE."""
        if not crawler.settings.getbool("ZHDEDUP_INFRINGEMENT", defaults.ZHDEDUP_INFRINGEMENT):
            raise NotConfigured("ZHDEDUP_INFRINGEMENT is off")
        return cls(crawler, crawler.settings.getfloat("ZHDEDUP_MIN_MATCH_SCORE", defaults.ZHDEDUP_MIN_MATCH_SCORE))

    def _load_source(self, source_id: str) -> dict | None:
        """A registered work (text, licensed_sites), cached: sources rarely change during a crawl."""
        return self.store.sources.get(source_id)

    def _licensed(self, source_id: str, source: dict, site: str | None) -> bool:
        """True when the source lists the site in licensed_sites (or the store records a licence)."""
        if not site:
            return False
        if site in (source.get("licensed_sites") or []):
            return True
        checker = getattr(self.store, "is_licensed", None)
        return bool(checker(source_id, site)) if callable(checker) else False

    def _library_empty(self) -> bool:
        """True when no source is registered (checked at most every SOURCES_RECHECK seconds)."""
        checked, has = self._has_sources
        if time.monotonic() - checked > SOURCES_RECHECK:
            library = getattr(self.store, "sources", None)
            has = bool(library.all()) if library is not None else True
            self._has_sources = (time.monotonic(), has)
        return not has

    def _matches(self, item: dict) -> list[dict]:
        """Match records for one page (runs in a store thread: Redis lookups and CPU work)."""
        records = []
        source_texts: dict[str, str] = {}
        for m in self.library.match(item["text"]):
            source = self.source(m["source_id"]) or {}
            source_texts[m["source_id"]] = str(source.get("text") or "")
            if self._licensed(m["source_id"], source, item.get("site")):
                self.crawler.stats.inc_value(stats.MATCHES_LICENSED)
                continue
            if m["score"] < self.min_score:
                continue
            records.append({
                "suspect_url": item["url"], "suspect_page_id": item.get("page_id"), "site": item.get("site"),
                "title": item.get("title"), "fetched": item.get("fetched"), **m,
                # the page itself may be dropped next as a duplicate: the reviewer still sees what it said
                "suspect_text": item["text"][:SUSPECT_TEXT_MAX],
                "source_spans": [list(s) for s in m["source_spans"]],
                "suspect_spans": [list(s) for s in m["suspect_spans"]]})
        for record in records:
            match_id = self.store.matches.save(record)
            if not match_id:
                logger.warning("match of %s spooled (MongoDB away): no evidence snapshot kept for it", item["url"])
                continue
            record["match_id"] = match_id
            snapshot = self._snapshot(item, record, source_texts.get(record["source_id"], ""))
            try:
                flag = self._reappeared(match_id, item, record)
                self.store.evidence.add(match_id, {**snapshot, "reappeared": flag}, fresh=flag is not None)
            except StorageUnavailable as exc:
                logger.warning("no evidence snapshot for match %s of %s: %s", match_id, item["url"], exc)
                self.crawler.stats.inc_value(stats.EVIDENCE_MISSING)
        return records

    def _reappeared(self, match_id: str, item: dict, record: dict) -> dict | None:
        """A noticed copy back after its takedown, or on a new URL of the site: flagged and linked to the notice
        (and snapshotted again, the flag in the record)."""
        flag = self.store.notices.flag_reappearance(match_id, item["url"], item.get("site"), record["source_id"])
        if flag is not None:
            self.crawler.stats.inc_value(stats.MATCHES_REAPPEARED)
            logger.warning("REAPPEARED %s copies source %s again (%s; notice %s)", item["url"], record["source_id"],
                           "back after its takedown" if flag["kind"] == "same_url" else
                           f"on a new URL, earlier {flag['earlier_url']}", ", ".join(map(str, flag["notice_ids"])))
        return flag

    @staticmethod
    def _snapshot(item: dict, record: dict, source_text: str) -> dict:
        """What the match rests on, as fetched: raw bytes, the HTTP exchange, final URL, text and the passages."""
        text = item["text"]
        passages = [{"suspect_span": list(sus), "source_span": list(src), "suspect_text": text[sus[0]:sus[1]],
                     "source_text": source_text[src[0]:src[1]]}
                    for sus, src in zip(record["suspect_spans"], record["source_spans"])]
        return {**{k: record.get(k) for k in ("suspect_url", "source_id", "source_title", "score", "methods",
                                               "suspect_spans", "source_spans")},
                "raw": item.get("body") or b"", "headers": item.get("headers") or {}, "status": item.get("status"),
                "fetched": item.get("fetched"), "final_url": item["url"], "text": text, "passages": passages,
                "exchange": item.get("exchange")}

    async def process_item(self, item: Any) -> Any:
        """Record matches of this page against the source library; the item always passes on."""
        a = ItemAdapter(item)
        if not a.get("text") or self._library_empty():
            return item
        fields = {k: a.get(k) for k in ("url", "page_id", "site", "title", "fetched", "text", "body", "headers",
                                        "status", "exchange")}
        records = await run_blocking(self.crawler, self._matches, fields)
        if records:
            a["matches"] = [{"source_id": r["source_id"], "score": r["score"], "match_id": r.get("match_id")}
                            for r in records]
            self.crawler.stats.inc_value(stats.MATCHED)
            self.crawler.stats.inc_value(stats.MATCHES, len(records))
            for r in records:
                logger.info("match: %s copies source %s (score %.2f)", a.get("url"), r["source_id"], r["score"])
        return item
