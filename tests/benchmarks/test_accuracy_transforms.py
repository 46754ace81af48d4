"""The disguises of the accuracy benchmark do what they claim, on real texts, deterministically."""
from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pypinyin import Style, pinyin

from benchmarks.accuracy import transforms as T
from benchmarks.accuracy.corpus import data_dir, load_fiction, load_news
from benchmarks.accuracy.evaluate import balanced_precision, masks, span_coverage, summary
from benchmarks.accuracy.pairs import Config, build, digest, shingle_containment

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus():
    d = data_dir()
    return load_news(d), load_fiction(d)


@pytest.fixture(scope="module")
def chapter(corpus) -> str:
    return next(d.text for d in corpus[1] if d.group == "三国演义" and 3000 < len(d.text) < 8000)


@pytest.fixture(scope="module")
def article(corpus) -> str:
    return next(d.text for d in corpus[0] if 800 < len(d.text) < 3000)


@pytest.fixture(scope="module")
def tables(corpus) -> T.ReadingTables:
    return T.build_reading_tables(d.text for d in corpus[0][:200] + corpus[1][:20])


def is_subsequence(small: str, big: str) -> bool:
    it = iter(big)
    return all(c in it for c in small)


def test_sentences_split_and_join_back(chapter, article):
    for text in (chapter, article):
        parts = T.split_sentences(text)
        assert "".join(parts) == text
        assert len(parts) > 10
        assert all(len(p) < 400 for p in parts)


@pytest.mark.parametrize("frac", [0.01, 0.05, 0.2])
def test_add_keeps_the_source_in_order_and_adds_the_fraction(chapter, article, frac):
    v = T.add_text(chapter, frac, [article], random.Random(1))
    assert is_subsequence(chapter, v.text)
    assert len(v.text) - len(chapter) == pytest.approx(frac * len(chapter), abs=2)
    assert v.changed == pytest.approx(frac, abs=0.002)


@pytest.mark.parametrize("frac", [0.01, 0.1, 0.2])
def test_delete_removes_the_fraction_and_nothing_else(chapter, frac):
    v = T.delete_text(chapter, frac, random.Random(2))
    assert is_subsequence(v.text, chapter)
    assert len(chapter) - len(v.text) == pytest.approx(frac * len(chapter), abs=2)


def test_reorderings_keep_every_character(chapter, article):
    for text in (chapter, article):
        s = T.reorder_sentences(text, random.Random(3)).text
        assert s != text
        assert Counter(T.split_sentences(s)) == Counter(T.split_sentences(text)) or \
            Counter(s.replace("\n", "")) == Counter(text.replace("\n", ""))
        p = T.reorder_paragraphs(text, random.Random(3)).text
        assert p != text
        assert Counter(p.replace("\n", "")) == Counter(text.replace("\n", ""))


def _reading(c: str, style) -> str:
    return pinyin(c, style=style, heteronym=False, neutral_tone_with_five=True)[0][0]


def test_homophones_replace_the_fraction_with_same_reading(chapter, tables):
    v = T.substitute_chars(chapter, 0.05, tables.same_reading, random.Random(4))
    diff = [(a, b) for a, b in zip(chapter, v.text) if a != b]
    han = sum(1 for c in chapter if T.HAN.match(c))
    assert len(v.text) == len(chapter)
    assert len(diff) == pytest.approx(0.05 * han, abs=2)
    assert all(_reading(a, Style.TONE3) == _reading(b, Style.TONE3) for a, b in diff)


def test_near_homophones_change_only_the_tone(article, tables):
    v = T.substitute_chars(article, 0.05, tables.near_reading, random.Random(5))
    diff = [(a, b) for a, b in zip(article, v.text) if a != b]
    assert diff
    for a, b in diff:
        assert _reading(a, Style.NORMAL) == _reading(b, Style.NORMAL)
        assert _reading(a, Style.TONE3) != _reading(b, Style.TONE3)


def test_lookalikes_come_from_the_table(chapter):
    table = T.lookalike_table()
    assert set(table["己"]) == {"已", "巳"} and "末" in table["未"] and "入" in table["人"]
    v = T.substitute_chars(chapter, 0.02, table, random.Random(6))
    diff = [(a, b) for a, b in zip(chapter, v.text) if a != b]
    assert diff and all(b in table[a] for a, b in diff)


def test_script_and_encoding(article):
    trad = T.to_traditional(article).text
    assert trad != article and len(trad) == len(article)
    assert T.to_traditional("这是简体中文").text == "這是簡體中文"
    assert T.to_fullwidth("abc 1,").text == "ａｂｃ\u3000１，"
    assert T.to_halfwidth_punct("你好，世界。").text == "你好,世界."
    assert T.encoding_round_trip("新闻😀", "gbk").text == "新闻?"
    gbk = T.encoding_round_trip(article, "gbk")
    assert len(gbk.text) == len(article) and gbk.changed < 0.01   # only what GBK lacks (nbsp, emoji)


def test_boilerplate_keeps_the_text_and_adds_the_lines(article):
    v = T.add_boilerplate(article, "all", random.Random(7), "标题")
    assert "请阅读原文" in v.text or "阅读原文" in v.text or "转载" in v.text or "未完待续" in v.text
    assert T.NAV_LINES[0] in v.text
    assert is_subsequence(article.replace("\n", ""), v.text.replace("\n", ""))
    with pytest.raises(ValueError):
        T.add_boilerplate(article, "popups", random.Random(7))


@pytest.mark.parametrize("frac", [0.1, 0.5, 0.9])
def test_partial_copy_span_is_the_copied_source_part(chapter, article, frac):
    v = T.partial_copy(chapter, frac, article, random.Random(8))
    (s, e), = v.copied_spans
    piece = v.text[s:e]
    assert piece in chapter
    assert frac <= len(piece) / len(chapter) < frac + 0.15
    assert is_subsequence(article.replace("\n", ""), (v.text[:s] + v.text[e:]).replace("\n", ""))


def test_joined_chapters_spans(corpus):
    chs = [d for d in corpus[1] if d.group == "西游记"][:3]
    v = T.join_chapters([(c.title, c.text) for c in chs])
    assert [v.text[s:e] for s, e in v.copied_spans] == [c.text for c in chs]


def test_metrics():
    assert span_coverage([(10, 20)], [(0, 15), (18, 30)]) == pytest.approx(0.7)
    assert span_coverage([(0, 10)], []) == 0.0
    assert balanced_precision(0.9, 0.1) == pytest.approx(0.9)
    assert shingle_containment("一二三四五六七八九十", "一二三四五六七八九十甲乙") == 1.0


def test_labelled_set_is_the_same_in_another_process():
    here = digest(build(Config(n_news=2, n_fiction=2, n_donors=10), data_dir()))
    code = ("from benchmarks.accuracy.pairs import Config, build, digest; from benchmarks.accuracy.corpus "
            "import data_dir; print(digest(build(Config(n_news=2, n_fiction=2, n_donors=10), data_dir())))")
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"})
    assert other.stdout.strip() == here
    assert digest(build(Config(n_news=2, n_fiction=2, n_donors=10, seed=7), data_dir())) != here


def test_labelled_set_has_every_family_and_clean_negatives():
    ls = build(Config(n_news=3, n_fiction=3, n_donors=10), data_dir())
    families = Counter(p.family for p in ls.pairs)
    assert set(families) == {"edit", "reorder", "substitution", "script", "boilerplate", "partial", "negative"}
    for p in ls.pairs:
        if p.disguise == "hard-same-book":
            assert p.variant != p.source.text and p.variant_id != p.source.id
            assert p.variant_id.rsplit("/", 1)[0] == p.source.id.rsplit("/", 1)[0]
        if p.disguise == "hard-same-category":
            assert shingle_containment(p.source.text, p.variant) <= 0.2
    m = masks(ls.pairs)
    s = summary(m["pos"].copy(), m)   # flag every copy and no non-copy: perfect
    assert s["recall_whole"] == 1.0 and s["fp_hard"] == 0 and s["f1_all"] == 1.0


def test_background_histogram_counts_only_pairs_of_different_groups():
    import numpy as np
    from benchmarks.accuracy.background import distance_histogram
    fps = np.array([0b0, 0b1, 0b111, 0b0], dtype=np.uint64)
    hist, near = distance_histogram(fps, ["a", "b", "b", "a"], close=1)
    # pairs across groups: (0,1) d1, (0,2) d3, (1,3) d1, (2,3) d3; (0,3) and (1,2) are same-group
    assert hist[1] == 2 and hist[3] == 2 and hist.sum() == 4
    assert sorted(near) == [(0, 1, 1), (1, 3, 1)]


def test_natural_duplicate_detectors(corpus):
    from benchmarks.accuracy.corpus import Doc
    from benchmarks.accuracy.natural import exact_pairs, passage_pairs, title_pairs
    news = [d for d in corpus[0] if len(d.text) > 600][:30]
    a = news[0]
    copies = [Doc("x1", "news", a.group, 0, a.title + "（转载）", "  " + a.text + "\n"),
              Doc("x2", "news", a.group, 0, "完全不同的标题", news[1].text[:300] + a.text[:400])]
    docs = news + copies
    n = len(news)
    assert (0, n) in exact_pairs(docs) and (0, n + 1) not in exact_pairs(docs)
    assert (0, n) in title_pairs(docs) and (0, n + 1) not in title_pairs(docs)
    assert {(0, n), (0, n + 1)} <= passage_pairs(docs)
    assert not {p for p in passage_pairs(docs) if p[1] < n}   # distinct real articles are not flagged
