"""Real pages' surroundings for the crawl benchmark's articles, so its pages weigh what users' pages weigh.

The real pages of ../shared/data/html_zh (median ~99 kB of navigation, lists, scripts and styles around their
article) lose their own prose, headings, title, meta tags and link targets; what is left is a shell with two
slots, one in its head and one where its article's first paragraph was. A page built in a shell carries only
the benchmark's story, date and title, so dedup sees the same work as on the generated pages, and the crawl
pays for real pages' size (parsing, page kind, links, extraction) as a crawl of users' sites does. No shell's
link leads anywhere a spider follows: each points to a host no crawl was started on.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import lxml.html
from lxml import etree

HEAD_SLOT = "<!--zhdedup-head-->"
BODY_SLOT = "<!--zhdedup-article-->"
PROSE = 30            # a text node this long is the page's own prose (nav labels and list titles are shorter)
MAX_LEFT = 8000       # a shell with more visible text than this left is not a shell (one page of 210: 24,000)
DROPPED = ("p", "h1", "h2", "title", "meta", "base", "time")
ELSEWHERE = "http://elsewhere.invalid/"   # never fetched: both spiders follow links on their start hosts only


def load_shells(html_dir: Path) -> list[str]:
    """Every real page of html_dir (sorted by path) as a shell; pages lxml cannot read, or whose own text would
    outweigh a story, are left out."""
    shells = []
    for path in sorted(html_dir.rglob("*.html")):
        shell = make_shell(path.read_bytes())
        if shell is not None:
            shells.append(shell)
    return shells


def make_shell(raw: bytes) -> str | None:
    """A real page without its own text, meta tags and link targets, with HEAD_SLOT and BODY_SLOT in it."""
    from extract.encoding import decode   # the crawl's own charset rules: declared, else detected

    text, _ = decode(raw)
    try:
        root = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return None
    body = root.find("body")
    if body is None:
        return None
    first = next(iter(root.iter("p")), None)
    anchor = first.getparent() if first is not None else body
    for el in [e for e in root.iter(*DROPPED) if e is not first]:
        el.drop_tree()
    if anchor is not body and body not in anchor.iterancestors():   # it went with a dropped heading
        anchor, first = body, None
    _clear_prose(root)
    if _visible_chars(body) > MAX_LEFT:
        return None
    for a in root.iter("a"):
        href = a.get("href")
        if href is not None:   # the path kept (page kind reads link shapes), the host one no crawl starts on
            parts = urlsplit(href.strip())
            a.set("href", ELSEWHERE + parts.path.lstrip("/") + (f"?{parts.query}" if parts.query else ""))
    slot = etree.Comment("zhdedup-article")
    if first is not None:
        first.addprevious(slot)
        first.drop_tree()
    else:
        anchor.insert(0, slot)
    head = root.find("head")
    if head is None:
        head = etree.Element("head")
        root.insert(0, head)
    head.insert(0, etree.Comment("zhdedup-head"))
    return lxml.html.tostring(root, encoding="unicode", doctype="<!DOCTYPE html>")


def _clear_prose(root: lxml.html.HtmlElement) -> None:
    """Text and tails of PROSE characters or more go (scripts and styles stay: a real page's weight)."""
    for el in root.iter():
        if not isinstance(el.tag, str) or el.tag in ("script", "style"):
            continue
        if el.text and len(el.text.strip()) >= PROSE:
            el.text = None
        if el.tail and len(el.tail.strip()) >= PROSE:
            el.tail = None


def _visible_chars(body: lxml.html.HtmlElement) -> int:
    """Characters a reader sees (not scripts, styles or comments), white space not counted."""
    n = 0
    for el in body.iter():
        if isinstance(el.tag, str) and el.tag not in ("script", "style") and el.text:
            n += len("".join(el.text.split()))
        if el is not body and el.tail:
            n += len("".join(el.tail.split()))
    return n


def fill(shell: str, head: str, article: str) -> str:
    """The shell with the benchmark's head tags and article in its slots."""
    return shell.replace(HEAD_SLOT, head, 1).replace(BODY_SLOT, article, 1)
