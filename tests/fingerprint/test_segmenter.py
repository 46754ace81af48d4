"""The compiled segmenter (fingerprint/segmenter.py) gives rjieba's tokens exactly: the tokens are part of
the fingerprint's version. A bounded check; benchmarks/segmenter_identity.py runs the exhaustive one."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.segmenter_identity import alphabet
from benchmarks.shared_data import FICTION_FILE, NEWS_FILE
from fingerprint import segmenter
from fingerprint.normalize import normalize
from fingerprint.tokens import Tokenizer, _jieba_class

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not segmenter.available(), reason="the compiled segmenter is not built")

EDGES = ["", "我们中出了一个叛徒", "我来到北京清华大学", "他来到了网易杭研大厦", "南京市长江大桥",
         "小明硕士毕业于中国科学院计算所，后在日本京都大学深造", "常在他洞下", "翕翕骋志意",
         "v1.2.3", "abc-def", "ab_c", "1.5%", "a%b", "a.b", "ab-", "a&b", "a+b", "x1.23%y", "A1.B2", "1.2.",
         "a--b", "a-.b", "a.-1", "a_1-2.3%", "中文v1.2.3测试", "ab𠀀1", "a²", "1١", "a１", "一鿖鿕", "㐀㐁",
         "㐀a㐁b", "a㐀1", "v1。2", "ab\u2028c", " \r\n\r\r\n\t\u3000x\r", "\r", "\n\r", "👪我们👪", "é\u0301中",
         "一二三四五六七八九十百千万亿", "B超检查", "２０１８年１０月", "ＡＢＣ公司", "ABC公司", "𠀀𠀁𠀂中国",
         "豈更車中國", "鿕鿖鿗鿿", "%%%", "---", "...", "#&+", "Ｃ＋＋和C++还有C#", "3.14159%的人"]
# the edges of jieba-rs's Han ranges (main block, extensions, compatibility ideographs), inside and out
EDGES += [f"a{chr(cp)}b{chr(cp)}{chr(cp)}中" for cp in (
    0x33FF, 0x3400, 0x4DBF, 0x4DC0, 0x4DFF, 0x4E00, 0x9FD5, 0x9FD6, 0x9FFF, 0xA000, 0xF8FF, 0xF900, 0xFAFF, 0xFB00,
    0x1FFFF, 0x20000, 0x2A6DF, 0x2A6E0, 0x2A6FF, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F, 0x2B820, 0x2CEAF, 0x2CEB0,
    0x2EBEF, 0x2EBF0, 0x2F7FF, 0x2F800, 0x2FA1F, 0x2FA20, 0x30000, 0x31350, 0xE0001, 0x10FFFF)]


def _reference() -> object:
    return _jieba_class()()


REF = _reference()


@pytest.mark.parametrize("text", EDGES)
def test_edge_cases_give_rjiebas_tokens(text):
    assert segmenter.cut(text) == REF.cut(text, True)


def _rows(path: Path, n: int) -> list[str]:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["text"])
            if len(out) == n:
                break
    return out


@pytest.mark.parametrize("path", [NEWS_FILE, FICTION_FILE], ids=["news", "fiction"])
def test_real_texts_raw_and_normalised_give_rjiebas_tokens(path):
    texts = _rows(path, 120)
    bad = [t[:80] for t in texts for s in (t, normalize(t)) if segmenter.cut(s) != REF.cut(s, True)]
    assert not bad, bad


def test_a_text_longer_than_the_kept_scratch_cuts_alike_and_the_next_short_one_too():
    """Texts over SCRATCH_KEEP characters are cut in scratch freed after the call (not kept by the table)."""
    long_text = "\n".join(_rows(NEWS_FILE, 400))[:300_000]
    assert len(long_text) > 262_144
    assert segmenter.cut(long_text) == REF.cut(long_text, True)
    short = long_text[:3000]
    assert segmenter.cut(short) == REF.cut(short, True)


CHARS, WEIGHTS = alphabet()
# hypothesis shrinks toward the first element: the alphabet's Han characters come first
MIXED = st.text(alphabet=st.sampled_from(CHARS), max_size=60)


@settings(max_examples=400, deadline=None)
@given(MIXED)
def test_mixed_strings_give_rjiebas_tokens(text):
    assert segmenter.cut(text) == REF.cut(text, True)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_any_unicode_gives_rjiebas_tokens(text):
    assert segmenter.cut(text) == REF.cut(text, True)


def test_a_different_table_is_caught():
    """The comparison can fail: jieba's unrounded HMM emissions (not what rjieba embeds) change a cut."""
    a = segmenter.load_arrays()
    emit, model = a["emit"].copy(), a["model"]
    emit[(ord("常") - segmenter.HMM_LO) * 4] = -6.79283148381173  # jieba's own B emission, not "%.6f"
    table = segmenter.KERNEL.jieba_table(a["root"], a["nodes"], emit, model, float(a["log_total"]))
    assert segmenter.KERNEL.jieba_cut(table, "常在他洞下") != REF.cut("常在他洞下", True)
    assert segmenter.cut("常在他洞下") == REF.cut("常在他洞下", True) == ["常在", "他", "洞", "下"]


def test_surrogates_are_refused_as_rjieba_refuses_them():
    for cut in (segmenter.cut, lambda s: REF.cut(s, True)):
        with pytest.raises(UnicodeEncodeError):
            cut("a\ud800b")


def test_bad_tables_are_refused():
    a = segmenter.load_arrays()
    root, nodes, emit, model = (a[k] for k in ("root", "nodes", "emit", "model"))
    make = segmenter.KERNEL.jieba_table
    assert make(root, nodes, emit, model, 1.0) is not None
    with pytest.raises(ValueError):
        make(root, nodes, emit[:-1], model, 1.0)  # emissions cut short
    with pytest.raises(ValueError):
        make(root, nodes[:-1], emit, model, 1.0)  # no sentinel
    with pytest.raises(ValueError):
        make(root, nodes.view(np.uint8)[:-1], emit, model, 1.0)  # not whole nodes
    broken = root.copy()
    broken[ord("中")] = len(nodes) + 5  # a node past the trie
    with pytest.raises(ValueError):
        make(broken, nodes, emit, model, 1.0)
    unordered = nodes.copy()
    unordered["first"][10] = len(nodes) + 5  # children past the trie
    with pytest.raises(ValueError):
        make(root, unordered, emit, model, 1.0)
    with pytest.raises(TypeError):
        segmenter.KERNEL.jieba_cut(object(), "中文")
    ends = np.frombuffer(segmenter.KERNEL.jieba_ends(segmenter.table(), "我们中出了一个叛徒"), dtype=np.int32)
    assert ends.tolist() == [2, 4, 5, 7, 9]


def _trie_by_loops(freqs: dict) -> tuple:
    """The trie as the module doc defines it, built one prefix at a time: the reference for build_trie."""
    ids, rows, counts, level, depth = {"": 0}, [(0, 0.0)], [0], [""], 0
    while level:
        grown = sorted({(ids[w[:depth]], w[:depth + 1]) for w in freqs if len(w) > depth},
                       key=lambda pw: (pw[0], ord(pw[1][-1])))
        level = []
        for parent, prefix in grown:
            ids[prefix] = len(rows)
            counts[parent] += 1
            freq = freqs.get(prefix)
            rows.append((ord(prefix[-1]) | (segmenter.WORD if freq is not None else 0),
                         0.0 if freq is None else np.log(freq) if freq > 0 else -np.inf))
            counts.append(0)
            level.append(prefix)
        depth += 1
    nodes = np.zeros(len(rows) + 1, dtype=segmenter.NODE)
    nodes["cp"][:-1] = [cp for cp, _ in rows]
    nodes["logfreq"][:-1] = [lf for _, lf in rows]
    nodes["first"] = 1 + np.concatenate([[0], np.cumsum(np.array(counts, dtype=np.int64))])
    root = np.zeros(segmenter.ROOT_SIZE, dtype=np.int32)
    for prefix, node in ids.items():
        if len(prefix) == 1 and ord(prefix) < segmenter.ROOT_SIZE:
            root[ord(prefix)] = node
    return root, nodes


def test_vectorised_trie_equals_the_trie_built_prefix_by_prefix():
    """build_trie (numpy, level by level) lays out every node as the one-prefix-at-a-time definition does."""
    text = (segmenter.jieba_dir() / "dict.txt").read_text(encoding="utf-8")
    freqs, _ = segmenter.read_dictionary(text)
    rng = np.random.default_rng(28)
    words = list(freqs)
    sample = {words[i]: freqs[words[i]] for i in sorted(rng.choice(len(words), 20_000, replace=False))}
    odd = {"中": 5, "中国": 0, "中国人民": 7, "𠀀": 3, "𠀀𠀁": 2, "a": 1, "ab": 9, "\U0002FFFF": 1, "\U00030000中": 4,
           "一二三四五六七八九十一二三四五六七八九十": 2}
    for dictionary in (sample, odd, {**sample, **odd}, {"中": 1}):
        root, nodes = segmenter.build_trie(dictionary)
        want_root, want_nodes = _trie_by_loops(dictionary)
        assert np.array_equal(root, want_root)
        assert nodes.tobytes() == want_nodes.tobytes()


def test_tokenizer_uses_it_without_user_words_and_rjieba_with_them():
    plain, user = Tokenizer(), Tokenizer(["杭研大厦"])
    assert plain._compiled and plain._rjieba is None and plain.id == "rjieba0.2"
    assert not user._compiled and user.id.startswith("rjieba0.2+user")
    text = "他来到了网易杭研大厦"
    assert plain.cut(text) == REF.cut(text, True) and "杭研大厦" in user.cut(text)


def test_table_is_cached_and_the_cached_table_cuts_the_same(tmp_path):
    code = ("from fingerprint import segmenter; import sys\n"
            "print(segmenter._cache_file().exists(), '|'.join(segmenter.cut(sys.argv[1])))")
    env = {**os.environ, "ZHDEDUP_CACHE_DIR": str(tmp_path)}
    text = "小明硕士毕业于中国科学院计算所"
    runs = [subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, env=env, cwd=ROOT)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout.split()[0] == "False" and runs[1].stdout.split()[0] == "True"
    assert runs[0].stdout.split()[1] == runs[1].stdout.split()[1] == "|".join(REF.cut(text, True))
    assert len(list(tmp_path.glob("jiebatrie-*.npz"))) == 1


def _both_ways(text: str, weighting: str) -> tuple:
    """canonical_simhash from the cut's token ends, and from the token list."""
    from fingerprint.simhash import canonical_simhash, canonical_simhash_of

    return canonical_simhash_of(text, Tokenizer(), weighting), canonical_simhash(REF.cut(text, True), weighting)


@pytest.mark.parametrize("path", [NEWS_FILE, FICTION_FILE], ids=["news", "fiction"])
def test_canonical_simhash_from_token_ends_equals_the_token_lists(path):
    from fingerprint import speedups

    if not hasattr(speedups.KERNEL, "canonical_simhash_text"):
        pytest.skip("extension without canonical_simhash_text")
    for text in _rows(path, 80):
        for weighting in ("tfidf", "tf"):
            ends, tokens = _both_ways(normalize(text), weighting)
            assert ends == tokens, text[:80]


@settings(max_examples=300, deadline=None)
@given(MIXED, st.sampled_from(["tfidf", "tf"]))
def test_canonical_simhash_from_token_ends_on_mixed_strings(text, weighting):
    ends, tokens = _both_ways(text, weighting)
    assert ends == tokens
    assert sys.getsizeof(ends[1]) == sys.getsizeof("".join(list(ends[1])))  # a str of the narrowest kind


def test_canonical_simhash_text_refuses_bad_arguments():
    from fingerprint.synonyms import kernel_table
    from fingerprint.tokens import BUCKET_BITS, idf_buckets

    kernel = segmenter.KERNEL
    if not hasattr(kernel, "canonical_simhash_text"):
        pytest.skip("extension without canonical_simhash_text")
    keys, values, starts, median, _ = idf_buckets()
    syn, idf = kernel_table(), (keys, values, starts, BUCKET_BITS, median, True)
    table = segmenter.table()
    assert kernel.canonical_simhash_text(table, "", syn, *idf) == kernel.canonical_simhash([], syn, *idf)
    with pytest.raises(TypeError):
        kernel.canonical_simhash_text(object(), "天", syn, *idf)
    with pytest.raises(TypeError):
        kernel.canonical_simhash_text(table, b"\xe5\xa4\xa9", syn, *idf)
    with pytest.raises(TypeError, match="synonym_table"):
        kernel.canonical_simhash_text(table, "天", table, *idf)     # the segmenter's table in the synonyms' place
    with pytest.raises(UnicodeEncodeError):
        kernel.canonical_simhash_text(table, "天\ud800", syn, *idf)
