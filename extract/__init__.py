"""Article extraction for Chinese news and novel pages, pure apart from lxml / trafilatura / html5lib.

Modules: ``sniff`` (binary and empty bodies), ``encoding`` (bytes -> text), ``dom`` (parse once, walk once,
densest block), ``pagekind`` (article vs list page, soft 404, URL shapes), ``boilerplate`` (Chinese
boilerplate lines), ``article`` (the ``extract()`` entry point), ``template`` (lines a site repeats on
many pages, learned during a crawl: ``SiteTemplates``), ``limits`` (the size limits).
``python -m extract PAGE.html`` runs it.

The names below are imported on first use (PEP 562): the crawler process, which parses pages for links and
page kinds (``dom``, ``pagekind``) but extracts only in its worker processes, does not compile the
extractor's regular expressions (~0.1 s of CPU at every crawl's start; docs/performance.md).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from extract.article import ExtractResult, NotArticle, extract, load_page
    from extract.dom import Page, load
    from extract.template import SiteTemplates
    from extract.version import EXTRACT_VERSION

_WHERE = {"ExtractResult": ".article", "NotArticle": ".article", "extract": ".article", "load_page": ".article",
          "Page": ".dom", "load": ".dom", "SiteTemplates": ".template", "EXTRACT_VERSION": ".version"}

__all__ = ["EXTRACT_VERSION", "ExtractResult", "NotArticle", "Page", "SiteTemplates", "extract", "load", "load_page"]


def __getattr__(name: str) -> Any:
    """One of the package's names, from its module (imported now, once)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'extract' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value
