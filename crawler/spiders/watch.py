"""`scrapy crawl watch [-a urls=URL,...] [-a every=SECONDS] [-a profiles=NAME,...] [-a rounds=N]`.

A long-running spider over the watch list stored in MongoDB (storage/watch.py). A round re-visits each
due URL (table of contents, RSS/Atom feed, sitemap or list page) with a conditional GET (If-None-Match /
If-Modified-Since from the validators of the last visit): a 304 costs one request; on a change only
entries not fetched before (or with a newer sitemap `lastmod`) are requested, and their pages go through
the usual pipelines. Rounds are scheduled from `spider_idle` (DontCloseSpider keeps the spider open);
the same round re-checks the site's noticed URLs (storage/notices.py) for takedowns. Ctrl-C / SIGTERM
stops cleanly; the next start resumes from the stored list, validators and seen entries.
"""
from __future__ import annotations

import re
import time
from typing import Any, AsyncIterator, Iterable

import scrapy
from lxml import etree
from lxml import html as lxml_html
from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http import Response, TextResponse
from scrapy.utils.sitemap import Sitemap
from twisted.python.failure import Failure

from crawler import settings as defaults   # every setting's default, declared once
from crawler.siteprofiles import SiteProfile, load_profiles, profile_from_dict
from crawler.spiders.base import failure_reason
from crawler.spiders.fiction import CHAPTER_TEXT, FictionSpider
from crawler.urls import canonical_url, host_key
from pipelines import stats
from pipelines.crawl_store import store_for

CHECK_STATUSES = [304, 404, 410]
GONE_STATUSES = (404, 410)
XML_SNIFF = 512
IDLE_CHECK = 5.0  # seconds: Scrapy's idle heartbeat; sooner wake-ups come from reactor.callLater


def split_arg(value: str | None) -> list[str]:
    """Comma-separated spider argument to a list."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def listing_kind(response: Response) -> str:
    """sitemap | feed | html, from the start of the body."""
    head = response.body[:XML_SNIFF].lstrip().lower()
    if b"<urlset" in head or b"<sitemapindex" in head:
        return "sitemap"
    if b"<rss" in head or b"<feed" in head or b"<rdf:rdf" in head:
        return "feed"
    return "html"


def feed_links(body: bytes) -> list[str]:
    """Item links of an RSS or Atom feed, in feed order."""
    try:
        root = etree.fromstring(body, parser=etree.XMLParser(recover=True, resolve_entities=False))
    except etree.XMLSyntaxError:
        return []
    if root is None:
        return []
    links = [t.strip() for t in root.xpath("//*[local-name()='item']/*[local-name()='link']/text()")]
    links += root.xpath("//*[local-name()='entry']/*[local-name()='link'][not(@rel) or @rel='alternate']/@href")
    return [u for u in links if u]


def visible_text(page: str) -> str:
    """The page's text without tags or whitespace (for "is the copied passage still there?"); decoded
    text in, so a charset given only in the Content-Type header is honoured."""
    if not page.strip():
        return ""
    try:
        root = lxml_html.fromstring(page)
    except (etree.ParserError, ValueError):
        return ""
    for bad in root.xpath("//script|//style"):
        bad.getparent().remove(bad)
    return re.sub(r"\s+", "", root.text_content())


class WatchSpider(FictionSpider):
    """Re-visit the watch list on a schedule; fetch only new or changed entries; follow up takedowns."""

    name = "watch"
    kind = "chapter"
    custom_settings = {"DEPTH_LIMIT": 0}

    def __init__(self, urls: str | None = None, every: float | str | None = None, profiles: str | None = None,
                 rounds: int | str = 0, *args: Any, **kwargs: Any):
        scrapy.Spider.__init__(self, *args, **kwargs)
        self.add_urls = split_arg(urls)
        self.every = float(every) if every not in (None, "") else None
        self.profile_names = split_arg(profiles)
        self.max_rounds = int(rounds or 0)
        self.books: list[SiteProfile] = []
        self.by_name: dict[str, SiteProfile] = {}
        self.chapter_urls: dict[str, set[str]] = {}
        self.in_flight: set[str] = set()      # watched URLs whose listing request is out
        self.pending: set[tuple[str, str]] = set()  # (watched URL, entry URL) requested, not yet through
        self.rounds_done: dict[str, int] = {}
        self.store: Any = None
        self.wakeup: Any = None
        self.checking: set[str] = set()       # noticed URLs whose follow-up request is out

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any) -> "WatchSpider":
        """Default interval from ZHDEDUP_WATCH_EVERY; rounds scheduled from spider_idle."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.every is None:
            spider.every = crawler.settings.getfloat("ZHDEDUP_WATCH_EVERY", defaults.ZHDEDUP_WATCH_EVERY)
        if spider.every <= 0:
            raise NotConfigured(f"watch interval must be > 0 seconds, not {spider.every}")
        spider.followup = crawler.settings.getbool("ZHDEDUP_WATCH_FOLLOWUP", defaults.ZHDEDUP_WATCH_FOLLOWUP)
        crawler.signals.connect(spider.on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider.sleep, signal=signals.spider_closed)
        crawler.signals.connect(spider.entry_done, signal=signals.item_scraped)
        crawler.signals.connect(spider.entry_done, signal=signals.item_dropped)
        return spider

    # ---- the watch list and rounds -----------------------------------------------------------------
    def watch_targets(self) -> list[tuple[str, str | None]]:
        """(URL, profile reference) of every URL and profile given on the command line."""
        targets: list[tuple[str, str | None]] = [(u, None) for u in self.add_urls]
        for name in self.profile_names:
            books = [p for p in load_profiles("book") if p.name == name]
            sites = [] if books else load_profiles("site", None, [name])
            for p in books:
                targets += [(u, f"book:{name}") for u in p.start_urls]
            for p in sites:
                targets += [(u, f"site:{name}") for u in p.start_urls + p.feeds + p.sitemaps]
        return targets

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Add the command line's URLs and profiles to the stored watch list, then run the first round."""
        self.store = store_for(self.crawler)
        for url, profile in self.watch_targets():
            self.store.watch.add(url, interval=self.every, profile=profile, site=host_key(url))
        watches = self.store.watch.all()
        if not watches:
            self.logger.warning("the watch list is empty: add URLs (python -m crawler watch URL ...) "
                                "or sites in the admin's Watch page; waiting for some")
        for request in self.due_requests():
            yield request

    def due_requests(self) -> list[scrapy.Request]:
        """Conditional requests for every due watched URL not already in flight, plus follow-up checks."""
        out = []
        for watch in self.store.watch.due():
            url = watch["url"]
            if url in self.in_flight or self.finished(url):
                continue
            self.in_flight.add(url)
            self.count(stats.watch("rounds"))
            out.append(self.conditional(url, self.parse_listing, {"watch": watch}, priority=20_000))
            if self.followup:
                for t in self.store.notices.noticed_urls(watch["site"]):
                    if t["_id"] not in self.checking:
                        self.checking.add(t["_id"])
                        out.append(self.conditional(t["_id"], self.parse_followup, {"takedown": t}, priority=-1))
        return out

    def finished(self, url: str) -> bool:
        """True when a `rounds` limit is set and this URL has had its rounds."""
        return bool(self.max_rounds) and self.rounds_done.get(url, 0) >= self.max_rounds

    def on_idle(self, spider: scrapy.Spider) -> None:
        """Schedule the rounds that are due; stay open (unless every URL has had `rounds` rounds)."""
        if spider is not self or self.store is None:
            return
        self.pending.clear()  # idle: nothing is out, so what is left failed (and was logged as such)
        self.wake()
        watched = [w["url"] for w in self.store.watch.all()]
        if self.max_rounds and all(self.finished(u) for u in watched):  # an empty list is done too
            return
        raise DontCloseSpider

    def wake(self) -> None:
        """Schedule the due rounds, and a wake-up at the next due time (idle signals come only every 5 s)."""
        self.sleep()
        if not self.crawler.crawling:
            return
        for request in self.due_requests():
            self.crawler.engine.crawl(request)
        upcoming = [w["next_due"].timestamp() for w in self.store.watch.all()
                    if w.get("enabled") and w["url"] not in self.in_flight and not self.finished(w["url"])]
        if upcoming and self.wakeup is None:
            delay = min(max(0.05, min(upcoming) - time.time()), IDLE_CHECK)
            from twisted.internet import reactor  # the installed one (never import it at module level)

            self.wakeup = reactor.callLater(delay, self.wake)

    def sleep(self, spider: scrapy.Spider | None = None) -> None:
        """Cancel a pending wake-up (before scheduling another, and when the spider closes)."""
        if self.wakeup is not None and self.wakeup.active():
            self.wakeup.cancel()
        self.wakeup = None

    def conditional(self, url: str, callback: Any, cb_kwargs: dict, priority: int = 0) -> scrapy.Request:
        """A GET with the stored validators, letting 304/404/410 reach the callback."""
        headers = {}
        found = self.store.watch.validators(url)
        if found.get("etag"):
            headers["If-None-Match"] = found["etag"]
        if found.get("last_modified"):
            headers["If-Modified-Since"] = found["last_modified"]
        self.count(stats.watch("conditional" if headers else "unconditional"))
        errback = self.listing_error if callback == self.parse_listing else self.followup_error
        return scrapy.Request(url, callback, headers=headers, cb_kwargs=cb_kwargs, dont_filter=True,
                              priority=priority, errback=errback, meta={"handle_httpstatus_list": CHECK_STATUSES})

    def round_done(self, watch: dict, outcome: dict) -> None:
        """Schedule the next round of a watched URL."""
        url = watch["url"]
        self.in_flight.discard(url)
        self.rounds_done[url] = self.rounds_done.get(url, 0) + 1
        self.store.watch.round_done(url, float(watch.get("interval") or self.every), outcome)

    def listing_error(self, failure: Failure) -> None:
        """A watched URL could not be fetched: count it, log it, try again next round."""
        self.on_error(failure)
        watch = failure.request.cb_kwargs["watch"]
        self.round_done(watch, {"error": failure_reason(failure), "at": time.time()})

    def followup_error(self, failure: Failure) -> None:
        """A noticed URL could not be checked (timeout, refused): logged; it stays "up" until a check works."""
        self.on_error(failure)
        self.checking.discard(failure.request.url)

    # ---- a watched listing -------------------------------------------------------------------------
    def parse_listing(self, response: Response, watch: dict) -> Iterable[scrapy.Request]:
        """304: nothing changed. 200: save validators, request the entries not fetched before."""
        self.count(stats.FETCHED)
        if response.status == 304:
            self.count(stats.watch("not_modified"))
            self.skip(response.url, "not_modified", "watched listing unchanged since the last round")
            self.round_done(watch, {"status": 304, "new": 0})
            return []
        if response.status in GONE_STATUSES:
            self.fail(response.url, f"http_{response.status}", "watched URL is gone")
            self.round_done(watch, {"status": response.status, "new": 0})
            return []
        self.store.watch.save_validators(watch["url"], header(response, b"ETag"), header(response, b"Last-Modified"),
                                   response.status)
        self.skip(response.url, "watch_listing", "watched listing read for new entries")
        if listing_kind(response) == "sitemap" and Sitemap(response.body).type == "sitemapindex":
            return self.child_sitemaps(response, watch)
        entries = self.entries(response, watch)
        known = self.store.watch.known_entries(watch["url"])
        fresh = [(u, m, t) for u, m, t in entries
                 if (u not in known or (m and m > known[u])) and (watch["url"], u) not in self.pending]
        self.count(stats.watch("changed"))
        self.count(stats.watch("new_entries"), len(fresh))
        if fresh:
            self.logger.info("watch %s: %d new or changed entries", watch["url"], len(fresh))
        self.round_done(watch, {"status": response.status, "new": len(fresh)})
        return [self.entry_request(watch, url, lastmod, title, len(fresh) - i)
                for i, (url, lastmod, title) in enumerate(fresh)]

    def child_sitemaps(self, response: Response, watch: dict) -> list[scrapy.Request]:
        """A sitemap index: each child sitemap is re-visited (conditionally) as part of this round."""
        children = [e["loc"] for e in Sitemap(response.body) if e.get("loc")]
        self.round_done(watch, {"status": response.status, "sitemaps": len(children)})
        return [self.conditional(loc, self.parse_listing, {"watch": {**watch, "url": loc, "kind": "sitemap"}},
                                 priority=20_000) for loc in children]

    def entries(self, response: Response, watch: dict) -> list[tuple[str, str, str]]:
        """(url, lastmod, title) of the listing's entries: sitemap URLs, feed items, TOC chapters or links."""
        kind = watch.get("kind") or "auto"
        sniffed = listing_kind(response)
        if kind == "sitemap" or (kind == "auto" and sniffed == "sitemap"):
            return [(e["loc"], e.get("lastmod", ""), "") for e in Sitemap(response.body) if e.get("loc")]
        if kind == "feed" or (kind == "auto" and sniffed == "feed"):
            return [(u, "", "") for u in feed_links(response.body)]
        if not isinstance(response, TextResponse):
            self.fail(response.url, "not_html")
            return []
        book = self.book_of(watch)
        chapters = self.chapter_links(response, book)
        if kind == "toc" or (kind == "auto" and sum(1 for _, t in chapters if CHAPTER_TEXT.search(t)) >= 2):
            watch["is_toc"] = True
            self.chapter_urls.setdefault(watch["url"], set()).update(canonical_url(u) for u, _ in chapters)
            watch["book"] = self.book_title(response, book)
            return [(u, "", t) for u, t in chapters]
        return [(u, "", t) for u, t in self.links(response, {host_key(response.url)} | book.hosts)]

    def book_of(self, watch: dict) -> SiteProfile:
        """The watched URL's profile (a stored book/site profile name), else one made from the URL."""
        url = watch["url"]
        if url not in self.by_name:
            ref = watch.get("profile") or ""
            key, _, name = ref.partition(":")
            found = load_profiles(key, None, [name]) if key in ("book", "site") and name else []
            self.by_name[url] = found[0] if found else profile_from_dict(
                {"name": url, "site": watch.get("site") or host_key(url), "toc": url}, "watch")
        return self.by_name[url]

    def entry_request(self, watch: dict, url: str, lastmod: str, title: str, priority: int) -> scrapy.Request:
        """A chapter request (next-page parts joined by the fiction spider) or a plain page request."""
        self.pending.add((watch["url"], url))
        entry = {"watch": watch["url"], "url": url, "lastmod": lastmod}
        if watch.get("is_toc"):
            state = {"profile": watch["url"], "book": watch.get("book"), "book_url": watch["url"], "number": None,
                     "title": title, "fragments": [], "parts": [], "priority": priority, "watch_entry": entry}
            return scrapy.Request(url, self.parse_chapter, errback=self.entry_error, priority=priority,
                                  cb_kwargs={"state": state}, meta={"watch_entry": entry}, dont_filter=True)
        return scrapy.Request(url, self.parse_page, errback=self.entry_error, priority=priority,
                              cb_kwargs={"watch": watch}, meta={"watch_entry": entry}, dont_filter=True)

    def parse_page(self, response: Response, watch: dict) -> Any:
        """A feed, sitemap or list-page entry: one item for the pipelines."""
        if not self.usable(response):
            self.pending.discard((watch["url"], response.meta["watch_entry"]["url"]))
            return None
        return self.make_item(response, self.book_of(watch).site)

    def entry_done(self, item: Any, response: Response, spider: scrapy.Spider, **kwargs: Any) -> None:
        """An entry's page went through the pipelines (kept or dropped): it is fetched, not retried."""
        entry = response.meta.get("watch_entry") if response is not None else None
        if entry is None and response is not None:
            entry = (response.request.cb_kwargs.get("state") or {}).get("watch_entry")
        if entry is None:
            return
        self.pending.discard((entry["watch"], entry["url"]))
        self.store.watch.add_entry(entry["watch"], entry["url"], entry["lastmod"])

    def entry_error(self, failure: Failure) -> None:
        """An entry could not be fetched: logged and counted; next round requests it again."""
        entry = failure.request.meta.get("watch_entry") or {}
        self.pending.discard((entry.get("watch"), entry.get("url")))
        if "state" in failure.request.cb_kwargs:
            yield from self.on_part_error(failure)
        else:
            self.on_error(failure)

    # ---- takedown follow-up ------------------------------------------------------------------------
    def parse_followup(self, response: Response, takedown: dict) -> Any:
        """A noticed URL: 404/410 or copied passages gone = taken down; 304 or passages there = still up.
        One taken down that shows the passages again goes through the pipelines (re-matched, a fresh
        evidence snapshot, flagged as reappeared)."""
        url = takedown["_id"]
        self.checking.discard(url)
        gone, reason = self._takedown_state(response, takedown)
        self.count(stats.watch("takedown_gone" if gone else "takedown_up"))
        self.count(stats.FETCHED)
        back = not gone and takedown.get("state") == "gone" and response.status == 200
        if gone:
            self.logger.warning("taken down: %s (%s)", url, reason)
        self.store.notices.record_takedown_check(url, gone, response.status, reason)
        if back and isinstance(response, TextResponse):
            self.logger.warning("back after its takedown: %s (%s)", url, reason)
            yield self.make_item(response, takedown["site"])
        else:
            self.skip(url, "takedown_check", f"{'taken down' if gone else 'still up'}: {reason}")

    def _takedown_state(self, response: Response, takedown: dict) -> tuple[bool, str]:
        """(gone, why) for one re-check of a noticed URL."""
        if response.status in GONE_STATUSES:
            return True, f"http {response.status}"
        if response.status == 304:
            return False, "not modified"
        self.store.watch.save_validators(takedown["_id"], header(response, b"ETag"), header(response, b"Last-Modified"),
                                   response.status)
        text = visible_text(response.text) if isinstance(response, TextResponse) else ""
        probes = [re.sub(r"\s+", "", p) for p in takedown.get("probes") or []]
        still = [p for p in probes if p and p in text]
        gone = bool(probes) and not still
        return gone, "copied passages gone" if gone else f"{len(still)}/{len(probes)} passages still there"


def header(response: Response, name: bytes) -> str | None:
    """A response header as text, or None."""
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
