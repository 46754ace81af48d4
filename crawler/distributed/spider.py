"""`RedisStartMixin`: scrapy-redis's RedisSpider on Scrapy 2.13+, reading its start URLs at start."""
from __future__ import annotations

import time
from typing import Any


class RedisStartMixin:
    """Put before scrapy_redis.spiders.RedisMixin/RedisSpider: Scrapy 2.13+ never calls start_requests(),
    so RedisSpider would read its start URLs only at the first idle signal; this reads them at start."""

    async def start(self) -> Any:
        """The first batch of start URLs from the spider's redis_key, as RedisMixin.start_requests did."""
        for request in self.next_requests():  # type: ignore[attr-defined]
            yield request

    def setup_redis(self, crawler: Any = None) -> None:
        """RedisMixin keeps the idle clock in a class attribute set at import; start it per spider."""
        super().setup_redis(crawler)  # type: ignore[misc]
        self.spider_idle_start_time = int(time.time())
