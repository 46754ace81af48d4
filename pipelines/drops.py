"""Typed DropItem subclasses: every dropped item says why, as a slug for stats and a sentence for people."""
from __future__ import annotations

from scrapy.exceptions import DropItem


class SkippedItem(DropItem):
    """A page that is not an article (list page, soft 404, empty, binary...): reason slug + message."""
    def __init__(self, reason: str, message: str): super().__init__(message); self.reason = reason
