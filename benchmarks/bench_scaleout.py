"""Scale-out benchmark: pages/s with 1, 2 and 3 `scrapy crawl news` processes sharing one Redis queue.

    python -m benchmarks.bench_scaleout [--stories 500] [--procs 1,2,3]

The generated site: every story (real Chinese news from ../shared/data/news_sina_dev.jsonl, cut into
paragraphs) is published on three hosts of 127.0.0.1: the original, a copy with different boilerplate,
and a copy with one small word change (SimHash within 2 bits) and yet another layout; so a third of the
pages are kept and two thirds are duplicates. Every process runs the full pipeline (extract,
fingerprint, dedup, infringement, store) on the embedded Redis and MongoDB-wire servers (or MONGO_URI /
REDIS_URL). The 3-process test (tests/scaleout/) uses the same site, server and runner.

Measured: pages/s from the moment all N workers are registered (the site's gate opens) to the last
HTTP hit; Redis commands per page (INFO total_commands_processed delta, Lua inner calls included) and
Redis round trips per page (client side: every request a redis-py connection sends, counted in each
crawler process; a pipeline or a Lua call is one).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

PROJECT_ROOT = Path(__file__).resolve().parents[1]
from benchmarks.shared_data import DATA_DIR as DATA

HOSTS = ("a", "b", "c")
PER_LIST = 10
# word swaps that barely move a SimHash; the first one that keeps the distance in 1..2 is used
SWAPS = [("已经", "已"), ("但是", "但"), ("因为", "因"), ("表示", "称"), ("目前", "眼下"), ("进行", "开展"),
         ("没有", "没"), ("记者", "本报记者"), ("这个", "此"), ("非常", "十分"), ("可以", "能"), ("如果", "假如")]
FAST = {"AUTOTHROTTLE_ENABLED": "0", "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
        "ROBOTSTXT_OBEY": "1", "LOG_LEVEL": "INFO"}
# stock scrapy-redis for comparison (1 process only: its spiders close as soon as their own process idles)
STOCK = {"SCHEDULER": "scrapy_redis.scheduler.Scheduler",
         "SCHEDULER_QUEUE_CLASS": "scrapy_redis.queue.PriorityQueue",
         "SCHEDULER_SERIALIZER": "scrapy_redis.picklecompat",
         "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter"}


# --- the generated site ----------------------------------------------------------------------------


@dataclass
class Story:
    """One story: its paragraphs and its near copy (one word swapped)."""

    sid: int
    title: str
    paragraphs: list[str]
    changed: list[str]


def _paragraphs(text: str) -> list[str]:
    """Sentences grouped three to a paragraph."""
    sentences = [s for s in re.split(r"(?<=[。！？])", text) if s.strip()]
    return ["".join(sentences[i:i + 3]) for i in range(0, len(sentences), 3)]


def _near_copy(paragraphs: list[str], simhash: Any, base: int, hamming: Any) -> list[str] | None:
    """The paragraphs with one word swapped, SimHash distance 1..2 from the original; None if no swap fits."""
    for old, new in SWAPS:
        for i, p in enumerate(paragraphs):
            if old in p:
                changed = paragraphs[:i] + [p.replace(old, new, 1)] + paragraphs[i + 1:]
                if 1 <= hamming(base, simhash("\n".join(changed))) <= 2:
                    return changed
    return None


def _real_texts(data: Path) -> Iterator[tuple[str, str]]:
    """(title, text) of the shared real news corpus (not in the repository; see ../shared/data/README)."""
    with (data / "news_sina_dev.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            yield d.get("title") or "", d.get("text") or ""


def _generated_texts() -> Iterator[tuple[str, str]]:
    """(title, text) made of jieba's common words (seeded, so every run is the same): the fallback when
    the shared corpus is not there, e.g. on a fresh CI machine."""
    import random

    import jieba

    with open(Path(jieba.__file__).with_name("dict.txt"), encoding="utf-8") as f:
        words = [w for w, freq, *_ in (line.split() for line in f) if int(freq) > 2000 and len(w) >= 2]
    rng = random.Random(8)
    while True:
        sentences = ["".join(rng.choices(words, k=rng.randint(6, 14))) + rng.choice("，。。！") for _ in range(40)]
        text = "".join(sentences).replace("，", "。", 1) + "据悉，目前已经进行了调查。"
        yield "".join(rng.choices(words, k=4)), text


def load_stories(n: int, data: Path = DATA) -> list[Story]:
    """n stories pairwise far apart (SimHash distance > 10, distinct content), each with a near copy:
    real news from the shared corpus when it is there, generated text otherwise."""
    from fingerprint import HammingIndex, content_hash, hamming, simhash

    source = _real_texts(data) if (data / "news_sina_dev.jsonl").exists() else _generated_texts()
    index, hashes, stories = HammingIndex(k=10), set(), []
    for title, text in source:
        if not 500 <= len(text) <= 1500:
            continue
        paragraphs = _paragraphs(text)
        body = "\n".join(paragraphs)
        fp, ch = simhash(body), content_hash(body)
        if len(paragraphs) < 3 or ch in hashes or index.query(fp):
            continue
        changed = _near_copy(paragraphs, simhash, fp, hamming)
        if changed is None:
            continue
        index.add(fp, len(stories))
        hashes.add(ch)
        stories.append(Story(len(stories), title or f"story {len(stories)}", paragraphs, changed))
        if len(stories) == n:
            return stories
    raise ValueError(f"only {len(stories)} usable stories, {n} wanted")


def article_path(sid: int) -> str:
    """Article URL path (date + 5-digit id: article-shaped for the news spider)."""
    return f"/news/2018/1101/{10000 + sid}.html"


def _layout(host: str, title: str, body: str, links: str) -> str:
    """Three different page templates: navigation, ads and footers differ, the article block does not."""
    if host == "a":
        return (f"<html><head><meta charset='utf-8'><title>{title} - 甲日报</title></head><body>"
                "<ul class='nav'><li><a href='/'>首页</a></li><li><a href='/list/1.html'>要闻</a></li></ul>"
                f"<div class='article'><h1>{title}</h1><div class='info'>2018-11-01 来源：甲日报</div>"
                f"<div class='content'>{body}</div></div><div class='related'>{links}</div>"
                "<div class='footer'>甲日报 版权所有 京ICP备000001号</div></body></html>")
    if host == "b":
        return (f"<html><head><meta charset='utf-8'><title>{title}_乙网</title></head><body>"
                "<div id='top'><a href='/'>乙网首页</a> | <a href='/list/1.html'>滚动新闻</a> | 客户端下载</div>"
                "<div class='ad'>广告：点击领取新人红包</div><div class='main'>"
                f"<h2>{title}</h2><div id='text'>{body}</div>"
                f"</div><div class='side'><h3>热门推荐</h3><ul><li>{links}</li></ul></div>"
                "<p class='copy'>转载自甲日报 乙网 免责声明：本文仅代表作者观点</p></body></html>")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>【丙】{title}</title></head><body>"
            "<header><a href='/'>丙资讯</a><span>登录 注册</span></header>"
            f"<main><article><h1 class='t'>{title}</h1><section class='body'>{body}</section></article></main>"
            f"<aside>相关阅读 {links}<div class='ad'>扫码关注公众号</div></aside>"
            "<footer>丙资讯 联系我们 举报电话 12345</footer></body></html>")


def build_site(host: str, stories: list[Story]) -> dict[str, bytes]:
    """One host's pages: index -> list pages -> articles (each article links back and to two others)."""
    from html import escape

    pages: dict[str, str] = {}
    n_lists = (len(stories) + PER_LIST - 1) // PER_LIST
    pages["/"] = ("<html><head><meta charset='utf-8'><title>首页</title></head><body><ul>"
                  + "".join(f"<li><a href='/list/{i}.html'>新闻列表 {i}</a></li>" for i in range(1, n_lists + 1))
                  + "</ul></body></html>")
    for i in range(1, n_lists + 1):
        chunk = stories[(i - 1) * PER_LIST:i * PER_LIST]
        items = "".join(f"<li><a href='{article_path(s.sid)}'>{escape(s.title)}</a></li>" for s in chunk)
        pages[f"/list/{i}.html"] = (f"<html><head><meta charset='utf-8'><title>列表 {i}</title></head><body>"
                                    f"<ul class='list'>{items}</ul><a href='/'>首页</a></body></html>")
    for s in stories:
        paragraphs = s.changed if host == "c" else s.paragraphs
        body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
        others = [stories[(s.sid + d) % len(stories)] for d in (1, 2)]
        links = "".join(f"<a href='{article_path(o.sid)}?from=related'>{escape(o.title)}</a> " for o in others)
        pages[article_path(s.sid)] = _layout(host, escape(s.title), body, links)
    pages["/robots.txt"] = "User-agent: *\nAllow: /\n"
    return {p: t.encode("utf-8") for p, t in pages.items()}


class _Handler(BaseHTTPRequestHandler):
    """Serves one host's pages after the gate opens; counts every request by path."""

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        """Count the hit, wait for the gate, serve the page or a 404."""
        srv: Any = self.server
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        srv.gate.wait(60)
        with srv.lock:
            srv.hits[path] = srv.hits.get(path, 0) + 1
            srv.last_hit = time.monotonic()
        if srv.delay:
            time.sleep(srv.delay)
        body = srv.pages.get(path)
        status = 200 if body is not None else 404
        body = body if body is not None else b"<html><body><h1>404 Not Found</h1></body></html>"
        self.send_response(status)
        ctype = "text/plain; charset=utf-8" if path.endswith(".txt") else "text/html; charset=utf-8"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet."""


class _Server(ThreadingHTTPServer):
    """A threaded server that does not print a traceback when a client hangs up (crawlers cancel)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore client disconnects; report anything else."""
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class SiteServer:
    """The three hosts on free ports of 127.0.0.1, with a shared start gate and per-path hit counts."""

    def __init__(self, stories: list[Story], delay: float = 0.0) -> None:
        self.gate = threading.Event()
        self.servers: dict[str, ThreadingHTTPServer] = {}
        for host in HOSTS:
            srv: Any = _Server(("127.0.0.1", 0), _Handler)
            srv.pages, srv.hits, srv.lock = build_site(host, stories), {}, threading.Lock()
            srv.gate, srv.delay, srv.last_hit = self.gate, delay, 0.0
            self.servers[host] = srv
        self.threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in self.servers.values()]

    def __enter__(self) -> "SiteServer":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        for s in self.servers.values():
            s.shutdown()
            s.server_close()

    def base(self, host: str) -> str:
        """http://127.0.0.1:PORT of a host."""
        return f"http://127.0.0.1:{self.servers[host].server_address[1]}"

    def hits(self) -> dict[str, int]:
        """URL -> number of requests served."""
        return {self.base(h) + p: n for h, s in self.servers.items() for p, n in s.hits.items()}

    def last_hit(self) -> float:
        """monotonic time of the last request on any host."""
        return max(s.last_hit for s in self.servers.values())


# --- crawler processes ----------------------------------------------------------------------------

BOOT = """
import atexit, os, sys, redis.connection as rc
count = [0]
orig = rc.AbstractConnection.send_packed_command
def counted(self, command, check_health=True):
    count[0] += 1
    return orig(self, command, check_health)
rc.AbstractConnection.send_packed_command = counted
atexit.register(lambda: open(os.environ["ZHDEDUP_BENCH_RT_FILE"], "w").write(str(count[0])))
from scrapy.cmdline import execute
sys.argv = ["scrapy"] + sys.argv[1:]
execute()
"""


@dataclass
class Worker:
    """One `scrapy crawl news` process of a distributed crawl."""

    proc: subprocess.Popen
    log: Path
    report: Path
    rt_file: Path
    result: dict = field(default_factory=dict)

    def finish(self, timeout: float) -> None:
        """Wait for the process (kill it after timeout) and read its report."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.report.exists():
            self.result = json.loads(self.report.read_text(encoding="utf-8"))

    @property
    def counts(self) -> dict[str, Any]:
        """The zhdedup/* counts of this process."""
        return self.result.get("counts", {})

    @property
    def round_trips(self) -> int:
        """Redis requests this process sent (0 when not counted)."""
        return int(self.rt_file.read_text()) if self.rt_file.exists() and self.rt_file.read_text() else 0

    def stat(self, name: str) -> int:
        """An integer Scrapy stat from the stats dump at the end of the log (0 when absent)."""
        found = re.findall(rf"'{re.escape(name)}': (\d+)", self.tail(20_000))
        return int(found[-1]) if found else 0

    def tail(self, n: int = 3000) -> str:
        """The end of the process log."""
        return self.log.read_text(encoding="utf-8", errors="replace")[-n:] if self.log.exists() else ""


def store_env(config: Any) -> dict[str, str]:
    """Environment that points a crawler process at the same store (db name, key prefix, servers)."""
    return {"MONGO_URI": config.mongo_uri, "REDIS_URL": config.redis_url, "ZHDEDUP_DB": config.db_name,
            "ZHDEDUP_PREFIX": config.key_prefix, "ZHDEDUP_VAR": str(config.var_dir)}


def start_workers(n: int, start_urls: list[str], env: dict[str, str], tmp: Path,
                  settings: dict[str, str] | None = None) -> list[Worker]:
    """Start n `scrapy crawl news -a start_urls=...` processes in distributed mode (-s ZHDEDUP_DISTRIBUTED=1)."""
    workers = []
    for i in range(n):
        report, log, rt = tmp / f"report-{i}.json", tmp / f"worker-{i}.log", tmp / f"rt-{i}.txt"
        all_settings = {**FAST, "ZHDEDUP_DISTRIBUTED": "1", "ZHDEDUP_REPORT": str(report),
                        "DISTRIBUTED_IDLE_CLOSE_SECONDS": "2", **(settings or {})}
        cmd = [sys.executable, "-c", BOOT, "crawl", "news", "-a", "start_urls=" + ",".join(start_urls)]
        for key, value in all_settings.items():
            cmd += ["-s", f"{key}={value}"]
        full_env = {**os.environ, **env, "ZHDEDUP_BENCH_RT_FILE": str(rt)}
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), full_env.get("PYTHONPATH")]))
        with log.open("w") as out:
            proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        workers.append(Worker(proc, log, report, rt))
    return workers


def wait_registered(workers: list[Worker], timeout: float = 120) -> None:
    """Block until every worker has opened its spider and scheduler (its log says so)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all("Spider opened" in w.tail(10**6) for w in workers):
            return
        dead = [w for w in workers if w.proc.poll() is not None]
        if dead:
            raise RuntimeError(f"a crawler exited before the crawl started:\n{dead[0].tail()}")
        time.sleep(0.1)
    raise TimeoutError("not every worker opened its scheduler:\n" + "\n".join(w.tail(1500) for w in workers))


# --- benchmark ------------------------------------------------------------------------------------


@contextlib.contextmanager
def session_servers(var: Path) -> Iterator[tuple[str, str]]:
    """(mongo_uri, redis_url): MONGO_URI / REDIS_URL when set, else embedded servers started under var."""
    from storage import servers as srv

    mongo, redis_url, started = os.environ.get("MONGO_URI"), os.environ.get("REDIS_URL"), []
    if not redis_url:
        redis_url, started = srv.ensure(var, "redis").uri, started + ["redis"]
    if not mongo:
        mongo, started = srv.ensure(var, "mongo").uri, started + ["mongo"]
    try:
        yield mongo, redis_url
    finally:
        if started:
            srv.stop(var, tuple(started))


@contextlib.contextmanager
def cluster_url(wanted: bool, root: Path) -> Iterator[str | None]:
    """The URL of a 3-master Redis Cluster started under root for this run (None when not wanted)."""
    if not wanted:
        yield None
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location("cluster_fixture", PROJECT_ROOT / "tests" / "cluster_fixture.py")
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    if fixture.missing():
        raise SystemExit(f"--cluster: {fixture.missing()}")
    cluster = fixture.RedisClusterProcs(root).start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


def proc_cpu(pid: int | list[int] | None) -> float:
    """CPU seconds (user + system) running processes have used so far (0 when it cannot be read)."""
    if isinstance(pid, list):
        return sum(proc_cpu(p) for p in pid)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def redis_info(url: str, section: str) -> list[dict]:
    """INFO section of the Redis at url: one dict per node (every primary of a Redis Cluster)."""
    from redis.cluster import RedisCluster

    from storage.connection import redis_client

    r = redis_client(url)
    if isinstance(r, RedisCluster):
        return list(r.info(section, target_nodes=RedisCluster.PRIMARIES).values())
    return [r.info(section)]


def server_pids(config: Any) -> dict[str, list[int]]:
    """Process ids of the Redis (every cluster node) and MongoDB-wire servers (from the servers; local ones only)."""
    import pymongo

    pids: dict[str, list[int]] = {"redis": [], "mongo": []}
    try:
        pids["redis"] = [int(i["process_id"]) for i in redis_info(config.redis_url, "server")]
        with pymongo.MongoClient(config.mongo_uri, serverSelectionTimeoutMS=2000) as client:
            pids["mongo"] = [int(client.admin.command("serverStatus").get("pid") or 0)]
    except Exception:  # remote or unusual servers: no CPU breakdown for them
        pass
    return pids


def run_crawl(n: int, stories: list[Story], config: Any, tmp: Path, delay: float = 0.0,
              settings: dict[str, str] | None = None, timeout: float = 600) -> dict[str, Any]:
    """One distributed crawl of the generated site by n processes; timings, hits, reports, Redis counters
    and the CPU seconds each part used between the gate opening and the last worker's exit."""
    import resource

    pids = server_pids(config)
    with SiteServer(stories, delay=delay) as site:
        workers = start_workers(n, [site.base(h) + "/" for h in HOSTS], store_env(config), tmp, settings)
        try:
            wait_registered(workers)
            before = _commands(config.redis_url)
            startup = sum(proc_cpu(w.proc.pid) for w in workers)
            servers0 = {k: proc_cpu(v) for k, v in pids.items()}
            self0, children0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            site.gate.set()
            for w in workers:
                w.finish(timeout)
            t_end = time.monotonic()
            self1, children1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = {k: proc_cpu(v) - servers0[k] for k, v in pids.items()}
            commands = _commands(config.redis_url) - before
        finally:
            for w in workers:
                if w.proc.poll() is None:
                    w.proc.kill()
                    w.proc.wait()
        cpu["crawlers"] = (children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime) - startup
        cpu["http"] = self1.ru_utime + self1.ru_stime - self0.ru_utime - self0.ru_stime
        last = site.last_hit()
        return {"workers": workers, "hits": site.hits(), "seconds": last - t0, "wall": t_end - t0,
                "commands": commands, "round_trips": sum(w.round_trips for w in workers),
                "scheduler_round_trips": sum(w.stat("distributed/redis_round_trips") for w in workers),
                "cpu": cpu}


def _commands(url: str) -> int:
    """Commands the Redis server(s) processed so far (summed over a cluster's primaries)."""
    return sum(int(i["total_commands_processed"]) for i in redis_info(url, "stats"))


def bench_one(n: int, kind: str, stories: list[Story], servers: tuple[str, str], tmp: Path) -> tuple[tuple, tuple]:
    """One crawl on a fresh database and key prefix: (table row, CPU row)."""
    from storage import StoreConfig, open_store

    tag, label = uuid.uuid4().hex[:8], f"{n}" + (" stock" if kind == "stock" else "")
    config = StoreConfig(mongo_uri=servers[0], redis_url=servers[1], var_dir=str(tmp / f"var{n}{kind}"),
                         db_name=f"bench_scaleout_{tag}", key_prefix=f"bso{tag}:")
    run_dir = tmp / f"run{n}{kind}"
    run_dir.mkdir()
    store = open_store(config)
    try:
        res = run_crawl(n, stories, config, run_dir, settings=STOCK if kind == "stock" else None)
        pages = sum(v for k, v in res["hits"].items() if "/news/" in k or "/list/" in k or k.endswith("/"))
        twice = sum(1 for k, v in res["hits"].items() if v > 1 and not k.endswith(".txt"))
        stored, dups = store.pages.count_documents({}), store.duplicates.count_documents({})
        for w in res["workers"]:
            if w.proc.returncode != 0:
                print(f"worker failed:\n{w.tail()}", file=sys.stderr)
    finally:
        store.drop_all()
        store.close()
    row = (label, pages, res["seconds"], pages / res["seconds"], res["wall"], res["commands"] / pages,
           res["round_trips"] / pages, res["scheduler_round_trips"] / pages, stored, dups, twice)
    return row, (label, {k: 1000 * v / pages for k, v in res["cpu"].items()})


def print_tables(rows: list[tuple], cpu_rows: list[tuple]) -> None:
    """The rate / Redis table and the CPU table."""
    print(f"\n{'procs':>8} {'pages':>6} {'crawl s':>8} {'pages/s':>8} {'wall s':>7} {'redis cmds/page':>16} "
          f"{'RT/page all':>12} {'RT/page queue':>14} {'stored':>7} {'dups':>6} {'fetched twice':>14}")
    for n, pages, secs, rate, wall, cmds, rts, qrts, stored, dups, twice in rows:
        print(f"{n:>8} {pages:>6} {secs:>8.1f} {rate:>8.1f} {wall:>7.1f} {cmds:>16.1f} {rts:>12.1f} {qrts:>14.1f} "
              f"{stored:>7} {dups:>6} {twice:>14}")
    print(f"\nCPU ms per page (between gate open and the last exit; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end)")
    print(f"{'procs':>8} {'crawlers':>9} {'mongo-wire':>11} {'redis':>7} {'http site':>10} {'total':>7} "
          f"{'ceiling pages/s':>16}")
    for n, c in cpu_rows:
        total = sum(c.values())
        ceiling = f"{1000 * (os.cpu_count() or 1) / total:.0f}" if total else "?"
        print(f"{n:>8} {c.get('crawlers', 0):>9.1f} {c.get('mongo', 0):>11.1f} {c.get('redis', 0):>7.1f} "
              f"{c.get('http', 0):>10.1f} {total:>7.1f} {ceiling:>16}")
    print("ceiling: cores x 1000 / total CPU ms per page, the rate at which this machine's cores are all busy.")
    print("RT/page all: every Redis request of the crawler processes (queue + dedup + infringement index);"
          " RT/page queue: the scheduler's share (stock scrapy-redis: not counted, 0).")
    print("crawl s: gate open (all workers registered) to the last HTTP hit; wall s adds the "
          "idle-close wait (2 s) and shutdown. Redis cmds include the commands Lua scripts run inside.")


def main(argv: list[str] | None = None) -> int:
    """Crawl the generated site with 1, 2, 3 processes and print pages/s and Redis cost per page."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stories", type=int, default=500, help="stories; pages = 3 x stories (default 500)")
    parser.add_argument("--procs", default="1,2,3", help="process counts to run (default 1,2,3)")
    parser.add_argument("--cluster", action="store_true",
                        help="run against a 3-master Redis Cluster started here from redis-server (tests/cluster_fixture.py)")
    parser.add_argument("--stock", action="store_true",
                        help="also run 1 process on stock scrapy-redis (Scheduler, PriorityQueue, pickle) to compare")
    args = parser.parse_args(argv)
    t = time.monotonic()
    stories = load_stories(args.stories)
    print(f"site: {len(stories)} stories x 3 hosts = {3 * len(stories)} articles "
          f"(+{3 * ((len(stories) + PER_LIST - 1) // PER_LIST + 1)} list/index pages); "
          f"generated in {time.monotonic() - t:.1f} s; {os.cpu_count()} cores")
    runs = [(int(x), "adapter") for x in args.procs.split(",")] + ([(1, "stock")] if args.stock else [])
    rows, cpu_rows = [], []
    with tempfile.TemporaryDirectory(prefix="zhdedup-bench-scaleout-") as tmpdir:
        tmp = Path(tmpdir)
        with session_servers(tmp / "servers") as servers, cluster_url(args.cluster, tmp / "cluster") as url:
            servers = (servers[0], url or servers[1])
            print(f"Redis: {'3-master Redis Cluster at ' + url if url else servers[1]}")
            for n, kind in runs:
                row, cpu_row = bench_one(n, kind, stories, servers, tmp)
                rows.append(row)
                cpu_rows.append(cpu_row)
    print_tables(rows, cpu_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
