"""Copy matcher against a library of 10,000 chapters: added time per crawled page, memory, hits.

    python -m benchmarks.bench_matcher [--library 10000] [--pages 300]

The library is cut from the shared novels and news (chapters split into segments of at most 3,000
characters, then news articles) until it holds --library segments. Pages are copies of library
segments (wrapped in another page's text, sentences shuffled, or traditional script) and pages
made of text outside the library. Prints per-page matching time next to fingerprint_text's time
for the same pages (what the crawl already spends), the index memory, and how many copies were found.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from benchmarks.shared_data import DATA_DIR as DATA



def library_segments(n: int) -> list[tuple[str, str]]:
    """(id, text) segments: novel chapters cut at 3,000 characters, then news articles."""
    out: list[tuple[str, str]] = []
    for name in ("fiction_classics_dev.jsonl", "news_sina_dev.jsonl"):
        with (DATA / name).open(encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                text = doc["text"]
                for i in range(0, len(text), 3000):
                    if len(text[i:i + 3000]) >= 200:
                        out.append((f"{doc['id']}#{i}", text[i:i + 3000]))
    return out


def main() -> None:
    import opencc

    from fingerprint import fingerprint_text
    from fingerprint.matcher import CopyMatcher, MemorySeedIndex

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--library", type=int, default=10_000)
    p.add_argument("--pages", type=int, default=300)
    args = p.parse_args()
    segments = library_segments(10 ** 9)
    rng = random.Random(5)
    rng.shuffle(segments)
    library, outside = segments[:args.library], segments[args.library:]
    matcher = CopyMatcher(MemorySeedIndex())
    t = time.perf_counter()
    for doc_id, text in library:
        matcher.add_source(doc_id, text)
    build = time.perf_counter() - t
    matcher.match("预热")
    s2t = opencc.OpenCC("s2t")
    pages = []
    for i in range(args.pages):
        doc_id, text = library[rng.randrange(len(library))]
        filler = outside[rng.randrange(len(outside))][1] if outside else ""
        kind = i % 4
        if kind == 0:
            pages.append((doc_id, filler[:800] + text + filler[800:1600]))
        elif kind == 1:
            sents = text.split("。")
            rng.shuffle(sents)
            pages.append((doc_id, "。".join(sents)))
        elif kind == 2:
            pages.append((doc_id, s2t.convert(text)))
        else:
            pages.append((None, filler or "无关的文字。" * 100))
    match_ms, fp_ms, found, false = [], [], 0, 0
    for truth, page in pages:
        t = time.perf_counter()
        hits = matcher.match(page)
        match_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        fingerprint_text(page)
        fp_ms.append((time.perf_counter() - t) * 1000)
        ids = {m.source_id for m in hits}
        found += truth is not None and truth in ids
        false += len(ids - {truth})
    match_ms.sort()
    copies = sum(t is not None for t, _ in pages)
    print(f"library: {len(library):,} segments, {matcher.index.memory_bytes() / 2 ** 20:.0f} MiB of seeds, "
          f"built in {build:.1f} s")
    print(f"pages: {len(pages)} ({copies} copies, {len(pages) - copies} unrelated)")
    print(f"match time per page: median {statistics.median(match_ms):.2f} ms, "
          f"p99 {match_ms[int(len(match_ms) * 0.99) - 1]:.2f} ms "
          f"(fingerprint_text of the same pages: median {statistics.median(fp_ms):.2f} ms)")
    print(f"copies found: {found}/{copies}; other library segments matched as well: {false} "
          "(the news file holds reprints and shared passages, unlabelled: not all of these are errors)")


if __name__ == "__main__":
    main()
