"""Issue 27: a rewrite's sentences paired on the matcher's passages, synonym swaps marked apart from other changes,
padding and dropped sentences left unpaired (fingerprint.sentpairs, which the admin shows)."""
from __future__ import annotations

from fingerprint.sentpairs import sentence_pairs, split_sentences
from fingerprint.synonyms import synonyms_enabled
from tests.fingerprint.rewrite_texts import COPY, HOSTILE, ORIGINAL


def _marked(sentence, mark: str) -> list[str]:
    return [w for w, m in sentence.words if m == mark]


def test_a_spun_copy_pairs_each_sentence_with_the_one_it_was_spun_from():
    p = sentence_pairs(ORIGINAL, COPY)
    assert [(r.kind, r.original and r.original.n, r.copy and r.copy.n) for r in p.rows] == [
        ("pair", 1, 2), ("pair", 2, 1), ("added", None, 3), ("dropped", 3, None), ("pair", 4, 4)]
    assert (p.pairs, p.original_sentences, p.copy_sentences, p.share) == (3, 4, 4, 0.75)
    assert all(r.votes > 0 for r in p.rows if r.kind == "pair")


def test_synonym_swaps_are_marked_apart_from_padding():
    rows = {r.original.n: r for r in sentence_pairs(ORIGINAL, COPY).rows if r.kind == "pair"}
    first, second, last = rows[1], rows[2], rows[4]
    assert "游人" in _marked(first.copy, "syn") and "游客" in _marked(first.original, "syn")
    assert any("讯息" in w for w in _marked(first.copy, "syn"))
    assert _marked(second.copy, "add") == ["值得一提的是"] and _marked(last.copy, "add") == ["据了解"]
    assert not _marked(last.copy, "syn") and not _marked(last.original, "del")
    # the words as written, in order: nothing lost or reordered inside a sentence
    for r in rows.values():
        assert "".join(w for w, _ in r.copy.words) == COPY[r.copy.start:r.copy.end]
        assert "".join(w for w, _ in r.original.words) == ORIGINAL[r.original.start:r.original.end]


def test_without_canonicalisation_the_swaps_are_plain_changes():
    with synonyms_enabled(False):
        p = sentence_pairs(ORIGINAL, COPY)
    assert p.synonym_swaps == 0 and p.other_changes > 0


def test_unrelated_texts_pair_nothing_and_hostile_text_stays_a_string():
    other = ("今天的围棋比赛中，年轻棋手执黑中盘战胜了上届冠军，赛后他表示这盘棋的关键在于中盘一次大胆的弃子。"
             "比赛将于下周继续进行，组委会邀请了多位国外棋手参加邀请赛的最后阶段角逐。")
    p = sentence_pairs(ORIGINAL, other)
    assert p.pairs == 0 and p.share == 0.0 and {r.kind for r in p.rows} == {"dropped", "added"}
    added = next(r for r in sentence_pairs(ORIGINAL, COPY).rows if r.kind == "added")
    assert HOSTILE in added.copy.words[0][0]


def test_sentences_keep_closing_quotes_and_skip_text_without_han():
    text = "他说：“走吧。”随后离开。\n\n---\nEnglish only.\n最后一句"
    assert [text[s:e] for s, e in split_sentences(text)] == ["他说：“走吧。”", "随后离开。", "最后一句"]
