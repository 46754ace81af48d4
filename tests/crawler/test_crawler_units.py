"""Fast tests of the crawler's pieces: URLs, page checks, profiles, TOC parsing (no network)."""
from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from crawler.siteprofiles import ProfileError, load_file, load_profiles
from crawler.spiders.fiction import FictionSpider
from crawler.spiders.news import NewsSpider
from crawler.urls import CanonicalRequestFingerprinter, canonical_url, page_canonical_url, page_id, strip_tracking


def response(url: str, body: str, encoding: str = "utf-8") -> HtmlResponse:
    """An HtmlResponse as the downloader would produce it."""
    return HtmlResponse(url, body=body.encode(encoding), encoding=encoding, request=Request(url))


def test_tracking_parameters_are_removed_and_content_ones_kept():
    url = "https://news.example.cn/a/1.html?id=7&utm_source=wx&spm=a.b&from=timeline&page=2#comments"
    assert strip_tracking(url) == "https://news.example.cn/a/1.html?id=7&page=2"
    assert canonical_url(url) == "https://news.example.cn/a/1.html?id=7&page=2"
    assert canonical_url("https://x.cn/a?b=2&a=1") == "https://x.cn/a?a=1&b=2"


def test_fingerprint_ignores_tracking_but_not_content_params():
    fp = CanonicalRequestFingerprinter().fingerprint
    plain = fp(Request("https://x.cn/a/1.html"))
    assert fp(Request("https://x.cn/a/1.html?utm_campaign=s&spm=1.2")) == plain
    assert fp(Request("https://x.cn/a/1.html#top")) == plain
    assert fp(Request("https://x.cn/a/1.html?page=2")) != plain


def test_page_id_is_stable_and_not_salted():
    assert page_id("https://x.cn/a/1.html") == "249c7e32ce2c4cb67b42a12779549328"  # blake2b-128: same in every process


def test_canonical_link_wins_over_the_url():
    r = response("https://m.x.cn/a/1.html?from=share",
                 '<html><head><link rel="Canonical" href="https://www.x.cn/a/1.html?utm_source=m"></head></html>')
    assert page_canonical_url(r) == "https://www.x.cn/a/1.html"
    r = response("https://m.x.cn/a/1.html?from=share", "<html><head></head></html>")
    assert page_canonical_url(r) == "https://m.x.cn/a/1.html"


def test_bundled_profiles_load():
    news = load_profiles("site")
    assert {"chinanews", "people", "sina"} <= {p.name for p in news}
    assert all(p.article_links for p in news)
    books = load_profiles("book")
    assert books and all(b.start_urls for b in books)


def test_bad_profiles_fail_clearly(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[site]]\nname = "x"\nstart_urls = ["https://x.cn/"]\narticle_links = ["("]\n', encoding="utf-8")
    with pytest.raises(ProfileError, match="bad regular expression"):
        load_file(bad, "site")
    bad.write_text('[[site]]\nname = "x"\n', encoding="utf-8")
    with pytest.raises(ProfileError, match="no start_urls"):
        load_file(bad, "site")
    with pytest.raises(ProfileError, match="cannot read"):
        load_file(tmp_path / "missing.toml", "site")
    with pytest.raises(ProfileError, match="unknown profile"):
        load_profiles("site", names=["no-such-site"])


def test_json_profiles_work(tmp_path):
    path = tmp_path / "p.json"
    path.write_text('{"site": [{"name": "j", "start_urls": ["https://j.cn/"], "body": "#c"}]}', encoding="utf-8")
    (profile,) = load_file(path, "site")
    assert profile.hosts == {"j.cn"} and profile.auto and profile.hint()["body_selector"] == "#c"


def test_news_spider_arguments():
    spider = NewsSpider(start_urls="https://a.cn/x,https://www.b.cn/")
    assert sorted(t.name for t in spider.targets) == ["a.cn", "b.cn"]
    with pytest.raises(ProfileError):
        NewsSpider(profile="nope")


def test_toc_order_prefers_the_full_list():
    toc = ("<html><body><h1>书名</h1><h3>最新章节</h3>"
           "<a href='/b/3.html'>第三章 丙</a><a href='/b/2.html'>第二章 乙</a><h3>正文</h3>"
           "<a href='/b/1.html'>第一章 甲</a><a href='/b/2.html'>第二章 乙</a><a href='/b/3.html'>第三章 丙</a>"
           "<a href='/about.html'>关于</a></body></html>")
    spider = FictionSpider(toc="https://book.cn/b/")
    links = spider.chapter_links(response("https://book.cn/b/", toc), spider.books[0])
    assert links == [("https://book.cn/b/1.html", "第一章 甲"), ("https://book.cn/b/2.html", "第二章 乙"),
                     ("https://book.cn/b/3.html", "第三章 丙")]


def test_toc_without_chapter_words_uses_the_largest_link_pattern():
    toc = "<html><body>" + "".join(f"<a href='/read/{i}.html'>{name}</a>" for i, name in
                                   enumerate(["起风", "远行", "归来", "夜雨"], 11)) + "<a href='/'>首页</a></body></html>"
    spider = FictionSpider(toc="https://book.cn/read/")
    links = spider.chapter_links(response("https://book.cn/read/", toc), spider.books[0])
    assert [u for u, _ in links] == [f"https://book.cn/read/{i}.html" for i in range(11, 15)]


def test_fiction_spider_from_a_book_profile():
    spider = FictionSpider(book="xiyouji-ctext")
    (book,) = spider.books
    assert book.start_urls == ["https://ctext.org/xiyouji/zh"] and book.is_article("https://ctext.org/xiyouji/ch1/zh")
    assert book.site == "xiyouji-ctext"


def _news_spider(**kwargs):
    """A NewsSpider bound to a crawler (so its stats work)."""
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(NewsSpider)
    crawler.stats.open_spider()
    return NewsSpider.from_crawler(crawler, **kwargs)


def test_atom_and_rss_feeds_yield_same_site_article_requests():
    from scrapy.http import XmlResponse

    spider = _news_spider(start_urls="https://news.example.cn/")
    atom = ('<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><entry>'
            '<link rel="alternate" href="https://news.example.cn/a/20240501/1.html?utm_source=atom"/></entry>'
            '<entry><link href="https://other.example.com/a/2.html"/></entry></feed>')
    rss = ('<?xml version="1.0"?><rss version="2.0"><channel><item><link>https://news.example.cn/a/3.html</link>'
           '</item></channel></rss>')
    got = []
    for body in (atom, rss):
        r = XmlResponse("https://news.example.cn/feed.xml", body=body.encode(), request=Request("https://news.example.cn/feed.xml"))
        got += [req.url for req in spider.parse_feed(r, site="news.example.cn")]
    assert got == ["https://news.example.cn/a/20240501/1.html", "https://news.example.cn/a/3.html"]


def test_gzipped_sitemap_and_sitemap_index():
    import gzip

    from scrapy.http import Response

    spider = _news_spider(start_urls="https://news.example.cn/")
    urlset = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
              '<url><loc>https://news.example.cn/a/1.html</loc></url>'
              '<url><loc>https://elsewhere.example/a/2.html</loc></url></urlset>')
    r = Response("https://news.example.cn/sitemap.xml.gz", body=gzip.compress(urlset.encode()),
                 request=Request("https://news.example.cn/sitemap.xml.gz"))
    assert [q.url for q in spider.parse_sitemap(r, site="news.example.cn")] == ["https://news.example.cn/a/1.html"]
    index = ('<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             '<sitemap><loc>https://news.example.cn/s1.xml</loc></sitemap></sitemapindex>')
    r = Response("https://news.example.cn/sitemap.xml", body=index.encode(), request=Request("https://news.example.cn/sitemap.xml"))
    (req,) = spider.parse_sitemap(r, site="news.example.cn")
    assert req.url == "https://news.example.cn/s1.xml" and req.callback == spider.parse_sitemap
    r = Response("https://news.example.cn/bad.xml", body=b"\x1f\x8bnot gzip", request=Request("https://news.example.cn/bad.xml"))
    assert list(spider.parse_sitemap(r, site="news.example.cn")) == []
    assert spider.crawler.stats.get_value("zhdedup/failed/bad_sitemap") == 1


def test_links_keep_document_order_first_occurrence_hosts_and_texts():
    page = ('<html><head><base href="https://x.cn/news/"></head><body>'
            '<a href="2.html?utm_source=wx">第<b>二</b>篇</a><a href="https://www.x.cn/news/1.html#c">一</a>'
            '<a href="2.html">again</a><a href="2.html?utm_source=wx">dup href</a><a href="https://y.cn/3.html">y</a>'
            '<a href="/img/a.jpg">img</a><a href="javascript:void(0)">js</a><a href="mailto:a@x.cn">m</a>'
            '<a href="ftp://x.cn/f">ftp</a><a href="">empty</a></body></html>')
    r = response("https://x.cn/news/index.html", page)
    assert NewsSpider.links(r) == [("https://x.cn/news/2.html", "第 二 篇"), ("https://www.x.cn/news/1.html", "一"),
                                   ("https://y.cn/3.html", "y")]
    assert NewsSpider.links(r, {"x.cn"}) == [("https://x.cn/news/2.html", "第 二 篇"), ("https://www.x.cn/news/1.html", "一")]
    assert NewsSpider.links(r, {"x.cn"}, text=False) == [("https://x.cn/news/2.html", ""), ("https://www.x.cn/news/1.html", "")]
