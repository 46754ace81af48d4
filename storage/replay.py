"""The spool replay: writes and dedup decisions that waited out an outage, made once the servers answer.

A page kept while its dedup decision could not be made goes through the whole decision again, with the
parameters of the crawl that deferred it, and is moved to duplicates if it is a copy; pages kept undecided
longer than `adopt_undecided_seconds` (their spool elsewhere) are decided here too. Called by
`Store.replay_spool` (storage/maintenance.py) when a store opens.
"""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import fields, replace
from typing import Any

import redis
from bson import ObjectId
from pymongo.errors import PyMongoError

from fingerprint.neardup import DedupDoc, DedupEngine, NearDupParams, Verdict, publish_date

from . import kept
from .dedup_index import RedisDedupIndex
from .documents import insert_once
from .errors import StorageUnavailable
from .pages import UNDECIDED, decided
from .schema import now, to_oid, to_unsigned64

log = logging.getLogger("storage.maintenance")   # the replay's lines keep the name operators grep for
DECISION_OPS = ("index", "recheck")   # spooled dedup decisions (check-and-insert, a failed lookup)
POSTPONED = object()   # a decision that waits for one made later in the same spool


class _Replay:
    """One replay's dedup engines over the store, the pages still in the spool, and what it decided."""

    def __init__(self, store: Any, pending: dict[str, dict]) -> None:
        self.pending = pending
        self.replayed: dict[str, bool] = {}   # page id -> True if it stands, for every page decided here
        self.index = RedisDedupIndex(store, pending, self.replayed)
        self.default = store.config.dedup_params or NearDupParams(k=self.index.k)
        self._engines: dict[NearDupParams, DedupEngine] = {}
        self.demoted: dict[str, Verdict] = {}
        self.later: list[dict] = []   # entries whose decision waits for a page this spool decides later
        self.trace = bool(store.config.trace_decisions)

    def engine(self, recorded: dict | None) -> DedupEngine:
        """An engine with the parameters of the crawl that deferred the decision (recorded in its spool
        entry; older entries: this store's), at the k the index serves."""
        known = {f.name for f in fields(NearDupParams)} - {"k"}
        params = replace(self.default, **{k: v for k, v in (recorded or {}).items() if k in known}, k=self.index.k)
        if params not in self._engines:
            self._engines[params] = DedupEngine(params, self.index, self.trace)
        return self._engines[params]


def dedup_doc(page: dict) -> DedupDoc | None:
    """What the engine needs of a stored (or spooled) page; None without fingerprints."""
    if not isinstance(page.get("content_hash"), str) or page.get("simhash") is None:
        return None
    return DedupDoc(str(page["_id"]), page.get("text") or "", page["content_hash"], to_unsigned64(int(page["simhash"])),
                    tuple(to_unsigned64(int(v)) for v in page.get("sketch") or ()), publish_date(page.get("published")),
                    page.get("url"))


def replay_spool(store: Any) -> dict[str, int]:
    """Replay spooled writes (oldest first); entries that still fail are spooled again.

    A page kept while its dedup decision could not be made (Redis away: `index`; a lookup failed:
    `recheck`) goes through the WHOLE decision again (DedupEngine over RedisDedupIndex: exact,
    SimHash, passages) and is moved to duplicates if it is a copy. Those pages are left out of the
    index repair until then, so a copy seen during the outage is still found to be a copy.
    """
    stats = {"replayed": 0, "demoted": 0, "failed": 0}
    claimable = store.spool.claimable()
    stats["left_to_running_crawlers"] = len(store.spool.pending()) - len(claimable)   # files they replay themselves
    claimed = [c for c in (store.spool.claim(p) for p in claimable) if c is not None]
    entries = [e for c in claimed for e in store.spool.entries(c)] + adopt_undecided(store, )
    pending = {str(e["args"]["doc"]["_id"]): e["args"]["doc"] for e in entries if e["op"] == "save_page"}
    undecided = {e["args"]["page_id"] for e in entries if e["op"] in DECISION_OPS}
    try:
        store.reconcile_index(exclude=store.still_undecided(undecided) | (undecided & set(pending)), saving=pending)
    except StorageUnavailable as e:
        log.warning("index repair skipped: %s", e)
    replay = _Replay(store, pending)
    store.replaying = True
    try:
        for entry in entries:
            _replay_entry(store, entry, replay, stats)
        _replay_postponed(store, replay, stats)
    finally:
        store.replaying = False
    for c in claimed:
        store.spool.done(c)
    if stats["replayed"] or stats["failed"]:
        log.warning("spool replay: %d replayed, %d copies found and moved to duplicates, %d kept for later",
                    stats["replayed"], stats["demoted"], stats["failed"])
    return stats

def _replay_entry(store: Any, entry: dict, replay: _Replay, stats: dict) -> None:
    """One spooled write or decision; one that fails again goes back to the spool, one that must wait for a
    decision later in this spool to `replay.later`."""
    try:
        done = _replay_one(store, entry["op"], entry["args"], replay, stats)
    except (StorageUnavailable, PyMongoError, redis.RedisError) as e:
        stats["failed"] += 1
        log.warning("replay of %s failed (%s); kept in the spool", entry["op"], e)
        store._spool(entry["op"], **entry["args"])
        return
    if done is POSTPONED:
        replay.later.append(entry)
    elif done is not False:
        stats["replayed"] += 1


def _replay_postponed(store: Any, replay: _Replay, stats: dict) -> None:
    """Decisions that waited for a page whose own decision came later in the spool (a dated copy of an undated
    page kept undecided: seed 4003), made again while each round makes one more; the rest waits in the spool."""
    while replay.later:
        todo, replay.later = replay.later, []
        for entry in todo:
            _replay_entry(store, entry, replay, stats)
        if len(replay.later) == len(todo):
            break
    for entry in replay.later:
        stats["failed"] += 1
        if entry["op"] == "join_pages":   # the page that would stand is still undecided: its decision is not here
            log.warning("spooled join of pages %s and %s: the one that would stand is kept undecided; kept in the "
                        "spool", entry["args"]["displacer"], entry["args"]["original"])
            store._spool(entry["op"], **entry["args"])
            continue
        pid = entry["args"]["page_id"]
        why = replay.index.postponed.get(pid, "postponed")
        log.warning("spooled check of page %s: %s; kept in the spool", pid, why)
        store._spool(entry["op"], **{**entry["args"], "why": why})


def adopt_undecided(store: Any) -> list[dict]:
    """Checks to replay for pages kept undecided longer than adopt_undecided_seconds: their spool is not
    here (a crawler on another machine that never ran again, a spool lost with its disk), and until decided
    they are in no index, so their copies would be kept. Each page is taken by one process (its mark's
    time moves on); the crawler that spooled it, if it comes back, finds it decided and leaves it."""
    limit = store.config.adopt_undecided_seconds
    if limit < 0:
        return []
    cutoff = now() - dt.timedelta(seconds=limit)
    # marked before the cutoff, or without a time; not an $or, which makes SecantusDB read every page, _id or not
    old = {"undecided": True, "undecided_since": {"$not": {"$gte": cutoff}}}
    taken = []
    for page in store._retry("mongo", list, store.pages.find(old, {"_id": 1})):
        if store._retry("mongo", store.pages.find_one_and_update, {"_id": page["_id"], **old},
                       {"$set": {"undecided_since": now()}}, {"_id": 1}) is not None:
            taken.append({"op": "recheck", "args": {"page_id": str(page["_id"]), "why": "adopted"}})
    if taken:
        log.warning("%d pages kept undecided for over %.0f s, their spooled checks not here (another machine, or "
                    "a spool lost): decided now", len(taken), limit)
    return taken

def _replay_one(store: Any, op: str, a: dict, replay: _Replay, stats: dict) -> object:
    if op in DECISION_OPS:
        return _replay_decision(store, a, replay, stats)
    if op == "save_page":
        doc = a["doc"]
        verdict = replay.demoted.get(str(doc["_id"]))
        if verdict is not None:
            _demote(store, doc, verdict, replay.index)
            stats["demoted"] += 1
        else:
            if str(doc["_id"]) in replay.replayed:   # its decision came first in the spool: kept, decided
                doc = decided(doc)
            store._settle_saved([{**doc, "_id": store._retry("mongo", store._save_page, doc)}])
        replay.pending.pop(str(doc["_id"]), None)   # MongoDB has it now (a decision made later reads it there)
    elif op == "join_pages":
        return _replay_join(store, a, stats)
    elif op == "settle_pages":
        ids = [to_oid(i) for i in a["ids"]]
        store.settle_pages(store._retry("mongo", list, store.pages.find({"_id": {"$in": ids}})))
    elif op == "record_duplicate":
        store._retry("mongo", store.duplicates.update_one, {"url": a["doc"]["url"]}, {"$set": a["doc"]}, upsert=True)
        store.settle_copies([a["doc"]["original_id"]])
    elif op == "record_outcomes":
        records = [r if "_id" in r else {**r, "_id": ObjectId()} for r in a["records"]]  # older spools
        store._retry("mongo", insert_once, store.outcomes, records)
    elif op == "start_run":
        store._retry("mongo", store.db.runs.replace_one, {"_id": a["doc"]["_id"]}, a["doc"], upsert=True)
    elif op == "finish_run":
        store.runs.finish(a["run_id"], a["counts"])
    elif op == "upsert_match":
        store.matches.save(a["doc"])
    else:
        raise ValueError(f"unknown spool operation {op!r}")
    return None


def _replay_join(store: Any, a: dict, stats: dict) -> object:
    """A join a save could not make, made now; POSTPONED while the page that would stand is kept undecided (its
    decision may come later in this spool), kept in the spool while the page that stands is still on its way
    (claimed, not landed), dropped when one of the two pages never will land (no page, no claim: nothing to join)."""
    if store._join(a["displacer"], a["original"], a["method"]):
        return None
    ends = {store.resolve_original(p)[0] for p in (a["displacer"], a["original"])}
    if any(store._kept_undecided(p) for p in ends):
        return POSTPONED
    gone = [p for p in ends if kept.keys_of(store, p) is None and not kept.claimed(store, p)]
    if gone:
        log.info("spooled join of pages %s and %s: page %s never landed; nothing to join", a["displacer"],
                 a["original"], ", ".join(sorted(gone)))
        return None
    stats["failed"] += 1
    store._spool("join_pages", **a)
    return False


def _replay_decision(store: Any, a: dict, replay: _Replay, stats: dict, inherited: bool = False) -> object:
    """Decide again, from scratch, a page kept without a full dedup decision; demote it if it is a copy.
    False when Redis went away again, POSTPONED when it waits for a decision later in the spool."""
    pid = a["page_id"]
    if pid in replay.replayed:
        return None
    page = replay.pending.get(pid) or store._retry("mongo", store.pages.find_one, {"_id": to_oid(pid)})
    if page is None and (heir := _heir(store, pid)) is not None and heir not in replay.replayed:
        return _replay_decision(store, {**a, "page_id": heir}, replay, stats, inherited=True)
    doc = dedup_doc(page) if page is not None else None
    if doc is None:   # never saved (its crawler died first) or fingerprinting was off: nothing to decide
        log.info("spooled check of page %s: no stored page to decide on", pid)
        return None
    if not (inherited or pid in replay.pending or page.get("undecided")):   # another crawler decided it
        log.info("spooled check of page %s: decided meanwhile by another crawler; left as it is", pid)
        return None
    replay.index.forget(doc)   # its own entries out: it is compared with everything else, in spool order
    replay.index.postponed.pop(pid, None)
    verdict = replay.engine(a.get("params")).decide(doc)
    if pid in replay.index.postponed:   # a lookup it needs waits (RedisDedupIndex.settled): tried again later
        return POSTPONED
    if verdict.spooled:        # Redis away again: check_and_insert re-spooled it
        stats["failed"] += 1
        return False
    replay.replayed[pid] = not verdict.is_duplicate
    if verdict.is_duplicate:
        replay.demoted[pid] = verdict
        if pid not in replay.pending:
            _demote(store, page, verdict, replay.index)
            stats["demoted"] += 1
    elif pid not in replay.pending:
        store._retry("mongo", store.pages.update_one, {"_id": to_oid(pid)}, {"$unset": dict.fromkeys(UNDECIDED, "")})
    return None

def _heir(store: Any, page_id: str) -> str | None:
    """The page that displaced an undecided one, which takes over its open decision: found by SimHash,
    it stood for a page whose passage step never ran (seed 1286: the passage copy it missed stayed kept)."""
    marker = store._retry("mongo", store.demotions.find_one, {"_id": str(page_id)}, {"by_keys": 1})
    if marker is None or marker.get("by_keys") is None:   # none, or a copy forwarded to its original
        return None
    heir = store.resolve_original(page_id)[0]
    return heir if heir != str(page_id) else None

def _demote(store: Any, page: dict, verdict: Verdict, index: RedisDedupIndex) -> None:
    """A page stored as new without a full dedup decision turned out to be a copy: record it as a
    duplicate, re-point copies recorded against it, and take it out of pages."""
    pid = str(page["_id"])
    original_url = index.url_of(verdict.original) if verdict.original else None
    method = verdict.recorded_as
    store._retry("mongo", store.duplicates.update_one, {"url": page["url"]}, {"$set": {
        "url": page["url"], "original_id": verdict.original, "original_url": original_url,
        "method": method, "distance": verdict.distance, "coverage": verdict.coverage,
        "site": page.get("site"), "title": page.get("title"), "fetched": page.get("fetched") or now(),
        "content_hash": page.get("content_hash"), "found_by": "spool replay"}}, upsert=True)
    store._retry("mongo", store.pages.delete_one, {"_id": page["_id"]})
    store.forward_copy(pid, verdict.original, original_url, method)   # its copies, now and later
