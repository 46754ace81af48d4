"""run(seed, kind, fault) -> Result: one real crawl of a generated corpus under settings, crawlers and a
fault drawn from the seed, one re-run of the same command, and the store compared EXACTLY with the oracle.

Store kinds: `embedded` (a private var dir; the first crawler starts the servers), `redis` (external Redis
and MongoDB-wire servers, fresh database and key prefix), `cluster` (a 3-master Redis Cluster with the
external MongoDB), `stale` (Redis still holds the index of an earlier store under the same prefix: another
crawl went into the database, which is then dropped or replaced by a new one). Faults: `none`,
`crawler_kill` (SIGKILL some or all crawlers after some stored pages), `early_kill` (SIGKILL within the
first 0.2-3 s, while the servers start), `mongo_kill` / `redis_kill` (SIGKILL a server, held down 0.5-3 s:
an embedded one restarts itself, an external one is restarted here on its port with its data), `redis_wipe`
(the same, Redis's data deleted; a cluster node restarts empty), `held_down` (both embedded servers killed
and held down), `sigstop` (a server frozen for 0.5-3 s, then resumed). After the fault the same command runs
once more, as a user would. When no fault was applied (`none`, or the crawl ended before its moment), the
store is judged after the first invocation too: a fault-free crawl leaves nothing for a re-run to repair.
Keys deleted under a live Redis (no restart) are not a fault here: the product
only learns of a data loss through an outage.

The verdict (`judge`) needs nothing but the oracle and what MongoDB holds: one stored page per story and
an acceptable one, every other member recorded once as a duplicate of it, no copy pointing to a page
MongoDB lacks, nothing else stored, every URL's latest outcome of the right kind, no URL twice in a run,
and (independent crawlers) every finished run with one outcome for every URL.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tests.invariant.corpus import ARTICLE, Corpus, Oracle, article_html, build
from tests.reliability.reliability_helpers import DISTRIBUTED, CrawlProc, HeldDown, crawl_env, sigkill, wipe_redis

KINDS = ("embedded", "redis", "cluster", "stale")
FAULTS = {
    "embedded": ("none", "crawler_kill", "early_kill", "mongo_kill", "redis_kill", "redis_wipe", "held_down",
                 "sigstop"),
    "redis": ("none", "crawler_kill", "early_kill", "redis_kill", "redis_wipe", "sigstop"),
    "cluster": ("none", "crawler_kill", "redis_wipe", "sigstop"),
    "stale": ("none", "crawler_kill", "redis_kill", "redis_wipe"),
}
SHARED = DISTRIBUTED
CRAWL_TIMEOUT = 180.0
ARTICLE_OUTCOMES = {"stored", "unchanged", "duplicate"}


@dataclass
class Servers:
    """External servers a run may use (None: that kind cannot run here)."""

    mongo_uri: str | None = None
    redis_url: str | None = None
    var_dir: Path | None = None          # where their pid files are (SIGSTOP needs them)
    cluster: Any = None                  # tests/cluster_fixture.RedisClusterProcs

    def pid(self, name: str) -> int | None:
        """Pid of an external server we may freeze (None when unknown)."""
        if name == "cluster":
            return self.cluster.procs[0].pid if self.cluster is not None and self.cluster.procs else None
        f = self.var_dir / "run" / f"{name}.pid" if self.var_dir else None
        return int(f.read_text()) if f and f.exists() else None


@dataclass
class Plan:
    """Everything a seed decides: settings, crawlers, store kind, fault and its moment."""

    seed: int
    kind: str
    fault: str
    stories: int
    crawlers: int
    distributed: bool
    concurrent: int
    per_domain: int
    workers: int
    store_threads: int
    batch: int
    batch_ms: int
    retry_seconds: float
    order_seed: int
    delay: float
    trigger: tuple[str, float]            # ("time", seconds) or ("pages", stored pages)
    hold: float
    victims: list[int]                    # crawler indexes killed (crawler faults)
    server: str                           # mongo | redis: the server a server fault hits
    stale_mode: str                       # drop | new_db

    def settings(self) -> dict[str, str]:
        """The crawl's -s settings."""
        out = {"CONCURRENT_REQUESTS": str(self.concurrent), "CONCURRENT_REQUESTS_PER_DOMAIN": str(self.per_domain),
               "ZHDEDUP_EXTRACT_WORKERS": str(self.workers), "ZHDEDUP_FINGERPRINT_WORKERS": str(self.workers),
               "ZHDEDUP_STORE_THREADS": str(self.store_threads),
               "ZHDEDUP_STORE_BATCH": str(self.batch), "ZHDEDUP_STORE_BATCH_MS": str(self.batch_ms),
               "RETRY_TIMES": "3", "ZHDEDUP_TRACE_DECISIONS": "1"}   # a failing run's logs carry every verdict
        return {**out, **(SHARED if self.distributed else {})}

    def short(self) -> str:
        """One line for reports."""
        return (f"seed={self.seed} kind={self.kind} fault={self.fault} crawlers={self.crawlers}"
                f"{' distributed' if self.distributed else ''} CR={self.concurrent}/{self.per_domain} "
                f"workers={self.workers} threads={self.store_threads} batch={self.batch}+{self.batch_ms}ms retry={self.retry_seconds}s "
                f"trigger={self.trigger[0]}:{self.trigger[1]} hold={self.hold}s"
                + (f" server={self.server}" if self.fault in ("sigstop",) else "")
                + (f" stale={self.stale_mode}" if self.kind == "stale" else ""))


def make_plan(seed: int, kind: str | None = None, fault: str | None = None, stories: int = 14) -> Plan:
    """The plan of a seed (kind and fault drawn from it unless given)."""
    rng = random.Random(f"plan-{seed}")
    kind = kind or KINDS[rng.randrange(len(KINDS))]
    drawn = rng.random()        # the same draws whether kind and fault are given or not
    fault = fault or FAULTS[kind][int(drawn * len(FAULTS[kind]))]
    crawlers = rng.choice([1, 1, 2, 2, 3])
    concurrent = rng.choice([1, 2, 4, 8, 16, 32])
    early = fault == "early_kill"
    trigger = ("time", round(rng.uniform(0.2, 3.0), 2)) if early else ("pages", rng.randint(1, max(2, stories)))
    victims = sorted(rng.sample(range(crawlers), rng.randint(1, crawlers)))
    return Plan(seed=seed, kind=kind, fault=fault, stories=stories, crawlers=crawlers,
                distributed=crawlers > 1 and rng.random() < 0.4, concurrent=concurrent,
                per_domain=rng.choice([1, 2, concurrent]), workers=_workers(seed, rng.choice([0, 1])),
                store_threads=random.Random(f"threads-{seed}").choice([1, 2, 4, 8]),   # apart: other draws stay
                batch=rng.choice([1, 4, 16, 100]), batch_ms=rng.choice([0, 0, 20, 100]),
                retry_seconds=rng.choice([0.5, 2.0]), order_seed=rng.randrange(1 << 30),
                delay=rng.choice([0.0, 0.01, 0.03]), trigger=trigger, hold=round(rng.uniform(0.5, 3.0), 2),
                victims=victims, server=rng.choice(["mongo", "redis"]), stale_mode=rng.choice(["drop", "new_db"]))


def _workers(seed: int, drawn: int) -> int:
    """Worker processes: a third of the seeds that draw one get two, pages answered out of order across them
    (as a busy pool grown under "auto"); drawn apart, so that the seed's other draws stay as they were."""
    return 2 if drawn and random.Random(f"workers-{seed}").random() < 1 / 3 else drawn


@dataclass
class Result:
    """What a run found: ok when the store is exactly what the oracle says."""

    plan: Plan
    problems: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workdir: str = ""

    @property
    def ok(self) -> bool:
        """The invariant held."""
        return not self.problems

    @property
    def replay(self) -> str:
        """The command that replays this run."""
        p = self.plan
        more = f" --stories {p.stories}" if p.stories != 14 else ""
        return f"python -m benchmarks.bench_invariant --seed {p.seed} --kind {p.kind} --fault {p.fault}{more}"

    def report(self) -> str:
        """Readable verdict: plan, counts, and each difference from the oracle."""
        head = f"{'PASS' if self.ok else 'FAIL'} {self.plan.short()} ({self.seconds:.1f} s)"
        lines = [head, f"  counts {json.dumps(self.counts, sort_keys=True)}"]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  - {p}" for p in self.problems[:40]]
        if len(self.problems) > 40:
            lines.append(f"  ... {len(self.problems) - 40} more")
        if not self.ok:
            lines.append(f"  replay: {self.replay}   (logs in {self.workdir})")
        return "\n".join(lines)


# ---- the store as MongoDB holds it ------------------------------------------------------------------

@dataclass
class Snapshot:
    """The collections the verdict reads (raw documents, from MongoDB: the truth)."""

    pages: list[dict]
    duplicates: list[dict]
    outcomes: list[dict]
    runs: list[dict]
    spool: int


def read_snapshot(mongo_uri: str, db: str, var: Path, dump: Path | None = None) -> Snapshot:
    """Pages, duplicates, outcomes and runs straight from MongoDB (no product code), and the spool's size."""
    import pymongo

    from storage.spool import Spool

    client = pymongo.MongoClient(mongo_uri, serverSelectionTimeoutMS=20000)
    try:
        d = client[db]
        if dump is not None:     # a failing run keeps what MongoDB held, for the diagnosis
            dump.write_text(json.dumps({c: list(d[c].find({}, {"text": 0, "raw_text": 0, "body": 0}))
                                        for c in ("pages", "duplicates", "demotions", "outcomes", "runs")},
                                       default=str, ensure_ascii=False, indent=1))
        pages = list(d.pages.find({}, {"url": 1, "published": 1}))
        dups = list(d.duplicates.find({}, {"url": 1, "original_id": 1, "method": 1, "original_url": 1}))
        outcomes = list(d.outcomes.find({}, {"url": 1, "outcome": 1, "reason": 1, "run": 1, "at": 1}))
        runs = list(d.runs.find({}, {"status": 1, "started": 1, "pid": 1}))
    finally:
        client.close()
    return Snapshot(pages, dups, outcomes, runs, Spool(var / "spool" / db).count())   # the store's: spool/<db>


def judge(oracle: Oracle, snap: Snapshot, independent_runs: list[str] | None = None,
          when: str = "after the re-run") -> list[str]:
    """Every difference between the store and the oracle, one readable line each."""
    problems = _judge_pages(oracle, snap) + _judge_outcomes(oracle, snap, independent_runs or [])
    if snap.spool:
        problems.append(f"{snap.spool} spooled write(s) still waiting {when}")
    return problems


def _judge_pages(oracle: Oracle, snap: Snapshot) -> list[str]:
    """One stored page per story, acceptable; every other member a duplicate of it, recorded once."""
    problems: list[str] = []
    page_urls = Counter(p["url"] for p in snap.pages)
    dup_urls = Counter(d["url"] for d in snap.duplicates)
    problems += [f"URL stored {n} times: {u}" for u, n in page_urls.items() if n > 1]
    problems += [f"copy recorded {n} times: {u}" for u, n in dup_urls.items() if n > 1]
    problems += [f"URL both stored and recorded as a copy: {u}" for u in sorted(set(page_urls) & set(dup_urls))]
    id_of = {p["url"]: str(p["_id"]) for p in snap.pages}
    url_of = {str(p["_id"]): p["url"] for p in snap.pages}
    orig_of = {d["url"]: str(d["original_id"]) for d in snap.duplicates}
    for gid, g in sorted(oracle.groups.items()):
        kept = [u for u in g.urls if u in id_of]
        roles = {u: f"{g.roles[u]}@{g.dates[u] or 'undated'}" for u in g.urls}
        if len(kept) != 1:
            problems.append(f"story {gid} stored {len(kept)} times {[roles[u] for u in kept]}; members {roles}")
            continue
        stored = kept[0]
        if stored not in g.acceptable:
            problems.append(f"story {gid}: stored {roles[stored]} {stored}, but the original must be one of "
                            f"{sorted(roles[u] for u in g.acceptable)}")
        for u in g.urls:
            if u == stored:
                if u in orig_of:
                    problems.append(f"story {gid}: stored page {u} also recorded as a copy")
            elif u not in orig_of:
                problems.append(f"story {gid}: copy {roles[u]} {u} not recorded as a duplicate")
            elif orig_of[u] != id_of[stored]:
                problems.append(f"story {gid}: copy {roles[u]} points to {url_of.get(orig_of[u], orig_of[u])}, "
                                f"not the stored original {stored}")
    known = oracle.article_urls
    problems += [f"unexpected page stored: {u} ({oracle.skipped.get(u, 'not in the corpus')})"
                 for u in sorted(set(page_urls) - known)]
    problems += [f"unexpected duplicate record: {u}" for u in sorted(set(dup_urls) - known)]
    problems += [f"duplicate {d['url']} points to page {d['original_id']} that MongoDB does not hold"
                 for d in snap.duplicates if str(d["original_id"]) not in url_of]
    return problems


def _judge_outcomes(oracle: Oracle, snap: Snapshot, independent_runs: list[str]) -> list[str]:
    """The latest outcome of every URL of the right kind; a URL at most once per run; the finished runs of
    independent crawlers each with every URL."""
    problems: list[str] = []
    per_run: dict[str, Counter[str]] = {}
    latest: dict[str, dict] = {}
    for o in sorted(snap.outcomes, key=lambda o: (o["at"], o["_id"])):
        per_run.setdefault(o["run"], Counter())[o["url"]] += 1
        latest[o["url"]] = o
    for run, counts in per_run.items():
        problems += [f"run {run}: {n} outcomes for {u}" for u, n in counts.items() if n > 1]
    for u in sorted(oracle.urls):
        o = latest.get(u)
        kind, reason = oracle.expected_outcome(u)
        if o is None:
            problems.append(f"no outcome recorded for {u} ({reason or 'article'})")
        elif kind == ARTICLE and o["outcome"] not in ARTICLE_OUTCOMES:
            problems.append(f"article {u}: latest outcome {o['outcome']}/{o.get('reason')}")
        elif kind != ARTICLE and (o["outcome"], o.get("reason")) != (kind, reason):
            problems.append(f"{u}: latest outcome {o['outcome']}/{o.get('reason')}, expected {kind}/{reason}")
    problems += [f"outcome for a URL outside the corpus: {u} {latest[u]['outcome']}/{latest[u].get('reason')}"
                 for u in sorted(set(latest) - oracle.urls)]
    finished = {str(r["_id"]) for r in snap.runs if r.get("status") == "finished"}
    for run in independent_runs:
        if run in finished:
            missing = oracle.urls - set(per_run.get(run, {}))
            if missing:
                problems.append(f"finished run {run} has no outcome for {len(missing)} URL(s): {sorted(missing)[:3]}")
    return problems


# ---- running it -------------------------------------------------------------------------------------

@dataclass
class Target:
    """Where one run's store lives and how crawlers reach it."""

    kind: str
    var: Path
    db: str
    prefix: str
    config: Any = None                     # StoreConfig for external servers, None for embedded

    def env(self) -> dict[str, str]:
        """Environment of a crawler process."""
        env = crawl_env(self.config) if self.config is not None else crawl_env(var_dir=self.var, db=self.db)
        env.update(ZHDEDUP_DB=self.db, ZHDEDUP_PREFIX=self.prefix)
        return env

    def mongo_uri(self) -> str:
        """MongoDB of this store (an embedded server is started when down)."""
        if self.config is not None:
            return self.config.mongo_uri
        from storage import servers as srv

        return srv.ensure(self.var, "mongo").uri

    def stored_now(self) -> int:
        """Pages in MongoDB now (0 while it is down or starting)."""
        import pymongo

        from storage import servers as srv

        if self.config is None:
            info = srv.info(self.var, "mongo")
            if not info.running:
                return 0
            uri = info.uri
        else:
            uri = self.config.mongo_uri
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=300)
        try:
            return client[self.db].pages.count_documents({})
        except Exception:  # noqa: BLE001
            return 0
        finally:
            client.close()


def _target(plan: Plan, servers: Servers | None, work: Path) -> Target:
    """A fresh store of the plan's kind."""
    from storage import StoreConfig

    tag = uuid.uuid4().hex[:8]
    db, prefix = f"inv{plan.seed}_{tag}", f"inv{tag}:"
    if plan.kind == "embedded":
        return Target("embedded", work / "var", db, prefix)
    if servers is None or not servers.mongo_uri or not servers.redis_url:
        raise RuntimeError(f"store kind {plan.kind} needs external servers")
    redis_url = servers.redis_url
    if plan.kind == "cluster":
        if servers.cluster is None:
            raise RuntimeError("store kind cluster needs a Redis Cluster")
        redis_url = servers.cluster.url
    config = StoreConfig(mongo_uri=servers.mongo_uri, redis_url=redis_url, var_dir=str(work / "var"), db_name=db,
                         key_prefix=prefix)
    return Target(plan.kind, work / "var", db, prefix, config)


def _start(plan: Plan, corpus: Corpus, target: Target, work: Path, tag: str,
           started: list[CrawlProc]) -> list[CrawlProc]:
    """The plan's crawlers, each with the start URLs in the plan's order (each also added to `started`)."""
    procs = []
    for i in range(plan.crawlers):
        urls = list(corpus.start_urls)
        random.Random(f"{plan.order_seed}-{i}").shuffle(urls)
        procs.append(CrawlProc(",".join(urls), target.env(), work / f"{tag}-{i}.log", plan.settings(),
                               store={"retry_seconds": plan.retry_seconds}))
        started.append(procs[-1])
    return procs


def _wait_all(procs: list[CrawlProc], problems: list[str], what: str, killed: frozenset[int] | set[int] = frozenset(),
              notes: list[str] | None = None) -> None:
    """Wait for every crawler; a hang or a failing exit code (not killed by us) is a problem. With `notes`
    (a fault held a server down), a crawler that could not open the store while it was down and said so
    (exit 2, "cannot open the store") did what it must: noted; the re-run then has to do its work."""
    for i, p in enumerate(procs):
        try:
            rc = p.wait(CRAWL_TIMEOUT)
        except AssertionError:
            problems.append(f"{what} crawler {i} hung for {CRAWL_TIMEOUT:.0f} s (log {p.log_path})")
            continue
        if i not in killed and rc != 0:
            tail = " | ".join(p.log.strip().splitlines()[-3:])[-400:]
            if notes is not None and rc == 2 and "cannot open the store" in p.log:
                notes.append(f"{what} crawler {i} could not open the store while the fault held it down (exit 2)")
                continue
            problems.append(f"{what} crawler {i} exited {rc}: {tail} (log {p.log_path})")


def _wait_trigger(plan: Plan, target: Target, procs: list[CrawlProc]) -> bool:
    """Wait for the fault's moment; False when every crawler ended first."""
    kind, value = plan.trigger
    t0 = time.monotonic()
    while time.monotonic() - t0 < CRAWL_TIMEOUT:
        if all(p.proc.poll() is not None for p in procs):
            return False
        if kind == "time" and time.monotonic() - t0 >= value:
            return True
        if kind == "pages" and target.stored_now() >= value:
            return True
        time.sleep(0.05)
    return False


def _delete_prefix(url: str, prefix: str) -> int:
    """Delete every key under a prefix (all nodes of a cluster): Redis lost our data."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        nodes = [client]
        try:
            info = client.execute_command("CLUSTER", "NODES")
            text = info.decode() if isinstance(info, bytes) else str(info)
            nodes = [redis.Redis(host=l.split()[1].split("@")[0].rsplit(":", 1)[0],
                                 port=int(l.split()[1].split("@")[0].rsplit(":", 1)[1]))
                     for l in text.splitlines() if "master" in l]
        except redis.ResponseError:
            pass
        n = 0
        for node in nodes:
            keys = list(node.scan_iter(match=f"{prefix}*", count=1000))
            for k in keys:
                n += node.delete(k)
        return n
    finally:
        client.close()


def _restart_external_redis(servers: Servers, hold: float, wipe: bool, notes: list[str]) -> None:
    """SIGKILL the external Redis, keep it down `hold` s, start it again on its port (data wiped or kept)."""
    from storage import servers as srv

    var = servers.var_dir
    before = srv.info(var, "redis").uri
    sigkill(var, "redis")
    if wipe:
        wipe_redis(var)
    time.sleep(hold)
    after = srv.ensure(var, "redis").uri
    if after != before:
        notes.append("the external Redis came back on another URL: crawlers cannot reach it")


def _restart_cluster_node(cluster: Any, hold: float) -> None:
    """SIGKILL the first cluster node and start it again with its nodes.conf: its keys are gone (no
    persistence), its slots are its own again."""
    import subprocess

    old = cluster.procs[0]
    old.kill()
    old.wait()
    time.sleep(hold)
    cluster.procs[0] = subprocess.Popen(old.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = cluster.ports[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = subprocess.run(["redis-cli", "-p", str(port), "cluster", "info"], capture_output=True, text=True).stdout
        if "cluster_state:ok" in out:
            return
        time.sleep(0.1)


def _freeze(pid: int, hold: float) -> None:
    """SIGSTOP a server for `hold` seconds, then SIGCONT (always)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(hold)
    finally:
        os.kill(pid, signal.SIGCONT)


def _apply_fault(plan: Plan, target: Target, servers: Servers | None, procs: list[CrawlProc],
                 notes: list[str]) -> set[int]:
    """Do the plan's fault now; returns the crawlers killed."""
    f, var = plan.fault, target.var
    if f in ("crawler_kill", "early_kill"):
        for i in plan.victims:
            procs[i].kill()
        return set(plan.victims)
    if target.kind == "embedded":
        victims = {"mongo_kill": ["mongo"], "redis_kill": ["redis"], "redis_wipe": ["redis"],
                   "held_down": ["mongo", "redis"]}.get(f)
        if victims:
            held = HeldDown(var, victims)
            try:
                for name in victims:
                    sigkill(var, name)
                if f == "redis_wipe":
                    wipe_redis(var, "redis.block")
                time.sleep(plan.hold)
            finally:
                held.release()
        elif f == "sigstop":
            _freeze(int((var / "run" / f"{plan.server}.pid").read_text()), plan.hold)
        return set()
    if f in ("redis_kill", "redis_wipe"):
        if target.kind != "cluster" and (servers is None or servers.var_dir is None):
            notes.append(f"{f}: the external Redis was not started by us: not killed")
        elif target.kind == "cluster":
            _restart_cluster_node(servers.cluster, plan.hold)   # no persistence: the node comes back empty
        else:
            _restart_external_redis(servers, plan.hold, wipe=f == "redis_wipe", notes=notes)
    elif f == "sigstop":
        name = "cluster" if target.kind == "cluster" and plan.server == "redis" else plan.server
        pid = servers.pid(name) if servers else None
        if pid is None:
            notes.append(f"no pid for the external {name}: not frozen")
        else:
            _freeze(pid, plan.hold)
    return set()


def _preload_stale(plan: Plan, corpus: Corpus, target: Target, work: Path, problems: list[str],
                   started: list[CrawlProc]) -> None:
    """Crawl an earlier site carrying some of the corpus's stories into this database and prefix, then drop
    the database (or move to a new one): Redis keeps an index of pages MongoDB no longer holds."""
    from tests.invariant.corpus import SiteServer, list_html

    rng = random.Random(f"stale-{plan.seed}")
    originals = [p for p in corpus.pages.values() if p.role in ("original", "brief")]
    chosen = rng.sample(originals, max(3, len(originals) // 2))
    pages = {f"/news/{90000 + i}.html": article_html(p, p.layout).encode("utf-8") for i, p in enumerate(chosen)}
    pages["/"] = list_html(0, [(u, "旧闻") for u in pages], None).encode("utf-8")
    site = SiteServer("127.0.0.9", pages, 0.0)
    try:
        proc = CrawlProc(f"{site.base}/", target.env(), work / "stale.log", {"CONCURRENT_REQUESTS": "8"})
        started.append(proc)
        _wait_all([proc], problems, "earlier-store")
    finally:
        site.stop()
    import pymongo

    client = pymongo.MongoClient(target.config.mongo_uri)
    try:
        if plan.stale_mode == "drop":
            client.drop_database(target.db)
        else:
            old = target.db
            target.db = f"{old}_new"
            target.config = target.config.with_(db_name=target.db)
            client.drop_database(old)
    finally:
        client.close()


def _runs(target: Target) -> list[str]:
    """Ids of the runs recorded so far."""
    import pymongo

    client = pymongo.MongoClient(target.mongo_uri(), serverSelectionTimeoutMS=20000)
    try:
        return [str(r["_id"]) for r in client[target.db].runs.find({}, {"_id": 1})]
    finally:
        client.close()


def _cleanup(target: Target) -> None:
    """Drop this run's database and keys (external servers) or stop its embedded servers."""
    if target.config is None:
        from storage import servers as srv

        srv.stop(target.var)
        return
    import pymongo

    client = pymongo.MongoClient(target.config.mongo_uri, serverSelectionTimeoutMS=5000)
    try:
        client.drop_database(target.db)
    finally:
        client.close()
    _delete_prefix(target.config.redis_url, target.prefix)


def run(seed: int, kind: str | None = None, fault: str | None = None, servers: Servers | None = None,
        workdir: Path | None = None, stories: int = 14, keep: bool = False,
        oracle_hook: Callable[[Oracle], None] | None = None,
        first_hook: Callable[[Target], None] | None = None) -> Result:
    """One seed end to end; the Result lists every difference from the oracle (empty when the invariant holds).
    oracle_hook may mutate the oracle before judging, first_hook the store a fault-free first run left before
    it is judged (both used to prove the harness can fail)."""
    plan = make_plan(seed, kind, fault, stories)
    work = Path(workdir or tempfile.mkdtemp(prefix=f"inv-{seed}-"))
    work.mkdir(parents=True, exist_ok=True)
    result = Result(plan, workdir=str(work))
    t0 = time.monotonic()
    corpus = build(seed, stories=stories, delay=plan.delay)
    target = _target(plan, servers, work)
    try:
        _crawl(plan, corpus, target, servers, work, result, first_hook)
        if oracle_hook:
            oracle_hook(corpus.oracle)
        if not any("hung" in p for p in result.problems):
            _verdict(plan, corpus, target, result)
    finally:
        corpus.stop()
        try:
            _cleanup(target)
        except Exception as e:  # noqa: BLE001
            result.notes.append(f"cleanup: {e}")
        if result.ok and not keep:
            shutil.rmtree(work, ignore_errors=True)
    result.seconds = time.monotonic() - t0
    return result


def _crawl(plan: Plan, corpus: Corpus, target: Target, servers: Servers | None, work: Path,
           result: Result, first_hook: Callable[[Target], None] | None = None) -> None:
    """Optional stale preload, the first invocation with its fault, then the same command once more. Interrupted
    (a signal, a harness error), it kills the crawlers it started: else they outlive it and, seeing their embedded
    servers stopped by the cleanup, start them again."""
    started: list[CrawlProc] = []
    try:
        _crawl_twice(plan, corpus, target, servers, work, result, started, first_hook)
    except BaseException:
        for p in started:
            if p.proc.poll() is None:
                p.kill()
        raise


def _crawl_twice(plan: Plan, corpus: Corpus, target: Target, servers: Servers | None, work: Path, result: Result,
                 started: list[CrawlProc], first_hook: Callable[[Target], None] | None) -> None:
    """_crawl's steps; every crawler it starts is added to `started` at once."""
    if plan.kind == "stale":
        _preload_stale(plan, corpus, target, work, result.problems, started)
    before = set(_runs(target))
    first = _start(plan, corpus, target, work, "run1", started)
    killed: set[int] = set()
    down = False   # a server held down by the fault: a crawler opening meanwhile may refuse to start
    faulted = False
    if plan.fault != "none":
        if _wait_trigger(plan, target, first):
            result.notes.append(f"fault {plan.fault} at {plan.trigger[0]} {plan.trigger[1]}")
            killed = _apply_fault(plan, target, servers, first, result.notes)
            down = plan.fault not in ("crawler_kill", "early_kill")
            faulted = True
        else:
            result.notes.append(f"fault {plan.fault} not applied: the crawl ended before its moment")
    _wait_all(first, result.problems, "first", killed, result.notes if down else None)
    if not faulted and not result.problems:   # nothing went wrong: the store must be right now, not only after a re-run
        if first_hook:
            first_hook(target)
        _judge_first(plan, corpus, target, result, sorted(set(_runs(target)) - before))
    before = set(_runs(target))
    second = _start(plan, corpus, target, work, "run2", started)
    _wait_all(second, result.problems, "re-run")
    result.counts["runs_rerun"] = len(set(_runs(target)) - before)
    result.counts["_rerun_ids"] = sorted(set(_runs(target)) - before)


def _judge_first(plan: Plan, corpus: Corpus, target: Target, result: Result, run_ids: list[str]) -> None:
    """The store as the fault-free first invocation left it, before any re-run could repair it (a decision or
    a write left in the spool, a page kept undecided): each difference is a problem of the first run."""
    when = "after the first run (no fault)"
    _, problems = _judged(plan, corpus, target, run_ids, when, Path(result.workdir) / "store-first.json")
    result.problems += [f"{when}: {p}" for p in problems]


def _judged(plan: Plan, corpus: Corpus, target: Target, run_ids: list[str], when: str,
            dump: Path) -> tuple[Snapshot, list[str]]:
    """The store now and its differences from the oracle; a store that has any is kept in `dump`."""
    snap = read_snapshot(target.mongo_uri(), target.db, target.var)
    problems = judge(corpus.oracle, snap, [] if plan.distributed else run_ids, when)
    if problems:
        read_snapshot(target.mongo_uri(), target.db, target.var, dump)
    return snap, problems


def _verdict(plan: Plan, corpus: Corpus, target: Target, result: Result) -> None:
    """Read MongoDB and compare with the oracle."""
    snap, problems = _judged(plan, corpus, target, result.counts.pop("_rerun_ids", []), "after the re-run",
                             Path(result.workdir) / "store.json")
    result.problems += problems
    if result.problems:
        (Path(result.workdir) / "oracle.json").write_text(json.dumps(
            {"groups": {g.gid: {u: [g.roles[u], str(g.dates[u]), u in g.acceptable] for u in g.urls}
                        for g in corpus.oracle.groups.values()}, "skipped": corpus.oracle.skipped},
            ensure_ascii=False, indent=1))
    if plan.distributed and plan.fault == "none":
        hits = corpus.hits()
        twice = {u: n for u, n in hits.items() if n > 1}
        if twice:
            result.problems.append(f"distributed crawl fetched {len(twice)} URL(s) more than once: "
                                   f"{sorted(twice.items())[:3]}")
    result.counts.update(pages=len(snap.pages), duplicates=len(snap.duplicates), outcomes=len(snap.outcomes),
                         runs=len(snap.runs), **{k: v for k, v in corpus.oracle.summary().items()
                                                 if k in ("stories", "copies", "urls")})


__all__ = ["FAULTS", "KINDS", "Plan", "Result", "Servers", "judge", "make_plan", "read_snapshot", "run"]
