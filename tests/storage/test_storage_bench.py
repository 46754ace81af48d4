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
