"""Pure helpers of the watch spider: what kind of listing a body is, feed links, visible text."""
from __future__ import annotations

from scrapy.http import HtmlResponse, XmlResponse

from crawler.spiders.watch import feed_links, listing_kind, visible_text


def test_listing_kind():
    sitemap = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>'
    index = b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>'
    assert listing_kind(XmlResponse("http://x/s.xml", body=sitemap)) == "sitemap"
    assert listing_kind(XmlResponse("http://x/i.xml", body=index)) == "sitemap"
    assert listing_kind(XmlResponse("http://x/f", body=b"<?xml version='1.0'?><rss><channel/></rss>")) == "feed"
    assert listing_kind(HtmlResponse("http://x/", body=b"<html><body>hi</body></html>")) == "html"


def test_feed_links_rss_and_atom():
    rss = (b"<rss><channel><item><title>a</title><link> http://x/1.html </link></item>"
           b"<item><link>http://x/2.html</link></item></channel></rss>")
    atom = (b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="alternate" href="http://x/3"/>'
            b'<link rel="edit" href="http://x/edit"/></entry></feed>')
    assert feed_links(rss) == ["http://x/1.html", "http://x/2.html"]
    assert feed_links(atom) == ["http://x/3"]
    assert feed_links(b"not xml at all") == []


def test_visible_text_drops_markup_scripts_and_spaces():
    body = "<html><head><script>var a='正文';</script></head><body><p>灯塔 守夜人</p>\n<p>第一章</p></body></html>"
    assert visible_text(body) == "灯塔守夜人第一章"
    assert visible_text("") == ""
    # decoded by Scrapy from the Content-Type header alone (no <meta charset>): still readable
    page = HtmlResponse("http://x/", body=body.encode("gbk"), headers={"Content-Type": "text/html; charset=gbk"})
    assert visible_text(page.text) == "灯塔守夜人第一章"
