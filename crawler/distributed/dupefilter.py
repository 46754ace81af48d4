"""URL dedup of a shared crawl: scrapy-redis's RFPDupeFilter with the crawler's REQUEST_FINGERPRINTER."""
from __future__ import annotations

from typing import Any

from scrapy.http import Request
from scrapy_redis.dupefilter import RFPDupeFilter


class FingerprintDupeFilter(RFPDupeFilter):
    """scrapy-redis RFPDupeFilter using the crawler's REQUEST_FINGERPRINTER (canonical URL, no tracking)."""

    fingerprinter: Any = None

    @classmethod
    def from_spider(cls, spider: Any) -> "FingerprintDupeFilter":
        """Key from SCHEDULER_DUPEFILTER_KEY; fingerprints from crawler.request_fingerprinter."""
        df = super().from_spider(spider)
        df.fingerprinter = spider.crawler.request_fingerprinter
        return df

    def request_fingerprint(self, request: Request) -> str:
        """Hex of the project fingerprint (scrapy-redis's own ignores REQUEST_FINGERPRINTER_CLASS)."""
        if self.fingerprinter is None:
            return super().request_fingerprint(request)
        return self.fingerprinter.fingerprint(request).hex()
