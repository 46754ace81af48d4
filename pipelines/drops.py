"""Typed drops: why an item left the pipelines, as data (kind, reason) and as a message a person reads."""
from __future__ import annotations

import re

from scrapy.exceptions import DropItem


class DuplicateItem(DropItem):
    """A copy of a kept page: kind (exact | near | passages | rewrite), the original, distance or coverage."""

    def __init__(self, kind: str, original_id: str | None, original_url: str,
                 distance: int | None = None, coverage: float | None = None, known: bool = False) -> None:
        self.kind, self.original_id, self.original_url = kind, original_id, original_url
        self.distance, self.coverage = distance, coverage
        self.known = known  # recorded by an earlier crawl already (its drop line goes to DEBUG)
        if kind == "exact":
            message = f"exact duplicate of {original_url}"
        elif kind == "passages":
            message = f"near duplicate of {original_url} (shared passages cover {coverage or 0:.0%})"
        elif kind == "rewrite":
            message = f"rewritten copy of {original_url} (shared passages cover {coverage or 0:.0%})"
        else:
            message = f"near duplicate of {original_url} (distance {distance})"
        super().__init__(message)


class SkippedItem(DropItem):
    """A page that is not an article (list page, soft 404, empty, binary...): reason slug + message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def reason_of(exception: BaseException | None) -> str:
    """The reason slug of a drop: a typed drop's own, else the message's head ('no text: x' -> 'no_text')."""
    reason = getattr(exception, "reason", None) or getattr(exception, "kind", None)
    if reason:
        return str(reason)
    head = str(exception or "dropped").split(":", 1)[0].strip().lower()
    return re.sub(r"[^a-z0-9]+", "_", head).strip("_")[:40] or "dropped"
