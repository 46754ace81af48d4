"""The pipelines' slow starts begun early, in the background: the store (embedded servers, indexes, spool
replay) and the worker processes, called by crawler.early_start.EarlyStart before Scrapy builds the rest of
the crawl; the workers' forkserver sooner still, by the crawl command once it has its settings. Settings a
pipeline would refuse (CrawlCannotStart) start nothing here, so a bad setting still ends the crawl before any
server starts; the pipeline reports it as before."""
from __future__ import annotations

import logging
from typing import Any, Callable

from pipelines._worker_tasks import warm_up_extract, warm_up_fingerprint
from pipelines._workers import pool_for, pool_of, start_forkserver, worker_count
from pipelines.crawl_store import open_early
from pipelines.errors import CrawlCannotStart
from pipelines.params import dedup_params

logger = logging.getLogger(__name__)
STORE_PIPELINES = ("pipelines.dedup.DedupPipeline", "pipelines.store.StorePipeline",
                   "pipelines.infringement.InfringementPipeline")
WORKER_PIPELINES: dict[str, tuple[str, Callable[[], None]]] = {
    "pipelines.extract.ExtractPipeline": ("ZHDEDUP_EXTRACT_WORKERS", warm_up_extract),
    "pipelines.fingerprint.FingerprintPipeline": ("ZHDEDUP_FINGERPRINT_WORKERS", warm_up_fingerprint)}


def start_early(crawler: Any, pipelines: set[str]) -> None:
    """Open the store (when one of `pipelines` uses it) and start the worker processes (for those that use
    them), both in background threads; nothing when a setting they read is bad."""
    warm_ups = _warm_ups(crawler.settings, pipelines)
    if warm_ups is None:
        return
    if pipelines.intersection(STORE_PIPELINES):
        open_early(crawler)
    if warm_ups:
        pool_for(crawler).start_soon(*warm_ups)


def start_forkserver_early(settings: Any, pipelines: set[str]) -> None:
    """Start the workers' forkserver (which warms their code) as soon as the command has its settings, when
    `pipelines` will use workers and the settings they read are good; the spider's own settings may still
    turn the workers off, and an idle forkserver exits with the crawl."""
    if _warm_ups(settings, pipelines):
        start_forkserver()


def _warm_ups(settings: Any, pipelines: set[str]) -> list[Callable[[], None]] | None:
    """The warm-ups of the worker pipelines among `pipelines` that run workers; None when a setting the early
    starts read is bad (the pipeline then reports it, before anything has started)."""
    try:
        dedup_params(settings)
        return [warm_up for path, (name, warm_up) in WORKER_PIPELINES.items()
                if path in pipelines and worker_count(settings, name) > 0]
    except CrawlCannotStart:
        return None


def stop_workers(crawler: Any) -> None:
    """Stop the crawler's worker processes, if it has any, once the crawl is over however it ended: a crawl
    that could not start sends no spider_closed, and a worker still starting when the process exits prints a
    traceback (its parent's state gone)."""
    pool = pool_of(crawler)
    if pool is not None:
        pool.close()
