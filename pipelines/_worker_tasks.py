"""The functions the worker processes run, in a module that imports neither Scrapy nor itemadapter: a worker
imports only this (and what each function needs), so it is ready sooner after the crawl starts."""
from __future__ import annotations

from typing import Any

from extract.limits import MAX_BYTES, MIN_CHARS

FIELDS = (("title", "title"), ("text", "text"), ("published", "date"), ("author", "author"),
          ("language", "language"), ("encoding", "encoding"), ("original_title", "original_title"),
          ("source", "source"), ("editor", "editor"), ("rights", "rights"),
          ("extract_version", "version"))


def article_fields(body: bytes, url: str, headers: dict | None, profile: dict | None, min_chars: int, fast: bool,
                   max_bytes: int) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """(item fields, None) or (None, (reason, message)): plain values, so a worker process can return them."""
    from extract.article import NotArticle, extract   # here: the crawler process imports this module too

    try:
        result = extract(body, url=url, headers=headers, profile=profile, min_chars=min_chars, fast=fast,
                         max_bytes=max_bytes)
    except NotArticle as exc:
        return None, (exc.reason, exc.message)
    return {field: getattr(result, attr) for field, attr in FIELDS}, None


def warm_up_extract() -> None:
    """Import trafilatura, htmldate and parsel (the spider's page facts) in a worker before the first page arrives."""
    page = "<html><body><p><a href='/a/1.html'>预热</a>" + "预热。" * 40 + "</p></body></html>"
    article_fields(page.encode(), "", None, None, MIN_CHARS, False, MAX_BYTES)
    page_facts_of(page.encode(), "utf-8", "http://127.0.0.1/", "html", True)


def page_facts_of(body: bytes, encoding: str, url: str, doc_type: str | None, shape: bool, feeds: bool = True) -> Any:
    """The spider's facts of a page (extract.pagekind.PageFacts) from the tree Scrapy's selector makes of it, or
    None when it cannot be parsed: the text and base URL as Scrapy's TextResponse.text and get_base_url make
    them of the body and its encoding (w3lib), the tree as its Selector does (parsel, Scrapy's arguments)."""
    from lxml import etree
    from parsel import Selector
    from w3lib.encoding import html_to_unicode
    from w3lib.html import get_base_url

    from extract.pagekind import page_facts

    try:
        text = html_to_unicode(f"charset={encoding}", body)[1]
        base = get_base_url(text[:4096], url, encoding)
        return page_facts(Selector(text=text, type=doc_type, base_url=base).root, base, shape, feeds)
    except (ValueError, LookupError, etree.ParserError, AttributeError):
        return None


def compute(text: str) -> dict[str, Any]:
    """Fingerprints of one text as plain item fields (module-level so worker processes can run it)."""
    from fingerprint import fingerprint_text
    from fingerprint.neardup import NearDupParams

    fp = fingerprint_text(text, sketch_size=NearDupParams.sketch_size)
    return {"simhash": int(fp.simhash), "content_hash": fp.content_hash, "dna": list(fp.dna),
            "sketch": list(fp.sketch), "fp_version": fp.version, "length": fp.length}


def warm_up_fingerprint() -> None:
    """Load the tokenizer and tables in a worker before the first page arrives."""
    compute("预热分词器。")
