"""DuplicateStore: copies dropped by dedup (collection `duplicates`) and their clusters for review."""
from __future__ import annotations

import logging
import re
from typing import Any, Iterator

from pymongo import UpdateOne
from pymongo.errors import BulkWriteError

from .connection import Connection
from .documents import check_keys, check_text, fit_bson, out
from .errors import BadDocument, StorageUnavailable
from .schema import any_id_form, now, to_date, to_oid

log = logging.getLogger(__name__)
METHODS = ("exact", "near", "passages", "rewrite")
MAX_HOPS = 32  # a chain of earlier-published copies each displacing the last (dates strictly decrease)


class DuplicateStore(Connection):
    """Record a copy of a kept page; list the clusters of an original and its copies."""

    def record_duplicate(self, doc: dict, moving_out: str | None = None) -> bool:
        """Remember that doc["url"] copies doc["original_id"] (method exact|near|passages, distance); upsert by url.
        True when the copy was not recorded before (a re-crawl finds it again). `moving_out`: the id of the
        displaced page this record stands for, held until it is deleted (never joined with its own record)."""
        d = _duplicate_doc(doc)
        try:
            res = self._retry("mongo", self.duplicates.update_one, {"url": d["url"]}, {"$set": d}, upsert=True)
            self.settle_copies([d["original_id"]])
            self.join_stored_copies([d], moving_out)
        except StorageUnavailable:
            self._spool("record_duplicate", doc=d)
            return True
        return res.upserted_id is not None

    def record_duplicates(self, docs: list[dict]) -> list[bool | BadDocument]:
        """record_duplicate for many in one bulk write (each command costs the server more than its bytes);
        per copy: whether it is new, or the BadDocument that kept it out."""
        checked: list[dict | BadDocument] = []
        for doc in docs:
            try:
                checked.append(_duplicate_doc(doc))
            except BadDocument as exc:
                checked.append(exc)
        good = [(i, d) for i, d in enumerate(checked) if isinstance(d, dict)]
        results: list[bool | BadDocument] = [d if isinstance(d, BadDocument) else True for d in checked]
        if not good:
            return results
        try:
            upserted = self._retry("mongo", self._upsert_duplicates, [d for _, d in good])
            self.settle_copies([d["original_id"] for _, d in good])
            self.join_stored_copies([d for _, d in good])
        except StorageUnavailable:
            for _, d in good:
                self._spool("record_duplicate", doc=d)
            return results
        for j, (i, _) in enumerate(good):
            results[i] = j in upserted
        return results

    def _upsert_duplicates(self, docs: list[dict]) -> set[int]:
        """Indexes of the docs that were not recorded before (a lost reply's retry finds them recorded)."""
        ops = [UpdateOne({"url": d["url"]}, {"$set": d}, upsert=True) for d in docs]
        try:
            return set(self.duplicates.bulk_write(ops, ordered=False).upserted_ids)
        except BulkWriteError as exc:  # two copies of one URL racing in one batch: the other one's upsert won
            if any(e.get("code") != 11000 for e in exc.details.get("writeErrors", [])):
                raise
            failed = [docs[e["index"]] for e in exc.details["writeErrors"]]
            for d in failed:
                self.duplicates.update_one({"url": d["url"]}, {"$set": d}, upsert=True)
            return {u["index"] for u in exc.details.get("upserted", [])}

    def join_stored_copies(self, copies: list[dict], moving_out: str | None = None) -> int:
        """Copies just recorded whose URL another crawler stored meanwhile, with the same text: one story
        kept twice, joined (PageStore._join); how many. The saver looks for copy records after its write
        too (settle_pages): whichever comes second joins. The page `moving_out` is not another crawler's: it
        is the displaced page whose record this is (its join led back to the page that displaced it: four to
        five round trips that changed nothing)."""
        by_url = {d["url"]: d for d in copies if d.get("content_hash")}
        if not by_url:
            return 0
        query: dict[str, Any] = {"url": {"$in": list(by_url)}}
        if moving_out is not None:
            query["_id"] = {"$ne": to_oid(moving_out)}
        held = self._retry("mongo", list, self.pages.find(query, {"url": 1, "content_hash": 1}))
        return sum(self._join_if_same(page, by_url[page["url"]]) for page in held)

    def _join_if_same(self, page: dict, copy: dict) -> bool:
        """A kept page and a copy record of its URL with the same text are one story kept twice: joined."""
        if not page.get("content_hash") or page.get("content_hash") != copy.get("content_hash"):
            return False
        self.join_or_spool(str(page["_id"]), str(copy["original_id"]), copy.get("method") or "exact")
        return True

    def resolve_original(self, page_id: str) -> tuple[str, str | None]:
        """The page that now stands for page_id: itself, or the earlier-published copy that displaced it
        (followed to the end of the chain); with that page's URL when a displacement named it."""
        return self._chain_end(page_id)[:2]

    def _chain_end(self, page_id: str) -> tuple[str, str | None, str | None]:
        """resolve_original's answer, and where the last marker leads when the chain closed into a cycle."""
        url, seen = None, {str(page_id)}
        for _ in range(MAX_HOPS):
            marker = self._retry("mongo", self.demotions.find_one, {"_id": str(page_id)}, {"by": 1, "by_url": 1})
            if marker is None or marker["by"] in seen:
                if marker is not None:
                    log.error("displacements of page %s form a cycle; it stands for itself", page_id)
                return str(page_id), url, marker["by"] if marker is not None else None
            page_id, url = marker["by"], marker.get("by_url")
            seen.add(page_id)
        return str(page_id), url, None

    def settle_copies(self, original_ids: list[str], marked: bool = False) -> int:
        """Re-point copy records whose original was displaced by an earlier-published copy; returns how many.

        Called after every write of copy records and after every displacement: the writer of a record
        reads the displacements after its write, the displacer re-points after writing its marker, so a
        record written in any order ends pointing to a page that is kept (or about to be). `marked`: the
        caller has just written (or met) a marker of each page, so the first look for them is skipped (a
        marker a cycle's break takes away meanwhile leaves its chain ending at that page, as a look would)."""
        moved, todo = 0, {str(i) for i in original_ids if i}
        for hop in range(MAX_HOPS):
            if not todo:
                return moved
            markers = [{"_id": i} for i in sorted(todo)] if marked and not hop else \
                self._retry("mongo", list, self.demotions.find({"_id": {"$in": sorted(todo)}}, {"_id": 1}))
            todo = set()
            for m in markers:
                target, url = self._settled_original(m["_id"])
                if not url:
                    url = (self._retry("mongo", self.pages.find_one, {"_id": to_oid(target)}, {"url": 1}) or {}).get("url")
                if url:   # the copy that took the place is no copy of itself: its old record goes
                    self._retry("mongo", self.duplicates.delete_many, {"original_id": m["_id"], "url": url})
                if target == m["_id"]:   # the page stands after all (a cycle broken): its copies stay
                    continue
                res = self._retry("mongo", self.duplicates.update_many, {"original_id": m["_id"]},
                                  {"$set": {"original_id": target, "original_url": url or f"page {target}"}})
                moved += res.modified_count
                todo.add(target)   # displaced in turn meanwhile? then again
        return moved

    def _settled_original(self, page_id: str) -> tuple[str, str | None]:
        """resolve_original, with a cycle of displacements broken first (`_break_cycle`: the page
        MongoDB still holds stands): the end of a cycle is no page that stands, and taking it for one deleted
        the copy record of a page already moved out (invariant seed 1024)."""
        target, url, cycle = self._chain_end(page_id)
        return (target, url) if cycle is None else self._break_cycle(target, cycle)

    def _break_cycle(self, page_id: str, by: str) -> tuple[str, str | None]:
        """Displacements that form a cycle (two crawlers each took one page for the other's copy at once): of
        the cycle's pages MongoDB still holds, the smallest id stands (every process picks the same one, and
        never a page already moved out), its marker goes; returns where `by` leads now."""
        members, cur = [page_id], by
        for _ in range(MAX_HOPS):
            if cur in members:
                break
            members.append(cur)
            marker = self._retry("mongo", self.demotions.find_one, {"_id": cur}, {"by": 1})
            if marker is None:   # broken meanwhile
                return self.resolve_original(by)
            cur = marker["by"]
        held = {str(d["_id"]) for d in self._retry("mongo", list, self.pages.find(
            {"_id": {"$in": [to_oid(m) for m in members]}}, {"_id": 1}))}
        standing = min(held or {page_id})
        self._retry("mongo", self.demotions.delete_one, {"_id": standing})
        log.warning("displacements of pages %s formed a cycle: page %s stands", ", ".join(members), standing)
        return self.resolve_original(by)

    def cluster_of(self, key: str) -> dict | None:
        """The cluster a page belongs to: its original (by page id, URL, or the URL of one of its copies)
        and every recorded copy with how it was found. None when nothing is known of it."""
        fields = {"url": 1, "title": 1, "site": 1}   # by id, then by URL: one `$or` made SecantusDB read every page
        page = self._retry("mongo", self.pages.find_one, {"_id": {"$in": any_id_form([key])}}, fields) or \
            self._retry("mongo", self.pages.find_one, {"url": key}, fields)
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
                        "copies": {"$push": {"id": "$_id", "url": "$url", "distance": "$distance", "method": "$method",
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

    def get_duplicate(self, dup_id: Any) -> dict | None:
        """One copy record by its id (any id form), None when there is none."""
        return out(self._retry("mongo", self.duplicates.find_one, {"_id": {"$in": any_id_form([dup_id])}}))


def _duplicate_doc(doc: dict) -> dict:
    """A copy's record as stored: checked fields, the original's id as a string, a fetch time."""
    if not doc.get("url") or not doc.get("original_id"):
        raise BadDocument("a duplicate needs 'url' and 'original_id'")
    if doc.get("method", "near") not in METHODS:
        raise BadDocument(f"duplicate method must be one of {METHODS}, not {doc.get('method')!r}")
    d = {k: v for k, v in doc.items() if k not in ("_id", "id")}
    check_keys(d)
    check_text(d, ("url", "original_url", "site", "title", "text"))
    d["original_id"] = str(d["original_id"])
    d.setdefault("method", "near")
    d.setdefault("distance", 0)
    d["fetched"] = to_date(d["fetched"]) if d.get("fetched") else now()
    return fit_bson(d)
