"""DedupPipeline: the crawl's adapter to the one dedup engine (fingerprint.neardup.DedupEngine on Redis)."""
from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter

from fingerprint.neardup import DedupDoc, DedupEngine, Verdict, publish_date
from pipelines import settings as defaults   # every pipeline setting's default, declared once
from pipelines import stats as st
from pipelines.crawl_store import GroupCommit, run_blocking, store_for
from pipelines.drops import DuplicateItem
from pipelines.params import dedup_params
from storage.dedup_index import RedisDedupIndex

#: characters of a rewrite's text kept in its copy record: the admin pairs its sentences with the original's
REWRITE_TEXT_MAX = 200_000


class DedupPipeline:
    """Exact, SimHash or shared-passage copies of a kept page are recorded and dropped (DuplicateItem);
    new pages go on to be stored. The original is the earliest published copy (DedupEngine decides)."""

    def __init__(self, crawler, engine: DedupEngine, index: RedisDedupIndex,
                 batch_ms: float = defaults.ZHDEDUP_STORE_BATCH_MS) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.engine = engine
        self.index = index
        self.store = index.store
        # copy records, batched like page saves
        self.copies = GroupCommit(crawler, self.store.record_duplicates, wait_ms=batch_ms)

    @classmethod
    def from_crawler(cls, crawler) -> "DedupPipeline":
        """The engine with the settings' parameters (pipelines.params) over the shared store's index; copy
        records wait ZHDEDUP_STORE_BATCH_MS (30) before a write, as page saves do."""
        s = crawler.settings
        index = RedisDedupIndex(store_for(crawler))
        trace = s.getbool("ZHDEDUP_TRACE_DECISIONS", defaults.ZHDEDUP_TRACE_DECISIONS)
        return cls(crawler, DedupEngine(dedup_params(s), index, trace), index,
                   s.getfloat("ZHDEDUP_STORE_BATCH_MS", defaults.ZHDEDUP_STORE_BATCH_MS))

    async def process_item(self, item: Any) -> Any:
        """Decide (in a store thread); keep the page, or record the copy and raise DuplicateItem."""
        a = ItemAdapter(item)
        if not a.get("content_hash") or a.get("simhash") is None:
            return item  # fingerprinting switched off: nothing to compare
        doc = DedupDoc(a["page_id"], a.get("text") or "", a["content_hash"], int(a["simhash"]),
                       tuple(a.get("sketch") or ()), publish_date(a.get("published")), a.get("url"))
        verdict, original_url, record = await run_blocking(self.crawler, self._decide, doc, a)
        if not verdict.is_duplicate:
            a["dedup"] = {"kind": "unchanged" if verdict.kind == "unchanged" else "new", "spooled": verdict.spooled}
            if verdict.spooled:
                self.stats.inc_value(st.DEFERRED)
            if verdict.replaced:
                a["dedup"]["replaced"] = verdict.replaced
                self.stats.inc_value(st.REPLACED_ORIGINAL)
            return item
        new_copy = await self.copies.save(record)
        kind = _kind(verdict)
        self.stats.inc_value(st.dropped(kind))
        raise DuplicateItem(kind, verdict.original, original_url, verdict.distance, verdict.coverage, not new_copy)

    def _decide(self, doc: DedupDoc, a: ItemAdapter) -> tuple[Verdict, str, dict | None]:
        """The engine's verdict and, for a copy, the record to keep of it (one thread hand-off)."""
        verdict = self.engine.decide(doc)
        if not verdict.is_duplicate:
            return verdict, "", None
        original_url = self.index.url_of(verdict.original) or f"page {verdict.original}"
        return verdict, original_url, {
            "url": doc.url, "canonical_url": a.get("canonical_url"), "original_id": verdict.original,
            "original_url": original_url, "method": _kind(verdict), "distance": verdict.distance,
            "coverage": round(verdict.coverage, 4) if verdict.coverage is not None else None,
            "sentences": round(verdict.sentences, 4) if verdict.sentences is not None else None,
            "site": a.get("site"), "title": a.get("title"), "fetched": a.get("fetched"),
            "spider": a.get("spider"), "content_hash": doc.content_hash, "simhash": str(doc.simhash),
            **({"text": doc.text[:REWRITE_TEXT_MAX]} if verdict.method == "rewrite" else {})}


def _kind(verdict: Verdict) -> str:
    """How a copy was found, as the store and the stats name it: exact | near | passages | rewrite."""
    return verdict.recorded_as
