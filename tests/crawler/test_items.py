"""PageItem declares every field a spider or a pipeline puts on a page, each with a type (none `Any`)."""
from __future__ import annotations

import re
import typing
from pathlib import Path

from crawler.items import PageItem
from crawler.spiders.fiction import FictionSpider
from pipelines.extract import FIELDS
from pipelines.fingerprint import compute

ROOT = Path(__file__).resolve().parents[2]
DECLARED = typing.get_type_hints(PageItem)
# adapter["name"] = ..., a["name"] = ..., item["name"] = ... in the pipelines and the spiders
SET = re.compile(r"""\b(?:adapter|a|item)\[["']([a-z_]+)["']\]\s*=(?!=)""")


def assigned() -> set[str]:
    """Field names assigned on an item anywhere in pipelines/ or crawler/spiders/."""
    names: set[str] = set()
    for path in [*(ROOT / "pipelines").glob("*.py"), *(ROOT / "crawler" / "spiders").glob("*.py")]:
        names |= set(SET.findall(path.read_text(encoding="utf-8")))
    return names


def test_the_scan_sees_the_pipelines_assignments():
    assert {"raw_text", "template_lines", "dedup", "matches", "page_id"} <= assigned()


def test_every_field_set_is_declared():
    state = {"book": "b", "book_url": "u", "number": 1, "title": "t", "parts": []}
    fields = (assigned() | {name for name, _ in FIELDS} | set(compute("今天江边的老桥完成了加固。"))
              | set(FictionSpider.chapter_fields(state)) | {"profile", "canonical_claim"})
    assert sorted(fields - set(DECLARED)) == []


def test_every_field_has_a_type():
    assert [name for name, hint in DECLARED.items() if hint is typing.Any] == []
