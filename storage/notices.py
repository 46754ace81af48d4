"""Notices (`store.notices`): takedown notices (collection `notices`) built from confirmed matches, and the
follow-up of every noticed URL (collection `takedowns`: page still up, or gone and since when).

A match covered by a notice carries its `notice_id`, so the next notice of the site covers only newer
confirmed matches and nothing is noticed twice; `mark_sent` sends a notice at most once. A page taken
down that serves the copy again, or the same work copied on a new URL of a noticed site, is flagged on its
match as `reappeared` with the earlier notice's id (`flag_reappearance`)."""
from __future__ import annotations

from typing import Any

import pymongo

from .connection import Connection
from .documents import insert_once, out
from .schema import create_indexes, new_id, now, to_oid, utc

TAKEDOWN_STATES = ("up", "gone")
NOTICE_INDEXES = {"notices": [([("site", pymongo.ASCENDING), ("created", pymongo.DESCENDING)], False)],
                  "takedowns": [("site", False), ("state", False)]}


class Notices:
    """Store notices with the matches they cover; track whether each noticed page was taken down."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages, spool

    def ensure_indexes(self) -> None:
        """The shared indexes plus those of notices and takedowns."""
        for coll, specs in NOTICE_INDEXES.items():
            create_indexes(self.conn.db[coll], specs)

    def unnoticed_confirmed_matches(self, site: str) -> list[dict]:
        """Confirmed matches of a site that no notice covers yet, oldest first."""
        cur = self.conn.db.matches.find({"site": site, "status": "confirmed", "notice_id": None}).sort("created", 1)
        return [out(d) for d in self.conn._retry("mongo", list, cur)]

    def sites(self) -> list[dict]:
        """Sites with confirmed matches: how many, and how many no notice covers yet."""
        pipeline = [{"$match": {"status": "confirmed"}},
                    {"$group": {"_id": "$site", "confirmed": {"$sum": 1},
                                "unnoticed": {"$sum": {"$cond": [{"$ifNull": ["$notice_id", False]}, 0, 1]}}}},
                    {"$sort": {"_id": 1}}]
        return [{"site": r["_id"], "confirmed": r["confirmed"], "unnoticed": r["unnoticed"]}
                for r in self.conn._retry("mongo", list, self.conn.db.matches.aggregate(pipeline))]

    def save(self, notice: dict, probes: dict[str, list[str]]) -> str:
        """Insert a notice, stamp its matches with its id and open a takedown record per URL; returns its id.
        `probes` maps each URL to short passages whose absence later means the content is gone."""
        nid = new_id()
        doc = {**notice, "_id": to_oid(nid), "created": notice.get("created") or now(), "status": "draft",
               "sent": None}
        self.conn._retry("mongo", insert_once, self.conn.db.notices, [doc])
        ids = [to_oid(i["match_id"]) for i in notice["items"]]
        self.conn._retry("mongo", self.conn.db.matches.update_many, {"_id": {"$in": ids}}, {"$set": {"notice_id": nid}})
        for item in notice["items"]:
            self.conn._retry("mongo", self.conn.db.takedowns.update_one, {"_id": item["url"]},
                             {"$setOnInsert": {"site": notice["site"], "state": "up", "noticed": doc["created"],
                                               "gone_at": None, "checked": None},
                              "$addToSet": {"notice_ids": nid, "probes": {"$each": probes.get(item["url"], [])}}},
                             upsert=True)
        return nid

    def get(self, notice_id: str) -> dict | None:
        """One notice by id, or None."""
        return out(self.conn._retry("mongo", self.conn.db.notices.find_one, {"_id": to_oid(notice_id)}))

    def of_site(self, site: str | None = None, limit: int = 200) -> list[dict]:
        """Notices (of one site, or all), newest first."""
        cur = self.conn.db.notices.find({"site": site} if site else {}).sort("created", -1).limit(limit)
        return [out(d) for d in self.conn._retry("mongo", list, cur)]

    def mark_sent(self, notice_id: str, by: str = "", channel: str = "", recipient: str = "") -> bool:
        """Mark a draft notice as sent (how and to whom); False when it was already sent (a notice is sent once)."""
        oid, token = to_oid(notice_id), new_id()
        res = self.conn._retry("mongo", self.conn.db.notices.update_one, {"_id": oid, "status": "draft"},
                               {"$set": {"status": "sent", "sent": now(), "sent_by": by, "sent_token": token,
                                         "sent_channel": channel, "sent_to": recipient}})
        # a retry after a lost reply finds the notice sent by this very call
        return res.modified_count == 1 or self.conn._retry("mongo", self.conn.db.notices.count_documents,
                                                            {"_id": oid, "sent_token": token}) == 1

    # ---- rights holders ----------------------------------------------------------------------------
    def save_holder(self, name: str, contact: str, address: str) -> None:
        """Remember a rights holder's contact and address for the next notice (collection `holders`)."""
        self.conn._retry("mongo", self.conn.db.holders.update_one, {"_id": name},
                         {"$set": {"contact": contact, "address": address, "updated": now()}}, upsert=True)

    def holders(self) -> list[dict]:
        """Every remembered rights holder (name, contact, address), by name."""
        return [out(d) for d in self.conn._retry("mongo", list, self.conn.db.holders.find({}).sort("_id", 1))]

    # ---- follow-up ---------------------------------------------------------------------------------
    def noticed_urls(self, site: str | None = None) -> list[dict]:
        """Noticed URLs (of one site, or all) with their probes: what a watch round re-checks; those taken
        down too, since a page taken down may come back (re-appearance)."""
        query: dict[str, Any] = {"state": {"$in": ["up", "gone"]}}
        if site:
            query["site"] = site
        return [out(d) for d in self.conn._retry("mongo", list, self.conn.db.takedowns.find(query))]

    def record_takedown_check(self, url: str, gone: bool, http_status: int, reason: str) -> None:
        """Record one re-check of a noticed URL; the first check that finds it gone sets gone_at."""
        at = now()
        upd: dict[str, Any] = {"checked": at, "http_status": http_status, "reason": reason,
                               "state": "gone" if gone else "up"}
        self.conn._retry("mongo", self.conn.db.takedowns.update_one, {"_id": url}, {"$set": upd})
        if gone:
            self.conn._retry("mongo", self.conn.db.takedowns.update_one, {"_id": url, "gone_at": None},
                             {"$set": {"gone_at": at}})

    def takedowns(self, site: str | None = None) -> list[dict]:
        """Every noticed URL with its follow-up state (of one site, or all)."""
        cur = self.conn.db.takedowns.find({"site": site} if site else {}).sort([("site", 1), ("_id", 1)])
        return [out(d) for d in self.conn._retry("mongo", list, cur)]

    # ---- re-appearance -----------------------------------------------------------------------------
    def flag_reappearance(self, match_id: str, url: str, site: str | None, source_id: str) -> dict | None:
        """Flag a match whose page was taken down and serves the copy again (same URL), or that copies a
        noticed work on a new URL of the same site; links it to the earlier notice. Returns the flag or None."""
        match = self.conn._retry("mongo", self.conn.db.matches.find_one, {"_id": to_oid(match_id)},
                                 {"reappeared": 1, "notice_id": 1})
        if match is None:
            return None
        flag = self._back_at_same_url(match, url) or self._on_new_url(match, url, site, source_id)
        if flag is not None:
            self.conn._retry("mongo", self.conn.db.matches.update_one, {"_id": to_oid(match_id)},
                             {"$set": {"reappeared": flag}})
        return flag

    def _back_at_same_url(self, match: dict, url: str) -> dict | None:
        """The URL was found taken down after a notice and now matches again (once per takedown)."""
        t = self.conn._retry("mongo", self.conn.db.takedowns.find_one, {"_id": url, "gone_at": {"$ne": None}})
        earlier = (match.get("reappeared") or {}).get("at")
        if t is None or (earlier is not None and utc(earlier) >= utc(t["gone_at"])):
            return None
        at = now()
        self.conn._retry("mongo", self.conn.db.takedowns.update_one, {"_id": url},
                         {"$set": {"state": "up", "reappeared_at": at}})
        return {"kind": "same_url", "notice_ids": list(t.get("notice_ids") or []), "gone_at": t["gone_at"], "at": at}

    def _on_new_url(self, match: dict, url: str, site: str | None, source_id: str) -> dict | None:
        """A first match on this URL of a work already noticed to the same site (the copy moved)."""
        if not site or match.get("notice_id") or match.get("reappeared"):
            return None
        earlier = self.conn._retry("mongo", self.conn.db.matches.find_one,
                                   {"site": site, "source_id": source_id, "notice_id": {"$ne": None},
                                    "suspect_url": {"$ne": url}}, {"suspect_url": 1, "notice_id": 1})
        if earlier is None:
            return None
        return {"kind": "new_url", "earlier_url": earlier["suspect_url"], "notice_ids": [earlier["notice_id"]],
                "at": now()}
