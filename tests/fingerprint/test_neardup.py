import random

import opencc

from fingerprint.neardup import NearDuplicateDetector, is_near_duplicate, passage_coverage, sketch


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
    det = NearDuplicateDetector()
    stream = [("a", news[10]["text"]), ("b", news[11]["text"]), ("a2", news[10]["text"] + "编辑：某某")]
    verdicts = {doc: det.check_and_add(doc, text) for doc, text in stream}
    assert verdicts["a"].kind == verdicts["b"].kind == "new"
    assert verdicts["a2"].original == "a"


def test_sketch_is_small_stable_and_empty_for_no_han():
    text = "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。青山依旧在，几度夕阳红。" * 3
    assert sketch(text) == sketch(text) and 0 < len(sketch(text)) <= 8
    assert sketch("hello world 123") == []
