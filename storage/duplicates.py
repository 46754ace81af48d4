"""DuplicateStore: copies dropped by dedup (collection `duplicates`) and their clusters for review."""
from __future__ import annotations

import re
from typing import Any, Iterator

from .connection import Connection
from .documents import check_keys, check_text, fit_bson
from .errors import BadDocument, StorageUnavailable
from .schema import any_id_form, now, to_date

METHODS = ("exact", "near", "passages")


class DuplicateStore(Connection):
    """Record a copy of a kept page; list the clusters of an original and its copies."""

    def record_duplicate(self, doc: dict) -> bool:
        """Remember that doc["url"] copies doc["original_id"] (method exact|near|passages, distance); upsert by url.
        True when the copy was not recorded before (a re-crawl finds it again)."""
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
            res = self._retry("mongo", self.duplicates.update_one, {"url": d["url"]}, {"$set": d}, upsert=True)
        except StorageUnavailable:
            self._spool("record_duplicate", doc=d)
            return True
        return res.upserted_id is not None

    def cluster_of(self, key: str) -> dict | None:
        """The cluster a page belongs to: its original (by page id, URL, or the URL of one of its copies)
        and every recorded copy with how it was found. None when nothing is known of it."""
        ids = any_id_form([key])
        page = self._retry("mongo", self.pages.find_one, {"$or": [{"_id": {"$in": ids}}, {"url": key}]},
                           {"url": 1, "title": 1, "site": 1})
        if page is None:
            copy = self._retry("mongo", self.duplicates.find_one, {"url": key}, {"original_id": 1, "original_url": 1})
            if copy is None:
                return None
            page = self._retry("mongo", self.pages.find_one, {"_id": {"$in": any_id_form([copy["original_id"]])}},
                               {"url": 1, "title": 1, "site": 1}) or {"_id": copy["original_id"],
                                                                       "url": copy.get("original_url")}
        copies = self.duplicates.find({"original_id": str(page["_id"])}, {"_id": 0}).sort("fetched", 1)
        return {"original": {"id": str(page["_id"]), "url": page.get("url"), "title": page.get("title"),
                             "site": page.get("site")},
                "copies": [{k: d.get(k) for k in ("url", "method", "distance", "coverage", "site", "fetched")}
                           for d in self._retry("mongo", list, copies)]}

    def find_duplicates(self, limit: int = 0) -> Iterator[dict]:
        """Recorded copies, oldest first: url, original_url, method, distance or coverage."""
        fields = {"_id": 0, "url": 1, "original_url": 1, "original_id": 1, "method": 1, "distance": 1,
                  "coverage": 1, "site": 1, "fetched": 1}
        yield from self.duplicates.find({}, fields).sort([("fetched", 1), ("url", 1)]).limit(max(0, int(limit)))

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
