"""The crawl benchmark's real-page shells: the real page's weight kept, its own story, date and links gone."""
from __future__ import annotations

import re

import lxml.html

from benchmarks.bench_crawl import Article, article_html, build_sites
from benchmarks.page_shells import ELSEWHERE, fill, load_shells, make_shell
from benchmarks.shared_data import HTML_DIR, NEWS_FILE
from extract.article import extract

THEIR_PROSE = "原网站的这篇文章讲述了一个完全不同的故事，它不应该出现在基准测试的页面里，一个字也不应该。"
REAL_LIKE = (
    '<html><head><meta charset="gbk"><title>原来的标题_某新闻网</title>'
    '<meta property="article:published_time" content="2019-03-01T10:00:00+08:00">'
    '<script>var nav = {"menu": [1, 2, 3]};</script><style>.nav{color:red}</style></head><body>'
    '<div class="nav"><a href="/">首页</a> <a href="/news/list.html?p=2">新闻</a> '
    '<a href="https://other.example.com/sports/">体育</a></div>'
    f'<div class="main"><h1>原来的标题</h1><span class="src">来源：某报</span><div id="body"><p>{THEIR_PROSE}</p>'
    f'<p>{THEIR_PROSE}</p></div></div><ul class="hot"><li><a href="/a/1.html">热点一</a></li></ul>'
    '<div class="footer">版权所有</div></body></html>')
OURS = '<div class="article"><h1>我们的标题</h1><div class="content"><p>我们的故事。</p></div></div>'


def test_a_shell_keeps_the_pages_surroundings_and_loses_its_own_story_date_and_links():
    shell = make_shell(REAL_LIKE.encode("gbk"))
    page = fill(shell, '<meta charset="utf-8"><title>我们的标题</title>', OURS)
    root = lxml.html.document_fromstring(page)
    text = root.text_content()
    assert "原网站" not in text and "原来的标题" not in text and "2019-03-01" not in page
    assert root.findtext(".//title") == "我们的标题" and "gbk" not in page
    assert "首页" in text and "热点一" in text and "来源：某报" in text and "版权所有" in text
    assert 'var nav = {"menu": [1, 2, 3]}' in page and ".nav{color:red}" in page
    hrefs = [a.get("href") for a in root.iter("a")]
    assert hrefs == [ELSEWHERE, ELSEWHERE + "news/list.html?p=2", ELSEWHERE + "sports/", ELSEWHERE + "a/1.html"]
    ours = root.find_class("article")[0]
    assert ours.getparent().get("id") == "body"   # where their first paragraph was


def test_a_page_whose_own_text_would_outweigh_a_story_is_no_shell():
    lines = "".join(f"<li>第{i}条短消息，不到三十个字。</li>" for i in range(1000))
    assert make_shell(f"<html><body><ul>{lines}</ul><p>{THEIR_PROSE}</p></body></html>".encode()) is None
    assert make_shell(b"") is None


def test_the_default_pages_are_unchanged_and_shells_are_spread_over_the_sites():
    a = Article("标题", ["第一段。", "第二段。"], None, 0, "2024-05-03")
    assert article_html(a) == (
        '<html><head><meta charset="utf-8"><title>标题</title><meta property="article:published_time" '
        'content="2024-05-03T08:00:00+08:00"></head><body><div class="nav"><a href="/">首页</a> '
        '<a href="/list/0.html">列表</a></div><div class="article"><h1>标题</h1><div class="info"><span '
        'class="time">2024-05-03 08:00</span></div><div class="content"><p>第一段。</p><p>第二段。</p></div></div>'
        '<div class="footer">基准测试站点</div></body></html>')
    shells = [make_shell(REAL_LIKE.replace("热点一", f"热点{k}").encode("gbk")) for k in range(4)]
    pages = [Article(f"标题{i}", [f"第{i}段。"], None, i % 2, None) for i in range(8)]
    sites = build_sites(pages, 2, shells=shells)
    for k, name in enumerate(("site0", "site1")):
        used = {re.search(r"热点(\d)", sites[name][f"/a/{i}.html"].payload().decode()).group(1)
                for i in range(8) if i % 2 == k}
        assert used == {str(k), str(k + 2)}   # site k takes shells k, k+2, ...


def test_the_products_extractor_finds_the_story_in_nearly_every_real_shell():
    """The benchmark measures the crawl of stories, not of what a shell left over: checked through the
    product's own extraction on every fifth shell."""
    import json

    shells = load_shells(HTML_DIR)
    assert len(shells) >= 180
    texts = [json.loads(line)["text"] for line in NEWS_FILE.open(encoding="utf-8")][:len(shells)]
    found = 0
    checked = list(range(0, len(shells), 5))
    for i in checked:
        story = texts[i].replace(" ", "")[:600]
        page = fill(shells[i], '<meta charset="utf-8"><title>新闻</title>',
                    f'<div class="article"><h1>新闻{i}</h1><div class="content"><p>{story}</p></div></div>')
        got = "".join(extract(page, url=f"http://127.0.0.1/a/{i}.html").text.split())
        found += 0.9 * len(story) <= len(got) <= 1.15 * len(story)
    assert found >= 0.95 * len(checked), (found, len(checked))
