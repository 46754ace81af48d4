"""Site templates learned from the crawl: body lines that repeat on many pages of one site are boilerplate.

Why: single-page rules (extract.boilerplate) cannot know that a related-reading block, a disclaimer or an
editor line is the site's furniture when it carries no tell-tale word.  On a site of short stories such a
block dominates every body, and distinct stories then look like near duplicates of each other.

The model (``SiteTemplates``) keeps, per site, how many distinct pages each normalised line was seen on
(a 64-bit blake2b of the line without whitespace; bounded: an LRU of ``max_lines`` lines per site and ``max_sites`` sites,
so lines seen on every page stay and one-off story lines fall out).  ``strip(site, title, lines)``
counts the page's lines (the current page included) and returns the lines that are not template:

* a line seen on ``min_pages`` (3) distinct pages of the site is template;
* a line seen on 2 pages is template when the two pages have different titles (two different stories
  carrying one block); same-titled pages sharing lines are an updated or re-posted story, not a template;
* lines shorter than ``min_line`` characters are never template (they weigh little in a fingerprint,
  and short dialogue lines repeat in novels);
* a page whose exact text was already counted on the site is not counted again;
* when stripping would leave fewer than ``min_keep`` characters, nothing is stripped (a page is never
  emptied by its own site's statistics).

Limit (a stream has no second pass): the first page of a site is seen before any template is known, so
its stored text and fingerprints keep the block; only a later copy of that one page elsewhere can then
be missed.  The model lives in the crawl process (not persisted): every crawl learns again from its
first pages.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

logger = logging.getLogger(__name__)

SPACE = re.compile(r"\s+")


def line_key(line: str) -> int:
    """Deterministic 64-bit key of a line with whitespace removed (digits kept: 10月CPI上涨2.1% and
    11月CPI上涨1.8% are different sentences, and numbered lines tell stories apart)."""
    return _bare_key(SPACE.sub("", line or ""))


def _bare_key(bare: str) -> int:
    """line_key of a line whose whitespace is removed already."""
    return int.from_bytes(hashlib.blake2b(bare.encode("utf-8"), digest_size=8).digest(), "big")


def _title_key(title: str | None) -> int:
    """Key of a page title; 0 when there is none (unknown titles never tell two stories apart)."""
    return line_key(title) if title and title.strip() else 0


@dataclass
class LineStat:
    """On how many distinct pages of the site a line was seen, and the title of the first of them."""

    pages: int
    first_title: int


@dataclass
class SiteModel:
    """One site's line statistics (LRU-bounded) and the pages counted so far."""

    lines: OrderedDict = field(default_factory=OrderedDict)
    page_keys: OrderedDict = field(default_factory=OrderedDict)
    pages: int = 0


@dataclass(frozen=True)
class PageLines:
    """A page's lines with each one's key and length without whitespace, computed once: a held page is
    counted, waits, then is stripped, and the crawl's event loop would key every line three times."""

    lines: list[str]
    keys: list[int]
    chars: list[int]
    page_key: int   # line_key of the whole text: a page counted once, however often it is fetched

    @classmethod
    def of(cls, lines: "list[str] | PageLines") -> "PageLines":
        """The page's lines keyed (lines keyed already are returned as they are)."""
        if isinstance(lines, PageLines):
            return lines
        bare = [SPACE.sub("", x or "") for x in lines]
        return cls(list(lines), [_bare_key(b) for b in bare], [len(b) for b in bare], _bare_key("".join(bare)))


@dataclass
class Stripped:
    """The body lines kept and how many template lines (and characters) were removed."""

    lines: list[str]
    removed: int
    removed_chars: int


class SiteTemplates:
    """Per-site line-frequency model that tells template lines from article lines (see module docstring)."""

    def __init__(self, min_pages: int = 3, min_line: int = 6, min_keep: int = 50,
                 max_lines: int = 4096, max_sites: int = 256) -> None:
        if min_pages < 2:
            raise ValueError(f"min_pages must be at least 2, not {min_pages}")
        self.min_pages = min_pages
        self.min_line = min_line
        self.min_keep = min_keep
        self.max_lines = max_lines
        self.max_sites = max_sites
        self.sites: OrderedDict[str, SiteModel] = OrderedDict()

    def site(self, name: str) -> SiteModel:
        """The site's model (created on first use; the least recently used site is forgotten past max_sites)."""
        model = self.sites.get(name)
        if model is None:
            model = self.sites[name] = SiteModel()
            if len(self.sites) > self.max_sites:
                self.sites.popitem(last=False)
        self.sites.move_to_end(name)
        return model

    def observe(self, site: str, title: str | None, lines: list[str] | PageLines) -> dict[int, LineStat]:
        """Count the page's distinct lines on the site (once per distinct page text); their stats."""
        model, page = self.site(site), PageLines.of(lines)
        keys = dict.fromkeys(k for k, n in zip(page.keys, page.chars) if n >= self.min_line)
        fresh = page.page_key not in model.page_keys
        _touch(model.page_keys, page.page_key, True, self.max_lines)
        if fresh:
            model.pages += 1
        tkey = _title_key(title)
        out = {}
        for key in keys:
            stat = model.lines.get(key)
            if stat is None:
                stat = LineStat(0, tkey)
            if fresh:
                stat.pages += 1
            _touch(model.lines, key, stat, self.max_lines)
            out[key] = stat
        return out

    def is_template(self, stat: LineStat, title: str | None) -> bool:
        """Seen on min_pages pages, or on two pages that carry different stories (titles)."""
        if stat.pages >= self.min_pages:
            return True
        tkey = _title_key(title)
        return stat.pages >= 2 and tkey != 0 and stat.first_title != 0 and tkey != stat.first_title

    def pages_seen(self, site: str) -> int:
        """Distinct pages of the site counted so far."""
        return self.site(site).pages

    def strip(self, site: str, title: str | None, lines: list[str] | PageLines, learn: bool = True) -> Stripped:
        """Learn from the page's lines (unless already observed), then drop the site's template lines
        (unless too little would be left)."""
        page = PageLines.of(lines)
        if learn:
            stats = self.observe(site, title, page)
        else:
            model = self.site(site)
            stats = {k: s for k in page.keys if (s := model.lines.get(k)) is not None}
        kept, kept_chars, removed, removed_chars = [], 0, 0, 0
        for line, key, chars in zip(page.lines, page.keys, page.chars):
            stat = stats.get(key)
            if stat is not None and self.is_template(stat, title):
                removed += 1
                removed_chars += chars
            else:
                kept.append(line)
                kept_chars += chars
        if removed and kept_chars < self.min_keep:
            return Stripped(list(page.lines), 0, 0)
        return Stripped(kept, removed, removed_chars)


class HeldTemplates:
    """Site templates for pages in flight together (a crawl): a site's first pages wait, at most
    `warmup_seconds`, until the site has `min_pages` pages, so its first stories lose the template too.
    `drained` (optional) says that no more pages can come (nothing queued, downloading or waiting for the
    spider). While pages wait, one watcher asks it every CHECK_SECONDS; once it has said so twice in a row (a
    few event-loop turns and CHECK_SECONDS apart), the pages waiting then go on with what is known: a small
    site does not wait out the whole warm-up for pages it does not have."""

    CHECK_SECONDS = 0.02   # how often the crawl is asked while pages wait: one watcher, however many pages
    CONFIRM_TURNS = 5      # requests a callback is still yielding are scheduled within a few loop turns

    def __init__(self, templates: SiteTemplates, warmup_seconds: float = 5.0,
                 drained: Callable[[], bool] | None = None) -> None:
        self.templates = templates
        self.warmup_seconds = warmup_seconds
        self.drained = drained
        self.ready: dict[str, asyncio.Event] = {}
        self.waiting = 0
        self.released: asyncio.Event | None = None   # set (and replaced) when the crawl is seen drained
        self.watcher: asyncio.Task | None = None

    async def strip(self, site: str, title: str | None, lines: list[str]) -> Stripped:
        """Learn from the page, wait while the site is still too new, then drop its template lines."""
        page = PageLines.of(lines)
        self.templates.observe(site, title, page)
        await self._wait(site)
        return self.templates.strip(site, title, page, learn=False)

    async def _wait(self, site: str) -> None:
        ready = self.ready.setdefault(site, asyncio.Event())
        if self.templates.pages_seen(site) >= self.templates.min_pages:
            ready.set()
        if ready.is_set() or self.warmup_seconds <= 0:
            return
        released = self._watch()
        self.waiting += 1
        waits = [asyncio.ensure_future(ready.wait()), asyncio.ensure_future(released.wait())]
        try:
            await asyncio.wait(waits, timeout=self.warmup_seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:   # also when the page itself is cancelled (the crawl stopped): nothing left pending
            self.waiting -= 1
            for waiting in waits:
                waiting.cancel()
        ready.set()  # a small site, or nothing more to come: what is known by now is its template

    def _watch(self) -> asyncio.Event:
        """The event the watcher sets once the crawl is drained; the watcher started if it is not running."""
        if self.released is None:
            self.released = asyncio.Event()
        if self.drained is not None and (self.watcher is None or self.watcher.done()):
            self.watcher = asyncio.ensure_future(self._watching())
        return self.released

    def _drained(self) -> bool:
        """The crawl's answer; one it cannot give (an error) is "not drained": the page waits out the warm-up."""
        try:
            return bool(self.drained())
        except Exception as exc:
            logger.warning("cannot tell whether the crawl has more pages (%s): waiting pages wait out the warm-up", exc)
            return False

    async def _watching(self) -> None:
        """Ask the crawl while pages wait; two drained answers in a row release the pages waiting then."""
        before = self._drained()   # asked as the first page arrives, not a check later
        while self.waiting:
            for _ in range(self.CONFIRM_TURNS):
                await asyncio.sleep(0)
            await asyncio.sleep(self.CHECK_SECONDS)
            if not self.waiting:
                return
            now = self._drained()
            if before and now:
                released, self.released = self.released, asyncio.Event()
                released.set()
                now = False   # pages arriving from here on are confirmed anew
            before = now


def _touch(lru: OrderedDict, key: int, value: object, limit: int) -> None:
    """Insert or refresh key as most recent; forget the least recent entry past limit."""
    lru[key] = value
    lru.move_to_end(key)
    if len(lru) > limit:
        lru.popitem(last=False)
