"""Builds the frozen character tables in fingerprint/data/ (run by hand, never at import time).

The fingerprint must not change when opencc or pypinyin release a new version, so their output is
computed once per FINGERPRINT_VERSION and committed:

    python -m fingerprint.tables      # rewrites data/t2s_chars.tsv, initials.tsv, initial_reference.tsv
"""
from __future__ import annotations

import sys
from pathlib import Path

DATA_DIR = Path(__file__).with_name("data")
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))


def han_chars() -> list[str]:
    """Every Han character the tables cover (CJK unified, extension A, compatibility)."""
    return [chr(cp) for lo, hi in HAN_RANGES for cp in range(lo, hi + 1)]


def build_t2s(chars: list[str]) -> dict[str, str]:
    """Character-level traditional -> simplified map from OpenCC's t2s profile."""
    import opencc

    converter = opencc.OpenCC("t2s")
    simplified = converter.convert("\n".join(chars)).split("\n")
    return {t: s for t, s in zip(chars, simplified) if len(s) == 1 and s != t}


def build_initials(chars: list[str]) -> dict[str, str]:
    """Han character -> first letter of its most common pinyin reading."""
    from pypinyin import Style, lazy_pinyin

    table = {}
    for ch in chars:
        letter = lazy_pinyin(ch, style=Style.FIRST_LETTER, errors="ignore")
        if letter and len(letter[0]) == 1 and "a" <= letter[0] <= "z":
            table[ch] = letter[0]
    return table


def build_reference(initials_table: dict[str, str]) -> dict[str, float]:
    """Expected share of each initial letter in Chinese text, from jieba's word-frequency dictionary."""
    from importlib import resources

    totals: dict[str, float] = {}
    for line in resources.files("jieba").joinpath("dict.txt").read_text(encoding="utf-8").splitlines():
        parts = line.split(" ")
        if len(parts) < 2:
            continue
        for ch in parts[0]:
            letter = initials_table.get(ch)
            if letter:
                totals[letter] = totals.get(letter, 0.0) + float(parts[1])
    grand = sum(totals.values())
    return {letter: totals[letter] / grand for letter in sorted(totals)}


def main() -> int:
    chars = han_chars()
    t2s = build_t2s(chars)
    (DATA_DIR / "t2s_chars.tsv").write_text(
        "".join(f"{t}\t{s}\n" for t, s in sorted(t2s.items())), encoding="utf-8")
    initials = build_initials(chars)
    by_letter: dict[str, list[str]] = {}
    for ch, letter in sorted(initials.items()):
        by_letter.setdefault(letter, []).append(ch)
    (DATA_DIR / "initials.tsv").write_text(
        "".join(f"{letter}\t{''.join(cs)}\n" for letter, cs in sorted(by_letter.items())),
        encoding="utf-8")
    reference = build_reference(initials)
    (DATA_DIR / "initial_reference.tsv").write_text(
        "".join(f"{letter}\t{share:.6f}\n" for letter, share in reference.items()), encoding="utf-8")
    print(f"t2s: {len(t2s)} characters; initials: {len(initials)} characters", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
