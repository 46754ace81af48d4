"""`python -m benchmarks.accuracy [--quick] [--out DIR]`: the accuracy benchmark, every method side by side."""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from . import background as B
from . import natural as N
from .corpus import data_dir, load_fiction, load_news
from .evaluate import run_all
from .methods import IndexMethod, PairMethod, build_methods
from .pairs import Config, build, digest
from .report import summary_table, write_report

RESULTS = Path(__file__).resolve().parents[1] / "results"
FULL = Config(n_news=50, n_fiction=50)
QUICK = Config(n_news=4, n_fiction=4, n_donors=20)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="few documents, same code paths (CI smoke test)")
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"output directory (default {RESULTS})")
    ap.add_argument("--data", type=Path, default=None, help="directory with the shared jsonl corpora")
    ap.add_argument("--seed", type=int, default=FULL.seed)
    ap.add_argument("--natural-docs", type=int, default=None,
                    help="news articles scanned for natural duplicates (default: all; 500 with --quick)")
    return ap.parse_args(argv)


def natural_section(args: argparse.Namespace, data: Path, run, log) -> str:
    """Scan the news file for its own duplicates and count what each method flags."""
    news = load_news(data)
    limit = args.natural_docs or (500 if args.quick else len(news))
    docs = [d for d in news[:limit] if len(d.text.strip()) >= 50]
    dets = N.detect(docs)
    pair_methods = [(p.name, sw.method, p.cut) for p in run.points for sw in run.sweeps
                    if sw.method.name == p.method and p.cut is not None]
    fresh = [m for m in build_methods() if isinstance(m, IndexMethod)
             and any(p.method == m.name for p in run.points)]
    index_methods = [(m.name, m) for m in fresh]
    nat = N.Natural(len(docs), min(limit, len(news)) - len(docs), dets, N.flag_counts(docs, dets, pair_methods, index_methods))
    try:
        nat.stream = N.stream_counts(docs)
    except Exception as exc:  # the product's pieces missing: say so in the report
        log(f"natural duplicates: product stream dedup failed: {type(exc).__name__}: {exc}")
    log(f"natural duplicates: {', '.join(f'{k} {len(v)}' for k, v in dets.items())}")
    return N.markdown(nat)


def background_section(args: argparse.Namespace, data: Path, seed: int, log) -> str:
    """SimHash distances between many unrelated documents (rates too small for the labelled set)."""
    from fingerprint.simhash import simhash
    docs = load_news(data) + load_fiction(data)
    sample = B.sample_docs(docs, 200 if args.quick else 2000, random.Random(f"{seed}:background"))
    hist, removed = B.simhash_background(sample, simhash)
    log(f"background: {int(hist.sum())} unrelated pairs")
    return B.markdown(hist, len(sample), removed)


def _fp_version() -> str:
    """The fingerprint version the run measured (results go stale when it changes)."""
    try:
        from fingerprint import FINGERPRINT_VERSION
        return FINGERPRINT_VERSION
    except ImportError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Build the labelled set, run every method, write the report and plots, print the summary."""
    args = parse_args(argv)
    t0 = time.perf_counter()
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    try:
        data = data_dir(args.data)
    except FileNotFoundError as exc:
        log(f"error: {exc}")
        return 2
    base = QUICK if args.quick else FULL
    cfg = Config(base.n_news, base.n_fiction, base.n_donors, args.seed)
    ls = build(cfg, data)
    log(f"labelled set: {len(ls.pairs)} pairs from {len(ls.sources)} sources "
        f"({time.perf_counter() - t0:.1f} s)")
    methods = build_methods()
    best_for = [m.name for m in methods if isinstance(m, PairMethod)
                and (m.name.startswith("SimHash k=") or m.name.startswith("Shingle Jaccard"))]
    run = run_all(ls, methods, best_for=best_for, log=log)
    nat = natural_section(args, data, run, log)
    try:
        nat += "\n\n## SimHash distance between unrelated documents\n\n" + background_section(args, data, cfg.seed, log)
    except ImportError as exc:
        log(f"background: {exc}")
    meta = {"command": "python -m benchmarks.accuracy" + (" --quick" if args.quick else ""),
            "mode": "quick" if args.quick else "full", "seed": cfg.seed, "n_news": cfg.n_news,
            "n_fiction": cfg.n_fiction, "elapsed": time.perf_counter() - t0,
            "cpu": time.process_time(), "digest": digest(ls), "version": _fp_version()}
    path = write_report(run, ls, meta, nat, args.out)
    print(summary_table(run))
    log(f"report: {path} ({time.perf_counter() - t0:.0f} s)")
    return 1 if not run.points else 0


if __name__ == "__main__":
    sys.exit(main())
