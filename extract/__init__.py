"""Article extraction for Chinese news and novel pages, pure apart from lxml / trafilatura / html5lib.

Modules: ``sniff`` (binary and empty bodies), ``encoding`` (bytes -> text), ``dom`` (parse once, walk once,
densest block), ``pagekind`` (article vs list page, soft 404, URL shapes), ``boilerplate`` (Chinese
boilerplate lines), ``article`` (the ``extract()`` entry point), ``template`` (lines a site repeats on
many pages, learned during a crawl: ``SiteTemplates``).  ``python -m extract PAGE.html`` runs it.
"""
from extract.article import ExtractResult, NotArticle, extract, load_page
from extract.dom import Page, load
from extract.template import SiteTemplates
from extract.version import EXTRACT_VERSION

__all__ = ["EXTRACT_VERSION", "ExtractResult", "NotArticle", "Page", "SiteTemplates", "extract", "load", "load_page"]
