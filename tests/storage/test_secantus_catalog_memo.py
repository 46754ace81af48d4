"""SecantusDB's index catalog memoised per command (storage/secantus_daemon.py CatalogMemo): read once a
command instead of ~36 times, never stale inside the command that changes it, never shared between callers;
and the embedded server behaves the same with it (unique, partial and multikey indexes through pymongo).
A real SecantusDB Storage in this process (WiredTiger in a temp dir) and a real server."""
from __future__ import annotations

import runpy
from pathlib import Path
from typing import Iterator

import pymongo
import pytest
from pymongo.errors import DuplicateKeyError
from secantus.storage import Storage

from storage import servers as srv

pytestmark = pytest.mark.timeout(120)
DAEMON = runpy.run_path(str(srv.DAEMON), run_name="secantus_daemon")


class Counted(Storage):
    """Storage counting its raw catalog reads."""

    reads = 0

    def _iter_indexes(self, db, coll):
        type(self).reads += 1
        yield from super()._iter_indexes(db, coll)


@pytest.fixture
def memo_storage(tmp_path: Path) -> Iterator[tuple[object, Storage]]:
    """(the memo, a Storage whose class has it installed), with one collection and one index."""
    cls = type("Memoised", (Counted,), {"reads": 0})
    memo = DAEMON["CatalogMemo"]()
    memo.install(cls)
    store = cls(str(tmp_path / "wt"))
    store.insert("db", "pages", [{"_id": 1, "url": "a", "tags": ["x"]}])
    store.create_index("db", "pages", "url_1", {"url": 1}, {"unique": True})
    cls.reads = 0
    try:
        yield memo, store
    finally:
        store.close()


def names(store: Storage) -> list[str]:
    """The collection's index names, as a command step reads them."""
    return [name for name, _spec, _opts in store._iter_indexes("db", "pages")]


def test_one_raw_read_per_command_and_none_kept_outside_commands(memo_storage):
    memo, store = memo_storage
    memo.command(lambda: [names(store) for _ in range(5)])()
    assert type(store).reads == 1
    for _ in range(3):
        names(store)
    assert type(store).reads == 4          # outside a command every read goes to WiredTiger, as before


def test_a_catalog_change_inside_the_command_is_seen_at_once(memo_storage):
    memo, store = memo_storage

    def command() -> list[list[str]]:
        seen = [names(store)]
        store.create_index("db", "pages", "site_1", {"site": 1})
        seen.append(names(store))
        store.drop_index("db", "pages", "url_1")
        seen.append(names(store))
        return seen

    assert memo.command(command)() == [["url_1"], ["site_1", "url_1"], ["site_1"]]


def test_a_write_that_marks_an_index_multikey_is_seen_by_the_next_step(memo_storage):
    memo, store = memo_storage
    store.create_index("db", "pages", "parts_1", {"parts": 1})

    def command() -> bool:
        before = dict((n, o.get("multikey")) for n, _s, o in store._iter_indexes("db", "pages"))
        store.insert("db", "pages", [{"_id": 2, "url": "b", "parts": ["y", "z"]}])
        after = dict((n, o.get("multikey")) for n, _s, o in store._iter_indexes("db", "pages"))
        return before.get("parts_1"), after.get("parts_1")

    assert memo.command(command)() == (None, True)


def test_callers_never_share_the_memo_dicts(memo_storage):
    memo, store = memo_storage

    def command() -> dict:
        for _name, spec, opts in store._iter_indexes("db", "pages"):
            spec["url"] = -1
            opts["unique"] = False
        return {n: (s, o.get("unique")) for n, s, o in store._iter_indexes("db", "pages")}

    assert memo.command(command)() == {"url_1": ({"url": 1}, True)}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[pymongo.MongoClient]:
    """A client of a real embedded SecantusDB (started by storage.servers, so with the memo)."""
    var = tmp_path / "var"
    c = pymongo.MongoClient(srv.ensure(var, "mongo").uri, serverSelectionTimeoutMS=10000)
    try:
        yield c
    finally:
        c.close()
        srv.stop(var)


def test_the_server_keeps_unique_partial_and_multikey_indexes_right(client):
    coll = client.memo.pages
    coll.insert_many([{"_id": i, "url": f"u{i}", "site": f"s{i}", "tags": [i, i + 10], "kept": i % 2 == 0}
                      for i in range(6)])
    coll.create_index("url", unique=True)
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": 99, "url": "u3"})
    coll.create_index("tags")
    assert sorted(d["_id"] for d in coll.find({"tags": 13})) == [3]
    coll.create_index("site", unique=True, partialFilterExpression={"kept": True})
    coll.update_many({"kept": False}, {"$set": {"site": "s"}})   # outside the partial index: no conflict
    coll.update_one({"_id": 0}, {"$set": {"site": "t"}})
    with pytest.raises(DuplicateKeyError):
        coll.update_one({"_id": 2}, {"$set": {"site": "t"}})
    coll.drop_index("url_1")
    coll.insert_one({"_id": 100, "url": "u3"})              # the drop is seen by the next command
    assert coll.count_documents({"url": "u3"}) == 2
