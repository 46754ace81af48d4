"""The worker process's side of the crawler's worker pool: read a call from the socket, run it, write the
answer back, until the crawler closes the socket or ends. Imports neither Scrapy nor itemadapter, so a
worker is ready sooner after the crawl starts.

A frame is an 8-byte big-endian length and a pickle of ``(reply, fn, args)`` one way and of ``(ok, value)``
the other; calls are answered in the order they came, and a call with ``reply`` false (a warm-up) is not
answered. A worker ends with its crawler however the crawler ends (SIGKILL, OOM kill): it watches the
crawler's pid and exits when it is gone.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import threading
import time
from typing import Any

HEADER = struct.Struct("!Q")
POLL_SECONDS = 0.5      # how often a worker checks on its crawler where the OS has no pidfd
ORPHAN_EXIT = 3         # exit code of a worker whose crawler is gone


def frame(payload: bytes) -> bytes:
    """One frame: the payload's length, then the payload."""
    return HEADER.pack(len(payload)) + payload


def serve(sock: socket.socket, crawler_pid: int) -> None:
    """The worker's main loop (a Process target): answer calls until the crawler closes its end. Ctrl-C in a
    terminal reaches the whole process group: the crawler stops gracefully and still needs its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})    # blocked from birth by the crawler (_spawn)
    watch_crawler(crawler_pid)
    sock.setblocking(True)
    while True:
        payload = _read_frame(sock)
        if payload is None:
            return
        reply, answer = _answer(payload)
        if reply:
            sock.sendall(frame(answer))


def _answer(payload: bytes) -> tuple[bool, bytes]:
    """(whether the caller waits for it, the pickled (ok, value) of the call)."""
    try:
        reply, fn, args = pickle.loads(payload)
    except Exception as exc:   # a call this process cannot even read: say so to the caller
        return True, _pickled(False, RuntimeError(f"worker could not read the call: {exc!r}"))
    try:
        return reply, _pickled(True, fn(*args))
    except Exception as exc:
        return reply, _pickled(False, exc)


def _pickled(ok: bool, value: Any) -> bytes:
    """pickle of (ok, value); an answer that does not pickle becomes an error naming why."""
    try:
        return pickle.dumps((ok, value), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        return pickle.dumps((False, RuntimeError(f"worker could not send its answer back: {exc!r}")))


def _read_frame(sock: socket.socket) -> bytes | None:
    """The next frame's payload, or None once the crawler has closed its end."""
    header = _read_exactly(sock, HEADER.size)
    if header is None:
        return None
    return _read_exactly(sock, HEADER.unpack(header)[0])


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    """size bytes from sock, or None at end of stream."""
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            return None
        got += n
    return bytes(buf)


def watch_crawler(pid: int) -> None:
    """Exit when the crawler (pid) ends, so a killed crawler leaves no worker behind (with forkserver the
    worker's parent is the forkserver, so the crawler's pid is passed in)."""
    threading.Thread(target=_exit_after, args=(pid,), name="zhdedup-crawler-watch", daemon=True).start()


def _exit_after(pid: int) -> None:
    """Wait for pid to end, then end this process at once (no cleanup: nobody is left to hand results to)."""
    wait_for_exit(pid)
    os._exit(ORPHAN_EXIT)


def wait_for_exit(pid: int) -> None:
    """Block until process pid has ended: on a pidfd where the OS has them (no polling), else by polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        _poll_until_gone(pid)
        return
    try:
        _wait_readable(fd)
    except OSError:
        _poll_until_gone(pid)
    finally:
        os.close(fd)


def _wait_readable(fd: int) -> None:
    """Block until fd is readable (a pidfd is once its process has ended); poll(), as select() is limited
    to fds below FD_SETSIZE (Linux, the one OS with pidfds, always has poll)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not poller.poll():
        pass


def _poll_until_gone(pid: int) -> None:
    """Return once kill(pid, 0) says no such process (for systems without pidfd_open)."""
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        time.sleep(POLL_SECONDS)
