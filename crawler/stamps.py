"""EvidenceStamper extension: RFC 3161 timestamps of the evidence chain's head while the crawl runs.

Every second it looks whether the chain grew since the last stamp and, at most ZHDEDUP_TSA_INTERVAL
seconds after the previous stamp (0: at once), has the newest head stamped (storage.stamps). The TSA is
asked in a thread: a TSA that is down, slow or wrong never holds up a page, the chain goes on, and the
stamp is retried with backoff (1, 2, 4 ... ZHDEDUP_TSA_BACKOFF_MAX s). One later token covers every
record before its head, so the stamps catch up when the TSA is back. At close one last attempt is made.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import reactor, task
from twisted.internet.threads import deferToThread

from crawler import settings as defaults   # every setting's default, declared once
from pipelines.crawl_store import store_for
from pipelines.stats import EVIDENCE_STAMP_FAILURES as STAMP_FAILURES
from pipelines.stats import EVIDENCE_STAMPS as STAMPS
from storage.errors import StorageError
from storage.timestamping import TimestampError, TSAClient, TSANotConfigured, make_client_or_none

logger = logging.getLogger(__name__)
POLL = 1.0   # seconds between two looks at the chain's head


class EvidenceStamper:
    """Stamps the evidence chain's head with the TSA at ZHDEDUP_TSA_URL (verified against ZHDEDUP_TSA_CA)."""

    def __init__(self, crawler, client: TSAClient, interval: float, backoff_max: float) -> None:
        self.crawler = crawler
        self.client = client
        self.interval = interval
        self.backoff_max = backoff_max
        self.backoff = 0.0
        self.next_try = 0.0
        self.busy = False
        self.failing = False
        self.closed = False
        self.lock = threading.Lock()   # one stamp at a time; none after the store closed
        self.loop = task.LoopingCall(self.tick)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler) -> "EvidenceStamper":
        """ZHDEDUP_TSA_URL, ZHDEDUP_TSA_CA, ZHDEDUP_TSA_INTERVAL, ZHDEDUP_TSA_TIMEOUT, ZHDEDUP_TSA_BACKOFF_MAX."""
        s = crawler.settings
        if not s.getbool("ZHDEDUP_INFRINGEMENT", defaults.ZHDEDUP_INFRINGEMENT):
            raise NotConfigured("ZHDEDUP_INFRINGEMENT is off: no evidence to timestamp")
        try:
            client = make_client_or_none(s.get("ZHDEDUP_TSA_URL") or "", s.get("ZHDEDUP_TSA_CA") or "",
                                         s.getfloat("ZHDEDUP_TSA_TIMEOUT", defaults.ZHDEDUP_TSA_TIMEOUT))
        except TSANotConfigured as exc:
            raise NotConfigured(f"evidence is not timestamped: {exc}") from exc
        if client is None:
            raise NotConfigured("ZHDEDUP_TSA_URL is not set: evidence is not timestamped")
        return cls(crawler, client, s.getfloat("ZHDEDUP_TSA_INTERVAL", defaults.ZHDEDUP_TSA_INTERVAL),
                   s.getfloat("ZHDEDUP_TSA_BACKOFF_MAX", defaults.ZHDEDUP_TSA_BACKOFF_MAX))

    def spider_opened(self, spider: Any) -> None:
        """Start looking at the head every POLL seconds."""
        self.loop.start(POLL, now=False)

    def tick(self) -> None:
        """Stamp the head in a thread when it is time and no attempt is under way."""
        if self.busy or reactor.seconds() < self.next_try:
            return
        self.busy = True
        d = deferToThread(self._stamp)
        d.addCallbacks(self._stamped, self._failed)
        d.addBoth(self._done)

    def _stamp(self) -> dict | None:
        with self.lock:
            return None if self.closed else store_for(self.crawler).evidence.stamp_head(self.client)

    def _stamped(self, stamp: dict | None) -> None:
        """A stamp (or nothing new): the next one at most `interval` seconds later."""
        if stamp is None:
            return
        self.crawler.stats.inc_value(STAMPS)
        if self.failing:
            logger.warning("evidence timestamps caught up: record %s stamped at %s", stamp["_id"], stamp["gen_time"])
        self.failing, self.backoff = False, 0.0
        self.next_try = reactor.seconds() + self.interval

    def _failed(self, failure: Any) -> None:
        """No token: say so once per outage, retry with backoff; the chain is untouched."""
        if not failure.check(TimestampError, StorageError):
            logger.error("evidence stamping failed unexpectedly (retrying with backoff)",
                         exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        self.crawler.stats.inc_value(STAMP_FAILURES)
        self.backoff = min(self.backoff_max, max(1.0, self.backoff * 2))
        self.next_try = reactor.seconds() + self.backoff
        if not self.failing:
            logger.warning("evidence not timestamped since the last stamp: %s (retrying with backoff)",
                           failure.getErrorMessage())
        self.failing = True

    def _done(self, result: Any) -> Any:
        self.busy = False
        return None

    def spider_closed(self, spider: Any) -> None:
        """One last attempt before the store closes (this handler runs first: extensions connect before
        the pipelines' store), so a crawl's last records are stamped; waits at most the TSA timeout."""
        if self.loop.running:
            self.loop.stop()
        try:
            stamp = self._stamp()
        except (TimestampError, StorageError) as exc:
            self.crawler.stats.inc_value(STAMP_FAILURES)   # counted as every failed attempt is, whenever it came
            logger.warning("evidence head left unstamped at close: %s (`python -m admin evidence stamp` "
                           "stamps it later)", exc)
        else:
            if stamp is not None:
                self.crawler.stats.inc_value(STAMPS)
        self.closed = True
