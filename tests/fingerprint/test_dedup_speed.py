"""What issue 28's faster `python -m fingerprint dedup` must keep: the same output byte for byte, one
dictionary load and no progress-bar import at start-up, and exact equivalents of the rewritten steps."""
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint.matcher import _covered, _present, _shared
from fingerprint.normalize import _BLANK_LINES, _HAN_GAP, _has_blank_run

ROOT = Path(__file__).resolve().parents[2]

# `python -m fingerprint dedup` on benchmarks.dedup_corpus.build(400) (generated from the shared news at run
# time: no text is committed). Computed with the code of f0bfb18, before issue 28's changes, and unchanged
# since; it changes only with FINGERPRINT_VERSION, the dedup engine's rules or the corpus generator.
# ZHDEDUP_SYNONYMS=0 (BASE_VERSION) keeps that output; issue 27's synonym canonicalisation (the default) has its own.
HELD_OUT_400 = {"0": ("5bd54ba62b3f3e3eb814ed7455c910cadc4d8b20ae24db8db959d795caf3baf2",
                      {None: 300, "simhash": 77, "exact": 20, "passages": 3}),
                "1": ("574d37fc7a8fa03ead15492c4f9bea6c2244a1df35a090edb7c287e736a95b1d",
                      {None: 300, "simhash": 75, "exact": 20, "passages": 5})}


def _dedup(src: Path, out: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fingerprint", "dedup", str(src), "--out", str(out), *extra],
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=ROOT)


@pytest.fixture(scope="module")
def held_out(tmp_path_factory) -> Path:
    from benchmarks.dedup_corpus import write
    from benchmarks.shared_data import NEWS_FILE

    if not NEWS_FILE.exists():
        pytest.skip(f"shared data not found at {NEWS_FILE} (set ZHDEDUP_DATA)")
    return write(tmp_path_factory.mktemp("held_out") / "in.jsonl", 400)


@pytest.mark.parametrize("synonyms", ["0", "1"])
@pytest.mark.parametrize("kernels", ["compiled", "numpy"])
def test_dedup_output_is_byte_identical_to_before(held_out, tmp_path, kernels, synonyms):
    out = tmp_path / "out.jsonl"
    env = {"ZHDEDUP_SYNONYMS": synonyms, **({"ZHDEDUP_NO_SPEEDUPS": "1"} if kernels == "numpy" else {})}
    r = _dedup(held_out, out, env=env)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    sha256, methods = HELD_OUT_400[synonyms]
    assert dict(Counter(row["method"] for row in rows)) == methods
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sha256


def test_dedup_start_up_loads_the_dictionary_once_and_no_progress_bar(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "滚滚长江东逝水，浪花淘尽英雄。"}, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    code = ("import sys; from fingerprint.cli import main; code = main(sys.argv[1:]); "
            "print('rjieba' in sys.modules, 'tqdm' in sys.modules, file=sys.stderr)")
    for extra, tqdm in (([], "False"), (["--progress"], "True")):
        r = subprocess.run([sys.executable, "-c", code, "dedup", str(src), "--out", str(tmp_path / "out"), *extra],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        # rjieba/__init__.py (which builds a second, unused dictionary) never ran; tqdm only for a shown bar
        assert r.stderr.strip().splitlines()[-1] == f"False {tqdm}"


@pytest.mark.parametrize("rjieba_first", [True, False])
def test_tokenizer_and_rjieba_coexist_in_either_import_order(rjieba_first):
    text = "新京报讯 记者10月30日报道，武侠小说泰斗金庸逝世，享年94岁。"
    code = ("import rjieba\n" if rjieba_first else "") + (
        "from fingerprint.tokens import Tokenizer\n"
        f"tokens = Tokenizer().cut({text!r})\n"
        "import rjieba\n"
        f"assert tokens == rjieba.cut({text!r}, True) == rjieba.Jieba().cut({text!r}, True), tokens\n"
        "assert type(Tokenizer()._jieba) is rjieba.Jieba\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_tokenizers_made_by_threads_at_once_all_work():
    code = ("import threading\n"
            "from fingerprint.tokens import Tokenizer\n"
            "out, errors = [], []\n"
            "def make():\n"
            "    try:\n"
            "        out.append(Tokenizer().cut('浪花淘尽英雄'))\n"
            "    except Exception as e:\n"
            "        errors.append(repr(e))\n"
            "threads = [threading.Thread(target=make) for _ in range(6)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "assert not errors and out == [['浪花', '淘尽', '英雄']] * 6, (errors, out)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


_OLD_HAN_GAP = re.compile(r"(?<=[\u3400-\u9fff]) (?=[\u3400-\u9fff])")  # the pattern before issue 28
_TEXT = st.text(alphabet=" \n中文字，。aB1\u3000\u3400\u9fff\u33ff\ua000", max_size=60)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_han_gap_removes_exactly_what_the_lookbehind_pattern_did(text):
    assert _HAN_GAP.sub("", text) == _OLD_HAN_GAP.sub("", text)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_blank_lines_are_left_alone_only_when_the_regex_would_not_change_them(text):
    if not _has_blank_run(text):
        assert _BLANK_LINES.sub("\n", text) == text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=50), st.lists(st.integers(0, 40), min_size=1, max_size=50))
def test_present_and_shared_are_np_isin(values, other):
    v, o = np.array(values, dtype=np.uint64), np.array(other, dtype=np.uint64)
    assert np.array_equal(_present(v, np.sort(o)), np.isin(v, o))
    if len(v):
        in_o, in_v = _shared(v, o)
        assert np.array_equal(in_o, np.isin(v, o)) and np.array_equal(in_v, np.isin(o, v))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=80), st.integers(1, 12))
def test_covered_counts_like_np_add_at(flags, k):
    present = np.array(flags, dtype=bool)
    n = len(present) + k - 1
    starts = np.zeros(n + 1, dtype=np.int32)
    idx = np.flatnonzero(present)
    np.add.at(starts, idx, 1)
    np.add.at(starts, idx + k, -1)
    assert np.array_equal(_covered(present, n, k), np.cumsum(starts[:n]) > 0)


def test_alnum_table_is_str_isalnum_for_every_code_point():
    from fingerprint.normalize import _alnum

    assert np.array_equal(_alnum.__wrapped__(), np.array([chr(cp).isalnum() for cp in range(0x30000)]))


def test_initial_codes_are_the_initials_table_with_traditional_forms_following_simplified():
    from fingerprint._tables import LETTERS, initial_codes, initials, t2s_map

    ref = np.zeros(0x30000, dtype=np.uint8)  # the loop it replaced
    table = initials()
    for ch, letter in table.items():
        ref[ord(ch)] = LETTERS.index(letter) + 1
    for trad_cp, simp in t2s_map().items():
        if simp in table:
            ref[trad_cp] = LETTERS.index(table[simp]) + 1
    assert np.array_equal(initial_codes.__wrapped__(), ref)


def test_normalize_lut_is_built_once_then_loaded_and_a_bad_file_is_rebuilt(tmp_path, monkeypatch):
    normalize = importlib.import_module("fingerprint.normalize")  # the package exports its function of that name

    monkeypatch.setenv("ZHDEDUP_CACHE_DIR", str(tmp_path))
    fresh = normalize._build_lut()
    normalize._lut.cache_clear()
    try:
        assert np.array_equal(normalize._lut(), fresh)            # built and saved
        [saved] = tmp_path.glob("normalize-lut-*.npy")
        normalize._lut.cache_clear()
        monkeypatch.setattr(normalize, "_build_lut", lambda: pytest.fail("the saved table was not read"))
        assert np.array_equal(normalize._lut(), fresh)            # loaded
        monkeypatch.undo()
        monkeypatch.setenv("ZHDEDUP_CACHE_DIR", str(tmp_path))
        for bad in (b"not a table", np.lib.format.magic(1, 0) + b"\x00" * 50):
            saved.write_bytes(bad)
            normalize._lut.cache_clear()
            assert np.array_equal(normalize._lut(), fresh)        # unreadable: built again
        np.save(saved, np.zeros(3, dtype=np.uint32))
        normalize._lut.cache_clear()
        assert np.array_equal(normalize._lut(), fresh)            # readable but not this table
    finally:
        normalize._lut.cache_clear()


def test_normalize_lut_file_is_named_by_its_sources():
    from fingerprint.cache import digest

    normalize = importlib.import_module("fingerprint.normalize")

    parts = normalize._lut_sources()
    assert any(part == Path(normalize.__file__).read_bytes() for part in parts)
    changed = [parts[0], parts[1], parts[2] + b"\n# an edit", *parts[3:]]
    assert digest(parts) != digest(changed)


def test_exact_copies_skip_the_tokenizer_and_keep_the_output(tmp_path, news, monkeypatch):
    """One-process dedup decides each page before reading the next, so a page whose content hash a kept
    page has is answered "exact" without its SimHash and sketch: same rows, fewer cuts."""
    from fingerprint import cli
    from fingerprint.tokens import Tokenizer

    docs = [{"id": n["id"], "text": n["text"]} for n in news[:30]]
    docs += [{"id": f"x{i}", "text": " " + docs[i]["text"].replace("。", ".")} for i in range(0, 30, 3)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n", encoding="utf-8")
    real_cut, real_fingerprinted, cuts = Tokenizer.cut, cli._fingerprinted, []
    monkeypatch.setattr(Tokenizer, "cut", lambda self, text: cuts.append(text) or real_cut(self, text))
    # every tokenization through cut(): the compiled segmenter's token ends would bypass it
    monkeypatch.setattr(Tokenizer, "compiled", property(lambda self: False))
    outs = {}
    for skip in (True, False):
        if not skip:   # every page fingerprinted in full, as before
            monkeypatch.setattr(cli, "_fingerprinted", lambda docs, args, size, known=None:
                                real_fingerprinted(docs, args, size))
        cuts.clear()
        for method in ("full", "simhash"):
            out = tmp_path / f"{skip}-{method}.jsonl"
            assert cli.main(["dedup", str(src), "--out", str(out), "--method", method]) == 0
            outs[skip, method] = out.read_text(encoding="utf-8")
        outs[skip, "cuts"] = len(cuts)
    for method in ("full", "simhash"):
        assert outs[True, method] == outs[False, method]
        rows = [json.loads(line) for line in outs[True, method].splitlines()]
        assert sum(row["method"] == "exact" for row in rows) == 10
    assert outs[False, "cuts"] - outs[True, "cuts"] == 2 * 10   # both methods skipped the 10 exact copies
