"""Re-checking a match's live page, so the evidence only says "changed" when a fetch saw a change.

One fetch per check, under the crawler's politeness rules (crawler/settings.py): its User-Agent and
request headers, robots.txt obeyed, at least DOWNLOAD_DELAY between two fetches of one host, its
timeout and size cap. The fetched page is compared with the evidence snapshot (raw bytes, then the
extracted text) or, for a match made before evidence was kept, with the text kept in the match.
The result (unchanged, changed, gone or unreachable, with the time) is stored on the match.
"""
from __future__ import annotations

import hashlib
import threading
import time
import urllib.error
import urllib.request
import urllib.robotparser
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from crawler import settings as crawl_settings

STATES = ("unchanged", "changed", "gone", "unreachable")
GONE_STATUSES = (404, 410, 451)
ROBOTS_SECONDS = 600.0     # how long a host's robots.txt is reused
MAX_WAIT = 10.0            # never hold a request longer than this for the per-host delay

_lock = threading.Lock()
_last_fetch: dict[str, float] = {}
_robots: dict[str, tuple[float, urllib.robotparser.RobotFileParser | None]] = {}
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to the host, like the crawler


class NotAllowed(Exception):
    """robots.txt forbids the crawler this URL: no fetch, nothing recorded."""


def _headers() -> dict[str, str]:
    return {"User-Agent": crawl_settings.USER_AGENT, **crawl_settings.DEFAULT_REQUEST_HEADERS}


def _wait_for_host(host: str) -> None:
    """Keep DOWNLOAD_DELAY between two fetches of one host (as the crawler's downloader does)."""
    while True:
        with _lock:
            now = time.monotonic()
            due = _last_fetch.get(host, 0.0) + float(crawl_settings.DOWNLOAD_DELAY)
            if now >= due:
                _last_fetch[host] = now
                return
        time.sleep(min(due - now, MAX_WAIT))


def _robots_for(url: str) -> urllib.robotparser.RobotFileParser | None:
    """The host's robots.txt (cached); None when it has none (everything allowed)."""
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    with _lock:
        hit = _robots.get(base)
    if hit and time.monotonic() - hit[0] < ROBOTS_SECONDS:
        return hit[1]
    parser: urllib.robotparser.RobotFileParser | None = urllib.robotparser.RobotFileParser(base + "/robots.txt")
    try:
        _wait_for_host(parts.netloc)
        with _opener.open(urllib.request.Request(base + "/robots.txt", headers=_headers()),
                          timeout=crawl_settings.DOWNLOAD_TIMEOUT) as resp:
            parser.parse(resp.read(512 * 1024).decode("utf-8", "replace").splitlines())
    except (urllib.error.URLError, OSError, ValueError):
        parser = None  # no robots.txt (4xx) or none reachable: the crawler treats both as "allowed"
    with _lock:
        _robots[base] = (time.monotonic(), parser)
    return parser


def polite_fetch(url: str) -> tuple[int | None, bytes, str]:
    """(HTTP status or None when unreachable, body, why) for one fetch of url under the crawl rules."""
    if crawl_settings.ROBOTSTXT_OBEY:
        robots = _robots_for(url)
        if robots is not None and not robots.can_fetch(crawl_settings.USER_AGENT, url):
            raise NotAllowed(f"robots.txt of {urlsplit(url).netloc} does not allow {url}")
    _wait_for_host(urlsplit(url).netloc)
    req = urllib.request.Request(url, headers=_headers())
    try:
        with _opener.open(req, timeout=crawl_settings.DOWNLOAD_TIMEOUT) as resp:
            return resp.status, resp.read(crawl_settings.DOWNLOAD_MAXSIZE), f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return exc.code, b"", f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, b"", f"no answer ({reason})"


def _squash(text: str) -> str:
    return "".join(text.split())


def compare(reference: dict[str, Any], body: bytes, url: str) -> tuple[str, str]:
    """("unchanged" | "changed", why) for a fetched body against the snapshot's raw bytes and text."""
    if reference.get("raw_sha256") and hashlib.sha256(body).hexdigest() == reference["raw_sha256"]:
        return "unchanged", "the page's bytes are identical to the snapshot"
    from extract import NotArticle, extract

    try:
        text = extract(body, url).text
    except NotArticle as exc:
        return "changed", f"no article text on the page now ({exc})"
    if _squash(text) == _squash(reference.get("text") or ""):
        return "unchanged", "the page's text is identical to the snapshot"
    kept = [p for p in reference.get("passages") or [] if p and _squash(p) in _squash(text)]
    total = len(reference.get("passages") or [])
    return "changed", f"the text differs from the snapshot; {len(kept)} of {total} matched passages still on the page"


def reference_of(match: dict, evidence: dict | None) -> dict[str, Any]:
    """What the live page is compared with: the evidence snapshot, else the text kept in the match."""
    text = str((evidence or {}).get("text") or match.get("suspect_text") or "")
    spans = (evidence or {}).get("suspect_spans") or match.get("suspect_spans") or []
    passages = [text[int(s[0]):int(s[1])] for s in spans if len(s) == 2][:20]
    return {"raw_sha256": (evidence or {}).get("raw_sha256"), "text": text, "passages": passages}


def recheck(url: str, reference: dict[str, Any]) -> dict[str, Any]:
    """Fetch url politely and say what became of it: {state, at, status, reason}; NotAllowed by robots.txt."""
    status, body, why = polite_fetch(url)
    at = datetime.now(timezone.utc)
    if status is None or status >= 500 or status == 429:
        state, reason = "unreachable", why
    elif status in GONE_STATUSES:
        state, reason = "gone", f"{why}: the page is no longer served"
    elif status >= 400:
        state, reason = "gone", f"{why}: the page is not served to the crawler"
    else:
        state, reason = compare(reference, body, url)
    return {"state": state, "at": at, "status": status, "reason": reason, "url": url}
