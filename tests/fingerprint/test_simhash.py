import os
import subprocess
import sys

import pytest

from fingerprint import FINGERPRINT_VERSION, Tokenizer, fingerprint_text, hamming, simhash
from fingerprint.simhash import simhash_weights, to_signed, to_unsigned
from fingerprint.synonyms import synonyms_enabled
from fingerprint.version import THESAURUS

SAMPLE = "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。青山依旧在，几度夕阳红。白发渔樵江渚上，惯看秋月春风。"


def test_same_text_same_fingerprint_in_other_processes_with_other_hash_seeds():
    code = ("from fingerprint import fingerprint_text as f; r = f(%r); "
            "print(r.simhash, r.content_hash, ','.join(map(str, r.dna)))" % SAMPLE)
    outputs = set()
    for seed, numpy_only in (("1", "0"), ("2", "1"), ("random", "0")):
        env = {**os.environ, "PYTHONHASHSEED": seed, "ZHDEDUP_NO_SPEEDUPS": numpy_only}
        outputs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True, check=True).stdout)
    here = fingerprint_text(SAMPLE)
    outputs.add(f"{here.simhash} {here.content_hash} {','.join(map(str, here.dna))}\n")
    assert len(outputs) == 1


def test_fingerprint_is_frozen_for_this_version():
    # A change here means stored fingerprints no longer match: bump fingerprint/version.py and migrate.
    assert FINGERPRINT_VERSION.startswith("zhfp1+") and FINGERPRINT_VERSION.endswith(THESAURUS)
    assert simhash(SAMPLE) == 0x462B257A65090D8D
    with synonyms_enabled(False):   # the version before the thesaurus (BASE_VERSION): unchanged
        assert simhash(SAMPLE) == 0x46230F7A753F0D0D


def test_near_copies_are_close_and_other_texts_are_far(chapters):
    text = chapters[0]["text"]
    edited = text[:400] + "此处新增一句无关的话。" + text[400:]
    assert hamming(simhash(text), simhash(edited)) <= 3
    far = [hamming(simhash(a["text"]), simhash(b["text"])) for a, b in zip(chapters[:20], chapters[20:40])]
    assert min(far) > 6


def test_weighting_choices_and_bad_weighting(chapters):
    text = chapters[3]["text"]
    tf, tfidf = Tokenizer().weights(text, "tf"), Tokenizer().weights(text, "tfidf")
    assert tf.keys() == tfidf.keys()
    assert all(w % 1000 == 0 for w in tf.values())  # TF: counts x WEIGHT_SCALE
    assert simhash(text, "tf") != simhash(text, "tfidf")
    assert tf != tfidf
    with pytest.raises(ValueError):
        simhash(SAMPLE, "bm25")


def test_user_words_change_tokens_and_tokenizer_id():
    plain, custom = Tokenizer(), Tokenizer(["渔樵江渚"])
    assert "渔樵江渚" not in plain.tokens(SAMPLE)
    assert "渔樵江渚" in custom.tokens(SAMPLE)
    assert plain.id != custom.id


def test_stopwords_and_punctuation_carry_no_weight():
    weights = Tokenizer().weights("我们的孙悟空，大闹了天宫。")
    assert "的" not in weights and "，" not in weights and "我们" not in weights
    assert weights["孙悟空"] > 0


def test_empty_text_and_signed_round_trip():
    assert simhash("") == 0 and simhash("，。！") == 0
    assert simhash_weights({}) == 0
    for fp in (0, 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1):
        assert to_unsigned(to_signed(fp)) == fp
        assert -(2 ** 63) <= to_signed(fp) < 2 ** 63


def test_idf_table_cache_equals_a_fresh_build_and_survives_a_bad_file(tmp_path, monkeypatch):
    """Start-up loads the IDF table from a versioned cache file; it must be the very table a build gives."""
    import numpy as np

    from fingerprint import tokens

    monkeypatch.setenv("ZHDEDUP_CACHE_DIR", str(tmp_path))
    fresh = tokens.build_idf_buckets()
    for attempt in ("missing", "written", "corrupt"):
        if attempt == "corrupt":
            tokens._cache_file().write_bytes(b"not a table")
        tokens.idf_buckets.cache_clear()
        loaded = tokens.idf_buckets()
        assert all(np.array_equal(a, b) for a, b in zip(loaded[:3], fresh[:3])), attempt
        assert loaded[3:] == fresh[3:] and loaded[2].dtype == fresh[2].dtype == np.uint32
        assert tokens._cache_file().exists()
    tokens.idf_buckets.cache_clear()
