"""jieba's segmentation in C (fingerprint/_segment.c), giving rjieba's tokens, from jieba 0.42.1's files.

rjieba (jieba-rs) returns ~1,650 str objects a 3,000-character page and takes half of a batch dedup;
the compiled cut gives the same tokens (tests/fingerprint/test_segmenter.py and
benchmarks/segmenter_identity.py compare them list for list), so fingerprints do not change. Its tables
are jieba's dictionary as a trie and jieba's HMM (prob_start/prob_trans/prob_emit), built once per
machine (~4 s) and then loaded from a cache file named by a digest of those files and of this module.

The trie: node 0 is the root; the root's children are found by code point in `root`; every other node's
children are the consecutive nodes from nodes[node].first to nodes[node + 1].first (a sentinel node ends
the array), sorted by the code point of the edge into them (`cp`, with WORD set where a word ends);
`logfreq` is ln(freq) of that word. jieba_table hashes the edges below the root at load (~20 ms), so a
step of the cut reads one cache line.
"""
from __future__ import annotations

import ast
import importlib.util
import math
import threading
from pathlib import Path

import numpy as np

from fingerprint.cache import AST_LOCK, cache_dir, digest, load_npz, save_atomic
from fingerprint.speedups import KERNEL

ROOT_SIZE = 0x30000  # _segment.c ROOT_SIZE
HMM_LO, HMM_HI = 0x4E00, 0x9FD5  # _segment.c: the HMM's Han range
MIN_FLOAT = -3.14e100  # jieba's log-probability of what the HMM has no entry for
STATES = "BEMS"  # _segment.c's state order
TABLE_VERSION = "2"  # bump when the table's layout changes
WORD = 0x80000000  # _segment.c WORD
NODE = np.dtype([("cp", "<u4"), ("first", "<i4"), ("logfreq", "<f8")])  # _segment.c Node
_ARRAYS = ("root", "nodes", "emit", "model", "log_total")


def jieba_dir() -> Path:
    """The installed jieba package's folder (its dict.txt and finalseg/), found without importing it."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("jieba is not installed: its dictionary is the segmenter's")
    return Path(list(spec.submodule_search_locations)[0])


def _sources() -> list[Path]:
    folder = jieba_dir()
    return [folder / "dict.txt"] + [folder / "finalseg" / f"prob_{n}.py" for n in ("start", "trans", "emit")]


def read_dictionary(text: str) -> tuple[dict[str, int], int]:
    """(word -> freq, total) as jieba-rs loads its embedded dict.txt: each line counts in the total,
    a repeated word keeps its first line's frequency."""
    freqs: dict[str, int] = {}
    total = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        freq = int(parts[1]) if len(parts) > 1 else 0
        freqs.setdefault(parts[0], freq)
        total += freq
    return freqs, total


def build_trie(freqs: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(root, nodes) of the words, nodes numbered level by level (see the module doc), in numpy (~0.2 s;
    a loop over the prefixes took ~3.5 s of a cold cache's first cut).

    A level's nodes in order are its distinct prefixes sorted by (the parent's place in its level, the last
    code point): one np.unique of rank << 21 | code point a level, the rank being the parent's."""
    words = list(freqs)
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    flat = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    starts = np.cumsum(lens) - lens
    logf = np.array([math.log(f) if f > 0 else -math.inf for f in freqs.values()])
    cps, logs, counts = [np.zeros(1, np.uint32)], [np.zeros(1)], []
    rank = np.zeros(len(words), dtype=np.int64)   # each word's prefix of depth - 1 characters: its place in its level
    alive, size, depth = np.arange(len(words)), 1, 1
    while alive.size:
        keys, inv = np.unique((rank[alive] << 21) | flat[starts[alive] + depth - 1], return_inverse=True)
        counts.append(np.bincount(keys >> 21, minlength=size))   # children of the level above's nodes
        ends = lens[alive] == depth                                # a prefix of `depth` characters is one word at most
        word = np.zeros(keys.size, dtype=np.uint32)
        word[inv[ends]] = WORD
        lf = np.zeros(keys.size)
        lf[inv[ends]] = logf[alive[ends]]
        cps.append((keys & 0x1FFFFF).astype(np.uint32) | word)
        logs.append(lf)
        rank[alive] = inv
        alive, size, depth = alive[~ends], keys.size, depth + 1
    counts.append(np.zeros(size, dtype=np.int64))   # the deepest level has no children
    nodes = np.zeros(sum(c.size for c in cps) + 1, dtype=NODE)  # and the sentinel
    nodes["cp"][:-1] = np.concatenate(cps)
    nodes["logfreq"][:-1] = np.concatenate(logs)
    nodes["first"] = 1 + np.concatenate([[0], np.cumsum(np.concatenate(counts))])
    root = np.zeros(ROOT_SIZE, dtype=np.int32)
    if len(cps) > 1:
        first = (cps[1] & 0x1FFFFF).astype(np.int64)
        below = first < ROOT_SIZE
        root[first[below]] = 1 + np.flatnonzero(below)
    return root, nodes


def _literal(path: Path) -> dict:
    """The dict `P` a finalseg prob_*.py file assigns, read without running it."""
    source = path.read_text(encoding="utf-8")
    with AST_LOCK:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "P":
                return ast.literal_eval(node.value)
    raise ValueError(f"{path}: no P = {{...}}")


def build_hmm(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """(emit, model): emission log-probabilities over the HMM's Han range, 4 a character; start, transitions."""
    start, trans, emit = (_literal(folder / f"prob_{n}.py") for n in ("start", "trans", "emit"))
    table = np.full((HMM_HI - HMM_LO + 1, 4), MIN_FLOAT)
    for s, state in enumerate(STATES):
        for ch, p in emit.get(state, {}).items():
            if len(ch) == 1 and HMM_LO <= ord(ch) <= HMM_HI:
                # jieba-rs embeds cppjieba's copy of this model, whose emissions are jieba's written with
                # 6 decimals ("%f"): rjieba's binary holds exactly these doubles, row for row
                table[ord(ch) - HMM_LO, s] = float(f"{p:.6f}")
    model = [start.get(s, MIN_FLOAT) for s in STATES]
    model += [trans.get(a, {}).get(b, MIN_FLOAT) for a in STATES for b in STATES]
    return table.ravel(), np.array(model, dtype=np.float64)


def build_arrays() -> dict[str, np.ndarray]:
    """Every array jieba_table takes, from jieba's files."""
    folder = jieba_dir()
    freqs, total = read_dictionary((folder / "dict.txt").read_text(encoding="utf-8"))
    root, nodes = build_trie(freqs)
    emit, model = build_hmm(folder / "finalseg")
    return {"root": root, "nodes": nodes, "emit": emit, "model": model, "log_total": np.array(math.log(total))}


def _cache_file() -> Path:
    parts = [TABLE_VERSION.encode(), Path(__file__).read_bytes()] + [p.read_bytes() for p in _sources()]
    return cache_dir() / f"jiebatrie-{digest(parts)}.npz"


def load_arrays() -> dict[str, np.ndarray]:
    """The arrays, from the cache file when an earlier process saved it (saved here if not)."""
    path = _cache_file()
    try:
        return load_npz(path, _ARRAYS)
    except (OSError, ValueError, KeyError, EOFError):
        pass
    arrays = build_arrays()
    save_atomic(path, lambda f: np.savez(f, **arrays))
    return arrays


_LOCK = threading.Lock()
_TABLE: list = []


def available() -> bool:
    """Whether the compiled segmenter is built (else Tokenizer cuts with rjieba)."""
    return KERNEL is not None   # a build of this KERNELS_VERSION has the segmenter


def table() -> object:
    """The compiled segmenter's table (built or loaded once per process)."""
    if not _TABLE:
        with _LOCK:
            if not _TABLE:
                a = load_arrays()
                _TABLE.append(KERNEL.jieba_table(a["root"], a["nodes"], a["emit"], a["model"],
                                                 float(a["log_total"])))
    return _TABLE[0]


def cut(text: str) -> list[str]:
    """jieba's cut(text, hmm=True) with the default dictionary: rjieba's tokens."""
    return KERNEL.jieba_cut(table(), text)
