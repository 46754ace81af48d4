import datetime as dt
import random

import opencc
import pytest

from fingerprint.neardup import (MAX_K, DedupDoc, DedupEngine, MemoryDedupIndex, NearDupParams, check_k,
                                 is_near_duplicate, passage_coverage, sketch)


def _edit(text: str, share: float, filler: str, seed: int = 4) -> str:
    """Delete or insert 10-character pieces until `share` of the text changed."""
    rng, out = random.Random(seed), list(text)
    for _ in range(int(len(text) * share / 10)):
        i = rng.randrange(len(out))
        if rng.random() < 0.5:
            del out[i:i + 10]
        else:
            j = rng.randrange(len(filler) - 10)
            out[i:i] = list(filler[j:j + 10])
    return "".join(out)


def test_copies_simhash_misses_are_caught_by_passages(news):
    story, filler = news[5]["text"], news[6]["text"]
    edited = _edit(story, 0.10, filler)
    verdict = is_near_duplicate(story, edited)
    assert verdict.kind == "near"
    sents = story.split("。")
    random.Random(2).shuffle(sents)
    assert is_near_duplicate(story, "。".join(sents)).kind == "near"
    assert is_near_duplicate(story, opencc.OpenCC("s2t").convert(story)).kind in ("near", "exact")


def test_exact_and_simhash_steps_come_first(news):
    story = news[7]["text"]
    assert is_near_duplicate(story, story.replace("，", ",")).method == "exact"
    assert is_near_duplicate(story, story + "（完）").method in ("exact", "simhash")


def test_other_texts_and_partial_copies_are_new(chapters):
    assert all(is_near_duplicate(a["text"], b["text"]).kind == "new"
               for a, b in zip(chapters[:15], chapters[1:16]))
    quoted = chapters[20]["text"][:3000] + chapters[21]["text"][:600]
    assert is_near_duplicate(chapters[21]["text"], quoted).kind == "new"
    assert passage_coverage(chapters[21]["text"], quoted) < 0.75


def test_single_pass_stream(news):
    engine = DedupEngine()
    stream = [("a", news[10]["text"]), ("b", news[11]["text"]), ("a2", news[10]["text"] + "编辑：某某")]
    verdicts = {doc: engine.decide(DedupDoc.of(doc, text)) for doc, text in stream}
    assert verdicts["a"].kind == verdicts["b"].kind == "new"
    assert verdicts["a2"].original == "a"
    assert engine.index.text_of("a2") is None, "a duplicate is not kept"


def test_a_copy_published_earlier_becomes_the_original(news):
    engine = DedupEngine()
    story = news[12]["text"]
    engine.decide(DedupDoc.of("late", story, published=dt.date(2024, 5, 2)))
    verdict = engine.decide(DedupDoc.of("early", story + "（完）", published=dt.date(2024, 5, 1)))
    assert verdict.kind == "new" and verdict.replaced == "late"
    third = engine.decide(DedupDoc.of("third", story))
    assert third.original == "early"
    undated = engine.decide(DedupDoc.of("undated", story + "。"))
    assert undated.is_duplicate and undated.replaced is None


def test_passage_step_verifies_at_most_max_candidates(news):
    story, filler = news[13]["text"], news[14]["text"]
    copy = DedupDoc.of("copy", _edit(story, 0.10, filler))
    # an unrelated page whose sketch equals the copy's: it ranks first among the candidates
    decoy = DedupDoc("decoy", filler, "f" * 32, copy.simhash ^ (2**64 - 1), copy.sketch)
    for limit, expected in ((1, "new"), (2, "near")):
        engine = DedupEngine(NearDupParams(k=0, max_candidates=limit))   # k=0: the copy is the passages' to find
        assert engine.decide(decoy).kind == engine.decide(DedupDoc.of("story", story)).kind == "new"
        verdict = engine.decide(copy)
        assert (verdict.kind, verdict.original) == (expected, None if expected == "new" else "story")


@pytest.mark.parametrize("bad", [-1, MAX_K + 1, 99, 2.5, "3", True])
def test_k_outside_the_served_range_is_refused(bad):
    with pytest.raises(ValueError, match="from 0 to"):
        check_k(bad)
    with pytest.raises(ValueError):
        NearDupParams(k=bad)


def test_engine_refuses_an_index_built_for_another_k():
    with pytest.raises(ValueError, match="k=2"):
        DedupEngine(NearDupParams(k=3), MemoryDedupIndex(k=2))


def test_sketch_is_small_stable_and_empty_for_no_han():
    text = "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。青山依旧在，几度夕阳红。" * 3
    assert sketch(text) == sketch(text) and 0 < len(sketch(text)) <= 8
    assert sketch("hello world 123") == []


def test_sketch_equals_the_bottom_of_the_whole_winnowed_seed_set(news, chapters):
    """smallest_seeds tests only the smallest hashes for being window minima: it must equal the full path."""
    import numpy as np

    from fingerprint.matcher import _Letters
    from fingerprint.seeds import seeds, smallest_seeds

    streams = [_Letters.of(d["text"]).codes for d in (news[:60] + chapters[:60])]
    rng = random.Random(11)
    streams += [np.array([rng.randrange(1, 3) for _ in range(rng.randrange(0, 80))], dtype=np.uint8)
                for _ in range(400)]   # two letters: ties and repeats everywhere
    for codes in streams:
        for size in (1, 8, 40):
            assert smallest_seeds(codes, size) == np.unique(seeds(codes)[0])[:size].tolist()


def test_a_page_that_displaces_by_simhash_joins_its_passage_relatives(news):
    """Invariant seed 1592: O displaces P (found by SimHash) but never ran its passage step, so N, an earlier
    edit of the same story that P's passages did not reach, stood beside O. O joins N: N stands for all three."""
    story, filler, other = news[15]["text"], news[16]["text"], news[17]["text"]
    o = DedupDoc.of("O", story, published=dt.date(2024, 5, 15))
    n_text = _edit(story, 0.10, filler)
    n = DedupDoc("N", n_text, "n" * 32, o.simhash ^ 0xFFFF, DedupDoc.of("N", n_text).sketch, dt.date(2024, 5, 12))
    p = DedupDoc("P", other, "p" * 32, o.simhash ^ 1, DedupDoc.of("P", other).sketch, dt.date(2024, 5, 18))
    assert passage_coverage(story, n_text) >= NearDupParams().min_coverage > passage_coverage(other, n_text)
    engine = DedupEngine()
    assert [engine.decide(d).kind for d in (p, n, o)] == ["new", "new", "new"]
    assert {engine.index.resolve(x) for x in "PNO"} == {"N"}
    later = engine.decide(DedupDoc.of("L", story + "。", published=dt.date(2024, 5, 20)))
    assert later.is_duplicate and engine.index.resolve(later.original) == "N"
