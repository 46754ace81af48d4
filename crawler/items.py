"""The item a spider hands to the pipelines: the raw page plus where and when it was fetched."""
from __future__ import annotations

import base64
import hashlib
from datetime import datetime, timezone
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit


class DedupOutcome(TypedDict):
    """What DedupPipeline decided for a page it lets through (copies are dropped, not marked)."""

    kind: Literal["new", "unchanged"]   # unchanged: the same page fetched again with the same text
    spooled: bool                       # the check waits in the spool (Redis away): a copy is moved on replay


class MatchRef(TypedDict):
    """A registered work this page copies (the stored match has the passages)."""

    source_id: str
    score: float


class PageItem(TypedDict, total=False):
    """One fetched page (news article or whole fiction chapter) on its way through the pipelines.

    A plain dict at runtime (Scrapy accepts dicts as items); every field a spider or a pipeline sets is
    declared here, so a reader sees what travels from the spider to the store.
    """

    # set by the spiders
    url: str              # the URL that was fetched (after redirects)
    canonical_url: str    # <link rel=canonical> on the same site, or the URL without tracking parameters
    canonical_claim: str  # a <link rel=canonical> on another site: recorded, never the page's identity
    page_id: str          # blake2b-128 of canonical_url (crawler.urls.page_id); StorePipeline may replace it
    site: str             # profile name or host[:port]
    spider: str           # "news" | "fiction" | "watch"
    kind: str             # "article" | "chapter"
    body: bytes           # raw bytes (evidence for matches; never stored as a page field)
    exchange: dict[str, Any]  # the HTTP exchange as received (exchange_of; evidence for matches, never stored)
    headers: dict[str, str]  # response headers, lower-case name -> first value
    status: int | None    # HTTP status (None for a chapter joined from parts that failed)
    fetched: datetime     # timezone-aware UTC datetime of the fetch
    profile: dict[str, Any]  # the site profile's hint for the extractor (body_selector ...), if any
    # fiction only
    book: str | None
    book_url: str | None
    chapter_number: int | None
    chapter_title: str | None
    parts: list[str]      # URLs of the next-page parts joined into this chapter
    # set by ExtractPipeline
    title: str | None
    text: str             # the article body (without the site's template lines, when some were found)
    raw_text: str         # the body as extracted, before the site's template lines were taken out
    template_lines: int   # how many template lines were taken out of it
    published: str | None  # publication date as the page gives it (normalised by extract)
    author: str | None
    language: str | None
    encoding: str         # the encoding the bytes were decoded with
    original_title: str | None  # credit lines taken out of the body (原标题, 来源, 责任编辑), None when absent
    source: str | None
    editor: str | None
    rights: str | None    # a rights reservation taken out of the body (版权归…所有, 未经授权不得转载), None when absent
    extract_version: str  # extract.version.EXTRACT_VERSION the text was cut with
    # set by FingerprintPipeline
    simhash: int          # 64-bit SimHash (unsigned)
    content_hash: str     # exact-content hash of the normalised text (32 hex)
    dna: list[int]        # pinyin-initial DNA windows (fingerprint.dna)
    sketch: list[int]     # passage sketch: the third dedup step (fingerprint.neardup)
    fp_version: str       # fingerprint.version.FINGERPRINT_VERSION the fields were computed with
    length: int           # characters of the normalised text
    # set by DedupPipeline / InfringementPipeline
    dedup: DedupOutcome
    matches: list[MatchRef]


def utc_now() -> datetime:
    """Fetch time: timezone-aware UTC, what the store keeps in every timestamp field."""
    return datetime.now(timezone.utc)


def header_dict(headers) -> dict[str, str]:
    """Scrapy's bytes headers as a plain str -> str dict (first value of each header)."""
    out: dict[str, str] = {}
    for key, values in headers.items():
        if values:
            out[key.decode("latin-1").lower()] = values[0].decode("latin-1")
    return out


def exchange_of(response: Any) -> dict:
    """The HTTP exchange behind a response, for match evidence: final URL and the redirects before it,
    status, every response header as sent (name, value pairs in order), the server's IP address and port,
    the protocol, the request line and headers, and for https the server certificate's SHA-256."""
    request = response.request
    redirects = list(request.meta.get("redirect_urls") or []) if request is not None else []
    parts = urlsplit(response.url)
    out = {"final_url": response.url, "redirect_urls": redirects,
           "redirect_statuses": list(request.meta.get("redirect_reasons") or []) if request is not None else [],
           "status": response.status, "protocol": getattr(response, "protocol", None),
           "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, vs in response.headers.items() for v in vs],
           "ip_address": str(response.ip_address) if getattr(response, "ip_address", None) else None,
           "port": parts.port or {"https": 443, "http": 80}.get(parts.scheme),
           "request": _request_of(request), "body_sha256": hashlib.sha256(response.body).hexdigest(),
           "body_length": len(response.body)}
    cert = getattr(response, "certificate", None)
    if cert is not None:
        out["certificate"] = _certificate(cert)
    return out


def _request_of(request: Any) -> dict | None:
    """The request line and headers the crawler sent."""
    if request is None:
        return None
    return {"method": request.method, "url": request.url,
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, vs in request.headers.items() for v in vs]}


def _certificate(cert: Any) -> dict:
    """The server certificate Scrapy kept (the leaf; Twisted does not hand on the chain): SHA-256 of its DER."""
    from cryptography import x509
    from OpenSSL.crypto import FILETYPE_ASN1

    der = cert.dump(FILETYPE_ASN1)
    parsed = x509.load_der_x509_certificate(der)
    return {"sha256": hashlib.sha256(der).hexdigest(), "subject": parsed.subject.rfc4514_string(),
            "issuer": parsed.issuer.rfc4514_string(), "der_b64": base64.b64encode(der).decode("ascii")}
