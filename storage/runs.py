"""RunStore: one record per crawl (collection `runs`): when it started and ended, and its counts."""
from __future__ import annotations

from .connection import Connection
from .documents import out
from .errors import StorageUnavailable
from .schema import new_id, now, to_oid


class RunStore(Connection):
    """Start, finish and list crawl runs; writes are spooled while MongoDB is away."""

    def start_run(self, spider: str) -> str:
        """Record the start of a crawl; returns the run id."""
        rid = to_oid(new_id())
        doc = {"_id": rid, "spider": spider, "started": now(), "finished": None, "counts": {}}
        try:
            self._retry("mongo", self.runs.insert_one, doc)
        except StorageUnavailable:
            self._spool("start_run", doc=doc)
        return str(rid)

    def finish_run(self, run_id: str, counts: dict) -> None:
        """Record the end of a crawl and its counts."""
        upd = {"$set": {"finished": now(), "counts": dict(counts)}}
        try:
            self._retry("mongo", self.runs.update_one, {"_id": to_oid(run_id)}, upd, upsert=True)
        except StorageUnavailable:
            self._spool("finish_run", run_id=run_id, counts=dict(counts))

    def list_runs(self, limit: int = 50) -> list[dict]:
        """Most recent crawl runs first (the admin dashboard's table)."""
        return [out(d) for d in self._retry("mongo", list, self.runs.find().sort("started", -1).limit(limit))]
