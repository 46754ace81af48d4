"""Page kind: the content sniffer, page shape (article vs list), soft 404s, URL shapes, densest block."""
from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from extract import pagekind
from extract.dom import densest_block
from extract.sniff import binary_kind, binary_reason


def response(url: str, body: str, encoding: str = "utf-8") -> HtmlResponse:
    """An HtmlResponse as the downloader would produce it (the spiders pass its parsed tree)."""
    return HtmlResponse(url, body=body.encode(encoding), encoding=encoding, request=Request(url))


@pytest.mark.parametrize("body,kind", [
    (b"\x89PNG\r\n\x1a\n....", "png"), (b"%PDF-1.7 ...", "pdf"), (b"PK\x03\x04zip", "zip"),
    (b"abc\x00def" * 10, "nul-bytes"), (b"<html><body>\xe4\xbd\xa0\xe5\xa5\xbd</body></html>", None),
    ("<html>中文</html>".encode("gbk"), None),
])
def test_binary_bodies_are_recognised(body, kind):
    assert binary_kind(body) == kind


def test_article_and_list_shapes():
    article = response("https://x.cn/p", "<html><body><div class='nav'><a href='/'>首页</a></div><div>"
                       + "".join(f"<p>这是第{i}段正文，内容比较长，包含逗号，句号。还有更多文字。</p>" for i in range(8))
                       + "</div></body></html>")
    listing = response("https://x.cn/", "<html><body><ul>" + "".join(
        f"<li><a href='/a/{i}.html'>新闻标题第{i}条，很长的一条标题</a></li>" for i in range(30)) + "</ul></body></html>")
    assert pagekind.page_shape(article.selector.root).is_article()
    shape = pagekind.page_shape(listing.selector.root)
    assert not shape.is_article() and shape.link_density > 0.9


def test_soft_404_needs_error_heading_and_little_text():
    assert pagekind.is_soft_404("404 页面不存在", 40)
    assert pagekind.is_soft_404("抱歉，您访问的页面不存在", 100)
    assert not pagekind.is_soft_404("404 页面不存在", 5000)
    assert not pagekind.is_soft_404("市图书馆推出夜间自习室", 100)


def test_url_shapes():
    assert pagekind.url_looks_article("https://news.sina.com.cn/c/2024-05-01/doc-inawxyz1234.shtml")
    assert pagekind.url_looks_article("http://www.people.com.cn/n1/2024/0501/c1001-40000000.html")
    assert pagekind.url_looks_list("https://www.x.cn/")
    assert pagekind.url_looks_list("https://www.x.cn/news/index_2.html")
    assert pagekind.skippable_link("https://x.cn/img/a.JPG") and not pagekind.skippable_link("https://x.cn/a.html")


def test_densest_block_is_the_text_container():
    page = response("https://x.cn/1.html", "<html><body><h1>第一章</h1><div class='nav'>导航 <a href='/'>首页</a></div>"
                    "<div id='content'>第一段很长的文字。<br/>第二段也很长的文字。<br/>第三段。</div></body></html>")
    block = densest_block(page.selector.root)
    assert block.get("id") == "content"


def test_one_sniffer_names_kinds_for_spiders_and_sentences_for_people():
    assert binary_reason(b"\x89PNG\r\n\x1a\n") == "binary content (png image)"
    assert binary_reason(b"\xef\xbb\xbf<html></html>") is None
    assert binary_kind("<html>中文</html>".encode("utf-16")) is None  # a BOM: text, even with NUL bytes
