"""The news spider's page facts (heading, links, feeds, canonical link, shape) are measured in a worker process from
the tree Scrapy's selector makes of the page: the facts, and so the spider's items and requests, are the same as
when the spider reads Scrapy's tree itself (real worker processes, real pages of ../shared/data)."""
from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.response import get_base_url
from scrapy.utils.test import get_crawler

from benchmarks.shared_data import HTML_DIR
from crawler.spiders.base import selector_type
from crawler.spiders.news import NewsSpider
from crawler.urls import canonical_pair, host_key, page_id
from extract.pagekind import page_facts
from pipelines._worker_tasks import page_facts_of, warm_up_extract
from pipelines._workers import pool_for

pytestmark = pytest.mark.timeout(180)

STORY = "记者从市政府获悉，新的公交线路将于下月开通，沿线居民出行将更加方便。" * 6
EDGES = {
    "article": f"<html><head><title>新线路开通</title><link rel='canonical' href='/news/20240501/1.html'></head>"
               f"<body><h1>新线路开通</h1><p>{STORY}</p><a href='/news/20240501/2.html'>下一篇</a></body></html>",
    "list": "<html><body><ul>" + "".join(f"<li><a href='/news/20240501/{n}.html'>第{n}条新闻标题在这里</a></li>"
                                          for n in range(30)) + "</ul></body></html>",
    "soft 404": "<html><head><title>404 页面不存在</title></head><body><h1>页面不存在</h1><p>返回首页</p></body></html>",
    "base and feeds": "<html><head><base href='http://x.cn/other/'><link rel='alternate' type='application/rss+xml' "
                      "href='/feed.xml'><link rel='alternate' href='/nofeed'></head><body><a href='a.html'>a</a>"
                      "<a href=' javascript:void(0)'>j</a><a href='#top'>t</a><a href='a.html'>again</a></body></html>",
    "after a stray </html>": f"<html><body><p>导航</p></body></html><div><p>{STORY}</p>"
                             "<a href='/news/20240501/3.html'>下一篇</a></div>",
    "comments and xml declaration": f"<?xml version='1.0' encoding='utf-8'?><html><body><!-- <a href='/hidden'>x</a> -->"
                                    f"<p>{STORY}<!--kw-->段落</p></body></html>",
    "empty": "",
    "no markup": "只有一行字",
}


def _response(url: str, body: bytes, headers: dict | None = None) -> HtmlResponse:
    return HtmlResponse(url, body=body, headers=headers or {"Content-Type": "text/html; charset=utf-8"},
                        request=Request(url))


def _real_pages() -> list[HtmlResponse]:
    files = sorted(HTML_DIR.glob("*/*.html"))
    assert files, f"no pages in {HTML_DIR}"
    return [HtmlResponse(f"https://news.x.cn/{i % 5}/p{i}.html", body=path.read_bytes(), request=Request("https://x.cn/"))
            for i, path in enumerate(files[::4])]


def _encoded_pages() -> list[HtmlResponse]:
    """The edge pages in the encodings Scrapy meets: declared in the header, in a meta tag only, by a BOM, none."""
    article = EDGES["base and feeds"].replace("<a href='a.html'>a</a>", f"<a href='a.html'>{STORY}</a>")
    meta = article.replace("<head>", "<head><meta charset='gbk'>")
    return [_response("http://x.cn/e/1.html", article.encode("gbk"), {"Content-Type": "text/html; charset=gbk"}),
            _response("http://x.cn/e/2.html", meta.encode("gbk"), {"Content-Type": "text/html"}),
            _response("http://x.cn/e/3.html", b"\xef\xbb\xbf" + article.encode(), {"Content-Type": "text/html; charset=gbk"}),
            _response("http://x.cn/e/4.html", article.encode(), {}),
            _response("http://x.cn/e/5.html", article.encode("big5", "replace"), {"Content-Type": "text/html; charset=big5"})]


@pytest.mark.parametrize("shape", [True, False])
def test_the_workers_facts_are_the_facts_of_scrapys_tree(shape):
    pages = _real_pages() + _encoded_pages()
    pages += [_response(f"http://x.cn/news/{i}.html", html.encode()) for i, html in enumerate(EDGES.values())]
    for r in pages:
        facts = page_facts_of(r.body, r.encoding, r.url, selector_type(r), shape)
        assert facts == page_facts(r.selector.root, get_base_url(r), shape), r.url
        assert facts.base == get_base_url(r), r.url


def test_the_facts_carry_what_the_spider_reads():
    r = _response("http://x.cn/news/9.html", EDGES["base and feeds"].encode())
    facts = page_facts_of(r.body, r.encoding, r.url, "html", False)
    assert facts.base == "http://x.cn/other/" and facts.hrefs == ("a.html",)
    assert facts.feeds == (("application/rss+xml", "/feed.xml"), ("", "/nofeed"))
    assert facts.shape is None
    assert page_facts_of(r.body, r.encoding, r.url, "html", False, feeds=False) == replace(facts, feeds=())
    soft = _response("http://x.cn/news/10.html", EDGES["soft 404"].encode())
    assert page_facts_of(soft.body, "utf-8", soft.url, "html", False).shape is not None   # a soft 404 is measured anyway
    article = _response("http://x.cn/news/11.html", EDGES["article"].encode())
    assert page_facts_of(article.body, "utf-8", article.url, "html", True).canonical == "/news/20240501/1.html"


def _spider(workers: bool) -> NewsSpider:
    crawler = get_crawler(NewsSpider, {"ZHDEDUP_EXTRACT_WORKERS": 1, "ZHDEDUP_FINGERPRINT_WORKERS": 1})
    crawler.stats.open_spider()
    spider = NewsSpider.from_crawler(crawler, start_urls="http://x.cn/,https://news.x.cn/")
    if workers:
        pool = pool_for(crawler)
        pool.here_below = 0.0   # the facts go to the worker however idle this test process is (`offload` stays)
        pool.start(warm_up_extract)
    return spider


def _outputs(spider: NewsSpider, responses: list[TextResponse]) -> list[list[tuple]]:
    """What parse_page yields for each response: items (url, page id, canonical URL and claim) and requests."""
    async def one(r: TextResponse) -> list[tuple]:
        site = next(t.name for t in spider.targets if host_key(r.url) in t.hosts)
        out = []
        async for x in spider.parse_page(r, site):
            out.append(("request", x.url, x.priority) if isinstance(x, Request)
                       else ("item", x["url"], x["page_id"], x["canonical_url"], x.get("canonical_claim")))
        return out

    async def every() -> list[list[tuple]]:
        return [await one(r) for r in responses]
    return asyncio.run(every())


def test_the_spider_yields_the_same_items_and_requests_with_worker_processes_as_without():
    # UTF-8 bytes declared GB2312: page kind reads extraction's decoding; the page id stays Scrapy's reading
    mismatched = _response("http://x.cn/news/20240501/7.html", EDGES["article"].replace("/news/", "/新闻/").encode(),
                           {"Content-Type": "text/html; charset=gb2312"})
    pages = [_response(f"http://x.cn/news/20240501/{i}.html", html.encode()) for i, html in enumerate(EDGES.values())]
    pages += _real_pages()[:40] + _encoded_pages() + [mismatched]
    here = _outputs(_spider(workers=False), pages)
    spider = _spider(workers=True)
    try:
        assert spider.crawler._zhdedup_workers.started
        there = _outputs(spider, pages)
        assert spider.crawler._zhdedup_workers.offload
    finally:
        spider.crawler._zhdedup_workers.close()
    assert there == here
    kinds = {name: [x[0] for x in out] for name, out in zip(EDGES, there)}
    assert kinds["article"] == ["item", "request"] and kinds["soft 404"] == [] and "item" not in kinds["list"]
    assert there[-1][0][:4] == ("item", mismatched.url, page_id(canonical_pair(mismatched)[0]), canonical_pair(mismatched)[0])
    assert sum(1 for out in there for x in out if x[0] == "item") >= 10   # real pages: articles found


def test_a_text_response_that_is_no_html_tree_is_unparseable_with_workers_and_without():
    from scrapy.http import TextResponse as Plain
    body = b'{"items": [1, 2, 3], "text": "\xe4\xb8\xad\xe6\x96\x87"}'   # parsel takes it for JSON: no lxml tree
    r = Plain("http://x.cn/news/20240501/9.json", body=body, headers={"Content-Type": "text/plain; charset=utf-8"},
              request=Request("http://x.cn/news/20240501/9.json"))
    for workers in (False, True):
        spider = _spider(workers)
        try:
            assert _outputs(spider, [r]) == [[]]
            assert spider.crawler.stats.get_value("zhdedup/failed/unparseable") == 1
        finally:
            if workers:
                spider.crawler._zhdedup_workers.close()
