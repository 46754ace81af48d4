"""What sits around a story on a page: channel menus, a bar of the site's links, copyright and licence lines, the
headline, runs of navigation lines at the body's edges (extract.boilerplate drops the chrome above the first
paragraph and the headline over its byline; extract.article trims the navigation runs).

Why a module of its own: a small site's table layout puts its chrome in the same cell as the story, so trafilatura
hands it over with the body; these tests read one line at a time and need nothing of the boilerplate filter.
"""
from __future__ import annotations

import re

# A site footer's marks: the licence, the 举报 hotline, the copyright (a footer's line, never a story's).
FOOTER = re.compile(r"(违法和不良信息举报|ICP备|ICP证|公网安备|All Rights Reserved|版权所有|Copyright\s*(©|\(c\)))", re.I)


MENU_SPLIT = re.compile(r"[\s\-|｜\\/·•>»]+")
MENU_ITEMS = 5               # a line of at least this many items ...
MENU_ITEM_MAX = 4            # ... none longer than this, and no punctuation: a channel menu
MENU_LONG = 10               # a line of this many items may have one in ten a little longer


def is_menu_line(line: str) -> bool:
    """A channel menu flattened into one line: 首页 滚动 国内 国际 财经 ... or 新闻 \\ 行情 \\ 评测 ..."""
    if re.search(r"[。，！？；：,!?;:]", line):
        return False
    items = [t for t in MENU_SPLIT.split(line) if t]
    if len(items) >= MENU_LONG:   # a long menu may hold one or two longer items (06校园行)
        return sum(len(t) > MENU_ITEM_MAX for t in items) <= len(items) // 10 and all(len(t) <= 6 for t in items)
    return len(items) >= MENU_ITEMS and all(len(t) <= MENU_ITEM_MAX for t in items)


LINK_BAR_ITEMS = 4           # a line of at least this many link texts side by side is a site's link bar
HEAD_FOOTER_MAX = 80         # a copyright or licence line this short above the first paragraph is page chrome


def is_link_bar(line: str, anchors: set[str] | frozenset) -> bool:
    """A site's navigation flattened into one line: every space-separated item is a link's text and none is a
    sentence (首页 关注中国中心（CCC） 中国民权运动 公民社会 ...), however long its items are."""
    items = line.split()
    return len(items) >= LINK_BAR_ITEMS and not re.search(r"[。！？!?]", line) and all(t in anchors for t in items)


def is_head_chrome(line: str, anchors: set[str] | frozenset) -> bool:
    """Page chrome that a table layout puts above a story: a channel menu, a link bar, a short copyright line."""
    short_footer = len(line) <= HEAD_FOOTER_MAX and bool(FOOTER.search(line))
    return short_footer or is_menu_line(line) or is_link_bar(line, anchors)


HEADLINE_MAX = 40            # a headline is at most this long


def is_headline(line: str) -> bool:
    """A line that reads as a headline: short, no sentence end, not a label that opens what follows (摘要：)."""
    return len(re.sub(r"\s+", "", line)) <= HEADLINE_MAX and not re.search(r"[。！？!?…；;：:]$|[。！？!?]", line)


def is_sentence_free(line: str) -> bool:
    """A short line without sentence punctuation: a menu item, label or headline."""
    return len(line) <= 40 and not re.search(r"[。！？!?…]", line)


def trim_nav_runs(lines: list[str], anchors: set[str], min_run: int = 6) -> list[str]:
    """Drop a leading or trailing run of >= min_run sentence-free lines when >= 40% of them are links.

    Navigation bars and channel menus that trafilatura keeps at the edges of a body look like this;
    a single heading or a short label before the first paragraph is never a run of six.
    """
    def run_end(seq: list[str]) -> int:
        n = 0
        while n < len(seq) and is_sentence_free(seq[n]):
            n += 1
        return n

    def linky(run: list[str]) -> bool:
        return sum(re.sub(r"\s+", "", x) in anchors for x in run) >= 0.4 * len(run)

    n = run_end(lines)
    if n >= min_run and n < len(lines) and linky(lines[:n]):
        lines = lines[n:]
    m = run_end(lines[::-1])
    if m >= min_run and m < len(lines) and linky(lines[len(lines) - m:]):
        lines = lines[:len(lines) - m]
    return lines
