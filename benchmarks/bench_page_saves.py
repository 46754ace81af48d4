"""What a page save costs the embedded MongoDB server, with and without the indexes a store's open retires.

Saves real news texts (the shared Sina file) through `save_pages` in batches of 4 into a fresh embedded store,
alternating rounds on a `pages` collection with today's indexes and with the retired ones made again as an
earlier version left them (`storage.schema.RETIRED_INDEXES`). Prints SecantusDB's CPU per saved page (from
/proc/<pid>/stat) and the wall clock, medians and ranges of the rounds.

    python -m benchmarks.bench_page_saves [--pages 800] [--rounds 3]
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import statistics
import tempfile
import time

from benchmarks.bench_crawl import server_pids
from benchmarks.shared_data import NEWS_FILE
from pipelines._workers import process_cpu_seconds
from storage import servers
from storage.config import StoreConfig
from storage.schema import RETIRED_INDEXES, ensure_indexes
from storage.store import open_store


def _pages(texts: list[str], tag: str) -> list[dict]:
    """Page documents as a crawl saves them (fields the indexes read), unique by URL and content hash."""
    now = dt.datetime.now(dt.timezone.utc)
    return [{"url": f"http://{tag}.test/{i}", "site": tag, "title": text[:20], "text": text, "spider": "news",
             "kind": "article", "canonical_url": f"http://{tag}.test/{i}", "fetched": now, "simhash": 1,
             "content_hash": hashlib.blake2b(f"{tag}{i}".encode(), digest_size=16).hexdigest()}
            for i, text in enumerate(texts)]


def _round(store, pid: int, pages: list[dict], retired: bool) -> tuple[float, float]:
    """(server CPU ms a page, wall seconds) of saving `pages` into a new pages collection."""
    store.db.pages.drop()
    ensure_indexes(store.db)
    if retired:
        for name in RETIRED_INDEXES["pages"]:
            store.db.pages.create_index(name.rsplit("_", 1)[0])
    for page in pages:
        page["_id"] = store.new_page_id()
    cpu, t = process_cpu_seconds(pid, children=False), time.perf_counter()
    for i in range(0, len(pages), 4):
        store.save_pages(pages[i:i + 4], [True] * len(pages[i:i + 4]))
    return 1000 * (process_cpu_seconds(pid, children=False) - cpu) / len(pages), time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    """Alternate the two index sets over rounds of fresh saves; print medians [ranges]."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_page_saves", description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    with open(NEWS_FILE, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line, _ in zip(f, range(args.pages))]
    results: dict[str, list[tuple[float, float]]] = {"today's indexes": [], "with the retired ones": []}
    with tempfile.TemporaryDirectory(prefix="zhdedup-saves-") as var:
        try:
            with open_store(StoreConfig.from_env(var_dir=var)) as store:
                pid = server_pids(var)["mongo"]
                for r in range(args.rounds):
                    for name, retired in (("today's indexes", False), ("with the retired ones", True)):
                        results[name].append(_round(store, pid, _pages(texts, f"r{r}{int(retired)}"), retired))
        finally:   # the embedded servers outlive a store's close; these have no var/ left to serve
            servers.stop(var)
    print(f"{args.pages} pages saved in batches of 4, {args.rounds} rounds, medians [min-max]")
    for name, rows in results.items():
        cpu, wall = [c for c, _ in rows], [w for _, w in rows]
        print(f"{name:24s} SecantusDB CPU {statistics.median(cpu):.2f} ms a page [{min(cpu):.2f}-{max(cpu):.2f}], "
              f"wall {statistics.median(wall):.2f} s [{min(wall):.2f}-{max(wall):.2f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
