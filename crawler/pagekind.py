"""Cheap page checks before any content work: binary bodies, soft 404s, article vs list pages."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lxml import etree

# File signatures of things that are not web pages, even when served as text/html.
_MAGIC = (
    (b"\x89PNG", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF8", "gif"), (b"%PDF", "pdf"),
    (b"PK\x03\x04", "zip"), (b"\x1f\x8b", "gzip"), (b"Rar!", "rar"), (b"7z\xbc\xaf", "7z"),
    (b"\x7fELF", "elf"), (b"MZ", "exe"), (b"RIFF", "riff"), (b"ID3", "mp3"), (b"OggS", "ogg"),
    (b"\x00\x00\x00", "iso-media"), (b"BZh", "bzip2"), (b"\xd0\xcf\x11\xe0", "ole2"),
)
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
_SOFT_404 = re.compile(
    r"(\b404\b|not\s+found|页面不存在|页面未找到|找不到(该|此|您)?(页面|网页|文章)|您访问的页面|已被删除|"
    r"文章不存在|内容不存在|页面已失效|网页不存在|出错了|頁面不存在|找不到網頁)", re.I)
_PUNCT = re.compile(r"[，。！？；：、“”,.!?;]")
_BLOCK_TAGS = {"p", "div", "td", "article", "section", "main", "li", "pre", "blockquote", "dd", "font", "span"}
# paragraph-level blocks: their text also counts for the block that holds them
_PARAGRAPH_TAGS = {"p", "span", "font", "li", "pre", "blockquote", "dd"}
_IGNORED = {"script", "style", "noscript", "template", "head", "title", "option", "select", "textarea", "svg"}


def binary_kind(body: bytes) -> str | None:
    """Name of the binary format when the body is not text (magic number or NUL bytes), else None."""
    head = body[:4096]
    if head.lstrip()[:1] == b"<":
        return None
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if b"\x00" in head:
        return "nul-bytes"
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return "control-bytes" if head and control > len(head) // 20 else None


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


@dataclass(frozen=True)
class Shape:
    """Text statistics of an HTML page: how much of it is prose and how much is links."""

    text_chars: int
    link_chars: int
    best_block: int      # characters of non-link text in the single richest block element
    punctuation: int     # sentence punctuation in that block
    links: int

    @property
    def link_density(self) -> float:
        """Share of the visible text that sits inside links."""
        return self.link_chars / self.text_chars if self.text_chars else 1.0

    def is_article(self, url_hint: bool = False) -> bool:
        """Prose-heavy page: a block of >= 200 chars (>= 80 with an article-shaped URL) of sentences."""
        need = 80 if url_hint else 200
        # portals wrap articles in heavy navigation, so the page's link share may be high
        return self.best_block >= need and self.punctuation >= 3 and self.link_density < 0.8


def _own_text(el) -> str:
    """Text that belongs directly to an element (its text and its children's tails)."""
    parts = [el.text or ""]
    parts.extend(child.tail or "" for child in el)
    return "".join(parts)


def page_shape(root) -> Shape:
    """Shape of an lxml HTML tree (response.selector.root), in one walk that skips scripts and styles.

    A block's prose is its own text plus that of its paragraph children (a <div> of <p>s counts whole).
    """
    text_chars = link_chars = links = 0
    own: dict[int, list[int]] = {}
    parents: dict[int, int | None] = {}
    stack: list[tuple[Any, bool, Any]] = [(root, False, None)]
    while stack:
        el, in_link, block = stack.pop()
        tag = el.tag if isinstance(el.tag, str) else ""
        if not tag or tag in _IGNORED:
            continue
        in_link = in_link or tag == "a"
        links += tag == "a"
        if tag in _BLOCK_TAGS or block is None:
            parents[id(el)] = id(block) if block is not None and tag in _PARAGRAPH_TAGS else None
            block = el
        text = re.sub(r"\s+", "", _own_text(el))
        if text:
            text_chars += len(text)
            if in_link:
                link_chars += len(text)
            else:
                entry = own.setdefault(id(block), [0, 0])
                entry[0] += len(text)
                entry[1] += len(_PUNCT.findall(text))
        stack.extend((child, in_link, block) for child in el)
    score = {key: list(v) for key, v in own.items()}
    for key, (chars, punct) in own.items():
        parent = parents.get(key)
        if parent is not None:
            entry = score.setdefault(parent, [0, 0])
            entry[0] += chars
            entry[1] += punct
    best = max(score.values(), key=lambda e: e[0], default=[0, 0])
    return Shape(text_chars, link_chars, best[0], best[1], links)


def is_soft_404(title: str, text_chars: int) -> bool:
    """An error page served with status 200: an error title/heading and little text."""
    return text_chars < 600 and bool(_SOFT_404.search(title or ""))


def heading_text(root) -> str:
    """<title> plus the first <h1>, for soft-404 checks."""
    title = " ".join(root.xpath("//title//text()"))
    h1 = " ".join(root.xpath("(//h1)[1]//text()"))
    return f"{title} {h1}".strip()


def root_of(response) -> etree._Element | None:
    """The lxml tree of an HTML response, or None when it cannot be parsed."""
    try:
        return response.selector.root
    except (ValueError, etree.ParserError, UnicodeDecodeError, AttributeError):
        return None


def densest_block(root):
    """The element holding the most prose: own text plus that of its direct paragraph children.

    Used to cut a chapter's text container out of each next-page part before joining them.
    """
    own: dict[int, int] = {}
    elements: dict[int, object] = {}
    stack = [(root, None)]
    while stack:
        el, parent_block = stack.pop()
        tag = el.tag if isinstance(el.tag, str) else ""
        if not tag or tag in _IGNORED or tag == "a":
            continue
        is_block = tag in _BLOCK_TAGS or tag == "body"
        block = el if is_block else parent_block
        if is_block:
            elements[id(el)] = (el, parent_block if tag in _PARAGRAPH_TAGS else None)
        text = len(re.sub(r"\s+", "", _own_text(el)))
        if text and block is not None:
            own[id(block)] = own.get(id(block), 0) + text
        stack.extend((child, block) for child in el)
    score = dict(own)
    for key, chars in own.items():
        parent = elements[key][1]
        if parent is not None:
            score[id(parent)] = score.get(id(parent), 0) + chars
    if not score:
        return None
    return elements[max(score, key=score.get)][0]
