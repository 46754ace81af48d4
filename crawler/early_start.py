"""EarlyStart: the crawl's slow starts begun the moment Scrapy builds its extensions, in the background.

Without it the store opened (embedded servers started: ~0.7 s on a fresh var/) when the first pipeline was
built, after Scrapy's middlewares, and the worker processes started when the spider opened, after the store;
a one-page crawl waited for each in turn. Now both start before Scrapy imports and builds the rest of the
crawl, and whoever needs them first waits for what is left (docs/performance.md, "Fixed cost").
"""
from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger(__name__)
STORE_PIPELINES = ("pipelines.dedup.DedupPipeline", "pipelines.store.StorePipeline",
                   "pipelines.infringement.InfringementPipeline")
WORKER_PIPELINES = {"pipelines.extract.ExtractPipeline": "ZHDEDUP_EXTRACT_WORKERS",
                    "pipelines.fingerprint.FingerprintPipeline": "ZHDEDUP_FINGERPRINT_WORKERS"}


def enabled_pipelines(settings: Any) -> set[str]:
    """Dotted paths of the item pipelines this crawl runs."""
    from scrapy.utils.conf import build_component_list

    paths = set()
    for component in build_component_list(settings.getwithbase("ITEM_PIPELINES")):
        paths.add(component if isinstance(component, str) else f"{component.__module__}.{component.__qualname__}")
    return paths


class EarlyStart:
    """Extension (built first): opens the store in a background thread when a pipeline will use it, and
    starts the worker processes the extraction and fingerprint pipelines will use."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> "EarlyStart":
        """Start both for this crawler (its settings are final by now)."""
        pipelines = enabled_pipelines(crawler.settings)
        if pipelines.intersection(STORE_PIPELINES):
            from pipelines.crawl_store import open_early

            open_early(crawler)
        start_workers(crawler, [path for path in WORKER_PIPELINES if path in pipelines])
        return cls()


def start_workers(crawler: Any, pipelines: list[str]) -> None:
    """Create the crawler's worker pool and warm it up for these pipelines in a background thread (the
    forkserver's start blocks its caller); a bad workers setting is left for the pipeline to report."""
    from pipelines._worker_tasks import warm_up_extract, warm_up_fingerprint
    from pipelines._workers import pool_for, worker_count
    from pipelines.errors import CrawlCannotStart

    warm_up = {"pipelines.extract.ExtractPipeline": warm_up_extract,
               "pipelines.fingerprint.FingerprintPipeline": warm_up_fingerprint}
    try:
        wanted = [warm_up[path] for path in pipelines if worker_count(crawler.settings, WORKER_PIPELINES[path]) > 0]
    except CrawlCannotStart:
        return
    if wanted:
        pool = pool_for(crawler)
        threading.Thread(target=_warm, args=(pool, wanted), name="zhdedup-workers-start", daemon=True).start()


def _warm(pool: Any, warm_ups: list) -> None:
    """Start the pool's processes with each warm-up (the pipelines' own start then finds them started)."""
    try:
        for warm_up in warm_ups:
            pool.start(warm_up)
    except Exception as exc:  # only a head start: the pipelines start the pool themselves
        logger.debug("early start of the worker processes failed: %s", exc)


class RemoteControl:
    """Scrapy's remote control (off unless REMOTE_CONTROL_ENABLED), without importing aiohttp (~0.3 s of
    start-up) when it is off: Scrapy imports an extension's module before asking whether it is enabled."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> Any:
        """Scrapy's extension when enabled; NotConfigured otherwise (as Scrapy's own says)."""
        from scrapy.exceptions import NotConfigured

        if not crawler.settings.getbool("REMOTE_CONTROL_ENABLED"):
            raise NotConfigured
        from scrapy.extensions.remote_control import RemoteControl as ScrapyRemoteControl

        return ScrapyRemoteControl.from_crawler(crawler)
