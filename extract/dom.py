"""Parse a page once and walk it once: the tree, its text blocks and the densest one, shared by page kind,
article extraction and the spiders (which may pass Scrapy's already parsed ``response.selector.root``).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import lxml.html
from lxml import etree

from extract.encoding import decode

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
NON_CJK = re.compile(r"[^\u3400-\u9fff\uf900-\ufaff]+")
SPACE = re.compile(r"\s+")
PUNCT = re.compile(r"[，。！？；：、“”!?;]|[,.](?=\s)")   # a '.' inside a URL or a number is not punctuation
SENTENCE_END = re.compile(r"[。！？!?…]")
XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
TAG_RE = re.compile(r"<[^>]*>")
SCRIPT_RE = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->", re.I | re.S)
DOC_END_TAGS = re.compile(r"</\s*(html|body)\s*>", re.I)
HTML_START = re.compile(r"<!DOCTYPE|<html\b", re.I)
HTML_END = re.compile(r"</[hH][tT][mM][lL]>")   # text.lower().find("</html>") without a lowered copy of the page

# Elements whose text is never page text.
IGNORED = {"script", "style", "noscript", "template", "head", "title", "option", "select", "textarea", "svg"}
# Elements that hold text blocks in the walk.
WALK_BLOCKS = {"p", "div", "td", "article", "section", "main", "li", "pre", "blockquote", "dd", "font", "span",
               "body"}
# Paragraph-level blocks: their whole text also counts for the block that holds them.  List items do
# not: a comment list or a list of teasers is many texts, not one (pixnet: comments outweighed the article).
PARAGRAPHS = {"p", "span", "font", "pre", "blockquote"}
# Linearisation: elements that start a new line, and elements skipped with their content.
LINE_TAGS = {"p", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "section", "article",
             "blockquote", "pre", "table", "ul", "ol", "dd", "dt", "figure", "figcaption", "center", "td"}
SKIP_TAGS = {"script", "style", "noscript", "template", "iframe", "select", "button", "form", "nav"}

# lxml.html's parser asks a Python method for the class of every element proxy (HtmlElementClassLookup: FormElement,
# InputElement ... for form controls, which nothing here uses); this one answers in C, HtmlElement for every element,
# so each element trafilatura, htmldate and the walks touch costs less.  Same tree, same text.
HTML_PARSER = lxml.html.HTMLParser()
HTML_PARSER.set_element_class_lookup(etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity))



def cjk_count(text: str) -> int:
    """Number of CJK characters (one regex pass that builds no list of matches)."""
    return len(NON_CJK.sub("", text))

def visible_len(text: str) -> int:
    """Non-whitespace characters: the length that matters for Chinese text (str.split drops the characters \\s
    matches, str.isspace, ~3x faster than the regex)."""
    return len("".join(text.split()))


def parse(text: str) -> tuple[lxml.html.HtmlElement, str]:
    """lxml tree of the page, re-parsed with html5lib when lxml lost the body (see lost_body)."""
    text = XML_DECL.sub("", text, count=1)
    try:
        tree = lxml.html.document_fromstring(text, parser=HTML_PARSER)
    except (etree.ParserError, ValueError):
        tree = None
    if tree is not None and not lost_body(text, tree):
        return tree, "lxml"
    tree = parse_without_end_tags(text)
    if tree is not None and not lost_body(text, tree):
        return tree, "lxml-endtags"
    import html5lib
    with warnings.catch_warnings():  # html5lib warns about comments it cannot map onto lxml
        warnings.simplefilter("ignore")
        doc = html5lib.parse(text, treebuilder="lxml", namespaceHTMLElements=False)
    return lxml.html.document_fromstring(etree.tostring(doc, encoding="unicode", method="html"),
                                         parser=HTML_PARSER), "html5lib"


def parse_without_end_tags(text: str) -> lxml.html.HtmlElement | None:
    """lxml on the page without its </body> and </html> tags and without a script-only prelude before <html>:
    the usual causes of a lost body (a stray </html> before the article; a <script> above <!DOCTYPE>, after
    which libxml2 keeps only <head>) repaired at lxml's cost, ~10x less than html5lib's (60 kB: 5 ms, not 60)."""
    start = HTML_START.search(text)
    if start and not CJK.search(TAG_RE.sub("", SCRIPT_RE.sub("", text[:start.start()]))):
        text = text[start.start():]
    try:
        return lxml.html.document_fromstring(DOC_END_TAGS.sub("", text), parser=HTML_PARSER)
    except (etree.ParserError, ValueError):
        return None


def lost_body(text: str, tree: lxml.html.HtmlElement) -> bool:
    """True when text after a stray </html> (or a missing <body>) is not in lxml's document tree.

    libxml2 parks content that follows an early </html> outside the root element, so the article
    vanishes from the tree trafilatura sees; browsers and html5lib keep it in <body>.
    """
    if tree.find("body") is None:
        return bool(CJK.search(text))
    found = HTML_END.search(text)
    if found is None:
        return False
    tail = SCRIPT_RE.sub("", text[found.end():])
    sample = "".join(CJK.findall(TAG_RE.sub("", tail))[:200])
    if len(sample) < 20:
        return False
    body_text = "".join(CJK.findall(tree.find("body").text_content()))
    return sample[:20] not in body_text


@dataclass
class Page:
    """A parsed page: the tree (shared by page kind, extraction and link extraction) and how it was read."""

    tree: Any
    encoding: str = "utf-8"
    parser: str = "lxml"
    _walk: "Walk | None" = field(default=None, repr=False)

    def walk(self) -> "Walk":
        """The page's text blocks, computed once (call it before anything edits the tree)."""
        if self._walk is None:
            self._walk = walk(self.tree)
        return self._walk


INLINE_PARENTS = frozenset({"p", "span", "a", "font", "b", "strong", "em", "i", "u"})


def drop_inline_comments(tree: lxml.html.HtmlElement) -> None:
    """Comments inside a paragraph go and the text after them stays: trafilatura drops a comment together with that
    text (谷歌<!--keyword-->(微博)<!--/keyword-->在2014年收购…: the sentence was lost)."""
    for comment in list(tree.iter(etree.Comment)):
        parent = comment.getparent()
        if parent is not None and parent.tag in INLINE_PARENTS:
            comment.drop_tree()


# Inline elements: a run of them (and of bare text) between a container's blocks reads as one paragraph.
INLINE_TAGS = frozenset({"font", "span", "b", "strong", "em", "i", "u", "a", "sub", "sup", "small", "big", "br",
                         "img", "o:p", "st1:chsdate", "st1:chmetcnv", "st1:personname"})
RUN_BREAKERS = ("p", "div", "table", "ul", "ol", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "pre")
ORPHAN_MIN = 10              # a run of at least this many characters outside the paragraphs is one of its own


def has_orphans(box: lxml.html.HtmlElement) -> bool:
    """Whether a container holds text or inline elements beside its blocks (most hold paragraphs and whitespace)."""
    if box.text and not box.text.isspace():
        return True
    return any((child.tail and not child.tail.isspace()) or child.tag in INLINE_TAGS for child in box)


def wrap_orphan_runs(tree: lxml.html.HtmlElement) -> None:
    """Text between the paragraphs of a container (bare text and inline elements, ORPHAN_MIN+ characters) becomes a
    paragraph of its own: trafilatura drops it once the page has enough paragraph text (<span><p>…</p></span><font>
    1956年生人，…</font><p>…</p>: Word-pasted pages misnest their paragraphs so, and the sentence was lost)."""
    containers = dict.fromkeys(p.getparent() for p in tree.iter("p"))   # document order: the same every run
    containers.pop(None, None)
    for box in containers:
        if not isinstance(box.tag, str) or box.tag in ("p", "a", "html") or not has_orphans(box):
            continue
        runs: list[tuple[lxml.html.HtmlElement | None, list]] = []   # (block before the run, inline nodes)
        prev, run = None, []
        for child in box:
            if not isinstance(child.tag, str) or (child.tag in INLINE_TAGS
                                                  and next(child.iter(*RUN_BREAKERS), None) is None):
                run.append(child)   # an inline element, or a comment with the text after it
                continue
            runs.append((prev, run))   # a block ends the run
            prev, run = child, []
        runs.append((prev, run))
        for before, nodes in runs:
            lead = box.text if before is None else before.tail
            text = (lead or "") + "".join((n.text_content() if isinstance(n.tag, str) else "") + (n.tail or "")
                                          for n in nodes)
            if len("".join(text.split())) < ORPHAN_MIN:
                continue
            para = etree.Element("p")
            para.text = lead
            if before is None:
                box.text = None
                box.insert(0, para)
            else:
                before.tail = None
                before.addnext(para)
            for n in nodes:
                para.append(n)   # moves the node with its tail: the run's text stays in the paragraph


def load(body: bytes, headers: dict | None = None) -> Page:
    """Decode (extract.encoding) and parse (lxml, html5lib when lxml lost the body) page bytes."""
    text, encoding = decode(body, headers)
    tree, parser = parse(text)
    drop_inline_comments(tree)
    wrap_orphan_runs(tree)
    return Page(tree, encoding, parser)


def top_level(root: Any) -> list[Any]:
    """The document's top-level nodes in order, as XPath's // sees them: libxml2 puts what follows a stray
    </html> beside the root element, not inside it."""
    top = root.getroottree().getroot()
    return [*reversed(list(top.itersiblings(preceding=True))), top, *top.itersiblings()]


def own_text(el: Any) -> str:
    """Text that belongs directly to an element (its text and its children's tails)."""
    return (el.text or "") + "".join(child.tail or "" for child in el)


@dataclass(slots=True)
class Block:
    """Non-link text of one block element; ``score`` adds that of its paragraph-level children."""

    el: Any
    parent: "Block | None"     # set for paragraph-level blocks: the block their text also counts for
    chars: int = 0
    cjk: int = 0
    punct: int = 0
    score: int = 0
    score_cjk: int = 0
    score_punct: int = 0


@dataclass
class Walk:
    """One pass over a tree: every text block plus the page's visible and linked character counts."""

    blocks: list[Block] = field(default_factory=list)
    text_chars: int = 0
    link_chars: int = 0
    links: int = 0

    def densest(self) -> Block | None:
        """The block holding the most prose (own text plus that of its paragraph children), Chinese first:
        a copyright or sharing block of Latin letters and digits is not the article."""
        return max(self.blocks, key=lambda b: (b.score_cjk, b.score), default=None)


def walk(root: Any, linked: set | frozenset = frozenset()) -> Walk:
    """Walk the tree once (scripts and styles skipped): text blocks, visible text and link text.

    Text inside the elements of `linked` counts as link text (e.g. the teasers of a headline list).
    """
    out = Walk()
    blocks = out.blocks
    text_chars = link_chars = links = 0   # locals, written back once (fewer attribute writes)
    stack: list[tuple[Any, bool, Block | None]] = [(root, False, None)]
    pop, push = stack.pop, stack.extend
    while stack:
        el, in_link, block = pop()
        tag = el.tag
        if not isinstance(tag, str) or not tag or tag in IGNORED:
            continue
        if tag == "a":
            in_link, links = True, links + 1
        elif linked and not in_link:
            in_link = el in linked
        if tag in WALK_BLOCKS or block is None:
            block = Block(el, block if tag in PARAGRAPHS else None)
            blocks.append(block)
        children = list(el)   # one pass over the children (each pass makes lxml build their proxies again)
        text = "".join([el.text or ""] + [child.tail or "" for child in children])
        if text:
            text = "".join(text.split())   # as SPACE.sub("", text): str.split drops the same characters
        if text:
            text_chars += len(text)
            if in_link:
                link_chars += len(text)
            else:
                block.chars += len(text)
                block.cjk += cjk_count(text)
                block.punct += len(PUNCT.findall(text))
        push([(child, in_link, block) for child in reversed(children)])
    out.text_chars, out.link_chars, out.links = text_chars, link_chars, links
    for block in reversed(out.blocks):  # children come after their parents: roll paragraphs up
        block.score += block.chars
        block.score_cjk += block.cjk
        block.score_punct += block.punct
        if block.parent is not None:
            block.parent.score += block.score
            block.parent.score_cjk += block.score_cjk
            block.parent.score_punct += block.score_punct
    return out


def densest_block(root: Any) -> Any | None:
    """The element holding the most prose (a chapter's or an article's text container)."""
    block = walk(root).densest()
    return block.el if block is not None and block.score else None


def container_lines(el: Any) -> list[str]:
    """Linearise a container: one line per block element, scripts and forms skipped."""
    out: list[str] = [""]

    def visit(e: Any) -> None:
        tag = e.tag if isinstance(e.tag, str) else ""
        if tag in SKIP_TAGS or not tag:
            if e.tail:
                out[-1] += e.tail
            return
        if tag in LINE_TAGS:
            out.append("")
        out[-1] += e.text or ""
        for child in e:
            visit(child)
        if tag in LINE_TAGS:
            out.append("")
        if e.tail:
            out[-1] += e.tail

    visit(el)
    return [s for s in (SPACE.sub(" ", line).strip() for line in out) if s]


def anchor_texts(tree: Any) -> set[str]:
    """Normalised texts of the page's links (to measure how link-dense an extracted body is)."""
    out = set()
    for a in tree.iter("a"):   # most links hold text only: their .text, without text_content()'s XPath call
        t = "".join(((a.text or "") if len(a) == 0 else a.text_content()).split())
        if len(t) >= 2:
            out.add(t)
    return out
