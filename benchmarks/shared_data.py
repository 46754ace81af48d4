"""Where the shared third-party data lives (../shared/data beside the repository, or $ZHDEDUP_DATA).

Read here once, for the benchmarks and the tests alike; see that folder's README for provenance and licence.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_DIR = Path(os.environ.get("ZHDEDUP_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
HTML_DIR = DATA_DIR / "html_zh"
NEWS_FILE = DATA_DIR / "news_sina_dev.jsonl"
FICTION_FILE = DATA_DIR / "fiction_classics_dev.jsonl"
