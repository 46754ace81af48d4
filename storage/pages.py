"""PageStore: kept pages (collection `pages`): validate and save, read back, and promote an earlier
copy to original (replace_original)."""
from __future__ import annotations

import logging
import zlib
from typing import Any, Iterator

import redis
from pymongo import ReplaceOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from . import kept
from .dedup_index import TEXT_LEVEL, date_key, text_key
from .documents import check_keys, check_text, fit_bson, out
from .duplicates import DuplicateStore
from .errors import BadDocument, StorageUnavailable
from .identity import lost_key
from .schema import INT64_MAX, any_id_form, new_id, now, to_date, to_oid, to_signed64, to_unsigned64

log = logging.getLogger(__name__)

HELD_STATE = {"url": 1, "undecided": 1, "content_hash": 1}   # what a save reads of a page already held
UNDECIDED = ("undecided", "undecided_since")   # a page's mark while its dedup decision waits in a spool
DISPLACED_TEXT_TTL = 600   # seconds a displaced page's text stays readable for checks that listed it just before
MAX_JOINS = 4   # displacements racing with one join before it gives up (each round one of them settles)
PAGE_TEXT_FIELDS = ("url", "canonical_url", "canonical_claim", "site", "title", "text", "author", "spider")


def page_doc(doc: dict) -> dict:
    """Validate and convert a page for MongoDB (ids, signed SimHash, DNA, size)."""
    if not isinstance(doc, dict) or not doc.get("url"):
        raise BadDocument("a page needs a 'url'")
    d = {k: v for k, v in doc.items() if k != "id"}
    d["_id"] = to_oid(doc.get("_id") or doc.get("id") or new_id())
    check_keys({k: v for k, v in d.items() if k != "_id"})
    check_text(d, PAGE_TEXT_FIELDS)
    if d.get("simhash") is not None:
        sh = int(d["simhash"])
        if not -(2**63) <= sh < 2**64:
            raise BadDocument(f"simhash {sh} is not a 64-bit value")
        d["simhash"] = to_signed64(sh) if sh >= 0 else sh
    if d.get("dna") is not None:
        d["dna"] = [int(x) if -(2**63) <= int(x) <= INT64_MAX else str(int(x)) for x in d["dna"]]
    if d.get("sketch") is not None:
        d["sketch"] = [to_signed64(int(v)) for v in d["sketch"]]
    d["fetched"] = to_date(d["fetched"]) if d.get("fetched") else now()
    return fit_bson(d)


class PageStore(DuplicateStore):
    """Save and read kept pages; the crawler's re-crawls keep their first id."""

    def save_page(self, doc: dict) -> str:
        """Store a page (upsert by id); returns its id. Spooled if MongoDB stays away."""
        d = self._marked(page_doc(doc))
        try:
            page_id = self._retry("mongo", self._save_page, d)
        except StorageUnavailable:
            self._spool("save_page", doc=d)
            return str(d["_id"])
        self._drop_claimed_text(str(d["_id"]))
        self._settle_saved([{**d, "_id": page_id}])
        return page_id

    def _marked(self, doc: dict) -> dict:
        """A page whose dedup decision this process spooled is saved undecided, whoever calls save, and since
        when: a page undecided too long has lost its spool (`adopt_undecided`)."""
        if not doc.get("undecided") and str(doc["_id"]) not in self.undecided:
            return doc
        return {**doc, "undecided": True, "undecided_since": doc.get("undecided_since") or now()}

    def save_pages(self, docs: list[dict], new: list[bool] | None = None) -> list[str | BadDocument]:
        """Store many pages with one look-up and few writes (what save_page does for each, in order);
        returns each page's id, or the BadDocument that kept that one page out. Spooled if MongoDB stays away.
        `new`: per page, True when the crawl found its text new (a URL most likely never stored: not looked up)."""
        results: list[str | BadDocument] = []
        valid: list[dict] = []
        unseen: list[bool] = []
        for doc, fresh in zip(docs, new or [False] * len(docs)):
            try:
                valid.append(self._marked(page_doc(doc)))
                unseen.append(fresh)
                results.append("")
            except BadDocument as exc:
                results.append(exc)
        try:
            ids = self._retry("mongo", self._save_pages, valid, unseen) if valid else []
        except StorageUnavailable:
            for d in valid:
                self._spool("save_page", doc=d)
            ids = [str(d["_id"]) for d in valid]
        else:
            self._drop_claimed_texts([str(d["_id"]) for d in valid])
            self._settle_saved([{**d, "_id": i} for d, i in zip(valid, ids)])
        it = iter(ids)
        return [r if isinstance(r, BadDocument) else next(it) for r in results]

    def _settle_saved(self, docs: list[dict]) -> None:
        """settle_pages after a save; if MongoDB went away again, the check waits in the spool."""
        try:
            self.settle_pages(docs)
        except StorageUnavailable:
            self._spool("settle_pages", ids=[str(d["_id"]) for d in docs])

    def _drop_claimed_text(self, page_id: str) -> None:
        """The page is in MongoDB now: its text kept with the dedup claim can go (else it expires)."""
        self._drop_claimed_texts([page_id])

    def _drop_claimed_texts(self, page_ids: list[str]) -> None:
        """The pages are in MongoDB now: their texts and dates kept with the dedup claims can go (else they expire)."""
        if not page_ids:
            return
        keys = [key(self, page_id) for page_id in page_ids for key in (text_key, date_key)]
        try:
            # the same round trip (a second one on a cluster) asks for a Redis data loss this process has not
            # re-filled its pages for: one that makes no check for a while still puts these pages (saved after
            # the refill read MongoDB) back into the index (storage/connection.py `_after_redis_outage`)
            if self.index.cluster:
                self.redis.delete(*keys)
                token = self.redis.get(lost_key(self.config.key_prefix))
            else:
                pipe = self.redis.pipeline(transaction=False)
                pipe.delete(*keys)
                pipe.get(lost_key(self.config.key_prefix))
                token = pipe.execute()[1]
            if token is not None and token != self.loss_seen:
                self._after_index_loss(token)
        except (redis.RedisError, StorageUnavailable):
            pass   # the next check meets the loss

    def _save_pages(self, docs: list[dict], unseen: list[bool] | None = None) -> list[str]:
        """save_page for many: one find for the ids already held (by another URL: evidence protection), new
        pages in one insert_many (the server commits it once, where each replace commits alone), pages
        stored before replaced in order. A page that loses a race, whose URL is stored under another id (a
        re-crawl), or that was taken for unseen but is held, takes save_page's path (the insert refuses it)."""
        probe = [d["_id"] for i, d in enumerate(docs) if not (unseen and unseen[i])]
        held = {h["_id"]: h for h in self.pages.find({"_id": {"$in": probe}}, HELD_STATE)} if probe else {}
        fresh: list[tuple[int, dict]] = []
        stored: list[tuple[int, dict]] = []
        for i, d in enumerate(docs):
            if d["_id"] not in held:
                held[d["_id"]] = d
                fresh.append((i, d))
            elif held[d["_id"]]["url"] != d["url"]:  # held in MongoDB, or earlier in this batch, by another URL
                moved = self._id_conflict(d, held[d["_id"]]["url"])
                stored.append((i, (moved, {"_id": moved["_id"]}, True)))
            else:
                stored.append((i, _over_held(d, held[d["_id"]])))
        ids: dict[int, str] = {}
        if fresh:
            ids.update(zip((i for i, _ in fresh), self._insert_ordered([d for _, d in fresh])))
        if stored:
            ids.update(zip((i for i, _ in stored), self._replace_ordered([plan for _, plan in stored])))
        return [ids[i] for i in range(len(docs))]

    def _insert_ordered(self, docs: list[dict]) -> list[str]:
        """insert_many in order; a document refused as a duplicate key goes through _save_page, then the rest."""
        return self._ordered(docs, lambda start: self.pages.insert_many(docs[start:], ordered=True))

    def _replace_ordered(self, plans: list[tuple[dict, dict, bool]]) -> list[str]:
        """Replaces (document, filter, upsert: `_over_held`) in one ordered bulk write; a duplicate URL goes
        through _save_page, then the rest."""
        return self._ordered([d for d, _, _ in plans], lambda start: self.pages.bulk_write(
            [ReplaceOne(f, d, upsert=up) for d, f, up in plans[start:]], ordered=True))

    def _ordered(self, docs: list[dict], write: Any) -> list[str]:
        """Run write(start) over docs[start:]; a duplicate key goes through _save_page and the rest goes on."""
        ids = [str(d["_id"]) for d in docs]
        start = 0
        while start < len(docs):
            try:
                write(start)
                break
            except BulkWriteError as exc:  # ordered: the writes before the failed one are done, none after it
                error = exc.details["writeErrors"][0]
                if error.get("code") != 11000:
                    raise
                failed = start + error["index"]
                ids[failed] = self._save_page(docs[failed])
                start = failed + 1
        return ids

    def _save_page(self, d: dict) -> str:
        held = self.pages.find_one({"_id": d["_id"]}, HELD_STATE)
        if held is not None and held.get("url") != d["url"]:
            d = self._id_conflict(d, held["url"])
        d, where, upsert = _over_held(d, held) if held is not None and held.get("url") == d["url"] else (d, {"_id": d["_id"]}, True)
        try:
            self.pages.replace_one(where, d, upsert=upsert)
            return str(d["_id"])
        except DuplicateKeyError:
            # Same URL stored under another id (a re-crawl): update that page, keep its id.
            old = self.pages.find_one({"url": d["url"]}, {"_id": 1, "content_hash": 1, "simhash": 1})
            if old is None:
                raise
            body = {k: v for k, v in d.items() if k != "_id"}
            self.pages.replace_one({"_id": old["_id"]}, body)
            if d.get("content_hash") and d.get("simhash") is not None:
                try:
                    self.index.remove(str(d["_id"]), d["content_hash"], to_unsigned64(d["simhash"]))
                except (redis.RedisError, ValueError):
                    pass
            return str(old["_id"])

    def _id_conflict(self, d: dict, held_url: str) -> dict:
        """The id is another URL's page: keep that page as it is and store this one under a new id,
        recording which id and URL it claimed (a stored page is never overwritten by another URL)."""
        log.warning("page %s claims id %s of %s; stored under a new id instead", d["url"], d["_id"], held_url)
        return {**d, "_id": to_oid(new_id()), "id_conflict": {"claimed_id": str(d["_id"]), "held_by": held_url}}

    def get_page(self, page_id: str) -> dict | None:
        """One page by id (simhash unsigned again), or None."""
        return out(self._retry("mongo", self.pages.find_one, {"_id": to_oid(page_id)}))

    def page_by_url(self, url: str) -> dict | None:
        """One page by URL, or None."""
        return out(self._retry("mongo", self.pages.find_one, {"url": url}))

    def find_pages(self, site: str | None = None, since: Any = None, limit: int = 0) -> Iterator[dict]:
        """Stored pages (without their text), oldest fetch first, of one site and/or fetched since a date."""
        q: dict[str, Any] = {}
        if site:
            q["site"] = site
        if since is not None:
            q["fetched"] = {"$gte": to_date(since)}
        fields = {"url": 1, "site": 1, "title": 1, "fetched": 1, "published": 1, "spider": 1}
        for doc in self.pages.find(q, fields).sort([("fetched", 1), ("_id", 1)]).limit(max(0, int(limit))):
            yield out(doc)

    def page_texts(self, page_ids: list[Any]) -> dict[str, str]:
        """Texts of many stored pages in one query, keyed by str(id) (evidence exports)."""
        ids = any_id_form(page_ids)
        if not ids:
            return {}
        return {str(p["_id"]): str(p.get("text") or "") for p in self.pages.find({"_id": {"$in": ids}}, {"text": 1})}

    def replace_original(self, old_id: str, new: dict, method: str, distance: int | None = None,
                         coverage: float | None = None, old_keys: dict | None = None) -> str | None:
        """A page found to copy `old_id` was published earlier: it becomes the original (Nutch's rule).

        One displacement marker per page, inserted once (`demotions`): of two crawlers promoting copies
        of one story at once, the first wins and the other learns the winner's id (returned; None when
        `new` won). The old page moves to `duplicates` now if MongoDB holds it, else when its save lands
        (`settle_pages`); its copies are re-pointed (`settle_copies`); the Redis entries change owner.
        `new` holds the new page's id, url, content_hash, simhash and sketch; `old_keys` the old page's
        content_hash, simhash and sketch when the caller still has them (its save not landed yet).
        """
        if str(old_id) == str(new["id"]):   # never a page displaced by itself: it stands for itself
            return str(old_id)
        keys = {"content_hash": new["content_hash"], "simhash": to_signed64(int(new["simhash"])),
                "sketch": [to_signed64(int(v)) for v in new.get("sketch") or ()]}
        marker = {"_id": str(old_id), "by": new["id"], "by_url": new["url"], "by_keys": keys,
                  "method": method, "distance": distance, "coverage": coverage, "at": now()}
        winner = self._retry("mongo", self._claim_demotion, marker)
        if winner != new["id"]:
            return winner
        # a forward left by an earlier decision that called `new` a copy no longer holds: it is the original
        self._retry("mongo", self.demotions.delete_one, {"_id": new["id"], "by_keys": None})
        old = self._retry("mongo", self.pages.find_one, {"_id": to_oid(old_id)})
        if old is not None:
            self._move_displaced(old, marker)
        else:
            self._hand_over({"_id": old_id, **(old_keys or {})}, marker)
        self.settle_copies([str(old_id)], marked=True)
        return None

    def forward_copy(self, page_id: str, original_id: str, original_url: str | None, method: str) -> None:
        """A page others may have seen kept (a claim, a cluster block) turned out to copy original_id:
        copies already decided against it are re-pointed, now and when their records land."""
        if str(page_id) == str(original_id):
            return
        marker = {"_id": str(page_id), "by": str(original_id), "by_url": original_url, "by_keys": None,
                  "method": method, "distance": None, "coverage": None, "at": now()}
        winner = self._retry("mongo", self._claim_demotion, marker)
        self.settle_copies([str(page_id)], marked=True)
        if winner != str(original_id):   # an earlier-published copy displaced page_id meanwhile (another crawler)
            self.join_or_spool(winner, str(original_id), method)

    def join_or_spool(self, displacer: str, original: str, method: str) -> None:
        """_join for a save, which has no decision to defer: a pair that cannot be joined now (the page that stands
        is another crawler's, its save not landed) waits in the spool, replayed when this crawl closes, instead of
        standing twice until the next store open's repair."""
        if not self._join(displacer, original, method):
            self._spool("join_pages", displacer=displacer, original=original, method=method)

    def _join(self, displacer: str, original: str, method: str, deciding: str | None = None) -> bool:
        """The copy that displaced a page copies that page's original too: one story, so one of the two stands
        (`_standing`: the earlier published, else the same page whichever crawler joins them). False when they
        could not be joined now: the page that stands cannot be read even once its crawler's save was awaited,
        the one that would stand is kept undecided (its own decision, in a spool, comes first), or displacements
        kept racing (the caller's decision is made again later, else the next crawl joins them). `deciding`: the
        page whose decision the caller is making, which may stand for it even while its mark is still set."""
        for _ in range(MAX_JOINS):
            a, b = self.resolve_original(displacer)[0], self.resolve_original(original)[0]
            if a == b:   # one page stands for both: a record calling it a copy (of itself) goes
                self._drop_own_record(a)
                return True
            keep, lose = self._standing(a, b)
            if keep != deciding and self._kept_undecided(keep):
                log.info("page %s is kept undecided: the join that keeps it waits for its own decision", keep)
                return False
            keys = kept.keys_once_saved(self, keep)
            if keys is None:
                log.warning("page %s copies page %s but neither its page nor its keys can be read (its save has "
                            "not landed in %.0f s)", lose, keep, sum(kept.SETTLE_POLL))
                return False
            url = (self._retry("mongo", self.pages.find_one, {"_id": to_oid(keep)}, {"url": 1}) or {}).get("url")
            if self.replace_original(lose, {"id": keep, "url": url, **keys}, method) is None:
                log.info("page %s and page %s tell one story (found by two crawlers at once): %s stands", a, b, keep)
                self._drop_own_record(keep)
                return True
        log.error("pages %s and %s: displacements kept racing; left to the next crawl", displacer, original)
        return False

    def _kept_undecided(self, page_id: str) -> bool:
        """Whether the page is kept with its dedup decision waiting in a spool. Such a page stands for no other
        yet: joined, an undated one stood over a dated copy, whose record then followed it when its own decision
        found it a copy of a later-dated page (invariant seed 9201). It may still become another page's copy."""
        return self._retry("mongo", self.pages.find_one, {"_id": to_oid(page_id), "undecided": True},
                           {"_id": 1}) is not None

    def _standing(self, a: str, b: str) -> tuple[str, str]:
        """(page that stands, page that goes) of two pages telling one story, the same whichever crawler asks
        and in which order: the earlier published; of an undated and a dated page the undated one (the engine
        never displaces a page by date when either has none); else the smaller id. (It was "the second one
        asked" when dates could not be compared: two crawlers joining at once displaced each page by the other.)"""
        da, db = kept.published(self, a), kept.published(self, b)
        if da is not None and db is not None and da != db:
            return (a, b) if da < db else (b, a)
        if (da is None) != (db is None):
            return (a, b) if da is None else (b, a)
        return (a, b) if a < b else (b, a)

    def _drop_own_record(self, page_id: str) -> None:
        """The page that stands is no copy: a record of its URL whose original now leads back to it goes. One
        that leads elsewhere stays: an earlier-published copy displaced the page meanwhile (its record was
        written before the page leaves `pages`; invariant seed 4410). The delete names the original it read,
        so a record re-pointed or rewritten meanwhile is left alone."""
        page = self._retry("mongo", self.pages.find_one, {"_id": to_oid(page_id)}, {"url": 1})
        if page is None:
            return
        record = self._retry("mongo", self.duplicates.find_one, {"url": page["url"]}, {"original_id": 1})
        if record is not None and self.resolve_original(str(record["original_id"]))[0] == str(page_id):
            self._retry("mongo", self.duplicates.delete_one, {"_id": record["_id"],
                                                               "original_id": record["original_id"]})

    def _claim_demotion(self, marker: dict) -> str:
        """Insert the marker unless the page was displaced already; the id of the page that displaced it."""
        try:
            self.demotions.insert_one(marker)
            return marker["by"]
        except DuplicateKeyError:   # another copy was first (or this very insert, its reply lost)
            held = self.demotions.find_one({"_id": marker["_id"]}, {"by": 1})
            return held["by"] if held else self._claim_demotion(marker)

    def settle_pages(self, docs: list[dict]) -> int:
        """Pages just written that an earlier-published copy displaced meanwhile move to duplicates; how many.

        The displacer writes its marker and then looks for the page; the saver writes the page and then
        looks for a marker: whichever comes second moves it, so a displaced page is never left kept."""
        by_id = {str(d["_id"]): d for d in docs}
        if not by_id:
            return 0
        markers = self._retry("mongo", list, self.demotions.find({"_id": {"$in": list(by_id)}}))
        for marker in markers:
            self._move_displaced(by_id[marker["_id"]], marker)
        moved = {m["_id"] for m in markers}
        self.settle_copies(sorted(moved), marked=True)
        kept = {d["url"]: d for i, d in by_id.items() if i not in moved and d.get("url") and d.get("content_hash")}
        if kept:   # recorded as a copy by another crawler meanwhile: one story kept twice, joined
            for copy in self._retry("mongo", list, self.duplicates.find({"url": {"$in": list(kept)}},
                                                                       {"url": 1, "original_id": 1, "content_hash": 1,
                                                                        "method": 1})):
                self._join_if_same(kept[copy["url"]], copy)
        return len(markers)

    def _move_displaced(self, old: dict, marker: dict) -> None:
        """Record a displaced page as a copy of the page that displaced it, take it out of pages and give its
        index entries to that page (idempotent: the displacer and the saver may both get here). The caller
        re-points the page's copies next (`settle_copies`), once for every page it moved."""
        target, url = self.resolve_original(marker["by"])
        walked = target   # where the chain led, for _hand_over: no second walk of it (a cycle broken: walked again)
        if target == str(old["_id"]):   # the displacements lead back here: each page was taken for a copy of the other
            target, url = self._break_cycle(str(old["_id"]), marker["by"])
            walked = None
            if target == str(old["_id"]):
                return   # this page stands
        self.record_duplicate({"url": old["url"], "original_id": target, "original_url": url or marker.get("by_url"),
                               "method": marker["method"], "distance": marker.get("distance"),
                               "coverage": marker.get("coverage"), "site": old.get("site"), "title": old.get("title"),
                               "fetched": old.get("fetched"), "content_hash": old.get("content_hash"),
                               "simhash": old.get("simhash"), "index_alias": False, "replaced_by_earlier": True,
                               **({"text": (old.get("text") or "")[:200_000]} if marker["method"] == "rewrite" else {})},
                              moving_out=str(old["_id"]))
        # its matches need no write: each was made with the page's text (`suspect_text`), and keeps it
        self._keep_text(old)
        # its entries go before the page does: a crawler killed in between leaves the page held (the next open
        # moves it again, settle_displacements), never a passage claim of a page no one can read any more
        self._hand_over(old, marker, walked)
        if self._answers_for(old, target, marker):   # what MongoDB says the index counts (maintenance.py `_index_size`)
            self._retry("mongo", self.duplicates.update_one, {"url": old["url"], "replaced_by_earlier": True},
                        {"$set": {"index_alias": True}})
        self._retry("mongo", self.pages.delete_one, {"_id": to_oid(old["_id"])})

    def _keep_text(self, old: dict) -> None:
        """A displaced page's text stays readable (as a claimed text, for DISPLACED_TEXT_TTL) once its page is gone:
        a check that listed it among its passage candidates reads it a moment later (else: deferred to the next
        open). Later checks find the page that displaced it."""
        if old.get("text"):
            self._retry("redis", self.redis.set, text_key(self, str(old["_id"])),
                        zlib.compress(old["text"].encode("utf-8"), TEXT_LEVEL), ex=DISPLACED_TEXT_TTL)

    def _answers_for(self, old: dict, standing: str, marker: dict) -> bool:
        """True when the displaced page's own SimHash entry now answers for `standing` and is an entry of its
        own (not the one `standing` shares with it); read from the index, so a second call agrees. When the
        displacer stands, its keys are the marker's: those `_hand_over` indexed it with (two finds fewer)."""
        if not (isinstance(old.get("content_hash"), str) and isinstance(old.get("simhash"), int)):
            return False
        fp = to_unsigned64(old["simhash"])
        if self._retry("redis", self.index.check, "", old["content_hash"], fp, 0, False).original_id != standing:
            return False
        own = marker.get("by_keys") if standing == marker["by"] else None
        keys = kept.marker_keys(own) if own else kept.keys_of(self, standing)
        return keys is None or keys["simhash"] != fp

    def _hand_over(self, old: dict, marker: dict, standing: str | None = None) -> None:
        """The page that displaced another is indexed, and the displaced page's exact and SimHash entries
        answer for it, with no moment in between without either (a copy checked then would be kept); its
        text still stands for the story, so a later copy of it is that page's copy. If the displacing page
        was itself displaced since (its displacer indexed the page that stands now), or this is a forward,
        the old entries answer for the page that stands. Its passage claim goes: the new one says it.
        `standing`: where the caller's walk of the displacer's chain just led (else walked here)."""
        by, keys = marker["by"], marker.get("by_keys")
        standing = self.resolve_original(by)[0] if standing is None else standing
        if not keys or standing != by:
            if isinstance(old.get("content_hash"), str) and isinstance(old.get("simhash"), int):
                self._retry("redis", self.index.repoint, str(old["_id"]), old["content_hash"],
                            to_unsigned64(old["simhash"]), standing)
            self._unindex({"_id": old["_id"], "sketch": old.get("sketch")})
            return
        if keys.get("sketch"):   # the new claim first, then the old one out
            self._retry("redis", self.sketches.claim, by, [to_unsigned64(v) for v in keys["sketch"]], 10 ** 6)
        if isinstance(old.get("content_hash"), str) and isinstance(old.get("simhash"), int):
            self._retry("redis", self.index.transfer, str(old["_id"]), old["content_hash"],
                        to_unsigned64(old["simhash"]), by, keys["content_hash"], to_unsigned64(keys["simhash"]))
            # a page displaced before whose entry holds the new page's fingerprint: that entry is the new page's
            # own now, so MongoDB counts it once (`_index_size`)
            self._retry("mongo", self.duplicates.update_many, {"original_id": str(old["_id"]), "index_alias": True,
                                                                "simhash": to_signed64(int(keys["simhash"]))},
                        {"$set": {"index_alias": False}})
        else:
            self._retry("redis", self.index.check, by, keys["content_hash"], to_unsigned64(keys["simhash"]),
                        self.config.simhash_k, True)
        self._unindex({"_id": old["_id"], "sketch": old.get("sketch")})

    def _unindex(self, stored: dict) -> None:
        """Remove a stored page's SimHash, exact-hash and sketch entries from Redis."""
        if isinstance(stored.get("content_hash"), str) and isinstance(stored.get("simhash"), int):
            self._retry("redis", self.index.remove, str(stored["_id"]), stored["content_hash"],
                        to_unsigned64(stored["simhash"]))
        if stored.get("sketch"):
            self._retry("redis", self.sketches.unclaim, str(stored["_id"]),
                        [to_unsigned64(v) for v in stored["sketch"]])


def _over_held(doc: dict, held: dict) -> tuple[dict, dict, bool]:
    """How a save replaces a page already held: (document, filter, upsert). An undecided page over the same
    text already decided (another crawler fetched the URL with Redis up) stays decided: its spooled check
    would decide it again against an index that the repair built without it (invariant seed 1341). Over a
    page still undecided it replaces only that, so a decision made meanwhile, or a page moved out to
    duplicates since, is never undone. Changed text is a new decision."""
    if not doc.get("undecided"):
        return doc, {"_id": doc["_id"]}, True
    if held.get("undecided"):
        return doc, {"_id": doc["_id"], "undecided": True}, False
    if held.get("content_hash") == doc.get("content_hash"):
        doc = decided(doc)
    return doc, {"_id": doc["_id"]}, True


def decided(doc: dict) -> dict:
    """The page without its undecided mark (its decision was made)."""
    return {k: v for k, v in doc.items() if k not in UNDECIDED}
