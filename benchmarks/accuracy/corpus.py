"""Read the shared real corpora at run time (their texts never go into the repository)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from benchmarks.shared_data import DATA_DIR as DEFAULT_DATA

NEWS_FILE = "news_sina_dev.jsonl"
FICTION_FILE = "fiction_classics_dev.jsonl"


@dataclass(frozen=True)
class Doc:
    """One real document: news article or novel chapter, with what makes two of them 'same genre'."""

    id: str
    kind: str          # "news" | "fiction"
    group: str         # news category or novel title
    order: int         # position in the file (news) or chapter index (fiction)
    title: str
    text: str


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """The shared data directory: --data, else $ZHDEDUP_DATA, else ../shared/data next to the repo."""
    path = Path(override) if override else DEFAULT_DATA
    for name in (NEWS_FILE, FICTION_FILE):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name} not found: pass --data DIR or set ZHDEDUP_DATA")
    return path


def _read_jsonl(path: Path) -> list[dict]:
    """Parse a JSON-lines file, naming the line of any malformed record."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: malformed JSON ({exc})") from exc
    return rows


@lru_cache(maxsize=4)
def load_news(directory: Path) -> list[Doc]:
    """All news articles in file order (the file has no date: position stands in for the day). Cached:
    callers must not modify the list."""
    return [Doc(r["id"], "news", r.get("category") or "", i, r.get("title") or "", r.get("text") or "")
            for i, r in enumerate(_read_jsonl(directory / NEWS_FILE))]


@lru_cache(maxsize=4)
def load_fiction(directory: Path) -> list[Doc]:
    """All novel chapters with their book and chapter index."""
    return [Doc(r["id"], "fiction", r.get("book") or "", int(r.get("chapter_index") or 0),
                r.get("chapter_title") or "", r.get("text") or "")
            for r in _read_jsonl(directory / FICTION_FILE)]
