"""Link lists inside a body: headline links an ad or 今日焦点 block put between paragraphs, their label (also
one set one character a line), and a byline made only of links; how much of a body is link text, also when the
page comes back run together on one line (extract.article applies them)."""
from __future__ import annotations

import re

from extract.boilerplate import LABEL_MAX, RELATED_HEAD, is_label

VERTICAL_RUN = 2             # this many one-character lines in a row are a label written top to bottom (今/日/推/荐)
BULLET_ONLY = re.compile(r"^[·•・\-*]+$")
LINK_RUN = 3                 # this many headline lines in a row, each a link's text, make a link list


def drop_link_runs(lines: list[str], anchors: set[str]) -> list[str]:
    """Inside a body: link lists (LINK_RUN+ sentence-free lines that are each a link's text, bullets between
    them, their label just above) and labels written one character a line -- an ad or 今日焦点 block the
    page's layout put between paragraphs; a paragraph that merely holds a link is never one of them."""
    def headline(line: str) -> bool:
        t = re.sub(r"\s+", "", line)
        return t in anchors and not re.search(r"[。！？!?；;]", t)

    keep = [not BULLET_ONLY.match(line.strip()) for line in lines]
    i = 0
    while i < len(lines):
        j, heads = i, 0
        while j < len(lines) and (headline(lines[j]) or BULLET_ONLY.match(lines[j].strip())):
            heads += headline(lines[j])
            j += 1
        if heads >= LINK_RUN:
            start = label_start(lines, i)
            keep[start:j] = [False] * (j - start)
        i = max(j, i + 1)
    return drop_link_bylines([line for line, k in zip(lines, keep) if k], anchors)


BYLINE_HEAD = 3              # a byline of links is looked for among the body's first lines


def drop_link_bylines(lines: list[str], anchors: set[str]) -> list[str]:
    """A line above the first paragraph made only of links (李白 〔唐代〕: the author's and the dynasty's
    pages) is a byline, not text."""
    def byline(line: str) -> bool:
        words = line.split()
        return 2 <= len(words) <= 6 and len(line) <= 30 and all(re.sub(r"[〔〕\[\]（）()]", "", w) in anchors
                                                                  or w in anchors for w in words)
    head = [i for i in range(min(BYLINE_HEAD, len(lines))) if byline(lines[i])]
    return [line for i, line in enumerate(lines) if i not in head]


def label_start(lines: list[str], i: int) -> int:
    """Where the label of a link list starting at i begins: 今日焦点： or 相关链接 on the line above, or a label
    set vertically one character a line (今/日/推/荐, VERTICAL_RUN to LABEL_MAX lines)."""
    if i > 0 and (is_label(lines[i - 1].strip().rstrip(":：")) and len(lines[i - 1].strip()) > 1
                  or RELATED_HEAD.match(lines[i - 1])):
        return i - 1
    j = i
    while j > 0 and i - j < LABEL_MAX and re.fullmatch(r"[\u4e00-\u9fff]", lines[j - 1].strip()):
        j -= 1
    return j if i - j >= VERTICAL_RUN else i


def link_density(text: str, anchors: set[str]) -> float:
    """Share of the body's characters on lines that are just a link's text."""
    total = linked = 0
    for line in text.split("\n"):
        t = re.sub(r"\s+", "", line).lstrip("-*•·")
        total += len(t)
        if t in anchors:
            linked += len(t)
    return linked / total if total else 0.0


DUMP_LINES = 2               # a body of at most this many lines ...
DUMP_MIN = 300               # ... one of them this long, may be the page's text run together on one line
DUMP_ANCHOR = 4              # link texts this long found inside it count as its link text
DUMP_DENSITY = 0.5           # such a line with LINK_DENSE (extract.article) of link text: as doubtful as a body
                             # half made of links


def dump_link_share(text: str, anchors: set[str] | frozenset) -> float:
    """Share of link text inside a body of one or two long lines: trafilatura's baseline gives a short story's page
    back as one line (headline, share buttons, the story, a list of linked headlines), where no line is a link's text
    on its own and link_density sees none of it."""
    lines = text.split("\n")
    if len(lines) > DUMP_LINES or not anchors:
        return 0.0
    t = "".join(text.split())
    if len(t) < DUMP_MIN:
        return 0.0
    return min(1.0, sum(len(a) for a in anchors if len(a) >= DUMP_ANCHOR and a in t) / len(t))
