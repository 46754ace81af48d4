"""Canonical URLs: tracking parameters removed, so one story is fetched once (URL-level dedup)."""
from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.request import fingerprint as scrapy_fingerprint
from w3lib.url import canonicalize_url

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


def page_canonical_url(response: Response) -> str:
    """<link rel=canonical> when the page names one on an http(s) URL, else our canonical form."""
    href = None
    if hasattr(response, "xpath"):
        href = response.xpath(
            '//link[translate(@rel, "CANOICL", "canoicl")="canonical"]/@href').get()
    if href:
        absolute = urljoin(response.url, href.strip())
        if urlsplit(absolute).scheme in ("http", "https"):
            return canonical_url(absolute)
    return canonical_url(response.url)


def page_id(canonical: str) -> str:
    """A stable id for a canonical URL (blake2b, 128 bits hex); never Python's salted hash()."""
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


def same_host(url: str, hosts: set[str]) -> bool:
    """True when url's host:port is one of hosts (a leading 'www.' is ignored)."""
    return host_key(url) in hosts


def host_key(url: str) -> str:
    """host[:port] of a URL in lower case, without a leading 'www.'."""
    netloc = urlsplit(url).netloc.lower()
    return re.sub(r"^www\.", "", netloc.rsplit("@", 1)[-1])


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
