"""The storage benchmark runs end to end on a small workload and answers like the in-memory index."""
import json


def test_bench_storage_small(servers, monkeypatch, tmp_path, capsys):
    from benchmarks import bench_storage

    monkeypatch.setenv("REDIS_URL", servers.redis_url)
    out = tmp_path / "r.json"
    assert bench_storage.main(["--n", "1500", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["redis"]["kinds"] == res["memory_dict_of_blocks"]["kinds"]
    assert res["redis"]["indexed"] == res["memory_dict_of_blocks"]["indexed"] > 1000
    assert res["redis"]["encodings"]["sh:"] == "intset"
    assert "median ms" in capsys.readouterr().out


def test_bench_storage_cluster_answers_like_one_redis(servers, monkeypatch, tmp_path):
    """--cluster runs the same workload on a 3-master Redis Cluster: the same answers, numbers for both."""
    from benchmarks import bench_storage
    from tests.cluster_fixture import missing

    if missing():
        import pytest

        pytest.skip(missing())
    monkeypatch.setenv("REDIS_URL", servers.redis_url)
    out = tmp_path / "r.json"
    assert bench_storage.main(["--n", "1500", "--skip-memory-baseline", "--cluster", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["cluster"]["cluster"] is True and res["redis"]["cluster"] is False
    assert res["cluster"]["kinds"] == res["redis"]["kinds"] and res["cluster"]["indexed"] == res["redis"]["indexed"]
    assert res["cluster"]["bytes_per_page"] > 0 and res["cluster_passage_sketches"]["median_ms"] > 0
