"""One match's evidence pack: a zip anyone can verify offline with Python and openssl (check.py).

raw exchange, text, passages with offsets, the chain record with its proof to a timestamped head, the
RFC 3161 token with the exact bytes it stamps and the certificates, a manifest of every file's SHA-256,
and a README in Chinese and English.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from storage.evidence import BINARY_FIELDS, canonical_json, raw_bytes

CHECK_PY = Path(__file__).with_name("pack_check.py")

README = """证据包 / Evidence pack — match {match_id}
==========================================================

中文
----
本证据包保存了爬虫发现侵权匹配时抓取到的网页原样内容，以及证明该记录自那时起未被改动的材料。
  raw.bin              服务器返回的响应正文原始字节（{raw_len} 字节，未经解码）
  exchange.json        完整 HTTP 交互：最终 URL、重定向链、状态码、全部响应头、服务器 IP 与端口、抓取时间、https 证书指纹
  headers.json         响应头（每个头取第一个值；全部值见 exchange.json）
  text.txt             从网页提取的正文（UTF-8）；passages.json 中的偏移量按其字符计数
  passages.json        匹配的段落：双方（涉嫌侵权页面与登记作品）的偏移量与文字
  record.json          证据日志中的记录（以上各项的 SHA-256 及其在哈希链中的位置）
  proof.json           从本记录到日志头部的哈希链
  timestamp/           RFC 3161 可信时间戳：STAMPED.bin（被签名的原始字节）、TOKEN.tsr（时间戳令牌，DER）、
                       tsa-certs.pem（时间戳机构证书）、ca.pem（验证所用的 CA 证书）、stamp.json
  capture/             确认侵权时用无头 Chromium 渲染的整页截图（screenshot.png）与 PDF（page.pdf），
                       及其证据记录、哈希链证明与时间戳（如有）
  manifest.json        本包内每个文件的 SHA-256
  check.py             离线校验脚本：python3 check.py [CA.pem]
校验方法：
  1. python3 check.py    （只需 Python 3 与 openssl；所有项目均应显示 ok）
     运行前可用 sha256sum check.py 与 manifest.json 中的值核对脚本本身。
  2. 不依赖本项目，直接用 openssl 校验时间戳：
     openssl ts -verify -data timestamp/STAMPED.bin -in timestamp/TOKEN.tsr -CAfile CA.pem
     CA.pem 应从时间戳机构处独立取得（包内 ca.pem 仅供参考）。
  3. STAMPED.bin 写明了被盖时间戳的日志头部（记录号与摘要）；proof.json 证明本记录位于该头部之前，
     因此其内容在时间戳时刻之前已经存在且此后未被改动。
{stamp_zh}

English
-------
What the crawler fetched when it found the match, exactly as received, and the proof that the record
has not changed since.
  raw.bin              the response body exactly as received ({raw_len} bytes, not decoded)
  exchange.json        the whole HTTP exchange: final URL, redirect chain, status, every response header,
                       the server's IP address and port, fetch time, https certificate fingerprint
  headers.json         the response headers, first value of each (exchange.json has them all)
  text.txt             the text extracted from the page (UTF-8); passages.json's offsets count its characters
  passages.json        the matched passages: offsets and text on both sides (suspect page, registered work)
  record.json          the evidence log's record (SHA-256 of everything above, its place in the hash chain)
  proof.json           the chain from this record to the log's head
  timestamp/           the RFC 3161 trusted timestamp: STAMPED.bin (the exact bytes signed), TOKEN.tsr (the
                       token, DER), tsa-certs.pem (the TSA's certificates), ca.pem (the CA used), stamp.json
  capture/             the page as headless Chromium rendered it when the match was confirmed: full-page
                       screenshot.png and page.pdf, with their record, chain proof and timestamp (if any)
  manifest.json        the SHA-256 of every file in this pack
  check.py             verifies everything offline: python3 check.py [CA.pem]
How to verify:
  1. python3 check.py    (Python 3 and openssl only; every line must say ok)
     Before running it, compare `sha256sum check.py` with its entry in manifest.json.
  2. Without this project, the timestamp with plain openssl:
     openssl ts -verify -data timestamp/STAMPED.bin -in timestamp/TOKEN.tsr -CAfile CA.pem
     Take CA.pem from the TSA itself (the pack's ca.pem is a convenience copy).
  3. STAMPED.bin names the stamped head of the log (seq and digest); proof.json shows this record comes
     before that head, so its content existed at the token's time and has not changed since.
{stamp_en}
"""


def record_json(rec: dict) -> dict:
    """The record as the pack's JSON (bytes left out: they are files of their own), in the form its digest covers."""
    return json.loads(canonical_json({k: v for k, v in rec.items() if k not in BINARY_FIELDS}))


def stamp_files(store: Any, rec: dict, ca_path: str, prefix: str = "") -> dict[str, bytes]:
    """timestamp/*: the earliest stamp covering the record, its certificates and the CA bundle (empty: none)."""
    stamp = store.evidence.stamp_covering(rec["_id"])
    if stamp is None:
        return {}
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    from rfc3161_client import decode_timestamp_response

    token = bytes(stamp["token"])
    certs = b"".join(x509.load_der_x509_certificate(c).public_bytes(Encoding.PEM)
                     for c in decode_timestamp_response(token).signed_data.certificates)
    files = {"STAMPED.bin": bytes(stamp["stamped"]), "TOKEN.tsr": token, "tsa-certs.pem": certs,
             "stamp.json": json.dumps(json.loads(canonical_json(
                 {"seq": stamp["_id"], "digest": stamp["digest"], "gen_time": stamp.get("gen_time"),
                  "tsa": stamp.get("tsa"), "nonce": stamp.get("nonce"), "serial": stamp.get("serial"),
                  "token_sha256": stamp.get("token_sha256")})), indent=2).encode("utf-8")}
    if ca_path and Path(ca_path).is_file():
        files["ca.pem"] = Path(ca_path).read_bytes()
    return {f"{prefix}timestamp/{name}": data for name, data in files.items()}


def capture_files(store: Any, match: dict, ca_path: str) -> dict[str, bytes]:
    """capture/*: the rendered capture's screenshot, PDF, record, proof and timestamp (empty: no capture)."""
    rec = store.evidence.capture_for(match)
    if rec is None:
        return {}
    files = {"capture/record.json": _json(record_json(rec)),
             "capture/proof.json": _json(store.evidence.proof(rec["_id"])),
             **stamp_files(store, rec, ca_path, "capture/")}
    for name, field in (("screenshot.png", "png"), ("page.pdf", "pdf")):
        if rec.get(field) is not None:
            files[f"capture/{name}"] = bytes(rec[field])
    return files


def pack_files(store: Any, match_id: str, ca_path: str = "") -> tuple[dict, dict[str, bytes]]:
    """(record, {name: bytes}) of one match's pack, manifest included; LookupError without a snapshot."""
    match = store.matches.get(match_id)
    if not match:
        raise LookupError(f"no match with id {match_id!r}")
    rec = store.evidence.for_match(match)
    if rec is None:
        raise LookupError(f"match {match_id} has no evidence snapshot (it was made before evidence was kept)")
    proof = store.evidence.proof(rec["_id"])
    doc = record_json(rec)
    stamps = stamp_files(store, rec, ca_path)
    files = {"raw.bin": raw_bytes(rec) or b"", "text.txt": str(rec.get("text") or "").encode("utf-8"),
             "exchange.json": _json(doc.get("exchange") or {"headers": doc.get("headers"), "status": doc.get("status"),
                                                            "final_url": doc.get("final_url")}),
             "headers.json": _json(doc.get("headers") or {}), "passages.json": _json(doc.get("passages") or []),
             "record.json": _json(doc),
             "proof.json": _json({**proof, "written": datetime.now(timezone.utc).isoformat()}),
             "check.py": CHECK_PY.read_bytes(), "README.txt": _readme(match_id, rec, stamps).encode("utf-8"), **stamps,
             **capture_files(store, match, ca_path)}
    files["manifest.json"] = _json({"match_id": str(match_id), "record": rec["_id"], "files": {
        name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}})
    return rec, files


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8")


def _readme(match_id: str, rec: dict, stamps: dict[str, bytes]) -> str:
    """The bilingual README, saying whether and when the record was timestamped."""
    if stamps:
        stamp = json.loads(stamps["timestamp/stamp.json"])
        zh = f"本记录（第 {rec['_id']} 号）由第 {stamp['seq']} 号日志头部的时间戳覆盖，时间戳机构时间 {stamp['gen_time']}。"
        en = f"This record ({rec['_id']}) is covered by the timestamp of head {stamp['seq']}, TSA time {stamp['gen_time']}."
    else:
        zh = "注意：导出本包时该记录尚未获得可信时间戳。"
        en = "Note: this record had no trusted timestamp yet when the pack was written."
    return README.format(match_id=match_id, raw_len=rec.get("raw_len"), stamp_zh=zh, stamp_en=en)


def tsa_settings() -> dict:
    """The TSA settings as the crawl reads them (declared once, in crawler/settings.py, from the environment)."""
    from crawler import settings

    return {"url": settings.ZHDEDUP_TSA_URL, "ca": settings.ZHDEDUP_TSA_CA, "timeout": settings.ZHDEDUP_TSA_TIMEOUT}


def write_pack(store: Any, match_id: str, out: Path | BinaryIO, ca_path: str | None = None) -> dict:
    """Write the evidence pack of one match to a zip file (path or binary file object); returns the record.
    The CA bundle copied into the pack is ZHDEDUP_TSA_CA unless one is given."""
    rec, files = pack_files(store, match_id, tsa_settings()["ca"] if ca_path is None else ca_path)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return rec


NOTICE_README = """通知证据包 / Evidence pack of notice {notice_id} ({site})
==========================================================

notice.md 是通知正文；每个 match-<ID>/ 目录是通知所列一个网址的完整证据包（见其中的 README.txt）。
校验：python3 check.py [CA.pem]  逐个运行各目录中的 check.py，全部通过才显示 ok。

notice.md is the notice as sent; each match-<ID>/ folder is the full evidence pack of one URL the
notice lists (see its README.txt). Verify: python3 check.py [CA.pem] runs every folder's check.py and
says ok only when all pass.
"""

NOTICE_CHECK_PY = '''"""Run every match folder's check.py of this notice pack: python3 check.py [CA.pem]."""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
failed = 0
for folder in sorted(p for p in HERE.iterdir() if p.is_dir() and p.name.startswith("match-")):
    run = subprocess.run([sys.executable, str(folder / "check.py"), *sys.argv[1:]], capture_output=True, text=True)
    print(("ok   " if run.returncode == 0 else "FAIL ") + folder.name)
    if run.returncode != 0:
        failed += 1
        print("     " + "\\n     ".join(l for l in run.stdout.splitlines() if l.startswith("FAIL")))
sys.exit(1 if failed else 0)
'''


def write_notice_pack(store: Any, notice_id: str, out: Path | BinaryIO, ca_path: str | None = None) -> dict:
    """One zip for a notice: its text and the evidence pack of every match it lists (those with a snapshot)."""
    from admin.takedown import render_notice

    notice = store.notices.get(notice_id)
    if not notice:
        raise LookupError(f"no notice with id {notice_id!r}")
    ca = tsa_settings()["ca"] if ca_path is None else ca_path
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("notice.md", render_notice(notice, "md"))
        zf.writestr("README.txt", NOTICE_README.format(notice_id=notice_id, site=notice.get("site")))
        zf.writestr("check.py", NOTICE_CHECK_PY)
        for item in notice["items"]:
            try:
                _, files = pack_files(store, str(item["match_id"]), ca)
            except LookupError:
                continue   # a match made before evidence was kept: the notice names it, no pack
            for name, data in files.items():
                zf.writestr(f"match-{item['match_id']}/{name}", data)
    return notice
