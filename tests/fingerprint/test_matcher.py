import random

import opencc
import pytest
from pypinyin import lazy_pinyin

from fingerprint.matcher import CopyMatcher, MemorySeedIndex, compare_texts, split_segments


@pytest.fixture(scope="module")
def library(chapters):
    matcher = CopyMatcher(MemorySeedIndex())
    for ch in chapters[:40]:
        matcher.add_source(ch["id"], ch["text"])
    return matcher


def _homophones(text: str, share: float, seed: int = 3) -> str:
    """Replace a share of Han characters with another character of the same reading."""
    by_reading: dict[str, list[str]] = {}
    for ch in set(text):
        if "\u4e00" <= ch <= "\u9fff":
            by_reading.setdefault(lazy_pinyin(ch)[0], []).append(ch)
    rng, out = random.Random(seed), list(text)
    for i in rng.sample(range(len(out)), int(len(out) * share)):
        others = [c for c in sorted(by_reading.get(lazy_pinyin(out[i])[0], [])) if c != out[i]]
        if others:
            out[i] = rng.choice(others)
    return "".join(out)


def _top(matcher, text):
    found = matcher.match(text)
    return found[0] if found else None


def test_whole_copy_with_ads_is_found_with_offsets(library, chapters):
    src = chapters[5]["text"]
    page = "广告：点击领取红包！\n" + src + "\n请阅读原文，关注公众号。"
    m = _top(library, page)
    assert m.source_id == chapters[5]["id"] and m.source_coverage > 0.95
    start, end = m.suspect_spans[0]
    assert page[start:end].startswith(src[:10]) and end - start > 0.9 * len(src)


@pytest.mark.parametrize("disguise", ["traditional", "reordered", "homophones", "edited"])
def test_disguised_copies_are_found(library, chapters, disguise):
    src = chapters[7]["text"]
    if disguise == "traditional":
        page = opencc.OpenCC("s2t").convert(src)
    elif disguise == "reordered":
        sents = src.split("。")
        random.Random(1).shuffle(sents)
        page = "。".join(sents)
    elif disguise == "homophones":
        page = _homophones(src, 0.05)
    else:
        rng = random.Random(2)
        cut = [src[i:i + 100] for i in range(0, len(src), 100)]
        page = "".join(c for c in cut if rng.random() > 0.1) + chapters[50]["text"][:len(src) // 10]
    m = _top(library, page)
    assert m is not None and m.source_id == chapters[7]["id"]
    assert m.source_coverage > 0.8


def test_partial_copy_inside_another_page(library, chapters):
    src = chapters[9]["text"]
    passage = src[1000:1400]
    page = chapters[55]["text"][:1500] + passage + chapters[56]["text"][:1500]
    m = _top(library, page)
    assert m is not None and m.source_id == chapters[9]["id"]
    (s, e), = m.suspect_spans
    assert abs(s - 1500) < 15 and abs(e - 1900) < 15
    (s2, e2), = m.source_spans
    assert abs(s2 - 1000) < 15 and abs(e2 - 1400) < 15


def test_small_excerpt_inside_another_page(library, chapters):
    """A 220-character excerpt (well under 30% of the chapter and under 300 copied characters) is one
    unbroken shared passage: a copy."""
    src = chapters[9]["text"]
    assert len(src) > 2000
    excerpt = src[1000:1220]
    page = chapters[55]["text"][:1500] + excerpt + chapters[56]["text"][:1500]
    m = _top(library, page)
    assert m is not None and m.source_id == chapters[9]["id"] and m.source_coverage < 0.3
    assert m.copied_chars < 300


def test_joined_chapters_match_each_chapter(library, chapters):
    page = chapters[11]["text"] + "\n" + chapters[12]["text"]
    assert {m.source_id for m in library.match(page)} >= {chapters[11]["id"], chapters[12]["id"]}


def test_other_chapters_of_the_same_novel_do_not_match(library, chapters):
    # chapters 40..59 are not in the library; many are from the same novels as the indexed ones
    assert [ch["id"] for ch in chapters[40:60] if library.match(ch["text"])] == []


def test_removed_source_no_longer_matches(chapters):
    matcher = CopyMatcher()
    matcher.add_source("x", chapters[0]["text"])
    assert matcher.match(chapters[0]["text"])
    matcher.remove_source("x")
    assert matcher.match(chapters[0]["text"]) == []


def test_compare_texts_without_index(chapters):
    assert compare_texts(chapters[0]["text"], chapters[0]["text"][:800]).copied_chars > 500
    assert compare_texts(chapters[0]["text"], chapters[1]["text"]) is None
    assert compare_texts("", "") is None


def test_long_works_split_into_chapters_and_bounded_segments(chapters):
    book = "\n".join(f"{ch['chapter_title']}\n{ch['text']}" for ch in chapters[:3])
    segments = split_segments(book, max_chars=4000)
    assert segments[0][0] == 0 and segments[-1][1] == len(book)
    assert all(b - a <= 4000 for a, b in segments)
    assert all(a == b_prev for (a, _), (_, b_prev) in zip(segments[1:], segments))
    heads = [book[a:a + 3] for a, _ in segments]
    assert sum(h.startswith("第") for h in heads) == 3
