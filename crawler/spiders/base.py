"""What both spiders share: building items, recording why a request failed, link filtering."""
from __future__ import annotations

import re
from typing import Any, Iterable

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler import pagekind
from crawler.items import PageItem, header_dict, utc_now
from crawler.urls import canonical_claim, canonical_url, host_key, page_canonical_url, page_id, strip_tracking

STAT = "zhdedup"


def failure_reason(failure: Failure) -> str:
    """A short, stable reason for a failed request, used as a stats key suffix."""
    exc = failure.value
    if failure.check(HttpError):
        return f"http_{exc.response.status}"
    if failure.check(IgnoreRequest):
        msg = str(exc).lower()
        if "redirect" in msg:
            return "redirect_loop"
        if "robots" in msg:
            return "robots_txt"
        return "ignored"
    name = type(exc).__name__
    if "Cancelled" in name or "maxsize" in str(exc).lower():
        return "too_large"
    if "Timeout" in name:
        return "timeout"
    if "Refused" in name or "Connection" in name:
        return "connection"
    if "Resolve" in name or "DNS" in name:
        return "dns"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class PageSpider(scrapy.Spider):
    """Base spider: item construction, failure accounting and same-host link extraction."""

    kind = "page"

    def count(self, key: str, n: int = 1) -> None:
        """Increment a zhdedup/* stat."""
        if self.crawler is not None:
            self.crawler.stats.inc_value(f"{STAT}/{key}", n)

    def fail(self, url: str, reason: str, detail: str = "") -> None:
        """Record a page we could not use, with a reason that shows up in the stats and the log."""
        self.count(f"failed/{reason}")
        self.logger.info("skipped %s: %s%s", url, reason, f" ({detail})" if detail else "")

    def on_error(self, failure: Failure) -> None:
        """Errback: count the failure by reason; optional requests (sitemap guesses) fail quietly."""
        request = failure.request
        if request.meta.get("optional"):
            return
        first = (request.meta.get("redirect_urls") or [request.url])[0]
        self.fail(first, failure_reason(failure), str(failure.value)[:200])

    def usable(self, response: Response) -> bool:
        """Count the fetch; reject non-text and binary bodies before any content work."""
        self.count("fetched")
        if not isinstance(response, TextResponse):
            self.fail(response.url, "not_html", response.headers.get("Content-Type", b"").decode("latin-1"))
            return False
        binary = pagekind.binary_kind(response.body)
        if binary:
            self.fail(response.url, "binary", f"{binary} body served as "
                      f"{response.headers.get('Content-Type', b'?').decode('latin-1')}")
            return False
        return True

    def make_item(self, response: Response | None, site: str, body: bytes | None = None,
                  headers: dict[str, str] | None = None, url: str | None = None,
                  canonical: str | None = None, status: int | None = None, **extra: Any) -> PageItem:
        """A PageItem for a fetched page, or for a synthetic joined document (body/headers/url given)."""
        if response is not None:
            url, canonical, status = response.url, page_canonical_url(response), response.status
            body = response.body if body is None else body
            headers = header_dict(response.headers) if headers is None else headers
            extra.setdefault("canonical_claim", canonical_claim(response))
        item = PageItem(url=url, canonical_url=canonical, page_id=page_id(canonical), site=site,
                        spider=self.name, kind=self.kind, body=body, headers=headers or {},
                        status=status, fetched=utc_now())
        item.update({k: v for k, v in extra.items() if v is not None})
        self.count("items")
        return item

    @staticmethod
    def links(response: TextResponse, hosts: set[str] | None = None) -> list[tuple[str, str]]:
        """(url, link text) of the page's <a href> links in document order, tracking stripped,
        limited to `hosts` when given, files and non-http links dropped, first occurrence kept."""
        seen: set[str] = set()
        out = []
        for a in response.xpath("//a[@href]"):
            href = a.attrib.get("href", "").strip()
            if not href or href.startswith(("javascript:", "mailto:", "tel:", "#")):
                continue
            url = strip_tracking(response.urljoin(href))
            if not url.startswith(("http://", "https://")) or pagekind.skippable_link(url):
                continue
            if hosts is not None and host_key(url) not in hosts:
                continue
            if url not in seen:
                seen.add(url)
                out.append((url, " ".join(a.xpath(".//text()").getall()).strip()))
        return out


def site_name(url: str) -> str:
    """Default site name for a page: its host[:port] without www."""
    return host_key(url)


def unique(urls: Iterable[str]) -> list[str]:
    """Canonical-unique URLs in their original order."""
    seen: set[str] = set()
    out = []
    for url in urls:
        key = canonical_url(url)
        if key not in seen:
            seen.add(key)
            out.append(url)
    return out
