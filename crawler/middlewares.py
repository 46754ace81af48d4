"""Spider middlewares of the project: crawl limits that say what they cut."""
from __future__ import annotations

from typing import Any

from scrapy.spidermiddlewares.depth import DepthMiddleware

from crawler.outcomes import page_outcome
from pipelines import stats


class RecordedDepthMiddleware(DepthMiddleware):
    """Scrapy's DepthMiddleware, but every link it drops for DEPTH_LIMIT gets an outcome (skipped,
    depth_limit) and a count, so "why is this story not in the store?" has an answer."""

    def get_processed_request(self, request: Any, response: Any) -> Any:
        """Scrapy's depth rule; a dropped link is recorded instead of vanishing."""
        kept = super().get_processed_request(request, response)
        if kept is None and response is not None:
            self.stats.inc_value(stats.skipped("depth_limit"))
            self.crawler.signals.send_catch_log(
                page_outcome, url=request.url, outcome="skipped", reason="depth_limit",
                detail=f"link from {response.url} at depth {request.meta.get('depth')} > DEPTH_LIMIT={self.maxdepth}",
                fetched=False)
        return kept
