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


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """A crawled page is hostile input: its redirects may lead to http(s) only (urllib would follow ftp)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        if not safe_scheme(newurl):
            raise urllib.error.HTTPError(newurl, code, f"redirect to a non-http(s) URL refused: {newurl}", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _HttpOnlyRedirects)  # straight to the host


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
    if not safe_scheme(url):
        return None, b"", f"not an http(s) URL: {url[:200]}"
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


def page_text(body: bytes) -> str:
    """The visible text of a page (scripts and styles left out), for finding the matched passages."""
    import lxml.html

    try:
        tree = lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return ""
    for bad in tree.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    return tree.text_content()


def next_part(body: bytes, url: str, seen: set[str]) -> str | None:
    """The URL of the chapter's next part (a "下一页" link on the same host, as the fiction spider
    follows it), or None."""
    import lxml.html
    from urllib.parse import urljoin

    from crawler.spiders.fiction import NEXT_PAGE, NOT_NEXT

    try:
        tree = lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return None
    for a in tree.iter("a"):
        target = urljoin(url, a.get("href") or "").split("#")[0]
        text = a.text_content()
        if (NEXT_PAGE.match(text) and not NOT_NEXT.search(text) and target not in seen
                and urlsplit(target).netloc == urlsplit(url).netloc and safe_scheme(target)):
            return target
    return None


def safe_scheme(url: str) -> bool:
    """Only web pages are fetched (no file:, ftp: or data: from a hostile page or redirect)."""
    return urlsplit(url).scheme in ("http", "https")


CHUNK = 16          # a passage is looked for in pieces: a chapter part's page chrome may cut it in two
KEPT_SHARE = 0.9


def still_there(passage: str, live: str) -> bool:
    """Whether a (squashed) passage is on the live page: 90% of its 16-character pieces are."""
    chunks = [passage[i:i + CHUNK] for i in range(0, len(passage), CHUNK)] or [passage]
    return sum(c in live for c in chunks) >= KEPT_SHARE * len(chunks)


def compare(reference: dict[str, Any], bodies: list[bytes], url: str) -> tuple[str, str]:
    """("unchanged" | "changed", why) for the fetched part(s) against the snapshot: identical bytes,
    identical extracted text, or every matched passage still on the page; "changed" otherwise."""
    if len(bodies) == 1 and reference.get("raw_sha256") and \
            hashlib.sha256(bodies[0]).hexdigest() == reference["raw_sha256"]:
        return "unchanged", "the page's bytes are identical to the snapshot"
    from extract.article import NotArticle, extract

    if len(bodies) == 1:
        try:
            if _squash(extract(bodies[0], url).text) == _squash(reference.get("text") or ""):
                return "unchanged", "the page's text is identical to the snapshot"
        except NotArticle:
            pass
    live = _squash("".join(page_text(b) for b in bodies))
    wanted = [p for p in reference.get("passages") or [] if _squash(p)]
    kept = [p for p in wanted if still_there(_squash(p), live)]
    parts = f" ({len(bodies)} parts)" if len(bodies) > 1 else ""
    if wanted and len(kept) == len(wanted):
        return "unchanged", f"every matched passage ({len(wanted)}) is still on the page{parts}"
    return "changed", f"the text differs from the snapshot; {len(kept)} of {len(wanted)} matched passages still on the page{parts}"


def reference_of(match: dict, evidence: dict | None) -> dict[str, Any]:
    """What the live page is compared with: the evidence snapshot, else the text kept in the match."""
    text = str((evidence or {}).get("text") or match.get("suspect_text") or "")
    spans = (evidence or {}).get("suspect_spans") or match.get("suspect_spans") or []
    passages = [text[int(s[0]):int(s[1])] for s in spans if len(s) == 2][:20]
    return {"raw_sha256": (evidence or {}).get("raw_sha256"), "text": text, "passages": passages}


def recheck(url: str, reference: dict[str, Any]) -> dict[str, Any]:
    """Fetch url politely (and the chapter's further parts) and say what became of it:
    {state, at, status, reason, url}; NotAllowed when robots.txt forbids it."""
    from crawler.spiders.fiction import MAX_PARTS

    status, body, why = polite_fetch(url)
    at = datetime.now(timezone.utc)
    if status is None or status >= 500 or status == 429:
        state, reason = "unreachable", why
    elif status in GONE_STATUSES:
        state, reason = "gone", f"{why}: the page is no longer served"
    elif status >= 400:
        state, reason = "gone", f"{why}: the page is not served to the crawler"
    else:
        bodies, seen = [body], {url}
        nxt = next_part(body, url, seen)
        while nxt and len(bodies) < MAX_PARTS:
            seen.add(nxt)
            part_status, part, _ = polite_fetch(nxt)
            if part_status != 200:
                break
            bodies.append(part)
            nxt = next_part(part, nxt, seen)
        state, reason = compare(reference, bodies, url)
    return {"state": state, "at": at, "status": status, "reason": reason, "url": url}
