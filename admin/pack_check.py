"""Verify this evidence pack offline: `python3 check.py [CA.pem]` (Python 3's standard library and openssl).

Checks every file against manifest.json, the record's digests (raw bytes, text, HTTP exchange, content),
its place in the hash chain up to the timestamped head, that timestamp/STAMPED.bin names that head, and
the RFC 3161 token with `openssl ts -verify` against CA.pem (default: timestamp/ca.pem; a court should use
the TSA's CA certificate from the TSA itself); the same for the rendered capture in capture/ (screenshot
and PDF). Prints one line per check; exit 0 only when all pass.
"""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHAIN_FIELDS = ("_id", "prev_digest", "content_digest", "digest")


def sha(data):
    """Hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


def chain(prev, content):
    """A chain entry's digest: SHA-256 over the previous digest and the content digest (32 bytes each)."""
    return sha(bytes.fromhex(prev) + bytes.fromhex(content))


def canonical(value):
    """The JSON the digests cover: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def check_manifest(out):
    """Every file listed with its SHA-256, and no file left out of the list."""
    manifest = json.loads((HERE / "manifest.json").read_text("utf-8"))
    for name, digest in sorted(manifest["files"].items()):
        path = HERE / name
        out.append(("file " + name, path.is_file() and sha(path.read_bytes()) == digest))
    present = {str(p.relative_to(HERE)) for p in HERE.rglob("*") if p.is_file()}
    extra = sorted(present - set(manifest["files"]) - {"manifest.json"} - {p for p in present if "__pycache__" in p})
    out.append(("no file outside the manifest" + (" (" + ", ".join(extra) + ")" if extra else ""), not extra))


def check_record(base, rec, out):
    """The record's own digests (a snapshot's raw bytes, text and exchange; a capture's PNG and PDF)."""
    label = "" if base == HERE else "capture "
    if rec.get("kind") == "capture":
        for name, field in (("screenshot.png", "png_sha256"), ("page.pdf", "pdf_sha256")):
            if (base / name).is_file():
                out.append((label + field + " (" + name + ")", sha((base / name).read_bytes()) == rec[field]))
    else:
        out.append(("raw_sha256 (raw.bin)", sha((base / "raw.bin").read_bytes()) == rec["raw_sha256"]))
        out.append(("text_sha256 (text.txt)", sha((base / "text.txt").read_bytes()) == rec["text_sha256"]))
        if rec.get("exchange"):
            exchange = json.loads((base / "exchange.json").read_text("utf-8"))
            out.append(("exchange_sha256 (exchange.json)", sha(canonical(exchange)) == rec["exchange_sha256"]))
    body = {k: v for k, v in rec.items() if k not in CHAIN_FIELDS}
    out.append((label + "content_digest (record.json)", sha(canonical(body)) == rec["content_digest"]))
    out.append((label + "digest (record.json)", chain(rec["prev_digest"], rec["content_digest"]) == rec["digest"]))


def walk(rec, later, stop_seq):
    """The chain digest at stop_seq, starting from this record and the content digests after it."""
    digest, seq = rec["digest"], rec["_id"]
    for content in later:
        if seq == stop_seq:
            break
        digest, seq = chain(digest, content), seq + 1
    return digest if seq == stop_seq else None


def check_chain(base, rec, proof, stamp, out):
    """The record leads to the log's head, and to the timestamped head on the way."""
    label = "" if base == HERE else "capture "
    later = proof["later_content_digests"]
    out.append((label + "chain to the head", walk(rec, later, proof["head"]["seq"]) == proof["head"]["digest"]))
    if stamp is not None:
        out.append((label + "chain to the timestamped head (record %d)" % stamp["seq"],
                    walk(rec, later, stamp["seq"]) == stamp["digest"]))


def check_stamp(base, stamp, ca, out):
    """STAMPED.bin names the stamped head; openssl verifies the token over it against the CA."""
    label = "" if base == HERE else "capture "
    stamped = (base / "timestamp" / "STAMPED.bin").read_bytes()
    expected = "zhdedup evidence log head\nseq %d\ndigest %s\n" % (stamp["seq"], stamp["digest"])
    out.append((label + "STAMPED.bin names the timestamped head", stamped == expected.encode("ascii")))
    try:
        run = subprocess.run(["openssl", "ts", "-verify", "-data", str(base / "timestamp" / "STAMPED.bin"),
                              "-in", str(base / "timestamp" / "TOKEN.tsr"), "-CAfile", str(ca)],
                             capture_output=True, text=True, timeout=120)
        ok = run.returncode == 0 and "Verification: OK" in run.stdout
    except OSError:
        ok = False
    out.append((label + "openssl ts -verify TOKEN.tsr (CA %s)" % ca, ok))


def load(name, out):
    """A JSON file of the pack, or None (and a FAIL line) when it is missing or unreadable."""
    try:
        return json.loads((HERE / name).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        out.append(("read " + name + " (" + type(exc).__name__ + ")", False))
        return None


def guarded(name, check, out, *args):
    """Run one check; a file too damaged to read fails that check instead of stopping the rest."""
    try:
        check(*args, out)
    except Exception as exc:  # noqa: BLE001 - any damage is a FAIL line, never a traceback
        out.append((name + " (" + type(exc).__name__ + ": " + str(exc)[:80] + ")", False))


def check_unit(base, ca, out):
    """One record with its proof and timestamp: the snapshot (the pack's top) or the capture (capture/)."""
    name = "" if base == HERE else "capture/"
    rec, proof = load(name + "record.json", out), load(name + "proof.json", out)
    stamp = load(name + "timestamp/stamp.json", out) if (base / "timestamp").is_dir() else None
    if rec is not None:
        guarded(name + "record digests", check_record, out, base, rec)
        if proof is not None:
            guarded(name + "chain", check_chain, out, base, rec, proof, stamp)
    if stamp is not None:
        guarded(name + "timestamp", check_stamp, out, base, stamp, ca or base / "timestamp" / "ca.pem")
    return stamp is not None


def main(argv):
    """Run every check, print them, exit 0 when all pass."""
    out = []
    ca = Path(argv[1]) if len(argv) > 1 else None
    guarded("manifest.json", lambda o: check_manifest(o), out)
    stamped = check_unit(HERE, ca, out)
    if (HERE / "capture").is_dir():
        check_unit(HERE / "capture", ca, out)
    for name, ok in out:
        print(("ok   " if ok else "FAIL ") + name)
    if not stamped:
        print("NOTE this record was not timestamped when the pack was written (no trusted time)")
    return 0 if out and all(ok for _, ok in out) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
