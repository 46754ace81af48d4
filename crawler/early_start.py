"""EarlyStart: the crawl's slow starts begun the moment Scrapy builds its extensions, in the background.

Without it the store opened (embedded servers started: ~0.7 s on a fresh var/) when the first pipeline was
built, after Scrapy's middlewares, and the worker processes started when the spider opened, after the store;
a one-page crawl waited for each in turn. Now both start before Scrapy imports and builds the rest of the
crawl, and whoever needs them first waits for what is left (pipelines.early; docs/performance.md, "Fixed cost").
"""
from __future__ import annotations

from typing import Any


def enabled_pipelines(settings: Any) -> set[str]:
    """Dotted paths of the item pipelines this crawl runs."""
    from scrapy.utils.conf import build_component_list

    paths = set()
    for component in build_component_list(settings.getwithbase("ITEM_PIPELINES")):
        paths.add(component if isinstance(component, str) else f"{component.__module__}.{component.__qualname__}")
    return paths


class EarlyStart:
    """Extension (built first): the store and the worker processes start in the background for the
    pipelines this crawl runs (pipelines.early.start_early)."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> "EarlyStart":
        """Start both for this crawler (its settings are final by now)."""
        from pipelines.early import start_early

        start_early(crawler, enabled_pipelines(crawler.settings))
        return cls()


class RemoteControl:
    """Scrapy's remote control (off unless REMOTE_CONTROL_ENABLED), without importing aiohttp (~0.3 s of
    start-up) when it is off: Scrapy imports an extension's module before asking whether it is enabled."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> Any:
        """Scrapy's extension when enabled; NotConfigured otherwise (as Scrapy's own says)."""
        from scrapy.exceptions import NotConfigured

        if not crawler.settings.getbool("REMOTE_CONTROL_ENABLED"):
            raise NotConfigured
        from scrapy.extensions.remote_control import RemoteControl as ScrapyRemoteControl

        return ScrapyRemoteControl.from_crawler(crawler)
