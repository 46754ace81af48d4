"""The labelled set: (source, variant, label, disguise, level) pairs made from real texts with a fixed seed."""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from . import transforms as T
from .corpus import Doc, load_fiction, load_news

EDIT_LEVELS = (1, 2, 5, 10, 15, 20)
SUBST_LEVELS = (1, 2, 3, 5, 10)
PARTIAL_LEVELS = (10, 20, 30, 40, 50, 60, 70, 80, 90)
SCRIPT_DISGUISES = ("traditional", "traditional-big5", "fullwidth", "halfwidth-punct", "gbk", "gb2312")
BOILERPLATE_KINDS = ("navigation", "ads", "read-original", "spam", "all")
# families of disguises: "whole" copies are what crawl-time dedup must catch; "partial" only the matcher
WHOLE_FAMILIES = ("edit", "reorder", "substitution", "script", "boilerplate")
PARTIAL_FAMILIES = ("partial",)


@dataclass
class Pair:
    """A labelled pair: is `variant` a copy of `source`? `level` is the nominal percentage changed."""

    pair_id: str
    source: Doc
    variant: str
    label: int                 # 1 copy, 0 not a copy
    family: str                # edit, reorder, substitution, script, boilerplate, partial, negative
    disguise: str              # add, delete, homophone, traditional, partial, easy, hard-chapter, ...
    level: float               # nominal % (0 when the disguise has no level)
    changed: float = 0.0       # measured fraction changed / copied
    copied_spans: list[tuple[int, int]] = field(default_factory=list)
    variant_id: str = ""       # a real document id when the variant is an untouched real document


@dataclass
class LabelledSet:
    """All pairs plus the documents they were drawn from (for the library of index-based methods)."""

    pairs: list[Pair]
    sources: dict[str, Doc]
    screened_out: int = 0      # same-category news pairs dropped from hard negatives as likely reprints


@dataclass(frozen=True)
class Config:
    """How big the set is; everything else is fixed so runs are comparable."""

    n_news: int = 50
    n_fiction: int = 50
    n_donors: int = 50
    seed: int = 20131101
    news_len: tuple[int, int] = (300, 5000)
    fiction_len: tuple[int, int] = (1000, 8000)


def rng_for(seed: int, *parts: object) -> random.Random:
    """An independent generator per pair (str seeds go through SHA-512, never the salted hash())."""
    return random.Random(":".join([str(seed), *map(str, parts)]))


def shingle_containment(a: str, b: str, k: int = 8) -> float:
    """Share of the smaller text's character k-grams present in the other (the reprint screen)."""
    sa = {a[i:i + k] for i in range(len(a) - k + 1)}
    sb = {b[i:i + k] for i in range(len(b) - k + 1)}
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def _pick(docs: Sequence[Doc], n: int, bounds: tuple[int, int], rng: random.Random) -> list[Doc]:
    """Sample n documents whose length is within bounds."""
    ok = [d for d in docs if bounds[0] <= len(d.text) <= bounds[1]]
    return rng.sample(ok, min(n, len(ok)))


class _Builder:
    """Collects pairs for one labelled set."""

    def __init__(self, cfg: Config, news: list[Doc], fiction: list[Doc], tables: T.ReadingTables):
        self.cfg = cfg
        self.news = news
        self.fiction = fiction
        self.tables = tables
        self.pairs: list[Pair] = []
        self.sources: dict[str, Doc] = {}
        self.chapters = {(d.group, d.order): d for d in fiction}
        self.screened_out = 0

    def add(self, src: Doc, variant: T.Variant | str, label: int, family: str, disguise: str,
            level: float, variant_id: str = "") -> None:
        """Record one pair."""
        v = variant if isinstance(variant, T.Variant) else T.Variant(variant)
        pid = f"{src.id}|{disguise}|{level:g}|{variant_id or len(self.pairs)}"
        self.sources[src.id] = src
        self.pairs.append(Pair(pid, src, v.text, label, family, disguise, level, v.changed,
                               list(v.copied_spans), variant_id))

    def positives(self, src: Doc, donors: list[str], hosts: list[Doc]) -> None:
        """Every disguise at every level for one source."""
        seed, text = self.cfg.seed, src.text
        for lv in EDIT_LEVELS:
            self.add(src, T.add_text(text, lv / 100, donors, rng_for(seed, src.id, "add", lv)),
                     1, "edit", "add", lv)
            self.add(src, T.delete_text(text, lv / 100, rng_for(seed, src.id, "delete", lv)),
                     1, "edit", "delete", lv)
        self.add(src, T.reorder_sentences(text, rng_for(seed, src.id, "rs")), 1, "reorder",
                 "reorder-sentences", 0)
        self.add(src, T.reorder_paragraphs(text, rng_for(seed, src.id, "rp")), 1, "reorder",
                 "reorder-paragraphs", 0)
        subst = {"homophone": self.tables.same_reading, "near-homophone": self.tables.near_reading,
                 "lookalike": T.lookalike_table()}
        for name, table in subst.items():
            for lv in SUBST_LEVELS:
                self.add(src, T.substitute_chars(text, lv / 100, table, rng_for(seed, src.id, name, lv)),
                         1, "substitution", name, lv)
        script: dict[str, Callable[[], T.Variant]] = {
            "traditional": lambda: T.to_traditional(text),
            "traditional-big5": lambda: T.traditional_big5(text),
            "fullwidth": lambda: T.to_fullwidth(text),
            "halfwidth-punct": lambda: T.to_halfwidth_punct(text),
            "gbk": lambda: T.encoding_round_trip(text, "gbk"),
            "gb2312": lambda: T.encoding_round_trip(text, "gb2312"),
        }
        for name in SCRIPT_DISGUISES:
            self.add(src, script[name](), 1, "script", name, 0)
        for kind in BOILERPLATE_KINDS:
            self.add(src, T.add_boilerplate(text, kind, rng_for(seed, src.id, kind), src.title),
                     1, "boilerplate", kind, 0)
        for lv in PARTIAL_LEVELS:
            r = rng_for(seed, src.id, "partial", lv)
            host = r.choice([h for h in hosts if h.group != src.group])
            self.add(src, T.partial_copy(text, lv / 100, host.text, r), 1, "partial", "partial", lv)
        if src.kind == "fiction":
            self.joined(src)

    def joined(self, src: Doc) -> None:
        """Several chapters on one page (positives) and the neighbours without the source (hard negatives)."""
        for n in (2, 3):
            r = rng_for(self.cfg.seed, src.id, "join", n)
            first = src.order - r.randrange(n)
            chs = [self.chapters.get((src.group, first + i)) for i in range(n)]
            if all(chs):
                self.add(src, T.join_chapters([(c.title, c.text) for c in chs]), 1, "partial",
                         f"joined-{n}", 0)
        nxt = [self.chapters.get((src.group, src.order + i)) for i in (1, 2)]
        if all(nxt):
            self.add(src, T.join_chapters([(c.title, c.text) for c in nxt]), 0, "negative",
                     "hard-joined-neighbours", 0)

    def negatives(self, src: Doc, pool: list[Doc], rng: random.Random) -> None:
        """Easy (unrelated) and hard (same book / same news category, close in the file) negatives."""
        others = [d for d in pool if d.group != src.group]
        for d in rng.sample(others, 4):
            self.add(src, d.text, 0, "negative", "easy", 0, d.id)
        if src.kind == "fiction":
            for step in (-2, -1, 1, 2):
                d = self.chapters.get((src.group, src.order + step))
                if d is not None and d.text.strip():
                    self.add(src, d.text, 0, "negative", "hard-same-book", 0, d.id)
            return
        near = [d for d in self.news if d.group == src.group and d.id != src.id
                and 0 < abs(d.order - src.order) <= 20 and len(d.text) >= 200]
        near.sort(key=lambda d: (abs(d.order - src.order), d.order))
        taken = 0
        for d in near:
            if taken == 4:
                break
            if shingle_containment(src.text, d.text) > 0.2 or d.text.strip() == src.text.strip():
                self.screened_out += 1   # probably a reprint of the same story: not a clean negative
                continue
            self.add(src, d.text, 0, "negative", "hard-same-category", 0, d.id)
            taken += 1


def same_event_pairs(news: Sequence[Doc], n: int, rng: random.Random, exclude: set[str]
                     ) -> list[tuple[Doc, Doc]]:
    """News on the same event written independently: titles share >= 30% of their character bigrams
    but the texts share < 5% of their 8-grams (so neither copies the other)."""
    from .natural import title_pairs
    docs = [d for d in news if len(d.text) >= 300 and d.id not in exclude]
    cands = sorted(title_pairs(docs, threshold=0.3))
    rng.shuffle(cands)
    out: list[tuple[Doc, Doc]] = []
    used: set[str] = set()
    for i, j in cands:
        a, b = docs[i], docs[j]
        if len(out) >= n:
            break
        if a.id in used or b.id in used or shingle_containment(a.text, b.text) >= 0.05:
            continue
        used.update((a.id, b.id))
        out.append((a, b))
    return out


def build(cfg: Config, data: Path) -> LabelledSet:
    """Make the whole labelled set from the shared corpora in `data`."""
    news, fiction = load_news(data), load_fiction(data)
    rng = random.Random(cfg.seed)
    src_news = _pick(news, cfg.n_news, cfg.news_len, rng)
    src_fic = _pick(fiction, cfg.n_fiction, cfg.fiction_len, rng)
    used = {d.id for d in src_news + src_fic}
    donor_docs = rng.sample([d for d in news + fiction if d.id not in used and len(d.text) > 200],
                            cfg.n_donors)
    tables = T.build_reading_tables(d.text for d in donor_docs + src_news + src_fic)
    b = _Builder(cfg, news, fiction, tables)
    donors = {k: [d.text for d in donor_docs if d.kind == k] or [d.text for d in donor_docs]
              for k in ("news", "fiction")}
    hosts = {k: [d for d in donor_docs if d.kind == k] or donor_docs for k in ("news", "fiction")}
    for src in src_news + src_fic:
        b.positives(src, donors[src.kind], hosts[src.kind])
        b.negatives(src, news if src.kind == "news" else fiction, rng_for(cfg.seed, src.id, "neg"))
    for a, other in same_event_pairs(news, 2 * cfg.n_news, rng_for(cfg.seed, "same-event"), used):
        b.add(a, other.text, 0, "negative", "hard-same-event", 0, other.id)
    return LabelledSet(b.pairs, b.sources, b.screened_out)


def digest(ls: LabelledSet) -> str:
    """A short fingerprint of the whole labelled set, to tell at a glance that two runs used the same pairs."""
    h = hashlib.blake2b(digest_size=8)
    for p in ls.pairs:
        h.update(json.dumps([p.pair_id, p.label, p.disguise, p.level, p.variant], ensure_ascii=False).encode())
    return h.hexdigest()


def iter_cells(pairs: Sequence[Pair]) -> Iterator[tuple[str, str, float]]:
    """(family, disguise, level) cells in a stable order."""
    seen: dict[tuple[str, str, float], None] = {}
    for p in pairs:
        seen.setdefault((p.family, p.disguise, p.level), None)
    return iter(seen)
