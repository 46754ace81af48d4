"""RFC 3161 timestamps of the evidence chain head, against a real TSA on loopback (`openssl ts -reply`):
tokens verify with plain openssl, a TSA that is down, slow, garbage or stamping other data costs nothing
and is refused, and one changed byte of any record, stamped bytes or token fails `verify`, naming it."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from bson.binary import Binary

from storage.timestamping import TokenRefused, TSAClient, TSAUnavailable, load_roots, make_client_or_none
from tests.storage.test_evidence import a_match, snapshot
from tests.tsa_fixture import LoopbackTSA, make_pki, openssl_verify, tsa, tsa_pki  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def client(server: LoopbackTSA, timeout: float = 30.0) -> TSAClient:
    return TSAClient(server.url, load_roots(server.ca), timeout)


def fill(store, n: int) -> str:
    mid = a_match(store)
    for i in range(n):
        store.evidence.add(mid, snapshot(i))
    return mid


def test_head_stamp_verifies_with_plain_openssl(store, tsa, tmp_path):
    fill(store, 3)
    stamp = store.evidence.stamp_head(client(tsa))
    assert stamp["_id"] == 2 and store.evidence.stamp_head(client(tsa)) is None   # nothing new: no second token
    (tmp_path / "STAMPED").write_bytes(bytes(stamp["stamped"]))
    (tmp_path / "TOKEN.tsr").write_bytes(bytes(stamp["token"]))
    r = openssl_verify(tmp_path / "STAMPED", tmp_path / "TOKEN.tsr", tsa.ca)
    assert r.returncode == 0 and "Verification: OK" in r.stdout, r.stderr
    res = store.evidence.verify(load_roots(tsa.ca))
    assert res.ok and res.stamps.all_stamped and res.stamps.signatures_checked and res.stamps.stamps == 1


def test_tsa_down_slow_garbage_or_other_data_loses_nothing(store, tsa):
    fill(store, 2)
    tsa.stop()
    with pytest.raises(TSAUnavailable):
        store.evidence.stamp_head(client(tsa))
    fill(store, 1)                                  # the chain goes on without the TSA
    status = store.evidence.stamp_status()
    assert status.stamped_to is None and status.records == 3 and "did not answer" in status.last_error
    assert status.unstamped_since == store.evidence.get(0)["recorded"]
    tsa.start()
    for mode, kind, said in (("slow", TSAUnavailable, "did not answer"), ("garbage", TokenRefused, "not a timestamp"),
                             ("other", TokenRefused, "imprint")):
        tsa.mode = mode
        with pytest.raises(kind, match=said):
            store.evidence.stamp_head(client(tsa, timeout=2.0 if mode == "slow" else 30.0))
        tsa.release.set()
    assert store.evidence.stamps.count_documents({}) == 0
    tsa.mode = "ok"
    assert store.evidence.stamp_head(client(tsa))["_id"] == 2          # caught up: one token covers all three
    status = store.evidence.stamp_status()
    assert status.stamped_to == 2 and status.unstamped_since is None and status.last_error is None


def test_replayed_token_is_refused_for_its_nonce(tsa):
    c = client(tsa)
    c.stamp(b"head 7")
    tsa.mode = "replay"              # the same bytes, the same TSA, the earlier answer: a replay
    with pytest.raises(TokenRefused, match="nonce"):
        c.stamp(b"head 7")


def test_token_from_an_unknown_ca_is_refused(store, tsa, tmp_path):
    fill(store, 1)
    make_pki(tmp_path / "other", cn="Other TSA")
    with pytest.raises(TokenRefused, match="signature or certificate chain"):
        store.evidence.stamp_head(TSAClient(tsa.url, load_roots(tmp_path / "other" / "ca.pem"), 30.0))


# a token's DER header, its certificate bag (outside the TSA's signature) and its signature; the time shown
@pytest.mark.parametrize(("target", "where"), [("record", 0.5), ("stamped", 0.5), ("token", 0.02), ("token", 0.5),
                                               ("token", 0.98), ("gen_time", 0)])
def test_one_changed_byte_fails_verify_naming_it(store, tsa, target, where):
    fill(store, 2)
    store.evidence.stamp_head(client(tsa))
    roots = load_roots(tsa.ca)
    assert store.evidence.verify(roots).ok
    if target == "record":
        rec = store.evidence.get(1)
        store.db.evidence.update_one({"_id": 1}, {"$set": {"text": rec["text"][:-1] + "X"}})
    elif target == "gen_time":
        stamp = store.evidence.stamps.find_one({"_id": 1})
        store.evidence.stamps.update_one({"_id": 1}, {"$set": {"gen_time": stamp["gen_time"] - timedelta(days=1)}})
    else:
        data = bytearray(store.evidence.stamps.find_one({"_id": 1})[target])
        data[int(len(data) * where)] ^= 0x01
        store.evidence.stamps.update_one({"_id": 1}, {"$set": {target: Binary(bytes(data))}})
    res = store.evidence.verify(roots)
    assert not res.ok
    said = res.problem if target == "record" else res.stamps.problem
    assert {"record": "text", "stamped": "stamped bytes", "token": "timestamp token",
            "gen_time": "stored TSA time"}[target] in said


def test_client_off_without_url_or_ca(tmp_path):
    assert make_client_or_none("", "", 10) is None
    with pytest.raises(Exception, match="ZHDEDUP_TSA_CA"):
        make_client_or_none("http://127.0.0.1:1/tsa", "", 10)


def admin_cli(store_config, tmp_path, ca, *args: str, url: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "MONGO_URI": store_config.mongo_uri, "REDIS_URL": store_config.redis_url,
           "ZHDEDUP_DB": store_config.db_name, "ZHDEDUP_PREFIX": store_config.key_prefix,
           "ZHDEDUP_VAR": str(tmp_path / "var"), "ZHDEDUP_TSA_CA": str(ca), "ZHDEDUP_TSA_URL": url}
    return subprocess.run([sys.executable, "-m", "admin", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def test_cli_verify_reports_stamps_and_names_a_changed_token(store, store_config, tsa, tmp_path):
    fill(store, 2)
    store.evidence.stamp_head(client(tsa))
    r = admin_cli(store_config, tmp_path, tsa.ca, "evidence", "verify")
    assert r.returncode == 0 and "every evidence record timestamped" in r.stdout and "signatures checked" in r.stdout
    fill(store, 1)
    assert "evidence records 2..2 not timestamped since" in store.status()["evidence"]
    token = bytearray(store.evidence.stamps.find_one({"_id": 1})["token"])
    token[-40] ^= 0x01
    store.evidence.stamps.update_one({"_id": 1}, {"$set": {"token": Binary(bytes(token))}})
    r = admin_cli(store_config, tmp_path, tsa.ca, "evidence", "verify")
    assert r.returncode == 1 and "timestamp of record 1" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_status_and_stamp_catch_up_after_the_tsa_returns(store, store_config, tsa, tmp_path):
    fill(store, 2)
    tsa.stop()
    r = admin_cli(store_config, tmp_path, tsa.ca, "evidence", "stamp", url=tsa.url)
    assert r.returncode == 2 and r.stderr.startswith("error: TSA") and len(r.stderr.strip().splitlines()) == 1
    r = admin_cli(store_config, tmp_path, tsa.ca, "evidence", "status")
    assert r.returncode == 0 and "evidence records 0..1 not timestamped since" in r.stdout and "did not answer" in r.stdout
    tsa.start()
    r = admin_cli(store_config, tmp_path, tsa.ca, "evidence", "stamp", url=tsa.url)
    assert r.returncode == 0 and "timestamped record 1" in r.stdout, r.stderr
    r = admin_cli(store_config, tmp_path, tsa.ca, "evidence", "status")
    assert "every evidence record timestamped" in r.stdout
