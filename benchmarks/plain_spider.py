"""The crawl benchmark's baseline: a plain Scrapy spider calling trafilatura.extract on every page.

    python -m benchmarks.plain_spider START_URL[,START_URL...] REPORT.json

Run as its own subprocess by benchmarks/bench_crawl.py; it imports only Scrapy (and trafilatura on the first
page), so its start-up is a plain spider's, comparable with `scrapy crawl news`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

import scrapy

# the settings both the plain spider and the product crawls get (bench_crawl.BASE adds the product's own)
PLAIN_SETTINGS = {"AUTOTHROTTLE_ENABLED": "0", "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "16",
                  "CONCURRENT_REQUESTS_PER_DOMAIN": "16", "ROBOTSTXT_OBEY": "0", "LOG_LEVEL": "WARNING",
                  "DEPTH_LIMIT": "0"}


class PlainSpider(scrapy.Spider):
    """The baseline: what a plain Scrapy spider does on this site -- trafilatura.extract on every page,
    every same-host link followed (the product's spider follows the same links)."""

    name = "plain"

    def __init__(self, start_url: str = "", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = start_url.split(",")
        self.hosts = {urlsplit(u).netloc for u in self.start_urls}

    def parse(self, response, **kwargs):
        """Extract the article text, then follow the page's links on the same host."""
        import trafilatura

        text = trafilatura.extract(response.text, url=response.url)
        if text:
            yield {"url": response.url, "chars": len(text)}
        for href in response.xpath("//a/@href").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc in self.hosts:
                yield scrapy.Request(url, self.parse)


def plain_crawl(start_url: str, report: str) -> int:
    """Run PlainSpider in this process (called as `--plain URL REPORT` in a subprocess); write its numbers."""
    from scrapy.crawler import CrawlerProcess

    settings = {k: (int(v) if v.isdigit() else v) for k, v in PLAIN_SETTINGS.items()}
    settings.update({"TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "WARNING"})
    process = CrawlerProcess(settings, install_root_handler=False)
    crawler = process.create_crawler(PlainSpider)
    process.crawl(crawler, start_url=start_url)
    process.start()
    st = crawler.stats.get_stats()
    Path(report).write_text(json.dumps({
        "responses": st.get("response_received_count", 0), "elapsed_seconds": st.get("elapsed_time_seconds", 0),
        "counts": {"stored": st.get("item_scraped_count", 0)}}), encoding="utf-8")
    return 0



if __name__ == "__main__":
    sys.exit(plain_crawl(sys.argv[1], sys.argv[2]))
