"""RedisDedupIndex: the crawl's DedupIndex (fingerprint.neardup) on the store's Redis index and MongoDB pages.

The decision itself lives in fingerprint.neardup.DedupEngine; this adapter only says where kept pages'
keys and texts are: exact hashes and SimHash block tables in one Lua check-and-insert, passage sketches
with an atomic ordered claim, texts and publish dates from MongoDB.
"""
from __future__ import annotations

import datetime as dt
import time
import zlib
from collections import OrderedDict
from typing import Any

from fingerprint.neardup import DedupDoc, IndexHit, Verdict, publish_date

RECENT = 10_000  # pages kept by this process, whose save to MongoDB may still be on its way
POLL = (0.05, 0.1, 0.2, 0.4, 0.0)  # another crawler may have claimed a page and still be saving it
TEXT_TTL = 24 * 3600  # a claimed page's text waits in Redis until its page is in MongoDB (or a day)


class RedisDedupIndex:
    """DedupIndex over a Store (storage.store): Redis for the keys, MongoDB for the texts."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.k = store.index.k
        self._recent: OrderedDict[str, tuple[str | None, dt.date | None]] = OrderedDict()
        self._pages: OrderedDict[str, dict] = OrderedDict()

    def check_and_insert(self, doc: DedupDoc) -> IndexHit:
        """Exact, then SimHash within k (one Redis round trip); a new page is remembered for its copies."""
        res = self.store.check_and_insert(doc.page_id, doc.content_hash, doc.simhash)
        if res.kind in ("new", "unchanged"):
            self._remember(doc)
        return IndexHit(res.kind, res.original_id, int(res.distance), bool(res.spooled))

    def claim_sketch(self, doc: DedupDoc, min_shared: int) -> tuple[int, list[tuple[str, int, int]]]:
        """The store's atomic sketch claim, after the page's text: whoever sees the claim can verify it."""
        self.store._retry("redis", self.store.redis.set, text_key(self.store, doc.page_id),
                          zlib.compress(doc.text.encode("utf-8")), ex=TEXT_TTL)
        return self.store.claim_sketch(doc.page_id, list(doc.sketch), min_shared)

    def text_of(self, page_id: str) -> str | None:
        """The kept page's text: from its claim while the page may be in flight, else from MongoDB."""
        raw = self.store._retry("redis", self.store.redis.get, text_key(self.store, page_id))
        if raw is not None:
            return zlib.decompress(raw).decode("utf-8")
        return (self._page(page_id) or {}).get("text")

    def published_of(self, page_id: str) -> dt.date | None:
        """The kept page's publish date (this process's recent pages first, then MongoDB)."""
        recent = self._recent.get(page_id)
        if recent is not None:
            return recent[1]
        return publish_date((self._page(page_id) or {}).get("published"))

    def url_of(self, page_id: str) -> str | None:
        """The kept page's URL, for the copy record."""
        recent = self._recent.get(page_id)
        if recent is not None and recent[0]:
            return recent[0]
        return (self._page(page_id) or {}).get("url")

    def forget(self, doc: DedupDoc) -> None:
        """Undo the page's exact, SimHash and sketch entries, and its claimed text."""
        self.store.forget_copy(doc.page_id, doc.content_hash, doc.simhash, list(doc.sketch))
        self.store._retry("redis", self.store.redis.delete, text_key(self.store, doc.page_id))
        self._recent.pop(doc.page_id, None)

    def replace_original(self, old_id: str, doc: DedupDoc, verdict: Verdict) -> None:
        """The store moves old_id's page to duplicates and gives its index entries to doc."""
        method = "exact" if verdict.method == "exact" else "passages" if verdict.method == "passages" else "near"
        self.store.replace_original(old_id, {"id": doc.page_id, "url": doc.url, "content_hash": doc.content_hash,
                                             "simhash": doc.simhash, "sketch": list(doc.sketch)},
                                    method, verdict.distance, verdict.coverage)
        self._remember(doc)

    def _remember(self, doc: DedupDoc) -> None:
        self._recent[doc.page_id] = (doc.url, doc.published)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    def _page(self, page_id: str) -> dict | None:
        """A kept page from MongoDB, read once per decision (a small cache), polled while it may be in flight."""
        page = self._pages.get(page_id)
        if page is not None:
            return page
        for delay in POLL:
            page = self.store.get_page(page_id)
            if page:
                break
            time.sleep(delay)
        if page:
            self._pages[page_id] = page
            while len(self._pages) > 64:
                self._pages.popitem(last=False)
        return page


def text_key(store: Any, page_id: str) -> str:
    """Where a claimed page's compressed text waits until the page is saved (deleted by save_page)."""
    return f"{store.config.key_prefix}tx:{page_id}"
