"""CI smoke test: `python -m benchmarks.accuracy --quick` runs end to end into a temporary directory."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.accuracy.corpus import data_dir, load_fiction
from benchmarks.accuracy.methods import IndexMethod, PairMethod, Unavailable, build_methods

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "benchmarks" / "results"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _snapshot(d: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime for p in d.glob("*")} if d.is_dir() else {}


def _row(stdout: str, name: str) -> list[str]:
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no summary row for {name!r} in:\n{stdout}")


@pytest.mark.slow
def test_quick_mode_end_to_end(tmp_path):
    before = _snapshot(COMMITTED)
    out = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.accuracy", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _snapshot(COMMITTED) == before, "the smoke test must not touch the committed results"

    report = (out / "accuracy.md").read_text(encoding="utf-8")
    for section in ("## Summary", "## Goals (issues 3 and 6)", "the paper's Figure 2", "## Non-copies",
                    "## Time per document", "## Natural duplicates in the news file (unlabelled)", "## Protocol"):
        assert section in report
    pngs = sorted(out.glob("*.png"))
    assert {p.name for p in pngs} >= {"recall_edits.png", "recall_substitution.png", "recall_partial.png",
                                      "recall_reorder.png", "recall_script.png", "recall_boilerplate.png"}
    assert all(p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000 for p in pngs)

    # the stdout table is the README's: one row per operating point, numbers in range
    assert proc.stdout.startswith("| method | edits 5% |")
    seed = _row(proc.stdout, "SimHash k=3")
    assert all(c == "-" or 0 <= float(c) <= 100 for c in seed[1:9])
    lsh = _row(proc.stdout, "datasketch MinHashLSH t=0.5")
    assert float(lsh[1]) >= 80, "5% edits must keep most char-5-gram MinHash copies: is the set wired right?"
    for product in ("| product dedup", "| product matcher"):
        assert any(line.startswith(product) for line in proc.stdout.splitlines()), product
    assert "| product matcher | recall: partial copies" in report   # the goals table is filled in


def test_methods_flag_a_copy_and_not_a_stranger():
    chapters = [d for d in load_fiction(data_dir()) if d.group == "红楼梦"][:2]
    a, b = chapters[0].text, chapters[1].text
    built = build_methods()
    assert not [m for m in built if isinstance(m, Unavailable) and m.group == "peer"]
    for m in built:
        if isinstance(m, PairMethod):
            assert m.is_copy(a, a), m.name
            assert not m.is_copy(a, b), m.name
        elif isinstance(m, IndexMethod):
            m.add("a", a)
            assert "a" in m.query(a), m.name
            assert "a" not in m.query(b), m.name
