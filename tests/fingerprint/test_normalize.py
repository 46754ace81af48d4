from difflib import SequenceMatcher

import opencc
import pytest

from fingerprint.exact import content_hash
from fingerprint.normalize import compact, normalize, sentences


def test_traditional_fullwidth_and_invisible_characters_fold_to_one_text():
    simp = "乾隆说，头发干了。这个软件很好用！ABC123"
    trad = "乾隆說，頭髮乾了。這個軟件很好用！ＡＢＣ１２３"
    noisy = "\u200b乾隆說：「頭髮乾了」。\ufeff這個 軟件 很好用！！ａｂｃ１２３"
    assert compact(normalize(trad)) == compact(normalize(simp))
    assert compact(normalize(noisy)) == compact(normalize(simp))


def test_normalize_keeps_sentence_and_paragraph_structure():
    text = "第一句。第二句！\n\n\n　　第三句？第四句……"
    assert normalize(text) == "第一句。第二句。\n第三句。第四句。"
    assert sentences(normalize(text)) == ["第一句。", "第二句。", "第三句。", "第四句。"]


def test_control_and_combining_characters():
    assert normalize("a\x00b\x07c") == "abc"
    assert normalize("cafe\u0301") == "café"


@pytest.mark.parametrize("encoding", ["gbk", "gb18030", "big5"])
def test_same_story_through_chinese_encodings_normalises_the_same(news, encoding):
    story = news[0]["text"]
    source = opencc.OpenCC("s2t").convert(story) if encoding == "big5" else story
    round_trip = source.encode(encoding, errors="replace").decode(encoding)
    a, b = compact(normalize(story)), compact(normalize(round_trip))
    same = SequenceMatcher(None, a, b, autojunk=False).ratio()
    assert same > 0.97, f"{encoding}: only {same:.1%} of characters survive"


def test_exact_hash_ignores_layout_but_not_content(news):
    text = news[1]["text"]
    relaid = "\n\n".join(text.split("。")).replace("，", ",")
    assert content_hash(text) == content_hash(relaid)
    assert content_hash(text) != content_hash(text + "多一字")
    assert len(content_hash(text)) == 32


def test_lone_surrogates_are_deleted_next_to_combining_marks():
    from fingerprint import fingerprint_text
    from fingerprint.normalize import normalize

    assert normalize("¨\ud800") == normalize("¨") and "\ud800" not in normalize("a\u0308\udfff中")
    assert fingerprint_text("¨\ud800文本").simhash == fingerprint_text("¨文本").simhash
