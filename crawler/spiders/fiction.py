"""`scrapy crawl fiction -a toc=URL` (or `-a book=NAME` from crawler/profiles/fiction.toml).

Reads a book's table of contents, requests the chapters in order (earlier chapters first), and joins
the "下一页" parts of a chapter into one item carrying book, chapter number and chapter title.
"""
from __future__ import annotations

import html
import re
from collections import Counter
from typing import Any, AsyncIterator

import scrapy
from lxml import html as lxml_html
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawler.siteprofiles import SiteProfile, load_profiles, profile_from_dict
from crawler.spiders.base import (PageSpider, SpiderArgumentError, check_urls, root_of,
                                   split_argument)
from crawler.urls import canonical_url, host_key, page_canonical_url
from extract.dom import densest_block
from pipelines import stats

CHAPTER_TEXT = re.compile(r"^\s*(第\s*[0-9０-９零〇一二三四五六七八九十百千两兩]+\s*[章回节節卷集篇话話]|"
                          r"(chapter|ch\.?)\s*\d+|序章|楔子|引子|尾声|尾聲|番外)", re.I)
NEXT_PAGE = re.compile(r"^\s*(下一页|下页|下一頁|下頁|next\s*page)\s*[>»›→]*\s*$", re.I)
NOT_NEXT = re.compile(r"章|回|节|節|chapter", re.I)
MAX_PARTS = 30
TITLE_SUFFIX = re.compile(r"\s*[-_|–—(（].*$|(最新章节|全文阅读|目录|在线阅读|无弹窗).*$")


def url_shape(url: str) -> str:
    """A link's pattern: the path with digit runs replaced, so /book/12/345.html ~ /book/12/346.html."""
    return re.sub(r"\d+", "N", url.split("?", 1)[0].rsplit("/", 1)[0]) + "/" + re.sub(
        r"\d+", "N", url.split("?", 1)[0].rsplit("/", 1)[-1])


class FictionSpider(PageSpider):
    """Chapters of one or more books, in table-of-contents order, next-page parts joined."""

    name = "fiction"
    kind = "chapter"
    custom_settings = {"DEPTH_LIMIT": 0}

    arguments = {"toc": "URL[,URL...]", "book": "NAME[,NAME...]|all", "profiles_file": "FILE[,FILE...]",
                 "title": "BOOK_TITLE"}

    def __init__(self, toc: str | None = None, book: str | None = None, profiles_file: str | None = None,
                 title: str | None = None, *args: Any, **kwargs: Any):
        self.reject_unknown(kwargs)
        super().__init__(*args, **kwargs)
        self.books = self.pick_books(split_argument("toc", toc), split_argument("book", book),
                                     split_argument("profiles_file", profiles_file), title)
        self.by_name = {b.name: b for b in self.books}
        self.chapter_urls: dict[str, set[str]] = {}

    @classmethod
    def pick_books(cls, tocs: list[str], names: list[str], files: list[str], title: str | None) -> list[SiteProfile]:
        """Books from table-of-contents URLs or from book profiles; no book at all is refused."""
        if tocs and (names or files):
            raise SpiderArgumentError("give either -a toc or -a book/-a profiles_file, not both")
        if tocs:
            return [profile_from_dict({"name": u, "site": host_key(u), "toc": u, "book_title": title or ""}, "toc")
                    for u in check_urls("toc", tocs)]
        if not names and not files:
            known = ", ".join(p.name for p in load_profiles("book"))
            raise SpiderArgumentError(f"say what to crawl: -a toc=URL[,URL...] or -a book=NAME[,NAME...] "
                                      f"(bundled books: {known}; -a book=all crawls every one)")
        return load_profiles("book", files or None, None if names == ["all"] else names or None)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """One request per table-of-contents page."""
        for book in self.books:
            for url in book.start_urls:
                yield scrapy.Request(url, self.parse_toc, errback=self.on_error, priority=10_000,
                                     cb_kwargs={"profile": book.name}, dont_filter=True)

    def parse_toc(self, response: Response, profile: str) -> Any:
        """Book title and ordered chapter links; chapter requests get descending priorities."""
        book = self.by_name[profile]
        if not self.usable(response):
            return
        title = self.book_title(response, book)
        chapters = self.chapter_links(response, book)
        if not chapters:
            self.fail(response.url, "no_chapters", "no chapter links found on the table of contents")
            return
        self.count(stats.BOOKS)
        self.skip(response.url, "toc", f"table of contents of {title!r}: {len(chapters)} chapters")
        self.logger.info("book %r: %d chapters from %s", title, len(chapters), response.url)
        self.chapter_urls.setdefault(profile, set()).update(canonical_url(u) for u, _ in chapters)
        for number, (url, label) in enumerate(chapters, start=1):
            state = {"profile": profile, "book": title, "book_url": response.url, "number": number,
                     "title": label, "fragments": [], "parts": [], "priority": len(chapters) - number}
            yield scrapy.Request(url, self.parse_chapter, errback=self.on_part_error,
                                 priority=len(chapters) - number, cb_kwargs={"state": state})

    def book_title(self, response: TextResponse, book: SiteProfile) -> str:
        """The book's title: argument, profile selector, <h1>, or the cleaned <title>."""
        if book.raw.get("book_title"):
            return book.raw["book_title"]
        if book.raw.get("title"):
            found = " ".join(response.css(book.raw["title"] + " ::text").getall()).strip()
            if found:
                return found
        h1 = " ".join(response.xpath("(//h1)[1]//text()").getall()).strip()
        if h1:
            return h1
        return TITLE_SUFFIX.sub("", (response.xpath("//title/text()").get() or "").strip()) or book.name

    def chapter_links(self, response: TextResponse, book: SiteProfile) -> list[tuple[str, str]]:
        """Chapter (url, title) in reading order; a URL listed twice (a "latest chapters" box above
        the full list) takes the position of its last occurrence."""
        hosts = {host_key(response.url)} | book.hosts
        every = self.all_links(response, hosts)
        if not book.auto:
            picked = [(u, t) for u, t in every if book.is_article(u)]
        else:
            picked = [(u, t) for u, t in every if CHAPTER_TEXT.search(t)]
            if len(picked) < 2:
                shapes = Counter(url_shape(u) for u, _ in every)
                shape, size = shapes.most_common(1)[0] if shapes else ("", 0)
                picked = [(u, t) for u, t in every if url_shape(u) == shape] if size >= 3 else []
        last = {canonical_url(u): i for i, (u, _) in enumerate(picked)}
        return [(u, t) for i, (u, t) in enumerate(picked) if last[canonical_url(u)] == i]

    def all_links(self, response: TextResponse, hosts: set[str]) -> list[tuple[str, str]]:
        """Every same-host (url, text) link in document order, duplicates kept."""
        out = []
        for a in response.xpath("//a[@href]"):
            href = a.attrib["href"].strip()
            if href.startswith(("javascript:", "#", "mailto:")):
                continue
            url = response.urljoin(href)
            if host_key(url) in hosts and url.startswith("http"):
                out.append((url, " ".join(a.xpath(".//text()").getall()).strip()))
        return out

    def parse_chapter(self, response: Response, state: dict) -> Any:
        """Keep this part's text block; follow "下一页" within the chapter, or emit the joined chapter."""
        if not self.usable(response):
            yield from self.finish(state)
            return
        book = self.by_name[state["profile"]]
        root = root_of(response)
        if root is None:
            self.fail(response.url, "unparseable")
            yield from self.finish(state)
            return
        if not state["parts"]:
            state["first"] = {"url": response.url, "status": response.status,
                              "canonical": page_canonical_url(response)}
            if not state["title"]:
                state["title"] = " ".join(response.xpath("(//h1)[1]//text()").getall()).strip()
        if state["parts"]:
            self.skip(response.url, "chapter_part", f"part {len(state['parts']) + 1} of chapter {state['number']}, "
                      f"joined into {state['first']['url']}")
        state["parts"].append(response.url)
        state["fragments"].append(self.fragment(response, root, book))
        nxt = self.next_page(response, state)
        if nxt:
            yield scrapy.Request(nxt, self.parse_chapter, errback=self.on_part_error,
                                 priority=state["priority"] + 1, cb_kwargs={"state": state})
        elif len(state["parts"]) == 1:
            yield self.make_item(response, self.by_name[state["profile"]].site, **self.chapter_fields(state))
        else:
            yield from self.finish(state)

    def next_page(self, response: TextResponse, state: dict) -> str | None:
        """URL of this chapter's next part: a "下一页" link that is not another chapter."""
        if len(state["parts"]) >= MAX_PARTS:
            return None
        seen = {canonical_url(u) for u in state["parts"]}
        for url, text in self.links(response, {host_key(response.url)}):
            if NEXT_PAGE.match(text) and not NOT_NEXT.search(text):
                key = canonical_url(url)
                if key not in seen and key not in self.chapter_urls.get(state["profile"], ()):
                    return url
        return None

    @staticmethod
    def fragment(response: TextResponse, root, book: SiteProfile) -> str:
        """The HTML of the chapter text container of one part (profile selector or densest block)."""
        if book.body:
            found = response.css(book.body).getall()
            if found:
                return "\n".join(found)
        block = densest_block(root)
        if block is None:
            return ""
        for bad in block.xpath(".//script|.//style|.//noscript"):
            bad.getparent().remove(bad)
        return lxml_html.tostring(block, encoding="unicode")

    @staticmethod
    def chapter_fields(state: dict) -> dict:
        """Book and chapter fields of an item."""
        return {"book": state["book"], "book_url": state["book_url"], "chapter_number": state["number"],
                "chapter_title": state["title"], "parts": list(state["parts"])}

    def finish(self, state: dict) -> Any:
        """Emit a chapter made of several parts (or of the parts fetched before a failure) as one
        UTF-8 document built from each part's text container."""
        first = state.get("first")
        if first is None:
            return
        self.count(stats.JOINED_PARTS, len(state["parts"]) - 1)
        title = html.escape(state["title"] or "")
        doc = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
               f'<body><article>\n' + "\n".join(state["fragments"]) +
               "\n</article></body></html>")
        headers = {"content-type": "text/html; charset=utf-8"}
        yield self.make_item(None, self.by_name[state["profile"]].site, body=doc.encode("utf-8"), headers=headers,
                             url=first["url"], canonical=first["canonical"], status=first["status"],
                             **self.chapter_fields(state))

    def on_part_error(self, failure: Failure) -> Any:
        """A chapter (or one of its parts) failed: count it, and keep the parts already fetched."""
        state = failure.request.cb_kwargs.get("state", {})
        if state.get("parts"):
            self.on_error(failure, "part_", f"chapter {state.get('number')} kept with {len(state['parts'])} part(s)")
            yield from self.finish(state)
        else:
            self.on_error(failure)
