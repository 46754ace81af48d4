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
    sk = res["redis_passage_sketches"]
    assert set(sk["kinds_bytes_per_page"]) == {"sk:", "sq:"} and set(res["redis"]["kinds_bytes_per_page"]) == {
        "ex:", "fp:", "sh:"}
    assert sk["false_candidates"] == 0 and sk["claims_with_candidates"] > 0
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


def test_bench_storage_sizes_run_each_size_and_reject_nonsense(servers, monkeypatch, tmp_path, capsys):
    import pytest

    from benchmarks import bench_storage

    monkeypatch.setenv("REDIS_URL", servers.redis_url)
    out = tmp_path / "r.json"
    assert bench_storage.main(["--sizes", "8e2,1e3", "--measure", "200", "--skip-memory-baseline",
                               "--json", str(out)]) == 0
    res = json.loads(out.read_text())["by_size"]
    assert sorted(res) == ["1000", "800"] and res["1000"]["redis_passage_sketches"]["indexed"] == 1000
    assert "bytes per page by key kind at 1000 pages" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        bench_storage.main(["--sizes", "lots"])
    assert e.value.code == 2
