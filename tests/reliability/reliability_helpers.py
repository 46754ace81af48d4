"""Shared parts of the fault-injection suite: a slow generated news site, crawler subprocesses that can
be killed, and the one assertion every test ends with (each story stored once, every copy recorded).

The site has ORIGINALS distinct stories on host A (home -> list pages -> articles) and host B with an
exact copy (another layout) of every third story plus a few stories of its own. With `copies` naming
"near" and/or "passages", host C adds a SimHash copy (a few characters added) of stories 1, 4, 7, ... and
a passage copy (sentences shuffled, a few added: SimHash misses it, aligned passages catch it) of stories
2, 5, 8, ...; each copy is checked against its story with the dedup engine before it is served. Every
response waits DELAY seconds, so a 40-page crawl takes a few seconds and a kill lands in the middle of it.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterator

from crawler.demo_site.content import BOOK, STORIES
from crawler.demo_site.server import Resource, SiteServer

PROJECT = Path(__file__).resolve().parents[2]
ORIGINALS = 24          # stories on site A
OWN_B = 4               # stories only on site B
PER_LIST = 6
DELAY = 0.08            # seconds per response
CONCURRENT = 4          # requests in flight at most (CONCURRENT_REQUESTS)
FAST = {"AUTOTHROTTLE_ENABLED": "0", "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": str(CONCURRENT),
        "CONCURRENT_REQUESTS_PER_DOMAIN": "2", "ROBOTSTXT_OBEY": "0", "DEPTH_LIMIT": "0",
        "LOG_LEVEL": "INFO", "ZHDEDUP_INFRINGEMENT": "0", "RETRY_TIMES": "2"}


def _pool() -> list[str]:
    """Sentences of the project's demo content."""
    import re

    texts = [p for s in STORIES for p in s["paragraphs"]] + [p for _, ps in BOOK["chapters"] for p in ps]
    return sorted({s for t in texts for s in re.findall(r"[^。！？]+[。！？]", t) if len(s) > 8})


def make_stories(n: int, seed: int = 11) -> list[tuple[str, list[str]]]:
    """n stories far apart in SimHash (checked), as (title, paragraphs)."""
    from fingerprint import fingerprint_text, hamming

    rng, pool = random.Random(seed), _pool()
    out: list[tuple[str, list[str]]] = []
    hashes: list[int] = []
    while len(out) < n:
        sentences = rng.sample(pool, min(len(pool), 12))
        paragraphs = [f"编号{len(out)}的报道。"] + ["".join(sentences[k:k + 3]) for k in range(0, 12, 3)]
        fp = fingerprint_text("\n".join(paragraphs)).simhash
        if all(hamming(fp, h) > 8 for h in hashes):
            out.append((f"第{len(out)}号新闻", paragraphs))
            hashes.append(fp)
    return out


def near_copy(paragraphs: list[str], seed: int) -> list[str]:
    """A copy SimHash finds within k (two characters added to one paragraph), checked with the engine."""
    return _copy_found_by(paragraphs, seed, "simhash", _insert_words)


def passage_copy(paragraphs: list[str], seed: int) -> list[str]:
    """A copy only aligned passages find (sentences shuffled, 1-3 sentences added), checked with the engine."""
    return _copy_found_by(paragraphs, seed, "passages", _shuffle_sentences)


def _insert_words(paragraphs: list[str], rng: random.Random, attempt: int) -> list[str]:
    out = list(paragraphs)
    i = rng.randrange(1, len(out))
    j = rng.randrange(len(out[i]) - 2)
    out[i] = out[i][:j] + "据悉" + out[i][j:]
    return out


def _shuffle_sentences(paragraphs: list[str], rng: random.Random, attempt: int) -> list[str]:
    import re

    sentences = [s for p in paragraphs[1:] for s in re.findall(r"[^。！？]+[。！？]", p)]
    rng.shuffle(sentences)
    for extra in rng.sample([s for s in _pool() if s not in sentences], 1 + attempt % 3):
        sentences.insert(rng.randrange(len(sentences)), extra)
    return [paragraphs[0]] + ["".join(sentences[k:k + 4]) for k in range(0, len(sentences), 4)]


def _copy_found_by(paragraphs: list[str], seed: int, method: str,
                   edit: Callable[[list[str], random.Random, int], list[str]]) -> list[str]:
    from fingerprint.neardup import is_near_duplicate

    rng = random.Random(seed)
    for attempt in range(60):
        copy = edit(paragraphs, rng, attempt)
        if is_near_duplicate("\n".join(paragraphs), "\n".join(copy)).method == method:
            return copy
    raise AssertionError(f"no {method} copy of story {paragraphs[0]!r} in 60 attempts")


# settings of a shared (distributed) crawl with short timers, for tests of several workers
DISTRIBUTED = {"ZHDEDUP_DISTRIBUTED": "1", "DISTRIBUTED_WORKER_TTL": "2", "DISTRIBUTED_IDLE_CLOSE_SECONDS": "1.5"}

class ArticleGate:
    """Lets the sites answer only the first `limit` article requests while held; later ones wait (in the
    server) until release. A test that kills or stops a crawl "mid-crawl" holds the gate, so the crawl
    cannot finish before the kill however slow or fast the machine is."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.limit: int | None = None   # None: open
        self.served = 0

    def hold_after(self, limit: int) -> None:
        """From now on, answer `limit` more article requests, then hold the rest until release()."""
        with self._cond:
            self.limit, self.served = limit, 0

    def release(self) -> None:
        """Answer every held and later request."""
        with self._cond:
            self.limit = None
            self._cond.notify_all()

    def passing(self, timeout: float = 120.0) -> None:
        """Called by an article response before it is sent: wait while the gate is held and used up."""
        with self._cond:
            self.served += 1
            if self.limit is not None and self.served > self.limit:
                self._cond.wait_for(lambda: self.limit is None, timeout)


def _slow(body: bytes, delay: float, gate: ArticleGate | None = None) -> Resource:
    def payload() -> bytes:
        if gate is not None:
            gate.passing()
        time.sleep(delay)
        return body
    return Resource(payload, headers={"Content-Type": "text/html; charset=utf-8"})


def _article(title: str, paragraphs: list[str], layout: str) -> str:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    if layout == "a":
        return (f'<html><head><meta charset="utf-8"><title>{escape(title)} - A报</title></head><body>'
                f'<div class="nav"><a href="/">首页</a></div><div class="article"><h1>{escape(title)}</h1>'
                f'<div class="content">{body}</div></div><div class="footer">A报 版权所有</div></body></html>')
    return (f'<html><head><meta charset="utf-8"><title>{escape(title)}_B网</title></head><body>'
            f'<div class="top"><a href="/">B网</a></div><div class="main"><h1>{escape(title)}</h1>'
            f'<div id="artibody">{body}</div></div><div class="side"><a href="/">热门</a></div></body></html>')


def _listing(paths: list[str], pages: int, prefix: str) -> dict[str, str]:
    """Home + list pages (PER_LIST links each, chained with 下一页) over paths."""
    out = {}
    lists = max(1, -(-len(paths) // PER_LIST))
    out["/"] = "".join(f'<a href="{prefix}{k}.html">第{k}页</a> ' for k in range(min(lists, 2)))
    for k in range(lists):
        links = "".join(f'<li><a href="{p}">文章</a></li>' for p in paths[k * PER_LIST:(k + 1) * PER_LIST])
        nxt = f'<a href="{prefix}{k + 1}.html">下一页</a>' if k + 1 < lists else ""
        out[f"{prefix}{k}.html"] = f"<ul>{links}</ul>{nxt}"
    return {p: f'<html><head><meta charset="utf-8"><title>列表</title></head><body>{b}</body></html>'
            for p, b in out.items()}


@dataclass
class Expected:
    """Which URLs carry which story (story id -> urls)."""

    groups: dict[int, list[str]] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        """Article URLs in total."""
        return sum(len(v) for v in self.groups.values())


class NewsSites:
    """Sites A and B on 127.0.0.1 (own ports), slowed by `delay` per response."""

    def __init__(self, originals: int = ORIGINALS, own_b: int = OWN_B, delay: float = DELAY,
                 copies: tuple[str, ...] = ("exact",)) -> None:
        stories = make_stories(originals + own_b)
        self.gate = ArticleGate()
        a_paths = [f"/news/{i}.html" for i in range(originals)]
        copied = list(range(0, originals, 3))
        b_stories = copied + list(range(originals, originals + own_b))
        b_paths = [f"/c/{i}.html" for i in b_stories]
        site_a = {p: _slow(h.encode(), delay) for p, h in _listing(a_paths, 0, "/list/").items()}
        site_b = {p: _slow(h.encode(), delay) for p, h in _listing(b_paths, 0, "/l/").items()}
        for i, path in enumerate(a_paths):
            site_a[path] = _slow(_article(*stories[i], "a").encode(), delay, self.gate)
        for i, path in zip(b_stories, b_paths):
            site_b[path] = _slow(_article(*stories[i], "b").encode(), delay, self.gate)
        c_copies = {i: (near_copy if i % 3 == 1 else passage_copy)(stories[i][1], i) for i in range(originals)
                    if (i % 3 == 1 and "near" in copies) or (i % 3 == 2 and "passages" in copies)}
        c_paths = [f"/x/{i}.html" for i in c_copies]
        sites = {"a": site_a, "b": site_b}
        if c_copies:
            site_c = {p: _slow(h.encode(), delay) for p, h in _listing(c_paths, 0, "/lc/").items()}
            for (i, paragraphs), path in zip(c_copies.items(), c_paths):
                site_c[path] = _slow(_article(stories[i][0], paragraphs, "b").encode(), delay, self.gate)
            sites["c"] = site_c
        self.server = SiteServer(sites).start()
        self.hosts = list(sites)
        a, b = self.server.base("a"), self.server.base("b")
        self.expected = Expected({i: [a + p] for i, p in enumerate(a_paths)})
        for i, path in zip(b_stories, b_paths):
            self.expected.groups.setdefault(i, []).append(b + path)
        for i, path in zip(c_copies, c_paths):
            self.expected.groups[i].append(self.server.base("c") + path)

    @property
    def start_urls(self) -> str:
        """Both home pages, comma separated (the news spider's start_urls argument)."""
        return ",".join(f"{self.server.base(h)}/" for h in self.hosts)

    def article_hits(self) -> dict[str, int]:
        """How often each article URL was fetched."""
        out = {}
        for name in self.hosts:
            base = self.server.base(name)
            for path, n in self.server.hits(name).items():
                if path.startswith(("/news/", "/c/", "/x/")):
                    out[base + path] = n
        return out

    @contextmanager
    def held_after(self, articles: int) -> Iterator[None]:
        """Inside: at most `articles` more article requests are answered, the rest wait (released on exit)."""
        self.gate.hold_after(articles)
        try:
            yield
        finally:
            self.gate.release()

    def stop(self) -> None:
        """Stop serving."""
        self.gate.release()
        self.server.stop()


def crawl_env(config=None, var_dir: Path | None = None, db: str | None = None) -> dict[str, str]:
    """Environment of a crawler subprocess: the given store config, or embedded servers under var_dir."""
    env = {k: v for k, v in os.environ.items() if k not in ("MONGO_URI", "REDIS_URL")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), env.get("PYTHONPATH")]))
    if config is not None:
        env.update(MONGO_URI=config.mongo_uri, REDIS_URL=config.redis_url, ZHDEDUP_DB=config.db_name,
                   ZHDEDUP_PREFIX=config.key_prefix, ZHDEDUP_VAR=str(config.var_dir))
    else:
        env.update(ZHDEDUP_VAR=str(var_dir), ZHDEDUP_DB=db or "rel", ZHDEDUP_PREFIX=f"{db or 'rel'}:")
    return env


class CrawlProc:
    """`scrapy crawl news` as a subprocess we can signal; log in a file."""

    def __init__(self, start_urls: str, env: dict[str, str], log: Path, settings: dict[str, str] | None = None,
                 store: dict[str, Any] | None = None) -> None:
        cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_urls={start_urls}",
               "-a", "sitemaps=0"]
        all_settings = {**FAST, **(settings or {})}
        if store:
            all_settings["ZHDEDUP_STORE"] = json.dumps(store)
        for k, v in all_settings.items():
            cmd += ["-s", f"{k}={v}"]
        self.log_path = log
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(cmd, cwd=PROJECT, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def log(self) -> str:
        """Everything the crawl printed so far."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait(self, timeout: float = 90) -> int:
        """Exit code (kills the crawl and fails if it runs longer than timeout, after asking it for every
        thread's stack: the crawl command writes them to its log on SIGUSR1)."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"crawl hung for {timeout} s:\n{self.log[-3000:]}") from None
        finally:
            self._log.close()

    def signal(self, sig: int) -> None:
        """Send a signal to the crawler process."""
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL, then reap."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._log.close()


def wait_until(cond: Callable[[], Any], timeout: float, what: str, proc: CrawlProc | None = None) -> Any:
    """Poll cond until it is truthy; fail naming `what` (and the crawl's log) on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        if proc is not None and proc.proc.poll() is not None:
            raise AssertionError(f"crawl ended before {what}:\n{proc.log[-3000:]}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}" + (f":\n{proc.log[-3000:]}" if proc else ""))


def count_pages(store) -> int:
    """Pages stored so far (raw pymongo, no retries: used while servers are being killed)."""
    try:
        return store.pages.count_documents({})
    except Exception:  # noqa: BLE001
        return 0


def assert_every_story_once(store, expected: Expected, logs: list[Path] = ()) -> dict[str, Any]:
    """Each story: exactly one URL stored, every other URL recorded as a duplicate of that page;
    nothing else in either collection, no URL twice. A failure shows the outcomes of the URLs concerned
    and the WARNING lines of the crawls' logs."""
    pages = list(store.pages.find({}, {"url": 1}))
    dups = list(store.duplicates.find({}, {"url": 1, "original_id": 1}))
    page_urls = [p["url"] for p in pages]
    dup_urls = [d["url"] for d in dups]
    assert len(page_urls) == len(set(page_urls)), "a URL stored twice"
    assert len(dup_urls) == len(set(dup_urls)), "a copy recorded twice"
    id_of = {p["url"]: str(p["_id"]) for p in pages}
    orig_of = {d["url"]: d["original_id"] for d in dups}
    problems, concerned = [], []
    for story, urls in expected.groups.items():
        kept = [u for u in urls if u in id_of]
        if len(kept) != 1:
            problems.append(f"story {story}: stored {len(kept)} times ({kept}); urls {urls}")
            concerned += urls
            continue
        for u in urls:
            if u != kept[0] and orig_of.get(u) != id_of[kept[0]]:
                problems.append(f"story {story}: copy {u} recorded as {orig_of.get(u)!r}, "
                                f"original {kept[0]} is {id_of[kept[0]]}")
                concerned.append(u)
    known = {u for urls in expected.groups.values() for u in urls}
    extra = (set(page_urls) | set(dup_urls)) - known
    assert not problems and not extra, "\n".join(problems + [f"unexpected: {sorted(extra)}"]
                                                  + _outcomes_of(store, concerned) + _warnings_of(logs))
    missing = known - set(page_urls) - set(dup_urls)
    assert not missing, f"neither stored nor recorded as a copy: {sorted(missing)}"
    return {"pages": len(page_urls), "duplicates": len(dup_urls)}


def _outcomes_of(store, urls: list[str]) -> list[str]:
    """What the store's outcome log says of these URLs (why a story went missing), and the spool's size."""
    try:
        found = [f"outcome: {doc}" for doc in store.outcomes.find({"url": {"$in": urls}}, {"_id": 0})]
        found += [f"copy record: {doc}" for doc in store.duplicates.find({"url": {"$in": urls}}, {"text": 0})]
        found.append(f"spooled entries left: {store.spool.count()}")
    except Exception as exc:  # noqa: BLE001 - a diagnostic only; the assertion is what fails
        return [f"outcomes unreadable: {exc!r}"]
    return found


def _warnings_of(logs: list[Path], most: int = 30) -> list[str]:
    """The last WARNING and ERROR lines of each crawl log."""
    out = []
    for log in logs:
        lines = [ln for ln in Path(log).read_text(errors="replace").splitlines() if "WARNING" in ln or "ERROR" in ln]
        out += [f"{Path(log).name}: {ln[:400]}" for ln in lines[-most:]] or [f"{Path(log).name}: no warnings"]
    return out


class Ticker:
    """Run fn every `every` seconds in a thread until stopped (samples, watchdogs)."""

    def __init__(self, fn: Callable[[], None], every: float) -> None:
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, args=(fn, every), daemon=True)
        self._t.start()

    def _run(self, fn: Callable[[], None], every: float) -> None:
        while not self._stop.wait(every):
            fn()

    def stop(self) -> None:
        """Stop the thread."""
        self._stop.set()
        self._t.join(5)


# ---- the fault-injection suite (tests/reliability/test_reliability_faults.py, benchmarks/bench_faults.py) ----
SCENARIOS = ("mongo", "redis", "redis_wipe", "both", "crawler_and_server")
ALL_COPIES = ("exact", "near", "passages")


def embedded_var(path: Path) -> Iterator[Path]:
    """A private var dir with its own embedded servers (tests kill them), stopped at the end."""
    from storage import servers as srv

    srv.ensure_all(path)
    try:
        yield path
    finally:
        srv.stop(path)


def fresh_db(var: Path, tag: str) -> Iterator[str]:
    """A fresh database name / key prefix on a var dir's servers (servers restarted if a test killed them),
    dropped afterwards."""
    import uuid

    from storage import StoreConfig, open_store
    from storage import servers as srv

    name = f"{tag}{uuid.uuid4().hex[:8]}"
    yield name
    srv.ensure_all(var)
    with open_store(StoreConfig(var_dir=str(var), db_name=name, key_prefix=f"{name}:", replay_spool=False)) as st:
        st.drop_all()


def sigkill(var: Path, name: str) -> int:
    """SIGKILL one embedded server and wait until it is gone."""
    pid = int((var / "run" / f"{name}.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    from storage import servers as srv

    while srv.pid_alive(pid, name):
        time.sleep(0.02)
    return pid


def stored(var: Path, db: str) -> int:
    """Pages in MongoDB now (0 while the server is down or restarting)."""
    import pymongo

    from storage import servers as srv

    info = srv.info(var, "mongo")
    if not info.running:
        return 0
    client = pymongo.MongoClient(info.uri, serverSelectionTimeoutMS=500)
    try:
        return client[db].pages.count_documents({})
    except Exception:  # noqa: BLE001
        return 0
    finally:
        client.close()


def _exchange(a: Path, b: Path) -> None:
    """Swap two paths atomically (renameat2 RENAME_EXCHANGE): a restart never sees neither."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, bytes(a), -100, bytes(b), 2) != 0:   # AT_FDCWD, RENAME_EXCHANGE
        raise OSError(ctypes.get_errno(), f"cannot exchange {a} and {b}")


class HeldDown:
    """Keep embedded servers from restarting (a file where their data directory was) until released,
    so an outage lasts longer than the crawl's retry window; release puts the data back."""

    def __init__(self, var: Path, names: list[str]) -> None:
        self.var, self.names = var, names
        for name in names:
            (var / f"{name}.block").write_text("held down by the fault suite")
            _exchange(var / name, var / f"{name}.block")

    def release(self) -> None:
        """Put the data directories back (the next restart attempt succeeds)."""
        for name in self.names:
            _exchange(self.var / name, self.var / f"{name}.block")
            (self.var / f"{name}.block").unlink()


def wipe_redis(var: Path, where: str = "redis") -> None:
    """Delete the embedded Redis's data (it comes back empty); `where` is its directory under var."""
    import shutil

    shutil.rmtree(var / where, ignore_errors=True)
    (var / where).mkdir()


def run_fault_scenario(var: Path, db: str, sites: NewsSites, workdir: Path, scenario: str, seed: int,
                       store: dict[str, Any] | None = None) -> dict[str, Any]:
    """One crawl with real SIGKILLs at a moment drawn from seed, then one re-run of the same command;
    returns the final counts (and fails unless every story is stored once and every copy recorded)."""
    from storage import StoreConfig, open_store

    rng = random.Random(f"{scenario}-{seed}")   # a different moment per scenario, the same on every run
    store = {"retry_seconds": 0.5, **(store or {})}
    env = crawl_env(var_dir=var, db=db)
    first = CrawlProc(sites.start_urls, env, workdir / f"{scenario}-{seed}-1.log", store=store)
    at = rng.randint(3, max(4, len(sites.expected.groups) // 2))
    wait_until(lambda: stored(var, db) >= at, 90, f"{at} stored pages", first)
    time.sleep(rng.uniform(0.0, 0.4))
    victims = {"mongo": ["mongo"], "redis": ["redis"], "redis_wipe": ["redis"], "both": ["mongo", "redis"],
               "crawler_and_server": [rng.choice(["mongo", "redis"])]}[scenario]
    hold = rng.uniform(0.5, 3.0)   # the servers stay down this long: longer than the retry window
    if scenario == "crawler_and_server":
        first.signal(signal.SIGKILL)
    held = HeldDown(var, victims)
    for name in victims:
        sigkill(var, name)
    if scenario == "redis_wipe":
        wipe_redis(var, "redis.block")   # the data, while a file holds its place
    time.sleep(hold)
    held.release()
    if scenario == "crawler_and_server":
        first.kill()
    else:
        assert first.wait(150) == 0, first.log[-4000:]
    second = CrawlProc(sites.start_urls, env, workdir / f"{scenario}-{seed}-2.log", store=store)
    assert second.wait(150) == 0, second.log[-4000:]
    with open_store(StoreConfig(var_dir=str(var), db_name=db, key_prefix=f"{db}:")) as st:
        counts = assert_every_story_once(st, sites.expected)
        health = st.index_health()
        assert health["simhash"]["redis"] == health["simhash"]["mongo"], health
        counts.update(killed_at=at, held=round(hold, 2), victims="+".join(victims), index=health["simhash"]["redis"],
                      spool_left=st.spool.count(), outage_lines=_outage_lines(first.log))
    assert counts["spool_left"] == 0
    return counts


def _outage_lines(log: str) -> int:
    """How many one-line outage reports a crawl printed."""
    return sum(1 for line in log.splitlines() if "was unavailable for" in line)
