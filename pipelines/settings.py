"""The pipelines' Scrapy settings and their defaults, declared once: crawler/settings.py imports them all,
and each pipeline's from_crawler falls back to them when a crawler runs without the project's settings
(an embedding application, a test's get_crawler). Override any with `scrapy crawl ... -s NAME=VALUE`."""
from extract.limits import MAX_BYTES as _MAX_BYTES
from extract.limits import MIN_CHARS as _MIN_CHARS

__all__ = [
    "EXTRACT_MIN_CHARS", "EXTRACT_FAST", "EXTRACT_MAX_BYTES", "EXTRACT_TEMPLATES", "EXTRACT_TEMPLATE_MIN_PAGES",
    "EXTRACT_TEMPLATE_WARMUP_SECONDS", "ZHDEDUP_EXTRACT_WORKERS", "ZHDEDUP_FINGERPRINT_WORKERS",
    "ZHDEDUP_SIMHASH_K", "ZHDEDUP_PASSAGES", "ZHDEDUP_PASSAGE_COVERAGE", "ZHDEDUP_SKETCH_MIN_SHARED",
    "ZHDEDUP_PASSAGE_CANDIDATES", "ZHDEDUP_REWRITES", "ZHDEDUP_SEMANTIC", "ZHDEDUP_TRACE_DECISIONS", "ZHDEDUP_INFRINGEMENT", "ZHDEDUP_MIN_MATCH_SCORE", "ZHDEDUP_STORE",
    "ZHDEDUP_STORE_THREADS", "ZHDEDUP_STORE_BATCH", "ZHDEDUP_STORE_BATCH_MS", "ZHDEDUP_LOG_STORED",
]

# --- extract (pipelines/extract.py) ----------------------------------------------------------------
EXTRACT_MIN_CHARS = _MIN_CHARS  # fewer non-space characters in the body: skipped (not an article)
EXTRACT_FAST = False            # True: skip the slower fallbacks (trafilatura's second pass)
EXTRACT_MAX_BYTES = _MAX_BYTES  # pages are cut here before parsing (a 10 MB page would cost seconds)
EXTRACT_TEMPLATES = True        # strip a site's repeated lines (its template) learned from its first pages
EXTRACT_TEMPLATE_MIN_PAGES = 3  # pages of a site seen before its template is trusted
EXTRACT_TEMPLATE_WARMUP_SECONDS = 5.0  # how long at most a site's first pages wait for its template
ZHDEDUP_FINGERPRINT_WORKERS = "auto"  # worker processes that fingerprint (0: in the crawler, ~0.5 ms/page);
ZHDEDUP_EXTRACT_WORKERS = "auto"      # ... and extract (~2 ms/page), one pool; auto = 1 with 2+ CPUs, else 0
                                      # (the crawler is bound to one core; see docs/performance.md), growing
                                      # to one a CPU while the workers stay busy (pages of real sites' weight)

# --- dedup (pipelines/params.py -> fingerprint.neardup.NearDupParams) ------------------------------
ZHDEDUP_SIMHASH_K = 3           # near duplicate: Hamming distance <= k (0..8) between 64-bit SimHashes;
                                # the Redis index's block layout follows k (a change rebuilds it)
ZHDEDUP_PASSAGES = True         # third dedup step: pages sharing passages that cover >= the coverage below
ZHDEDUP_PASSAGE_COVERAGE = 0.75
ZHDEDUP_SKETCH_MIN_SHARED = 2   # sketch values a kept page must share to be verified by passages
ZHDEDUP_PASSAGE_CANDIDATES = 8  # kept pages verified per page, best first
ZHDEDUP_REWRITES = True         # passages covering >= 50% of both pages, no stretch > 12% without one: a spun
                                # copy (method "rewrite"); synonyms are canonicalised before fingerprints
                                # unless the environment sets ZHDEDUP_SYNONYMS=0 (fingerprint/synonyms.py)
ZHDEDUP_SEMANTIC = 0.0          # > 0 (0.7 measured): a rewrite stands only when 80% of its aligned sentence pairs
                                # reach this cosine in a sentence encoder (fingerprint/semantic.py; needs the
                                # `semantic` extra; ~10 ms a sentence pair, so off by default)
ZHDEDUP_TRACE_DECISIONS = False  # True: every verdict logged at INFO (logger zhdedup.decisions), else at DEBUG

# --- infringement (pipelines/infringement.py) ------------------------------------------------------
ZHDEDUP_INFRINGEMENT = True     # compare every kept page with the registered source library
ZHDEDUP_MIN_MATCH_SCORE = 0.0   # matches below this score are not recorded

# --- store (pipelines/crawl_store.py, pipelines/store.py) -----------------------------------------------
ZHDEDUP_STORE: dict = {}        # overrides for StoreConfig.from_env, e.g. -s 'ZHDEDUP_STORE={"db_name": "t"}'
ZHDEDUP_STORE_THREADS = "auto"  # threads for blocking store calls, so downloads go on meanwhile; auto = 2 with
                                # up to 2 usable CPUs (fewer threads asking for the GIL: +7% pages/s), else 4
ZHDEDUP_STORE_BATCH = 100       # pages saved per MongoDB write at most (pages arriving during a write go in the next)
ZHDEDUP_STORE_BATCH_MS = 30.0   # wait before a write of pages or of copy records, to batch more: fewer MongoDB commands
ZHDEDUP_LOG_STORED = False      # True: an INFO line per stored page (new matches are always logged)
