"""What a page save costs the embedded MongoDB server, with and without the indexes a store's open retires.

Saves real news pages (`bench_store_open.unique_pages`: the shared Sina file, with their fingerprint fields)
through `save_pages` in batches of 4 into a fresh embedded store, alternating rounds on a `pages` collection
with today's indexes and with the retired ones made again as an earlier version left them (`storage.schema.RETIRED_INDEXES`). Prints SecantusDB's CPU per saved page (from
/proc/<pid>/stat) and the wall clock, medians and ranges of the rounds.

    python -m benchmarks.bench_page_saves [--pages 800] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from benchmarks.bench_crawl import server_pids
from benchmarks.bench_store_open import unique_pages
from pipelines._workers import process_cpu_seconds
from storage import servers
from storage.config import StoreConfig
from storage.schema import RETIRED_INDEXES, ensure_indexes
from storage.store import open_store


def _round(store, pid: int, pages: list[dict], retired: bool) -> tuple[float, float]:
    """(server CPU ms a page, wall seconds) of saving `pages` into a new pages collection."""
    store.db.pages.drop()
    ensure_indexes(store.db)
    if retired:
        for name in RETIRED_INDEXES["pages"]:
            store.db.pages.create_index(name.rsplit("_", 1)[0])
    pages = [{**page, "_id": store.new_page_id()} for page in pages]
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
    pages = [{**page, "canonical_url": page["url"]} for page in unique_pages(args.pages)]   # as a crawl saves them
    results: dict[str, list[tuple[float, float]]] = {"today's indexes": [], "with the retired ones": []}
    with tempfile.TemporaryDirectory(prefix="zhdedup-saves-") as var:
        try:
            with open_store(StoreConfig.from_env(var_dir=var)) as store:
                pid = server_pids(var)["mongo"]
                for r in range(args.rounds):
                    for name, retired in (("today's indexes", False), ("with the retired ones", True)):
                        results[name].append(_round(store, pid, pages, retired))
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
