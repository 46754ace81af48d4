"""benchmarks/bench_store_open.py opens a real store it built, with this tree's code and with a tree read from git."""
from __future__ import annotations

import uuid

import pytest

from benchmarks import bench_store_open


def test_a_store_is_built_and_opened_by_either_tree(tmp_path, servers, monkeypatch):
    if not servers.embedded:
        pytest.skip("the benchmark opens the embedded servers of a var/")
    monkeypatch.setenv("ZHDEDUP_VAR", str(servers.var_dir))
    db = f"bench_open_test_{uuid.uuid4().hex[:6]}"
    bench_store_open.build(db, 20)
    try:
        trees = [bench_store_open.tree_of("HEAD", tmp_path / "tree"), bench_store_open.ROOT]
        for tree in trees:
            row = bench_store_open.open_once(tree, db)
            assert 0 < row["open_s"] < 60
            assert row["commands"] >= 10 and len(row["slowest"]) == 3, row   # the open's commands were heard
    finally:
        bench_store_open.drop(db)


def test_a_bad_argument_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_store_open.main(["--pages", "ten"])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
