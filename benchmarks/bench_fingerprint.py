"""Fingerprinting speed and Hamming-index query latency, each next to a baseline from the same run.

    python -m benchmarks.bench_fingerprint [--docs 600] [--sizes 1e5,1e6,1e7] [--baseline COMMIT]
    python -m benchmarks.bench_fingerprint --only-dedup | --only-page --baseline COMMIT

Prints the start-up time to a first fingerprint (against a bare interpreter), the whole
`python -m fingerprint dedup` process on one core (start-up included) against the code of a baseline
commit in the same run (--baseline, --dedup-sizes, --rounds), the crawl's per-page fingerprint against
the same commit (--only-page), docs/s for 3,000-character documents (SimHash + DNA + exact hash, against the tokenizer's
own cost, with the compiled kernels and without them), and query latency of fingerprint.HammingIndex against a brute-force numpy scan and the
`simhash` package's SimhashIndex.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.shared_data import DATA_DIR as DATA



def load_docs(n: int, size: int = 3000) -> list[str]:
    """n documents of `size` characters cut from the shared novels and news."""
    docs: list[str] = []
    for name in ("fiction_classics_dev.jsonl", "news_sina_dev.jsonl"):
        buf = ""
        with (DATA / name).open(encoding="utf-8") as f:
            for line in f:
                buf += json.loads(line)["text"]
                while len(buf) >= size and len(docs) < n:
                    docs.append(buf[:size])
                    buf = buf[size:]
                if len(docs) >= n:
                    return docs
    return docs


def rate(fn, docs: list[str], repeat: int = 3) -> float:
    """Best docs/s of `repeat` passes."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for d in docs:
            fn(d)
        best = min(best, time.perf_counter() - t)
    return len(docs) / best


def bench_fingerprinting(n_docs: int) -> None:
    import jieba
    import rjieba

    from fingerprint import content_hash, dna, fingerprint_text, normalize, simhash, speedups

    docs = load_docs(n_docs)
    fingerprint_text(docs[0])
    jieba.lcut(docs[0])
    rows = [
        ("rjieba.cut (the tokenizer alone)", rate(rjieba.cut, docs)),
        ("jieba.lcut (for comparison)", rate(jieba.lcut, docs[:100], 1)),
        ("normalize", rate(normalize, docs)),
        ("simhash (normalize + tokens + hash)", rate(simhash, docs)),
        ("dna", rate(dna, docs)),
        ("content_hash", rate(content_hash, docs)),
        ("fingerprint_text, numpy only", _numpy_only(fingerprint_text, docs)),
        ("fingerprint_text (SimHash + DNA + exact)", rate(fingerprint_text, docs)),
    ]
    kernels = "compiled kernels" if speedups.available() else "numpy only: fingerprint/_speedups.c not built"
    print(f"\nFingerprinting {len(docs)} documents of 3,000 characters, one core ({kernels})")
    print(f"{'step':<44}{'docs/s':>10}{'ms/doc':>10}")
    for name, r in rows:
        print(f"{name:<44}{r:>10.0f}{1000 / r:>10.2f}")
    print(f"full fingerprint costs {rows[0][1] / rows[-1][1]:.2f}x the tokenizer alone")


def _numpy_only(fn, docs: list[str]) -> float:
    """rate(fn) with the compiled kernels switched off: what an install without a C compiler gets."""
    from fingerprint import speedups

    kernel, speedups.KERNEL = speedups.KERNEL, None
    try:
        return rate(fn, docs)
    finally:
        speedups.KERNEL = kernel


def _latencies(fn, queries) -> tuple[float, float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1e6)
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.99) - 1]


def bench_index(sizes: list[int], queries: int = 2000) -> None:
    from fingerprint import HammingIndex

    print("\nHamming index, k = 3: query latency in microseconds (median / p99)")
    print(f"{'fingerprints':>12}  {'HammingIndex':>16}  {'numpy scan':>16}  {'simhash pkg':>16}  {'bytes/fp':>8}  {'build s':>8}")
    rng = np.random.default_rng(42)
    for n in sizes:
        fps = rng.integers(0, 2 ** 63, size=n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=n, dtype=np.uint64)
        picks = rng.integers(0, n, size=queries)
        qs = [int(fps[i]) ^ (1 << int(rng.integers(64))) ^ (1 << int(rng.integers(64))) for i in picks]
        t = time.perf_counter()
        index = HammingIndex(3)
        index.bulk(fps)
        build = time.perf_counter() - t
        ours = _latencies(index.query, qs)
        scan = _latencies(lambda q: np.flatnonzero(np.bitwise_count(fps ^ np.uint64(q)) <= 3), qs[:max(20, queries // (n // 10_000 or 1))])
        peer = _simhash_pkg(fps, qs[:200]) if n <= 100_000 else None
        peer_s = f"{peer[0]:>7.0f} /{peer[1]:>7.0f}" if peer else f"{'(too slow)':>16}"
        print(f"{n:>12,}  {ours[0]:>7.1f} /{ours[1]:>7.1f}  {scan[0]:>7.0f} /{scan[1]:>7.0f}  {peer_s}  "
              f"{index.memory_bytes() / n:>8.1f}  {build:>8.1f}")


def _simhash_pkg(fps: np.ndarray, qs: list[int]) -> tuple[float, float]:
    """The `simhash` package's SimhashIndex (k=3, 4 blocks) on the same fingerprints."""
    from simhash import Simhash, SimhashIndex

    index = SimhashIndex([(str(i), Simhash(int(v))) for i, v in enumerate(fps.tolist())], k=3)
    return _latencies(lambda q: index.get_near_dups(Simhash(q)), qs)


def _wall(cmd: list[str], env: dict, repeat: int) -> float:
    """Best wall time of `repeat` runs of a command."""
    import subprocess

    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - t)
    return best


def bench_startup(repeat: int = 5) -> None:
    """`python -m fingerprint simhash FILE` on one sentence: cold (IDF table built) and warm (cached table)."""
    import os
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "one.txt"
        text.write_text("滚滚长江东逝水，浪花淘尽英雄。", encoding="utf-8")
        env = {**os.environ, "ZHDEDUP_CACHE_DIR": tmp}
        cmd = [sys.executable, "-m", "fingerprint", "simhash", str(text)]
        rows = [("bare interpreter (python -c pass)", _wall([sys.executable, "-c", "pass"], env, repeat)),
                ("first run: IDF table built and cached", _wall(cmd, env, 1)),
                ("later runs: cached IDF table", _wall(cmd, env, repeat))]
    print(f"\nStart-up to the first fingerprint, wall seconds (best of {repeat}; goal <= 0.5 s)")
    for name, seconds in rows:
        print(f"{name:<44}{seconds:>10.3f}")


def bench_dedup_cli(n_docs: int, workers: list[int]) -> None:
    """`python -m fingerprint dedup --method full` (the real CLI) on 3,000-character documents, a quarter
    of them copied with an edit, against `fingerprint_text` alone in this process (the same run)."""
    import os
    import re
    import subprocess
    import sys
    import tempfile

    from fingerprint import fingerprint_text

    docs = load_docs(n_docs)
    rows = [{"id": f"d{i}", "text": d} for i, d in enumerate(docs)]
    rows += [{"id": f"c{i}", "text": d[:1500] + "（转载自某网）" + d[1500:]} for i, d in enumerate(docs[::4])]
    baseline = rate(fingerprint_text, docs[:300], repeat=1)
    cores = os.cpu_count() or 1
    print(f"\nBatch dedup through the CLI: {len(rows)} documents of 3,000 characters, --method full; the command's "
          f"own figure, whose clock starts after the imports (no interpreter start-up); machine has {cores} cores")
    print(f"{'':<44}{'docs/s':>10}{'per core':>10}")
    print(f"{'fingerprint_text alone (baseline)':<44}{baseline:>10.0f}{baseline:>10.0f}")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.jsonl"
        src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
        for w in workers:
            cmd = [sys.executable, "-m", "fingerprint", "dedup", str(src), "--out", os.devnull, "--workers", str(w)]
            err = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
            speed = float(re.search(r"\((\d+) docs/s", err).group(1))
            print(f"{f'dedup --workers {w}':<44}{speed:>10.0f}{speed / min(w, cores):>10.0f}")


DEDUP_BASELINE = "f0bfb18"  # the last commit before issue 28's dedup start-up and passage-check work


def baseline_tree(commit: str, into: Path) -> Path:
    """fingerprint/ as of `commit`, in `into`, with its compiled kernels: the current build when
    _speedups.c is unchanged since, else built there (none when this tree has none either)."""
    import shutil
    import subprocess
    import sys
    import tarfile
    from io import BytesIO

    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "archive", commit, "fingerprint", "setup.py"], cwd=root,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    built = sorted((root / "fingerprint").glob("_speedups.*.so")) + sorted((root / "fingerprint").glob("_speedups.*.pyd"))
    if built:
        if (into / "fingerprint" / "_speedups.c").read_bytes() == (root / "fingerprint" / "_speedups.c").read_bytes():
            for f in built:
                shutil.copy2(f, into / "fingerprint" / f.name)
        else:
            subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=into,
                           capture_output=True, check=True)
    return into


def _run_dedup(tree: Path, src: Path, out: Path, core: int | None, extra_env: dict | None = None
               ) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the whole `python -m fingerprint dedup src --out out` process with
    `tree` first on the path, pinned to one core: interpreter start, imports, tables, reading, writing."""
    import os
    import resource
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(tree), **(extra_env or {})}
    env.pop("ZHDEDUP_NO_SPEEDUPS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files: the warm-up writes them
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # cwd is out's folder, never the repository: `python -m` puts the working directory first on the path
    subprocess.run([sys.executable, "-m", "fingerprint", "dedup", str(src), "--out", str(out)], env=env,
                   cwd=out.parent, preexec_fn=pin, check=True, capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _median_range(values: list[float]) -> str:
    return f"{statistics.median(values):>6,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def bench_dedup_process(sizes: list[int], rounds: int, baseline: str, core: int | None = 1,
                        now_env: dict | None = None) -> None:
    """`python -m fingerprint dedup` (--method full, one worker) as a user runs it, start-up included, on
    held-out-looking news (benchmarks.dedup_corpus: 3,000 characters, a quarter near copies), one core,
    against the code of `baseline` in the same run: rounds interleaved (the order flips every round),
    medians with ranges. The two codes' outputs are byte-identical when they compute one fingerprint
    version (`now_env={"ZHDEDUP_SYNONYMS": "0"}` against a baseline before issue 27)."""
    import os
    import tempfile

    from benchmarks.dedup_corpus import write

    if core is not None and core not in os.sched_getaffinity(0):
        core = None
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        trees = {"baseline": baseline_tree(baseline, tmp / "baseline"), "now": root}
        inputs = {n: write(tmp / f"in{n}.jsonl", n) for n in [1, *sizes]}
        (tmp / "run").mkdir()
        envs = {"baseline": None, "now": now_env}
        for name, tree in trees.items():  # warm-up: caches built, files in the page cache
            _run_dedup(tree, inputs[min(sizes)], tmp / "run" / f"{name}.jsonl", core, envs[name])
        wall: dict = {(name, n): [] for name in trees for n in inputs}
        cpu: dict = {(name, n): [] for name in trees for n in inputs}
        for r in range(rounds):
            for n, src in inputs.items():
                for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                    w, c = _run_dedup(trees[name], src, tmp / "run" / f"{name}{n}.jsonl", core, envs[name])
                    wall[name, n].append(w)
                    cpu[name, n].append(c)
        same = all((tmp / "run" / f"baseline{n}.jsonl").read_bytes() == (tmp / "run" / f"now{n}.jsonl").read_bytes()
                   for n in inputs)
    where = f"pinned to core {core}" if core is not None else "not pinned"
    print(f"\nBatch dedup, the whole `python -m fingerprint dedup` process (start-up included), --method full, "
          f"one worker, {where}; {rounds} interleaved rounds, median (range); baseline = {baseline}; "
          f"output byte-identical: {'yes' if same else 'NO'}" + (f" (now with {now_env})" if now_env else ""))
    print(f"{'documents':>10}  {'baseline docs/s':>22}  {'now docs/s':>22}  {'speed-up':>8}  "
          f"{'baseline CPU docs/s':>22}  {'now CPU docs/s':>22}")
    for n in inputs:
        if n == 1:
            b, c = statistics.median(wall["baseline", 1]), statistics.median(wall["now", 1])
            print(f"{'start-up':>10}  {b:>20.3f} s  {c:>20.3f} s  {b / c:>7.2f}x   (one document: the fixed cost)")
            continue
        rate = {k: [n / v for v in vs] for k, vs in wall.items() if k[1] == n}
        cpu_rate = {k: [n / v for v in vs] for k, vs in cpu.items() if k[1] == n}
        gain = statistics.median(rate["now", n]) / statistics.median(rate["baseline", n])
        print(f"{n:>10,}  {_median_range(rate['baseline', n]):>22}  {_median_range(rate['now', n]):>22}  "
              f"{gain:>7.2f}x  {_median_range(cpu_rate['baseline', n]):>22}  {_median_range(cpu_rate['now', n]):>22}")
    print("goal (issue 28): >= 1,500 docs/s on one core, start-up included; CPU docs/s = documents / (user + sys)")


_PAGE_RATE = """
import json, sys, time
from fingerprint import fingerprint_text
from fingerprint import neardup
docs = json.load(open(sys.argv[1], encoding="utf-8"))
def page(text):  # pipelines.fingerprint.compute's fingerprint calls, as of the code under test
    try:
        return fingerprint_text(text, sketch_size=neardup.NearDupParams.sketch_size)
    except TypeError:  # before issue 27 the sketch was computed apart
        return fingerprint_text(text), neardup.sketch(text)
page(docs[0])
t = time.process_time()
for d in docs:
    page(d)
print(len(docs) / (time.process_time() - t))
"""


def bench_page_fingerprint(n_docs: int, rounds: int, baseline: str, core: int | None = 1) -> None:
    """What the crawl computes for every page (pipelines/fingerprint.py: SimHash, exact hash, DNA, sketch),
    docs/s of CPU time on 3,000-character pages in one process per round, against `baseline`'s code:
    rounds interleaved, medians with ranges."""
    import os
    import subprocess
    import sys
    import tempfile

    if core is not None and core not in os.sched_getaffinity(0):
        core = None
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        trees = {"baseline": baseline_tree(baseline, tmp / "baseline"), "now": Path(__file__).resolve().parents[1]}
        src = tmp / "docs.json"
        src.write_text(json.dumps(load_docs(n_docs), ensure_ascii=False), encoding="utf-8")
        rates: dict[str, list[float]] = {name: [] for name in trees}
        for r in range(rounds):
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                env = {**os.environ, "PYTHONPATH": str(trees[name])}
                env.pop("ZHDEDUP_NO_SPEEDUPS", None)
                out = subprocess.run([sys.executable, "-c", _PAGE_RATE, str(src)], env=env, cwd=tmp, check=True,
                                     capture_output=True, text=True, preexec_fn=pin).stdout
                rates[name].append(float(out))
    b, c = statistics.median(rates["baseline"]), statistics.median(rates["now"])
    print(f"\nThe crawl's fingerprint of a page (fingerprint_text: SimHash, exact, DNA, sketch), {n_docs} pages of "
          f"3,000 characters, CPU docs/s, {rounds} interleaved rounds, median (range); baseline = {baseline}")
    print(f"{'baseline':>22}  {'now':>22}  {'speed-up':>8}  {'ms/page baseline -> now':>24}")
    print(f"{_median_range(rates['baseline']):>22}  {_median_range(rates['now']):>22}  {c / b:>7.2f}x  "
          f"{1000 / b:>12.3f} -> {1000 / c:.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--docs", type=int, default=600)
    p.add_argument("--sizes", default="1e5,1e6,1e7")
    p.add_argument("--dedup-docs", type=int, default=4000)
    p.add_argument("--dedup-sizes", default="1000,3000,5000",
                   help="corpus sizes for the whole-process dedup figure")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the whole-process dedup figure")
    p.add_argument("--baseline", default=DEDUP_BASELINE, help="git commit whose fingerprint/ is the baseline")
    p.add_argument("--core", type=int, default=1, help="the core the dedup processes are pinned to")
    p.add_argument("--only-dedup", action="store_true", help="only the whole-process dedup figure")
    p.add_argument("--only-page", action="store_true",
                   help="only the crawl's per-page fingerprint against --baseline (--docs pages, --rounds)")
    args = p.parse_args()
    if args.only_page:
        bench_page_fingerprint(args.docs, args.rounds, args.baseline, args.core)
        return
    bench_dedup_process([int(s) for s in args.dedup_sizes.split(",")], args.rounds, args.baseline, args.core)
    if args.only_dedup:
        return
    bench_page_fingerprint(args.docs, args.rounds, args.baseline, args.core)
    bench_startup()
    bench_fingerprinting(args.docs)
    bench_dedup_cli(args.dedup_docs, [1, 2])
    bench_index([int(float(s)) for s in args.sizes.split(",")])


if __name__ == "__main__":
    main()
