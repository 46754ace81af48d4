"""One shared store per crawler process: opened on first use, run recorded, closed when the spider closes."""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from scrapy import signals

from pipelines import stats
from pipelines.params import dedup_params

logger = logging.getLogger(__name__)
T = TypeVar("T")
_ATTR = "_zhdedup_store"


def store_for(crawler) -> Any:
    """The crawler's Store, opened on the first call (config: env + the ZHDEDUP_STORE setting)."""
    holder = getattr(crawler, _ATTR, None)
    if holder is None:
        holder = _StoreHolder(crawler)
        setattr(crawler, _ATTR, holder)
    return holder.store


def _holder(crawler) -> "_StoreHolder":
    store_for(crawler)
    return getattr(crawler, _ATTR)


def run_blocking(crawler, fn: Callable[..., T], *args: Any, **kwargs: Any) -> "asyncio.Future[T]":
    """Run a blocking store call in the store's I/O threads, so the reactor keeps downloading."""
    return asyncio.get_running_loop().run_in_executor(_holder(crawler).executor, lambda: fn(*args, **kwargs))


def submit(crawler, fn: Callable[..., T], *args: Any, wait: bool = False) -> None:
    """Hand a blocking store call to the store's I/O threads from a signal handler (no event loop needed);
    with wait, return once it has run (in this thread when the threads are already shut down)."""
    try:
        future = _holder(crawler).executor.submit(fn, *args)
    except RuntimeError:  # executor shut down: the crawl is closing
        fn(*args)
        return
    if wait:
        future.result()


def run_id_of(crawler) -> str | None:
    """The id of this crawler's run record (None before the spider opened, or when it could not be written)."""
    holder = getattr(crawler, _ATTR, None)
    return holder.run_id if holder is not None else None


def stat_counts(crawler) -> dict[str, Any]:
    """The zhdedup/* stats without the prefix, for the run record."""
    return stats.ours(crawler.stats)


class _StoreHolder:
    """Owns the store of one crawler and its lifecycle (start_run on open, finish_run and close on close)."""

    def __init__(self, crawler) -> None:
        from storage import StorageError, StoreConfig, open_store

        self.crawler = crawler
        overrides = dict(crawler.settings.getdict("ZHDEDUP_STORE"))
        overrides["simhash_k"] = dedup_params(crawler.settings).k  # the index layout serves exactly this k
        try:
            self.store = open_store(StoreConfig.from_env(**overrides))
        except StorageError as exc:
            # One clear message naming the server or path and the fix, not a stack trace; exit code 2.
            # Nothing has been fetched or written yet, so stopping here loses nothing.
            logger.critical("cannot open the store: %s", exc)
            raise SystemExit(2) from None
        self.executor = ThreadPoolExecutor(max_workers=crawler.settings.getint("ZHDEDUP_STORE_THREADS", 4),
                                           thread_name_prefix="zhdedup-store")
        self.run_id: Any = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    def spider_opened(self, spider) -> None:
        """Record the start of a run (which spider, when)."""
        if self.run_id is not None:
            return
        try:
            self.run_id = self.store.start_run(spider.name)
        except Exception as exc:  # the run record is bookkeeping: never stop a crawl for it
            logger.warning("could not record the run start: %s", exc)

    def spider_closed(self, spider, reason: str = "") -> None:
        """Record the run's counts, then close the store (pending spool entries stay on disk)."""
        self.executor.shutdown(wait=True)
        try:
            if self.run_id is not None:
                counts = stat_counts(self.crawler)
                counts["finish_reason"] = reason
                self.store.finish_run(self.run_id, counts)
        except Exception as exc:
            logger.warning("could not record the run end: %s", exc)
        finally:
            self.store.close()
            if getattr(self.crawler, _ATTR, None) is self:
                delattr(self.crawler, _ATTR)
