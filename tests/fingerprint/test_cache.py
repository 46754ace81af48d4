"""Cached tables: written atomically, and an old digest's file goes once it is stale (each upgrade leaves one)."""
import os
import time

import numpy as np

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
