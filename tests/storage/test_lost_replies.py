"""A write whose reply is lost after the server applied it is retried by the store, not by the driver (the
embedded server runs without retryable writes): every write must then count once, never twice or as an error.

The replies are lost for real: a loopback proxy between the store and the session's MongoDB-wire server
forwards a chosen command, lets the server apply it, then drops its reply and both connections.
"""
from __future__ import annotations

import socket
import struct
import threading
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

OP_MSG = 2013


def _read_message(sock: socket.socket) -> bytes | None:
    """One length-prefixed wire message, or None when the peer closed."""
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    body = b""
    want = struct.unpack("<i", head)[0] - 4
    while len(body) < want:
        chunk = sock.recv(min(65536, want - len(body)))
        if not chunk:
            return None
        body += chunk
    return head + body


def _command(msg: bytes) -> str:
    """The command name of an OP_MSG (the first key of its body section)."""
    if struct.unpack_from("<i", msg, 12)[0] != OP_MSG or msg[20] != 0:
        return ""
    return msg[26:msg.index(b"\0", 26)].decode("ascii", "replace")


class LosingProxy:
    """Forwards MongoDB wire traffic; the reply to the next `lose` command is dropped with the connection."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lose: str | None = None
        self.lost: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            doomed: set[int] = set()
            threading.Thread(target=self._requests, args=(client, server, doomed), daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client, doomed), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, doomed: set[int]) -> None:
        while (msg := self._safe_read(client)) is not None:
            with self.lock:
                if self.lose and _command(msg) == self.lose:
                    doomed.add(struct.unpack_from("<i", msg, 4)[0])
                    self.lost.append(self.lose)
                    self.lose = None
            try:
                server.sendall(msg)
            except OSError:
                break
        _close(client, server)

    def _replies(self, server: socket.socket, client: socket.socket, doomed: set[int]) -> None:
        while (msg := self._safe_read(server)) is not None:
            if struct.unpack_from("<i", msg, 8)[0] in doomed:
                break  # the server applied the write; its client never hears so
            try:
                client.sendall(msg)
            except OSError:
                break
        _close(client, server)

    @staticmethod
    def _safe_read(sock: socket.socket) -> bytes | None:
        try:
            return _read_message(sock)
        except OSError:
            return None

    def close(self) -> None:
        self.listener.close()


def _close(*socks: socket.socket) -> None:
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


@pytest.fixture
def lossy(servers, tmp_path) -> Iterator[tuple[Any, LosingProxy]]:
    """A store without the driver's retryable writes, talking to MongoDB through a LosingProxy."""
    from storage import open_store

    uri = urlsplit(servers.mongo_uri)
    proxy = LosingProxy((uri.hostname, uri.port))
    netloc = uri.netloc.rsplit("@", 1)[0] + "@" if "@" in uri.netloc else ""
    proxied = urlunsplit(uri._replace(netloc=f"{netloc}127.0.0.1:{proxy.port}"))
    store = open_store(servers.config(mongo_uri=proxied, var_dir=str(tmp_path / "var"), retry_writes=False))
    try:
        yield store, proxy
    finally:
        try:
            store.drop_all()
        finally:
            store.close()
            proxy.close()


def _losing(proxy: LosingProxy, command: str) -> None:
    proxy.lose = command


def test_outcomes_count_once(lossy):
    store, proxy = lossy
    run = store.runs.start("news")
    _losing(proxy, "insert")
    store.runs.record_outcomes(run, [{"url": f"http://a.example/{i}", "outcome": "stored"} for i in range(5)])
    assert proxy.lost == ["insert"]
    assert store.runs.outcome_counts(run) == {"stored": {"": 5}}


def test_a_run_starts_once(lossy):
    store, proxy = lossy
    _losing(proxy, "insert")
    run = store.runs.start("news")
    assert proxy.lost == ["insert"]
    assert [r["_id"] for r in store.runs.recent()] == [run]


def test_evidence_is_appended_once(lossy):
    store, proxy = lossy
    mid = store.matches.save({"suspect_url": "http://pirate.example/1.html", "source_id": "s1", "score": 0.5})
    _losing(proxy, "insert")
    seq = store.evidence.add(mid, {"suspect_url": "http://pirate.example/1.html", "raw": b"<p>x</p>",
                                   "text": "滚滚长江东逝水", "status": 200})
    assert proxy.lost == ["insert"]
    assert seq == 0 and store.db.evidence.count_documents({}) == 1
    assert store.evidence.verify().ok


def test_a_review_is_in_the_history_once(lossy):
    store, proxy = lossy
    mid = store.matches.save({"suspect_url": "http://pirate.example/2.html", "source_id": "s1", "score": 0.5})
    _losing(proxy, "findAndModify")
    res = store.matches.review(mid, "confirm", "ann")
    assert proxy.lost == ["findAndModify"]
    assert res is not None and [h["action"] for h in res["history"]] == ["confirm"]
    assert [h["action"] for h in store.matches.get(mid)["history"]] == ["confirm"]


def test_a_watch_round_counts_once(lossy):
    store, proxy = lossy
    store.watch.add("http://watched.example/")
    _losing(proxy, "update")
    store.watch.round_done("http://watched.example/", 60, {"outcome": "unchanged"})
    assert proxy.lost == ["update"]
    assert store.watch.get("http://watched.example/")["rounds"] == 1


def test_pages_and_copies_are_written_once(lossy):
    store, proxy = lossy
    _losing(proxy, "insert")
    ids = store.save_pages([{"_id": f"{i:032x}", "url": f"http://a.example/{i}", "title": "t", "text": "正文"}
                            for i in range(3)])
    _losing(proxy, "update")
    store.record_duplicate({"url": "http://b.example/1", "original_id": ids[0], "method": "exact"})
    _losing(proxy, "update")
    store.record_duplicates([{"url": f"http://b.example/{i}", "original_id": ids[0], "method": "near"} for i in range(4)])
    assert proxy.lost == ["insert", "update", "update"]
    assert ids == [f"{i:032x}" for i in range(3)] and store.pages.count_documents({}) == 3
    assert store.duplicates.count_documents({}) == 4


def test_a_notice_sent_once_says_so(lossy):
    store, proxy = lossy
    nid = store.notices.save({"site": "pirate.example", "items": []}, {})
    _losing(proxy, "update")
    assert store.notices.mark_sent(nid, "ann") is True
    assert proxy.lost == ["update"]
    assert store.notices.mark_sent(nid, "ann") is False
