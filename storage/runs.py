"""Runs (`store.runs`): one record per crawl (collection `runs`) and what became of every URL it touched
(`outcomes`)."""
from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from typing import Any, Iterator

from .connection import Connection
from .documents import check_text, fit_bson, insert_once, out
from .errors import BadDocument, StorageUnavailable
from .schema import OUTCOMES, new_id, now, to_date, to_oid
from .processes import pid_alive

log = logging.getLogger(__name__)
STALE_RUN_HOURS = 24.0  # an unfinished run of another host (or without a pid) older than this is closed

OUTCOME_FIELDS = ("url", "outcome", "reason", "detail", "original_url", "method", "fetched", "at", "spider")


class Runs:
    """Start, finish and list crawl runs and their per-URL outcomes; writes are spooled while MongoDB is away."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages, spool


    def start(self, spider: str) -> str:
        """Record the start of a crawl (with its pid and host, so a killed run is known dead); returns the
        run id. Runs left unfinished by killed crawls are closed as interrupted first."""
        try:
            self.close_interrupted()
        except StorageUnavailable as e:
            log.info("unfinished runs not checked: %s", e)
        rid = to_oid(new_id())
        doc = {"_id": rid, "spider": spider, "started": now(), "finished": None, "counts": {},
               "pid": os.getpid(), "host": socket.gethostname()}
        try:
            self.conn._retry("mongo", insert_once, self.conn.db.runs, [doc])
        except StorageUnavailable:
            self.conn._spool("start_run", doc=doc)
        return str(rid)

    def close_interrupted(self, stale_hours: float | None = None) -> int:
        """Mark unfinished runs whose crawler is gone as finished with status `interrupted`.

        Dead means: this host and its pid no longer runs; a run of another host (or without a pid) is only
        closed once older than stale_hours (ZHDEDUP_STALE_RUN_HOURS, default 24): it may still be running.
        """
        hours = float(os.environ.get("ZHDEDUP_STALE_RUN_HOURS", STALE_RUN_HOURS)) if stale_hours is None \
            else stale_hours
        cutoff = now() - dt.timedelta(hours=hours)
        host, closed = socket.gethostname(), 0
        open_runs = self.conn.db.runs.find({"finished": None}, {"pid": 1, "host": 1, "started": 1})
        for run in self.conn._retry("mongo", list, open_runs):
            if run.get("host") == host and run.get("pid"):
                if run["pid"] == os.getpid() or pid_alive(int(run["pid"])):
                    continue
            elif not (run.get("started") and to_date(run["started"]) < cutoff):
                continue
            res = self.conn._retry("mongo", self.conn.db.runs.update_one, {"_id": run["_id"], "finished": None},
                              {"$set": {"finished": now(), "status": "interrupted",
                                        "counts.finish_reason": "interrupted"}})
            closed += res.modified_count
        if closed:
            log.warning("closed %d crawl run(s) left unfinished by a crawler that was killed, as interrupted", closed)
        return closed

    def finish(self, run_id: str, counts: dict) -> None:
        """Record the end of a crawl and its counts."""
        upd = {"$set": {"finished": now(), "counts": dict(counts), "status": "finished"}}
        try:
            self.conn._retry("mongo", self.conn.db.runs.update_one, {"_id": to_oid(run_id)}, upd, upsert=True)
        except StorageUnavailable:
            self.conn._spool("finish_run", run_id=run_id, counts=dict(counts))

    def recent(self, limit: int = 50) -> list[dict]:
        """Most recent crawl runs first (the admin dashboard's table)."""
        runs = self.conn.db.runs.find().sort("started", -1).limit(limit)
        return [out(d) for d in self.conn._retry("mongo", list, runs)]

    def latest(self) -> dict | None:
        """The most recently started crawl run, or None."""
        runs = self.list(1)
        return runs[0] if runs else None

    def record_outcomes(self, run_id: str, records: list[dict]) -> int:
        """Append what became of a batch of URLs (stored, unchanged, duplicate, skipped, failed) to a run."""
        docs = [_outcome_doc(run_id, r) for r in records]
        if not docs:
            return 0
        try:
            self.conn._retry("mongo", insert_once, self.conn.outcomes, docs)
        except StorageUnavailable:
            self.conn._spool("record_outcomes", run_id=run_id, records=docs)
        return len(docs)

    def find_outcomes(self, run_id: str | None = None, outcome: str | None = None, reason: str | None = None,
                      url: str | None = None, limit: int = 0, skip: int = 0) -> Iterator[dict]:
        """Outcomes in the order they were recorded, filtered by run, outcome, reason and URL."""
        q: dict[str, Any] = {}
        for field, value in (("run", run_id), ("outcome", outcome), ("reason", reason), ("url", url)):
            if value:
                q[field] = str(value)
        cur = self.conn.outcomes.find(q, {"_id": 0}).sort([("at", 1), ("_id", 1)])
        yield from cur.skip(max(0, int(skip))).limit(max(0, int(limit)))

    def outcome_counts(self, run_id: str) -> dict[str, dict[str, int]]:
        """{outcome: {reason: count}} of one run."""
        pipeline = [{"$match": {"run": str(run_id)}},
                    {"$group": {"_id": {"o": "$outcome", "r": "$reason"}, "n": {"$sum": 1}}}]
        counts: dict[str, dict[str, int]] = {}
        for row in self.conn._retry("mongo", list, self.conn.outcomes.aggregate(pipeline)):
            counts.setdefault(row["_id"]["o"], {})[row["_id"].get("r") or ""] = row["n"]
        return counts


def _outcome_doc(run_id: str, record: dict) -> dict:
    """One outcome as stored: known fields only, a valid outcome, text that MongoDB can hold."""
    if record.get("outcome") not in OUTCOMES:
        raise BadDocument(f"outcome must be one of {OUTCOMES}, not {record.get('outcome')!r}")
    if not record.get("url"):
        raise BadDocument("an outcome needs a 'url'")
    doc = {k: record[k] for k in OUTCOME_FIELDS if record.get(k) is not None}
    doc["_id"] = to_oid(new_id())  # fixed before the first attempt: a retried insert finds it (insert_once)
    doc["run"] = str(run_id)
    doc["reason"] = str(record.get("reason") or "")
    doc["at"] = to_date(doc["at"]) if doc.get("at") else now()
    check_text(doc, ("url", "reason", "detail", "original_url"))
    return fit_bson(doc, "detail")
