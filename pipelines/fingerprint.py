"""FingerprintPipeline: SimHash, exact-content hash, pinyin DNA and passage sketch of the extracted text."""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals

from pipelines import stats
from pipelines.drops import SkippedItem

logger = logging.getLogger(__name__)


def compute(text: str) -> dict[str, Any]:
    """Fingerprints of one text as plain item fields (module-level so worker processes can run it)."""
    from fingerprint import fingerprint_text
    from fingerprint.neardup import sketch

    fp = fingerprint_text(text)
    return {"simhash": int(fp.simhash), "content_hash": fp.content_hash, "dna": list(fp.dna),
            "sketch": sketch(text), "fp_version": fp.version, "length": fp.length}


def _warm_up() -> None:
    """Load the tokenizer and tables in a worker before the first page arrives."""
    compute("预热分词器。")


class FingerprintPipeline:
    """Adds simhash, content_hash, dna, sketch, fp_version and length; drops items without text.

    ZHDEDUP_FINGERPRINT_WORKERS = N > 0 fingerprints in N worker processes, so tokenizing runs on
    another core while this one downloads and extracts; 0 fingerprints inline.
    """

    def __init__(self, stats=None, workers: int = 0) -> None:
        self.stats = stats
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None

    @classmethod
    def from_crawler(cls, crawler) -> "FingerprintPipeline":
        """Read ZHDEDUP_FINGERPRINT_WORKERS (default 0: inline)."""
        pipe = cls(crawler.stats, crawler.settings.getint("ZHDEDUP_FINGERPRINT_WORKERS", 0))
        crawler.signals.connect(pipe.close, signal=signals.spider_closed)
        return pipe

    def open_spider(self, spider=None) -> None:
        """Load the tokenizer and IDF tables now (seconds, once) rather than on the first page;
        start and warm up the worker processes when there are any."""
        if self.workers <= 0:
            _warm_up()
        else:
            self.pool = ProcessPoolExecutor(max_workers=self.workers)
            for _ in range(self.workers):
                self.pool.submit(_warm_up)

    def close(self, spider=None) -> None:
        """Stop the worker processes."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    async def process_item(self, item: Any) -> Any:
        """Fingerprint item['text'] (inline or in a worker)."""
        adapter = ItemAdapter(item)
        text = adapter.get("text")
        if not text or not str(text).strip():
            raise SkippedItem("no_text", f"no text to fingerprint: {adapter.get('url')}")
        self._inc(stats.EXTRACTED)
        if self.pool is not None:
            fields = await asyncio.get_running_loop().run_in_executor(self.pool, compute, text)
        else:
            fields = compute(text)
        for key, value in fields.items():
            adapter[key] = value
        return item

    def _inc(self, key: str) -> None:
        """Increment a stat (pipelines.stats names)."""
        if self.stats is not None:
            self.stats.inc_value(key)
