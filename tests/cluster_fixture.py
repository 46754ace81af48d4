"""A real 3-master Redis Cluster on loopback ports, from Debian's redis-server (tests skip without it)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

MASTERS = 3


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ports(n: int) -> list[int]:
    """n ports p whose cluster bus port p + 10000 is free too."""
    out: list[int] = []
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p < 55535 and p not in out and _free(p + 10000):
            out.append(p)
        if len(out) == n:
            return out
    raise RuntimeError("no free port pairs for a Redis Cluster")


def _pongs(port: int) -> bool:
    """Whether a Redis answers PING on the port (a listener that never answers: no)."""
    try:
        out = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True, timeout=5)
    except subprocess.TimeoutExpired:
        return False
    return out.stdout.strip() == "PONG"


def missing() -> str | None:
    """Why a cluster cannot be started here (None when it can)."""
    for tool in ("redis-server", "redis-cli"):
        if not shutil.which(tool):
            return f"{tool} is not installed (apt-get install redis-server)"
    return None


class PortTaken(RuntimeError):
    """A node's port was bound by another process between its choice and the node's start."""


class RedisClusterProcs:
    """Started cluster nodes; `url` points at the first node (any node works)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ports = _ports(MASTERS)
        self.procs: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self, timeout: float = 30.0, attempts: int = 3) -> "RedisClusterProcs":
        """Start the nodes, join them (no replicas) and wait for cluster_state:ok; on other ports again when
        another process bound one of these first (a port is chosen free, then bound by the node later)."""
        for attempt in range(1, attempts + 1):
            try:
                return self._start(timeout)
            except PortTaken:
                self.stop()
                if attempt == attempts:
                    raise
                self.procs, self.ports = [], _ports(MASTERS)
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> "RedisClusterProcs":
        for p in self.ports:
            d = self.root / str(p)
            d.mkdir(parents=True, exist_ok=True)
            self.procs.append(subprocess.Popen(
                ["redis-server", "--port", str(p), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", str(d / "nodes.conf"), "--dir", str(d), "--save", "",
                 "--appendonly", "no", "--logfile", str(d / "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + timeout
        for p in self.ports:
            while not self._check_alive(p) or not _pongs(p):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {p} did not start (see {self.root / str(p)})")
                time.sleep(0.05)
        subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
                        "--cluster-replicas", "0", "--cluster-yes"], check=True, capture_output=True,
                       timeout=timeout)
        while True:
            states = [subprocess.run(["redis-cli", "-p", str(p), "cluster", "info"], capture_output=True,
                                     text=True).stdout for p in self.ports]
            if all("cluster_state:ok" in s for s in states):
                return self
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Redis Cluster did not reach cluster_state:ok: {states[0]}")
            time.sleep(0.1)

    def _check_alive(self, port: int) -> bool:
        """True while the node of `port` runs; raises once it has exited (PortTaken when its port was bound
        first: then what answers on the port is not the node)."""
        proc = self.procs[self.ports.index(port)]
        if proc.poll() is None:
            return True
        log = self.root / str(port) / "redis.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        if "Address already in use" in text:
            raise PortTaken(f"port {port} was bound by another process first")
        raise RuntimeError(f"redis-server on port {port} exited with {proc.returncode}: {text[-500:]}")

    def stop(self) -> None:
        """Stop the nodes we started."""
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
