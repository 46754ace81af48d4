"""Page kind: the content sniffer, page shape (article vs list), soft 404s, URL shapes, densest block."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse

from benchmarks.shared_data import HTML_DIR
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


# --- issue 15: short briefs with link blocks are articles; list pages stay list pages ----------------------

BRIEF = ("新京报讯 10月30日，据香港媒体报道，武侠小说泰斗金庸逝世，享年94岁。主演过《笑傲江湖》的李亚鹏接受采访时表示，"
         "自己刚刚得知这个消息感到很突然和难过，“他是一个特别幽默睿智的老人”。")
TITLES = [f"第{i}条相关新闻的标题文字比较长一些" for i in range(30)]
NAV = "".join(f"<li><a href='/c{i}/'>频道{i}</a></li>" for i in range(16))
HOT = "".join(f"<li><em>{i}</em><a href='/h/{i}.html'>{t}</a></li>" for i, t in enumerate(TITLES[:10]))


def news_page(main: str) -> str:
    """A page of a news site around `main`: channel menu, hot-news ranking, footer."""
    return (f"<html><head><title>标题_示例网</title></head><body><ul class='nav'>{NAV}</ul>"
            f"<div class='main'><h1>金庸逝世</h1><div class='info'>2018-10-30 来源：示例网</div>{main}</div>"
            f"<div class='side'><h3>热点排行</h3><ul>{HOT}</ul></div>"
            "<div class='footer'>关于我们 | 联系我们 | Copyright © 2018 示例网</div></body></html>")


def related(n: int = 12) -> str:
    """A 相关阅读 block of n links."""
    return "<div class='related'><h3>相关阅读</h3><ul>" + "".join(
        f"<li><a href='/n/{i}.html'>{t}</a></li>" for i, t in enumerate(TITLES[:n])) + "</ul></div>"


BRIEF_PAGES = {
    "related": news_page(f"<div class='content'><p>{BRIEF}</p></div>{related()}"),
    "comments": news_page(f"<div class='content'><p>{BRIEF}</p></div><div class='comments'><h3>网友评论</h3><ul>"
                          + "".join(f"<li><a href='/u/{i}'>网友{i}</a><span>说得好，怀念金庸先生。</span><em>{i}赞</em></li>"
                                    for i in range(8)) + "</ul></div>"),
    "prevnext": news_page(f"<div class='content'><p>{BRIEF}</p></div><div class='pager'><p>上一篇：<a href='/1.html'>"
                          f"{TITLES[0]}</a></p><p>下一篇：<a href='/2.html'>{TITLES[1]}</a></p></div>"),
    "gallery": news_page("<div class='gallery'><img src='/p/0.jpg'><div>1/12</div>"
                         f"<p class='caption'>{BRIEF}</p><ul>" + "".join(
                             f"<li><a href='/photo/{i}.html'><img src='/p/{i}.jpg'></a></li>" for i in range(12))
                         + "</ul></div>"),
}


@pytest.mark.parametrize("kind", sorted(BRIEF_PAGES))
def test_short_brief_with_link_blocks_is_an_article(kind):
    """The old rule wanted 200 characters of prose on a URL without a date or id: these briefs were skipped."""
    page = response("http://127.0.0.1:8000/show.php?id=7", BRIEF_PAGES[kind])
    assert 80 <= len(BRIEF) < 200
    assert pagekind.page_shape(page.selector.root).is_article(url_hint=False)


def test_brief_with_related_block_is_extracted_without_the_links():
    from extract.article import extract
    result = extract(BRIEF_PAGES["related"].encode("utf-8"), url="http://127.0.0.1:8000/show.php?id=7")
    assert BRIEF.split("，")[1] in result.text and TITLES[0] not in result.text


def test_link_dense_extraction_with_running_text_is_not_a_list_page():
    """Links dominated the raw extraction (density 0.6) but a sentence of running text remains: an article."""
    from extract.article import NotArticle, check_body
    check_body(BRIEF, "金庸逝世", 50, density=0.6)
    with pytest.raises(NotArticle) as err:
        check_body("\n".join(TITLES[:12]), "国内新闻", 50, density=0.6)
    assert err.value.reason == "list_page"


def test_headline_teaser_list_is_a_list_page():
    """Each teaser is a sentence, but every one belongs to a linked list item: a list page (the old rule
    took the longest teaser for an article body)."""
    teaser = "国务院联防联控机制印发通知，要求各地区根据当前疫情防控形势和要求，突出重点、统筹兼顾、分类指导。这是第{}条。"
    items = "".join(f"<div class='item'><h3><a href='/n/{i}.html'>{TITLES[i]}</a></h3><p>{teaser.format(i)}{teaser.format(i)}</p>"
                    f"<span>2018-11-0{i % 9 + 1}</span></div>" for i in range(15))
    page = response("http://127.0.0.1:8000/list_2.html", news_page(f"<div class='list'>{items}</div>"))
    assert not pagekind.page_shape(page.selector.root).is_article(url_hint=True)


@pytest.mark.parametrize("name", ["test_list_page_163_2", "test_list_page_netease_forum_1"])
def test_real_list_pages_are_still_list_pages(name):
    from pathlib import Path
    raw = ((HTML_DIR / "gne") / f"{name}.html").read_bytes()
    page = HtmlResponse("https://news.163.com/", body=raw, request=Request("https://news.163.com/"))
    assert not pagekind.page_shape(page.selector.root).is_article(url_hint=True)


def test_spider_reads_mis_declared_utf8_with_extractions_decoder():
    """UTF-8 bytes declared GB2312: Scrapy's tree is mojibake without sentences; page kind gets a readable tree."""
    from pathlib import Path

    from crawler.spiders.base import root_of
    raw = ((HTML_DIR / "gne") / "tests_people_1.html").read_bytes()
    page = HtmlResponse("http://culture.people.com.cn/n1/2019/0906/c1.html", body=raw,
                        request=Request("http://culture.people.com.cn/n1/2019/0906/c1.html"))
    assert "纸上得来终觉浅" in root_of(page).text_content()
    assert pagekind.page_shape(root_of(page)).is_article()


def xpath_heading(root) -> str:
    """heading_text as it was written with XPath: the reference its faster form must equal."""
    return f"{' '.join(root.xpath('//title//text()'))} {' '.join(root.xpath('(//h1)[1]//text()'))}".strip()


HEADING_PIECES = ["<title>T1</title>", "<TITLE>大写</TITLE>", "<h1>H<!--c-->x</h1>", "<H1>Big<b>b</b></H1>", "</html>",
                  "</body>", "<html>", "<body>", "<head>", "</head>", "<svg><title>S</title></svg>", "<p>段落文字</p>",
                  "<h1></h1>", "<html xmlns='http://www.w3.org/1999/xhtml'>", "<script>var t='<h1>no</h1>';</script>",
                  "<template><h1>tpl</h1></template>", "<noscript><h1>ns</h1></noscript>", "&amp;<&>", "<h1>未闭合",
                  "<title>二<title>三</title>", "<div>", "</div>", "正文", "<?pi x?>", "<!-- note -->"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(HEADING_PIECES), min_size=1, max_size=12))
def test_heading_text_is_xpaths_title_and_first_h1(pieces):
    """Also where libxml2 puts an <h1> or <title> after a stray </html> beside the root element, not in it."""
    from crawler.spiders.base import root_of
    from extract.dom import load

    body = "".join(pieces).encode()
    for root in (root_of(response("http://x.cn/a/1.html", "".join(pieces))), load(body).tree):
        if root is not None:
            assert pagekind.heading_text(root) == xpath_heading(root)


def test_heading_text_on_real_pages():
    pages = sorted((HTML_DIR / "gne").glob("*.html"))[:40]
    assert pages
    for path in pages:
        root = HtmlResponse("https://news.example.cn/", body=path.read_bytes()).selector.root
        assert pagekind.heading_text(root) == xpath_heading(root), path.name
