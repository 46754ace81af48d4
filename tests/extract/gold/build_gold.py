"""Write gold/gne/<page>.txt from gne_selection.json (container XPath + the line numbers a person kept).

  python tests/extract/gold/build_gold.py
The selection file is the record of the hand decisions; this script only replays them.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from dom_dump import lines_of, load

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.shared_data import HTML_DIR  # noqa: E402

HERE = Path(__file__).resolve().parent
PAGES = HTML_DIR / "gne"


def parse_ranges(spec: str) -> list[int]:
    """'0-3,5' -> [0, 1, 2, 3, 5]."""
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def build(name: str, sel: dict) -> str:
    """The gold text for one page ('' for a page with no article body)."""
    if "nobody" in sel:
        return ""
    root = load(str(PAGES / f"{name}.html"))
    (el,) = root.xpath(sel["xpath"])[:1]
    lines = lines_of(el)
    kept = [lines[i] for i in parse_ranges(sel["keep"])]
    for s in sel.get("strip", []):
        kept = [line.replace(s, "").strip() for line in kept]
    return "\n".join(line for line in kept if line) + "\n"


def main() -> None:
    selection = json.loads((HERE / "gne_selection.json").read_text(encoding="utf-8"))
    out = HERE / "gne"
    out.mkdir(exist_ok=True)
    for name, sel in sorted(selection.items()):
        (out / f"{name}.txt").write_text(build(name, sel), encoding="utf-8")
    print(f"{len(selection)} gold files in {out}")


if __name__ == "__main__":
    main()
