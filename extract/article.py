"""Article body extraction for Chinese news and novel pages: trafilatura made right for Chinese sites.

``extract(body, url, headers, profile)`` is a pure function (no Scrapy needed) that returns an
``ExtractResult`` or raises ``NotArticle(reason, message)`` -- it never returns None, so every dropped
page carries a reason slug and a sentence.  ``pipelines.extract.ExtractPipeline`` turns NotArticle into
``pipelines.drops.SkippedItem``.  ``python -m extract FILE.html [--url URL] [--json]`` runs the same code.

Choices measured on the 44 gold pages (word-level F1, same machine, same run for each group):
- first pass: trafilatura fast=True 0.981 at ~36 ms/page; fast=False 0.983 but ~87 ms/page (over the
  1.5x budget); favor_precision 0.951 (drops whole bodies on 163.com); favor_recall 0.980 -> fast=True.
- second opinion for short / link-dense / list-like output: densest text block 0.981; readability-lxml
  0.969 and slower; trafilatura's own fallbacks (fast=False, favor_recall) 0.918, the same as no
  second opinion at all -> densest block.

Steps:
1. reject binary/empty input (extract.sniff); truncate to MAX_BYTES (a 10 MB page would otherwise cost seconds);
2. decode (extract.encoding: BOM, UTF-8 validity, HTTP/meta charset, detection);
3. parse with lxml; if lxml lost most paragraphs (e.g. a stray </html> before the article), parse again
   without the page's </body></html> tags and script-only prelude, and only if that fails too with
   html5lib, which repairs the tree the way browsers do (extract.dom); a caller that already has the tree
   passes it as ``page``;
4. body: a site-profile selector (profile["body_selector"], CSS or XPath; WeChat ``#js_content`` is
   built in) or trafilatura (comments off, fast heuristics);
5. a table row that trafilatura wrote as one line is given back as its cell's paragraphs (extract.cells), then the
   Chinese boilerplate post-filter (extract.boilerplate, extract.pagehead, extract.tails);
6. second opinion when the body is short, link-dense or list-like (also a page run together on one line by
   trafilatura's baseline, whose link texts sit inside the line: dump_link_share): the densest text block of the page
   (extract.dom.densest_block) with the prose blocks right beside it (a poem above its translation), taken when it is itself not link-dense and not tiny, never when it is a
   footer (copyright, ICP licence, contact lines), and not when the lines it would drop are the ones about
   the headline (a short story beside a longer block of something else);
7. no-body checks: too short (a short poem is a whole work, not too short), 404 text served with 200, login
   walls, list pages (extract.pagekind).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html

from extract.cells import split_cells
from extract.boilerplate import RELATED_HEAD, clean_lines, credit_fields, is_footer, strip_edges
from extract.pagehead import trim_nav_runs
from extract.limits import MAX_BYTES, MIN_CHARS
from extract.linklists import DUMP_DENSITY, drop_link_runs, dump_link_share, link_density
from extract.tails import HEADLINE_LINK, is_headline_link
from extract.dom import SENTENCE_END, Page, anchor_texts, cjk_count, container_lines, load, visible_len, walk
from extract.pagekind import MIN_PROSE, is_soft_404
from extract.script import is_traditional, restore, to_simplified
from extract.sniff import binary_reason, is_empty
from extract.version import EXTRACT_VERSION

SECOND_OPINION_CHARS = 300  # a first-pass body shorter than this gets a second opinion
LINK_DENSE = 0.3            # bodies with this share of link text get a second opinion
PROSE_PUNCT = 3              # a text block with fewer punctuation marks is not running text
DISAGREE = 0.3              # a line with this share of bigrams outside the other candidate is not in it
TITLE_MARGIN = 0.2          # text a candidate drops that holds this much more of the title is the story
LINK_LINE = 0.7             # a line with this share of link text is navigation, not article text
BUILTIN_SELECTORS = (
    ("wechat", "//div[@id='js_content']"),   # WeChat hides the body with visibility:hidden until JS runs
)
LOGIN_WALL = re.compile(r"(请(先)?登录|登录后(才能)?(查看|阅读|继续)|登录/注册|会员专享|付费阅读|订阅后阅读|"
                        r"扫码登录|Sign in to continue|Log in to continue)", re.I)
TITLE_SEPARATOR = re.compile(r"\s+[|｜\-–—_»]\s+|\s*[|｜]\s*")   # headline | channel | site, blog » post
TITLE_PART_MIN = 4           # a part of the <title> this long repeated as the first line is the headline
SITE_SUFFIX = re.compile(r"\s*[-–—]\s*[^-–—\s]{1,12}(网|报|新闻|频道|在线|论坛|社区)$")
SCRIPT_BYTES = re.compile(rb"<(script|style)\b.*?</\1\s*>", re.I | re.S)
MARKS = re.compile(r"([\x01\x02])")
SPACE_CHARS = re.compile(r"\s")
# link text may hold \[ \]; an address may hold one level of parentheses (javascript:history.go(-1)) or be written
# between angle brackets (<javascript:…(…(…))…>)
LINK_MD_SPAN = re.compile(r"\[((?:\\[\[\]]|[^\[\]]){0,300})\]\((<[^>\n]{0,1000}>|(?:[^()\n]|\([^()\n]{0,100}\)){0,500})\)")


class NotArticle(ValueError):
    """The page has no article body: ``reason`` is a machine-readable slug, ``message`` says why for a person.

    Slugs: empty, binary, soft_404, login_wall, list_page, no_sentences, too_short.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class ExtractResult:
    """What the pipeline stores: body text with one paragraph per line, plus metadata."""

    title: str | None
    text: str
    date: str | None
    author: str | None
    language: str | None
    encoding: str
    method: str
    original_title: str | None = None   # credit lines taken out of the body (extract.boilerplate.credit_fields)
    source: str | None = None
    editor: str | None = None
    rights: str | None = None           # a rights reservation (版权归…所有, 未经授权不得转载) taken out of the body
    version: str = EXTRACT_VERSION      # the rules the text was cut with (extract.version)


def select_container(tree: lxml.html.HtmlElement, profile: dict | None) -> tuple[lxml.html.HtmlElement, str] | None:
    """The body container named by the site profile (CSS or XPath) or a built-in selector, if present."""
    selector = (profile or {}).get("body_selector") or (profile or {}).get("body_xpath")
    candidates = [("profile", selector)] if selector else []
    candidates += list(BUILTIN_SELECTORS)
    for name, sel in candidates:
        xpath = sel if sel.startswith(("/", "(", "./")) else _css_to_xpath(sel)
        found = [el for el in tree.xpath(xpath) if visible_len(el.text_content()) > 0]
        if found:
            return max(found, key=lambda el: visible_len(el.text_content())), name
    return None


def _css_to_xpath(css: str) -> str:
    """CSS selector -> XPath (cssselect ships with lxml's html extras and Scrapy's parsel)."""
    from cssselect import HTMLTranslator
    return HTMLTranslator().css_to_xpath(css)


def run_trafilatura(tree: lxml.html.HtmlElement, url: str, recall: bool, metadata: bool) -> dict:
    """trafilatura on a parsed tree, comments off; first pass fast, second pass with its fallbacks."""
    import trafilatura
    doc = trafilatura.bare_extraction(
        tree, url=url or None, include_comments=False, include_tables=True, with_metadata=metadata,
        fast=not recall, favor_recall=recall, favor_precision=False, deduplicate=False, include_links=True,
    )
    if doc is None:
        return {}
    return doc if isinstance(doc, dict) else doc.as_dict()


def _meta(tree: lxml.html.HtmlElement, *names: str) -> str | None:
    """The first non-empty content of <meta name|property=NAME> in the order of `names` (one pass over the
    <meta> elements: an XPath per name cost ~1 ms a page)."""
    found: dict[str, str] = {}
    for el in tree.iter("meta"):
        value = (el.get("content") or "").strip()
        if value:
            for key in (el.get("name"), el.get("property")):
                if key in names and key not in found:
                    found[key] = value
    return next((found[name] for name in names if name in found), None)


def page_title(tree: lxml.html.HtmlElement) -> str | None:
    """og:title, else the first <h1>, else <title> without the site-name suffix."""
    title = _meta(tree, "og:title", "twitter:title")
    if not title:
        h1 = tree.xpath("(//h1)[1]")
        title = re.sub(r"\s+", " ", h1[0].text_content()).strip() if h1 else ""
    if not title:
        t = tree.find(".//title")
        raw = (t.text_content() if t is not None else "").strip()
        title = re.split(r"\s*(?:_|\||--| - |——)\s*", raw)[0] if raw else ""
        title = SITE_SUFFIX.sub("", title)
    return title or None


# Publish-date <meta> names read before htmldate: the same date on every shared page that has one, ~2.5 ms less.
DATE_METAS = ("article:published_time", "og:release_date", "publishdate", "pubdate", "weibo: article:create_at",
              "og:time")
META_DATE = re.compile(r"^\s*(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})")


def page_date(tree: lxml.html.HtmlElement, url: str) -> str | None:
    """Publication date (YYYY-MM-DD): a publish-date <meta>, else htmldate without its slow extensive search.

    Title, date and author are cheap look-ups on purpose: trafilatura's own metadata pass costs as much as the
    extraction (its author search alone ~30 ms on a 163.com page).  extract() reads the date only once the page is
    known to be an article (htmldate is ~10% of an extraction)."""
    return meta_date(tree) or htmldate_date(tree, url)


def meta_date(tree: lxml.html.HtmlElement) -> str | None:
    """The date of the first publish-date <meta> (DATE_METAS) that starts with one."""
    for el in tree.iter("meta"):
        name = (el.get("name") or el.get("property") or el.get("itemprop") or "").strip().lower()
        if name in DATE_METAS:
            m = META_DATE.match(el.get("content") or "")
            if m and 1 <= int(m[2]) <= 12 and 1 <= int(m[3]) <= 31:
                return f"{int(m[1]):04d}-{int(m[2]):02d}-{int(m[3]):02d}"
    return None


def htmldate_date(tree: lxml.html.HtmlElement, url: str) -> str | None:
    """htmldate's date without its slow extensive search."""
    try:
        from htmldate import find_date
        return find_date(tree, url=url or None, extensive_search=False, original_date=True)
    except Exception:  # htmldate raises on odd trees; a missing date is not an error
        return None


def page_author(tree: lxml.html.HtmlElement) -> str | None:
    """Author from the usual <meta> tags."""
    return _meta(tree, "author", "article:author", "dc.creator", "byline")


def language_of(tree: lxml.html.HtmlElement, text: str) -> str | None:
    """The page's declared language, else 'zh' when the body is mostly CJK."""
    lang = (tree.get("lang") or tree.get("xml:lang") or "").strip().lower()
    if lang:
        return lang.split(",")[0]
    if text and cjk_count(text) / max(1, visible_len(text)) > 0.3:
        return "zh"
    return None


def second_opinion(tree: lxml.html.HtmlElement) -> list[str]:
    """Lines of the densest text block when it is running text (chosen over trafilatura's fallbacks and
    readability by measurement); a block without sentence punctuation is a menu or a ranking, not a body."""
    block = walk(tree).densest()
    if block is None or block.score_punct < PROSE_PUNCT:
        return []
    return [line for el in with_prose_siblings(block.el) for line in container_lines(el)]


SIBLING_LINKS = 0.25        # a sibling block with less link text than this share ...
SIBLING_MIN = 10            # ... and at least this many characters with sentence punctuation is part of the story


def with_prose_siblings(el: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """The densest block with the prose blocks right beside it (readability's sibling rule): a poem above its
    translation, a lead above the body are one story split over sibling blocks; a list, a menu, a footer is not."""
    before, after = [], []
    for step, out in ((lambda e: e.getprevious(), before), (lambda e: e.getnext(), after)):
        sib = step(el)
        while sib is not None and (not isinstance(sib.tag, str) or is_prose_block(sib)):
            if isinstance(sib.tag, str):   # comments (<!-- 正文 -->) between blocks are stepped over
                out.append(sib)
            sib = step(sib)
    return before[::-1] + [el] + after


def is_prose_block(el: lxml.html.HtmlElement) -> bool:
    """A sibling that reads as text of the story: sentences, few links, no footer or list of headlines."""
    if el.tag in ("head", "script", "style", "noscript", "ul", "ol", "nav", "form", "select", "table", "footer"):
        return False
    text = re.sub(r"\s+", "", el.text_content())
    if len(text) < SIBLING_MIN or is_footer(text):
        return False
    sentences = sum(len(t) for t in (re.sub(r"\s+", "", x) for x in container_lines(el))
                    if len(t) >= SIBLING_MIN and re.search(r"[。！？!?…”」]$", t))
    linked = sum(len(re.sub(r"\s+", "", a.text_content())) for a in el.iter("a"))
    return sentences >= len(text) / 2 and linked / len(text) < SIBLING_LINKS


def clean(lines: list[str], anchors: set[str] | frozenset = frozenset()) -> str:
    """Boilerplate post-filter, joined one paragraph per line (a traditional-script body through its simplified view,
    given back in its own characters: extract.script)."""
    lines = [untable(line) for line in lines]
    if not is_traditional(lines):
        return "\n".join(clean_lines(lines, anchors))
    simple = [to_simplified(line) for line in lines]
    return "\n".join(restore(clean_lines(simple, {to_simplified(a) for a in anchors}), lines, simple))


def edges_stripped(text: str) -> str:
    """strip_edges over a body, through the simplified view when it is written in traditional characters."""
    lines = text.split("\n")
    if not is_traditional(lines):
        return "\n".join(strip_edges(lines))
    simple = [to_simplified(line) for line in lines]
    return "\n".join(restore(strip_edges(simple), lines, simple))


def credits(raw_lines: list[str]) -> dict[str, str]:
    """credit_fields over the raw lines, values in the page's own characters."""
    if not is_traditional(raw_lines):
        return credit_fields(raw_lines)
    simple = [to_simplified(line) for line in raw_lines]
    return {name: restore([value], raw_lines, simple)[0] for name, value in credit_fields(simple).items()}


def unlink(text: str) -> tuple[list[str], float]:
    """Drop link-dominated lines from trafilatura's markdown-link output; (plain lines, link share).

    Link texts may span lines, so links are first replaced by their text between two markers and
    the share of marked characters is counted line by line.  Related-news headings are kept (the
    boilerplate filter needs them to cut the block that follows), and a linked headline leaves HEADLINE_LINK
    (the filter cuts a list of other stories at the first of them, then drops the marks).
    """
    marked = LINK_MD_SPAN.sub(lambda m: "\x01" + m.group(1) + "\x02", text)
    lines, total, linked, inside = [], 0, 0, False
    for line in marked.split("\n"):
        n_link = n_all = 0
        for part in MARKS.split(line):   # text, then a marker and the text after it, ...
            if part == "\x01" or part == "\x02":
                inside = part == "\x01"
                continue
            n = len(part) - len(SPACE_CHARS.findall(part))
            n_all += n
            n_link += n if inside else 0
        plain = line.replace("\x01", "").replace("\x02", "").replace("\\[", "[").replace("\\]", "]")
        total += n_all
        linked += n_link
        if n_all and n_link / n_all >= LINK_LINE and not RELATED_HEAD.match(plain.strip()):
            if is_headline_link(plain):
                lines.append(HEADLINE_LINK)   # where a linked headline was: a list of other stories shows by them
            continue
        lines.append(plain)
    return lines, (linked / total if total else 0.0)


def untable(line: str) -> str:
    """trafilatura renders table rows as '| a | b |' (a cell's own '|' as '\\|', a cell of several lines
    open at one end): keep the cell text."""
    line = line.replace("\\|", " ")
    if line.startswith("|") or line.rstrip().endswith("|"):
        return " ".join(c.strip() for c in line.strip().strip("|").split("|") if c.strip(" -"))
    return line


def body_from(tree: lxml.html.HtmlElement, url: str, profile: dict | None, fast: bool,
              anchors: set[str]) -> tuple[str, str, float, list[str]]:
    """(cleaned body, method, link density, raw lines): selector container or trafilatura, second opinion if
    doubtful; the raw lines (before the boilerplate filter) are where the credit fields are read."""
    chosen = select_container(tree, profile)
    if chosen is not None:
        el, name = chosen
        raw = container_lines(el)
        text = clean(raw, anchors)
        return text, f"selector:{name}", link_density(text, anchors), raw
    first = run_trafilatura(tree, url, recall=False, metadata=False)
    lines, density = unlink(first.get("text") or "")
    lines = split_cells(lines, tree)
    text = "\n".join(drop_link_runs(trim_nav_runs(clean(lines, anchors).split("\n"), anchors), anchors))
    density = max(density, link_density(text, anchors))
    if dump_link_share(text, anchors) >= LINK_DENSE:   # the page run together on a line: any block of it is better
        density = max(density, DUMP_DENSITY)
    if fast or (visible_len(text) >= SECOND_OPINION_CHARS and density < LINK_DENSE and not looks_like_list(text)):
        return text, "trafilatura", density, lines
    raw_alt = second_opinion(tree)
    if not alt_can_win(raw_alt, text, density):
        return text, "trafilatura", density, lines
    alt = "\n".join(drop_link_runs(trim_nav_runs(clean(raw_alt, anchors).split("\n"), anchors), anchors))
    if not alt or is_footer(alt):
        return text, "trafilatura", density, lines
    alt_density = link_density(alt, anchors)
    if is_footer(text) and alt_density < LINK_DENSE:
        return alt, "density", alt_density, lines
    doubtful = density >= LINK_DENSE or looks_like_list(text)
    ratio = visible_len(alt) / max(1, visible_len(text))
    if alt and alt_density < LINK_DENSE and ((doubtful and (ratio >= 0.25 or density >= 0.5)) or ratio >= 0.5):
        if not doubtful and loses_story(text, alt, tree):
            return text, "trafilatura", density, lines
        return alt, "density", alt_density, lines
    return text, "trafilatura", density, lines


def alt_can_win(raw_alt: list[str], text: str, density: float) -> bool:
    """Whether the second opinion could replace `text` (body_from's tests, with the raw lines' length as an upper bound
    of the cleaned alternative's: the filter only takes characters away): a block too short to win is not cleaned."""
    if not raw_alt:
        return False
    if density >= 0.5 or is_footer(text):
        return True
    return sum(visible_len(line) for line in raw_alt) >= 0.25 * max(1, visible_len(text))


def bigrams(text: str) -> set[str]:
    """Character bigrams of the CJK and alphanumeric text (spaces and punctuation dropped)."""
    t = re.sub(r"[\W_]+", "", text)
    return {t[i:i + 2] for i in range(len(t) - 1)}


def loses_story(text: str, alt: str, tree: lxml.html.HtmlElement) -> bool:
    """Whether taking `alt` drops the story: the running text of `text` that `alt` lacks is about the headline
    (holds TITLE_MARGIN more of the title's bigrams than `alt`) -- evidence, not the larger block by default."""
    kept = bigrams(alt)
    rest = "\n".join(line for line in text.split("\n")
                     if len(bigrams(line) - kept) > DISAGREE * max(1, len(bigrams(line))))
    return running_chars(rest) > 0 and title_overlap(rest, tree) > title_overlap(alt, tree) + TITLE_MARGIN


def title_overlap(text: str, tree: lxml.html.HtmlElement) -> float:
    """Share of the page title's bigrams found in a candidate body: evidence that it is the story."""
    title = bigrams(page_title(tree) or "")
    return len(title & bigrams(text)) / len(title) if title else 0.0


def looks_like_list(text: str) -> bool:
    """Headline lists: many short lines and almost none of them a sentence."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 8:
        return False
    sizes = [visible_len(line) for line in lines]
    in_sentences = sum(n for n, line in zip(sizes, lines) if re.search(r"[。！？!?…”]", line))
    return in_sentences / max(1, sum(sizes)) < 0.3 and sum(sizes) / len(lines) < 40


def running_chars(text: str, anchors: set[str] | frozenset = frozenset()) -> int:
    """Characters on lines of running text (a sentence of 20+ characters that is not a link's text): what a
    short brief has and a list of links has not, however many link lines surround it."""
    lines = (re.sub(r"\s+", "", line) for line in text.split("\n"))
    return sum(len(t) for t in lines if len(t) >= 20 and SENTENCE_END.search(t) and t not in anchors)


def drop_title_line(text: str, title: str | None) -> str:
    """The headline repeated as the body's first line is not body text (also when the <title> adds the channel and
    the site around it after a separator: 平鎮輪胎行惡火 | 社會 | 中央社 CNA, 法国报纸摘要 - 马克龙…会面)."""
    lines = text.split("\n")
    if not title or not lines:
        return text
    first = re.sub(r"\s+", "", lines[0])
    parts = [re.sub(r"\s+", "", p) for p in TITLE_SEPARATOR.split(title)]
    if first and (first == re.sub(r"\s+", "", title) or (len(first) >= TITLE_PART_MIN and first in parts)):
        return "\n".join(lines[1:])
    return text


def check_body(text: str, title: str | None, min_chars: int, density: float,
               anchors: set[str] | frozenset = frozenset()) -> None:
    """Raise NotArticle for bodies that are not articles (too short, 404, login wall, link list)."""
    n = visible_len(text)
    if n == 0:
        raise NotArticle("empty", "no text found")
    if is_soft_404(f"{title or ''}\n{text}", n, limit=400):
        raise NotArticle("soft_404", f"not-found page served as a normal page ({n} chars)")
    if n < 400 and LOGIN_WALL.search(text):
        raise NotArticle("login_wall", f"login wall ({n} chars)")
    if (density >= 0.5 and running_chars(text, anchors) < MIN_PROSE) or (density >= 0.1 and n < 3000 and looks_like_list(text)):
        raise NotArticle("list_page", "list or navigation page (short link lines, no sentences)")
    if n < 200 and not re.search(r"[。！？!?…]", text):
        raise NotArticle("no_sentences", f"no sentences, only labels and names ({n} chars)")
    if n < min_chars and not is_verse(text):
        raise NotArticle("too_short", f"too short ({n} chars < {min_chars})")


VERSE_LINE = re.compile(r"^(?:[\u4e00-\u9fff]{3,11}[，。！？；、]){2,}$")   # 床前明月光，疑是地上霜。
VERSE_MIN = 16               # a poem of two lines of two five-character clauses (a 绝句 has 20 characters)


def is_verse(text: str) -> bool:
    """A short poem: 2+ lines, each of 2+ clauses of 3-11 characters closed by punctuation -- a whole work
    shorter than MIN_CHARS, not a fragment of a page."""
    lines = [re.sub(r"\s+", "", line) for line in text.split("\n") if line.strip()]
    return len(lines) >= 2 and all(VERSE_LINE.match(x) for x in lines) and cjk_count(text) >= VERSE_MIN


def load_page(body: bytes | str, headers: dict | None = None, max_bytes: int = MAX_BYTES) -> Page:
    """Sniff, cut, decode and parse raw page bytes; NotArticle for empty and binary bodies."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    if is_empty(body):
        raise NotArticle("empty", "empty page")
    reason = binary_reason(body)
    if reason:
        raise NotArticle("binary", reason)
    if len(body) > max_bytes:
        body = SCRIPT_BYTES.sub(b"", body)[:max_bytes]
    return load(body, headers)


def extract(body: bytes | str, url: str = "", headers: dict | None = None, profile: dict | None = None,
            *, min_chars: int = MIN_CHARS, fast: bool = False, max_bytes: int = MAX_BYTES,
            page: Page | None = None) -> ExtractResult:
    """Title, body text (one paragraph per line), date, author, credit fields of a page; NotArticle if none.

    ``page`` is an already loaded page (``load_page``/``extract.dom.load``): the bytes are then not parsed again.
    """
    page = page or load_page(body, headers, max_bytes)
    tree = page.tree
    anchors = anchor_texts(tree)
    body_text, method, density, raw_lines = body_from(tree, url, profile, fast, anchors)
    title = page_title(tree)
    body_text = drop_title_line(body_text, title)
    body_text = edges_stripped(body_text)  # credits under a dropped headline
    check_body(body_text, title, min_chars, density, anchors)   # before the date: a list page costs no htmldate
    return ExtractResult(
        title=title, text=body_text, date=page_date(tree, url), author=page_author(tree),
        language=language_of(tree, body_text), encoding=page.encoding,
        method=method if page.parser == "lxml" else f"{page.parser}+{method}", **credits(raw_lines),
    )
