"""Crawl speed: the full pipeline next to the same crawl without fingerprint + dedup, in one run.

    python -m benchmarks.bench_crawl --pages 2000 [--repeat 2] [--corpus news.jsonl]

Generates a local site of --pages article pages (a third of them near-duplicates of other pages: a few
function words changed and an ad line added) plus list pages, serves it on 127.0.0.1, and runs
`scrapy crawl news` twice per round on fresh stores: (1) ExtractPipeline + InfringementPipeline +
StorePipeline, (2) the full pipeline. Prints pages/s of both and their ratio (goal: >= 80%).
Texts are synthetic sentences from the project's own demo content unless --corpus gives a JSONL file
with a "text" field per line.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import sys
import tempfile
import uuid
from html import escape
from pathlib import Path

from crawler.__main__ import scrapy_crawl
from crawler.demo_site.content import BOOK, STORIES
from crawler.demo_site.server import SiteServer, html

PER_LIST = 50
EDITS = [("已经", "已"), ("就", "便"), ("的", "之"), ("可以", "可"), ("一些", "一点")]
AD_LINE = "【推广】本站新用户注册即送会员，详情请咨询客服。"
BASE = {"AUTOTHROTTLE_ENABLED": "0", "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "16",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "16", "ROBOTSTXT_OBEY": "0", "LOG_LEVEL": "WARNING",
        "DEPTH_LIMIT": "0", "ZHDEDUP_INFRINGEMENT": "1"}
NO_DEDUP = {"pipelines.fingerprint.FingerprintPipeline": None, "pipelines.dedup.DedupPipeline": None}


def sentence_pool(corpus: str | None) -> list[str]:
    """Sentences to build articles from: the demo content, or a JSONL corpus."""
    texts = [p for s in STORIES for p in s["paragraphs"]] + [p for _, ps in BOOK["chapters"] for p in ps]
    if corpus:
        with open(corpus, encoding="utf-8") as fh:
            texts = [json.loads(line).get("text", "") for line in fh if line.strip()]
    return [s for t in texts for s in re.findall(r"[^。！？]+[。！？]", t) if len(s) > 8]


def make_articles(n: int, pool: list[str], seed: int = 7) -> list[tuple[str, list[str], int | None]]:
    """(title, paragraphs, copy_of) for n pages; every third page is a near copy of an earlier one."""
    rng = random.Random(seed)
    pages: list[tuple[str, list[str], int | None]] = []
    for i in range(n):
        if i % 3 == 2:
            j = rng.randrange(0, i)
            while pages[j][2] is not None:
                j = rng.randrange(0, i)
            title, paragraphs, _ = pages[j]
            old, new = rng.choice(EDITS)
            edited = [p.replace(old, new, 1) for p in paragraphs] + [AD_LINE]
            pages.append((title, edited, j))
            continue
        sentences = rng.sample(pool, min(len(pool), rng.randint(14, 24)))
        paragraphs = ["".join(sentences[k:k + 3]) for k in range(0, len(sentences), 3)]
        pages.append((f"第{i}号新闻 " + sentences[0][:16], paragraphs, None))
    return pages


def build_site(pages: list[tuple[str, list[str], int | None]]) -> dict:
    """Home, list pages of PER_LIST links, and the article pages."""
    site: dict = {}
    lists = (len(pages) + PER_LIST - 1) // PER_LIST
    site["/"] = html("<html><body>" + "".join(f'<a href="/list/{k}.html">第{k}页</a> ' for k in range(lists))
                     + "</body></html>")
    for k in range(lists):
        links = "".join(f'<li><a href="/a/{i}.html">{escape(pages[i][0])}</a></li>'
                        for i in range(k * PER_LIST, min(len(pages), (k + 1) * PER_LIST)))
        site[f"/list/{k}.html"] = html(f"<html><body><ul>{links}</ul></body></html>")
    for i, (title, paragraphs, _) in enumerate(pages):
        body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
        site[f"/a/{i}.html"] = html(
            f'<html><head><meta charset="utf-8"><title>{escape(title)}</title></head><body>'
            f'<div class="nav"><a href="/">首页</a> <a href="/list/0.html">列表</a></div>'
            f'<div class="article"><h1>{escape(title)}</h1><div class="content">{body}</div></div>'
            f'<div class="footer">基准测试站点</div></body></html>')
    return site


def run(label: str, start_url: str, pipelines: dict | None, tmp: Path) -> dict:
    """One crawl on a fresh store database; returns its report plus pages/s."""
    report = tmp / f"{label}-{uuid.uuid4().hex[:6]}.json"
    settings = {**BASE, "ZHDEDUP_REPORT": str(report)}
    if pipelines is not None:
        settings["ITEM_PIPELINES"] = json.dumps(pipelines)
    db = f"bench_{uuid.uuid4().hex[:8]}"
    env = {"ZHDEDUP_DB": db, "ZHDEDUP_PREFIX": f"{db}:"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = scrapy_crawl("news", {"start_urls": start_url, "sitemaps": "0"}, settings, env=env, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not report.exists():
        raise SystemExit(f"{label} crawl failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text(encoding="utf-8"))
    data["pages_per_s"] = data["responses"] / data["elapsed_seconds"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data["cpu_ms_per_page"] = 1000 * cpu / max(1, data["responses"])  # crawler process, start-up included
    drop_database(db)
    return data


def drop_database(db: str) -> None:
    """Remove the benchmark's data again (same servers, same env as the crawl)."""
    from storage import StoreConfig, open_store

    store = open_store(StoreConfig.from_env(db_name=db, key_prefix=f"{db}:"))
    try:
        store.drop_all()
    finally:
        store.close()


def embedded_running() -> tuple[str, dict[str, bool]]:
    """The embedded servers' var dir and which of them already run (None of ours to stop if configured)."""
    from storage import StoreConfig
    from storage import servers as srv

    config = StoreConfig.from_env()
    if config.mongo_uri and config.redis_url:
        return str(config.var_path), {"redis": True, "mongo": True}
    return str(config.var_path), {n: srv.info(config.var_path, n).running for n in ("redis", "mongo")}


def stop_started(var_dir: str, before: dict[str, bool]) -> None:
    """Stop the embedded servers this benchmark had to start (leave running ones alone)."""
    from storage import servers as srv

    started = tuple(n for n, running in before.items() if not running)
    if started:
        srv.stop(var_dir, started)


def main(argv: list[str] | None = None) -> int:
    """Generate, serve, crawl twice per round, print."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_crawl", description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=2000, help="article pages (default 2000)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of (baseline, full), alternating (default 2)")
    ap.add_argument("--corpus", help="JSONL file with a 'text' field per line (default: demo sentences)")
    args = ap.parse_args(argv)
    pages = make_articles(args.pages, sentence_pool(args.corpus))
    server = SiteServer({"bench": build_site(pages)}).start()
    base = server.base("bench") + "/"
    from crawler.settings import ITEM_PIPELINES

    baseline = {**ITEM_PIPELINES, **NO_DEDUP}
    results: dict[str, list[dict]] = {"baseline": [], "full": []}
    var_dir, before = embedded_running()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
            for r in range(args.repeat):
                for label, pipes in (("baseline", baseline), ("full", None)):
                    data = run(label, base, pipes, Path(tmp))
                    results[label].append(data)
                    c = data["counts"]
                    print(f"round {r + 1} {label:<8} {data['responses']:>5} responses in {data['elapsed_seconds']:6.1f} s "
                          f"= {data['pages_per_s']:6.1f} pages/s, crawler CPU (incl. start-up) {data['cpu_ms_per_page']:5.1f} ms/page; "
                          f"stored {c.get('stored', 0)}, exact dups "
                          f"{c.get('dropped/exact', 0)}, near dups {c.get('dropped/near', 0)}", flush=True)
    finally:
        server.stop()
        stop_started(var_dir, before)
    best = {k: max(d["pages_per_s"] for d in v) for k, v in results.items()}
    cpu = {k: min(d["cpu_ms_per_page"] for d in v) for k, v in results.items()}
    ratio = best["full"] / best["baseline"]
    near = sum(1 for p in pages if p[2] is not None)
    print(f"\nsite: {args.pages} article pages ({near} near copies) + {len(pages) // PER_LIST + 1} list pages; "
          f"{os.cpu_count()} CPUs")
    print(f"without fingerprint+dedup: {best['baseline']:6.1f} pages/s (best round), {cpu['baseline']:5.1f} CPU ms/page")
    print(f"full pipeline:             {best['full']:6.1f} pages/s (best round), {cpu['full']:5.1f} CPU ms/page")
    print(f"ratio: {ratio:.0%} (goal >= 80%) -> {'OK' if ratio >= 0.8 else 'BELOW GOAL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
