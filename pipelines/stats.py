"""Every stats key the crawl writes, in one place (Scrapy's stats collector; CrawlSummary prints them).

Stats hold numbers only: reasons a person reads go to the log and the store, not into a stat's value.
"""
from __future__ import annotations

from typing import Any

PREFIX = "zhdedup"
FETCHED = f"{PREFIX}/fetched"                  # responses the spiders received
FETCH_FAILED = f"{PREFIX}/fetch_failed"        # requests that ended without a usable response (errbacks)
ITEMS = f"{PREFIX}/items"
EXTRACTED = f"{PREFIX}/extracted"
TEMPLATE_STRIPPED = f"{PREFIX}/template_stripped"  # pages whose site-template lines left the text (raw_text kept)
STORED = f"{PREFIX}/stored"
UNCHANGED = f"{PREFIX}/unchanged"               # re-crawled pages already stored with the same text
MATCHED = f"{PREFIX}/matched"                      # pages with at least one match
MATCHES = f"{PREFIX}/matches"                      # match records
MATCHES_LICENSED = f"{PREFIX}/matches_licensed"    # matches of a source licensed to the page's site
EVIDENCE_MISSING = f"{PREFIX}/evidence_missing"    # matches whose evidence snapshot could not be written
MATCHES_REAPPEARED = f"{PREFIX}/matches_reappeared"  # a noticed copy back after a takedown, or on a new URL
EVIDENCE_STAMPS = f"{PREFIX}/evidence/stamps"      # RFC 3161 tokens taken over the evidence chain's head
EVIDENCE_CAPTURES = f"{PREFIX}/evidence/captures"  # pages rendered (PNG + PDF) as they matched
EVIDENCE_CAPTURE_FAILURES = f"{PREFIX}/evidence/capture_failures"  # pages that could not be rendered
EVIDENCE_STAMP_FAILURES = f"{PREFIX}/evidence/stamp_failures"  # TSA down, slow or wrong (retried with backoff)
REPLACED_ORIGINAL = f"{PREFIX}/replaced_original"  # a copy published earlier took its original's place
DEFERRED = f"{PREFIX}/deferred"  # pages kept undecided: the spool replay decides them (at the crawl's close, else next open)
RESUME_REQUEUED = f"{PREFIX}/resume/requeued"
FETCHED_AGAIN = f"{PREFIX}/fetched_again"   # URLs fetched a second time in one run (their first outcome stands)
LIST_PAGES = f"{PREFIX}/list_pages"     # pages read for their links only
SITEMAPS = f"{PREFIX}/sitemaps"
FEEDS = f"{PREFIX}/feeds"
BOOKS = f"{PREFIX}/books"
JOINED_PARTS = f"{PREFIX}/joined_parts"  # chapter pages joined into the chapter before them
WORKERS_CPU_MS = f"{PREFIX}/workers/cpu_ms"  # CPU the extraction/fingerprint worker processes used (ms)
WORKERS_GROWN = f"{PREFIX}/workers/grown"    # workers started while the others stayed busy (auto only)
DUPLICATE_KINDS = ("exact", "near", "passages", "rewrite")
ALERTS_ANNOUNCED = f"{PREFIX}/alerts/announced"      # new matches above ZHDEDUP_ALERT_MIN_SCORE
WEBHOOK_SENT = f"{PREFIX}/alerts/webhook_sent"
WEBHOOK_RETRIED = f"{PREFIX}/alerts/webhook_retried"
WEBHOOK_FAILED = f"{PREFIX}/alerts/webhook_failed"


def dropped(kind: str) -> str:
    """Pages dropped as copies, by how they were found (exact | near | passages | rewrite)."""
    if kind not in DUPLICATE_KINDS:
        raise ValueError(f"duplicate kind must be one of {DUPLICATE_KINDS}, not {kind!r}")
    return f"{PREFIX}/dropped/{kind}"


def failed(reason: str) -> str:
    """Pages or items lost to a failure, by a reason slug (no_text, http_404, spool_unwritable...)."""
    return f"{PREFIX}/failed/{reason}"


def watch(event: str) -> str:
    """Watch-mode counts: rounds, conditional / unconditional, not_modified, changed, new_entries,
    takedown_gone / takedown_up."""
    return f"{PREFIX}/watch/{event}"


def skipped(reason: str) -> str:
    """Pages left out on purpose, by a reason slug (list_page, soft_404, binary, robots_txt, depth_limit...)."""
    return f"{PREFIX}/skipped/{reason}"


def outcome(name: str) -> str:
    """URLs by their final outcome (crawler.outcomes): stored, unchanged, duplicate, skipped, failed."""
    return f"{PREFIX}/outcome/{name}"


FAILED_PREFIX = failed("")
SKIPPED_PREFIX = skipped("")


def ours(stats: Any) -> dict[str, Any]:
    """The zhdedup/* stats without the prefix (for the run record and the report)."""
    head = PREFIX + "/"
    return {k[len(head):]: v for k, v in stats.get_stats().items() if k.startswith(head)}


def failures(stats: Any, prefix: str = FAILED_PREFIX) -> dict[str, int]:
    """Failure (or, with SKIPPED_PREFIX, skip) counts by reason (numbers only)."""
    return {k[len(prefix):]: v for k, v in stats.get_stats().items()
            if k.startswith(prefix) and isinstance(v, (int, float))}
