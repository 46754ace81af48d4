"""The markdown report, the PNG plots (the paper's Figure 2 and friends) and the stdout summary."""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from .evaluate import Point, Run, cell_recall, masks, summary
from .pairs import (BOILERPLATE_KINDS, EDIT_LEVELS, PARTIAL_LEVELS, SCRIPT_DISGUISES, SUBST_LEVELS,
                    LabelledSet)

SINGLE_FAMILIES = {
    "reorder": ("reorder-sentences", "reorder-paragraphs"),
    "script": SCRIPT_DISGUISES,
    "boilerplate": BOILERPLATE_KINDS,
    "joined": ("joined-2", "joined-3"),
}
LEVEL_FAMILIES = {
    "edits": (("add", EDIT_LEVELS), ("delete", EDIT_LEVELS)),
    "substitution": (("homophone", SUBST_LEVELS), ("near-homophone", SUBST_LEVELS),
                     ("lookalike", SUBST_LEVELS)),
    "partial": (("partial", PARTIAL_LEVELS),),
}
STYLE = {"product": ("-", 2.6), "seed": ("--", 2.0), "baseline": (":", 1.6), "peer": ("-.", 1.4)}


def pct(x: float | None, digits: int = 0) -> str:
    """A rate as a percentage; '-' when undefined."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{100 * x:.{digits}f}"


def headline(run: Run, p: Point) -> dict[str, float]:
    """The numbers the README table shows for one operating point."""
    pairs, d = run.pairs, p.decisions
    edits = lambda lv: np.nanmean([cell_recall(d, pairs, "add", lv), cell_recall(d, pairs, "delete", lv)])
    out = summary(d, masks(pairs))
    out.update({
        "edit5": edits(5), "edit10": edits(10),
        "reorder": np.nanmean([cell_recall(d, pairs, "reorder-sentences", 0),
                               cell_recall(d, pairs, "reorder-paragraphs", 0)]),
        "homo3": cell_recall(d, pairs, "homophone", 3), "homo5": cell_recall(d, pairs, "homophone", 5),
        "trad": cell_recall(d, pairs, "traditional", 0),
    })
    return out


def summary_table(run: Run) -> str:
    """The compact markdown table for the README (and stdout)."""
    head = ("| method | edits 5% | edits 10% | reorder | homophones 3% | homophones 5% | traditional "
            "| partial >=30% | whole copies | FP easy | FP hard | precision (hard) | F1 (all) | ms/doc |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for p in run.points:
        h = headline(run, p)
        lines.append(
            f"| {p.name} | {pct(h['edit5'])} | {pct(h['edit10'])} | {pct(h['reorder'])} | {pct(h['homo3'])} "
            f"| {pct(h['homo5'])} | {pct(h['trad'])} | {pct(h['recall_partial'])} | {pct(h['recall_whole'])} "
            f"| {h['fp_easy']}/{h['n_easy']} | {h['fp_hard']}/{h['n_hard']} | {pct(h['precision_hard'], 1)} "
            f"| {pct(h['f1_all'], 1)} | {p.doc_ms:.2f} |")
    return "\n".join(lines)


def level_table(run: Run, disguise: str, levels: Sequence[float]) -> str:
    """Recall (%) per method (rows) and level (columns) for one disguise."""
    lines = ["| method | " + " | ".join(f"{lv:g}%" for lv in levels) + " |",
             "|---|" + "---|" * len(levels)]
    for p in run.points:
        cells = [pct(cell_recall(p.decisions, run.pairs, disguise, lv)) for lv in levels]
        lines.append(f"| {p.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def single_table(run: Run, disguises: Sequence[str]) -> str:
    """Recall (%) per method (rows) and single-level disguise (columns)."""
    present = [d for d in disguises if any(p.disguise == d for p in run.pairs)]
    lines = ["| method | " + " | ".join(present) + " |", "|---|" + "---|" * len(present)]
    for p in run.points:
        lines.append(f"| {p.name} | " + " | ".join(pct(cell_recall(p.decisions, run.pairs, d, 0))
                                                    for d in present) + " |")
    return "\n".join(lines)


def negatives_table(run: Run) -> str:
    """False alarms per kind of negative, and the derived precision/F1."""
    kinds = sorted({p.disguise for p in run.pairs if p.label == 0})
    n = Counter(p.disguise for p in run.pairs if p.label == 0)
    lines = ["| method | " + " | ".join(f"{k} (n={n[k]})" for k in kinds)
             + " | precision easy | F1 easy | precision hard | F1 hard |",
             "|---|" + "---|" * (len(kinds) + 4)]
    for p in run.points:
        s = summary(p.decisions, masks(run.pairs))
        fps = [str(int(sum(d for d, q in zip(p.decisions, run.pairs) if q.disguise == k))) for k in kinds]
        lines.append(f"| {p.name} | " + " | ".join(fps) + f" | {pct(s['precision_easy'], 1)} "
                     f"| {pct(s['f1_easy'], 1)} | {pct(s['precision_hard'], 1)} | {pct(s['f1_hard'], 1)} |")
    return "\n".join(lines)


def sweep_table(run: Run) -> str:
    """Every pairwise method across its thresholds: whole-copy recall and false alarms."""
    out = []
    m = masks(run.pairs)
    for sw in run.sweeps:
        if not sw.method.sweep:
            continue
        out.append(f"**{sw.method.name}**\n\n| threshold | whole copies | partial >=30% | FP easy | FP hard | F1 (all) |\n|---|---|---|---|---|---|")
        for t in sorted(sw.method.sweep, reverse=True):
            s = summary(sw.scores >= t, m)
            out.append(f"| {sw.method.label(t)} | {pct(s['recall_whole'], 1)} | {pct(s['recall_partial'], 1)} "
                       f"| {s['fp_easy']}/{s['n_easy']} | {s['fp_hard']}/{s['n_hard']} | {pct(s['f1_all'], 1)} |")
        out.append("")
    return "\n".join(out)


def coverage_table(run: Run, points: Sequence[Point]) -> str:
    """Passage coverage per partial level and for joined chapters."""
    cells = [("partial", lv) for lv in PARTIAL_LEVELS] + [("joined-2", 0), ("joined-3", 0)]
    head = [f"{lv}%" if d == "partial" else d for d, lv in cells]
    lines = ["| method | all | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(cells)]
    for p in points:
        vals = []
        for d, lv in cells:
            sel = np.array([q.disguise == d and q.level == lv for q in run.pairs])
            c = p.pair_coverage[sel] if p.pair_coverage is not None else np.array([])
            vals.append(pct(float(np.nanmean(c)), 1) if c.size and not np.isnan(c).all() else "-")
        lines.append(f"| {p.name} | {pct(p.coverage, 1)} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def timing_table(run: Run) -> str:
    """Cost per document."""
    lines = ["| method | group | CPU ms per document checked | CPU ms per source added | note |",
             "|---|---|---|---|---|"]
    seen = set()
    for p in run.points:
        if p.method in seen:
            continue
        seen.add(p.method)
        add = f"{p.add_ms:.2f}" if p.add_ms else "-"
        lines.append(f"| {p.method} | {p.group} | {p.doc_ms:.2f} | {add} | {p.note} |")
    return "\n".join(lines)


def _find(run: Run, prefix: str) -> Point | None:
    return next((p for p in run.points if p.name.startswith(prefix)), None)


def _mean_cells(run: Run, p: Point, cells: Sequence[tuple[str, float]]) -> float:
    """Recall pooled over several (disguise, level) cells."""
    sel = np.array([q.label == 1 and (q.disguise, q.level) in set(cells) for q in run.pairs])
    return float(p.decisions[sel].mean()) if sel.any() else float("nan")


def _passage_recall(run: Run, p: Point, min_chars: int) -> float:
    """Recall on partial copies whose copied passage has at least `min_chars` characters."""
    sel = np.array([q.label == 1 and q.disguise == "partial"
                    and sum(e - s for s, e in q.copied_spans) >= min_chars for q in run.pairs])
    return float(p.decisions[sel].mean()) if sel.any() else float("nan")


def _scope_coverage(p: Point, mask: np.ndarray) -> float:
    """Mean passage coverage over the copies in a mask."""
    if p.pair_coverage is None:
        return float("nan")
    c = p.pair_coverage[mask]
    return float(np.nanmean(c)) if c.size and not np.isnan(c).all() else float("nan")


def goals(run: Run) -> list[tuple[str, str, float, float, str]]:
    """(who, goal, measured, target, cmp) for the issues' goals; measured values are fractions."""
    m = masks(run.pairs)
    small = [(d, lv) for d in ("add", "delete") for lv in EDIT_LEVELS if lv <= 5]
    ten = [("add", 10), ("delete", 10)]
    reorder = [("reorder-sentences", 0), ("reorder-paragraphs", 0)]
    out: list[tuple[str, str, float, float, str]] = []
    seed = _find(run, "SimHash k=3")
    if seed:
        out += [("SimHash k=3 (paper's floor)", "recall at 5% edits", _mean_cells(run, seed, [("add", 5), ("delete", 5)]), 0.70, ">="),
                ("SimHash k=3 (paper's floor)", "recall on sentence reordering", _mean_cells(run, seed, reorder[:1]), 0.861, ">=")]
    dedup = _find(run, "product dedup")
    if dedup:
        s = summary(dedup.decisions, m)
        out += [("product dedup", "recall at <= 5% edits", _mean_cells(run, dedup, small), 0.99, ">="),
                ("product dedup", "recall on reordering", _mean_cells(run, dedup, reorder), 0.99, ">="),
                ("product dedup", "recall at 10% edits", _mean_cells(run, dedup, ten), 0.95, ">="),
                ("product dedup", "precision, all negatives incl. hard", s["precision_all"], 0.995, ">="),
                ("product dedup", "precision, hard negatives", s["precision_hard"], 0.995, ">=")]
    on_redis = _find(run, "product dedup (Redis)")
    if dedup and on_redis:
        same = float((dedup.decisions == on_redis.decisions).mean())
        out.append(("product dedup", "share of pairs where the Redis index decides as the memory one", same, 1.0, ">="))
    mat = _find(run, "product matcher")
    if mat:
        s = summary(mat.decisions, m)
        whole = small + ten + reorder + [("homophone", lv) for lv in SUBST_LEVELS if lv <= 5] + [("traditional", 0)]
        out += [("product matcher", "recall: <= 10% edits, reordering, <= 5% homophones, traditional",
                 _mean_cells(run, mat, whole), 0.95, ">="),
                ("product matcher", "recall: partial copies >= 30% and joined chapters", s["recall_partial"], 0.90, ">="),
                ("product matcher", "recall: partial copies of a passage >= 300 characters (any %)",
                 _passage_recall(run, mat, 300), 0.90, ">="),
                ("product matcher", "precision, same-genre (hard) negatives", s["precision_hard"], 0.99, ">="),
                ("product matcher", "copied characters inside matched passages (partial >= 30%, joined)",
                 _scope_coverage(mat, m["partial"]), 0.90, ">=")]
    return out


def goals_table(run: Run) -> str:
    """The goals of issues 3 and 6 against this run."""
    lines = ["| who | goal | measured | target | met |", "|---|---|---|---|---|"]
    for who, goal, val, target, _ in goals(run):
        met = "-" if math.isnan(val) else ("yes" if val >= target else "**no**")
        lines.append(f"| {who} | {goal} | {pct(val, 1)} | {pct(target, 1)} | {met} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ plots

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _style(run: Run, p: Point) -> dict:
    """One colour per method (dark at its own threshold, light at its best one), line style per group."""
    ls, lw = STYLE.get(p.group, ("-", 1.5))
    methods = list(dict.fromkeys(q.method for q in run.points))
    i = methods.index(p.method)
    light = p.name != p.method
    colour = _plt().get_cmap("tab20" if i < 10 else "tab20b")((2 * (i % 10) + light) % 20)
    return {"color": colour, "linestyle": ls, "linewidth": lw, "marker": "o", "markersize": 3}


def plot_levels(run: Run, name: str, panels, out: Path) -> Path:
    """Recall against % changed, one line per method (the paper's Figure 2)."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels) + 3.5, 5), squeeze=False)
    for ax, (disguise, levels) in zip(axes[0], panels):
        for i, p in enumerate(run.points):
            ys = [cell_recall(p.decisions, run.pairs, disguise, lv) for lv in levels]
            ax.plot(levels, ys, label=p.name, **_style(run, p))
        ax.set_title(f"{disguise}")
        ax.set_xlabel("% copied" if disguise == "partial" else "% of the text changed")
        ax.set_ylabel("recall")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(f"Recall per method: {name}")
    fig.tight_layout()
    path = out / f"recall_{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_single(run: Run, name: str, disguises: Sequence[str], out: Path) -> Path | None:
    """Grouped bars: recall per method for disguises without a level."""
    present = [d for d in disguises if any(p.disguise == d for p in run.pairs)]
    if not present:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(8, 2.2 * len(present)), 5))
    width = 0.8 / max(1, len(run.points))
    x = np.arange(len(present))
    for i, p in enumerate(run.points):
        ys = [cell_recall(p.decisions, run.pairs, d, 0) for d in present]
        st = _style(run, p)
        ax.bar(x + i * width - 0.4 + width / 2, ys, width, label=p.name, color=st["color"])
    ax.set_xticks(x, present)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("recall")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(f"Recall per method: {name}")
    fig.tight_layout()
    path = out / f"recall_{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sweeps(run: Run, out: Path) -> Path | None:
    """Whole-copy recall and hard-negative false alarms against the threshold, per pairwise method."""
    sweeps = [s for s in run.sweeps if s.method.sweep]
    if not sweeps:
        return None
    plt = _plt()
    m = masks(run.pairs)
    cols = min(4, len(sweeps))
    rows = -(-len(sweeps) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(sweeps):]:
        ax.axis("off")
    for ax, sw in zip(axes.flat, sweeps):
        ts = sorted(sw.method.sweep, reverse=True)
        ss = [summary(sw.scores >= t, m) for t in ts]
        xs = [abs(t) for t in ts]
        ax.plot(xs, [s["recall_whole"] for s in ss], label="recall (whole copies)")
        ax.plot(xs, [s["recall_partial"] for s in ss], label="recall (partial >=30%)")
        ax.plot(xs, [s["fpr_hard"] for s in ss], label="false alarms (hard negatives)")
        ax.plot(xs, [s["fpr_easy"] for s in ss], label="false alarms (easy negatives)")
        ax.set_title(sw.method.name, fontsize=9)
        ax.set_xlabel("Hamming k" if sw.method.label(ts[0]).startswith("Hamming") else "threshold")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path = out / "threshold_sweeps.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_plots(run: Run, out: Path) -> list[Path]:
    """Every PNG; returns their paths."""
    paths = [plot_levels(run, name, panels, out) for name, panels in LEVEL_FAMILIES.items()]
    paths += [p for name, ds in SINGLE_FAMILIES.items() if (p := plot_single(run, name, ds, out))]
    if (p := plot_sweeps(run, out)):
        paths.append(p)
    return paths


# ------------------------------------------------------------------ markdown

def markdown(run: Run, ls: LabelledSet, meta: dict, natural: str, plots: Sequence[Path]) -> str:
    """The whole report."""
    fam = Counter((p.family, p.disguise) for p in ls.pairs)
    n_pos = sum(1 for p in ls.pairs if p.label)
    parts = [
        "# Accuracy benchmark: every method on the same labelled pairs",
        "",
        f"Generated by `{meta['command']}` ({meta['mode']} mode, seed {meta['seed']}, labelled set "
        f"`{meta.get('digest', '?')}`, fingerprint version `{meta.get('version', '?')}`; "
        f"{meta['elapsed']:.0f} s wall, {meta.get('cpu', 0):.0f} s CPU on this machine). "
        f"Sources: {meta['n_news']} news articles and "
        f"{meta['n_fiction']} novel chapters from `../shared/data/`; {len(ls.pairs)} pairs "
        f"({n_pos} copies, {len(ls.pairs) - n_pos} non-copies). Texts are read at run time and never stored here.",
        "",
        "## Summary",
        "",
        summary_table(run),
        "",
        "Columns: recall (%) on copies with 5% / 10% of the text added or deleted (mean of the two), "
        "sentence and paragraph reordering, 3% / 5% of the Han characters replaced by homophones, "
        "traditional script, partial copies (>= 30% of a source inside another page, and joined chapters); "
        "*whole copies* pools every whole-document disguise (edits 1-20%, reordering, substitutions, script "
        "and encoding, boilerplate). FP = non-copies flagged. *precision* is computed as if copies and "
        "non-copies were equally many: R / (R + FPR) with R the whole-copy recall, so it does not depend on "
        "how many pairs of each kind the set has; F1 (all) uses all negatives. ms/doc = CPU milliseconds per "
        "document checked.",
        "",
        "## Goals (issues 3 and 6)",
        "",
        goals_table(run),
        "",
        "## Recall against % changed (the paper's Figure 2)",
        "",
    ]
    for name, panels in LEVEL_FAMILIES.items():
        parts.append(f"![{name}](recall_{name}.png)\n")
        for disguise, levels in panels:
            parts += [f"**{disguise}** (recall %)", "", level_table(run, disguise, levels), ""]
    parts += ["## Disguises without a level", ""]
    for name, ds in SINGLE_FAMILIES.items():
        if any(p.disguise in ds for p in ls.pairs):
            parts += [f"![{name}](recall_{name}.png)\n", f"**{name}** (recall %)", "", single_table(run, ds), ""]
    parts += ["## Non-copies: false alarms, precision, F1", "",
              "easy = unrelated documents (another category or novel); hard-same-book = the two chapters before and the "
              "two after in the same novel; "
              "hard-same-category = news of the same category close by in the file (the file has no day "
              f"field; {ls.screened_out} candidates sharing > 20% of their 8-grams were dropped as likely "
              "reprints); hard-same-event = news anywhere in the file whose title shares >= 30% of its character "
              "bigrams with the source's but whose text shares < 5% of its 8-grams (the same event written up "
              "independently); hard-joined-neighbours = the next two chapters joined on one page, without the source.",
              "", negatives_table(run), ""]
    cov = [p for p in run.points if p.coverage is not None]
    if cov:
        parts += ["## Matched passages", "",
                  "Share of the truly copied characters (the source passage inside the page, or the source "
                  "chapter inside joined chapters) that lie inside the suspect spans the method reports, over "
                  "all such copies (a missed copy counts 0).", "", coverage_table(run, cov), ""]
    parts += ["## Time per document", "",
              "CPU time (time.process_time) of one process, so other load on a shared machine does not inflate "
              "it. Pairwise methods: fingerprinting one document; index methods: one query (fingerprinting "
              "the page, looking it up, verifying) against a library of all the sources of the set "
              "(the product dedup: against the pair's source only, see its note).", "",
              timing_table(run), "",
              "## Thresholds", "", "![sweeps](threshold_sweeps.png)\n",
              "*best* operating points are chosen on this same set (maximum F1 over all negatives): "
              "an optimistic upper bound, not a held-out estimate.", "", sweep_table(run), ""]
    parts += ["## Natural duplicates in the news file (unlabelled)", "", natural, ""]
    if run.unavailable or run.errors:
        parts += ["## Not measured", ""] + [f"- {u.name}: {u.reason}" for u in run.unavailable] + \
                 [f"- {e}" for e in run.errors] + [""]
    parts += ["## Pairs", "", "| family | disguise | pairs |", "|---|---|---|"] + \
             [f"| {f} | {d} | {n} |" for (f, d), n in fam.items()] + ["", PROTOCOL]
    return "\n".join(parts) + "\n"


PROTOCOL = """## Protocol
- Edits (seed 001, 4.2): add = pieces of sentences from 50 other documents inserted at random clause
  boundaries until the added length is the given % of the source; delete = spans of 4-40 characters
  starting at random clause starts (or anywhere, 20%) until the given % is gone.
- Reordering: sentences = a random number of sentences taken out and put back at random places (the paper's
  protocol); paragraphs = the paragraphs (or blocks of 4 sentences when the text has no line breaks) shuffled.
- Substitutions: homophone = another character with the same toned reading, near-homophone = same
  initial+final with another tone (readings from pypinyin over the characters of the sampled documents,
  frequent characters preferred), look-alike = a hand-made table of common 形近字 groups (10% is capped by
  how many table characters the text has).
- Script and encoding: OpenCC s2t; OpenCC s2tw (Taiwan standard) then a Big5 round trip; ASCII to full-width; Chinese punctuation to
  ASCII; GBK and GB2312 round trips (errors=replace).
- Boilerplate: navigation lines, ad lines between paragraphs, "请阅读原文"-style lines, spam paragraphs, and all four.
- Partial: a contiguous run of sentences (the given % of the source) inside another document of another
  group; joined = 2 or 3 consecutive chapters on one page containing the source chapter.
- Every pair has its own generator seeded with (seed, source id, disguise, level): same set on every run.
"""


def write_report(run: Run, ls: LabelledSet, meta: dict, natural: str, out: Path) -> Path:
    """Write plots and accuracy.md into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    plots = write_plots(run, out)
    path = out / "accuracy.md"
    path.write_text(markdown(run, ls, meta, natural, plots), encoding="utf-8")
    return path
