"""The pages in flight: what a Redis refill needs, kept for the last pages indexed, shared by the store's threads."""
from __future__ import annotations

import threading

from storage.inflight import Flight, InFlight


def test_the_oldest_page_is_forgotten_past_the_limit_and_a_page_indexed_again_is_newest():
    f = InFlight(limit=3)
    for pid in "abc":
        f.add(pid, Flight(f"h{pid}", 1))
    f.add("a", Flight("ha2", 2))   # indexed again (a displacement hands its keys back): now the newest
    f.add("d", Flight("hd", 4))
    assert list(f.snapshot()) == ["c", "a", "d"]
    assert f.get("a").content_hash == "ha2" and f.get("b") is None


def test_a_claimed_text_joins_a_page_in_flight_and_nothing_else():
    f = InFlight()
    f.add("a", Flight("h", 5, (1, 2), None, "2024-05-01"))
    f.keep_text("a", b"zipped")
    f.keep_text("gone", b"zipped")   # not in flight (saved long ago, or a copy): nothing to put back
    assert f.get("a") == Flight("h", 5, (1, 2), b"zipped", "2024-05-01")
    assert f.get("gone") is None
    assert f.get("a").keys() == {"content_hash": "h", "simhash": 5, "sketch": [1, 2]}


def test_threads_adding_and_popping_at_once_leave_a_consistent_map():
    f = InFlight(limit=500)

    def work(n: int) -> None:
        for i in range(2000):
            f.add(f"{n}-{i}", Flight("h", i))
            if i % 3 == 0:
                f.pop(f"{n}-{i}")
            f.keep_text(f"{n}-{i - 1}", b"t")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = f.snapshot()
    assert len(snap) == len(f) == 500
    assert all(int(pid.split("-")[1]) % 3 for pid in snap)   # a page popped never comes back
