"""Pages this process indexed whose MongoDB save may still be on its way: what a Redis refill puts back after
a data loss (MongoDB, the refill's source, does not have them yet), and the keys a displacement hands over."""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

LIMIT = 2_000   # pages (with texts) re-added after a Redis data loss if MongoDB does not have them yet


@dataclass(frozen=True)
class Flight:
    """One page's dedup keys, and the claimed text and publish date that wait beside them in Redis."""

    content_hash: str
    simhash: int
    sketch: tuple[int, ...] = ()
    text: bytes | None = None        # compressed, as kept under the page's text key
    published: str | None = None     # ISO date, as kept under the page's date key

    def keys(self) -> dict:
        """The page's index keys in the form the store's displacement records them."""
        return {"content_hash": self.content_hash, "simhash": int(self.simhash),
                "sketch": [int(v) for v in self.sketch]}


class InFlight:
    """The last LIMIT pages this process indexed, oldest first; safe to share between the store's threads."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._pages: OrderedDict[str, Flight] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, page_id: str, flight: Flight) -> None:
        """Remember a page just indexed (the oldest is forgotten past the limit)."""
        with self._lock:
            self._pages[page_id] = flight
            self._pages.move_to_end(page_id)
            while len(self._pages) > self.limit:
                self._pages.popitem(last=False)

    def get(self, page_id: str) -> Flight | None:
        with self._lock:
            return self._pages.get(page_id)

    def keep_text(self, page_id: str, text: bytes) -> None:
        """The page's claimed text, for a refill to put back with its claim (nothing if it is not in flight)."""
        with self._lock:
            flight = self._pages.get(page_id)
            if flight is not None:
                self._pages[page_id] = replace(flight, text=text)

    def pop(self, page_id: str) -> None:
        """The page left the index (a copy taken back, a page displaced)."""
        with self._lock:
            self._pages.pop(page_id, None)

    def snapshot(self) -> dict[str, Flight]:
        """Every page in flight now, oldest first (a copy: the refill talks to Redis without the lock)."""
        with self._lock:
            return dict(self._pages)

    def __len__(self) -> int:
        return len(self._pages)
