"""The embedded servers as processes: is a pid still our server, which processes serve a data directory,
spawning one detached, stopping some for sure, and loopback port probes (storage.servers decides when).

Only this module reads /proc or signals a process, and it never signals one that is not ours and not a
server on the data directory it was asked about: a recorded pid can be reused by another program.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from .errors import StorageUnavailable

# In the command line of each server (SecantusDB runs as storage/secantus_daemon.py, or, started by an older
# version, as `python -c "... secantus.cli ..."`).
MARKS = {"redis": "redis-server", "mongo": "secantus"}
KILL_WAIT = 20.0         # seconds a SIGKILLed server may take to be gone (a loaded machine) before we go on


def pid_alive(pid: int | None, name: str | None = None) -> bool:
    """True if pid is a live (non-zombie) process, and, when name is given, runs that server."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return False
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return True  # no /proc: trust kill(0)
    return MARKS[name] in cmd if name in MARKS else True


def started_at(pid: int) -> float | None:
    """When a live process started (seconds since the epoch), None when that cannot be read (no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")   # field 22 of stat: starttime, in clock ticks
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def argv(pid: int) -> list[str]:
    """A process's command line plus the words of its shell commands: our spawn is `sh -c "... DATA_DIR ..."`."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    words = []
    for a in args[1:]:
        if " " in a:
            try:
                words += shlex.split(a)
            except ValueError:
                words += a.split()
    return args + words


def on_data_dir(pid: int | None, name: str, data_dir: Path) -> bool:
    """True if pid is server `name` (or the shell about to exec it) on data_dir: only those may be stopped."""
    if not pid or pid == os.getpid():
        return False
    if not Path("/proc/self").exists():
        return pid_alive(pid, name)  # no /proc: trust the pid file as before
    words = argv(pid)
    if not any(MARKS[name] in w for w in words):
        return False
    target = str(Path(data_dir).resolve())
    if target in words:
        return True
    try:  # redis-server rewrites its command line to "redis-server host:port" after chdir(--dir)
        return name == "redis" and os.readlink(f"/proc/{pid}/cwd") == target
    except OSError:
        return False


def strays(name: str, data_dir: Path) -> list[int]:
    """Live processes of ours serving `name` on data_dir, whatever run/ says (found in /proc)."""
    out = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and _mine(entry) and on_data_dir(int(entry.name), name, data_dir):
                out.append(int(entry.name))
    return out


def _mine(entry: os.DirEntry) -> bool:
    """Only our own processes can be signalled (and only they can hold our 0700 data dir)."""
    try:
        return entry.stat().st_uid == os.geteuid()
    except OSError:
        return False


def port_listens(port: int | None, timeout: float = 0.2) -> bool:
    """True if something accepts TCP connections on 127.0.0.1:port (a refusal comes back at once)."""
    if not port:
        return False
    try:
        socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def port_free(port: int) -> bool:
    """True if a server could listen on the port (both servers set SO_REUSEADDR, so TIME_WAIT is fine)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port() -> int:
    """A loopback port nobody listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(cmd: list[str], log: Path) -> int:
    """Start cmd detached (own session, reparented to init, umask 077) and return its pid."""
    shell = f"umask 077; {shlex.join(cmd)} >>{shlex.quote(str(log))} 2>&1 </dev/null & echo $!"
    out = subprocess.run(["/bin/sh", "-c", shell], capture_output=True, text=True, check=True,
                         start_new_session=True, cwd=str(log.parent))
    return int(out.stdout.strip())


def _signal_all(pids: list[int], sig: int) -> None:
    """Signal each process, ignoring one that is already gone (it exited while we looked)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_all(pids: list[int], name: str, timeout: float = 20.0) -> None:
    """Stop servers together (SIGTERM, a clean shutdown for both; SIGKILL after timeout); return when gone,
    whatever the timeout: a server still dying holds its data directory's lock (WiredTiger refused the next
    server on it after a provisioning stopped with timeout 0: invariant seed 1337, early_kill)."""
    live = [p for p in pids if pid_alive(p, name)]
    _signal_all(live, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        live = [p for p in live if pid_alive(p, name)]
    _signal_all(live, signal.SIGKILL)
    deadline = time.monotonic() + max(timeout, KILL_WAIT)
    while any(pid_alive(p, name) for p in live) and time.monotonic() < deadline:
        time.sleep(0.01)


def stop_strays(name: str, data_dir: Path, timeout: float = 20.0) -> bool:
    """Stop every process left on data_dir (rescanning: a dying shell may just have forked); True if any."""
    found = False
    for _ in range(20):
        pids = strays(name, data_dir)
        if not pids:
            return found
        found = True
        kill_all(pids, name, timeout)
    raise StorageUnavailable("embedded servers", f"cannot stop the processes on {data_dir}: {pids}")
