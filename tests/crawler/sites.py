"""Fixture sites for the crawler's end-to-end tests (texts: the project's own demo content).

X  news site crawled with a profile: UTF-8, GBK and Big5 articles, a sitemap-only article, a page that
   is only navigation, a 404 served as 200, a redirect loop, a 10 MB page, a PNG served as text/html,
   a real 404, a robots.txt-forbidden page, and one article linked four times with tracking params.
Y  reprint site crawled from its start URL: an exact copy, a near copy of the GBK story, a simplified
   copy of the Big5 (traditional) story, and an original story reachable only through its RSS feed.
Z  a novel: a TOC with a "latest chapters" box, chapters split into "下一页" parts.
P  a pirate copy of Z: a GBK chapter in two parts, a chapter padded with junk lines, a verbatim chapter.
"""
from __future__ import annotations

from html import escape

import opencc

from crawler.demo_site.content import BOOK, STORIES
from crawler.demo_site.server import Resource, Site, html, redirect

S = {s["slug"]: s for s in STORIES}
TRAD = opencc.OpenCC("s2tw")
# small edits (function words) that keep the SimHash within k of the original
CHANGES_1002 = [("已经", "已"), ("就被约满", "便被约满"), ("吃完饭就能过来", "吃完饭便能过来")]
NAV = "".join(f'<li><a href="/list/{i}.html">频道{i}</a></li>' for i in range(1, 4))
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64
STATE_ROW = '{"id": 12345, "ad": "广告位招租", "img": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"},\n'


def text_of(slug: str) -> str:
    """A story's paragraphs as the extractor returns them (one per line)."""
    return "\n".join(S[slug]["paragraphs"])


def _paras(paragraphs: list[str]) -> str:
    """Paragraphs as <p> elements."""
    return "".join(f"<p>{escape(p)}</p>" for p in paragraphs)


def x_article(title: str, paragraphs: list[str], charset: str = "utf-8") -> str:
    """An article page of site X."""
    return (f'<html><head><meta charset="{charset}"><title>{escape(title)} - X日报</title></head><body>'
            f'<ul class="nav">{NAV}</ul><div class="article"><h1>{escape(title)}</h1>'
            f'<div class="info">2025-03-12 来源：X日报</div><div class="content">{_paras(paragraphs)}</div></div>'
            f'<div class="footer">X日报 版权所有</div></body></html>')


def x_paths() -> dict[str, str]:
    """Article paths of site X by role."""
    return {"utf8": "/news/2025/0312/1001.html", "gbk": "/news/2025/0314/1002.html",
            "big5": "/news/2025/0317/1003.html", "sitemap": "/news/2025/0320/1004.html",
            "nav": "/news/2025/0321/nav.html", "soft404": "/news/2025/0322/gone.html",
            "loop": "/news/2025/0323/loop.html", "huge": "/news/2025/0324/huge.html",
            "binary": "/news/2025/0325/photo.html", "missing": "/news/2025/0326/missing.html",
            "robots": "/private/news/2025/0327/secret.html"}


def site_x(bases: dict[str, str]) -> Site:
    """Site X (see module docstring)."""
    p = x_paths()
    site: Site = {}
    links = [p["utf8"] + "?utm_source=home", p["utf8"] + "?spm=a1.b2.c3", p["utf8"] + "#top", p["utf8"]]
    links += [p[k] for k in ("gbk", "big5", "nav", "soft404", "loop", "huge", "binary", "missing", "robots")]
    items = "".join(f'<li><a href="{u}">新闻 {i}</a></li>' for i, u in enumerate(links))
    site["/"] = html(f'<html><head><meta charset="utf-8"><title>X日报</title></head><body><ul>{NAV}</ul>'
                     f'<ul class="list">{items}</ul><a href="/list/2.html">下一页</a></body></html>')
    for i in range(1, 4):
        site[f"/list/{i}.html"] = html(f'<html><body><ul>{NAV}</ul><a href="/">首页</a></body></html>')
    site["/robots.txt"] = Resource(f"User-agent: *\nDisallow: /private/\nSitemap: {bases['x']}/sitemap.xml\n".encode(),
                                   headers={"Content-Type": "text/plain"})
    site["/sitemap.xml"] = Resource(
        f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f'<url><loc>{bases["x"]}{p["sitemap"]}</loc></url></urlset>'.encode(),
        headers={"Content-Type": "application/xml"})
    s = S["1001"]
    site[p["utf8"]] = html(x_article(s["title"], s["paragraphs"]))
    s = S["1002"]
    site[p["gbk"]] = html(x_article(s["title"], s["paragraphs"], "gbk"), encoding="gbk")
    s = S["1003"]
    big5 = TRAD.convert(x_article(s["title"], s["paragraphs"], "big5"))
    site[p["big5"]] = Resource(big5.encode("big5"), headers={"Content-Type": "text/html"})  # charset only in <meta>
    s = S["1004"]
    site[p["sitemap"]] = html(x_article(s["title"], s["paragraphs"]))
    nav_links = "".join(f'<li><a href="/list/{i % 3 + 1}.html">栏目导航 {i}</a></li>' for i in range(40))
    site[p["nav"]] = html(f'<html><head><meta charset="utf-8"><title>网站导航</title></head><body>'
                          f'<h1>网站导航</h1><ul>{nav_links}</ul></body></html>')
    site[p["soft404"]] = html('<html><head><meta charset="utf-8"><title>404 页面不存在</title></head><body>'
                              '<h1>抱歉，您访问的页面不存在</h1><p>3秒后返回<a href="/">首页</a></p></body></html>')
    site[p["loop"]] = redirect("/r/1.html")  # /r/1 -> /r/2 -> ... -> /r/20 -> /r/1: never arrives
    for i in range(1, 21):
        site[f"/r/{i}.html"] = redirect(f"/r/{i % 20 + 1}.html")
    s = S["2001"]
    head = x_article(s["title"], s["paragraphs"]).replace("</body></html>", "")
    state = STATE_ROW * (10 * 1024 * 1024 // len(STATE_ROW.encode()))  # a 10 MB inline app state
    site[p["huge"]] = Resource((head + "<script>window.__STATE__ = [" + state + "];</script></body></html>"
                                ).encode("utf-8"))
    site[p["binary"]] = Resource(PNG, headers={"Content-Type": "text/html; charset=utf-8"})
    site[p["robots"]] = html(x_article("内部", ["不应被抓取的页面。"] * 5))
    return site


def y_article(title: str, paragraphs: list[str]) -> str:
    """An article page of site Y (another layout, a sidebar)."""
    return (f'<html><head><meta charset="utf-8"><title>{escape(title)}_Y快讯</title>'
            f'<link rel="alternate" type="application/rss+xml" href="/rss.xml"></head><body>'
            f'<div class="top"><a href="/">Y快讯</a></div><div class="wrap"><div class="main">'
            f'<h1>{escape(title)}</h1><div class="meta">发布时间：2025-03-22</div>'
            f'<div id="artibody">{_paras(paragraphs)}</div></div>'
            f'<div class="side"><a href="/">热门</a> <a href="/">排行</a></div></div></body></html>')


def y_paths() -> dict[str, str]:
    """Article paths of site Y by role."""
    return {"exact": "/c/1.html", "near": "/c/2.html", "simplified": "/c/3.html", "feed": "/c/4.html"}


def site_y(bases: dict[str, str]) -> Site:
    """Site Y (see module docstring)."""
    p = y_paths()
    site: Site = {}
    links = "".join(f'<li><a href="{p[k]}?from=home">文章</a></li>' for k in ("exact", "near", "simplified"))
    site["/"] = html(f'<html><head><meta charset="utf-8"><title>Y快讯</title>'
                     f'<link rel="alternate" type="application/rss+xml" href="/rss.xml"></head>'
                     f'<body><ul>{links}</ul></body></html>')
    site["/rss.xml"] = Resource(
        f'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Y</title>'
        f'<item><title>原创</title><link>{bases["y"]}{p["feed"]}?utm_medium=rss</link></item></channel></rss>'.encode(),
        headers={"Content-Type": "application/rss+xml"})
    s = S["1001"]
    site[p["exact"]] = html(y_article(s["title"], s["paragraphs"]))
    s = S["1002"]
    paragraphs = list(s["paragraphs"])
    for old, new in CHANGES_1002:
        paragraphs = [x.replace(old, new) for x in paragraphs]
    site[p["near"]] = html(y_article(s["title"], paragraphs))
    s = S["1003"]
    site[p["simplified"]] = html(y_article(s["title"], s["paragraphs"]))
    title, paragraphs = BOOK["chapters"][3]
    site[p["feed"]] = html(y_article("来信（小说连载）", paragraphs))
    return site


def chapter_page(title: str, paragraphs: list[str], pager: str, charset: str = "utf-8") -> str:
    """A chapter page of Z or P."""
    body = "<br/><br/>".join(escape(x) for x in paragraphs)
    return (f'<html><head><meta charset="{charset}"><title>{escape(title)}_{BOOK["title"]}</title></head><body>'
            f'<div class="header"><a href="/">书屋</a></div><h1>{escape(title)}</h1><div class="pager">{pager}</div>'
            f'<div id="content">{body}</div><div class="pager">{pager}</div></body></html>')


def _split(paragraphs: list[str], parts: int) -> list[list[str]]:
    """Paragraphs cut into `parts` consecutive runs."""
    size = -(-len(paragraphs) // parts)
    return [paragraphs[i:i + size] for i in range(0, len(paragraphs), size)]


def book_site(root: str, layout: dict[int, dict]) -> Site:
    """A book: TOC at `root` with a latest-chapters box, chapters 1..3 of BOOK split as `layout` says
    ({chapter: {"parts": n, "charset": cs, "junk": [lines]}})."""
    site: Site = {}
    chapters = BOOK["chapters"][:3]
    url = {i: f"{root}{100 + i}.html" for i in range(1, 4)}
    latest = "".join(f'<li><a href="{url[i]}">{escape(chapters[i - 1][0])}</a></li>' for i in (3, 2))
    full = "".join(f'<li><a href="{url[i]}">{escape(t)}</a></li>' for i, (t, _) in enumerate(chapters, 1))
    site[root] = html(f'<html><head><meta charset="utf-8"><title>{BOOK["title"]}最新章节_全文阅读</title></head>'
                      f'<body><div id="info"><h1>{BOOK["title"]}</h1></div><h3>最新章节</h3><ul>{latest}</ul>'
                      f'<h3>正文</h3><ul>{full}</ul></body></html>')
    for i, (title, paragraphs) in enumerate(chapters, 1):
        spec = layout.get(i, {})
        charset = spec.get("charset", "utf-8")
        paragraphs = list(paragraphs)
        for pos, line in spec.get("junk", []):
            paragraphs.insert(pos, line)
        parts = _split(paragraphs, spec.get("parts", 1))
        for n, part in enumerate(parts, 1):
            path = url[i] if n == 1 else url[i].replace(".html", f"_{n}.html")
            pager = f'<a href="{root}">目录</a> '
            if i > 1:
                pager = f'<a href="{url[i - 1]}">上一章</a> ' + pager
            if n < len(parts):
                pager += f'<a href="{url[i].replace(".html", f"_{n + 1}.html")}">下一页</a>'
            elif i < len(chapters):
                pager += f'<a href="{url[i + 1]}">下一章</a>'
            site[path] = html(chapter_page(title, part, pager, charset), encoding=charset)
    return site


def site_z(bases: dict[str, str]) -> Site:
    """The novel: chapter 1 on one page, chapter 2 in two parts, chapter 3 in three parts."""
    return book_site("/book/1/", {2: {"parts": 2}, 3: {"parts": 3}})


PIRATE_JUNK = [(0, "天才一秒记住本站地址：pirate.example 最快更新！"), (2, "【推荐】热门小说排行榜，精彩好书天天看。"),
               (4, "手机用户请访问 m.pirate.example 阅读。"), (6, "本章完，求收藏求推荐票，感谢各位书友支持！")]


def site_p(bases: dict[str, str]) -> Site:
    """The pirate copy: chapter 1 in GBK and two parts, chapter 2 with junk lines, chapter 3 verbatim."""
    return book_site("/read/9/", {1: {"parts": 2, "charset": "gbk"}, 2: {"junk": PIRATE_JUNK}})


SITES = {"x": site_x, "y": site_y, "z": site_z, "p": site_p}
