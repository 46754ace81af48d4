"""The compiled kernels give exactly the numpy code's fingerprints, and reject bad arguments cleanly."""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint import Tokenizer, dna, normalize, simhash, speedups
from fingerprint.dna import SEED_PARAMS, DnaParams, letter_stream
from fingerprint.seeds import smallest_seeds
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
    assert KERNEL is not None, ("fingerprint/_speedups.c was not compiled (no C compiler at install time?): "
                                "fingerprints are right but about 1.6x slower; reinstall with gcc present")


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
        for size, k, w in ((8, 12, 12), (1, 12, 12), (40, 5, 3), (8, 12, 1), (3, 1, 30)):
            compiled, numpy_ = both(smallest_seeds, codes, size, k, w)
            assert compiled == numpy_, (size, k, w, len(codes))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 31), max_size=120), st.integers(0, 12), st.integers(1, 12), st.integers(1, 16))
def test_sketch_seeds_equal_numpy_on_any_stream(codes, size, k, w):
    """Ties (few distinct letters) and streams at or below the window size included."""
    arr = np.array(codes, dtype=np.uint8)
    assert len(set(map(tuple, both(smallest_seeds, arr, size, k, w)))) == 1


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
