"""When the loopback sites served their first and last response: a crawl's fixed cost seen from outside.

The benchmark starts a crawl as a subprocess and serves its sites in its own process, so one monotonic
clock gives: process start -> first request (interpreter, imports, servers, store open, Scrapy's start) and
last response -> process exit (the last items through the pipelines, flush, close, servers' stop).
"""
from __future__ import annotations

import threading
import time
from typing import Any


class HitClock:
    """Monotonic times of the first and last request any of the wrapped sites answered (404s included)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first: float | None = None
        self.last: float | None = None

    def reset(self) -> None:
        """Forget the previous crawl's hits."""
        with self.lock:
            self.first = self.last = None

    def stamp(self) -> None:
        """Note a request answered now."""
        now = time.monotonic()
        with self.lock:
            if self.first is None:
                self.first = now
            self.last = now

    def wrap(self, sites: dict[str, dict]) -> dict[str, dict]:
        """The same sites, each a dict whose look-ups (one per request the server answers) stamp this clock."""
        return {name: ClockedSite(site, self) for name, site in sites.items()}

    def phases(self, started: float, ended: float) -> dict[str, float]:
        """Seconds from start to the first request, first to last response, last response to exit."""
        first = self.first if self.first is not None else ended
        last = self.last if self.last is not None else ended
        return {"to_first_request": first - started, "crawling": last - first, "after_last_response": ended - last}


class ClockedSite(dict):
    """A site (path -> Resource) that stamps its clock on every request's look-up."""

    def __init__(self, site: dict, clock: HitClock) -> None:
        super().__init__(site)
        self.clock = clock

    def get(self, key: Any, default: Any = None) -> Any:
        """The resource at key; the request is stamped first."""
        self.clock.stamp()
        return super().get(key, default)
