"""Tests reach loopback only: a host name outside it fails at once in the test process (tests/conftest.py)."""
from __future__ import annotations

import socket

import pytest


def test_a_name_outside_loopback_is_refused_and_loopback_resolves():
    with pytest.raises(socket.gaierror, match="loopback names only"):
        socket.getaddrinfo("copy0.example", 80)
    with pytest.raises(socket.gaierror):
        socket.create_connection(("pypi.org", 443), timeout=1)
    assert socket.getaddrinfo("127.0.0.1", 80) and socket.getaddrinfo("localhost", 80)
