"""Imported only by the workers' forkserver, after the workers' tasks: it runs their warm-ups (trafilatura's
first call, the tokenizer's tables) once, so that every worker it forks starts warm instead of warming up
while the crawl's first pages wait for it. The forkserver starts as soon as the crawl command has its
settings (pipelines.early.start_forkserver_early), while the crawler process still imports Scrapy's parts."""
import logging

from pipelines._worker_tasks import warm_up_extract, warm_up_fingerprint

for _warm_up in (warm_up_extract, warm_up_fingerprint):
    try:
        _warm_up()
    except Exception as exc:   # each worker warms up again on its own, and then says what failed
        logging.getLogger(__name__).debug("forkserver warm-up %s failed: %s", _warm_up.__name__, exc)
