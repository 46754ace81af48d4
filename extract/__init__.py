"""Article extraction for Chinese news and novel pages, pure apart from lxml / trafilatura / html5lib.

Modules: ``sniff`` (binary and empty bodies), ``encoding`` (bytes -> text), ``dom`` (parse once, walk once,
densest block), ``pagekind`` (article vs list page, soft 404, URL shapes), ``boilerplate`` (Chinese
boilerplate lines), ``article`` (the ``extract()`` entry point).  ``python -m extract PAGE.html`` runs it.
"""
from extract.article import ExtractResult, NotArticle, extract, load_page
from extract.dom import Page, load

__all__ = ["ExtractResult", "NotArticle", "Page", "extract", "load", "load_page"]
