"""The store invariant, end to end: a fixed handful of seeds, each a real crawl of a generated multi-site
corpus (tests/invariant/corpus.py) under settings, crawlers and a fault drawn from the seed, then one re-run,
and the store compared EXACTLY with the oracle (tests/invariant/harness.py). Together the seeds cover every
store kind (embedded, external Redis, Redis Cluster, a stale index) and every fault type; more seeds:
`python -m benchmarks.bench_invariant --seeds 100`. The first tests show the verdict catches each kind of
damage (no crawl), so a green run means something.
"""
from __future__ import annotations

import copy
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.invariant.corpus import DATA, Group, Oracle
from tests.invariant.harness import Servers, Snapshot, judge, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400),
              pytest.mark.skipif(not DATA.exists(), reason=f"shared news data not found at {DATA}")]

# (seed, kind, fault): chosen so that together they cover each store kind and each fault type, worker
# processes on and off, group commits of 4 to 16 pages and 1 to 32 requests at a time (the plans:
# tests/invariant/harness.make_plan). Seeds 2, 8 and 14 (embedded) hold too; they run in the benchmark
# (python -m benchmarks.bench_invariant --seed 2 --kind embedded --fault none) to keep the suite short.
# Seeds 315 (cluster, crawler_kill) and 479 (cluster, redis_wipe) hold since the displaced page's entries answer
# for its displacer and cluster slots carry loss markers; they run in the benchmark. Seed 1024 (stale, redis_wipe)
# holds since settle_copies breaks a cycle of displacements first; seed 1129 (embedded, redis_wipe) since the repair
# at open leaves the spooled pages' sketches to their replay; seed 1286 (redis, redis_kill, two distributed crawlers)
# since undecided pages are marked in MongoDB, their displacer takes over their decision and a dated copy waits for
# an undated original still deciding; seeds 1337, 1339 and 1387 since the fixes named in their tests; 1341
# (embedded, redis_wipe: a page another crawler decided was decided again by a spooled check) and 1407 (cluster,
# redis_wipe: the scheduler's cluster client made while a node restarted) since theirs (test_write_order.py,
# test_scaleout_redis_outage.py); 1592 (stale, none, two crawlers: a page that stood without its passage step kept
# an earlier-claimed relative beside it) and 1715 (cluster, redis_wipe: a page saved undecided taken for decided by
# an entry of its own check cut short) since theirs (test_write_order.py, test_neardup.py). Still open (issue 31):
# 712 (stale, none), 1158 (redis, crawler_kill) and 1307 (cluster, redis_wipe) each failed once in a 100-seed sweep
# and held on replay; 1307 has 1715's shape. Replay with --seed N --kind K --fault F (the harness sets
# ZHDEDUP_TRACE_DECISIONS: a failing run's kept logs carry every verdict).
CASES = [
    (10, "embedded", "crawler_kill"),   # SIGKILLed after 9 stored pages; worker process
    (8, "embedded", "early_kill"),      # SIGKILLed 0.6 s in, while it starts the embedded servers
    (7, "embedded", "mongo_kill"),      # MongoDB SIGKILLed and held down 1.6 s
    (9, "embedded", "held_down"),       # both servers SIGKILLed and held down
    (8, "redis", "sigstop"),            # external servers; Redis frozen (SIGSTOP) 1.9 s
    (9, "redis", "redis_wipe"),         # external Redis SIGKILLed and started again empty (data lost)
    (13, "cluster", "none"),            # 3-master Redis Cluster, 3 independent crawlers
    (8, "stale", "redis_kill"),         # Redis holds a dropped store's index; then Redis SIGKILLed
    # violations the harness found; each failed in about half the runs before its fix (issue 31):
    (6, "embedded", "none"),            # 2 distributed crawlers: a displaced page found a passage copy meanwhile
    (118, "redis", "redis_kill"),       # 2 crawlers, spooled decisions replayed: a page its own copy
]


@pytest.fixture
def harness_servers(request) -> Servers:
    """The session's external servers, and the Redis Cluster when the case needs it."""
    servers = request.getfixturevalue("servers")
    out = Servers(mongo_uri=servers.mongo_uri, redis_url=servers.redis_url,
                  var_dir=servers.var_dir if servers.embedded else None)
    if request.node.callspec.params["kind"] == "cluster":
        out.cluster = request.getfixturevalue("redis_cluster")
    return out


@pytest.mark.parametrize("seed, kind, fault", CASES, ids=[f"{k}-{f}-seed{s}" for s, k, f in CASES])
def test_store_equals_oracle(seed, kind, fault, harness_servers, tmp_path):
    """After the fault and one re-run: every story once, every copy once and pointing to it, one outcome
    per URL; the report names each difference and the command that replays the seed."""
    result = run(seed, kind, fault, harness_servers, tmp_path / "run", keep=True)
    assert result.ok, result.report()


# A crawler that ended leaving one stored page's write in the spool (what the re-run replays), for the test below.
_LEAVE_IN_SPOOL = """
import sys, pymongo
from storage.spool import Spool
uri, db, spool = sys.argv[1:4]
pages = pymongo.MongoClient(uri)[db].pages
doc = pages.find_one(sort=[("_id", 1)])
pages.delete_one({"_id": doc["_id"]})
Spool(spool).append("save_page", doc=doc)
print(doc["url"])
"""


@pytest.mark.parametrize("seed, kind", [(7, "redis")])   # one crawler, the session's servers, 4 stories (~10 s)
def test_a_fault_free_first_run_is_judged_before_the_re_run(seed, kind, harness_servers, tmp_path):
    """Nothing went wrong, yet the crawl left a stored page's write in the spool: the re-run replays it and the
    final store is right, but the harness reports the store the first run left."""
    moved: list[str] = []

    def leave_a_write_in_the_spool(target) -> None:
        out = subprocess.run([sys.executable, "-c", _LEAVE_IN_SPOOL, target.mongo_uri(), target.db,
                              str(target.var / "spool" / target.db)], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        moved.append(out.stdout.strip())

    result = run(seed, kind, "none", harness_servers, tmp_path / "run", stories=4, keep=True,
                 first_hook=leave_a_write_in_the_spool)
    first = [p for p in result.problems if p.startswith("after the first run (no fault)")]
    assert moved and len(first) == len(result.problems), result.report()   # the re-run repaired everything
    assert any("spooled write(s) still waiting after the first run" in p for p in first), first
    assert any("stored 0 times" in p and moved[0] in p for p in first), first


# ---- the verdict catches damage (no crawl: a hand-made oracle and store) --------------------------------

A, B, C = "http://127.0.0.2:1/news/1.html", "http://127.0.0.3:1/news/2.html", "http://127.0.0.4:1/news/3.html"
LIST = "http://127.0.0.2:1/"
D1, D2 = dt.date(2024, 5, 10), dt.date(2024, 5, 12)


def _oracle() -> Oracle:
    """One story on three sites: B published first (the original), A later, C undated."""
    g = Group(0, dates={A: D2, B: D1, C: None}, roles={A: "original", B: "near", C: "exact"})
    return Oracle(groups={0: g}, skipped={LIST: "list_page"})


def _good() -> Snapshot:
    """The store a correct crawl leaves for _oracle()."""
    at = dt.datetime(2024, 5, 20)
    outcomes = [{"_id": i, "run": "r1", "url": u, "outcome": o, "reason": r, "at": at}
                for i, (u, o, r) in enumerate([(A, "duplicate", "near"), (B, "stored", ""), (C, "duplicate", "exact"),
                                               (LIST, "skipped", "list_page")])]
    return Snapshot(pages=[{"_id": "p2", "url": B}],
                    duplicates=[{"url": A, "original_id": "p2"}, {"url": C, "original_id": "p2"}],
                    outcomes=outcomes, runs=[{"_id": "r1", "status": "finished"}], spool=0)


def test_judge_accepts_the_right_store():
    """The exact store passes, and C (undated) would have been an acceptable original too."""
    assert judge(_oracle(), _good(), ["r1"]) == []
    assert _oracle().groups[0].acceptable == {B, C}


@pytest.mark.parametrize("damage, expected", [
    (lambda s: s.pages.append({"_id": "p1", "url": A}), "stored 2 times"),
    (lambda s: s.duplicates.pop(), "not recorded as a duplicate"),
    (lambda s: s.duplicates.append({"url": A, "original_id": "p2"}), "recorded 2 times"),
    (lambda s: s.duplicates[0].update(original_id="gone"), "does not hold"),
    (lambda s: s.pages.append({"_id": "p9", "url": LIST}), "unexpected page stored"),
    (lambda s: s.outcomes.pop(), "no outcome recorded"),
    (lambda s: s.outcomes.append(dict(s.outcomes[0], _id=99)), "2 outcomes for"),
    (lambda s: s.outcomes[3].update(outcome="failed"), "expected skipped/list_page"),
    (lambda s: s.duplicates.append({"url": B, "original_id": "p2"}), "both stored and recorded as a copy"),
    (lambda s: setattr(s, "spool", 2), "spooled write"),
], ids=["story-twice", "copy-missing", "copy-twice", "dangling-original", "list-page-stored", "outcome-missing",
        "outcome-twice", "wrong-outcome", "own-copy", "spool-left"])
def test_judge_names_each_kind_of_damage(damage, expected):
    """Each damage to the right store is reported, in words that say what is wrong."""
    snap = copy.deepcopy(_good())
    damage(snap)
    problems = judge(_oracle(), snap, ["r1"])
    assert any(expected in p for p in problems), problems


def test_judge_rejects_a_later_published_original():
    """A (published after B) kept as the original breaks the earliest-published rule."""
    snap = _good()
    snap.pages = [{"_id": "p1", "url": A}]
    snap.duplicates = [{"url": B, "original_id": "p1"}, {"url": C, "original_id": "p1"}]
    problems = judge(_oracle(), snap, ["r1"])
    assert any("the original must be one of" in p for p in problems), problems


def test_a_story_whose_text_makes_no_valid_copies_is_drawn_again():
    """Seed 1167: one text (an English-heavy brief the spider takes for no article) made no valid copy group
    in 12 tries and the whole seed failed as a harness error; the corpus is now drawn again, deterministically."""
    from tests.invariant.corpus import build

    first, second = build(1167), build(1167)
    try:
        assert len(first.oracle.groups) == 14
        assert [(p.role, p.text) for p in first.pages.values()] == [(p.role, p.text) for p in second.pages.values()]
    finally:
        first.stop()
        second.stop()
