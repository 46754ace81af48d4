"""RFC 3161 trusted timestamps of the evidence chain's head, from a Time Stamping Authority (TSA).

A hash chain kept by the party it serves proves nothing about time; a TSA's signed token over the chain
head's digest does, for that record and every record before it. The bytes stamped are `stamped_bytes`
(a short ASCII statement naming the head's seq and digest), kept next to the token (a TimeStampResp in
DER), so `openssl ts -verify -data STAMPED -in TOKEN.tsr -CAfile CA.pem` verifies it without this project.
Requests, responses and their verification (imprint, nonce, signature, certificate chain to the CA
bundle) are rfc3161-client's; nothing here writes DER by hand. A token's certificate bag and unsigned
fields are outside the TSA's signature, so the stamp also keeps the token's SHA-256 (storage.stamps).
"""
from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cryptography import x509
from rfc3161_client import (HashAlgorithm, PKIStatus, TimestampRequestBuilder, VerifierBuilder,
                            decode_timestamp_response)

STAMP_PREFIX = b"zhdedup evidence log head\n"


class TimestampError(Exception):
    """Base class: no token was taken (the chain goes on; the stamp is retried)."""


class TSAUnavailable(TimestampError):
    """The TSA did not answer in time, refused the connection or answered with an HTTP error."""


class TokenRefused(TimestampError):
    """The TSA answered, but with garbage, a refusal, or a token whose imprint, nonce or signature does not match."""


class TSANotConfigured(TimestampError):
    """The TSA settings are missing or unusable (no URL, no CA bundle, an unreadable CA file)."""


@dataclass(frozen=True)
class Token:
    """A verified timestamp token: the TimeStampResp DER, the request's nonce and the TSA's time."""

    der: bytes
    nonce: int
    gen_time: datetime
    serial: int


def stamped_bytes(seq: int, digest: str) -> bytes:
    """The exact bytes stamped for the chain head at seq (ASCII, so a person can read what was stamped)."""
    return STAMP_PREFIX + f"seq {int(seq)}\ndigest {digest}\n".encode("ascii")


def parse_stamped(data: bytes) -> tuple[int, str] | None:
    """(seq, digest) named by stamped bytes, or None when they are not in stamped_bytes' form."""
    try:
        lines = data.decode("ascii").split("\n")
        seq, digest = int(lines[1].removeprefix("seq ")), lines[2].removeprefix("digest ")
    except (UnicodeDecodeError, IndexError, ValueError):
        return None
    return (seq, digest) if stamped_bytes(seq, digest) == data else None


def load_roots(ca_path: str | Path) -> list[x509.Certificate]:
    """The CA certificates (PEM bundle) that TSA tokens must chain to."""
    try:
        roots = x509.load_pem_x509_certificates(Path(ca_path).read_bytes())
    except (OSError, ValueError) as exc:
        raise TSANotConfigured(f"cannot read the TSA CA bundle {ca_path}: {exc}") from exc
    if not roots:
        raise TSANotConfigured(f"the TSA CA bundle {ca_path} holds no certificate")
    return roots


def check_token(der: bytes, data: bytes, roots: list[x509.Certificate] | None, nonce: int | None = None) -> str | None:
    """What is wrong with a stored token for these bytes (None: it verifies); without roots, imprint and nonce only."""
    try:
        resp = decode_timestamp_response(der)
        status, imprint, got_nonce = resp.status, resp.tst_info.message_imprint.message, resp.tst_info.nonce
    except Exception:  # noqa: BLE001 - as above: any parse failure is a corrupt token
        return "the token is not a timestamp response (corrupt DER)"
    if status not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        return f"the TSA refused the request (status {status})"
    if imprint != hashlib.sha256(data).digest():
        return "the token's imprint is not the SHA-256 of the stamped bytes"
    if nonce is not None and got_nonce != nonce:
        return "the token's nonce is not the request's"
    if roots:
        try:
            VerifierBuilder(nonce=nonce, roots=list(roots)).build().verify_message(resp, data)
        except Exception as exc:  # noqa: BLE001 - a corrupt token makes the parsers raise many kinds
            return f"the token's signature or certificate chain does not verify ({exc})"
    return None


def token_info(der: bytes) -> Any:
    """The signed facts of a token that verified (TSTInfo: gen_time, serial_number, nonce, imprint)."""
    return decode_timestamp_response(der).tst_info


class TSAClient:
    """Ask a TSA for a token over some bytes and accept it only when it verifies against the CA bundle."""

    def __init__(self, url: str, roots: list[x509.Certificate], timeout: float = 10.0) -> None:
        self.url = url
        self.roots = roots
        self.timeout = timeout

    def stamp(self, data: bytes) -> Token:
        """A verified token for `data`; TSAUnavailable or TokenRefused otherwise (nothing is kept then)."""
        req = TimestampRequestBuilder(data=data, hash_algorithm=HashAlgorithm.SHA256, nonce=True,
                                      cert_req=True).build()
        der = self._post(req.as_bytes())
        problem = check_token(der, data, self.roots, req.nonce)
        if problem:
            raise TokenRefused(f"token from {self.url} refused: {problem}")
        info = decode_timestamp_response(der).tst_info
        return Token(der, req.nonce, info.gen_time.astimezone(timezone.utc), info.serial_number)

    def _post(self, query: bytes) -> bytes:
        """The TSA's answer to one query (HTTP POST, RFC 3161 section 3.4)."""
        request = urllib.request.Request(self.url, data=query, method="POST",
                                         headers={"Content-Type": "application/timestamp-query"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # noqa: S310 - configured URL
                return reply.read(1 << 20)
        except urllib.error.HTTPError as exc:
            raise TSAUnavailable(f"TSA {self.url} answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TSAUnavailable(f"TSA {self.url} did not answer: {reason}") from exc


def make_client_or_none(url: str, ca_path: str, timeout: float) -> TSAClient | None:
    """The TSA client the settings ask for: None without ZHDEDUP_TSA_URL; TSANotConfigured without a usable CA."""
    if not url:
        return None
    if not ca_path:
        raise TSANotConfigured("ZHDEDUP_TSA_URL is set but ZHDEDUP_TSA_CA is not: a token nobody can verify "
                               "proves nothing")
    return TSAClient(url, load_roots(ca_path), timeout)
