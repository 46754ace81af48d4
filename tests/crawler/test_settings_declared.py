"""Every Scrapy setting the code reads is declared once, with its default, in crawler/settings.py (or in the
module that owns it, imported there); code that falls back to a default names that declaration."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from scrapy.settings import default_settings

from crawler import distributed
from crawler import settings as project

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("admin", "crawler", "extract", "fingerprint", "pipelines", "storage", "zhdedup_cli")
# settings.get("NAME"...), s.getint("NAME", ...), crawler.settings.getbool("NAME"...), worker_count(s, "NAME")
READ = re.compile(r"""\b(?:settings|s)\.get\w*\(\s*["']([A-Z][A-Z0-9_]+)["']\s*(?:,\s*([^)]*?))?\)|"""
                  r"""worker_count\([^,]+,\s*["']([A-Z][A-Z0-9_]+)["']""")
OURS = re.compile(r"^(ZHDEDUP|EXTRACT|DISTRIBUTED)_")


def reads() -> list[tuple[str, str, str | None]]:
    """(file:line, setting name, the fallback written at the read or None) for every read in product code."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for m in READ.finditer(text):
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                found.append((where, m.group(1) or m.group(3), m.group(2)))
    return found


def set_by_the_distributed_addon() -> set[str]:
    """Names the distributed add-on computes from the store's Redis (derived, not user settings)."""
    return set(re.findall(r'"([A-Z][A-Z0-9_]+)":', inspect.getsource(distributed.distributed_settings)))


def test_the_scan_finds_the_reads():
    names = {name for _, name, _ in reads()}
    assert {"ZHDEDUP_SIMHASH_K", "EXTRACT_MIN_CHARS", "DISTRIBUTED_WORKER_TTL", "ZHDEDUP_OUTCOMES_BATCH",
            "ZHDEDUP_EXTRACT_WORKERS"} <= names


def test_every_setting_read_is_declared():
    known = set(dir(project)) | set(dir(default_settings)) | set_by_the_distributed_addon()
    undeclared = sorted(f"{where} {name}" for where, name, _ in reads() if name not in known)
    assert not undeclared, "declare these in crawler/settings.py:\n" + "\n".join(undeclared)


def test_our_settings_are_declared_in_the_project_settings():
    derived = set_by_the_distributed_addon()
    ours = sorted({name for _, name, _ in reads() if OURS.match(name) and name not in derived})
    assert [name for name in ours if not hasattr(project, name)] == []


def test_a_fallback_default_is_the_declaration_not_a_second_value():
    written = sorted(f"{where} {name}, {default}" for where, name, default in reads()
                     if default and OURS.match(name) and default.strip() != f"defaults.{name}")
    assert not written, "fall back to defaults.NAME (declared once):\n" + "\n".join(written)
