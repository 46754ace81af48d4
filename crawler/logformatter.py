"""Log dropped items as one short line (reason and URL) instead of a WARNING with the whole item."""
from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.logformatter import LogFormatter, LogFormatterResult


class ZhdedupLogFormatter(LogFormatter):
    """Duplicates and pages without a body are expected outcomes, not warnings."""

    def dropped(self, item: Any, exception: BaseException, response: Any, spider: Any = None) -> LogFormatterResult:
        """INFO: "Dropped <url>: <reason>"; DEBUG for a copy an earlier crawl recorded already."""
        level = logging.DEBUG if getattr(exception, "known", False) else logging.INFO
        return {"level": level, "msg": "Dropped %(url)s: %(exception)s",
                "args": {"url": ItemAdapter(item).get("url"), "exception": exception}}
