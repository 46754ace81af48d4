"""Cached tables: written atomically, and an old digest's file goes once it is stale (each upgrade leaves one)."""
import os
import threading
import time

import numpy as np
import pytest

from fingerprint import cache


def test_a_new_table_file_removes_stale_files_of_the_same_table_only(tmp_path, monkeypatch):
    monkeypatch.setenv("ZHDEDUP_CACHE_DIR", str(tmp_path))
    old = time.time() - (cache.STALE_DAYS + 1) * 86400
    stale = tmp_path / "jiebatrie-aaaa.npz"
    recent = tmp_path / "jiebatrie-bbbb.npz"
    other_table = tmp_path / "idf-cccc.npz"
    longer_name = tmp_path / "jiebatrie-extra-dddd.npz"
    writing = tmp_path / "jiebatrie-eeee.npz.123.tmp"
    for f in (stale, recent, other_table, longer_name, writing):
        f.write_bytes(b"x")
    for f in (stale, other_table, longer_name, writing):
        os.utime(f, (old, old))
    new = tmp_path / "jiebatrie-ffff.npz"
    cache.save_atomic(new, lambda f: np.savez(f, a=np.arange(3)))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (recent, other_table, longer_name, writing, new))
    with np.load(new) as z:
        assert z["a"].tolist() == [0, 1, 2]


def test_cached_array_is_built_once_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("ZHDEDUP_CACHE_DIR", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return np.arange(5, dtype=np.int32)

    first = cache.cached_array("t", [b"v1"], build)
    again = cache.cached_array("t", [b"v1"], build)
    assert calls == [1] and first.tolist() == again.tolist() == [0, 1, 2, 3, 4]
    assert [p.suffix for p in tmp_path.iterdir()] == [".npy"]


def test_an_unwritable_folder_only_costs_the_build(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"   # a folder below a file cannot be made, even by root
    blocker.write_bytes(b"")
    monkeypatch.setenv("ZHDEDUP_CACHE_DIR", str(blocker / "cache"))
    assert cache.cached_array("t", [b"v"], lambda: np.ones(2)).tolist() == [1.0, 1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def _loaders() -> dict:
    """Every reader of a cached table the crawl's threads may call first (lru_cache bypassed)."""
    from importlib import import_module

    from fingerprint import segmenter, synonyms, tokens

    normalize = import_module("fingerprint.normalize")   # the package's `normalize` is the function
    return {"synonym kernel": synonyms.kernel_words.__wrapped__, "idf buckets": tokens.idf_buckets.__wrapped__,
            "segmenter": segmenter.load_arrays, "normalize lut": normalize._lut.__wrapped__}


@pytest.mark.parametrize("name", ["synonym kernel", "idf buckets", "segmenter", "normalize lut"])
def test_a_table_is_read_under_the_ast_lock(name):
    """numpy parses .npy headers with ast, which CPython 3.11 cannot do in two threads at once (a crawl's two
    store threads loading the synonym table: "SystemError: AST constructor recursion depth mismatch"). A
    read started while another thread holds AST_LOCK waits for it, then gives the same table."""
    load = _loaders()[name]
    expected = load()                    # its cache file exists from here on: the read is what waits
    done, got = threading.Event(), []

    def read() -> None:
        got.append(load())
        done.set()

    with cache.AST_LOCK:
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert not done.wait(0.3), "read a table without taking AST_LOCK"
    assert done.wait(120)
    reader.join()
    assert _same(got[0], expected)


def _same(a, b) -> bool:
    """Equal tables (arrays compared by value, in tuples, lists and dicts)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) else a == b
