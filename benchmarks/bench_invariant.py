"""The store invariant harness over many seeds: pass rate per store kind, and how to replay a failure.

    python -m benchmarks.bench_invariant --seeds 100 [--kinds embedded,redis,cluster,stale] [--start S] [--fault F]
    python -m benchmarks.bench_invariant --seed S --kind K [--fault F]        (replay one run, logs kept)
    [--stories N]  distinct stories per corpus (default 14; the seed's plan and corpus depend on it)

Each seed draws a corpus (2-4 loopback sites, originals, verbatim / near / passage copies published
earlier, later, the same day or undated, briefs, list pages), crawl settings, 1-3 crawlers and a fault
(tests/invariant/harness.py); the store after the fault and one re-run must equal the oracle exactly, and
so must the store a fault-free first run leaves. Kinds go round-robin over the seeds; the fault comes from
the seed unless --fault names one (`--fault none`: fault-free runs only). The external Redis and MongoDB-wire
servers (storage.servers, as tests/conftest.py starts them) and the Redis Cluster
(tests/cluster_fixture.py) are started here and stopped at the end. Logs of failing runs are kept.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.stopping import exit_on_sigterm  # noqa: E402
from tests.invariant.harness import FAULTS, KINDS, Result, Servers, run  # noqa: E402


def _cluster_fixture():
    """tests/cluster_fixture.py as a module (tests/ is not a package on every checkout)."""
    spec = importlib.util.spec_from_file_location("cluster_fixture", ROOT / "tests" / "cluster_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start_servers(kinds: list[str], stack: ExitStack, root: Path) -> Servers:
    """External servers for the kinds asked for, stopped when the stack closes."""
    from storage import servers as srv

    out = Servers()
    if set(kinds) - {"embedded"}:
        var = root / "servers"
        out.var_dir = var
        out.redis_url = srv.ensure(var, "redis").uri
        out.mongo_uri = srv.ensure(var, "mongo").uri
        stack.callback(srv.stop, var)
    if "cluster" in kinds:
        fixture = _cluster_fixture()
        why = fixture.missing()
        if why:
            raise SystemExit(f"kind cluster: {why}")
        cluster = fixture.RedisClusterProcs(root / "cluster")
        stack.callback(cluster.stop)
        out.cluster = cluster.start()
    return out


def _row(r: Result) -> str:
    """One line per run."""
    c = r.counts
    return (f"{r.plan.seed:>5} {r.plan.kind:<9}{r.plan.fault:<13}{r.plan.crawlers:>2}{'d' if r.plan.distributed else ' '}"
            f"{r.plan.concurrent:>4}{c.get('stories', ''):>5}{c.get('copies', ''):>5}{c.get('pages', ''):>6}"
            f"{c.get('duplicates', ''):>6}{r.seconds:>7.1f}  {'pass' if r.ok else 'FAIL: ' + r.problems[0][:90]}")


def replay(seed: int, kind: str, fault: str | None, stories: int) -> int:
    """Run one seed, keep its logs, print the full report."""
    with ExitStack() as stack:
        root = Path(tempfile.mkdtemp(prefix=f"bench_invariant_{seed}_"))
        servers = start_servers([kind], stack, root)
        result = run(seed, kind, fault, servers, root / "run", stories=stories, keep=True)
    print(result.report())
    return 0 if result.ok else 1


def sweep(seeds: list[int], kinds: list[str], stories: int, fault: str | None = None) -> int:
    """Many seeds, kinds round-robin; per-kind pass rate and the first failure's replay command."""
    t0 = time.monotonic()
    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])     # kind -> [passed, run, seconds]
    failures: list[Result] = []
    with ExitStack() as stack:
        root = Path(tempfile.mkdtemp(prefix="bench_invariant_"))
        servers = start_servers(kinds, stack, root)
        print(f"{'seed':>5} {'kind':<9}{'fault':<13}{'cr':>3}{'CR':>4}{'story':>5}{'copy':>5}{'pages':>6}"
              f"{'dups':>6}{'s':>7}  verdict   (work in {root})", flush=True)
        for i, seed in enumerate(seeds):
            kind = kinds[i % len(kinds)]
            try:
                r = run(seed, kind, fault, servers, root / f"seed-{seed}-{kind}", stories=stories)
            except Exception as e:  # noqa: BLE001 - a harness error is a row too
                from tests.invariant.harness import make_plan

                r = Result(make_plan(seed, kind, fault, stories), problems=[f"harness error: {type(e).__name__}: {e}"])
            s = stats[kind]
            s[0], s[1], s[2] = s[0] + r.ok, s[1] + 1, s[2] + int(r.seconds)
            if not r.ok:
                failures.append(r)
                print(r.report(), flush=True)
            else:
                print(_row(r), flush=True)
    print(f"\n{'kind':<10}{'passed':>8}{'runs':>6}{'rate':>8}{'s/run':>7}")
    for kind in kinds:
        p, n, secs = stats[kind]
        if n:
            print(f"{kind:<10}{p:>8}{n:>6}{p / n:>8.0%}{secs / n:>7.1f}")
    print(f"all: {len(seeds) - len(failures)}/{len(seeds)} in {time.monotonic() - t0:.0f} s")
    for r in failures:
        print(f"FAILED seed {r.plan.seed} ({r.plan.kind}/{r.plan.fault}): {r.problems[0][:120]}\n  replay: {r.replay}")
    if failures:
        print(f"first failing seed: {failures[0].plan.seed}; replay: {failures[0].replay}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """Parse arguments; a sweep, or one replay."""
    exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    ap.add_argument("--start", type=int, default=1, help="first seed (default 1)")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"store kinds, round-robin (default {','.join(KINDS)})")
    ap.add_argument("--seed", type=int, help="replay this one seed (with --kind, optionally --fault)")
    ap.add_argument("--kind", choices=KINDS, help="store kind of the replayed seed")
    ap.add_argument("--fault", help="fault of the replayed seed, or of every seed of a sweep (default: drawn "
                                    "from the seed)")
    ap.add_argument("--stories", type=int, default=14, help="distinct stories per corpus (default 14)")
    args = ap.parse_args(argv)
    if args.seed is not None:
        kind = args.kind or "embedded"
        if args.fault and args.fault not in FAULTS[kind]:
            ap.error(f"--fault for kind {kind}: one of {', '.join(FAULTS[kind])}")
        return replay(args.seed, kind, args.fault, args.stories)
    kinds = args.kinds.split(",")
    unknown = set(kinds) - set(KINDS)
    if unknown:
        ap.error(f"unknown kind(s) {sorted(unknown)}; known: {', '.join(KINDS)}")
    if args.fault and any(args.fault not in FAULTS[k] for k in kinds):
        ap.error(f"--fault {args.fault} is not a fault of every kind swept ({', '.join(kinds)})")
    return sweep(list(range(args.start, args.start + args.seeds)), kinds, args.stories, args.fault)


if __name__ == "__main__":
    sys.exit(main())
