"""The news file's own duplicates (the same article filed twice, reprints under new headlines).

Nothing labels them, so they are not scored: three simple detectors propose candidate pairs (exact
text, similar titles, shared long passages) and the report says how many of those each method flags.
"""
from __future__ import annotations

import re
import zlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from .corpus import Doc
from .methods import IndexMethod, PairMethod

_NON_CONTENT = re.compile(r"[\W_]+", re.UNICODE)


@dataclass
class Natural:
    """Candidate pairs per detector and how many of them each method flags."""

    n_docs: int
    skipped: int                            # articles with < 50 characters of text (photo galleries)
    detectors: dict[str, set[tuple[int, int]]]
    flagged: dict[str, dict[str, int]]      # method -> detector -> pairs flagged
    stream: dict[str, int] | None = None    # the product's dedup over the whole file, in file order


def _pairs_of(groups: dict[object, list[int]], cap: int = 50) -> set[tuple[int, int]]:
    """All pairs inside each group (groups bigger than `cap` are too common to mean anything)."""
    out: set[tuple[int, int]] = set()
    for members in groups.values():
        if 2 <= len(members) <= cap:
            ms = sorted(set(members))
            out.update((a, b) for i, a in enumerate(ms) for b in ms[i + 1:])
    return out


def exact_pairs(docs: Sequence[Doc]) -> set[tuple[int, int]]:
    """Same text once whitespace and punctuation are removed."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(docs):
        key = _NON_CONTENT.sub("", d.text)
        if len(key) >= 50:
            groups[key].append(i)
    return _pairs_of(groups)


def _bigrams(s: str) -> set[str]:
    s = _NON_CONTENT.sub("", s)
    return {s[i:i + 2] for i in range(len(s) - 1)}


def title_pairs(docs: Sequence[Doc], threshold: float = 0.6) -> set[tuple[int, int]]:
    """Titles whose character-bigram Jaccard is at least `threshold`."""
    grams = [_bigrams(d.title) for d in docs]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(grams):
        for b in g:
            postings[b].append(i)
    out: set[tuple[int, int]] = set()
    for i, g in enumerate(grams):
        if len(g) < 4:
            continue
        cands = {j for b in g if len(postings[b]) <= 300 for j in postings[b] if j > i}
        for j in cands:
            inter = len(g & grams[j])
            if inter / len(g | grams[j]) >= threshold:
                out.add((i, j))
    return out


def passage_pairs(docs: Sequence[Doc], width: int = 30, sample: int = 8, min_shared: int = 3,
                  min_share: float = 0.3) -> set[tuple[int, int]]:
    """Documents sharing >= `min_shared` sampled 30-character passages (crc32-selected anchors) that make
    up >= `min_share` of the smaller document's anchors: a reprint, not a shared quotation."""
    postings: dict[int, list[int]] = defaultdict(list)
    n_anchors: list[int] = []
    for i, d in enumerate(docs):
        t = _NON_CONTENT.sub("", d.text)
        anchors = {h for k in range(len(t) - width + 1)
                   if (h := zlib.crc32(t[k:k + width].encode("utf-8"))) % sample == 0}
        n_anchors.append(len(anchors))
        for h in anchors:
            postings[h].append(i)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in postings.values():
        if 2 <= len(members) <= 20:
            for a_i, a in enumerate(members):
                for b in members[a_i + 1:]:
                    shared[(a, b)] += 1
    return {(a, b) for (a, b), n in shared.items()
            if n >= min_shared and n >= min_share * min(n_anchors[a], n_anchors[b])}


def detect(docs: Sequence[Doc]) -> dict[str, set[tuple[int, int]]]:
    """Candidate duplicate pairs per detector."""
    return {"exact text": exact_pairs(docs), "similar title": title_pairs(docs),
            "shared passages": passage_pairs(docs)}


def flag_counts(docs: Sequence[Doc], detectors: dict[str, set[tuple[int, int]]],
                pair_methods: Sequence[tuple[str, PairMethod, float]],
                index_methods: Sequence[tuple[str, IndexMethod]]) -> dict[str, dict[str, int]]:
    """How many candidate pairs of each detector every method flags as copies."""
    union = sorted(set().union(*detectors.values()))
    flagged: dict[str, set[tuple[int, int]]] = {}
    for name, meth, cut in pair_methods:
        sigs: dict[int, object] = {}
        def sig(i: int):
            if i not in sigs:
                sigs[i] = meth.prepare(docs[i].text)
            return sigs[i]
        flagged[name] = {(a, b) for a, b in union if meth.score(sig(a), sig(b)) >= cut}
    involved = sorted({i for pair in union for i in pair})
    for name, meth in index_methods:
        if meth.per_pair:
            hits = set()
            for a, b in union:
                meth.reset()
                meth.add(str(a), docs[a].text)
                if str(a) in meth.query(docs[b].text):
                    hits.add((a, b))
        else:
            for i in involved:
                meth.add(str(i), docs[i].text)
            results = {b: meth.query(docs[b].text) for b in {b for _, b in union}}
            hits = {(a, b) for a, b in union if str(a) in results[b]}
        flagged[name] = hits
    return {name: {det: len(pairs & hits) for det, pairs in detectors.items()}
            for name, hits in flagged.items()}


def stream_counts(docs: Sequence[Doc]) -> dict[str, int]:
    """The product's crawl-time dedup over the whole file in order: exact hash, then SinglePass at the store's k."""
    from .methods import _fp_api, product_k
    try:
        from fingerprint import SinglePass
    except ImportError:
        from fingerprint.cluster import SinglePass
    fingerprint_text, _ = _fp_api()
    k = product_k()
    sp = SinglePass(k)
    seen: set[str] = set()
    exact = near = 0
    for i, d in enumerate(docs):
        fp = fingerprint_text(d.text)
        if fp.content_hash in seen:
            exact += 1
            continue
        seen.add(fp.content_hash)
        if sp.add(i, fp.simhash).duplicate_of is not None:
            near += 1
    out = {"documents": len(docs), "exact duplicates": exact, f"near duplicates (SimHash k={k})": near,
           "kept": len(docs) - exact - near}
    try:
        from fingerprint.neardup import DedupDoc, DedupEngine
    except ImportError:
        return out
    engine = DedupEngine()
    verdicts: dict[str, int] = {}
    for i, d in enumerate(docs):
        v = engine.decide(DedupDoc.of(str(i), d.text))
        if v.kind != "new":
            verdicts[v.method or v.kind] = verdicts.get(v.method or v.kind, 0) + 1
    out.update({f"DedupEngine drops by {m}": n for m, n in sorted(verdicts.items())})
    out["DedupEngine keeps"] = len(docs) - sum(verdicts.values())
    return out


def markdown(nat: Natural) -> str:
    """The report section."""
    dets = list(nat.detectors)
    union = set().union(*nat.detectors.values())
    lines = [f"Candidate pairs among {nat.n_docs} news articles ({nat.skipped} more with under 50 characters "
             "of text were left out: mostly photo galleries whose whole text is one slogan): "
             + ", ".join(f"{d}: {len(p)}" for d, p in nat.detectors.items())
             + f" (union {len(union)}). They are **unlabelled**: the detectors are heuristics (same text after "
             "removing punctuation; title character-bigram Jaccard >= 0.6; >= 3 shared sampled 30-character "
             "passages making up >= 30% of the shorter article), so the table shows agreement, not recall. Similar titles include distinct "
             "stories of a series (\"...: day 2\"), so not every candidate is a copy.",
             "",
             "| method | " + " | ".join(f"{d} (of {len(nat.detectors[d])})" for d in dets) + " |",
             "|---|" + "---|" * len(dets)]
    for name, counts in nat.flagged.items():
        lines.append(f"| {name} | " + " | ".join(str(counts[d]) for d in dets) + " |")
    if nat.stream:
        lines += ["", "The product's crawl-time dedup run over the same articles in file order (exact hash, "
                  "then SinglePass on SimHash; then fingerprint.neardup.DedupEngine.decide, the crawl's engine): "
                  + ", ".join(f"{k}: {v}" for k, v in nat.stream.items()) + "."]
    return "\n".join(lines)
