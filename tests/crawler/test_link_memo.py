"""The spider's links with the link memo are the links as response.urljoin, host_key and strip_tracking give them,
on every page of a site, the first page and the later ones (memo cold and warm), whatever the page's URL and base."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from benchmarks.shared_data import HTML_DIR
from crawler.spiders.news import NewsSpider
from crawler.urls import LINKS, LinkMemo, host_key, strip_tracking
from extract import pagekind


def reference_links(response: HtmlResponse, hosts: set[str] | None) -> list[str]:
    """PageSpider.links as it was written before the memo: the specification."""
    seen, hrefs, out = set(), set(), []
    for a in response.selector.root.xpath("//a[@href]"):
        href = (a.get("href") or "").strip()
        if not href or href in hrefs or href.startswith(("javascript:", "mailto:", "tel:", "#")):
            continue
        hrefs.add(href)
        joined = response.urljoin(href)
        if hosts is not None and host_key(joined) not in hosts:
            continue
        url = strip_tracking(joined)
        if not url.startswith(("http://", "https://")) or pagekind.skippable_link(url):
            continue
        if url not in seen:
            seen.add(url)
            out.append(url)
    return out


HREFS = ["/a/1.html", "/a/1.html?utm_source=x&id=2", "//x.cn/b.html", "//y.cn/b.html", "http://x.cn/c", "https://x.cn/c",
         "HTTP://X.CN/D", "http:rel.html", "https:/x", "2.html", "../up/3.html", "./4.html", "?page=2", "/../5.html",
         "/img/p.jpg", "ftp://x.cn/f", "/a/b/../c.html", "/news;p=1/6.html", "http://x.cn:8080/e", "https://www.x.cn/f#c",
         "/新闻/7.html", "/a/%E6%96%B0.html", "http://[::1]/g", "/h.html#frag", "data:text/html,x", " /i.html "]
PAGES = ["http://x.cn/", "http://x.cn/a/b/index.html", "https://x.cn/a/", "http://www.x.cn/z/y.html?q=1",
         "http://x.cn:8080/p/q.html", "https://y.cn/a.html"]
BASES = [None, "https://x.cn/news/", "/rel/", "http://y.cn/", "//x.cn/pr/"]


def page(url: str, hrefs: list[str], base: str | None) -> HtmlResponse:
    head = f'<base href="{base}">' if base is not None else ""
    body = "".join(f'<a href="{h}">{i}</a>' for i, h in enumerate(hrefs))
    return HtmlResponse(url, body=f"<html><head>{head}</head><body>{body}</body></html>".encode(), encoding="utf-8")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PAGES), st.sampled_from(BASES), st.lists(st.sampled_from(HREFS), max_size=8)),
                min_size=1, max_size=6),
       st.sampled_from([None, {"x.cn"}, {"x.cn", "y.cn"}, {"x.cn:8080"}]))
def test_links_equal_the_reference_on_every_page_of_a_crawl(pages, hosts):
    LINKS.entries.clear()
    for url, base, hrefs in pages:   # several pages in a row: later ones find the memo warm
        r = page(url, hrefs, base)
        assert [u for u, _ in NewsSpider.links(r, hosts, text=False)] == reference_links(r, hosts)


def test_links_of_real_pages_cold_and_warm():
    files = sorted((HTML_DIR / "gne").glob("*.html"))[:30]
    assert files
    LINKS.entries.clear()
    for rounds in range(2):
        for i, path in enumerate(files):
            r = HtmlResponse(f"https://news.x.cn/{i % 3}/p{i}.html", body=path.read_bytes())
            for hosts in (None, {"news.x.cn"}):
                assert [u for u, _ in NewsSpider.links(r, hosts, text=False)] == reference_links(r, hosts), path.name


def test_memo_is_bounded_and_only_keeps_hrefs_that_join_alike():
    memo = LinkMemo(size=3)
    for n in range(5):
        memo.joined("http://x.cn/a/", f"/p{n}.html")
    assert 0 < len(memo.entries) <= 3
    memo.joined("http://x.cn/a/", "rel.html")   # depends on the page's path: never kept
    assert all(key[2] != "rel.html" for key in memo.entries)
    assert memo.joined("http://x.cn/a/", "/q.html")[0] == "http://x.cn/q.html"
    assert memo.joined("https://x.cn/b/", "/q.html")[0] == "https://x.cn/q.html"   # another scheme, another entry
