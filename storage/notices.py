"""NoticeStore: takedown notices (collection `notices`) built from confirmed matches, and the follow-up of
every noticed URL (collection `takedowns`: page still up, or gone and since when).

A match covered by a notice carries its `notice_id`, so the next notice of the site covers only newer
confirmed matches and nothing is noticed twice; `mark_notice_sent` sends a notice at most once.
"""
from __future__ import annotations

from typing import Any

import pymongo

from .connection import Connection
from .documents import insert_once, out
from .schema import new_id, now, to_oid

TAKEDOWN_STATES = ("up", "gone")
NOTICE_INDEXES = {"notices": [([("site", pymongo.ASCENDING), ("created", pymongo.DESCENDING)], False)],
                  "takedowns": [("site", False), ("state", False)]}


class NoticeStore(Connection):
    """Store notices with the matches they cover; track whether each noticed page was taken down."""

    def ensure_indexes(self) -> None:
        """The shared indexes plus those of notices and takedowns."""
        super().ensure_indexes()
        for coll, specs in NOTICE_INDEXES.items():
            for keys, unique in specs:
                self.db[coll].create_index(keys, unique=unique)

    def unnoticed_confirmed_matches(self, site: str) -> list[dict]:
        """Confirmed matches of a site that no notice covers yet, oldest first."""
        cur = self.matches.find({"site": site, "status": "confirmed", "notice_id": None}).sort("created", 1)
        return [out(d) for d in self._retry("mongo", list, cur)]

    def notice_sites(self) -> list[dict]:
        """Sites with confirmed matches: how many, and how many no notice covers yet."""
        pipeline = [{"$match": {"status": "confirmed"}},
                    {"$group": {"_id": "$site", "confirmed": {"$sum": 1},
                                "unnoticed": {"$sum": {"$cond": [{"$ifNull": ["$notice_id", False]}, 0, 1]}}}},
                    {"$sort": {"_id": 1}}]
        return [{"site": r["_id"], "confirmed": r["confirmed"], "unnoticed": r["unnoticed"]}
                for r in self._retry("mongo", list, self.matches.aggregate(pipeline))]

    def save_notice(self, notice: dict, probes: dict[str, list[str]]) -> str:
        """Insert a notice, stamp its matches with its id and open a takedown record per URL; returns its id.
        `probes` maps each URL to short passages whose absence later means the content is gone."""
        nid = new_id()
        doc = {**notice, "_id": to_oid(nid), "created": notice.get("created") or now(), "status": "draft",
               "sent": None}
        self._retry("mongo", insert_once, self.db.notices, [doc])
        ids = [to_oid(i["match_id"]) for i in notice["items"]]
        self._retry("mongo", self.matches.update_many, {"_id": {"$in": ids}}, {"$set": {"notice_id": nid}})
        for item in notice["items"]:
            self._retry("mongo", self.db.takedowns.update_one, {"_id": item["url"]},
                        {"$setOnInsert": {"site": notice["site"], "state": "up", "noticed": doc["created"],
                                          "gone_at": None, "checked": None},
                         "$addToSet": {"notice_ids": nid, "probes": {"$each": probes.get(item["url"], [])}}},
                        upsert=True)
        return nid

    def get_notice(self, notice_id: str) -> dict | None:
        """One notice by id, or None."""
        return out(self._retry("mongo", self.db.notices.find_one, {"_id": to_oid(notice_id)}))

    def notices_of_site(self, site: str | None = None, limit: int = 200) -> list[dict]:
        """Notices (of one site, or all), newest first."""
        cur = self.db.notices.find({"site": site} if site else {}).sort("created", -1).limit(limit)
        return [out(d) for d in self._retry("mongo", list, cur)]

    def mark_notice_sent(self, notice_id: str, by: str = "", channel: str = "", recipient: str = "") -> bool:
        """Mark a draft notice as sent (how and to whom); False when it was already sent (a notice is sent once)."""
        oid, token = to_oid(notice_id), new_id()
        res = self._retry("mongo", self.db.notices.update_one, {"_id": oid, "status": "draft"},
                          {"$set": {"status": "sent", "sent": now(), "sent_by": by, "sent_token": token,
                                    "sent_channel": channel, "sent_to": recipient}})
        # a retry after a lost reply finds the notice sent by this very call
        return res.modified_count == 1 or self._retry("mongo", self.db.notices.count_documents,
                                                       {"_id": oid, "sent_token": token}) == 1

    # ---- rights holders ----------------------------------------------------------------------------
    def save_holder(self, name: str, contact: str, address: str) -> None:
        """Remember a rights holder's contact and address for the next notice (collection `holders`)."""
        self._retry("mongo", self.db.holders.update_one, {"_id": name},
                    {"$set": {"contact": contact, "address": address, "updated": now()}}, upsert=True)

    def holders(self) -> list[dict]:
        """Every remembered rights holder (name, contact, address), by name."""
        return [out(d) for d in self._retry("mongo", list, self.db.holders.find({}).sort("_id", 1))]

    # ---- follow-up ---------------------------------------------------------------------------------
    def noticed_urls(self, site: str | None = None) -> list[dict]:
        """Noticed URLs still up (of one site, or all), with their probes: what a watch round re-checks."""
        query: dict[str, Any] = {"state": "up"}
        if site:
            query["site"] = site
        return [out(d) for d in self._retry("mongo", list, self.db.takedowns.find(query))]

    def record_takedown_check(self, url: str, gone: bool, http_status: int, reason: str) -> None:
        """Record one re-check of a noticed URL; the first check that finds it gone sets gone_at."""
        at = now()
        upd: dict[str, Any] = {"checked": at, "http_status": http_status, "reason": reason,
                               "state": "gone" if gone else "up"}
        self._retry("mongo", self.db.takedowns.update_one, {"_id": url}, {"$set": upd})
        if gone:
            self._retry("mongo", self.db.takedowns.update_one, {"_id": url, "gone_at": None},
                        {"$set": {"gone_at": at}})

    def takedowns(self, site: str | None = None) -> list[dict]:
        """Every noticed URL with its follow-up state (of one site, or all)."""
        cur = self.db.takedowns.find({"site": site} if site else {}).sort([("site", 1), ("_id", 1)])
        return [out(d) for d in self._retry("mongo", list, cur)]
