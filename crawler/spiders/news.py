"""`scrapy crawl news`: news articles from site profiles or from `-a start_urls=URL[,URL...]`.

With profiles, link regexes say which pages are articles and which are lists. With start_urls the
spider follows links on the same hosts and decides itself: an article is a page with a block of prose
(text density, helped by an article-shaped URL); everything else is a list page that is only followed.
Sitemaps (from robots.txt, /sitemap.xml or the profile) and RSS/Atom feeds are used when present.
"""
from __future__ import annotations

import gzip
from typing import Any, AsyncIterator
from urllib.parse import urljoin, urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from crawler.siteprofiles import SiteProfile, load_profiles, profile_from_dict
from crawler.spiders.base import (PageSpider, SpiderArgumentError, check_urls, crawlable, split_argument, unique,
                                   yes_no)
from crawler.urls import host_key, strip_tracking
from extract import pagekind
from pipelines import stats

FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/feed+xml", "text/xml")


class NewsSpider(PageSpider):
    """News articles from profiles or start URLs, with URL- and content-level dedup downstream."""

    name = "news"
    kind = "article"
    arguments = {"start_urls": "URL[,URL...]", "profile": "NAME[,NAME...]|all", "profiles_file": "FILE[,FILE...]",
                 "sitemaps": "1|0"}

    def __init__(self, start_urls: str | None = None, profile: str | None = None,
                 profiles_file: str | None = None, sitemaps: str = "1", *args: Any, **kwargs: Any):
        self.reject_unknown(kwargs)
        super().__init__(*args, **kwargs)
        self.use_sitemaps = yes_no("sitemaps", sitemaps)
        self.targets = self.pick_targets(split_argument("start_urls", start_urls), split_argument("profile", profile),
                                         split_argument("profiles_file", profiles_file))
        self.by_name = {t.name: t for t in self.targets}

    @classmethod
    def pick_targets(cls, urls: list[str], names: list[str], files: list[str]) -> list[SiteProfile]:
        """Sites from start URLs or from profiles; no target at all is refused rather than crawling every
        bundled site (real news sites) by surprise: `-a profile=all` asks for that explicitly."""
        if urls and (names or files):
            raise SpiderArgumentError("give either -a start_urls or -a profile/-a profiles_file, not both")
        if urls:
            hosts = {host_key(u) for u in check_urls("start_urls", urls)}
            return [profile_from_dict({"name": h, "start_urls": [u for u in urls if host_key(u) == h]},
                                      "start_urls") for h in sorted(hosts)]
        if not names and not files:
            known = ", ".join(p.name for p in load_profiles("site"))
            raise SpiderArgumentError(f"say what to crawl: -a start_urls=URL[,URL...] or -a profile=NAME[,NAME...] "
                                      f"(bundled profiles: {known}; -a profile=all crawls every one)")
        return load_profiles("site", files or None, None if names == ["all"] else names or None)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Start pages, then each site's feeds and sitemaps (robots.txt Sitemap: lines included)."""
        for target in self.targets:
            for url in target.start_urls:
                yield self.page_request(url, target, start=True)
            for url in target.feeds:
                yield scrapy.Request(url, self.parse_feed, errback=self.on_error, cb_kwargs={"site": target.name})
            for url in target.sitemaps:
                yield scrapy.Request(url, self.parse_sitemap, errback=self.on_error,
                                     cb_kwargs={"site": target.name})
            if self.use_sitemaps and not target.sitemaps:
                for origin in unique(f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in target.start_urls):
                    yield scrapy.Request(f"{origin}/robots.txt", self.parse_robots, errback=self.on_error,
                                         meta={"optional": True}, cb_kwargs={"site": target.name, "origin": origin})

    def page_request(self, url: str, target: SiteProfile, start: bool = False, priority: int = 0) -> scrapy.Request:
        """A request for a page of `target`; articles get a higher priority than lists."""
        return scrapy.Request(strip_tracking(url), self.parse_page, errback=self.on_error, priority=priority,
                              cb_kwargs={"site": target.name}, meta={"start": start})

    def wanted(self, url: str, target: SiteProfile) -> bool:
        """Should a link be followed: same site, and (with link rules) an article or a list page."""
        if host_key(url) not in target.hosts:
            return False
        return target.auto or target.is_article(url) or target.is_list(url)

    async def parse_page(self, response: Response, site: str) -> AsyncIterator[Any]:
        """An article becomes an item; every HTML page contributes its links and feeds."""
        target = self.by_name[site]
        if not self.usable(response):
            return
        facts = await self.facts_of(response, shape=target.auto, feeds=self.use_sitemaps)
        if facts is None:
            self.fail(response.url, "unparseable")
            return
        kind, detail = self.page_kind(response, facts, target)
        if kind == "article":
            yield self.make_item(response, target.site, facts=facts, profile=target.hint() if target.body else None)
        else:
            if kind == "list_page":
                self.count(stats.LIST_PAGES)
            self.skip(response.url, kind, detail)
        for request in self.follow(response, facts, target):
            yield request

    def page_kind(self, response: TextResponse, facts: pagekind.PageFacts, target: SiteProfile) -> tuple[str, str]:
        """("article" | "list_page" | "soft_404", detail): profile rules when present, otherwise URL shape
        and running text."""
        shape = facts.shape
        if not target.auto:
            if not target.is_article(response.url):
                return "list_page", f"not an article URL of profile {target.name}"
        else:
            if response.meta.get("start") and pagekind.url_looks_list(response.url):
                return "list_page", "start page with a list-shaped URL"
            if not shape.is_article(pagekind.url_looks_article(response.url)):
                return "list_page", f"no block of running text ({shape.text_chars} characters, {shape.link_chars} in links)"
        if pagekind.is_soft_404(facts.heading, 0):  # cheap test first; the shape is measured only then
            if pagekind.is_soft_404(facts.heading, shape.text_chars - shape.link_chars):
                return "soft_404", facts.heading[:80]
        return "article", ""

    def follow(self, response: TextResponse, facts: pagekind.PageFacts, target: SiteProfile) -> Any:
        """Requests for wanted same-site links and for advertised RSS/Atom feeds."""
        for url, _ in crawlable(facts.base, ((href, None) for href in facts.hrefs), target.hosts):
            if self.wanted(url, target):
                article = target.is_article(url) if not target.auto else pagekind.url_looks_article(url)
                yield self.page_request(url, target, priority=1 if article else 0)
        if self.use_sitemaps:
            for kind, href in facts.feeds:
                if kind.lower() in FEED_TYPES:
                    yield scrapy.Request(urljoin(facts.base, href), self.parse_feed, errback=self.on_error,
                                         meta={"optional": True}, cb_kwargs={"site": target.name})

    def parse_robots(self, response: Response, site: str, origin: str) -> Any:
        """Sitemaps named in robots.txt, else a guess at /sitemap.xml."""
        target = self.by_name[site]
        self.count(stats.FETCHED)
        self.skip(response.url, "robots_file", "read for its Sitemap: lines")
        text = response.text if isinstance(response, TextResponse) else response.body.decode("utf-8", "replace")
        found = [line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.lower().startswith("sitemap:") and ":" in line]
        for url in found or [f"{origin}/sitemap.xml"]:
            yield scrapy.Request(response.urljoin(url), self.parse_sitemap, errback=self.on_error,
                                 meta={"optional": True}, cb_kwargs={"site": target.name})

    def parse_sitemap(self, response: Response, site: str) -> Any:
        """URLs of a sitemap (plain or gzipped) or a sitemap index, filtered to the site."""
        target = self.by_name[site]
        self.count(stats.FETCHED)
        body = response.body
        if body[:2] == b"\x1f\x8b":
            try:
                body = gunzip(body, max_size=self.settings.getint("DOWNLOAD_MAXSIZE"))
            except (OSError, ValueError, gzip.BadGzipFile) as exc:
                self.fail(response.url, "bad_sitemap", str(exc))
                return
        try:
            sitemap = Sitemap(body)
        except Exception as exc:  # lxml raises several types on garbage
            self.fail(response.url, "bad_sitemap", str(exc)[:100])
            return
        self.count(stats.SITEMAPS)
        self.skip(response.url, "sitemap", "read for its links")
        for entry in sitemap:
            url = entry.get("loc", "")
            if sitemap.type == "sitemapindex":
                yield scrapy.Request(url, self.parse_sitemap, errback=self.on_error, cb_kwargs={"site": target.name})
            elif self.wanted(url, target):
                yield self.page_request(url, target, priority=1)

    def parse_feed(self, response: Response, site: str) -> Any:
        """Item links of an RSS 2.0 or Atom feed."""
        target = self.by_name[site]
        self.count(stats.FETCHED)
        if not isinstance(response, TextResponse):
            self.skip(response.url, "not_a_feed", response.headers.get("Content-Type", b"").decode("latin-1"))
            return
        self.count(stats.FEEDS)
        self.skip(response.url, "feed", "read for its links")
        sel = scrapy.Selector(response, type="xml")
        urls = sel.xpath("//*[local-name()='item']/*[local-name()='link']/text()").getall()
        urls += sel.xpath("//*[local-name()='entry']/*[local-name()='link']"
                          "[not(@rel) or @rel='alternate']/@href").getall()
        for url in urls:
            url = response.urljoin(url.strip())
            if self.wanted(url, target):
                yield self.page_request(url, target, priority=1)
