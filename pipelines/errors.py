"""The error a crawl stops on before anything is fetched; exit codes belong to the command line."""
from __future__ import annotations


class CrawlCannotStart(Exception):
    """A bad setting, or a store or JOBDIR the crawl cannot use, found while the crawl is being set up.

    Library code (from_crawler, the scheduler) raises it with a message that names the setting or path and
    the fix; the command line (`scrapy crawl`, `zhdedup watch`) logs that message as one CRITICAL line and
    exits 2. A program that embeds the crawler catches it like any other error.
    """
