"""The compiled text kernels (normalising, compact text, letter streams) give exactly what the numpy and
str code gives, on real pages and on generated text, and reject bad tables cleanly."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import speedups
from fingerprint.dna import letter_stream
from fingerprint.normalize import (_collapse_repeated_punct, _fold_chars, _has_blank_run, _has_repeated_punct, _lut,
                                  compact, normalize)
from tests.fingerprint.test_speedups import both

KERNEL = speedups.KERNEL

pytestmark = pytest.mark.skipif(KERNEL is None, reason="fingerprint/_speedups.c not built")

EDGES = ["", " ", "a", "\n\n", "\n \n", " \n", "。，", "，", "Ａ…ｂ\u0301 ", "x\ud800y", "𠀀𪚥\U0002F800丽",
         "\r\n\r", "甲  乙\t丙\u3000丁", "。。。", "，，x", "\u00ad\ufeff", "ⅷ ﬁ ㍿", "\U0010ffff\U00030000"]
# letters and marks the normaliser treats specially, with plain Han, ASCII and astral characters
CHARS = st.sampled_from(list("。，！？；：、“”「」…⋯. \n\r\t\u3000\u00a0\u0301\ufeffAa1丽龍体𠀀ⅷ ﬁ")
                        + ["\ud800", "\U0002F800", "\U00030001"])


def _same_everywhere(text: str) -> None:
    for fn in (normalize, _fold_chars, _has_blank_run, _has_repeated_punct, _collapse_repeated_punct):
        compiled, reference = both(fn, text)
        assert compiled == reference, (fn.__name__, text[:60])
    norm = normalize(text)
    assert len(set(both(compact, norm))) == 1
    for form in (text, norm):
        (codes, offsets), (ref_codes, ref_offsets) = both(letter_stream, form)
        assert codes.dtype == ref_codes.dtype and offsets.dtype == ref_offsets.dtype
        assert np.array_equal(codes, ref_codes) and np.array_equal(offsets, ref_offsets)


def test_text_kernels_equal_reference_on_real_pages(chapters, news):
    texts = [c["text"] for c in chapters[:30]] + [n["text"] for n in news[:150]] + EDGES
    texts += [t[:n] for t in texts[:5] for n in (1, 2, 3, 50)]
    for text in texts:
        _same_everywhere(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(CHARS, max_size=40).map("".join))
def test_text_kernels_equal_reference_on_generated_text(text):
    _same_everywhere(text)


def test_has_pair_finds_each_pair_anywhere():
    for pair in (" \n", "\n ", "\n\n"):
        for text in (pair, "甲" + pair, pair + "乙", "甲乙" * 50 + pair + "丙" * 50):
            assert KERNEL.has_pair(text, " \n\n \n\n")
    assert not KERNEL.has_pair("甲\n乙 丙\n", " \n\n \n\n")
    assert not KERNEL.has_pair("", "ab")


def test_collapse_runs_keeps_the_first_mark_of_each_run():
    assert KERNEL.collapse_runs("甲。。，乙，，丙。", "。，") == "甲。乙，丙。"
    text = "no runs here。"
    assert KERNEL.collapse_runs(text, "。，") is text
    assert KERNEL.collapse_runs("𠀀。，𠀀，", "。，") == "𠀀。𠀀，"


def test_text_kernels_reject_bad_tables():
    with pytest.raises(ValueError):
        KERNEL.fold_text("abc", np.zeros(100, dtype=np.uint32))   # too short for every code point
    with pytest.raises(ValueError):
        KERNEL.fold_text("abc", _lut().astype(np.uint64))
    with pytest.raises(ValueError):
        KERNEL.has_pair("abc", "abc")   # an odd number of characters
    with pytest.raises(ValueError):
        KERNEL.collapse_runs("abc", "123456789")
    with pytest.raises(ValueError):
        KERNEL.letter_codes("abc", np.zeros(0, dtype=np.uint8))
    with pytest.raises(TypeError):
        KERNEL.keep_chars(b"abc", np.zeros(10, dtype=bool))

