"""The item a spider hands to the pipelines: the raw page plus where and when it was fetched."""
from __future__ import annotations

from datetime import datetime, timezone

from typing import Any, TypedDict


class PageItem(TypedDict, total=False):
    """One fetched page (news article or whole fiction chapter) on its way through the pipelines.

    A plain dict at runtime (Scrapy accepts dicts as items), so any pipeline may add fields.
    """

    # set by the spiders
    url: Any            # the URL that was fetched (after redirects)
    canonical_url: Any  # <link rel=canonical> on the same site, or the URL without tracking parameters
    canonical_claim: Any  # a <link rel=canonical> on another site: recorded, never the page's identity
    page_id: Any        # blake2b-128 of canonical_url (crawler.urls.page_id)
    site: Any           # profile name or host[:port]
    spider: Any         # "news" | "fiction"
    kind: Any           # "article" | "chapter"
    body: Any           # raw bytes (evidence for matches; never stored as a page field)
    headers: Any        # response headers, str -> str
    status: Any
    fetched: Any        # timezone-aware UTC datetime of the fetch
    profile: Any        # site profile (dict) that selected the page, if any
    # fiction only
    book: Any
    book_url: Any
    chapter_number: Any
    chapter_title: Any
    parts: Any          # URLs of the next-page parts joined into this chapter
    # set by ExtractPipeline
    title: Any
    text: Any
    published: Any
    author: Any
    language: Any
    encoding: Any
    original_title: Any  # credit lines taken out of the body (原标题, 来源, 责任编辑), None when absent
    source: Any
    editor: Any
    # set by FingerprintPipeline
    simhash: Any
    content_hash: Any
    dna: Any
    sketch: list[int]  # passage sketch: the third dedup step (fingerprint.neardup)
    fp_version: Any
    length: Any
    # set by DedupPipeline / InfringementPipeline
    dedup: Any
    matches: Any


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
