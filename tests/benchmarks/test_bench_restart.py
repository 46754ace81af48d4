"""benchmarks/bench_restart.py runs real sessions of the embedded Redis from a tree read from git and from this one."""
from __future__ import annotations

import pytest

from benchmarks import bench_restart


def test_a_session_of_either_tree_starts_writes_and_stops_redis(tmp_path):
    trees = {"git": bench_restart.storage_tree("HEAD", tmp_path / "tree"), "now": bench_restart.ROOT}
    for name, tree in trees.items():
        row = bench_restart.session(tree, tmp_path / f"var-{name}", history_mb=1)
        assert 0 < row["start_s"] < 60 and 0 <= row["stop_s"] < 60
        assert 0.5 < row["file_mb"] < 8   # ~1 MB of writes, under the slack: kept as written


def test_a_bad_argument_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_restart.main(["--sessions", "0"])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
