"""Run every method on the labelled pairs and turn decisions into recall, false alarms, precision, F1."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .methods import IndexMethod, PairMethod, Unavailable
from .pairs import WHOLE_FAMILIES, LabelledSet, Pair

HARD_NEGATIVES = ("hard-same-book", "hard-same-category", "hard-same-event", "hard-joined-neighbours")


@dataclass
class Point:
    """One operating point of one method: a decision (and score) for every pair, plus its cost."""

    name: str
    method: str
    group: str
    threshold: str
    decisions: np.ndarray
    scores: np.ndarray | None = None
    add_ms: float = 0.0          # per source put into a library (index methods)
    doc_ms: float = 0.0          # per document checked: fingerprinting (+ query for index methods)
    coverage: float | None = None  # share of truly copied characters inside the reported spans
    note: str = ""
    cut: float | None = None       # numeric threshold of pairwise methods
    pair_coverage: np.ndarray | None = None  # per pair (nan where not measured)


@dataclass
class Sweep:
    """A pairwise method scored once and decided at many thresholds."""

    method: PairMethod
    scores: np.ndarray
    doc_ms: float


@dataclass
class Run:
    """Everything the report needs."""

    pairs: list[Pair]
    points: list[Point] = field(default_factory=list)
    sweeps: list[Sweep] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ masks and metrics

def masks(pairs: Sequence[Pair]) -> dict[str, np.ndarray]:
    """Boolean masks over the pairs for the groups the metrics use."""
    fam = np.array([p.family for p in pairs])
    dis = np.array([p.disguise for p in pairs])
    lvl = np.array([p.level for p in pairs], dtype=float)
    lab = np.array([p.label for p in pairs], dtype=bool)
    whole = lab & np.isin(fam, WHOLE_FAMILIES)
    partial = lab & (((dis == "partial") & (lvl >= 30)) | np.char.startswith(dis.astype(str), "joined"))
    return {
        "pos": lab, "whole": whole, "partial": partial, "copy": whole | partial,
        "easy": dis == "easy", "hard": np.isin(dis, HARD_NEGATIVES), "neg": ~lab,
    }


def rate(decisions: np.ndarray, mask: np.ndarray) -> float:
    """Share of flagged pairs inside a mask (nan when the mask is empty)."""
    n = int(mask.sum())
    return float(decisions[mask].sum()) / n if n else float("nan")


def balanced_precision(recall: float, fpr: float) -> float:
    """Precision when copies and non-copies are equally many: R / (R + FPR)."""
    if recall + fpr == 0:
        return float("nan")
    return recall / (recall + fpr)


def f1(p: float, r: float) -> float:
    """Harmonic mean (nan-safe)."""
    if not (p + r) or np.isnan(p) or np.isnan(r):
        return float("nan")
    return 2 * p * r / (p + r)


def summary(decisions: np.ndarray, m: dict[str, np.ndarray]) -> dict[str, float]:
    """The headline numbers for one operating point."""
    r_whole = rate(decisions, m["whole"])
    out = {"recall_whole": r_whole, "recall_partial": rate(decisions, m["partial"]),
           "recall_copy": rate(decisions, m["copy"]),
           "fpr_easy": rate(decisions, m["easy"]), "fpr_hard": rate(decisions, m["hard"]),
           "fp_easy": int(decisions[m["easy"]].sum()), "n_easy": int(m["easy"].sum()),
           "fp_hard": int(decisions[m["hard"]].sum()), "n_hard": int(m["hard"].sum())}
    for kind in ("easy", "hard"):
        p = balanced_precision(r_whole, out[f"fpr_{kind}"])
        out[f"precision_{kind}"] = p
        out[f"f1_{kind}"] = f1(p, r_whole)
    p_all = balanced_precision(r_whole, rate(decisions, m["neg"]))
    out["precision_all"], out["f1_all"] = p_all, f1(p_all, r_whole)
    return out


def cell_recall(decisions: np.ndarray, pairs: Sequence[Pair], disguise: str, level: float) -> float:
    """Recall in one (disguise, level) cell."""
    sel = np.array([p.label == 1 and p.disguise == disguise and p.level == level for p in pairs])
    return rate(decisions, sel)


# ------------------------------------------------------------------ running the methods

def _timed(fn: Callable, *args):
    """Result and CPU seconds of the call (CPU time: other load on a shared machine does not inflate it)."""
    t0 = time.process_time()
    out = fn(*args)
    return out, time.process_time() - t0


def run_pair_method(method: PairMethod, ls: LabelledSet) -> Sweep:
    """Score every pair; sources are fingerprinted once, each variant once (then dropped)."""
    cache: dict[str, object] = {}
    spent, docs = 0.0, 0
    scores = np.empty(len(ls.pairs))
    for i, p in enumerate(ls.pairs):
        sig_s = cache.get(p.source.id)
        if sig_s is None:
            sig_s, dt = _timed(method.prepare, p.source.text)
            cache[p.source.id] = sig_s
            spent, docs = spent + dt, docs + 1
        sig_v, dt = _timed(method.prepare, p.variant)
        spent, docs = spent + dt, docs + 1
        scores[i] = method.score(sig_s, sig_v)
    return Sweep(method, scores, 1000 * spent / max(1, docs))


def span_coverage(truth: Sequence[tuple[int, int]], found: Sequence[tuple[int, int]]) -> float:
    """Share of the truly copied characters that lie inside the found spans."""
    total = sum(e - s for s, e in truth)
    if not total:
        return float("nan")
    hit = 0
    for s, e in truth:
        marks = np.zeros(e - s, dtype=bool)
        for fs, fe in found:
            lo, hi = max(s, fs), min(e, fe)
            if hi > lo:
                marks[lo - s:hi - s] = True
        hit += int(marks.sum())
    return hit / total


def run_index_method(method: IndexMethod, ls: LabelledSet) -> Point:
    """Build the library from every source, then query every variant."""
    t_add, n_add = 0.0, 0
    if not method.per_pair:
        for doc_id, doc in ls.sources.items():
            _, dt = _timed(method.add, doc_id, doc.text)
            t_add, n_add = t_add + dt, n_add + 1
    decisions = np.zeros(len(ls.pairs), dtype=bool)
    scores = np.zeros(len(ls.pairs))
    covs = np.full(len(ls.pairs), np.nan)
    t_q = 0.0
    current = None
    for i, p in enumerate(ls.pairs):
        if method.per_pair and p.source.id != current:
            method.reset()
            _, dt = _timed(method.add, p.source.id, p.source.text)
            t_add, n_add, current = t_add + dt, n_add + 1, p.source.id
        found, dt = _timed(method.query, p.variant)
        t_q += dt
        if p.source.id in found:
            decisions[i] = True
            scores[i] = found[p.source.id]
        spans = getattr(method, "last_spans", None)
        if p.label and p.copied_spans and spans is not None:
            own = spans.get(p.source.id, [])
            truth = p.copied_spans if p.disguise == "partial" else _own_chapter(p)
            covs[i] = span_coverage(truth, own)
    measured = not np.isnan(covs).all()
    return Point(method.name, method.name, method.group, "own decision", decisions, scores,
                 1000 * t_add / max(1, n_add), 1000 * t_q / max(1, len(ls.pairs)),
                 float(np.nanmean(covs)) if measured else None, method.note,
                 pair_coverage=covs if measured else None)


def _own_chapter(p: Pair) -> list[tuple[int, int]]:
    """For joined chapters, the span of the source chapter itself."""
    for s, e in p.copied_spans:
        if p.variant[s:e] == p.source.text:
            return [(s, e)]
    return []


def best_threshold(sweep: Sweep, m: dict[str, np.ndarray]) -> float:
    """The threshold with the best F1 (whole copies vs all negatives); ties go to the stricter one."""
    best, best_f1 = sweep.method.threshold, -1.0
    for t in sorted(sweep.method.sweep, reverse=True):
        s = summary(sweep.scores >= t, m)
        f = s["f1_all"]
        if not np.isnan(f) and f > best_f1 + 1e-12:
            best, best_f1 = t, f
    return best


def points_from_sweep(sweep: Sweep, m: dict[str, np.ndarray], with_best: bool) -> list[Point]:
    """The method at its own threshold, and at its best one if asked."""
    meth = sweep.method
    pts = [Point(meth.name, meth.name, meth.group, meth.label(meth.threshold),
                 sweep.scores >= meth.threshold, sweep.scores, 0.0, sweep.doc_ms, None, meth.note,
                 meth.threshold)]
    if with_best and meth.sweep:
        t = best_threshold(sweep, m)
        base = meth.name.split(" k=")[0].split(" >")[0]
        pts.append(Point(f"{base} best ({meth.label(t)})", meth.name, meth.group, meth.label(t),
                         sweep.scores >= t, sweep.scores, 0.0, sweep.doc_ms, None, meth.note, t))
    return pts


def run_all(ls: LabelledSet, methods: Sequence[PairMethod | IndexMethod | Unavailable],
            best_for: Sequence[str] = (), log: Callable[[str], None] = print) -> Run:
    """Run every method; one method failing is recorded, the others still run."""
    run = Run(ls.pairs)
    m = masks(ls.pairs)
    for meth in methods:
        if isinstance(meth, Unavailable):
            run.unavailable.append(meth)
            continue
        t0 = time.perf_counter()
        try:
            if isinstance(meth, PairMethod):
                sw = run_pair_method(meth, ls)
                run.sweeps.append(sw)
                run.points.extend(points_from_sweep(sw, m, meth.name in best_for))
            else:
                run.points.append(run_index_method(meth, ls))
        except Exception as exc:
            run.errors.append(f"{meth.name}: {type(exc).__name__}: {exc}")
            log(f"  {meth.name}: FAILED {type(exc).__name__}: {exc}")
            continue
        log(f"  {meth.name}: {time.perf_counter() - t0:.1f} s")
    return run
