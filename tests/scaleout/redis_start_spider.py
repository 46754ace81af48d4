"""A scrapy-redis RedisSpider with RedisStartMixin, run by test_scaleout_redis_spider.py with `scrapy runspider`."""
import scrapy_redis.spiders

from crawler.distributed import RedisStartMixin


class FromRedis(RedisStartMixin, scrapy_redis.spiders.RedisSpider):
    """Reads its start URLs from the Redis list REDIS_START_URLS_KEY and logs what it fetched."""

    name = "fromredis"
    custom_settings = {"MAX_IDLE_TIME_BEFORE_CLOSE": 2, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "INFO",
                       "REMOTE_CONTROL_ENABLED": False, "TELNETCONSOLE_ENABLED": False}

    def parse(self, response):
        """Log the fetch; the test reads the log."""
        self.logger.info("FETCHED %s", response.url)
