"""Real texts for the fingerprint tests, read from ../shared/data (skipped with a reason if absent)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _load(name: str, limit: int) -> list[dict]:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(limit), f)]


@pytest.fixture(scope="session")
def chapters() -> list[dict]:
    """The first 60 chapters of the classic novels (三国演义 first)."""
    return _load("fiction_classics_dev.jsonl", 60)


@pytest.fixture(scope="session")
def news() -> list[dict]:
    """The first 300 Sina news articles."""
    return _load("news_sina_dev.jsonl", 300)
