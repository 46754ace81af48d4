"""Rendered capture of a confirmed match's page: a full-page screenshot (PNG) and a PDF from headless
Chromium (Debian `chromium`, driven by Playwright with executable_path; no browser download), chained
into the evidence log and timestamped like every record.

Off (CaptureOff, one line saying why, Scrapy's NotConfigured style) with ZHDEDUP_CAPTURE=False, without
the Chromium binary at ZHDEDUP_CHROMIUM, or without Playwright; the rest of the evidence works as before.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

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
        """ZHDEDUP_CAPTURE, ZHDEDUP_CHROMIUM, ZHDEDUP_CAPTURE_TIMEOUT (crawler/settings.py); CaptureOff when off."""
        from crawler import settings

        if not settings.ZHDEDUP_CAPTURE:
            raise CaptureOff("ZHDEDUP_CAPTURE is off: confirmed matches get no rendered capture")
        if not os.access(settings.ZHDEDUP_CHROMIUM, os.X_OK):
            raise CaptureOff(f"no Chromium at {settings.ZHDEDUP_CHROMIUM} (apt-get install chromium, or set "
                             "ZHDEDUP_CHROMIUM): confirmed matches get no rendered capture")
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            raise CaptureOff("the playwright package is not installed: confirmed matches get no rendered capture") \
                from None
        return cls(settings.ZHDEDUP_CHROMIUM, settings.ZHDEDUP_CAPTURE_TIMEOUT)

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


def capture_match(store: Any, match: dict) -> int:
    """Capture a match's page into the evidence log and stamp the new head when a TSA is configured; returns
    the capture's seq. CaptureOff / CaptureFailed when there is no capture; a TSA failure only leaves it
    unstamped (status says since when)."""
    capture = Capturer.from_settings().capture(str(match.get("suspect_url") or ""))
    seq = store.add_capture(str(match["_id"]), capture)
    _stamp_now(store)
    return seq


def _stamp_now(store: Any) -> None:
    """Stamp the head at once (no crawl may be running to do it); failures are reported by status."""
    from admin.evidence_pack import tsa_settings
    from storage.timestamping import TimestampError, make_client_or_none

    cfg = tsa_settings()
    try:
        client = make_client_or_none(cfg["url"], cfg["ca"], cfg["timeout"])
        if client is not None:
            store.stamp_head(client)
    except TimestampError as exc:
        logger.warning("capture chained but not timestamped yet: %s", exc)
