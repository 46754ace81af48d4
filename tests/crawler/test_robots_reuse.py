"""RobotsTxtReuse keeps a bounded number of fetched robots.txt files: a crawl whose spider never asks for
them (sitemaps off) over many sites does not hold every site's file to the end."""
from __future__ import annotations

from scrapy.http import Request, TextResponse

from crawler.middlewares import RobotsTxtReuse


def _fetched(middleware: RobotsTxtReuse, site: int) -> None:
    url = f"http://127.0.0.1:{8000 + site}/robots.txt"
    request = Request(url, meta={"dont_obey_robotstxt": True})
    middleware.process_response(request, TextResponse(url, body=b"User-agent: *\nDisallow:\n", request=request))


def test_only_the_latest_sites_robots_files_are_kept():
    middleware = RobotsTxtReuse(max_sites=3)
    for site in range(10):
        _fetched(middleware, site)
    assert list(middleware.fetched) == [f"http://127.0.0.1:{8000 + s}/robots.txt" for s in (7, 8, 9)]


def test_the_spiders_request_gets_the_kept_file_once_and_an_evicted_one_is_downloaded():
    middleware = RobotsTxtReuse(max_sites=3)
    for site in range(4):
        _fetched(middleware, site)
    kept = middleware.process_request(Request("http://127.0.0.1:8003/robots.txt"))
    assert kept is not None and "reused" in kept.flags and b"Disallow" in kept.body
    assert middleware.process_request(Request("http://127.0.0.1:8003/robots.txt")) is None   # once
    assert middleware.process_request(Request("http://127.0.0.1:8000/robots.txt")) is None   # evicted: download
