"""WatchList (`store.watch`): the watch list (collection `watch_sites`), per-URL HTTP validators (`watch_urls`:
ETag, Last-Modified) and the entries already seen on each watched TOC, feed or sitemap (`watch_entries`).

Kept in MongoDB so `python -m crawler watch` resumes where it stopped: a restarted watcher sends conditional
requests with the stored validators and fetches only entries it has not seen."""
from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pymongo

from .connection import Connection
from .documents import out
from .schema import create_indexes, new_id, now

WATCH_KINDS = ("auto", "toc", "feed", "sitemap", "page")
DEFAULT_INTERVAL = 300
MIN_INTERVAL = 1
WATCH_INDEXES = {"watch_sites": [("next_due", False)], "watch_entries": [("watch", False)]}


def entry_key(watch_url: str, url: str) -> str:
    """Deterministic id of one entry of one watched URL (SHA-1, never Python's salted hash())."""
    return hashlib.sha1(f"{watch_url}\n{url}".encode("utf-8")).hexdigest()


def check_watch_url(url: str) -> str:
    """The URL stripped, or ValueError with a message a person can act on."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return url


class WatchList:
    """Add, list and schedule watched sites; remember validators and seen entries between rounds."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn   # the store's connection: retry, outages, spool

    def ensure_indexes(self) -> None:
        """The shared indexes plus the watch list's."""
        for coll, specs in WATCH_INDEXES.items():
            create_indexes(self.conn.db[coll], specs)

    # ---- the watch list ----------------------------------------------------------------------------
    def add(self, url: str, interval: float = DEFAULT_INTERVAL, kind: str = "auto",
                  profile: str | None = None, site: str | None = None) -> dict:
        """Watch a URL (TOC, feed, sitemap or page) every `interval` seconds, the first round due now;
        re-adding updates it and makes a round due now (its validators and seen entries are kept)."""
        url = check_watch_url(url)
        if kind not in WATCH_KINDS:
            raise ValueError(f"watch kind must be one of {WATCH_KINDS}, not {kind!r}")
        if not interval or float(interval) < MIN_INTERVAL:
            raise ValueError(f"interval must be at least {MIN_INTERVAL} second(s), not {interval!r}")
        at = now()
        body = {"url": url, "kind": kind, "interval": float(interval), "profile": profile,
                "site": site or re.sub(r"^www\.", "", urlsplit(url).netloc.lower()), "enabled": True, "next_due": at}
        self.conn._retry("mongo", self.conn.db.watch_sites.update_one, {"_id": url},
                         {"$set": body, "$setOnInsert": {"added": at, "rounds": 0}}, upsert=True)
        return self.get(url) or {}

    def get(self, url: str) -> dict | None:
        """One watched URL, or None."""
        return out(self.conn._retry("mongo", self.conn.db.watch_sites.find_one, {"_id": url}))

    def remove(self, url: str) -> bool:
        """Stop watching a URL and forget its seen entries; False when it was not watched."""
        res = self.conn._retry("mongo", self.conn.db.watch_sites.delete_one, {"_id": url})
        self.conn._retry("mongo", self.conn.db.watch_entries.delete_many, {"watch": url})
        return res.deleted_count > 0

    def all(self) -> list[dict]:
        """Every watched URL, soonest due first."""
        cur = self.conn.db.watch_sites.find().sort([("next_due", pymongo.ASCENDING), ("_id", pymongo.ASCENDING)])
        return [out(d) for d in self.conn._retry("mongo", list, cur)]

    def due(self, at: datetime | None = None) -> list[dict]:
        """Enabled watched URLs whose next round is due."""
        cur = self.conn.db.watch_sites.find({"enabled": True, "next_due": {"$lte": at or now()}})
        return [out(d) for d in self.conn._retry("mongo", list, cur)]

    def round_done(self, url: str, interval: float, outcome: dict[str, Any]) -> None:
        """Record one round of a watched URL and when the next one is due."""
        at, round_id = now(), new_id()
        # the round's id makes a retry after a lost reply a no-op instead of a second count
        due = at + timedelta(seconds=interval)
        self.conn._retry("mongo", self.conn.db.watch_sites.update_one, {"_id": url, "last_round_id": {"$ne": round_id}},
                         {"$set": {"last_round": at, "last_round_id": round_id, "next_due": due,
                                   "last_outcome": outcome}, "$inc": {"rounds": 1}})

    # ---- validators --------------------------------------------------------------------------------
    def validators(self, url: str) -> dict:
        """The ETag / Last-Modified last seen for a URL ({} when never fetched)."""
        doc = self.conn._retry("mongo", self.conn.db.watch_urls.find_one, {"_id": url}) or {}
        return {k: doc[k] for k in ("etag", "last_modified") if doc.get(k)}

    def save_validators(self, url: str, etag: str | None, last_modified: str | None, status: int) -> None:
        """Remember a URL's validators (either may be absent) and its last status."""
        self.conn._retry("mongo", self.conn.db.watch_urls.update_one, {"_id": url},
                         {"$set": {"etag": etag, "last_modified": last_modified, "status": status,
                                   "checked": now()}}, upsert=True)

    # ---- entries of a TOC / feed / sitemap ---------------------------------------------------------
    def known_entries(self, watch_url: str) -> dict[str, str]:
        """Entry URL -> its lastmod ('' when the listing gives none) of every entry already fetched."""
        cur = self.conn.db.watch_entries.find({"watch": watch_url}, {"url": 1, "lastmod": 1})
        return {d["url"]: d.get("lastmod") or "" for d in self.conn._retry("mongo", list, cur)}

    def add_entry(self, watch_url: str, url: str, lastmod: str = "") -> None:
        """Mark one entry as fetched (only after its page went through the pipelines)."""
        self.conn._retry("mongo", self.conn.db.watch_entries.update_one, {"_id": entry_key(watch_url, url)},
                         {"$set": {"watch": watch_url, "url": url, "lastmod": lastmod, "seen": now()}}, upsert=True)

    # ---- detection ---------------------------------------------------------------------------------
    def match_is_new(self, suspect_url: str, source_id: str) -> bool:
        """True when this (page, work) match was first recorded by its latest write (not a refresh)."""
        doc = self.conn._retry("mongo", self.conn.db.matches.find_one,
                               {"suspect_url": suspect_url, "source_id": source_id}, {"created": 1, "updated": 1})
        return bool(doc) and doc.get("created") == doc.get("updated")

    def matches_since(self, since: datetime, limit: int = 200) -> list[dict]:
        """Matches first recorded since `since`, newest first (the dashboard's last hour)."""
        cur = self.conn.db.matches.find({"created": {"$gte": since}},
                                {"suspect_url": 1, "site": 1, "source_id": 1, "source_title": 1, "score": 1,
                                 "status": 1, "created": 1}).sort("created", -1).limit(limit)
        return [out(d) for d in self.conn._retry("mongo", list, cur)]
