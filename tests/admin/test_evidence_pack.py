"""Evidence packs with a real RFC 3161 timestamp (loopback `openssl ts -reply`): the shipped check.py and
plain openssl verify them offline, and one byte changed in any file makes check.py fail naming it."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from admin.evidence_pack import write_pack
from storage.schema import to_oid
from storage.timestamping import TSAClient, load_roots
from tests.admin.test_cli import cli_env  # noqa: F401
from tests.tsa_fixture import openssl_verify, tsa, tsa_pki  # noqa: F401

RAW = "<html><head><meta charset=gbk><title>第二回</title></head><body><p>滚滚长江东逝水</p></body></html>"
EXCHANGE = {"final_url": "http://p.example/2.html", "redirect_urls": ["http://p.example/r/2"], "redirect_statuses": [302],
            "status": 200, "protocol": "HTTP/1.1", "headers": [["Content-Type", "text/html; charset=gbk"]],
            "ip_address": "127.0.0.1", "port": 80, "request": {"method": "GET", "url": "http://p.example/r/2",
                                                                "headers": []}}


def snapshot(i: int) -> dict:
    text = f"滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。{i}"
    return {"suspect_url": f"http://p.example/{i}.html", "raw": RAW.encode("gbk"), "status": 200,
            "headers": {"content-type": "text/html; charset=gbk"}, "fetched": datetime.now(timezone.utc),
            "text": text, "suspect_spans": [[0, 7]], "source_spans": [[3, 10]], "exchange": EXCHANGE,
            "passages": [{"suspect_span": [0, 7], "source_span": [3, 10], "suspect_text": text[:7]}]}


def matches_with_evidence(store, n: int) -> list[str]:
    ids = []
    for i in range(n):
        mid = store.matches.save({"suspect_url": f"http://p.example/{i}.html", "source_id": f"s{i}", "score": 0.9,
                                  "suspect_spans": [[0, 7]], "source_spans": [[3, 10]]})
        store.evidence.add(mid, snapshot(i))
        ids.append(mid)
    return ids


def check(where: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "check.py"], cwd=where, capture_output=True, text=True, timeout=120)


def test_stamped_pack_verifies_offline_and_any_changed_byte_fails(store, tsa, tmp_path):
    ids = matches_with_evidence(store, 3)
    store.evidence.stamp_head(TSAClient(tsa.url, load_roots(tsa.ca), 30))
    ids += matches_with_evidence(store, 1)          # the head moved on past the stamp
    write_pack(store, ids[1], tmp_path / "pack.zip", str(tsa.ca))
    with zipfile.ZipFile(tmp_path / "pack.zip") as zf:
        zf.extractall(tmp_path / "pack")
    pack = tmp_path / "pack"
    ok = check(pack)
    assert ok.returncode == 0 and "FAIL" not in ok.stdout and "ok   openssl ts -verify" in ok.stdout, ok.stdout
    assert "ok   chain to the timestamped head (record 2)" in ok.stdout
    plain = openssl_verify(pack / "timestamp" / "STAMPED.bin", pack / "timestamp" / "TOKEN.tsr", tsa.ca)
    assert plain.returncode == 0 and "Verification: OK" in plain.stdout
    readme = (pack / "README.txt").read_text("utf-8")
    assert "校验方法" in readme and "How to verify" in readme and "TSA time" in readme
    for name in ("raw.bin", "exchange.json", "record.json", "proof.json", "passages.json", "timestamp/STAMPED.bin",
                 "timestamp/TOKEN.tsr", "timestamp/ca.pem", "README.txt"):
        path = pack / name
        good = path.read_bytes()
        changed = bytearray(good)
        changed[len(changed) // 2] ^= 0x01
        path.write_bytes(bytes(changed))
        bad = check(pack)
        assert bad.returncode == 1 and f"FAIL file {name}" in bad.stdout, (name, bad.stdout)
        path.write_bytes(good)
    assert check(pack).returncode == 0
    manifest = json.loads((pack / "manifest.json").read_text("utf-8"))["files"]   # check.py checked by hand
    assert manifest["check.py"] == hashlib.sha256((pack / "check.py").read_bytes()).hexdigest()
    # a forger who also rewrites manifest.json still fails the checks behind it
    for name, said in (("timestamp/TOKEN.tsr", "FAIL openssl ts -verify"), ("text.txt", "FAIL text_sha256")):
        good = (pack / name).read_bytes()
        changed = bytearray(good)
        changed[-20] ^= 0x01
        (pack / name).write_bytes(bytes(changed))
        forged = {**manifest, name: hashlib.sha256(bytes(changed)).hexdigest()}
        (pack / "manifest.json").write_text(json.dumps({"files": forged}), encoding="utf-8")
        bad = check(pack)
        assert bad.returncode == 1 and said in bad.stdout and f"FAIL file {name}" not in bad.stdout, bad.stdout
        (pack / name).write_bytes(good)


def test_pack_of_an_unstamped_record_says_so(store, tmp_path):
    ids = matches_with_evidence(store, 1)
    write_pack(store, ids[0], tmp_path / "pack.zip", "")
    with zipfile.ZipFile(tmp_path / "pack.zip") as zf:
        assert not any(n.startswith("timestamp/") for n in zf.namelist())
        zf.extractall(tmp_path / "pack")
    out = check(tmp_path / "pack")
    assert out.returncode == 0 and "not timestamped" in out.stdout, out.stdout


def test_notice_pack_holds_every_match_pack_and_checks_them_all(store, tsa, cli_env, tmp_path):
    from admin.cli import main
    from admin.takedown import build_notice

    ids = matches_with_evidence(store, 2)
    for mid in ids:
        store.db.matches.update_one({"_id": to_oid(mid)}, {"$set": {"site": "p.example"}})
        store.matches.review(mid, "confirm", "tester")
    store.evidence.stamp_head(TSAClient(tsa.url, load_roots(tsa.ca), 30))
    notice, _ = build_notice(store, "p.example")
    out = tmp_path / "notice.zip"
    assert main(["evidence", "export-notice", notice["_id"], str(out)]) == 0
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert "notice.md" in names and {f"match-{mid}/timestamp/TOKEN.tsr" for mid in ids} <= set(names)
        zf.extractall(tmp_path / "n")
    ca = str(tsa.ca)
    ok = subprocess.run([sys.executable, "check.py", ca], cwd=tmp_path / "n", capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0 and ok.stdout.count("ok   match-") == 2, ok.stdout
    raw = tmp_path / "n" / f"match-{ids[1]}" / "raw.bin"
    raw.write_bytes(raw.read_bytes() + b" ")
    bad = subprocess.run([sys.executable, "check.py", ca], cwd=tmp_path / "n", capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 1 and f"FAIL match-{ids[1]}" in bad.stdout and "FAIL file raw.bin" in bad.stdout
