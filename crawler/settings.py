"""Scrapy settings for the zhdedup crawler: every knob in one place, polite defaults.

Override any of them per run with `scrapy crawl news -s NAME=VALUE`; the ZHDEDUP_* ones are ours.
"""
import os

from scrapy.settings import default_settings as _scrapy_defaults

BOT_NAME = "zhdedup"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
COMMANDS_MODULE = "crawler.commands"  # `scrapy crawl` with argument checks and a failing exit code

# --- Identity and politeness -------------------------------------------------------------------
# Say who we are and where to complain. Replace the contact URL before crawling other people's sites.
USER_AGENT = "zhdedup/0.1 (+https://example.org/zhdedup-crawler; contact: crawler-admin@example.org)"
ROBOTSTXT_OBEY = True
# Never hammer one host: 2 parallel requests per host, 16 overall, and AutoThrottle adapts the delay to
# the server's latency (it never goes below DOWNLOAD_DELAY).
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 0.5
DOWNLOAD_DELAY_JITTER = 0.5     # +-50% random variation of the delay
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
DEFAULT_REQUEST_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "zh-CN,zh;q=0.9,zh-TW;q=0.8,en;q=0.5",
}

# --- Limits ------------------------------------------------------------------------------------
# A news page is rarely above 1 MB; 16 MB stops runaway downloads, 4 MB logs a warning.
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
REDIRECT_MAX_TIMES = 5          # a redirect loop ends after 5 hops with "max redirections reached"
RETRY_ENABLED = True
RETRY_TIMES = 2
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
DEPTH_LIMIT = 5                 # link hops from a start page; 0 means unlimited
DEPTH_PRIORITY = 0

# --- URL-level dedup ----------------------------------------------------------------------------
# Requests are fingerprinted on the URL with tracking parameters (utm_*, spm, from, ...) removed, so
# the same story linked from ten places is downloaded once, before any content work.
REQUEST_FINGERPRINTER_CLASS = "crawler.urls.CanonicalRequestFingerprinter"

# --- Development cache ----------------------------------------------------------------------------
# Off by default (we want fresh pages). Switch on while developing extraction: `-s HTTPCACHE_ENABLED=1`.
HTTPCACHE_ENABLED = False
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_EXPIRATION_SECS = 24 * 3600
HTTPCACHE_IGNORE_HTTP_CODES = [500, 502, 503, 504, 408, 429]

# --- Pause and resume --------------------------------------------------------------------------
# Scrapy keeps its scheduler queue and seen-request fingerprints on disk when JOBDIR is set:
#   scrapy crawl news -a profile=sina -s JOBDIR=var/jobs/news-1      (Ctrl-C once, then run the same command to resume)
# Scrapy's JOBDIR state is only consistent after a clean stop, so crawler.resume adds a write-ahead
# journal of the frontier (JOBDIR/frontier.journal): after a SIGKILL the same command re-queues the
# requests that were not finished and skips the finished ones (docs/operations.md).
# Content dedup does not depend on JOBDIR: the store's check-and-insert is persistent and atomic.
JOBDIR = os.environ.get("ZHDEDUP_JOBDIR") or None

# --- Distributed mode ---------------------------------------------------------------------------
# Off by default. ZHDEDUP_DISTRIBUTED = True (or env ZHDEDUP_DISTRIBUTED=1) lets the add-on below move the
# scheduler queue and the URL dupefilter into the store's Redis (scrapy-redis, crawler/distributed/),
# so several `scrapy crawl` processes split one crawl. Details: docs/scale-out.md.
ZHDEDUP_DISTRIBUTED = False
DISTRIBUTED_JOB = ""            # the shared crawl's name (env ZHDEDUP_CRAWL_JOB; default: the spider's name)
DISTRIBUTED_IDLE_CLOSE_SECONDS = 10.0   # a worker closes after the shared queue was empty this long
DISTRIBUTED_POLL_SECONDS = 0.5          # how often an idle worker looks at the shared queue
DISTRIBUTED_WORKER_TTL = 30.0           # a killed worker's leases go back to the queue after this
DISTRIBUTED_SEEN_CACHE = 100_000        # fingerprints this process knows are in the shared seen set
DISTRIBUTED_REDIS_OUTAGE_SECONDS = 60.0  # Redis away this long (restarts tried meanwhile): the crawl stops
# (the add-on sets DISTRIBUTED_*_KEY, REDIS_URL and scrapy-redis' SCHEDULER_* from the store's Redis)
ADDONS = {"crawler.distributed.DistributedAddon": 0,  # does nothing unless distributed mode is on
          "crawler.resume.ResumeAddon": 1}             # journaled scheduler whenever JOBDIR is set

# --- Remote control --------------------------------------------------------------------------
# Scrapy 2.19 opens a local control port by default. We turn it off: a crawler that runs unattended on
# a shared machine should not listen on any port, and pause/resume goes through JOBDIR and signals
# (Ctrl-C / SIGTERM). Switch it on for an interactive session with `-s REMOTE_CONTROL_ENABLED=1`.
REMOTE_CONTROL_ENABLED = False
TELNETCONSOLE_ENABLED = False   # same reasoning: no listening ports by default

# --- Pipelines: extract -> fingerprint -> infringement -> dedup -> store ---------------------------
ITEM_PIPELINES = {
    "pipelines.extract.ExtractPipeline": 100,
    "pipelines.fingerprint.FingerprintPipeline": 200,
    # before dedup: a pirate copy of a page crawled earlier is dropped as a duplicate, yet still reported
    "pipelines.infringement.InfringementPipeline": 250,
    "pipelines.dedup.DedupPipeline": 300,
    "pipelines.store.StorePipeline": 500,
}
# The pipelines' settings (EXTRACT_*, ZHDEDUP_SIMHASH_K and the dedup levers, ZHDEDUP_STORE*, the worker
# processes, ZHDEDUP_INFRINGEMENT ...) are declared with their defaults in pipelines/settings.py:
from pipelines.settings import *  # noqa: E402,F401,F403
# the spider's request for a site's robots.txt (for its Sitemap: lines) answered with the one Scrapy's
# RobotsTxtMiddleware (100) fetched: one download and one politeness delay less per site
DOWNLOADER_MIDDLEWARES = {"crawler.middlewares.RobotsTxtReuse": 101}
# Scrapy's depth limit, but links it cuts are counted and recorded as skipped (depth_limit)
SPIDER_MIDDLEWARES = {"scrapy.spidermiddlewares.depth.DepthMiddleware": None,
                      "crawler.middlewares.RecordedDepthMiddleware": 900}
# Scrapy's extensions without its remote control: Scrapy imports every module EXTENSIONS names, even one set
# to None (so disabling it there still imported aiohttp, ~0.1 s of every crawl's start); ours imports it only
# when REMOTE_CONTROL_ENABLED.
EXTENSIONS_BASE = {path: order for path, order in _scrapy_defaults.EXTENSIONS_BASE.items()
                   if path != "scrapy.extensions.remote_control.RemoteControl"}
EXTENSIONS = {
    "crawler.early_start.EarlyStart": -100,   # first: store and worker processes start in the background
    "crawler.early_start.RemoteControl": 0,
    "crawler.collector.CollectorTuning": 0,
    "crawler.outcomes.OutcomeRecorder": 490,   # one outcome per URL, per run, in the store
    "crawler.extensions.CrawlSummary": 500,
    "crawler.extensions.StorageGuard": 510,   # spool unwritable (disk full): stop with one clear error
    "crawler.progress.CrawlProgress": 520,    # a line of running counts every few seconds
    "crawler.alerts.MatchAlerts": 530,        # a new match above ZHDEDUP_ALERT_MIN_SCORE: WARNING + webhook
    # before the summary: their last attempts at close (a capture, a stamp) are in the report's counts
    "crawler.capture.MatchCapture": 475,      # render new matches' pages (ZHDEDUP_CAPTURE_AT_MATCH; before the stamper)
    "crawler.stamps.EvidenceStamper": 480,    # RFC 3161 timestamps of the evidence chain (off without a TSA)
}
ZHDEDUP_PROGRESS_ENABLED = True
ZHDEDUP_PROGRESS_INTERVAL = 0   # seconds between progress lines; 0 = 5 s on a terminal, 30 s in a log file
ZHDEDUP_OUTCOMES = True         # record stored / unchanged / duplicate / skipped / failed per URL and run
ZHDEDUP_OUTCOMES_BATCH = 500    # outcomes written to the store per batch
ZHDEDUP_PROFILES = ""           # extra profile files (comma separated) besides crawler/profiles/*
ZHDEDUP_REPORT = ""             # write a JSON summary of the crawl (kept and dropped URLs) here
ZHDEDUP_REPORT_MAX_ENTRIES = 100_000  # URLs listed per kept/dropped list in that report (the rest counted)

# --- Watch mode and alerts (python -m crawler watch; docs in README "Watch mode and notices") ----------
ZHDEDUP_WATCH_EVERY = 300       # default seconds between two rounds of a watched URL (per site in the store)
ZHDEDUP_WATCH_FOLLOWUP = True   # watch rounds re-check noticed URLs: taken down (404/410, text gone) or up
ZHDEDUP_ALERT_MIN_SCORE = float(os.environ.get("ZHDEDUP_ALERT_MIN_SCORE", "0.5"))  # new matches announced
ZHDEDUP_ALERT_WEBHOOK = os.environ.get("ZHDEDUP_ALERT_WEBHOOK", "")  # POST a JSON document per new match here
ZHDEDUP_ALERT_RETRIES = 4       # webhook tries after the first, with backoff 1, 2, 4, 8 s (never blocks the crawl)
ZHDEDUP_ALERT_BACKOFF = 1.0

# --- Evidence timestamps (RFC 3161; README "Evidence") ---------------------------------------------
ZHDEDUP_TSA_URL = os.environ.get("ZHDEDUP_TSA_URL", "")  # the Time Stamping Authority; empty: not stamped
ZHDEDUP_TSA_CA = os.environ.get("ZHDEDUP_TSA_CA", "")    # PEM bundle its tokens must chain to (required with a URL)
ZHDEDUP_TSA_INTERVAL = float(os.environ.get("ZHDEDUP_TSA_INTERVAL", "0"))  # seconds between two stamps at most;
                                # 0: each new head at once (looked at every second)
ZHDEDUP_TSA_TIMEOUT = float(os.environ.get("ZHDEDUP_TSA_TIMEOUT", "10"))   # seconds a TSA may take to answer
ZHDEDUP_TSA_BACKOFF_MAX = 300   # retries after a failure wait 1, 2, 4 ... up to this many seconds
# a confirmed match's page rendered by headless Chromium (full-page PNG + PDF) into the evidence log
ZHDEDUP_CAPTURE = os.environ.get("ZHDEDUP_CAPTURE", "1") not in ("0", "false", "False", "")
ZHDEDUP_CHROMIUM = os.environ.get("ZHDEDUP_CHROMIUM", "/usr/bin/chromium")
ZHDEDUP_CAPTURE_TIMEOUT = float(os.environ.get("ZHDEDUP_CAPTURE_TIMEOUT", "30"))  # seconds to load and render
ZHDEDUP_CAPTURE_AT_MATCH = False  # True: the crawl renders each new match's page as it is found, too

# --- Runtime ------------------------------------------------------------------------------------
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
CONCURRENT_ITEMS = 8            # items of ONE response processed at once; Scrapy's 100 starts 100 asyncio
                                # tasks for every response (~0.7 ms/page, docs/performance.md)
# Scrapy checks a response's callback for a generator returning a value by parsing its source with ast in the
# reactor thread (4 times in a 1,000-page crawl, at its start), while the store threads load their tables, which
# numpy reads with ast too; CPython 3.11's ast is not thread-safe (fingerprint/cache.py). Off: our spiders'
# callbacks are checked once, by a test (tests/crawler/test_callbacks.py).
WARN_ON_GENERATOR_RETURN_VALUE = False
# Python's garbage collector in a crawl process (crawler/collector.py): the start's objects frozen out of its walks
# once the spider opens, and a young-generation collection every ZHDEDUP_GC_THRESHOLD container allocations
# (Python's: 700; 0 leaves it)
ZHDEDUP_GC_FREEZE = True
ZHDEDUP_GC_THRESHOLD = 20_000
FEED_EXPORT_ENCODING = "utf-8"
LOG_FORMATTER = "crawler.logformatter.ZhdedupLogFormatter"  # one line per dropped page
LOG_LEVEL = os.environ.get("ZHDEDUP_LOG_LEVEL", "INFO")
