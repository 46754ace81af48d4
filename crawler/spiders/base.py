"""What both spiders share: building items, recording why a request failed, link filtering."""
from __future__ import annotations

import codecs
import re
from dataclasses import replace
from typing import Any, Iterable, TypeVar
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, JsonResponse, Response, TextResponse, XmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.response import get_base_url
from lxml import etree
from twisted.python.failure import Failure

from extract.dom import load
from extract.encoding import choose_encoding
from extract.pagekind import NOT_PAGE_LINKS, PageFacts, page_facts
from extract.sniff import binary_kind

from crawler.items import PageItem, exchange_of, header_dict, utc_now
from crawler.outcomes import page_outcome
from crawler.urls import LINKS, canonical_pair, canonical_url, host_key, page_id, scrapy_canonical_href
from pipelines import stats
from pipelines.extract import facts_workers, page_facts_of

T = TypeVar("T")
SCRAPY_ARGUMENTS = {"name", "_job"}  # spider arguments Scrapy and scrapyd pass themselves
YES_NO = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


class SpiderArgumentError(ValueError):
    """A `-a NAME=VALUE` the spider cannot use; the message names it and the accepted values."""


def split_argument(name: str, value: str | None) -> list[str]:
    """Comma-separated spider argument to a list; an argument given empty is a mistake, not "none"."""
    items = [v.strip() for v in (value or "").split(",") if v.strip()]
    if value is not None and not items:
        raise SpiderArgumentError(f"-a {name}= is empty; give a value or leave the argument out")
    return items


def check_urls(name: str, urls: list[str]) -> list[str]:
    """Reject anything that is not an absolute http(s) URL, naming the argument."""
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SpiderArgumentError(f"-a {name}: not an http(s) URL: {url!r} "
                                      f"(give full URLs such as https://news.example.cn/)")
    return urls


def yes_no(name: str, value: str) -> bool:
    """A boolean spider argument (1/0, true/false, yes/no, on/off)."""
    try:
        return YES_NO[value.strip().lower()]
    except KeyError:
        raise SpiderArgumentError(f"-a {name}={value}: expected 1 or 0 (true/false, yes/no)") from None


NOT_FETCHED = {"robots_txt", "offsite"}  # requests stopped before the download


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
        if "offsite" in msg:
            return "offsite"
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
    arguments: dict[str, str] = {}  # accepted -a NAME -> its value, for the one-line usage error

    @classmethod
    def usage(cls) -> str:
        """The accepted arguments on one line: `-a start_urls=URL[,URL...], -a profile=NAME...`."""
        return ", ".join(f"-a {name}={value}" for name, value in cls.arguments.items())

    @classmethod
    def reject_unknown(cls, kwargs: dict[str, Any]) -> None:
        """Unknown -a arguments end the crawl: a misspelt one would otherwise be silently ignored."""
        unknown = sorted(set(kwargs) - set(cls.arguments) - SCRAPY_ARGUMENTS)
        if unknown:
            given = ", ".join(f"-a {k}=" for k in unknown)
            raise SpiderArgumentError(f"unknown argument {given} for spider {cls.name!r}; "
                                      f"it accepts {cls.usage()}")

    def count(self, key: str, n: int = 1) -> None:
        """Increment a stat (names in crawler.stats)."""
        if self.crawler is not None:
            self.crawler.stats.inc_value(key, n)

    def outcome(self, url: str, outcome: str, reason: str, detail: str = "", fetched: bool = True) -> None:
        """Say what became of a URL that will not become an item (crawler.outcomes records it)."""
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(page_outcome, url=url, outcome=outcome, reason=reason,
                                                detail=detail, fetched=fetched)

    def fail(self, url: str, reason: str, detail: str = "") -> None:
        """A fetched page we could not use: counted by reason, logged, and recorded as failed."""
        self.count(stats.failed(reason))
        self.logger.info("failed %s: %s%s", url, reason, f" ({detail})" if detail else "")
        self.outcome(url, "failed", reason, detail)

    def skip(self, url: str, reason: str, detail: str = "", fetched: bool = True) -> None:
        """A page left out on purpose (list page, soft 404, binary, robots.txt...): counted and recorded."""
        self.count(stats.skipped(reason))
        self.logger.debug("skipped %s: %s%s", url, reason, f" ({detail})" if detail else "")
        self.outcome(url, "skipped", reason, detail, fetched)

    def on_error(self, failure: Failure, prefix: str = "", note: str = "") -> None:
        """Errback: a request that got no usable response; optional ones (sitemap guesses) are skipped."""
        request = failure.request
        first = (request.meta.get("redirect_urls") or [request.url])[0]
        reason, detail = prefix + failure_reason(failure), note or str(failure.value)[:200]
        if reason.removeprefix(prefix) in NOT_FETCHED:
            self.skip(first, reason, detail, fetched=False)
            return
        self.count(stats.FETCH_FAILED)
        if request.meta.get("optional"):
            self.skip(first, f"optional_{reason}", detail)
        else:
            self.fail(first, reason, detail)

    def usable(self, response: Response) -> bool:
        """Count the fetch; reject non-text and binary bodies before any content work."""
        self.count(stats.FETCHED)
        if not isinstance(response, TextResponse):
            self.skip(response.url, "not_html", response.headers.get("Content-Type", b"").decode("latin-1"))
            return False
        binary = binary_kind(response.body)
        if binary:
            self.skip(response.url, "binary", f"{binary} body served as "
                      f"{response.headers.get('Content-Type', b'?').decode('latin-1')}")
            return False
        return True

    def make_item(self, response: Response | None, site: str, body: bytes | None = None,
                  headers: dict[str, str] | None = None, url: str | None = None,
                  canonical: str | None = None, status: int | None = None, facts: PageFacts | None = None,
                  **extra: Any) -> PageItem:
        """A PageItem for a fetched page (its canonical link read from its facts when given), or for a synthetic
        joined document (body/headers/url given)."""
        if response is not None:
            (canonical, claim), url, status = canonical_pair(response, facts), response.url, response.status
            body = response.body if body is None else body
            headers = header_dict(response.headers) if headers is None else headers
            extra.setdefault("canonical_claim", claim)
            extra.setdefault("exchange", exchange_of(response))
        item = PageItem(url=url, canonical_url=canonical, page_id=page_id(canonical), site=site,
                        spider=self.name, kind=self.kind, body=body, headers=headers or {},
                        status=status, fetched=utc_now())
        item.update({k: v for k, v in extra.items() if v is not None})
        self.count(stats.ITEMS)
        return item

    @staticmethod
    def links(response: TextResponse, hosts: set[str] | None = None, text: bool = True) -> list[tuple[str, str]]:
        """(url, link text) of the page's <a href> links in document order, tracking stripped,
        limited to `hosts` when given, files and non-http links dropped, first occurrence kept; the text
        is "" when not asked for (the news spider follows by URL: the text cost a query per link)."""
        anchors = (((a.get("href") or ""), a) for a in response.selector.root.xpath("//a[@href]"))
        return [(url, " ".join(a.xpath(".//text()")).strip() if text else "")
                for url, a in crawlable(get_base_url(response), anchors, hosts)]

    async def facts_of(self, response: TextResponse, shape: bool, feeds: bool = True) -> PageFacts | None:
        """The page's heading, links, canonical link and (when asked) feeds and shape, or None when it cannot be
        parsed: measured in the crawl's worker processes while this process is the busy one (small pages: the
        event loop fetching for every site then spends no time parsing), else here; from the tree root_of gives."""
        try:
            scrapys = same_charset(response)
        except (ValueError, LookupError):
            return None
        workers = facts_workers(self.crawler)
        if workers is not None and workers.offload and scrapys:
            return await workers.run(page_facts_of, response.body, response.encoding, response.url,
                                     selector_type(response), shape, feeds)
        root = root_of(response, scrapys)   # here: no workers, this process has room, or extraction's decoding
        try:
            facts = page_facts(root, get_base_url(response), shape, feeds) if root is not None else None
        except (ValueError, AttributeError):   # a tree that is no HTML tree (parsel's guess for other text)
            return None
        if facts is None or scrapys:
            return facts
        return replace(facts, canonical=scrapy_canonical_href(response))   # the page id: Scrapy's tree, as ever


def crawlable(base: str, anchors: Iterable[tuple[str, T]], hosts: set[str] | None) -> list[tuple[str, T]]:
    """(url, anchor) for each (href, anchor) whose href leads to a crawlable page (of `hosts` when given): joined
    to the page's base URL, tracking stripped, first occurrence of each URL kept, in order."""
    seen: set[str] = set()
    hrefs: set[str] = set()   # a page links many places more than once: each href is parsed once
    out = []
    for href, anchor in anchors:
        href = href.strip()
        if not href or href in hrefs or href.startswith(NOT_PAGE_LINKS):
            continue
        hrefs.add(href)
        entry = LINKS.joined(base, href)   # what response.urljoin(href) gives, and its host
        if hosts is not None and entry[1] not in hosts:   # the host stays what strip_tracking keeps
            continue
        url = LINKS.crawlable(entry)
        if url is not None and url not in seen:
            seen.add(url)
            out.append((url, anchor))
    return out


def same_charset(response: TextResponse) -> bool:
    """Whether Scrapy decodes the page as extraction does (else page kind reads extraction's decoding)."""
    encoding = choose_encoding(response.body, header_dict(response.headers))
    return codecs.lookup(encoding).name == codecs.lookup(response.encoding).name


def selector_type(response: TextResponse) -> str | None:
    """The tree type Scrapy's selector makes of a response (unified.Selector): parsel guesses for other text."""
    if isinstance(response, XmlResponse):
        return "xml"
    if isinstance(response, JsonResponse):
        return "json"
    return "html" if isinstance(response, HtmlResponse) else None


def root_of(response: Response, same: bool | None = None) -> etree._Element | None:
    """The lxml tree of an HTML response for page kind, or None: Scrapy's own tree, unless its charset
    guess differs from extraction's (e.g. UTF-8 bytes declared GB2312), then the page decoded as
    extraction decodes it -- page kind on mojibake sees no sentences. `same`: same_charset, when known."""
    try:
        if same_charset(response) if same is None else same:
            return response.selector.root
        return load(response.body, header_dict(response.headers)).tree
    except (ValueError, LookupError, etree.ParserError, UnicodeDecodeError, AttributeError):
        return None


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
