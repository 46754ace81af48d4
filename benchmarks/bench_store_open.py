"""How long a store takes to open as it grows: every crawl waits for it before its first request.

Builds a store of N real news pages (the shared Sina file, each story once, made unique by a few characters:
saved with `save_pages`, indexed with `rebuild_index`, as a crawl leaves them) for each size, then opens it
again and again (`open_store`: indexes, fingerprint versions, spool and undecided pages, the index check)
with this tree's code and with `--baseline`'s (read from git), alternated in separate processes. Prints
the median and range of the open's wall clock, and the MongoDB commands that took longest in the last one.

    python -m benchmarks.bench_store_open [--pages 1000,10000] [--rounds 3] [--baseline REV]
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import uuid
from io import BytesIO
from pathlib import Path

from benchmarks.shared_data import NEWS_FILE
from fingerprint.cliparser import OneLineParser

ROOT = Path(__file__).resolve().parents[1]
OPEN = r"""
import collections, json, sys, time
from pymongo import monitoring
took, names = collections.defaultdict(float), {}

class Listener(monitoring.CommandListener):
    def started(self, e):
        c = e.command
        what = str(c.get('filter', c.get('pipeline', '')))[:60]
        names[e.request_id] = f"{e.command_name} {c.get(e.command_name)} {what}"
    def succeeded(self, e):
        took[names.pop(e.request_id, '?')] += e.duration_micros / 1e6
    def failed(self, e):
        names.pop(e.request_id, None)

monitoring.register(Listener())
from storage import StoreConfig, open_store
config = StoreConfig.from_env(db_name=sys.argv[1], key_prefix=sys.argv[1] + ":")
t = time.perf_counter()
open_store(config).close()
print(json.dumps({"open_s": time.perf_counter() - t, "commands": len(took),
                  "slowest": sorted(took.items(), key=lambda kv: -kv[1])[:3]}))
"""


def unique_pages(n: int) -> list[dict]:
    """n page documents of real news text, no two with one content hash or one SimHash."""
    from storage.fpversion import page_fields

    texts = [json.loads(line)["text"] for line in NEWS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [t for t in texts if len(t) > 200]
    docs, seen, k = [], set(), 0
    while len(docs) < n:
        k += 1
        text = texts[k % len(texts)] + "".join(chr(0x4E00 + (k >> s) % 64 * 97 % 20000) for s in (0, 6, 12)) + "。"
        fields = page_fields(text)
        if fields["content_hash"] in seen or fields["simhash"] in seen:
            continue
        seen.update((fields["content_hash"], fields["simhash"]))
        docs.append({"url": f"http://site{k % 3}.test/a/{k}.html", "site": f"site{k % 3}.test", "text": text,
                     "spider": "news", **fields})
    return docs


def build(db: str, n: int) -> None:
    """A store of n pages, saved and indexed as a crawl leaves them."""
    from storage import StoreConfig, open_store

    store = open_store(StoreConfig.from_env(db_name=db, key_prefix=f"{db}:"))
    try:
        docs = unique_pages(n)
        for start in range(0, n, 500):
            batch = [{**d, "_id": store.new_page_id()} for d in docs[start:start + 500]]
            store.save_pages(batch, [True] * len(batch))
        store.rebuild_index()
    finally:
        store.close()


def drop(db: str) -> None:
    """Remove a benchmark's store again (same servers, same env as the crawl or the build)."""
    from storage import StoreConfig, open_store

    store = open_store(StoreConfig.from_env(db_name=db, key_prefix=f"{db}:"))
    try:
        store.drop_all()
    finally:
        store.close()


def tree_of(commit: str, into: Path) -> Path:
    """The project's packages as of `commit`, in `into`, with this tree's compiled kernels when unchanged."""
    archive = subprocess.run(["git", "archive", commit, "storage", "fingerprint", "pipelines", "extract"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    if (into / "fingerprint" / "_speedups.c").read_bytes() == (ROOT / "fingerprint" / "_speedups.c").read_bytes():
        for built in (ROOT / "fingerprint").glob("_speedups.*.so"):
            shutil.copy2(built, into / "fingerprint" / built.name)
    return into


def open_once(tree: Path, db: str) -> dict:
    """One open_store of db with tree's code, in its own process, on this tree's servers."""
    from storage import StoreConfig

    env = {**os.environ, "PYTHONPATH": str(tree), "ZHDEDUP_VAR": str(StoreConfig.from_env().var_path.resolve())}
    out = subprocess.run([sys.executable, "-c", OPEN, db], env=env, cwd=tree, capture_output=True, text=True,
                         check=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Build each size, open it alternately with both trees, print medians and ranges."""
    ap = OneLineParser(prog="python -m benchmarks.bench_store_open", description=__doc__.split("\n")[0])
    ap.add_argument("--pages", default="1000,10000", help="store sizes, comma-separated (default 1000,10000)")
    ap.add_argument("--rounds", type=int, default=3, help="opens per tree and size (default 3)")
    ap.add_argument("--baseline", default="HEAD~1", help="commit to compare with (default HEAD~1)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.pages.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--pages takes numbers separated by commas, not {args.pages!r}")
    if not sizes or min(sizes) < 1 or args.rounds < 1:
        ap.error("--pages and --rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-open-") as tmp:
        trees = {args.baseline: tree_of(args.baseline, Path(tmp) / "baseline"), "now": ROOT}
        print(f"open_store on stores of real news pages; {args.rounds} opens per tree, alternated; median [range]")
        for n in sizes:
            db = f"bench_open_{n}_{uuid.uuid4().hex[:6]}"
            build(db, n)
            try:
                runs: dict[str, list[dict]] = {name: [] for name in trees}
                for r in range(args.rounds):
                    for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                        runs[name].append(open_once(trees[name], db))
            finally:
                drop(db)
            for name, rows in runs.items():
                times = [row["open_s"] for row in rows]
                slowest = "; ".join(f"{what} {s:.3f} s" for what, s in rows[-1]["slowest"])
                print(f"{n:>8,} pages  {name[:12]:>12}  {statistics.median(times):6.3f} s "
                      f"[{min(times):.3f}-{max(times):.3f}]   slowest: {slowest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
