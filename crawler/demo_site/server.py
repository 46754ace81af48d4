"""A tiny threaded HTTP server for generated sites: one port per site, all on 127.0.0.1."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import urlsplit


@dataclass
class Resource:
    """One response: status, headers and body bytes (or a callable producing the body)."""

    body: bytes | Callable[[], bytes] = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html; charset=utf-8"})

    def payload(self) -> bytes:
        """The body bytes."""
        return self.body() if callable(self.body) else self.body


def html(body: str, encoding: str = "utf-8", status: int = 200, content_type: str | None = None) -> Resource:
    """An HTML resource encoded in `encoding`, announced in the Content-Type header."""
    ctype = content_type or f"text/html; charset={encoding}"
    return Resource(body.encode(encoding), status, {"Content-Type": ctype})


def redirect(location: str, status: int = 302) -> Resource:
    """A redirect to `location` (relative or absolute)."""
    return Resource(b"", status, {"Location": location, "Content-Type": "text/html"})


Site = dict  # path (without query) -> Resource


class _Handler(BaseHTTPRequestHandler):
    """Serves the site attached to the server; query strings are ignored, unknown paths are 404."""

    server_version = "zhdedup-demo/1.0"

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        """Look the path up in the site; count the hit."""
        site: Site = self.server.site  # type: ignore[attr-defined]
        path = urlsplit(self.path).path
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.hits[path] = self.server.hits.get(path, 0) + 1  # type: ignore[attr-defined]
        res = site.get(path)
        if res is None:
            res = Resource(b"<html><body><h1>404 Not Found</h1></body></html>", 404)
        body = res.payload()
        try:
            self.send_response(res.status)
            for key, value in res.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the crawler cancelled the download, or was killed
            pass

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        """Quiet: the crawler logs what it fetches."""


class SiteServer:
    """Serve several sites, each on its own port of 127.0.0.1, from background threads."""

    def __init__(self, sites: dict[str, Site | Callable[[dict[str, str]], Site]], port: int = 0,
                 host: str = "127.0.0.1") -> None:
        """Bind one port per site (port, port+1, ... or free ports when port is 0); a site given as a
        function is built after binding, from every site's base URL (for absolute links)."""
        self.host = host
        self.servers: dict[str, ThreadingHTTPServer] = {}
        for i, name in enumerate(sites):
            srv = ThreadingHTTPServer((host, port + i if port else 0), _Handler)
            srv.daemon_threads = True
            srv.hits, srv.lock = {}, threading.Lock()  # type: ignore[attr-defined]
            self.servers[name] = srv
        bases = {name: self.base(name) for name in sites}
        for name, site in sites.items():
            self.servers[name].site = site(bases) if callable(site) else site  # type: ignore[attr-defined]
        self.threads: list[threading.Thread] = []

    def base(self, name: str) -> str:
        """http://127.0.0.1:PORT of a site."""
        return f"http://{self.host}:{self.servers[name].server_address[1]}"

    def hits(self, name: str) -> dict[str, int]:
        """How often each path of a site was requested."""
        return dict(self.servers[name].hits)  # type: ignore[attr-defined]

    def start(self) -> "SiteServer":
        """Start serving in daemon threads."""
        for srv in self.servers.values():
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self) -> None:
        """Stop serving and close the sockets."""
        for srv in self.servers.values():
            srv.shutdown()
            srv.server_close()
        for t in self.threads:
            t.join(timeout=5)

    def __enter__(self) -> "SiteServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
