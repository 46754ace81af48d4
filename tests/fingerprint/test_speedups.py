"""The compiled kernels give exactly the numpy code's fingerprints, and reject bad arguments cleanly."""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import Tokenizer, dna, normalize, simhash, speedups
from fingerprint.dna import SEED_PARAMS, DnaParams, letter_stream
from fingerprint.document import fingerprint_text
from fingerprint.matcher import MatchParams, _Letters, align
from fingerprint.seeds import smallest_seeds
from fingerprint.segmenter import table as segmenter_table
from fingerprint.simhash import canonical_simhash
from fingerprint.synonyms import canonical_map, kernel_table
from fingerprint.tokens import BUCKET_BITS, idf_buckets

KERNEL = speedups.KERNEL
PARAMS = [DnaParams(), SEED_PARAMS, DnaParams(granularity=8, overlap=0.0, levels=2),
          DnaParams(granularity=100, overlap=0.9, levels=6), DnaParams(granularity=9, overlap=0.3)]

pytestmark = pytest.mark.skipif(KERNEL is None and os.environ.get("ZHDEDUP_NO_SPEEDUPS"),
                                reason="ZHDEDUP_NO_SPEEDUPS is set")


def both(fn, *args):
    """fn(*args) with the compiled kernels, then with the numpy code."""
    compiled = fn(*args)
    speedups.KERNEL = None
    try:
        return compiled, fn(*args)
    finally:
        speedups.KERNEL = KERNEL


def test_kernels_were_built():
    assert KERNEL is not None, ("fingerprint/_speedups.c was not compiled (no C compiler at install time?), or "
                                "the build is of another version of it: fingerprints are right but about 1.6x "
                                "slower; reinstall (or rebuild the extension) with gcc present")
    assert KERNEL.KERNELS_VERSION == speedups.KERNELS_VERSION


def test_simhash_equals_numpy_on_real_texts(chapters, news):
    texts = [c["text"] for c in chapters[:40]] + [n["text"] for n in news[:120]]
    texts += [t[:n] for t in texts[:10] for n in (0, 1, 5, 60)]
    for text in texts:
        for weighting in ("tfidf", "tf"):
            compiled, numpy_ = both(simhash, text, weighting)
            assert compiled == numpy_, (weighting, text[:40])


def test_simhash_equals_numpy_with_user_words(chapters):
    tok = Tokenizer(["孙悟空", "猪八戒", "刘玄德", "渔樵江渚"])
    for c in chapters[:10]:
        assert len(set(both(simhash, c["text"], "tfidf", tok))) == 1


def test_dna_equals_numpy_on_real_texts(chapters, news):
    texts = [c["text"] for c in chapters[:20]] + [n["text"] for n in news[:60]]
    texts += [t[:n] for t in texts[:10] for n in (0, 7, 47, 48, 49, 97)]
    for text in texts:
        for form in (text, normalize(text)):
            for params in PARAMS:
                compiled, numpy_ = both(dna, form, params)
                assert compiled == numpy_, (params, form[:40])


def test_sketch_seeds_equal_numpy_on_real_texts(chapters, news):
    streams = [letter_stream(t["text"])[0] for t in chapters[:20] + news[:80]]
    streams += [s[:n] for s in streams[:10] for n in (0, 11, 12, 13, 23, 24, 25)]
    for codes in streams:
        for size, k, w in ((8, 12, 12), (16, 12, 12), (1, 12, 12), (40, 5, 3), (8, 12, 1), (3, 1, 30), (63, 12, 12),
                           (64, 12, 12), (200, 3, 2)):  # under 64 values: kept sorted as they come; else sorted
            compiled, numpy_ = both(smallest_seeds, codes, size, k, w)
            assert compiled == numpy_, (size, k, w, len(codes))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 31), max_size=120), st.integers(0, 12), st.integers(1, 12), st.integers(1, 16))
def test_sketch_seeds_equal_numpy_on_any_stream(codes, size, k, w):
    """Ties (few distinct letters) and streams at or below the window size included."""
    arr = np.array(codes, dtype=np.uint8)
    assert len(set(map(tuple, both(smallest_seeds, arr, size, k, w)))) == 1


def test_canonical_simhash_equals_the_reference_on_real_texts(chapters, news):
    """One compiled pass == canonical_tokens, simhash_tokens (numpy) and a join, in simplified and traditional."""
    tok = Tokenizer()
    texts = [c["text"] for c in chapters[:20]] + [n["text"] for n in news[:100]]
    texts += [t.translate(TRADITIONAL) for t in texts[:10]] + ["", "。", "abc é 𠀀 消息"]
    for text in texts:
        for weighting in ("tfidf", "tf"):
            compiled, reference = both(canonical_simhash, tok.cut(normalize(text)), weighting)
            assert compiled == reference, (weighting, text[:40])
            assert type(compiled[0]) is int and compiled[1] == reference[1]


TRADITIONAL = str.maketrans("消息时间国说话", "消息時間國說話")
synonym_words = sorted(canonical_map())[:400] + sorted(set(canonical_map().values()))[:200]
tokens = st.lists(st.one_of(st.sampled_from(synonym_words), st.text(max_size=4),
                            st.sampled_from(["。", "的", "a", "é", "𠀀", "消息", "讯息", "1"])), max_size=60)


@settings(max_examples=300, deadline=None)
@given(tokens, st.sampled_from(["tfidf", "tf"]))
def test_canonical_simhash_equals_the_reference_on_any_tokens(cut, weighting):
    """Any widths of str (ASCII, Latin-1, BMP, astral) joined into one str of the right kind."""
    cut = [t for t in cut if "\x00" not in t]   # NUL never reaches a tokenizer's output (normalize drops it)
    compiled, reference = both(canonical_simhash, cut, weighting)
    assert compiled == reference


def test_fingerprint_text_is_the_same_both_ways(news):
    for n in news[:60]:
        compiled, reference = both(fingerprint_text, n["text"], "tfidf", None, None, 16)
        assert compiled == reference and compiled.sketch


ALIGN_PARAMS = [MatchParams(), MatchParams(min_run=1, merge_gap=0), MatchParams(min_run=5, merge_gap=10)]


def test_passage_alignment_equals_numpy_on_real_pairs(news):
    """Copies (a story and its edited copy), overlapping round-ups and unrelated pages."""
    texts = [n["text"] for n in news[:60]]
    letters = [_Letters.of(t) for t in texts]
    copies = [_Letters.of(t[:700] + "据了解，" + t[720:1500]) for t in texts[:20]]
    pairs = list(zip(letters, letters[1:])) + list(zip(letters, copies)) + [(letters[0], _Letters.of(""))]
    found = 0
    for a, b in pairs:
        for params in ALIGN_PARAMS:
            compiled, numpy_ = both(align, a, b, params)
            assert compiled == numpy_
            found += bool(compiled[0])
    assert found >= 20


streams = st.lists(st.integers(1, 3), max_size=80).map(lambda c: np.array(c, dtype=np.uint8))


@settings(max_examples=300, deadline=None)
@given(streams, streams, st.integers(0, 6), st.integers(1, 12))
def test_passage_alignment_equals_numpy_on_any_streams(a, b, gap, run):
    """Few distinct letters: many shared grams, runs touching, streams shorter than a gram."""
    params = MatchParams(min_run=run, merge_gap=gap)
    la, lb = (_Letters(x, np.arange(len(x))) for x in (a, b))
    compiled, numpy_ = both(align, la, lb, params)
    assert compiled == numpy_


@pytest.mark.skipif(KERNEL is None, reason="the kernels were not built")
def test_alignment_kernel_leaves_codes_over_31_to_numpy():
    codes = np.array([40, 1, 2, 3] * 10, dtype=np.uint8)
    assert KERNEL.align_runs(codes, codes, 8, 3, 20) is None
    assert align(_Letters(codes, np.arange(40)), _Letters(codes, np.arange(40)), MatchParams()) == ([(0, 40)], [(0, 40)])


texts = st.text(st.one_of(st.sampled_from("天地玄黄宇宙洪荒日月盈昃辰宿列张。！？；…\n，的了是 ab1"),
                          st.characters(max_codepoint=0x10FFFF)), max_size=400)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_any_text_gives_the_same_fingerprints_both_ways(text):
    assert len(set(both(simhash, text))) == 1
    for params in PARAMS:
        assert len(set(both(dna, text, params))) == 1


@pytest.mark.skipif(KERNEL is None, reason="the kernels were not built")
def test_bad_arguments_raise_instead_of_reading_past_a_buffer():
    keys, values, starts, median, _ = idf_buckets()
    with pytest.raises(TypeError, match="token 1 is int"):
        KERNEL.simhash_tokens(["天", 7], keys, values, starts, BUCKET_BITS, median, True)
    with pytest.raises(ValueError, match="starts"):
        KERNEL.simhash_tokens(["天"], keys, values, starts[:100], BUCKET_BITS, median, True)
    with pytest.raises(ValueError, match="values"):
        KERNEL.simhash_tokens(["天"], keys, values[:10], starts, BUCKET_BITS, median, True)
    with pytest.raises(ValueError, match="past the end"):
        KERNEL.simhash_tokens(["天"], keys[:10], values[:10], starts, BUCKET_BITS, median, True)
    codes = np.zeros(0x30000, dtype=np.uint8)
    column = np.zeros(27, dtype=np.int64)
    shares = np.full(23, 0.04)
    with pytest.raises(ValueError, match="codes_of"):
        KERNEL.dna("天", codes[:100], codes, column, shares, 48, 24, 4, True)
    with pytest.raises(ValueError, match="column"):
        KERNEL.dna("天", codes, codes, column + 99, shares, 48, 24, 4, True)
    with pytest.raises(ValueError, match="step"):
        KERNEL.dna("天", codes, codes, column, shares, 48, 0, 4, True)
    with pytest.raises(ValueError):
        KERNEL.smallest_seeds(np.array([1, 2, 32] * 10, dtype=np.uint8), 8, 12, 12)
    with pytest.raises(ValueError):
        KERNEL.smallest_seeds(np.zeros(30, dtype=np.uint16), 8, 12, 12)
    with pytest.raises(ValueError):
        KERNEL.smallest_seeds(np.zeros(30, dtype=np.uint8), 8, 13, 12)
    syn = kernel_table()
    idf = (keys, values, starts, BUCKET_BITS, median, True)
    with pytest.raises(TypeError, match="token 1 is int"):
        KERNEL.canonical_simhash(["天", 7], syn, *idf)
    with pytest.raises(TypeError, match="synonym_table"):
        KERNEL.canonical_simhash(["天"], segmenter_table(), *idf)
    with pytest.raises(TypeError, match="synonym_table"):
        KERNEL.canonical_tokens(["天天"], object())
    with pytest.raises(ValueError, match="differ in length"):
        KERNEL.synonym_table(["天天", "地地"], ["天"])
    with pytest.raises(TypeError, match="canon 1 is not str"):
        KERNEL.synonym_table(["天天", "地地"], ["天", 7])


def test_the_synonym_table_answers_from_its_own_copy_of_the_words():
    """A token equal to a word of two or more characters becomes its canonical member (the first, of a word
    given twice); code points outside the BMP and a canonical member wider than its word are kept; the table
    does not change when the caller's lists do."""
    if not hasattr(KERNEL, "synonym_table"):
        pytest.skip("built without the compiled kernels")
    words, canon = ["天天", "地地", "天天", "𠀀𠀁", "好"], ["日日", "土", "月月", "𠀂", "佳"]
    table = KERNEL.synonym_table(words, canon)
    words[0], canon[0] = "人人", "x"
    tokens = ["天天", "地地", "天", "人人", "𠀀𠀁", "好", "天天天", 7]
    assert KERNEL.canonical_tokens(tokens, table) == ["日日", "土", "天", "人人", "𠀂", "好", "天天天", 7]
    idf = (*idf_buckets()[:3], BUCKET_BITS, idf_buckets()[3], True)
    fp, text = KERNEL.canonical_simhash(["𠀀𠀁", "地地", "x"], table, *idf)
    assert text == "𠀂土x" and fp == KERNEL.canonical_simhash(["𠀂", "土", "x"], table, *idf)[0]
