"""Canonical URLs: tracking parameters removed, so one story is fetched once (URL-level dedup)."""
from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.request import fingerprint as scrapy_fingerprint
from w3lib.url import canonicalize_url

from extract.pagekind import PageFacts, canonical_href, skippable_link

# Query parameters that only say where a click came from, never which page it is.
TRACKING_PARAMS = frozenset({
    "spm", "from", "frm", "ref", "referer", "referrer", "share", "share_token", "shareid",
    "sharesource", "fromsource", "fromtitle", "fromid", "tt_from", "gclid", "fbclid", "yclid",
    "msclkid", "mc_cid", "mc_eid", "igshid", "scm", "wfr", "s_trans", "isappinstalled",
    "refer_flag", "wx_fmt", "chksm", "phpsessid", "jsessionid",
})
TRACKING_PREFIXES = ("utm_", "pk_", "hmsr", "hmpl", "hmcu", "hmkw", "hmci", "_hs", "vero_")


def is_tracking_param(name: str) -> bool:
    """True for query parameters that identify a referrer or a campaign, not content."""
    low = name.lower()
    return low in TRACKING_PARAMS or low.startswith(TRACKING_PREFIXES)


def strip_tracking(url: str) -> str:
    """Drop tracking parameters and the fragment; keep everything that selects content."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_tracking_param(k)]
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", urlencode(query), ""))


def canonical_url(url: str) -> str:
    """The URL used for dedup and storage: tracking removed, query sorted, escaping normalised."""
    return canonicalize_url(strip_tracking(url))


# Public suffixes of two labels under which sites register their third label (a simple registered-domain
# rule: enough for the Chinese and English news and fiction hosts we crawl).
TWO_LEVEL_SUFFIXES = frozenset(
    f"{second}.{tld}"
    for tld in ("cn", "hk", "tw", "mo", "uk", "jp", "kr", "sg", "au", "nz", "my", "in", "br")
    for second in ("com", "net", "org", "gov", "edu", "ac", "co", "ne", "or", "go", "idv", "info"))


def site_of(url: str) -> str:
    """The registered site of a URL: its last two labels (three under com.cn and the like);
    IP addresses, localhost and single-label hosts are their own site, port included."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return ""
    labels = host.split(".")
    if len(labels) < 2 or re.fullmatch(r"[\d.]+", host) or ":" in host:
        return f"{host}:{parts.port}" if parts.port else host
    keep = 3 if ".".join(labels[-2:]) in TWO_LEVEL_SUFFIXES else 2
    return ".".join(labels[-keep:])


def same_site(a: str, b: str) -> bool:
    """True when both URLs belong to one registered site (a canonical may only point within it)."""
    sa = site_of(a)
    return bool(sa) and sa == site_of(b)


def declared_canonical(url: str, href: str | None) -> str | None:
    """The absolute http(s) URL that <link rel=canonical href> names on the page at url, if any (not yet trusted)."""
    if not href:
        return None
    try:
        absolute = urljoin(url, href.strip())
    except ValueError:
        return None
    return absolute if urlsplit(absolute).scheme in ("http", "https") else None


def scrapy_canonical_href(response: Response) -> str | None:
    """canonical_href of Scrapy's own tree of the page (the tree page ids have always been read from)."""
    return canonical_href(response.selector.root) if hasattr(response, "selector") else None


def canonical_pair(response: Response, facts: PageFacts | None = None) -> tuple[str, str | None]:
    """(page_canonical_url, canonical_claim) from one read of the page's <link rel=canonical>: the page's facts'
    when given (read from that same tree where the page was parsed), else Scrapy's tree's."""
    declared = declared_canonical(response.url, facts.canonical if facts is not None else scrapy_canonical_href(response))
    if not declared:
        return canonical_url(response.url), None
    if same_site(declared, response.url):
        return canonical_url(declared), None
    return canonical_url(response.url), canonical_url(declared)


def page_canonical_url(response: Response) -> str:
    """<link rel=canonical> when it names a URL on the page's own site, else our canonical form.

    A canonical on another site is only a claim (see canonical_claim): taking it as identity would let
    any site give its page another site's page id and overwrite that page's stored text."""
    return canonical_pair(response)[0]


def canonical_claim(response: Response) -> str | None:
    """A cross-site canonical URL the page declares (recorded on the page, never used as its id)."""
    return canonical_pair(response)[1]


def page_id(canonical: str) -> str:
    """A stable id for a canonical URL (blake2b, 128 bits hex); never Python's salted hash()."""
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


def host_key(url: str) -> str:
    """host[:port] of a URL in lower case, without a leading 'www.'."""
    netloc = urlsplit(url).netloc.lower()
    return re.sub(r"^www\.", "", netloc.rsplit("@", 1)[-1])


class LinkMemo:
    """The joined URL, host and crawlable form of hrefs that a site's pages repeat (menus, lists, footers).

    An href that is absolute or starts with "/" joins alike on every page whose base URL has the same scheme
    and host (urllib's urljoin reads nothing else of the base for it), so it is resolved once per crawl
    process: urljoin, host_key and strip_tracking cost ~25 us a link, and a real news page has ~160 links.
    Other hrefs ("a.html", "../b") are resolved every time. Bounded: emptied when full (8,192 links, ~5 MB)."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self.entries: dict[tuple[str, str, str], list] = {}
        self.last: tuple[str, tuple[str, str]] = ("", ("", ""))   # a base URL, its scheme and host: split once

    def joined(self, base: str, href: str) -> list:
        """[urljoin(base, href), its host_key, its crawlable URL (None: not http(s), or a file) or UNRESOLVED]."""
        if not href.startswith(("/", "http://", "https://")):
            return self._resolve(base, href)
        last = self.last   # one tuple, read and replaced whole: no thread sees one base with another's host
        if last[0] != base:
            last = self.last = (base, urlsplit(base)[:2])
        key = (*last[1], href)
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= self.size:
                self.entries.clear()
            entry = self.entries[key] = self._resolve(base, href)
        return entry

    @staticmethod
    def _resolve(base: str, href: str) -> list:
        joined = urljoin(base, href)
        return [joined, host_key(joined), UNRESOLVED]

    @staticmethod
    def crawlable(entry: list) -> str | None:
        """The entry's URL without tracking, or None for a non-http(s) link or a file (computed once)."""
        if entry[2] is UNRESOLVED:
            url = strip_tracking(entry[0])
            entry[2] = url if url.startswith(("http://", "https://")) and not skippable_link(url) else None
        return entry[2]


UNRESOLVED = object()   # a LinkMemo entry whose crawlable form nobody has asked for yet
LINKS = LinkMemo()


class CanonicalRequestFingerprinter:
    """Scrapy REQUEST_FINGERPRINTER_CLASS: the default SHA1 fingerprint over the URL without tracking."""

    @classmethod
    def from_crawler(cls, crawler) -> "CanonicalRequestFingerprinter":
        """Scrapy factory hook."""
        return cls()

    def fingerprint(self, request: Request) -> bytes:
        """Fingerprint of the request as if its URL had no tracking parameters."""
        stripped = strip_tracking(request.url)
        if stripped != request.url:
            request = request.replace(url=stripped)
        return scrapy_fingerprint(request)
