"""The four demo sites, generated from content.py.

A  东江日报 (news): four stories, list pages, robots.txt with a sitemap.
B  南方快讯 (reprints): A's stories in another layout with ads: one verbatim, one with a few words
   changed, one with an extra editor's line; plus one story of its own; an RSS feed; tracking links.
C  青禾书屋 (the novel): a table of contents and six chapters.
D  笔趣阁镜像 (a pirate copy of the novel): "latest chapters" box, junk lines, chapters split in two
   parts joined by "下一页" links.
"""
from __future__ import annotations

from html import escape

from crawler.demo_site.content import BOOK, STORIES
from crawler.demo_site.server import Resource, Site, html

# a few changed words, small enough for the SimHash to stay within k = 3 bits
B_CHANGES = {"1002": [("已经", "已"), ("就被约满", "便被约满"), ("吃完饭就能过来", "吃完饭便能过来")],
             "1003": [("长期由", "一直由")]}
B_REPRINTS = {"1001": "3001", "1002": "3002", "1003": "3003"}
AD = ('<div class="ad">【广告】春季家装节 全场五折起 <a href="/?utm_campaign=spring&amp;from=ad">立即抢购</a></div>')
JUNK_TOP = "天才一秒记住本站地址：dengta-demo.example 最快更新！无广告！"
JUNK_BOTTOM = "手机用户请浏览 m.dengta-demo.example 阅读，更优质的阅读体验。"


def _paras(paragraphs: list[str]) -> str:
    """Paragraphs as <p> elements."""
    return "\n".join(f"<p>{escape(p)}</p>" for p in paragraphs)


def _story(slug: str) -> dict:
    """A story of content.py by its slug."""
    return next(s for s in STORIES if s["slug"] == slug)


def site_a(bases: dict[str, str]) -> Site:
    """东江日报: the original news site."""
    base = bases["a"]
    stories = [s for s in STORIES if s["slug"].startswith("10")]
    nav = ('<div class="nav"><a href="/">首页</a> | <a href="/local/">本地</a> | <a href="/edu/">教育</a> | '
           '<a href="/about.html">关于我们</a></div>')

    def page(title: str, inner: str) -> str:
        """Site A's page layout."""
        return (f'<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>{escape(title)} - 东江日报'
                f'</title></head><body>{nav}{inner}<div class="footer">东江日报社 版权所有（演示站点）</div></body></html>')

    def url(s: dict) -> str:
        """Site A's article URL of a story."""
        return f"/news/{s['date'][:4]}/{s['date'][5:7]}{s['date'][8:]}/{s['slug']}.html"

    site: Site = {}
    items = "".join(f'<li><a href="{url(s)}">{escape(s["title"])}</a> <span>{s["date"]}</span></li>'
                    for s in stories[:2])
    more = "".join(f'<li><a href="{url(s)}?from=list">{escape(s["title"])}</a></li>' for s in stories[2:])
    site["/"] = html(page("首页", f'<h2>要闻</h2><ul class="list">{items}</ul><a href="/list_2.html">下一页</a>'))
    site["/list_2.html"] = html(page("要闻 第2页", f'<ul class="list">{more}</ul><a href="/">上一页</a>'))
    for channel, slugs in (("local", ("1001", "1004")), ("edu", ("1002", "1003"))):
        links = "".join(f'<li><a href="{url(_story(x))}">{escape(_story(x)["title"])}</a></li>' for x in slugs)
        site[f"/{channel}/"] = html(page(channel, f'<ul class="list">{links}</ul>'))
    site["/about.html"] = html(page("关于我们", "<p>东江日报演示站点。</p><p>联系电话：0000-0000000</p>"))
    for s in stories:
        others = "".join(f'<li><a href="{url(o)}">{escape(o["title"])}</a></li>' for o in stories if o is not s)
        site[url(s)] = html(page(s["title"], (
            f'<div class="article"><h1>{escape(s["title"])}</h1><div class="info">{s["date"]} 来源：东江日报 '
            f'记者 {escape(s["author"])}</div><div class="content">{_paras(s["paragraphs"])}</div></div>'
            f'<div class="related"><h3>相关新闻</h3><ul>{others}</ul></div>')))
    site["/robots.txt"] = Resource(f"User-agent: *\nDisallow: /admin/\nSitemap: {base}/sitemap.xml\n".encode(),
                                   headers={"Content-Type": "text/plain"})
    urls = "".join(f"<url><loc>{base}{url(s)}</loc><lastmod>{s['date']}</lastmod></url>" for s in stories)
    site["/sitemap.xml"] = Resource(
        f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f'{urls}</urlset>'.encode(), headers={"Content-Type": "application/xml"})
    return site


def _b_text(slug: str) -> tuple[str, list[str]]:
    """Title and paragraphs of B's reprint of A's story `slug` (with B's edits)."""
    s = _story(slug)
    paragraphs = list(s["paragraphs"])
    for old, new in B_CHANGES.get(slug, []):
        paragraphs = [p.replace(old, new) for p in paragraphs]
    title = s["title"]
    if slug == "1003":
        title = "远程课堂进山区：城乡孩子同上科学课"
    return title, paragraphs


def site_b(bases: dict[str, str]) -> Site:
    """南方快讯: reprints with another layout, ads and small edits, plus one story of its own."""
    base = bases["b"]
    entries = [(f"/a/{new}.shtml", *_b_text(old), _story(old)["date"]) for old, new in B_REPRINTS.items()]
    own = _story("2001")
    entries.append(("/a/2001.shtml", own["title"], own["paragraphs"], own["date"]))

    def page(title: str, inner: str) -> str:
        """Site B's page layout (top banner ad, sidebar ad)."""
        return (f'<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8">'
                f'<title>{escape(title)}_南方快讯网</title>'
                f'<link rel="alternate" type="application/rss+xml" href="/rss.xml"></head><body>'
                f'<div class="top"><a href="/">南方快讯网</a> <a href="/">本地</a> <a href="/">下载APP</a></div>'
                f'{AD}<div class="wrap"><div class="main">{inner}</div><div class="side">{AD}'
                f'<div>热门排行：<a href="/a/2001.shtml">滨江绿道</a></div></div></div>'
                f'<div class="foot">南方快讯网（演示站点） 联系我们 广告服务</div></body></html>')

    site: Site = {}
    links = "".join(f'<div><a href="{p}?utm_source=home&spm=a1.b2">{escape(t)}</a></div>' for p, t, _, _ in entries)
    site["/"] = html(page("首页", f"<h2>今日快讯</h2>{links}"))
    for path, title, paragraphs, date in entries:
        site[path] = html(page(title, (
            f'<h1 class="t">{escape(title)}</h1><p class="meta">发布时间：{date} 09:30 来源：东江日报</p>'
            f'<div id="artibody">{_paras(paragraphs)}</div>'
            f'<div class="share">分享到：微信 微博 <a href="/">返回首页</a></div>')))
    rss = "".join(f"<item><title>{escape(t)}</title><link>{base}{p}?utm_medium=rss</link></item>"
                  for p, t, _, _ in entries)
    site["/rss.xml"] = Resource(f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
                                f'<title>南方快讯</title>{rss}</channel></rss>'.encode(),
                                headers={"Content-Type": "application/rss+xml"})
    return site


def site_c(bases: dict[str, str]) -> Site:
    """青禾书屋: the novel's own site."""
    site: Site = {}
    chapters = BOOK["chapters"]
    toc = "".join(f'<li><a href="/book/7/{i}.html">{escape(t)}</a></li>' for i, (t, _) in enumerate(chapters, 1))
    site["/book/7/"] = html(
        f'<html><head><meta charset="utf-8"><title>{BOOK["title"]} - 青禾书屋</title></head><body>'
        f'<div class="nav"><a href="/">青禾书屋</a></div><h1>{BOOK["title"]}</h1><p>作者：{BOOK["author"]}</p>'
        f'<ul class="toc">{toc}</ul></body></html>')
    for i, (title, paragraphs) in enumerate(chapters, 1):
        prev = f'<a href="/book/7/{i - 1}.html">上一章</a>' if i > 1 else ""
        nxt = f'<a href="/book/7/{i + 1}.html">下一章</a>' if i < len(chapters) else ""
        site[f"/book/7/{i}.html"] = html(
            f'<html><head><meta charset="utf-8"><title>{escape(title)} - {BOOK["title"]}</title></head><body>'
            f'<h1>{escape(title)}</h1><div class="chapter">{_paras(paragraphs)}</div>'
            f'<div class="pager">{prev} <a href="/book/7/">目录</a> {nxt}</div></body></html>')
    return site


def site_d(bases: dict[str, str]) -> Site:
    """笔趣阁镜像: a pirate copy, two parts per chapter, junk lines, a latest-chapters box."""
    site: Site = {}
    chapters = BOOK["chapters"]
    cid = {i: 5000 + i * 7 for i in range(1, len(chapters) + 1)}
    latest = "".join(f'<dd><a href="/read/88/{cid[i]}.html">{escape(chapters[i - 1][0])}</a></dd>'
                     for i in range(len(chapters), len(chapters) - 3, -1))
    full = "".join(f'<dd><a href="/read/88/{cid[i]}.html">{escape(t)}</a></dd>' for i, (t, _) in enumerate(chapters, 1))
    site["/read/88/"] = html(
        f'<html><head><meta charset="utf-8"><title>{BOOK["title"]}最新章节_{BOOK["title"]}全文阅读_笔趣阁</title>'
        f'</head><body><div class="header"><a href="/">笔趣阁</a> <a href="/top.html">排行榜</a></div>'
        f'<div id="info"><h1>{BOOK["title"]}</h1><p>作者：{BOOK["author"]}</p></div>'
        f'<dl><dt>《{BOOK["title"]}》最新章节</dt>{latest}<dt>《{BOOK["title"]}》正文</dt>{full}</dl></body></html>')
    for i, (title, paragraphs) in enumerate(chapters, 1):
        half = (len(paragraphs) + 1) // 2
        # the last chapter is copied verbatim on one page; the others are split and padded with junk
        parts = [paragraphs] if i == len(chapters) else [paragraphs[:half], paragraphs[half:]]
        for n, part in enumerate(parts, 1):
            path = f"/read/88/{cid[i]}.html" if n == 1 else f"/read/88/{cid[i]}_{n}.html"
            lines = "<br/><br/>".join(escape(p) for p in part)
            junk = "" if len(parts) == 1 else (JUNK_TOP if n == 1 else JUNK_BOTTOM) + "<br/><br/>"
            pager = (f'<a href="/read/88/{cid[i - 1]}.html">上一章</a> ' if i > 1 else "") + '<a href="/read/88/">目录</a> '
            if n < len(parts):
                pager += f'<a href="/read/88/{cid[i]}_{n + 1}.html">下一页</a>'
                lines += "<br/><br/>（本章未完，请点击下一页继续阅读）"
            elif i < len(chapters):
                pager += f'<a href="/read/88/{cid[i + 1]}.html">下一章</a>'
            site[path] = html(
                f'<html><head><meta charset="utf-8"><title>{escape(title)}_{BOOK["title"]}_笔趣阁</title></head>'
                f'<body><div class="header"><a href="/">笔趣阁</a></div><div class="bookname"><h1>{escape(title)}</h1>'
                f'<div class="bottem1">{pager}</div></div><div id="content">{junk}{lines}</div>'
                f'<div class="bottem2">{pager}</div></body></html>')
    return site


SITES = {"a": site_a, "b": site_b, "c": site_c, "d": site_d}
START = {"a": "/", "b": "/", "c": "/book/7/", "d": "/read/88/"}
NAMES = {"a": "东江日报 (news)", "b": "南方快讯 (reprints)", "c": "青禾书屋 (novel)", "d": "笔趣阁镜像 (pirate copy)"}
