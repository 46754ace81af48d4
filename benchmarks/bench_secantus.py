"""SecantusDB's CPU per command under a crawl's command mix: this tree's daemon (storage/secantus_daemon.py) next
to the daemon of a baseline commit, in interleaved rounds.

    python -m benchmarks.bench_secantus [--baseline COMMIT] [--rounds 5] [--per-thread 150]

Each round starts each daemon on a fresh data dir (the product's arguments but --auth), creates the product's
indexes on pages, duplicates and demotions, and runs one mix from three client threads (a crawl's store threads):
a 3-page insert_many, two marker finds by _id, a find by url, an $in find, an upsert, an update_many, a marker
insert and a delete (the displacement and save commands of a crawl; 10 commands an iteration). The figure is the
server process's CPU time (user + system, from /proc) over those commands. Each start is timed too: from the
process's spawn to the moment its port accepts a connection (a fresh data dir, as a crawl's first start on a new
var/). The baseline's daemon is read from git (it needs only SecantusDB and the standard library).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pymongo

from pipelines._workers import process_cpu_seconds
from storage.processes import free_port, port_listens

ROOT = Path(__file__).resolve().parents[1]
DAEMON = ROOT / "storage" / "secantus_daemon.py"
COMMANDS_PER_ITERATION = 10
BASELINE = "a0a46e6"   # issue 28's thirteenth pass started here (its ProfileMemo measured no change and went)


def daemon_of(commit: str, into: Path) -> Path:
    """The daemon script as of `commit`, written into `into`."""
    src = subprocess.run(["git", "show", f"{commit}:storage/secantus_daemon.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    path = into / f"secantus_daemon_{commit}.py"
    path.write_text(src, encoding="utf-8")
    return path


def _mix(db, thread: int, iterations: int) -> None:
    """One store thread's commands: a page batch saved, markers looked up, a copy recorded and re-pointed."""
    for i in range(iterations):
        k = f"{thread}-{i}"
        db.pages.insert_many([{"url": f"u{k}-{j}", "site": "s", "text": "字" * 2000, "content_hash": k}
                              for j in range(3)])
        db.demotions.find_one({"_id": k})
        db.demotions.find_one({"_id": k + "x"})
        db.pages.find_one({"url": f"u{k}-1"}, {"url": 1})
        list(db.demotions.find({"_id": {"$in": [k, k + "y"]}}))
        db.duplicates.update_one({"url": f"d{k}"}, {"$set": {"original_id": k, "m": 1}}, upsert=True)
        db.duplicates.update_many({"original_id": k}, {"$set": {"m": 2}})
        db.demotions.insert_one({"_id": k, "by": k + "b"})
        db.demotions.delete_one({"_id": k + "z"})


def server_ms_per_command(daemon: Path, per_thread: int, threads: int = 3) -> tuple[float, float, float]:
    """(server CPU milliseconds a command of the mix, wall milliseconds a command per client thread, seconds
    from the spawn until the port accepted a connection), on a fresh daemon started from `daemon`."""
    with tempfile.TemporaryDirectory(prefix="zhdedup-bench-secantus-") as data:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv.pop(1), "
                                 "run_name='__main__')", str(daemon), "--host", "127.0.0.1", "--port", str(port),
                                 "--storage-path", data, "--cache-size", "256M", "--log-level", "WARNING",
                                 "--standalone"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        spawned = time.monotonic()
        while not port_listens(port) and proc.poll() is None and time.monotonic() - spawned < 60:
            time.sleep(0.005)
        start = time.monotonic() - spawned
        client = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}", serverSelectionTimeoutMS=30000)
        try:
            db = client.bench
            db.command("ping")
            db.pages.create_index("url", unique=True)
            db.pages.create_index([("site", 1), ("fetched", -1)])
            db.duplicates.create_index("url", unique=True)
            db.duplicates.create_index("original_id")
            db.demotions.create_index("by")
            time.sleep(0.3)
            before, started = process_cpu_seconds(proc.pid), time.monotonic()
            workers = [threading.Thread(target=_mix, args=(db, t, per_thread)) for t in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            used, wall = process_cpu_seconds(proc.pid) - before, time.monotonic() - started
        finally:
            client.close()
            proc.terminate()
            proc.wait(timeout=30)
    commands = threads * per_thread * COMMANDS_PER_ITERATION
    return 1000 * used / commands, 1000 * wall * threads / commands, start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_secantus", description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default=BASELINE, help=f"commit whose daemon runs alongside (default {BASELINE})")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-thread", type=int, default=150, help="iterations of the mix per client thread")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        daemons = {"now": DAEMON, args.baseline: daemon_of(args.baseline, Path(tmp))}
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in daemons}
        for r in range(args.rounds):
            for name, path in (daemons.items() if r % 2 == 0 else reversed(list(daemons.items()))):
                figures[name].append(server_ms_per_command(path, args.per_thread))
                cpu, wall, start = figures[name][-1]
                print(f"round {r + 1} {name:<10} start {start:.3f} s, server CPU {cpu:.3f} ms, client wall {wall:.3f} "
                      "ms a command", flush=True)
    print(f"\nSecantusDB per command, crawl-like mix, 3 client threads, {args.rounds} interleaved rounds, medians "
          "[ranges]:")
    for name, values in figures.items():
        cpu, wall, start = ([v[i] for v in values] for i in range(3))
        print(f"{name:<10} start {statistics.median(start):.3f} s [{min(start):.3f}-{max(start):.3f}], "
              f"server CPU {statistics.median(cpu):.3f} ms [{min(cpu):.3f}-{max(cpu):.3f}], "
              f"client wall {statistics.median(wall):.3f} ms [{min(wall):.3f}-{max(wall):.3f}]")
    for i, what in enumerate(("server CPU", "client wall", "start")):
        base = statistics.median(v[i] for v in figures[args.baseline])
        now = statistics.median(v[i] for v in figures["now"])
        print(f"{what}: now / {args.baseline} {now / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
