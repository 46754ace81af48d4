"""Matches (`store.matches`): infringement matches (collection `matches`): saved from the pipeline, reviewed,
the admin's list and exports (storage/matchlist.py), site licences (`licenses`) and dashboard numbers."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterator

import pymongo

from .connection import Connection
from .documents import check_keys, out
from .errors import BadDocument, StorageUnavailable
from .matchlist import SORTS, MatchQuery, count_filter, decode_cursor, find_matches
from .schema import MATCH_STATUSES, REVIEW_ACTIONS, new_id, now, to_oid, utc

EXPORT_MAX = 100_000
REVIEW_FIELDS = ("_id", "id", "status", "created", "history", "reviewer", "note", "reviewed")


class Matches:
    """Write matches, review them, and list them for the admin without whole-collection sorts."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages, spool

    def save(self, doc: dict) -> str:
        """Insert or refresh a match keyed on (suspect_url, source_id); review status and history are kept."""
        if not doc.get("suspect_url") or not doc.get("source_id"):
            raise BadDocument("a match needs 'suspect_url' and 'source_id'")
        body = {k: v for k, v in doc.items() if k not in REVIEW_FIELDS}
        check_keys(body)
        body["updated"] = now()
        key = {"suspect_url": doc["suspect_url"], "source_id": doc["source_id"]}
        upd = {"$set": body, "$setOnInsert": {"status": "new", "created": body["updated"], "history": []}}
        try:
            res = self.conn._retry("mongo", self.conn.db.matches.find_one_and_update, key, upd, upsert=True,
                              projection={"_id": 1}, return_document=pymongo.ReturnDocument.AFTER)
            return str(res["_id"])
        except StorageUnavailable:
            self.conn._spool("upsert_match", doc=dict(doc))
            return ""

    def get(self, match_id: str) -> dict | None:
        """One match by id, or None."""
        return out(self.conn._retry("mongo", self.conn.db.matches.find_one, {"_id": to_oid(match_id)}))

    def review(self, match_id: str, action: str, reviewer: str, note: str | None = None) -> dict | None:
        """Confirm, dismiss, license or reopen a match; the decision is appended to its history. None if no such match."""
        if action not in REVIEW_ACTIONS:
            raise ValueError(f"review action must be one of {sorted(REVIEW_ACTIONS)}, not {action!r}")
        at, oid = now(), to_oid(match_id)
        entry = {"id": new_id(), "action": action, "reviewer": reviewer, "note": note, "at": at}
        upd = {"$set": {"status": REVIEW_ACTIONS[action], "reviewer": reviewer, "note": note, "reviewed": at},
               "$push": {"history": entry}}
        # the entry's id makes a retry after a lost reply a no-op instead of a second history entry
        res = self.conn._retry("mongo", self.conn.db.matches.find_one_and_update,
                               {"_id": oid, "history.id": {"$ne": entry["id"]}},
                          upd, return_document=pymongo.ReturnDocument.AFTER)
        if res is None:
            res = self.conn._retry("mongo", self.conn.db.matches.find_one, {"_id": oid, "history.id": entry["id"]})
        return out(res)

    # ---- the admin's list and exports --------------------------------------------------------------
    def find(self, mq: MatchQuery, projection: dict | None = None) -> tuple[list[dict], str | None]:
        """One page of matches in the requested order (raw documents) and the next page's cursor or None."""
        return self.conn._retry("mongo", find_matches, self.conn.db.matches, mq, projection)

    def count(self, mq: MatchQuery) -> int:
        """How many matches pass the request's filters (the list's total), paging ignored."""
        cond = count_filter(mq)
        if not cond:
            return int(self.conn._retry("mongo", self.conn.db.matches.estimated_document_count))
        return int(self.conn._retry("mongo", self.conn.db.matches.count_documents, cond))

    def site_exists(self, site: str) -> bool:
        """Whether some match is on exactly this site (one index lookup)."""
        return self.conn._retry("mongo", self.conn.db.matches.find_one, {"site": site}, {"_id": 1}) is not None

    def ids_for_urls(self, urls: list[str]) -> dict[str, str]:
        """{suspect URL: id of a match on it} for the URLs that have one (the duplicates view links them)."""
        if not urls:
            return {}
        cur = self.conn.db.matches.find({"suspect_url": {"$in": list(urls)[:1000]}},
                                        {"suspect_url": 1}).sort("created", -1)
        found: dict[str, str] = {}
        for d in self.conn._retry("mongo", list, cur):
            found.setdefault(d["suspect_url"], str(d["_id"]))
        return found

    def record_live_check(self, match_id: str, check: dict) -> None:
        """Keep the latest re-fetch of a match's page (state, time, HTTP status, why) on the match."""
        self.conn._retry("mongo", self.conn.db.matches.update_one, {"_id": to_oid(match_id)},
                         {"$set": {"live_check": check}})

    def batches(self, mq: MatchQuery, limit: int = EXPORT_MAX, batch: int = 500) -> Iterator[list[dict]]:
        """Every match of a filter in order, a batch at a time by cursor (exports, CLI listing)."""
        cur = MatchQuery(**{**mq.__dict__, "page": 1, "per_page": batch, "after": mq.after})
        sent = 0
        while sent < limit:
            docs, nxt = self.find(cur)
            if docs[: limit - sent]:
                yield docs[: limit - sent]
            sent += len(docs)
            if not nxt:
                return
            cur.after = decode_cursor(nxt, SORTS[cur.sort][0])

    def each(self, mq: MatchQuery, limit: int = EXPORT_MAX, batch: int = 500) -> Iterator[dict]:
        """Every match of a filter in order, one by one."""
        for docs in self.batches(mq, limit, batch):
            yield from docs

    # ---- site licences -------------------------------------------------------------------------------
    def license_site(self, site: str, source_id: str, reviewer: str, note: str) -> None:
        """Remember that `site` is licensed for `source_id` (collection `licenses`)."""
        self.conn._retry("mongo", self.conn.db.licenses.update_one, {"_id": f"{source_id}|{site}"},
                    {"$set": {"site": site, "source_id": source_id, "reviewer": reviewer, "note": note,
                              "at": now()}}, upsert=True)

    def is_licensed(self, source_id: str, site: str | None) -> bool:
        """Has a reviewer licensed this site for this source (admin: "license the whole site")?"""
        if not site:
            return False
        return self.conn._retry("mongo", self.conn.db.licenses.find_one, {"_id": f"{source_id}|{site}"}) is not None

    def open_of_site(self, site: str, source_id: str, limit: int = 10_000) -> list[str]:
        """Ids of the not-yet-licensed matches of one source on one site."""
        cur = self.conn.db.matches.find({"site": site, "source_id": source_id, "status": {"$ne": "licensed"}},
                                {"_id": 1}).limit(limit)
        return [str(d["_id"]) for d in self.conn._retry("mongo", list, cur)]

    # ---- dashboard -----------------------------------------------------------------------------------
    def dashboard_stats(self) -> dict[str, Any]:
        """Everything the dashboard aggregates, computed in one go (the admin runs it in the background)."""
        days, series = self._matches_per_day()
        return {"counts": self._dashboard_counts(), "days": days, "series": series, "sites": self._top_sites(),
                "as_of": now()}

    def _dashboard_counts(self) -> dict[str, int]:
        """Pages kept, copies dropped as duplicates, crawled in all, and matches per status."""
        kept = self.conn.pages.estimated_document_count()
        dropped = self.conn.duplicates.estimated_document_count()
        counts = {"pages_crawled": kept + dropped, "pages_kept": kept, "pages_duplicates": dropped}
        groups = self.conn.db.matches.aggregate([{"$group": {"_id": "$status", "n": {"$sum": 1}}}])
        by_status = {r["_id"]: r["n"] for r in groups}
        for s in MATCH_STATUSES:
            counts[f"matches_{s}"] = by_status.get(s, 0)
        counts["matches_total"] = sum(by_status.values())
        return counts

    def _matches_per_day(self, days: int = 30, top: int = 5,
                        at: datetime | None = None) -> tuple[list[str], dict[str, list[int]]]:
        """Match counts per day for the busiest sites (the rest summed as 'other') over recent days."""
        at = utc(at) if at else now()
        start = (at - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
        day_keys = [(start + timedelta(days=i)).strftime("%Y-%m-%d") for i in range(days)]
        counts: dict[str, dict[str, int]] = {}
        for d in self.conn.db.matches.find({"created": {"$gte": start}}, {"site": 1, "created": 1, "_id": 0}):
            c = d.get("created")
            if not isinstance(c, datetime):
                continue
            per_day = counts.setdefault(str(d.get("site") or "?"), {})
            day = utc(c).strftime("%Y-%m-%d")
            per_day[day] = per_day.get(day, 0) + 1
        ranked = sorted(counts, key=lambda s: -sum(counts[s].values()))
        series = {s: [counts[s].get(k, 0) for k in day_keys] for s in ranked[:top]}
        rest = ranked[top:]
        if rest:
            series["other"] = [sum(counts[s].get(k, 0) for s in rest) for k in day_keys]
        return day_keys, series

    def _top_sites(self, n: int = 10) -> list[dict]:
        """Sites with the most open or confirmed matches."""
        pipeline = [
            {"$match": {"status": {"$in": ["new", "confirmed"]}}},
            {"$group": {"_id": "$site", "matches": {"$sum": 1},
                        "confirmed": {"$sum": {"$cond": [{"$eq": ["$status", "confirmed"]}, 1, 0]}}}},
            {"$sort": {"matches": -1, "_id": 1}},
            {"$limit": n},
        ]
        return [{"site": r["_id"], "matches": r["matches"], "confirmed": r["confirmed"]}
                for r in self.conn.db.matches.aggregate(pipeline)]
