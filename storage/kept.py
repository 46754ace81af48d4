"""Where a kept page's dedup keys and publish date are read while its save may still be on its way: MongoDB,
the displacement marker that named it, this process's pages in flight, or another crawler's claim in Redis
(whose save is awaited: the keys themselves are never in the claim)."""
from __future__ import annotations

import time
from typing import Any

from fingerprint.neardup import publish_date

from .dedup_index import SETTLE_POLL, WITHDRAWN, date_key, text_key
from .schema import to_oid, to_unsigned64


def published(store: Any, page_id: str) -> Any:
    """A kept page's publish date: from MongoDB, or from its dedup claim while its save is on its way."""
    page = store._retry("mongo", store.pages.find_one, {"_id": to_oid(page_id)}, {"published": 1})
    if page is not None:
        return publish_date(page.get("published"))
    raw = store._retry("redis", store.redis.get, date_key(store, page_id))
    return publish_date(raw.decode()) if raw else None


def keys_of(store: Any, page_id: str) -> dict | None:
    """A kept page's dedup keys: its page's, those its displacement marker recorded, or this process's flight's
    (None when none of them has it: another crawler's page whose save has not landed, or no page at all)."""
    page = store._retry("mongo", store.pages.find_one, {"_id": to_oid(page_id)},
                        {"content_hash": 1, "simhash": 1, "sketch": 1})
    if page is not None and isinstance(page.get("content_hash"), str) and page.get("simhash") is not None:
        return {"content_hash": page["content_hash"], "simhash": to_unsigned64(int(page["simhash"])),
                "sketch": [to_unsigned64(int(v)) for v in page.get("sketch") or ()]}
    marker = store._retry("mongo", store.demotions.find_one, {"by": str(page_id), "by_keys": {"$ne": None}},
                          {"by_keys": 1})
    if marker is not None:
        return marker_keys(marker["by_keys"])
    flight = store.inflight.get(str(page_id))
    return flight.keys() if flight is not None else None


def keys_once_saved(store: Any, page_id: str) -> dict | None:
    """keys_of, waiting (up to ~6 s) while the page is claimed by a crawler whose save has not landed yet: a
    join that gave up on such a page left two pages of one story stored (invariant seed 7634). None when the
    claim is taken back (the page turned out a copy), was never made, or its save does not land in time."""
    for delay in SETTLE_POLL:   # the wait `RedisDedupIndex.settled` gives another crawler's save
        keys = keys_of(store, page_id)
        if keys is not None:
            return keys
        if not claimed(store, page_id):   # the save may have landed between the two reads (it drops the claim)
            return keys_of(store, page_id)
        time.sleep(delay)
    return keys_of(store, page_id)


def claimed(store: Any, page_id: str) -> bool:
    """True while another crawler's dedup claim of the page waits for its save (its text or date in Redis)."""
    text = store._retry("redis", store.redis.get, text_key(store, page_id))
    if text is not None:
        return text != WITHDRAWN
    return bool(store._retry("redis", store.redis.exists, date_key(store, page_id)))


def marker_keys(k: dict) -> dict:
    """A displacement marker's by_keys (signed, as stored) as the dedup keys the index takes."""
    return {"content_hash": k["content_hash"], "simhash": to_unsigned64(int(k["simhash"])),
            "sketch": [to_unsigned64(int(v)) for v in k.get("sketch") or ()]}
