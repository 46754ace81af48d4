"""Article extraction for Chinese news and novel pages, pure apart from lxml / trafilatura / html5lib.

Modules: ``sniff`` (binary and empty bodies), ``encoding`` (bytes -> text), ``dom`` (parse once, walk once,
densest block), ``pagekind`` (article vs list page, soft 404, URL shapes), ``boilerplate`` (Chinese
boilerplate lines), ``article`` (the ``extract()`` entry point), ``template`` (lines a site repeats on
many pages, learned during a crawl: ``SiteTemplates``), ``limits`` (the size limits), ``version``.
``python -m extract PAGE.html`` runs it.

Import names from their modules (``from extract.article import extract``): this package imports none of them,
so the crawler process, which parses pages for links and page kinds (``dom``, ``pagekind``) but extracts only in
its worker processes, never compiles the extractor's regular expressions (~0.1 s of CPU at every crawl's start;
docs/performance.md, "Seventeenth pass").
"""
