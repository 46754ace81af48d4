"""A pipeline for tests: raises for the URLs named in ZHDEDUP_TEST_FAIL_URLS (a pipeline error, as a bug
or a full disk would raise), so that what the crawl does with a failed page can be checked."""
from __future__ import annotations

import os
from typing import Any


class FailNamedUrls:
    """Raise for every item whose URL is listed (comma-separated) in ZHDEDUP_TEST_FAIL_URLS."""

    def __init__(self) -> None:
        self.urls = set(filter(None, os.environ.get("ZHDEDUP_TEST_FAIL_URLS", "").split(",")))

    def process_item(self, item: Any, spider: Any = None) -> Any:
        """Fail the named pages; pass the rest."""
        if item.get("url") in self.urls:
            raise RuntimeError(f"test failure for {item.get('url')}")
        return item
