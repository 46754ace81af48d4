"""MatchAlerts extension: a new match above ZHDEDUP_ALERT_MIN_SCORE is announced at once: a WARNING in
the log and, with ZHDEDUP_ALERT_WEBHOOK set, a JSON POST sent through Scrapy's own downloader
(`crawler.engine.download`), retried with backoff, never holding up an item or the crawl.

It listens for items leaving the pipelines (item_scraped, and item_dropped: a pirate copy dropped as a
duplicate still carries the matches InfringementPipeline recorded), so the pipeline chain is unchanged."""
from __future__ import annotations

import json
import logging
from typing import Any

import scrapy
from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from twisted.internet.threads import deferToThread

from crawler import settings as defaults   # every setting's default, declared once
from pipelines import stats
from pipelines.crawl_store import store_for

logger = logging.getLogger(__name__)


class MatchAlerts:
    """Reads each finished item's `matches` (set by InfringementPipeline) and announces those first seen now."""

    def __init__(self, crawler, min_score: float, webhook: str, retries: int, backoff: float) -> None:
        self.crawler = crawler
        self.min_score = min_score
        self.webhook = webhook
        self.retries = retries
        self.backoff = backoff
        self.outstanding = 0  # alerts being looked up or whose webhook delivery is not settled yet
        crawler.signals.connect(self.item_done, signal=signals.item_scraped)
        crawler.signals.connect(self.item_done, signal=signals.item_dropped)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler) -> "MatchAlerts":
        """ZHDEDUP_ALERT_MIN_SCORE, ZHDEDUP_ALERT_WEBHOOK, ZHDEDUP_ALERT_RETRIES, ZHDEDUP_ALERT_BACKOFF."""
        s = crawler.settings
        return cls(crawler, s.getfloat("ZHDEDUP_ALERT_MIN_SCORE", defaults.ZHDEDUP_ALERT_MIN_SCORE),
                   s.get("ZHDEDUP_ALERT_WEBHOOK", defaults.ZHDEDUP_ALERT_WEBHOOK) or "",
                   s.getint("ZHDEDUP_ALERT_RETRIES", defaults.ZHDEDUP_ALERT_RETRIES),
                   s.getfloat("ZHDEDUP_ALERT_BACKOFF", defaults.ZHDEDUP_ALERT_BACKOFF))

    def item_done(self, item: Any, **kwargs: Any) -> None:
        """Look up in a thread which of the item's matches at or above the threshold are new."""
        a = ItemAdapter(item)
        matches = [m for m in a.get("matches") or [] if m["score"] >= self.min_score]
        if not matches:
            return
        fields = {k: a.get(k) for k in ("url", "site", "title", "fetched")}
        self.outstanding += 1
        store = store_for(self.crawler)  # the pipelines' store, already open: this item has matches
        d = deferToThread(lambda: [m for m in matches if store.watch.match_is_new(fields["url"], m["source_id"])])
        d.addCallbacks(lambda new: self.found(fields, new), self.lookup_failed, errbackArgs=(fields["url"],))

    def found(self, page: dict, new: list[dict]) -> None:
        """Announce the page's new matches."""
        self.outstanding -= 1
        for m in new:
            self.announce({"event": "new_match", "suspect_url": page["url"], "site": page["site"],
                           "title": page["title"], "source_id": m["source_id"], "score": round(m["score"], 4),
                           "fetched": str(page["fetched"] or "")})

    def lookup_failed(self, failure: Any, url: str) -> None:
        """The store could not say whether a match is new: say so (the match itself is stored)."""
        self.outstanding -= 1
        logger.error("alert for %s skipped: could not read its match (%s)", url, failure.getErrorMessage())

    def announce(self, alert: dict) -> None:
        """The WARNING line, then the webhook in the background."""
        self.crawler.stats.inc_value(stats.ALERTS_ANNOUNCED)
        logger.warning("NEW MATCH %s copies source %s (score %.2f) on %s", alert["suspect_url"],
                       alert["source_id"], alert["score"], alert["site"])
        if self.webhook:
            self.outstanding += 1
            self.post(alert, attempt=0)

    def spider_idle(self, spider) -> None:
        """Keep the crawl open while an alert is being looked up or a webhook retry waits for its backoff."""
        if self.outstanding:
            raise DontCloseSpider

    def spider_closed(self, spider, reason: str = "") -> None:
        """Say how many alerts a stop left undelivered (they are in the log as WARNING lines)."""
        if self.outstanding:
            logger.error("%d alert(s) not delivered to %s: the crawl stopped (%s) during their retries",
                         self.outstanding, self.webhook, reason)

    def post(self, alert: dict, attempt: int) -> None:
        """One POST of the alert through the engine's downloader; failure schedules the next try."""
        request = scrapy.Request(self.webhook, method="POST", body=json.dumps(alert, ensure_ascii=False).encode(),
                                 headers={"Content-Type": "application/json; charset=utf-8"}, dont_filter=True,
                                 priority=100, meta={"dont_obey_robotstxt": True, "dont_retry": True})
        d = self.crawler.engine.download(request)
        d.addCallbacks(lambda r: self.posted(alert, attempt, r.status),
                       lambda f: self.retry(alert, attempt, f.getErrorMessage()))

    def posted(self, alert: dict, attempt: int, status: int) -> None:
        """2xx: done; anything else is retried."""
        if 200 <= status < 300:
            self.outstanding -= 1
            self.crawler.stats.inc_value(stats.WEBHOOK_SENT)
        else:
            self.retry(alert, attempt, f"HTTP {status}")

    def retry(self, alert: dict, attempt: int, reason: str) -> None:
        """Try again after backoff * 2**attempt seconds, or give up with an error line naming the match."""
        if attempt >= self.retries:
            self.outstanding -= 1
            self.crawler.stats.inc_value(stats.WEBHOOK_FAILED)
            logger.error("alert webhook %s failed %d times (%s); alert for %s not delivered", self.webhook,
                         attempt + 1, reason, alert["suspect_url"])
            return
        self.crawler.stats.inc_value(stats.WEBHOOK_RETRIED)
        from twisted.internet import reactor  # the installed one (never import it at module level)

        reactor.callLater(self.backoff * 2 ** attempt, self.post, alert, attempt + 1)
