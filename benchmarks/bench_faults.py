"""The fault-injection suite, long: every scenario with several seeds, counts printed per scenario and seed.

    python -m benchmarks.bench_faults [--seeds 1,2,3,4,5] [--scenarios mongo,redis,...] [--originals 24]

Real processes and real SIGKILLs (tests/reliability/reliability_helpers.run_fault_scenario): a crawl of
sites with exact, SimHash and passage copies; at a moment drawn from the seed, MongoDB, Redis (data kept
or deleted), both, or the crawler with a server are killed and held down longer than the retry window;
then one re-run of the same command. Each row is checked (every story stored once, every copy in
duplicates, index == MongoDB, spool empty); the baseline column is the same crawl without a fault.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

from storage import StoreConfig, open_store
from storage import servers as srv
from tests.reliability.reliability_helpers import (ALL_COPIES, SCENARIOS, CrawlProc, NewsSites,
                                                   assert_every_story_once, crawl_env)


def baseline(var: Path, sites: NewsSites, work: Path) -> dict:
    """The same crawl with no fault: the counts every scenario must reach."""
    db = f"b{uuid.uuid4().hex[:8]}"
    t = time.monotonic()
    proc = CrawlProc(sites.start_urls, crawl_env(var_dir=var, db=db), work / "baseline.log")
    assert proc.wait(300) == 0, proc.log[-3000:]
    with open_store(StoreConfig(var_dir=str(var), db_name=db, key_prefix=f"{db}:")) as st:
        counts = assert_every_story_once(st, sites.expected)
        st.drop_all()
    return dict(counts, seconds=round(time.monotonic() - t, 1))


def main(argv: list[str] | None = None) -> int:
    """Run every scenario x seed; print one row each; exit 1 if any row is wrong."""
    from tests.reliability.reliability_helpers import run_fault_scenario

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated seeds (default 1..5)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"subset of {','.join(SCENARIOS)}")
    ap.add_argument("--originals", type=int, default=24, help="distinct stories on site A (default 24)")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    scenarios = args.scenarios.split(",")
    if set(scenarios) - set(SCENARIOS):
        print(f"unknown scenario(s): {sorted(set(scenarios) - set(SCENARIOS))}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench_faults_"))
    var = work / "var"
    srv.ensure_all(var)
    sites = NewsSites(originals=args.originals, copies=ALL_COPIES)
    failures = 0
    try:
        base = baseline(var, sites, work)
        print(f"site: {len(sites.expected.groups)} stories, {sites.expected.pages} article URLs "
              f"(exact, SimHash and passage copies); logs in {work}")
        print(f"baseline (no fault): pages={base['pages']} duplicates={base['duplicates']} in {base['seconds']} s")
        print(f"{'scenario':<20}{'seed':>5}{'killed at':>10}{'held s':>8}  {'victims':<13}{'pages':>6}"
              f"{'dups':>6}{'index':>6}{'spool':>6}  {'s':>5}  result")
        for scenario in scenarios:
            for seed in seeds:
                db = f"f{uuid.uuid4().hex[:8]}"
                t = time.monotonic()
                try:
                    c = run_fault_scenario(var, db, sites, work, scenario, seed)
                    ok = (c["pages"], c["duplicates"]) == (base["pages"], base["duplicates"])
                    row = (f"{c['killed_at']:>10}{c['held']:>8}  {c['victims']:<13}{c['pages']:>6}"
                           f"{c['duplicates']:>6}{c['index']:>6}{c['spool_left']:>6}")
                    result = "exact" if ok else "WRONG COUNTS"
                except Exception as e:  # noqa: BLE001 - a row per run, whatever failed
                    ok, row, result = False, f"{'':>10}{'':>8}  {'':<13}{'':>6}{'':>6}{'':>6}{'':>6}", \
                        "FAILED: " + ((str(e) or repr(e)).splitlines() or [""])[0][:100]
                failures += not ok
                print(f"{scenario:<20}{seed:>5}{row}  {time.monotonic() - t:>5.1f}  {result}", flush=True)
                srv.ensure_all(var)
                with open_store(StoreConfig(var_dir=str(var), db_name=db, key_prefix=f"{db}:",
                                            replay_spool=False)) as st:
                    st.drop_all()
    finally:
        sites.stop()
        srv.stop(var)
    print(f"{len(scenarios) * len(seeds) - failures} of {len(scenarios) * len(seeds)} runs exact")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
