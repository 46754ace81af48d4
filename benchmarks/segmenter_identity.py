"""The compiled segmenter against rjieba, token list for token list, on every text we have (the lead reruns it).

    python -m benchmarks.segmenter_identity [--random 200000] [--seed 28] [--words 2000000]
    python -m benchmarks.segmenter_identity --timing 3000   # cut alone: us a document, both, alternating

Sources: every title and text of the shared news and fiction files, raw and normalised
(fingerprint.normalize.normalize: what the product cuts); the shared seed texts; the dedup benchmark's
5,000 documents (benchmarks/dedup_corpus.py); random strings of a weighted alphabet (common and rare Han,
CJK extensions A/B, ASCII letters, digits, . % + # & - _, full-width punctuation, whitespace of every
kind, emoji, combining marks, astral characters); and the dictionary's words shuffled into lines, so every
word is cut next to others. Prints the texts, characters and tokens compared per source and every
mismatch (exit status 1 if any).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.shared_data import NEWS_FILE

SHARED = NEWS_FILE.parent
ALPHABET_PARTS = [
    ("的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会", 30),
    ("".join(chr(c) for c in range(0x4E00, 0x9FFF, 7)), 10),   # the whole main block, rare characters too
    ("".join(chr(c) for c in range(0x9FD0, 0xA000)), 2),       # past the HMM's range (U+9FD5)
    ("".join(chr(c) for c in range(0x3400, 0x4DC0, 37)), 2),  # extension A
    ("".join(chr(c) for c in range(0x20000, 0x2A6E0, 997)), 2),  # extension B
    ("".join(chr(c) for c in range(0xF900, 0xFB00, 11)), 1),   # compatibility ideographs
    ("abcxyzABCXYZ", 8), ("0123456789", 8), (".%+#&-_", 6),
    ("，。、；：？！“”‘’（）《》【】…—～·", 6), ("０１２ＡＢａｂ＋％", 2),
    (" \t\n\r\u3000\u00a0\u2028\u2029\u200b\x0b\x0c\x85", 4),
    ("😀👪🀄𝄞\U0001F1E8\U0001F1F3\U000E0001", 2), ("\u0301\u0308\u20dd\u3099", 1),
    ("²³¹١٢३", 1), ("ÀéßΩЖあア한", 2),
]


def alphabet() -> tuple[list[str], list[int]]:
    """Characters and weights of the random strings."""
    chars, weights = [], []
    for part, weight in ALPHABET_PARTS:
        for ch in part:
            chars.append(ch)
            weights.append(weight * 100 // len(part) + 1)
    return chars, weights


def random_texts(n: int, seed: int) -> Iterator[str]:
    """n random strings of 0-80 characters (runs of one class are likely: jieba's blocks)."""
    rng = random.Random(seed)
    chars, weights = alphabet()
    for _ in range(n):
        k = rng.choice((0, 1, 2, 3, 5, 8, 13, 21, 40, 80))
        yield "".join(rng.choices(chars, weights, k=k)) + rng.choice(("", "\r\n", "\r"))


def dictionary_lines(n_words: int, seed: int) -> Iterator[str]:
    """Dictionary words shuffled into lines of 1-30, sometimes with a random character between them."""
    from fingerprint.segmenter import jieba_dir, read_dictionary

    words = list(read_dictionary((jieba_dir() / "dict.txt").read_text(encoding="utf-8"))[0])
    rng = random.Random(seed)
    chars, weights = alphabet()
    done = 0
    while done < n_words:
        rng.shuffle(words)
        i = 0
        while i < len(words) and done < n_words:
            k = rng.randint(1, 30)
            line = words[i:i + k]
            if rng.random() < 0.3:
                line = [w + rng.choices(chars, weights)[0] if rng.random() < 0.2 else w for w in line]
            yield "".join(line)
            i += k
            done += k


def shared_texts() -> Iterator[tuple[str, str]]:
    """(source, text) of the shared data files, raw and normalised, and the seed texts."""
    from fingerprint.normalize import normalize

    for name in ("news_sina_dev.jsonl", "fiction_classics_dev.jsonl"):
        with (SHARED / name).open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                for field in ("title", "chapter_title", "text"):
                    if row.get(field):
                        yield name, row[field]
                        yield name + " normalised", normalize(row[field])
    for path in sorted((SHARED.parent / "seeds").glob("*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        yield "seeds", text
        yield "seeds normalised", normalize(text)


def corpus_texts() -> Iterator[tuple[str, str]]:
    """The dedup benchmark's documents, raw and normalised."""
    from benchmarks.dedup_corpus import build
    from fingerprint.normalize import normalize

    for row in build(5000):
        yield "dedup_corpus", row["text"]
        yield "dedup_corpus normalised", normalize(row["text"])


def timing(n: int, rounds: int = 7) -> None:
    """Median us a document of rjieba's cut and the compiled one on n normalised benchmark documents
    (3,000 characters), and of the cut with the synonym SimHash as the dedup runs it (rjieba's tokens, the
    compiled tokens, the compiled token ends), alternating rounds in one process; then each one's load in a
    fresh process."""
    import statistics
    import subprocess

    from benchmarks.dedup_corpus import build
    from fingerprint import segmenter
    from fingerprint.normalize import normalize
    from fingerprint.simhash import canonical_simhash, canonical_simhash_of
    from fingerprint.tokens import Tokenizer, _jieba_class

    texts = [normalize(row["text"]) for row in build(n)]
    ref, tok = _jieba_class()(), Tokenizer()
    cuts = {"rjieba": lambda t: ref.cut(t, True), "compiled": segmenter.cut,
            "rjieba + canonical_simhash": lambda t: canonical_simhash(ref.cut(t, True)),
            "compiled + canonical_simhash": lambda t: canonical_simhash(segmenter.cut(t)),
            "token ends: canonical_simhash_of": lambda t: canonical_simhash_of(t, tok)}
    for cut in cuts.values():
        cut(texts[0])
    times: dict[str, list[float]] = {k: [] for k in cuts}
    for _ in range(rounds):
        for name, cut in cuts.items():
            start = time.process_time()
            for text in texts:
                cut(text)
            times[name].append((time.process_time() - start) / len(texts) * 1e6)
    for name, ts in times.items():
        print(f"{name:34}: {statistics.median(ts):6.0f} us a document (CPU; {min(ts):.0f}-{max(ts):.0f}, "
              f"{rounds} rounds, {len(texts)} documents of {sum(map(len, texts)) // len(texts)} characters)")
    loads = {"rjieba": "from fingerprint.tokens import _jieba_class; _jieba_class()()",
             "compiled": "from fingerprint import segmenter; segmenter.table()"}
    for name, code in loads.items():
        probe = ("import time; t = time.process_time(); import fingerprint.tokens; t1 = time.process_time(); "
                 f"{code}; print(time.process_time() - t1)")
        runs = [float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                     check=True).stdout) for _ in range(5)]
        print(f"load, {name:8}: {statistics.median(runs) * 1000:6.1f} ms (CPU, after the package's imports; "
              f"{min(runs) * 1000:.1f}-{max(runs) * 1000:.1f}, 5 processes)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--random", type=int, default=200_000, help="random strings")
    p.add_argument("--words", type=int, default=2_000_000, help="dictionary words in shuffled lines")
    p.add_argument("--seed", type=int, default=28)
    p.add_argument("--timing", type=int, metavar="DOCS", help="time the cut instead of comparing")
    args = p.parse_args()
    if args.timing:
        timing(args.timing)
        return 0
    from fingerprint import segmenter
    from fingerprint.tokens import _jieba_class

    if not segmenter.available():
        print("the compiled segmenter is not built", file=sys.stderr)
        return 2
    ref = _jieba_class()()
    stats: dict[str, list[int]] = {}
    mismatches = 0
    sources = [shared_texts(), corpus_texts(), (("random", t) for t in random_texts(args.random, args.seed)),
               (("dictionary lines", t) for t in dictionary_lines(args.words, args.seed))]
    start = time.perf_counter()
    for source in sources:
        for name, text in source:
            a, b = ref.cut(text, True), segmenter.cut(text)
            row = stats.setdefault(name, [0, 0, 0, 0])
            row[0] += 1
            row[1] += len(text)
            row[2] += len(a)
            if a != b:
                row[3] += 1
                mismatches += 1
                if mismatches <= 20:
                    print(f"MISMATCH {name}: {text[:200]!r}\n  rjieba {a[:60]}\n  ours   {b[:60]}")
    print(f"{'source':38} {'texts':>9} {'characters':>12} {'tokens':>11} {'mismatches':>10}")
    for name, (n, chars, toks, bad) in stats.items():
        print(f"{name:38} {n:9,} {chars:12,} {toks:11,} {bad:10,}")
    total = [sum(r[i] for r in stats.values()) for i in range(4)]
    print(f"{'total':38} {total[0]:9,} {total[1]:12,} {total[2]:11,} {total[3]:10,}"
          f"   ({time.perf_counter() - start:.0f} s)")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
