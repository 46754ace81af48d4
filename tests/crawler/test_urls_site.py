"""Canonical URLs only within the page's own site; a cross-site canonical is a claim, not an identity."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from crawler.urls import canonical_claim, canonical_href, canonical_pair, page_canonical_url, page_id, same_site, site_of


def page(url: str, canonical: str) -> HtmlResponse:
    body = f'<html><head><link rel="Canonical" href="{canonical}"></head><body>x</body></html>'
    return HtmlResponse(url, body=body.encode(), encoding="utf-8")


@pytest.mark.parametrize("url,site", [
    ("http://news.sina.com.cn/a.html", "sina.com.cn"), ("https://www.example.com/x", "example.com"),
    ("http://m.bbc.co.uk/", "bbc.co.uk"), ("http://127.0.0.1:8001/a", "127.0.0.1:8001"),
    ("http://localhost:5000/", "localhost:5000"), ("http://[::1]:80/", "::1:80"), ("about:blank", ""),
])
def test_site_of(url, site):
    assert site_of(url) == site


def test_same_site_rules():
    assert same_site("http://news.sina.com.cn/a", "https://www.sina.com.cn/b")
    assert not same_site("http://sina.com.cn/a", "http://sohu.com.cn/a")
    assert not same_site("http://127.0.0.1:8001/a", "http://127.0.0.1:8002/a")


def test_cross_site_canonical_is_only_a_claim():
    r = page("http://127.0.0.1:8002/copy.html", "http://127.0.0.1:8001/news/a4.html")
    assert page_canonical_url(r) == "http://127.0.0.1:8002/copy.html"
    assert canonical_claim(r) == "http://127.0.0.1:8001/news/a4.html"
    assert page_id(page_canonical_url(r)) != page_id("http://127.0.0.1:8001/news/a4.html")


def test_same_site_canonical_is_used():
    r = page("http://m.example.com/a4.html?utm_source=x", "http://www.example.com/news/a4.html")
    assert page_canonical_url(r) == "http://www.example.com/news/a4.html"
    assert canonical_claim(r) is None


LINK_PIECES = ['<link rel="canonical" href="http://a.cn/1">', '<LINK REL="CANONICAL" HREF="http://a.cn/2">',
               '<link rel="Canonical" href="">', '<link rel="canonical">', '<link rel=" canonical" href="http://a.cn/3">',
               '<link rel="alternate" href="http://a.cn/4">', '<link href="http://a.cn/5">', '<link rel="canonicaL" href="/6">',
               "</html>", "<html>", "<head>", "</head>", "<body>", "<p>正文</p>", "<!-- <link rel=canonical href=x> -->",
               '<svg><link rel="canonical" href="http://a.cn/7"/></svg>', "<title>t</title>"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINK_PIECES), min_size=1, max_size=10))
def test_canonical_href_is_the_xpaths_first_value(pieces):
    """Case folded as XPath's translate() folds it, an empty href kept, a link after a stray </html> found."""
    r = HtmlResponse("http://a.cn/x", body="".join(pieces).encode(), encoding="utf-8")
    xpath = r.xpath('//link[translate(@rel, "CANOICL", "canoicl")="canonical"]/@href').get()
    assert canonical_href(r.selector.root) == xpath


def test_one_read_gives_both_the_canonical_and_the_claim():
    for url, declared in (("http://127.0.0.1:8002/copy.html", "http://127.0.0.1:8001/news/a4.html"),
                          ("http://m.example.com/a4.html", "http://www.example.com/news/a4.html")):
        r = page(url, declared)
        assert canonical_pair(r) == (page_canonical_url(r), canonical_claim(r))
    plain = HtmlResponse("http://a.cn/x?utm_source=y", body=b"<html><body>x</body></html>", encoding="utf-8")
    assert canonical_pair(plain) == ("http://a.cn/x", None)
