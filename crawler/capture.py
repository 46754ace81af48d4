"""Rendered captures of a matched page: a full-page screenshot (PNG) and a PDF from headless Chromium
(Debian `chromium`, driven by Playwright with executable_path; no browser download). The admin renders
a match when it is confirmed (admin/capture.py); with ZHDEDUP_CAPTURE_AT_MATCH the crawl renders every
new match as it is found (MatchCapture). Each capture is chained into the evidence log.

Off (CaptureOff / NotConfigured, one line saying why) with ZHDEDUP_CAPTURE=False, without the Chromium
binary at ZHDEDUP_CHROMIUM, or without Playwright; the rest of the evidence works as before.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from twisted.internet.threads import deferToThread

from crawler import settings as defaults   # every setting's default, declared once
from pipelines.crawl_store import store_for
from pipelines.stats import EVIDENCE_CAPTURE_FAILURES as CAPTURE_FAILURES
from pipelines.stats import EVIDENCE_CAPTURES as CAPTURES

logger = logging.getLogger(__name__)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--disable-component-update", "--disable-sync"]


class CaptureOff(Exception):
    """Rendered captures are switched off; the message says why."""


class CaptureFailed(Exception):
    """The page could not be rendered (it did not load in time, the browser failed)."""


@dataclass(frozen=True)
class Capturer:
    """Renders one URL in a fresh headless Chromium: full-page PNG and PDF."""

    chromium: str
    timeout: float

    @classmethod
    def from_settings(cls) -> "Capturer":
        """ZHDEDUP_CAPTURE, ZHDEDUP_CHROMIUM, ZHDEDUP_CAPTURE_TIMEOUT as crawler/settings.py declares them."""
        from crawler import settings

        return cls.configured(settings.ZHDEDUP_CAPTURE, settings.ZHDEDUP_CHROMIUM, settings.ZHDEDUP_CAPTURE_TIMEOUT)

    @classmethod
    def configured(cls, enabled: bool, chromium: str, timeout: float) -> "Capturer":
        """A Capturer for these settings; CaptureOff saying why when captures cannot be taken."""
        if not enabled:
            raise CaptureOff("ZHDEDUP_CAPTURE is off: matches get no rendered capture")
        if not os.access(chromium, os.X_OK):
            raise CaptureOff(f"no Chromium at {chromium} (apt-get install chromium, or set ZHDEDUP_CHROMIUM): "
                             "matches get no rendered capture")
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            raise CaptureOff("the playwright package is not installed: matches get no rendered capture") from None
        return cls(chromium, timeout)

    def capture(self, url: str) -> dict:
        """{url, final_url, title, captured, browser, png, pdf} of the page as Chromium renders it now."""
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=self.chromium, args=ARGS, headless=True,
                                             timeout=self.timeout * 1000)
                try:
                    return self._render(browser, url)
                finally:
                    browser.close()
        except PlaywrightError as exc:
            raise CaptureFailed(f"could not render {url}: {str(exc).splitlines()[0]}") from exc

    def _render(self, browser: Any, url: str) -> dict:
        """Load the page once and take both renderings of it."""
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(self.timeout * 1000)
        captured = datetime.now(timezone.utc)
        page.goto(url, wait_until="load")
        png = page.screenshot(full_page=True, type="png")
        pdf = page.pdf(print_background=True)
        return {"url": url, "final_url": page.url, "title": page.title(), "captured": captured,
                "browser": f"Chromium {browser.version}", "png": png, "pdf": pdf}


class MatchCapture:
    """Extension (ZHDEDUP_CAPTURE_AT_MATCH): renders each page that brought new matches as it is found, in a
    thread, one page at a time, and chains the capture to each of its matches; the crawl stays open until
    the renderings are done, and a page that cannot be rendered is logged and counted, never retried."""

    def __init__(self, crawler: Any, capturer: Capturer) -> None:
        self.crawler = crawler
        self.capturer = capturer
        self.outstanding = 0
        self.closed = False
        self.lock = threading.Lock()   # one Chromium at a time; none after the store closed
        crawler.signals.connect(self.item_done, signal=signals.item_scraped)
        crawler.signals.connect(self.item_done, signal=signals.item_dropped)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> "MatchCapture":
        """Off (silently) unless ZHDEDUP_CAPTURE_AT_MATCH; on, off with one line without Chromium."""
        s = crawler.settings
        if not s.getbool("ZHDEDUP_CAPTURE_AT_MATCH", defaults.ZHDEDUP_CAPTURE_AT_MATCH):
            raise NotConfigured
        try:
            capturer = Capturer.configured(s.getbool("ZHDEDUP_CAPTURE", defaults.ZHDEDUP_CAPTURE),
                                           s.get("ZHDEDUP_CHROMIUM") or "",
                                           s.getfloat("ZHDEDUP_CAPTURE_TIMEOUT", defaults.ZHDEDUP_CAPTURE_TIMEOUT))
        except CaptureOff as exc:
            raise NotConfigured(str(exc)) from exc
        return cls(crawler, capturer)

    def item_done(self, item: Any, **kwargs: Any) -> None:
        """Render the page of an item whose matches InfringementPipeline just recorded."""
        a = ItemAdapter(item)
        ids = [m["match_id"] for m in a.get("matches") or [] if m.get("match_id")]
        if not ids:
            return
        self.outstanding += 1
        d = deferToThread(self._capture, str(a.get("url")), ids)
        d.addErrback(self._failed, str(a.get("url")))
        d.addBoth(self._done)

    def _capture(self, url: str, match_ids: list[str]) -> None:
        """Render once for the page's matches that have no capture yet (a re-crawl renders nothing new)."""
        with self.lock:
            store = store_for(self.crawler)
            todo = [i for i in match_ids if (store.matches.get(i) or {}).get("capture_seq") is None]
            if self.closed or not todo:
                return
            capture = self.capturer.capture(url)
            for match_id in todo:
                store.evidence.add_capture(match_id, capture)
            self.crawler.stats.inc_value(CAPTURES)

    def _failed(self, failure: Any, url: str) -> None:
        """No capture of this page: one line saying why (the snapshot of the exchange stands)."""
        self.crawler.stats.inc_value(CAPTURE_FAILURES)
        logger.warning("no rendered capture of %s: %s", url, failure.getErrorMessage())

    def _done(self, result: Any) -> None:
        self.outstanding -= 1

    def spider_idle(self, spider: Any) -> None:
        """Keep the crawl open while a page is being rendered."""
        if self.outstanding:
            raise DontCloseSpider

    def spider_closed(self, spider: Any) -> None:
        """Wait for the rendering under way (the store closes after this handler); later ones are skipped."""
        with self.lock:
            self.closed = True
        if self.outstanding:
            logger.warning("%d page(s) not rendered: the crawl stopped first", self.outstanding)
