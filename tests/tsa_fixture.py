"""A real RFC 3161 Time Stamping Authority on 127.0.0.1: `openssl ts -reply` behind a small HTTP server.

`make_pki(dir)` makes a CA and a TSA certificate (real OpenSSL, made in the test); `LoopbackTSA` answers
POSTed requests with `openssl ts -reply`, and can be switched to be down (connection refused), slow
(answers after `release` is set), garbage, or to stamp other data than asked (`mode`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

TSA_CNF = """
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = {cn}
[ v3_ca ]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[ v3_tsa ]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,nonRepudiation
extendedKeyUsage = critical,timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {dir}
serial = $dir/tsaserial
crypto_device = builtin
signer_cert = $dir/tsa.pem
certs = $dir/tsa.pem
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.5
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = no
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(where: Path, cn: str = "Test TSA") -> Path:
    """CA (ca.pem) and TSA certificate and key (tsa.pem, tsa.key) in `where`; returns the config file."""
    where.mkdir(parents=True, exist_ok=True)
    cnf = where / "tsa.cnf"
    cnf.write_text(TSA_CNF.format(dir=where, cn=cn))
    (where / "tsaserial").write_text("01\n")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "3650",
             "-config", str(cnf), "-extensions", "v3_ca", "-subj", f"/CN={cn} Root CA", cwd=where)
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "tsa.key", "-out", "tsa.csr",
             "-config", str(cnf), "-subj", f"/CN={cn}", cwd=where)
    _openssl("x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "tsa.pem", "-days", "3650", "-extfile", str(cnf), "-extensions", "v3_tsa", cwd=where)
    return cnf


class LoopbackTSA:
    """`openssl ts -reply` on 127.0.0.1; `mode` is "ok", "garbage", "other" (stamps other data), "replay" (the
    last reply again, whatever was asked) or "slow" (answers once `release` is set)."""

    def __init__(self, pki_dir: Path) -> None:
        self.pki = pki_dir
        self.cnf = pki_dir / "tsa.cnf"
        self.mode = "ok"
        self.release = threading.Event()
        self.served = 0
        self.stamped = threading.Event()   # set once a token was handed out
        self.answered = threading.Event()  # set once anything was answered (a token or garbage)
        self.last_reply = b""
        self.server: ThreadingHTTPServer | None = None
        self.port = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """Where the TSA answers (the port stays the same across stop and start)."""
        return f"http://127.0.0.1:{self.port}/tsa"

    @property
    def ca(self) -> Path:
        """The CA bundle that verifies this TSA's tokens."""
        return self.pki / "ca.pem"

    def reply(self, query: bytes) -> bytes:
        """The TimeStampResp DER for a TimeStampReq DER, made by openssl ts -reply."""
        if self.mode == "other":
            query = self._query_for(b"some other data")
        with self._lock, tempfile.TemporaryDirectory() as tmp:
            q, r = Path(tmp) / "q.tsq", Path(tmp) / "r.tsr"
            q.write_bytes(query)
            _openssl("ts", "-reply", "-config", str(self.cnf), "-queryfile", str(q), "-out", str(r), cwd=self.pki)
            return r.read_bytes()

    def _query_for(self, data: bytes) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "q.tsq"
            _openssl("ts", "-query", "-digest", hashlib.sha256(data).hexdigest(), "-sha256", "-cert",
                     "-out", str(out), cwd=Path(tmp))
            return out.read_bytes()

    def start(self) -> "LoopbackTSA":
        """Serve on the same port as before (a fresh one the first time)."""
        tsa = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if tsa.mode == "slow":
                    tsa.release.wait(60)
                if tsa.mode == "replay":
                    out = tsa.last_reply
                else:
                    out = b"\x30\x03garbage" if tsa.mode == "garbage" else tsa.reply(body)
                    tsa.last_reply = out
                tsa.served += 1
                tsa.answered.set()
                if tsa.mode == "ok":
                    tsa.stamped.set()
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Down: connections are refused until start() again."""
        if self.server is not None:
            self.release.set()
            self.server.shutdown()
            self.server.server_close()
            self.server = None
            self.release = threading.Event()


def openssl_verify(data: Path, tsr: Path, ca: Path) -> subprocess.CompletedProcess:
    """`openssl ts -verify -data DATA -in TOKEN.tsr -CAfile CA.pem`, as anyone would run it."""
    return subprocess.run(["openssl", "ts", "-verify", "-data", str(data), "-in", str(tsr), "-CAfile", str(ca)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "LC_ALL": "C"})


@pytest.fixture(scope="session")
def tsa_pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a TSA certificate made once per test session."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command (apt-get install openssl): the test TSA is `openssl ts -reply`")
    where = tmp_path_factory.mktemp("tsa")
    make_pki(where)
    return where


@pytest.fixture
def tsa(tsa_pki: Path) -> Iterator[LoopbackTSA]:
    """A running loopback TSA (mode "ok"); stopped afterwards."""
    server = LoopbackTSA(tsa_pki).start()
    try:
        yield server
    finally:
        server.stop()
