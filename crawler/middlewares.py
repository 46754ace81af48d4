"""Middlewares of the project: crawl limits that say what they cut, and robots.txt read once a site."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.depth import DepthMiddleware

from crawler.outcomes import page_outcome
from pipelines import stats


class RecordedDepthMiddleware(DepthMiddleware):
    """Scrapy's DepthMiddleware, but every link it drops for DEPTH_LIMIT gets an outcome (skipped,
    depth_limit) and a count, so "why is this story not in the store?" has an answer."""

    def get_processed_request(self, request: Any, response: Any) -> Any:
        """Scrapy's depth rule; a dropped link is recorded instead of vanishing."""
        kept = super().get_processed_request(request, response)
        if kept is None and response is not None:
            self.stats.inc_value(stats.skipped("depth_limit"))
            self.crawler.signals.send_catch_log(
                page_outcome, url=request.url, outcome="skipped", reason="depth_limit",
                detail=f"link from {response.url} at depth {request.meta.get('depth')} > DEPTH_LIMIT={self.maxdepth}",
                fetched=False)
        return kept


class RobotsTxtReuse:
    """Downloader middleware: the spider's own request for a site's robots.txt (it reads the Sitemap: lines)
    is answered with the robots.txt Scrapy's RobotsTxtMiddleware fetched moments before, instead of a second
    download of the same file (one request and one politeness delay less per site). Off without
    ROBOTSTXT_OBEY: nothing fetches robots.txt then but the spider."""

    MAX_BYTES = 512 * 1024   # a robots.txt kept for the spider; Google reads at most 500 KiB of one
    MAX_SITES = 256          # kept at once: a spider that never asks (sitemaps off) holds no more than these

    def __init__(self, max_sites: int = MAX_SITES) -> None:
        self.fetched: OrderedDict[str, Any] = OrderedDict()
        self.max_sites = max_sites

    @classmethod
    def from_crawler(cls, crawler: Any) -> "RobotsTxtReuse":
        """NotConfigured unless ROBOTSTXT_OBEY (only then does Scrapy fetch robots.txt itself)."""
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        return cls()

    def process_request(self, request: Any, spider: Any = None) -> Any:
        """The fetched robots.txt for a request of the spider's to it (passed RobotsTxtMiddleware, so the
        middleware's own fetch of that site is over); None (download it) for everything else."""
        if request.meta.get("dont_obey_robotstxt") or not _is_robots(request.url):
            return None
        response = self.fetched.pop(request.url, None)   # the spider asks once a site: not kept after
        return response.replace(request=request, flags=[*response.flags, "reused"]) if response else None

    def process_response(self, request: Any, response: Any, spider: Any = None) -> Any:
        """Keep the robots.txt RobotsTxtMiddleware fetched (its request carries dont_obey_robotstxt), whatever
        its status: a 404 answers the spider as a second download would."""
        if request.meta.get("dont_obey_robotstxt") and _is_robots(request.url) \
                and len(response.body) <= self.MAX_BYTES:
            self.fetched[request.url] = response
            if len(self.fetched) > self.max_sites:   # the oldest is downloaded again if the spider asks after all
                self.fetched.popitem(last=False)
        return response


def _is_robots(url: str) -> bool:
    """Whether url is a site's /robots.txt (no query)."""
    return urlsplit(url).path == "/robots.txt" and "?" not in url
