"""SecantusDB's daemon, with its user created before it listens: a fresh var/ starts SecantusDB once, with
--auth from its first connection (it used to start twice: without auth to create the user, then with it).

    python -c "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')" \
        .../storage/secantus_daemon.py [--user NAME --credentials FILE] SECANTUS-ARGS...

Run by path (storage.servers starts it), never imported by the project: it needs only SecantusDB and the
standard library, so the server process does not import this project's packages. With --user the user
(role root on admin) gets the "mongo" password from the 0600 credentials file (never on the command line),
replacing a user of that name (credentials restored from a backup: a new password), and is checkpointed to
disk before the server accepts its first connection: a server that answers with the password has its
user on disk, and a SIGKILL loses nothing of it.

It also memoises SecantusDB's index catalog for the length of one command (`memo_index_catalog`), and
defers its geo modules (shapely, numpy, s2sphere: ~0.2 s of every start) until a geo query or index uses
them (`defer_geo`); this product sends none. WiredTiger's one-time clock calibration runs in a thread meanwhile
(`calibrate_wiredtiger`).
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import threading
import types
from typing import Any, Callable, Iterator

ROLES = [{"role": "root", "db": "admin"}]


def provision(storage: Any, user: str, password: str) -> None:
    """Store `user` in admin with SCRAM-SHA-256 credentials (as SecantusDB's createUser does) and checkpoint."""
    from secantus.auth import SCRAM_SHA_256, derive_credentials

    credentials = derive_credentials(password, mechanism=SCRAM_SHA_256, username=user).to_doc()
    record = {"_id": f"admin.{user}", "user": user, "db": "admin", "credentials": credentials,
              "roles": ROLES, "mechanisms": [SCRAM_SHA_256]}
    storage.add_user("admin", user, record, replace=True)
    storage.checkpoint()


class CatalogMemo:
    """SecantusDB's index catalog read once per command instead of ~36 times.

    SecantusDB 0.7 reads a collection's index definitions from WiredTiger (Python key unpacking, then BSON)
    each time a step of a command needs them: about 36 times a write, ~40% of the server's CPU in a crawl.
    Within one command on one connection thread they are read once and kept as (name, BSON bytes), decoded
    afresh for every caller as before (no caller shares a dict). A command that changes the catalog itself
    (index created, dropped or changed; collection dropped or renamed; an index marked multikey by a write)
    drops the memo at once. Other threads never see it: another connection's catalog change is seen from
    this connection's next command, as a command that started a moment earlier would see it."""

    WRITERS = ("create_index", "drop_index", "set_index_expiry", "set_index_options", "drop_all_indexes",
               "drop_collection", "drop_database", "rename_collection")

    def __init__(self) -> None:
        self.local = threading.local()

    def command(self, dispatch: Callable[..., Any]) -> Callable[..., Any]:
        """dispatch with a fresh memo for the command (the one of an enclosing command kept aside)."""
        def memoised(*args: Any, **kwargs: Any) -> Any:
            outer = getattr(self.local, "rows", None)
            self.local.rows = {}
            try:
                return dispatch(*args, **kwargs)
            finally:
                self.local.rows = outer
        return memoised

    def reader(self, iter_indexes: Callable[..., Iterator]) -> Callable[..., Iterator]:
        """Storage._iter_indexes answered from the memo inside a command."""
        import bson

        def read(storage: Any, db: str, coll: str) -> Iterator[tuple[str, dict, dict]]:
            rows = getattr(self.local, "rows", None)
            if rows is None:
                yield from iter_indexes(storage, db, coll)
                return
            key = (id(storage), db, coll)
            if key not in rows:
                rows[key] = [(name, bson.encode({"key": spec, "options": opts}))
                             for name, spec, opts in iter_indexes(storage, db, coll)]
            for name, raw in rows[key]:
                payload = bson.decode(raw)
                yield name, payload["key"], payload["options"]
        return read

    def writer(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """A catalog-changing Storage method: the memo goes before and after it."""
        def write(*args: Any, **kwargs: Any) -> Any:
            self.forget()
            try:
                return method(*args, **kwargs)
            finally:
                self.forget()
        return write

    def marker(self, mark: Callable[..., set]) -> Callable[..., set]:
        """Storage._maybe_mark_multikey: the memo goes when a write may have marked an index multikey."""
        def mark_multikey(storage: Any, db: str, coll: str, doc: Any, indexes: Any, already: set) -> set:
            before = len(already)
            out = mark(storage, db, coll, doc, indexes, already)
            if len(out) != before:
                self.forget()
            return out
        return mark_multikey

    def install(self, storage_cls: type) -> None:
        """Patch a Storage class's catalog reader, multikey marker and catalog-changing methods."""
        storage_cls._iter_indexes = self.reader(storage_cls._iter_indexes)
        storage_cls._maybe_mark_multikey = self.marker(storage_cls._maybe_mark_multikey)
        for name in self.WRITERS:
            setattr(storage_cls, name, self.writer(getattr(storage_cls, name)))

    def forget(self) -> None:
        """Drop this thread's memo (it fills again on the next read)."""
        if getattr(self.local, "rows", None) is not None:
            self.local.rows = {}


def memo_index_catalog() -> CatalogMemo:
    """Install CatalogMemo on SecantusDB's Storage and its command dispatch (before the server starts)."""
    from secantus import commands, server
    from secantus.storage import Storage

    memo = CatalogMemo()
    memo.install(Storage)
    server.dispatch = commands.dispatch = memo.command(commands.dispatch)
    return memo


# The names SecantusDB 0.7's modules import from its geo modules when they load: all functions, each
# called only for a geo index or a geo query operator (the other names are imported inside functions).
GEO_FUNCTIONS = {
    "secantus.geo": ("parse_doc_geometry", "parse_query_geometry", "validate_coordinates"),
    "secantus.geo_index": ("encode_cell", "planar_2d_covering_ranges", "planar_2d_index_for_point",
                           "s2_doc_covering", "s2_query_covering"),
}


# secantus.geo's exception, made before that module's code runs and kept as its GeoError afterwards.
class GeoError(ValueError):
    """Malformed query geometry. Surfaced as ``BadValue`` to the client."""


GeoError.__module__ = "secantus.geo"


class DeferredModule(types.ModuleType):
    """A module whose code runs in it at the first use of a name it does not hold yet.

    Its functions in GEO_FUNCTIONS are held as stand-ins that run the code, then call the real function;
    any other name runs the code first. GeoError is made here, before the code runs, and stays this class
    afterwards, so an `except GeoError` written before the load catches what the code raises."""

    def __init__(self, name: str, spec: importlib.machinery.ModuleSpec) -> None:
        super().__init__(name)
        self.__dict__.update(_deferred_spec=spec, _deferred_lock=threading.RLock(), _deferred_done=False)
        for fn in GEO_FUNCTIONS.get(name, ()):
            setattr(self, fn, self._stand_in(fn))
        if name == "secantus.geo":
            self.GeoError = GeoError

    def _stand_in(self, fn: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self._load()
            return self.__dict__[fn](*args, **kwargs)
        call.__name__ = call.__qualname__ = fn
        return call

    def _load(self) -> None:
        with self._deferred_lock:
            if self._deferred_done:
                return
            self._deferred_done = True
            kept = self.__dict__.get("GeoError")
            spec = self._deferred_spec
            self.__spec__, self.__file__, self.__loader__ = spec, spec.origin, spec.loader
            spec.loader.exec_module(self)
            if kept is not None:
                self.GeoError = kept

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or self.__dict__.get("_deferred_done", True):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self._load()
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def defer_geo() -> None:
    """Put DeferredModule stand-ins of SecantusDB's geo modules in sys.modules, before SecantusDB imports."""
    package = importlib.util.find_spec("secantus")
    if package is None or package.submodule_search_locations is None or "secantus" in sys.modules:
        return
    for name in GEO_FUNCTIONS:
        spec = importlib.machinery.PathFinder.find_spec(name, package.submodule_search_locations)
        if spec is not None and spec.loader is not None:
            sys.modules[name] = DeferredModule(name, spec)


def calibrate_wiredtiger() -> threading.Thread:
    """Start WiredTiger's one-time set-up in a thread: the first open in a process spins ~0.12 s calibrating
    its clock (100 million empty loops, three times); on a throwaway in-memory database while SecantusDB
    imports (the call releases the GIL), the server's own open then takes ~10 ms. Join it before the server
    opens its data (an open meanwhile would only wait for the calibration)."""
    def run() -> None:
        import shutil
        import tempfile

        home = tempfile.mkdtemp(prefix="zhdedup-wiredtiger-")
        try:
            import wiredtiger

            wiredtiger.wiredtiger_open(home, "create,in_memory=true,cache_size=1M,session_max=4").close()
        except Exception:   # noqa: BLE001 - only a head start: the server's own open calibrates if this did not
            pass
        finally:
            shutil.rmtree(home, ignore_errors=True)

    thread = threading.Thread(target=run, name="wiredtiger-calibrate", daemon=True)
    thread.start()
    return thread


def split_args(args: list[str]) -> tuple[str | None, str | None, list[str]]:
    """(--user, --credentials, the rest for SecantusDB's own command line)."""
    rest, found = [], {"--user": None, "--credentials": None}
    it = iter(args)
    for arg in it:
        if arg in found:
            found[arg] = next(it, None)
        else:
            rest.append(arg)
    return found["--user"], found["--credentials"], rest


def main(args: list[str]) -> int:
    """SecantusDB's command line, its server class provisioning `--user` first when asked to."""
    calibrating = calibrate_wiredtiger()
    defer_geo()
    from secantus import cli

    user, credentials_file, rest = split_args(args)
    memo_index_catalog()
    if user and credentials_file:
        with open(credentials_file, encoding="utf-8") as fh:
            password = json.load(fh)["mongo"]

        class ProvisionedServer(cli.SecantusDBServer):
            """The daemon's server, its user stored before the socket opens."""

            def start(self) -> None:
                provision(self.storage, user, password)
                super().start()

        cli.SecantusDBServer = ProvisionedServer
    calibrating.join()
    return cli.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
