"""What kind of page is this: article, list page or soft 404 (URL shape and text shape, no extraction)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from extract.dom import Block, top_level, visible_len, walk

_SKIP_EXT = re.compile(
    r"\.(jpe?g|png|gif|webp|bmp|ico|svg|pdf|zip|rar|7z|gz|tgz|bz2|exe|apk|dmg|mp3|mp4|m4a|avi|mkv|"
    r"mov|flv|wmv|doc|docx|xls|xlsx|ppt|pptx|txt|css|js|json|woff2?|ttf|eot)$", re.I)
_ARTICLE_URL = re.compile(
    r"(/20\d\d[-/_]?[01]\d[-/_]?[0-3]\d/)|(/20\d\d[01]\d/)|(/t20\d{6}_\d+)|(doc-i\w+)|(/\d{5,}\.s?html?$)|"
    r"(/\w*\d{6,}\w*\.s?html?$)|(/(article|articles|content|detail|news|story|post|a|p)/[\w-]*\d{3,})|"
    r"(newsDetail|ArticleDetail|detail_\d+|/c\d+-\d+\.html)", re.I)
_LIST_URL = re.compile(
    r"(^/?$)|(/$)|(/index(_\d+)?\.s?html?$)|(/(list|lists|channel|node|roll|category|tag|tags|column|"
    r"special|topic|news)(/|$|_|\.))|([?&](page|p|pn)=\d+)", re.I)
# Error pages served with status 200 (title/heading, or the whole text of a short page).
SOFT_404 = re.compile(
    r"((?<!\d)404(?!\d)|not\s+found|页面不存在|页面未找到|找不到(该|此|您要的|您)?(页面|网页|文章)|您访问的页面|已被删除|"
    r"文章不存在|内容不存在|内容已删除|页面已失效|网页不存在|出错了|頁面不存在|找不到網頁)", re.I)
SOFT_404_CHARS = 600   # an error page says little: more text than this is an article that mentions an error


def skippable_link(url: str) -> bool:
    """True for links to images, archives and other files that are never articles."""
    return bool(_SKIP_EXT.search(urlsplit(url).path))


def url_looks_article(url: str) -> bool:
    """Article-shaped URL: a date or a long numeric id in the path, or an article/detail segment."""
    parts = urlsplit(url)
    return bool(_ARTICLE_URL.search(parts.path + ("?" + parts.query if parts.query else "")))


def url_looks_list(url: str) -> bool:
    """List-shaped URL: the home page, a directory, index_N.html, list/channel paths, ?page=N."""
    parts = urlsplit(url)
    return bool(_LIST_URL.search(parts.path)) or bool(_LIST_URL.search("?" + parts.query))


MIN_PROSE = 80        # characters of running text that make a short brief an article
MIN_PROSE_HINT = 60   # ... when the URL is article-shaped
PROSE_PUNCT = 2       # running text has sentences: at least this many punctuation marks
PROSE_DENSITY = 50    # ... and one per this many Chinese characters (menus and rankings have none)
ITEM_MAX = 300        # list items (headline + teaser) are short
ITEM_LINKS = 0.1      # ... and at least this share of their text is a link
ITEM_REPEAT = 3       # ... and come in rows of at least this many siblings


@dataclass(frozen=True)
class Shape:
    """Text statistics of an HTML page: how much of it is prose and how much is links."""

    text_chars: int
    link_chars: int      # link text, including the text of linked list items (headline + teaser)
    best_block: int      # characters of non-link text in the richest block of running text
    punctuation: int     # sentence punctuation in that block
    links: int

    @property
    def link_density(self) -> float:
        """Share of the visible text that sits inside links."""
        return self.link_chars / self.text_chars if self.text_chars else 1.0

    def is_article(self, url_hint: bool = False) -> bool:
        """A page with a block of running text is an article however many links surround it (related
        reading, comments, 上一篇/下一篇, galleries); a list page has none outside its linked items."""
        need = MIN_PROSE_HINT if url_hint else MIN_PROSE
        return self.best_block >= need and self.punctuation >= PROSE_PUNCT


def is_prose(block: Block) -> bool:
    """A block of running text: sentences, not a menu, a ranking or a row of names."""
    return block.score_punct >= 1 and block.score_punct * PROSE_DENSITY >= block.score_cjk


def linked_items(root: Any) -> set:
    """Elements that are items of a list of links: rows of >= 3 same-tag siblings, each short and partly a
    link (a headline with its teaser, a thumbnail with its caption)."""
    items: set = set()
    for parent in root.iter():
        rows: dict[str, list] = {}
        for child in parent:
            if isinstance(child.tag, str) and child.tag != "a":
                rows.setdefault(child.tag, []).append(child)
        for row in rows.values():
            if len(row) >= ITEM_REPEAT:
                found = [el for el in row if _is_item(el)]
                if len(found) >= ITEM_REPEAT:
                    items.update(found)
    return items


def _is_item(el: Any) -> bool:
    """Short, and at least ITEM_LINKS of its text is link text."""
    if next(el.iter("a"), None) is None:  # no link text at all (most article paragraphs): not an item
        return False
    total = visible_len(el.text_content())
    if not total or total > ITEM_MAX:
        return False
    linked = sum(visible_len(a.text_content()) for a in el.iter("a"))
    return linked >= ITEM_LINKS * total


def page_shape(root: Any) -> Shape:
    """Shape of an lxml HTML tree (e.g. Scrapy's response.selector.root), from one walk of it.

    Every element's Python proxy is made once and held until the end: lxml.html makes each one through a
    Python class lookup, and a proxy nobody holds is made again at the next visit (linked_items and walk
    visit each element several times): a third less time on real pages."""
    proxies = list(root.iter())
    w = walk(root, linked_items(root))
    del proxies
    best = max((b for b in w.blocks if is_prose(b)), key=lambda b: (b.score_cjk, b.score), default=None)
    return Shape(w.text_chars, w.link_chars, best.score if best else 0, best.score_punct if best else 0, w.links)


def is_soft_404(heading: str, text_chars: int, limit: int = SOFT_404_CHARS) -> bool:
    """An error page served with status 200: error words in its heading (or short text) and little text."""
    return text_chars < limit and bool(SOFT_404.search(heading or ""))


def heading_text(root: Any) -> str:
    """<title> plus the first <h1>, for soft-404 checks: the text of XPath's //title//text() and
    (//h1)[1]//text(), found in one walk of lxml's iter (no XPath: a third less time on real pages)."""
    title: list[str] = []
    h1 = None
    for top in top_level(root):
        for el in top.iter("title", "h1"):
            if el.tag == "title":
                title.extend(el.itertext())
            elif h1 is None:
                h1 = el
    return f"{' '.join(title)} {' '.join(h1.itertext()) if h1 is not None else ''}".strip()


NOT_PAGE_LINKS = ("javascript:", "mailto:", "tel:", "#")   # hrefs that never lead to a page


@dataclass(frozen=True)
class PageFacts:
    """What the spider needs of an HTML page from its tree: small, so that a worker process that parsed the
    page can send it back instead of the crawler's event loop parsing it."""

    base: str                             # the URL its links are relative to (Scrapy's get_base_url)
    heading: str                          # heading_text
    hrefs: tuple[str, ...]                # each <a href> once, stripped, in document order; NOT_PAGE_LINKS out
    feeds: tuple[tuple[str, str], ...]    # (type, href) of each <link rel="alternate" href>, when asked for
    canonical: str | None = None          # canonical_href
    shape: Shape | None = None            # page_shape, when asked for or when the heading reads as an error


def page_facts(root: Any, base: str, shape: bool = True, feeds: bool = True) -> PageFacts:
    """The facts of an lxml HTML tree whose links are relative to `base`; its feed links when `feeds` (a spider
    that reads no feeds asks for none); its shape when `shape` or when the heading may be a soft 404's (the only
    other reader of the shape)."""
    heading = heading_text(root)
    hrefs: dict[str, None] = {}
    for a in root.xpath("//a[@href]"):
        href = (a.get("href") or "").strip()
        if href and not href.startswith(NOT_PAGE_LINKS):
            hrefs.setdefault(href)
    alternates = root.xpath("//link[@rel='alternate'][@href]") if feeds else ()
    found = tuple((link.get("type") or "", link.get("href")) for link in alternates)
    measured = page_shape(root) if shape or is_soft_404(heading, 0) else None
    return PageFacts(base, heading, tuple(hrefs), found, canonical_href(root), measured)


_CANONICAL_CASE = str.maketrans("CANOICL", "canoicl")   # XPath's translate() of the rel attribute


def canonical_href(root: Any) -> str | None:
    """XPath's //link[translate(@rel, "CANOICL", "canoicl")="canonical"]/@href, its first value, found by one
    walk of lxml's iter (the XPath took ~0.2 ms a page, and a page asked for it twice)."""
    for top in top_level(root):
        for el in top.iter("link"):
            href = el.get("href")
            if href is not None and (el.get("rel") or "").translate(_CANONICAL_CASE) == "canonical":
                return href
    return None
