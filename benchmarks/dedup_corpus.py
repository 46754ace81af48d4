"""Held-out-looking input for `python -m fingerprint dedup`: 3,000-character news documents, a quarter
of them near copies with small edits, generated at run time from the shared data (never committed).

    python -m benchmarks.dedup_corpus OUT.jsonl [--docs 5000] [--seed 28]

Originals are real Sina stories (benchmarks.shared_data.NEWS_FILE, its own duplicates left out) shuffled
and concatenated, cut to 3,000 characters. The news file holds about 2,800 such documents (a corpus of
3,700 with its copies); past that the stories are shuffled again with another seed, so later documents
share a story or two with earlier ones (as round-ups do) but never their whole text: that makes many
more passage checks, a harder corpus than the held-out one. Each copy follows its original after a few
other documents and differs from it by one small edit: a sentence dropped, a source line added, a few
characters changed, two sentences swapped, or a paragraph break moved.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from benchmarks.shared_data import NEWS_FILE

SIZE = 3000


def _stories(path: Path = NEWS_FILE) -> list[str]:
    """The news file's stories, each once: its own duplicates (same opening or ending) are left out."""
    seen: set[str] = set()
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"].strip()
            if text and text[:40] not in seen and text[-40:] not in seen:
                seen.update((text[:40], text[-40:]))
                out.append(text)
    return out


def _originals(n: int, seed: int, size: int = SIZE) -> list[str]:
    stories = _stories()
    docs: list[str] = []
    rounds = 0
    while len(docs) < n:
        order = stories[:]
        random.Random(seed * 1000 + rounds).shuffle(order)
        rounds += 1
        buf = ""
        for story in order:
            buf += story + "\n"
            while len(buf) >= size and len(docs) < n:
                docs.append(buf[:size])
                buf = buf[size:]
            if len(docs) >= n:
                break
    return docs


def _edit(text: str, rng: random.Random) -> str:
    """One small edit of a 3,000-character text."""
    kind = rng.randrange(5)
    sentences = [s for s in text.split("。")]
    if kind == 0 and len(sentences) > 3:                       # a sentence dropped
        del sentences[rng.randrange(1, len(sentences) - 1)]
        return "。".join(sentences)
    if kind == 1:                                              # a source line added
        at = rng.randrange(len(text))
        return text[:at] + "（来源：新华网）" + text[at:]
    if kind == 2:                                              # a few characters changed
        chars = list(text)
        for _ in range(rng.randrange(3, 12)):
            chars[rng.randrange(len(chars))] = rng.choice("的了是在有和就不人都一也")
        return "".join(chars)
    if kind == 3 and len(sentences) > 3:                       # two neighbouring sentences swapped
        i = rng.randrange(len(sentences) - 2)
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
        return "。".join(sentences)
    at = rng.randrange(len(text))                              # a paragraph break moved or added
    return text[:at] + "\n" + text[at:].replace("\n", "", 1)


def build(n: int, seed: int = 28) -> list[dict]:
    """n rows {"id", "text"}: three quarters originals, a quarter near copies placed after their originals."""
    rng = random.Random(seed)
    n_copies = n // 4
    originals = _originals(n - n_copies, seed)
    rows = [{"id": f"n{i}", "text": t} for i, t in enumerate(originals)]
    for j, i in enumerate(sorted(rng.sample(range(len(originals)), n_copies), reverse=True)):
        at = min(len(rows), i + 1 + rng.randrange(0, 50))
        rows.insert(at, {"id": f"c{j}", "text": _edit(originals[i], rng)})
    return rows


def write(path: Path, n: int, seed: int = 28) -> Path:
    """Write build(n, seed) as JSONL (UTF-8, one row a line)."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in build(n, seed)), encoding="utf-8")
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--docs", type=int, default=5000)
    p.add_argument("--seed", type=int, default=28)
    args = p.parse_args()
    write(args.out, args.docs, args.seed)


if __name__ == "__main__":
    main()
