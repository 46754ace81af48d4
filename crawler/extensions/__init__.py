"""The crawl's Scrapy extensions, one module each (as scrapy/extensions/ does): `summary.CrawlSummary` (drop
reasons, the closing summary, the JSON report) and `storage_guard.StorageGuard` (a spool that cannot be written
stops the crawl). EXTENSIONS name them by these re-exports (``crawler.extensions.CrawlSummary``)."""
from .storage_guard import StorageGuard
from .summary import CrawlSummary, reason_key

__all__ = ["CrawlSummary", "StorageGuard", "reason_key"]
