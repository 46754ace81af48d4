"""DuplicateStore: copies dropped by dedup (collection `duplicates`) and their clusters for review."""
from __future__ import annotations

import re
from typing import Any

from .connection import Connection
from .documents import check_keys, check_text, fit_bson
from .errors import BadDocument, StorageUnavailable
from .schema import any_id_form, now, to_date

METHODS = ("exact", "near", "passages")


class DuplicateStore(Connection):
    """Record a copy of a kept page; list the clusters of an original and its copies."""

    def record_duplicate(self, doc: dict) -> None:
        """Remember that doc["url"] copies doc["original_id"] (method exact|near|passages, distance); upsert by url."""
        if not doc.get("url") or not doc.get("original_id"):
            raise BadDocument("a duplicate needs 'url' and 'original_id'")
        if doc.get("method", "near") not in METHODS:
            raise BadDocument(f"duplicate method must be exact, near or passages, not {doc.get('method')!r}")
        d = {k: v for k, v in doc.items() if k not in ("_id", "id")}
        check_keys(d)
        check_text(d, ("url", "original_url", "site", "title"))
        d["original_id"] = str(d["original_id"])
        d.setdefault("method", "near")
        d.setdefault("distance", 0)
        d["fetched"] = to_date(d["fetched"]) if d.get("fetched") else now()
        d = fit_bson(d)
        try:
            self._retry("mongo", self.duplicates.update_one, {"url": d["url"]}, {"$set": d}, upsert=True)
        except StorageUnavailable:
            self._spool("record_duplicate", doc=d)

    def duplicate_clusters(self, q: str = "", page: int = 1, per_page: int = 20) -> tuple[list[dict], bool]:
        """Near-duplicate clusters (each original with its copies and distances), newest first; and
        whether there are more pages. q: a substring of a copy's url, title, site or original url."""
        match: dict[str, Any] = {}
        if q:
            rx = {"$regex": re.escape(q[:200]), "$options": "i"}
            match = {"$or": [{"url": rx}, {"title": rx}, {"original_url": rx}, {"site": rx}]}
        pipeline: list[dict] = [
            {"$match": match},
            {"$sort": {"distance": 1}},
            {"$group": {"_id": "$original_id", "original_url": {"$first": "$original_url"},
                        "copies": {"$push": {"url": "$url", "distance": "$distance", "method": "$method",
                                             "site": "$site", "title": "$title", "fetched": "$fetched"}},
                        "n": {"$sum": 1}, "last": {"$max": "$fetched"}}},
            {"$sort": {"last": -1, "_id": 1}},
            {"$skip": (page - 1) * per_page},
            {"$limit": per_page + 1},
        ]
        clusters = list(self.duplicates.aggregate(pipeline))
        more = len(clusters) > per_page
        clusters = clusters[:per_page]
        ids = any_id_form(c["_id"] for c in clusters)
        originals = {str(p["_id"]): p for p in self.pages.find({"_id": {"$in": ids}}, {"title": 1, "url": 1, "site": 1})}
        for c in clusters:
            orig = originals.get(str(c["_id"])) or {}
            c["original_title"] = orig.get("title", "")
            c["original_url"] = c.get("original_url") or orig.get("url", "")
        return clusters, more
