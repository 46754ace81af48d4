"""FingerprintPipeline: SimHash, exact-content hash, pinyin DNA and passage sketch of the extracted text."""
from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter

from pipelines import stats
from pipelines._worker_tasks import compute
from pipelines._worker_tasks import warm_up_fingerprint as _warm_up
from pipelines._workers import WorkerPool, pool_for, worker_count
from pipelines.drops import SkippedItem

logger = logging.getLogger(__name__)


class FingerprintPipeline:
    """Adds simhash, content_hash, dna, sketch, fp_version and length; drops items without text.

    ZHDEDUP_FINGERPRINT_WORKERS = N > 0 fingerprints in worker processes (shared with extraction), so
    tokenizing runs on another core while this one downloads and extracts; 0 fingerprints inline.
    """

    def __init__(self, stats=None, pool: WorkerPool | None = None) -> None:
        self.stats = stats
        self.pool = pool

    @classmethod
    def from_crawler(cls, crawler) -> "FingerprintPipeline":
        """Read ZHDEDUP_FINGERPRINT_WORKERS (default auto: see pipelines._workers)."""
        workers = worker_count(crawler.settings, "ZHDEDUP_FINGERPRINT_WORKERS")
        return cls(crawler.stats, pool_for(crawler) if workers > 0 else None)

    def open_spider(self, spider=None) -> None:
        """Load the tokenizer and IDF tables now (seconds, once) rather than on the first page: here, or in
        each worker process as it starts (the first page waits for that, not the spider's first requests)."""
        if self.pool is None:
            _warm_up()
        else:
            self.pool.start_soon(_warm_up)

    def close_spider(self, spider=None) -> None:
        """Stop the worker processes once the last item is through (see ExtractPipeline.close_spider)."""
        if self.pool is not None:
            self.pool.close()

    async def process_item(self, item: Any) -> Any:
        """Fingerprint item['text'] (inline or in a worker)."""
        adapter = ItemAdapter(item)
        text = adapter.get("text")
        if not text or not str(text).strip():
            raise SkippedItem("no_text", f"no text to fingerprint: {adapter.get('url')}")
        self._inc(stats.EXTRACTED)
        fields = await self.pool.run(compute, text) if self.pool is not None else compute(text)
        for key, value in fields.items():
            adapter[key] = value
        return item

    def _inc(self, key: str) -> None:
        """Increment a stat (pipelines.stats names)."""
        if self.stats is not None:
            self.stats.inc_value(key)
