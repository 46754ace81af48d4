"""`python -m fingerprint`: fingerprints, corpus dedup, pairwise comparison and copy matching."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from fingerprint import speedups
from fingerprint.cliparser import OneLineParser
from fingerprint.cluster import SinglePass
from fingerprint.compare import containment, minhash, shingle_jaccard, top_sentences_signature, winnowing_fingerprints
from fingerprint.dna import DEFAULT_PARAMS, SEED_PARAMS, dna, dna_containment
from fingerprint.document import fingerprint_normalized, fingerprint_text, keep_recent
from fingerprint.exact import content_hash
from fingerprint.matcher import CopyMatcher, compare_texts
from fingerprint.neardup import MAX_K, DedupDoc, DedupEngine, NearDupParams, check_k, is_near_duplicate, sketch
from fingerprint.normalize import normalize
from fingerprint.simhash import hamming, simhash
from fingerprint.tokens import Tokenizer, default_tokenizer
from fingerprint.synonyms import enabled as synonyms_enabled
from fingerprint.version import fingerprint_version

ENCODINGS = ("utf-8", "gb18030", "big5")


def _k_arg(value: str) -> int:
    """argparse type for -k: a whole number the dedup engine serves exactly."""
    try:
        return check_k(int(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) if value.lstrip("-").isdigit() else f"not a whole number: {value!r}")


def _workers_arg(value: str) -> int:
    """argparse type for --workers: 1 to 64 processes."""
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= 64:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 64, not {value!r}")
    return int(value)


class InputError(Exception):
    """Input that cannot be read at all (the message names the file)."""


def read_text(path: str) -> str:
    """A whole text file ('-' for stdin), UTF-8 first, then GB18030 and Big5."""
    data = sys.stdin.buffer.read() if path == "-" else _read_bytes(path)
    for encoding in ENCODINGS:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise InputError(f"{path}: not UTF-8, GB18030 or Big5 text")


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None


def iter_jsonl(path: str, problems: list[str]) -> Iterator[tuple[int, str, str]]:
    """(line number, id, text) of every usable line; what is skipped is said in problems."""
    stream: IO[bytes] = sys.stdin.buffer if path == "-" else _open(path)
    with stream:
        for lineno, raw in enumerate(stream, 1):
            if not raw.strip():
                continue
            doc = _parse_line(path, lineno, raw, problems)
            if doc is not None:
                yield lineno, doc[0], doc[1]


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None


def _parse_line(path: str, lineno: int, raw: bytes, problems: list[str]) -> tuple[str, str] | None:
    where = f"{path}:{lineno}"
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        problems.append(f"{where}: skipped, not UTF-8")
        return None
    except json.JSONDecodeError as exc:
        problems.append(f"{where}: skipped, malformed JSON ({exc.msg})")
        return None
    if not isinstance(doc, dict) or "text" not in doc:
        problems.append(f"{where}: skipped, no \"text\" field")
        return None
    if not isinstance(doc["text"], str):
        problems.append(f"{where}: skipped, \"text\" is not a string (got {type(doc['text']).__name__})")
        return None
    if not doc["text"].strip():
        problems.append(f"{where}: skipped, empty text")
        return None
    return str(doc.get("id", lineno)), doc["text"]


def _progress(shown: bool):
    """A progress bar on stderr, or None when it is not shown (tqdm is then never imported: ~30 ms)."""
    if not shown:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(unit="doc", file=sys.stderr)


def cmd_simhash(args: argparse.Namespace) -> int:
    tok = _tokenizer(args.userdict)
    for path in args.files:
        fp = simhash(read_text(path), args.weighting, tok)
        print(f"{fp:016x}\t{path}")
    return 0


def cmd_dna(args: argparse.Namespace) -> int:
    for path in args.files:
        windows = dna(read_text(path), SEED_PARAMS if args.seed_windows else DEFAULT_PARAMS)
        print(f"{path}\t{len(windows)} windows\t" + " ".join(f"{w:012x}" for w in windows))
    return 0


def _tokenizer(userdict: str | None) -> Tokenizer:
    """A tokenizer with the user's words, or the shared one (its dictionary serves the synonyms too)."""
    words = _user_words(userdict)
    return Tokenizer(words) if words else default_tokenizer()


def _fields(text: str, weighting: str, tokenizer: Tokenizer, sketch_size: int,
            known: Callable[[str], bool] | None = None) -> tuple[str, int, tuple[int, ...]]:
    """(content hash, SimHash, passage sketch) of one document: the parallel part of dedup. When known says
    a kept page has the same content, the SimHash and sketch are not computed (0 and ()): the decision of
    an exact copy reads neither (the exact hash answers first, and the batch has no publish dates)."""
    norm = normalize(text)
    content = content_hash(norm, normalized=True)
    if known is not None and known(content):
        return content, 0, ()
    fp = fingerprint_normalized(text, norm, content, weighting, tokenizer, dna_params=None,  # no DNA windows
                                sketch_size=sketch_size)
    return content, int(fp.simhash), fp.sketch


_WORKER: dict = {}


def _init_worker(userdict: str | None, weighting: str, sketch_size: int) -> None:
    """Load the tokenizer and tables once per worker process."""
    _WORKER.update(tokenizer=_tokenizer(userdict), weighting=weighting, sketch_size=sketch_size)


def _worker_fields(text: str) -> tuple[str, int, tuple[int, ...]]:
    return _fields(text, _WORKER["weighting"], _WORKER["tokenizer"], _WORKER["sketch_size"])


def _fingerprinted(docs: Iterator[tuple[int, str, str]], args: argparse.Namespace, sketch_size: int,
                   known: Callable[[str], bool] | None = None):
    """(id, text, fields) in input order; fields computed in args.workers processes when > 1. With one
    process each document is decided before the next is read, so known (content hash -> a kept page has it)
    is up to date and exact copies skip the tokenizer."""
    if args.workers <= 1:
        tokenizer = _tokenizer(args.userdict)
        for _, doc_id, text in docs:
            yield doc_id, text, _fields(text, args.weighting, tokenizer, sketch_size, known)
        return
    import multiprocessing as mp
    from collections import deque

    pending: deque[tuple[str, str]] = deque()

    def texts() -> Iterator[str]:
        for _, doc_id, text in docs:
            pending.append((doc_id, text))
            yield text

    with mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn").Pool(args.workers, _init_worker, (args.userdict, args.weighting, sketch_size)) as pool:
        for fields in pool.imap(_worker_fields, texts(), chunksize=16):
            doc_id, text = pending.popleft()
            yield doc_id, text, fields


def _dedup_row(doc_id: str, text: str, fields: tuple, args: argparse.Namespace, state: dict) -> dict:
    """One Single-Pass step: SimHash only (the seeds' method) or the product's dedup engine."""
    content, simhash_value, sketch_values = fields
    if args.method == "full":
        verdict = state["engine"].decide(DedupDoc(doc_id, text, content, simhash_value, sketch_values))
        if verdict.kind == "new":
            return {"id": doc_id, "cluster": doc_id, "duplicate_of": None, "distance": 0, "method": None}
        return {"id": doc_id, "cluster": verdict.original, "duplicate_of": verdict.original,
                "distance": verdict.distance, "method": verdict.method}
    exact = state["exact"]
    if content in exact:
        return {"id": doc_id, "cluster": exact[content], "duplicate_of": exact[content],
                "distance": 0, "method": "exact"}
    a = state["clusters"].add(doc_id, simhash_value)
    exact.setdefault(content, a.cluster)
    return {"id": doc_id, "cluster": a.cluster, "duplicate_of": a.duplicate_of, "distance": a.distance,
            "method": "simhash" if a.duplicate_of is not None else None}


BATCH_RECENT_PAGES = 4096   # pages whose canonical letters a batch dedup keeps (~18 KB each): ~75 MB


def cmd_dedup(args: argparse.Namespace) -> int:
    problems: list[str] = []
    keep_recent(BATCH_RECENT_PAGES)
    engine = DedupEngine(NearDupParams(k=args.k))
    state = {"clusters": SinglePass(k=args.k), "exact": {}, "engine": engine}
    sketch_size = engine.params.sketch_size if args.method == "full" else 0
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    started, docs, dups = time.perf_counter(), 0, 0
    bar = _progress(args.progress or sys.stderr.isatty())
    try:
        known = engine.index.holds_content if args.method == "full" else state["exact"].__contains__
        for doc_id, text, fields in _fingerprinted(iter_jsonl(args.input, problems), args, sketch_size, known):
            row = _dedup_row(doc_id, text, fields, args, state)
            docs += 1
            dups += row["duplicate_of"] is not None
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
        if args.out:
            out.close()
    for p in problems:
        print(p, file=sys.stderr)
    elapsed = time.perf_counter() - started
    print(f"documents {docs}, clusters {docs - dups}, duplicates {dups}, skipped {len(problems)}, "
          f"{elapsed:.2f} s ({docs / elapsed if elapsed else 0:.0f} docs/s, {args.workers} worker"
          f"{'s' if args.workers > 1 else ''})", file=sys.stderr)
    return 0 if docs or not problems else 1


def cmd_compare(args: argparse.Namespace) -> int:
    a, b = read_text(args.a), read_text(args.b)
    for path, text in ((args.a, a), (args.b, b)):
        if not text.strip():
            print(f"warning: {path} has no text; every measure below is meaningless", file=sys.stderr)
    fa, fb = fingerprint_text(a), fingerprint_text(b)
    rows = [
        ("exact content hash", "equal" if content_hash(a) == content_hash(b) else "different"),
        ("simhash hamming distance (64 bits)", str(hamming(fa.simhash, fb.simhash))),
        ("pinyin DNA containment (anchored)", f"{dna_containment(fa.dna, fb.dna):.3f}"),
        ("pinyin DNA containment (seed grid)", f"{dna_containment(dna(a, SEED_PARAMS), dna(b, SEED_PARAMS)):.3f}"),
        ("5-shingle jaccard", f"{shingle_jaccard(a, b):.3f}"),
        ("minhash jaccard estimate", f"{minhash(a).jaccard(minhash(b)):.3f}"),
        ("top-5 sentences signature", "equal" if top_sentences_signature(a) == top_sentences_signature(b) else "different"),
        ("winnowing containment", f"{containment(winnowing_fingerprints(a), winnowing_fingerprints(b)):.3f}"),
    ]
    verdict = is_near_duplicate(a, b)
    rows.append(("crawl-time dedup (B after A)", "new page" if verdict.kind == "new" else
                 f"duplicate ({verdict.method})"))
    m = compare_texts(a, b)
    rows.append(("copy matcher (A as source)", "no copy" if m is None else
                 f"copy: {m.source_coverage:.0%} of A in {len(m.suspect_spans)} passages, "
                 f"{m.suspect_coverage:.0%} of B"))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    problems: list[str] = []
    matcher = CopyMatcher()
    sources = 0
    for _, doc_id, text in iter_jsonl(args.sources, problems):
        matcher.add_source(doc_id, text)
        sources += 1
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    suspects = found = 0
    try:
        for _, doc_id, text in iter_jsonl(args.suspects, problems):
            suspects += 1
            for m in matcher.match(text):
                found += 1
                row = {"suspect": doc_id, **m.as_dict()}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if args.out:
            out.close()
    for p in problems:
        print(p, file=sys.stderr)
    print(f"sources {sources}, suspects {suspects}, matches {found}, skipped {len(problems)}", file=sys.stderr)
    return 0 if sources and suspects else 1


def _user_words(path: str | None) -> list[str]:
    if not path:
        return []
    return [line.split()[0] for line in read_text(path).splitlines() if line.strip()]


def build_parser(prog: str = "python -m fingerprint") -> argparse.ArgumentParser:
    """The argparse tree for `python -m fingerprint` (prog: the name usage lines show)."""
    p = OneLineParser(prog=prog, description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"{fingerprint_version(synonyms_enabled())} "
                   f"({'compiled kernels' if speedups.available() else 'numpy only: fingerprint/_speedups.c not built'})")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--weighting", choices=["tfidf", "tf"], default="tfidf",
                        help="token weights: tfidf (default, IDF table of the news corpus) or plain term frequency")
    common.add_argument("--userdict", help="file of extra words for the tokenizer, one per line")
    s = sub.add_parser("simhash", parents=[common], help="print the 64-bit SimHash of each file")
    s.add_argument("files", nargs="+", help="text files, or - for standard input")
    s.set_defaults(func=cmd_simhash)
    d = sub.add_parser("dna", help="print the pinyin-initial DNA windows of each file")
    d.add_argument("files", nargs="+", help="text files (UTF-8, GB18030 or Big5), or - for standard input")
    d.add_argument("--seed-windows", action="store_true", help="the seed's fixed grid instead of sentence-anchored windows")
    d.set_defaults(func=cmd_dna)
    dd = sub.add_parser("dedup", parents=[common], help="cluster a JSONL corpus of {id, text} (Single-Pass, Hamming <= k)")
    dd.add_argument("input", help='JSONL file, one {"id": ..., "text": "..."} per line, or - for standard input')
    dd.add_argument("--out", help="write the JSONL result rows here instead of standard output")
    dd.add_argument("-k", type=_k_arg, default=3,
                    help=f"SimHash Hamming distance for near duplicates, 0..{MAX_K} (default 3)")
    dd.add_argument("--method", choices=["full", "simhash"], default="full",
                    help="full: exact hash, SimHash, then shared passages (default); simhash: the seeds' Single-Pass")
    dd.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    dd.add_argument("--workers", type=_workers_arg, default=1,
                    help="processes that fingerprint in parallel (decisions stay in input order: same output)")
    dd.set_defaults(func=cmd_dedup)
    c = sub.add_parser("compare", help="every method's similarity for two texts")
    c.add_argument("a", help="the first text file (the original), or - for standard input")
    c.add_argument("b", help="the second text file (the possible copy)")
    c.set_defaults(func=cmd_compare)
    m = sub.add_parser("match", help="find which sources each suspect copies")
    m.add_argument("--sources", required=True, help='JSONL of registered works, {"id": ..., "text": "..."} per line')
    m.add_argument("--suspects", required=True, help="JSONL of texts to check, same format")
    m.add_argument("--out", help="write the JSONL match rows here instead of standard output")
    m.set_defaults(func=cmd_match)
    return p


def main(argv: list[str] | None = None, prog: str = "python -m fingerprint") -> int:
    """Entry point: user mistakes print one line and return 2; a closed pipe (| head) ends quietly."""
    args = build_parser(prog).parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return code
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            _silence_stdout()
            return 0
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    """After the reader closed the pipe, point stdout at /dev/null so the final flush cannot fail."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
