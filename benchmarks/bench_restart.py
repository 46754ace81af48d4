"""Restarts of the embedded Redis on a var/ used for a while: how long a crawl waits for it, how large its file.

Each crawl that finds the servers stopped (a reboot, `zhdedup stop`, a crash) starts Redis on the data of
the crawls before. This runs sessions as such crawls do (start, writes, stop) on one var/ per tree, with the
code of `--baseline` (read from git) next to this tree's, and prints the seconds until Redis answers, the
seconds `stop` takes and the append-only file's size after it. Every session overwrites the same keys, as
a crawl's index and claims do, so the data stays small and the file's history grows.

    python -m benchmarks.bench_restart [--baseline REV] [--seed-mb MB] [--sessions N] [--history-mb MB]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from fingerprint.cliparser import OneLineParser

ROOT = Path(__file__).resolve().parents[1]
SESSION = r"""
import json, os, sys, time
from pathlib import Path
import redis
from storage import servers as srv
var, mb, keys = Path(sys.argv[1]), int(sys.argv[2]), 2000
t = time.monotonic()
client = redis.Redis.from_url(srv.ensure(var, "redis").uri)
started = time.monotonic() - t
if sys.argv[3] == "seed":   # the file many short sessions leave: none wrote enough to set off Redis's own rewrite
    client.config_set("auto-aof-rewrite-percentage", 0)
value = os.urandom(32).hex()   # small writes, as an index's: ~10,500 commands a MB of file
with client.pipeline(transaction=False) as pipe:
    for i in range(mb * 10_500):
        pipe.set(f"k{i % keys}", value)
        if i % 10_000 == 9_999:
            pipe.execute()
    pipe.execute()
t = time.monotonic()
srv.stop(var, ("redis",))
stopped = time.monotonic() - t
size = sum(f.stat().st_size for f in (var / "redis").rglob("*") if f.is_file())
print(json.dumps({"start_s": started, "stop_s": stopped, "file_mb": size / 1e6}))
"""


def storage_tree(commit: str, into: Path) -> Path:
    """storage/ (and the packages it imports at start) as of `commit`, in `into`."""
    archive = subprocess.run(["git", "archive", commit, "storage", "fingerprint/cliparser.py"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "fingerprint" / "__init__.py").touch()
    return into


def session(tree: Path, var: Path, history_mb: int, seed: bool = False) -> dict:
    """One start, history_mb MB of writes and one stop of the embedded Redis of var, with tree's code (seed: the
    server's own rewrite off, as a var/ of many short sessions has it)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", SESSION, str(var), str(history_mb), "seed" if seed else "-"],
                         env=env, cwd=var.parent,
                         capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Sessions alternated between the two trees, each on its own var/; a table of what each session cost."""
    ap = OneLineParser(prog="python -m benchmarks.bench_restart", description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="HEAD~1", help="commit to compare with (default HEAD~1)")
    ap.add_argument("--sessions", type=int, default=4, help="crawl sessions per tree (default 4)")
    ap.add_argument("--history-mb", type=int, default=5, help="MB written a session (default 5)")
    ap.add_argument("--seed-mb", type=int, default=100,
                    help="MB of history the var/ holds before the first session (default 100)")
    args = ap.parse_args(argv)
    if args.sessions < 1 or args.history_mb < 1 or args.seed_mb < 0:
        ap.error("--sessions and --history-mb must be at least 1, --seed-mb at least 0")
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp_name:
        tmp = Path(tmp_name)
        trees = {args.baseline: storage_tree(args.baseline, tmp / "baseline"), "now": ROOT}
        rows: dict[str, list[dict]] = {name: [] for name in trees}
        vars_ = {name: tmp / f"var-{i}" for i, name in enumerate(trees)}
        for name in trees:   # the same history for both, written by the baseline's code
            session(trees[args.baseline], vars_[name], args.seed_mb, seed=True)
        for n in range(args.sessions):
            for name, tree in trees.items():
                rows[name].append(session(tree, vars_[name], args.history_mb))
        print(f"Embedded Redis on a var/ holding {args.seed_mb} MB of history, then {args.sessions} sessions of "
              f"start, {args.history_mb} MB of writes (2,000 keys overwritten), stop; alternated between the trees")
        print(f"{'session':>8}  " + "  ".join(f"{name[:12]:>12} start s  stop s  file MB" for name in trees))
        for n in range(args.sessions):
            cells = [f"{row['start_s']:>20.2f}  {row['stop_s']:>6.2f}  {row['file_mb']:>7.1f}"
                     for row in (rows[name][n] for name in trees)]
            print(f"{n + 1:>8}  " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
