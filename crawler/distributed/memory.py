"""`WorkerMemory`: what one distributed worker remembers of the shared Redis, and what it queues again
when that Redis lost its data."""
from __future__ import annotations

import hashlib
from collections import OrderedDict

from scrapy.http import Request

from .queue import LEASE

MAX_ROOTS = 1_000    # start requests kept to queue again after Redis lost its data


class WorkerMemory:
    """Fingerprints this worker knows are in the shared seen set (no round trip for them), digests of the
    entries it popped (not fetched twice when another worker queues one again), the pages it fetched since
    its alive mark was last found in place, and its start requests. All of it describes a Redis that may
    lose its data: `forget` empties it and returns what to queue again."""

    def __init__(self, size: int) -> None:
        self.size = size   # seen fingerprints and popped digests kept at most (0: none)
        self.seen: OrderedDict[str, None] = OrderedDict()
        self.popped: OrderedDict[bytes, None] = OrderedDict()
        self.window: dict[str, Request] = {}   # by lease token
        self.roots: dict[str, Request] = {}    # by URL
        self.losses = 0

    def knows_seen(self, fp: str) -> bool:
        """The fingerprint was in the shared set when this worker last pushed or met it."""
        if fp in self.seen:
            self.seen.move_to_end(fp)
            return True
        return False

    def saw(self, fp: str) -> None:
        """The fingerprint is in the shared set now (the set only grows, unless Redis loses it)."""
        if self.size > 0:
            self.seen[fp] = None
            if len(self.seen) > self.size:
                self.seen.popitem(last=False)

    def took(self, entry: bytes) -> None:
        """This worker popped this queue entry (its digest is kept: 12 bytes)."""
        if self.size > 0:
            self.popped[_digest(entry)] = None
            if len(self.popped) > self.size:
                self.popped.popitem(last=False)

    def took_before(self, entry: bytes) -> bool:
        """This worker popped that queue entry earlier in its run."""
        return _digest(entry) in self.popped

    def leased(self, token: str, request: Request) -> None:
        """A page this worker is about to fetch: queued again if a loss may have cut off its links."""
        self.window[token] = request

    def started(self, request: Request) -> None:
        """A start request of this worker, queued again after a loss (pages not fetched since are found from it)."""
        if request.meta.get("is_start_request") and not request.meta.get(LEASE) and len(self.roots) < MAX_ROOTS:
            self.roots.setdefault(request.url, request.copy())

    def confirmed(self, held: set[str] | dict[str, bytes]) -> None:
        """The alive mark was found in place: nothing was lost before now, so pages finished since queued their
        links into a whole set; those still held (leases in `held`) may queue theirs after a loss."""
        self.window = {t: r for t, r in self.window.items() if t in held}

    def forget(self) -> tuple[int, int, list[Request]]:
        """Redis lost its data: (entries popped, fingerprints known) forgotten, and the requests to queue again:
        the pages fetched since the mark was last in place whatever the seen set says (their links may have been
        taken for seen by this memory of the lost set), then the start requests not among them."""
        counts = len(self.popped), len(self.seen)
        self.losses += 1
        self.popped.clear()
        self.seen.clear()
        pages = [r.replace(dont_filter=True) for r in self.window.values()]
        self.window.clear()
        for request in pages:
            request.meta.pop(LEASE, None)
        urls = {p.url for p in pages}
        return (*counts, pages + [r.copy() for url, r in self.roots.items() if url not in urls])


def _digest(entry: bytes) -> bytes:
    return hashlib.blake2b(entry, digest_size=12).digest()
