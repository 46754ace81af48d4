"""Every method as a small adapter, so all of them run on the same pairs in one run.

Two shapes:
- `PairMethod`: `prepare(text) -> signature` (timed per document) and `score(sig_a, sig_b) -> float`
  (higher = more alike); `is_copy` is `score >= threshold`. A `sweep` of thresholds lets the
  benchmark report the method at its best threshold too.
- `IndexMethod`: a library of sources is built with `add(id, text)`; `query(text)` returns the
  sources it flags with a score. `is_copy(a, b)` is "a is among query(b)". This is how the product's
  crawl-time dedup (NearDuplicateDetector, HammingIndex), infringement matcher (CopyMatcher) and LSH
  really run.
A method whose library piece is missing is reported as unavailable, never silently dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import xxhash

SIMHASH_KS = tuple(range(0, 17))


@dataclass
class PairMethod:
    """A pairwise similarity with a decision threshold."""

    name: str
    group: str                     # seed | product | baseline | peer
    prepare: Callable[[str], Any]
    score: Callable[[Any, Any], float]
    threshold: float
    sweep: Sequence[float] = ()
    label: Callable[[float], str] = staticmethod(lambda t: f">= {t:g}")   # type: ignore[assignment]
    note: str = ""

    def is_copy(self, a: str, b: str) -> bool:
        """The method's own decision for two texts."""
        return self.score(self.prepare(a), self.prepare(b)) >= self.threshold


class IndexMethod:
    """A method that keeps a library of sources and flags which of them a text copies.

    `per_pair = True`: the library holds only the pair's source (the method answers "is b a copy of
    a?" with one verdict per page, so a larger library would hide which kept page it blamed)."""

    name = "index"
    group = "product"
    note = ""
    per_pair = False

    def reset(self) -> None:
        """Empty the library (per_pair methods)."""
        raise NotImplementedError

    def add(self, doc_id: str, text: str) -> None:
        """Put one source into the library."""
        raise NotImplementedError

    def query(self, text: str) -> dict[str, float]:
        """Sources this text is flagged as a copy of, with a score."""
        raise NotImplementedError


@dataclass
class Unavailable:
    """A method that could not be built (missing library piece), kept so the report says so."""

    name: str
    group: str
    reason: str


def hamming_label(neg_k: float) -> str:
    """Thresholds of Hamming methods are stored negated (higher score = more alike)."""
    return f"Hamming <= {int(-neg_k)}"


def _simhash_method(name: str, group: str, fp: Callable[[str], int], k: int, note: str,
                    sweep: bool = True) -> PairMethod:
    """A 64-bit SimHash method: score is minus the Hamming distance."""
    return PairMethod(name, group, fp, lambda a, b: -((a ^ b).bit_count()), -k,
                      tuple(-x for x in SIMHASH_KS) if sweep else (), hamming_label, note)


# ------------------------------------------------------------------ peers

def peer_simhash_pypi() -> PairMethod:
    """The `simhash` package (1e0ne/simhash) as shipped: char 4-grams of \\w runs, md5 features."""
    from simhash import Simhash
    return _simhash_method("simhash (PyPI) k=3", "peer", lambda t: Simhash(t).value, 3,
                           "simhash 2.x default features (lower-cased character 4-grams)")


def peer_trafilatura() -> PairMethod:
    """trafilatura's own Simhash (trafilatura.deduplication.Simhash), raw text."""
    from trafilatura.deduplication import Simhash
    return _simhash_method("trafilatura Simhash k=3", "peer", lambda t: Simhash(t).hash, 3,
                           "tokens = punctuation-separated runs (clauses in Chinese), blake2b")


_WS = re.compile(r"\s+")


def char_shingles(text: str, k: int = 5) -> set[bytes]:
    """Character k-grams of the whitespace-stripped text, as UTF-8 (datasketch wants bytes)."""
    t = _WS.sub("", text)
    return {t[i:i + k].encode("utf-8") for i in range(max(1, len(t) - k + 1))}


class DatasketchLSH(IndexMethod):
    """datasketch MinHashLSH as a user would set it up: char 5-grams, 128 permutations, t=0.5."""

    group = "peer"

    def __init__(self, threshold: float = 0.5, num_perm: int = 128, k: int = 5) -> None:
        from datasketch import MinHash, MinHashLSH
        self._MinHash = MinHash
        self.num_perm, self.k, self.threshold = num_perm, k, threshold
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.sigs: dict[str, Any] = {}
        self.name = f"datasketch MinHashLSH t={threshold:g}"
        self.note = f"char {k}-grams of the raw text, num_perm={num_perm}, xxh32 (datasketch default sha1 is several times slower, statistically the same)"

    def _sig(self, text: str) -> Any:
        """MinHash of the raw text's character shingles."""
        m = self._MinHash(num_perm=self.num_perm, seed=1, hashfunc=xxhash.xxh32_intdigest)
        m.update_batch(list(char_shingles(text, self.k)))
        return m

    def add(self, doc_id: str, text: str) -> None:
        m = self._sig(text)
        self.sigs[doc_id] = m
        self.lsh.insert(doc_id, m)

    def query(self, text: str) -> dict[str, float]:
        m = self._sig(text)
        return {key: m.jaccard(self.sigs[key]) for key in self.lsh.query(m)}


# ------------------------------------------------------------------ the seed and the product

def seed_simhash(k: int = 3) -> PairMethod:
    """The seed paper's method: jieba TF-IDF SimHash, near duplicate at Hamming <= k."""
    from fingerprint.simhash import simhash
    return _simhash_method(f"SimHash k={k}", "seed", simhash, k,
                           "fingerprint.simhash (rjieba tokens, TF-IDF weights), the paper's k=3")


def product_k() -> int:
    """The crawl-time dedup's Hamming k: the store's configured default (ZHDEDUP_SIMHASH_K)."""
    try:
        from storage.config import StoreConfig
        return int(StoreConfig.simhash_k)
    except Exception:  # storage not importable: the documented default
        return 3


def _fp_api() -> tuple[Callable[[str], Any], type]:
    """fingerprint_text and HammingIndex from the public API (submodules while __init__ is not filled)."""
    try:
        from fingerprint import HammingIndex, fingerprint_text
    except ImportError:
        from fingerprint.document import fingerprint_text
        from fingerprint.hamming_index import HammingIndex
    return fingerprint_text, HammingIndex


class HammingDedup(IndexMethod):
    """The store's check today: same exact-content hash, or SimHash within k of a kept page (HammingIndex)."""

    group = "product"

    def __init__(self, k: int | None = None) -> None:
        self.fingerprint_text, index_cls = _fp_api()
        self.k = product_k() if k is None else k
        self.index = index_cls(self.k)
        self.exact: dict[str, list[str]] = {}
        self.name = f"HammingIndex dedup (exact + SimHash k={self.k})"
        self.note = "fingerprint_text, HammingIndex.query at the store's k; exact content_hash first"

    def add(self, doc_id: str, text: str) -> None:
        fp = self.fingerprint_text(text)
        self.index.add(fp.simhash, doc_id)
        self.exact.setdefault(fp.content_hash, []).append(doc_id)

    def query(self, text: str) -> dict[str, float]:
        fp = self.fingerprint_text(text)
        out = {key: 1.0 - d / 64 for key, d in self.index.query(fp.simhash)}
        out.update({key: 1.0 for key in self.exact.get(fp.content_hash, ())})
        return out


class ProductDedup(IndexMethod):
    """The crawl-time dedup engine (fingerprint.neardup.DedupEngine): exact, SimHash, then passages.

    The in-memory index by default; `ProductDedupRedis` runs the same engine on the crawl's Redis index.
    A query is the crawl's decision for the variant; a variant kept as new is forgotten again, so the
    next variant of the same source meets the source alone.
    """

    group = "product"
    per_pair = True
    where = "memory"

    def __init__(self) -> None:
        from fingerprint.neardup import DedupDoc, DedupEngine, NearDupParams
        self._doc, self._engine = DedupDoc, DedupEngine
        self.params = NearDupParams()
        self.engine = self._make_engine()
        self.kept: list[Any] = []
        self.ids: dict[str, str] = {}
        self.fired: dict[str, int] = {}
        self.name = f"product dedup ({self.where})"

    def _make_engine(self) -> Any:
        return self._engine(self.params)

    def _page_id(self, doc_id: str) -> str:
        return doc_id

    @property
    def note(self) -> str:  # type: ignore[override]
        fired = ", ".join(f"{k} {v}" for k, v in sorted(self.fired.items()))
        return (f"fingerprint.neardup.DedupEngine on the {self.where} index, default NearDupParams {self.params}; "
                f"verdicts by step: {fired or '-'}")

    def reset(self) -> None:
        for doc in self.kept:
            self.engine.forget(doc)
        self.kept, self.ids = [], {}

    def add(self, doc_id: str, text: str) -> None:
        doc = self._doc.of(self._page_id(doc_id), text, self.params)
        self.ids[doc.page_id] = doc_id
        if self.engine.decide(doc).kind == "new":
            self.kept.append(doc)

    def query(self, text: str) -> dict[str, float]:
        doc = self._doc.of(self._page_id(f"variant-{len(self.ids)}-{len(self.fired)}"), text, self.params)
        v = self.engine.decide(doc)
        if v.kind == "new":
            self.engine.forget(doc)
            return {}
        self.fired[v.method or v.kind] = self.fired.get(v.method or v.kind, 0) + 1
        score = v.coverage if v.coverage is not None else 1.0 - (v.distance or 0) / 64
        return {self.ids.get(str(v.original), str(v.original)): float(score)}


class ProductDedupRedis(ProductDedup):
    """The same engine on the crawl's index: Redis (exact, SimHash tables, sketch claims) and MongoDB texts.

    Runs on its own embedded servers in a temporary directory (or MONGO_URI / REDIS_URL, under a
    database and key prefix of its own, deleted afterwards).
    """

    where = "Redis"

    def _make_engine(self) -> Any:
        import atexit
        import tempfile

        from storage import StoreConfig, open_store
        from storage.dedup_index import RedisDedupIndex

        self._var = tempfile.mkdtemp(prefix="zhdedup-accuracy-")
        self.store = open_store(StoreConfig.from_env(var_dir=self._var, db_name="zhdedup_accuracy",
                                                     key_prefix="zhdacc:", simhash_k=self.params.k))
        self.store.drop_all()
        atexit.register(self.close)
        return self._engine(self.params, RedisDedupIndex(self.store))

    def _page_id(self, doc_id: str) -> str:
        return self.store.new_page_id()

    def add(self, doc_id: str, text: str) -> None:
        page_id = self._page_id(doc_id)
        doc = self._doc.of(page_id, text, self.params)
        self.ids[page_id] = doc_id
        if self.engine.decide(doc).kind == "new":
            self.store.save_page({"_id": page_id, "url": f"bench:{page_id}", "text": text,
                                  "content_hash": doc.content_hash, "simhash": doc.simhash, "sketch": list(doc.sketch)})
            self.kept.append(doc)

    def close(self) -> None:
        """Drop the benchmark's data and stop its embedded servers."""
        import shutil

        from storage.servers import stop

        if getattr(self, "store", None) is None:
            return
        self.store.drop_all()
        self.store.close()
        self.store = None
        stop(self._var)
        shutil.rmtree(self._var, ignore_errors=True)


FRACTION_SWEEP = tuple(round(0.05 * i, 2) for i in range(1, 20))


def dna_method(anchored: bool, threshold: float = 0.5) -> PairMethod:
    """Pinyin-initial DNA (seed 004): share of the smaller window set found in the other."""
    from fingerprint.dna import DEFAULT_PARAMS, SEED_PARAMS, dna, dna_containment
    from fingerprint.normalize import normalize
    params = DEFAULT_PARAMS if anchored else SEED_PARAMS
    kind = "anchored windows" if anchored else "seed's fixed windows"
    return PairMethod(f"DNA {kind} >= {threshold:g}", "product" if anchored else "seed",
                      lambda t: dna(normalize(t), params), dna_containment, threshold, FRACTION_SWEEP,
                      note=f"fingerprint.dna {params.id} of the normalised text, dna_containment")


def shingle_jaccard_method(threshold: float = 0.95) -> PairMethod:
    """Seed 001's baseline: Jaccard of character 5-shingles of the normalised text > 0.95."""
    from fingerprint.compare import SHINGLE_K, jaccard, shingles
    return PairMethod(f"Shingle Jaccard > {threshold:g}", "baseline", shingles, jaccard, threshold,
                      FRACTION_SWEEP, lambda t: f"> {t:g}",
                      f"fingerprint.compare.shingles (k={SHINGLE_K}) + jaccard")


def top_sentences_method() -> PairMethod:
    """Seed 003: the MD5 of the five longest sentences must be equal."""
    from fingerprint.compare import top_sentences_signature
    return PairMethod("Top-5 longest sentences", "baseline", top_sentences_signature,
                      lambda a, b: float(a == b), 1.0, (), lambda t: "equal signature",
                      "fingerprint.compare.top_sentences_signature")


def winnowing_method(threshold: float = 0.5) -> PairMethod:
    """Seed 000: winnowed character 8-gram hashes; share of the smaller set found in the other."""
    from fingerprint.compare import containment, winnowing_fingerprints
    return PairMethod(f"Winnowing containment >= {threshold:g}", "baseline", winnowing_fingerprints,
                      containment, threshold, FRACTION_SWEEP,
                      note="fingerprint.compare.winnowing_fingerprints (k=8, w=8) + containment")


class ProductMinHashLSH(IndexMethod):
    """fingerprint.compare.minhash (normalised text, 5-shingles, xxh32) in a datasketch MinHashLSH."""

    group = "baseline"

    def __init__(self, threshold: float = 0.5) -> None:
        from datasketch import MinHashLSH
        from fingerprint.compare import MINHASH_PERM, minhash
        self.minhash = minhash
        self.lsh = MinHashLSH(threshold=threshold, num_perm=MINHASH_PERM)
        self.sigs: dict[str, Any] = {}
        self.name = f"MinHash LSH t={threshold:g}"
        self.note = f"fingerprint.compare.minhash ({MINHASH_PERM} perms) + MinHashLSH banding"

    def add(self, doc_id: str, text: str) -> None:
        m = self.minhash(text)
        self.sigs[doc_id] = m
        self.lsh.insert(doc_id, m)

    def query(self, text: str) -> dict[str, float]:
        m = self.minhash(text)
        return {key: m.jaccard(self.sigs[key]) for key in self.lsh.query(m)}


class ProductMatcher(IndexMethod):
    """The infringement matcher: CopyMatcher over a MemorySeedIndex, a match is a flagged source."""

    group = "product"

    def __init__(self) -> None:
        from fingerprint.matcher import CopyMatcher, MemorySeedIndex
        self.texts: dict[str, str] = {}
        self.matcher = CopyMatcher(MemorySeedIndex(), self.texts.get)
        self.last_spans: dict[str, list[tuple[int, int]]] = {}
        self.name = "product matcher (CopyMatcher)"
        self.note = "fingerprint.matcher.CopyMatcher(MemorySeedIndex(), get_text), default MatchParams"

    def add(self, doc_id: str, text: str) -> None:
        self.texts[doc_id] = text
        self.matcher.add_source(doc_id, text)

    def query(self, text: str) -> dict[str, float]:
        found = self.matcher.match(text)
        self.last_spans = {m.source_id: [tuple(s) for s in m.suspect_spans] for m in found}
        return {m.source_id: float(m.score) for m in found}


def build_methods() -> list[PairMethod | IndexMethod | Unavailable]:
    """All methods of the comparison, in report order; unavailable ones carry the reason."""
    builders: list[tuple[str, str, Callable[[], Any]]] = [
        ("SimHash k=3", "seed", seed_simhash),
        ("DNA seed's fixed windows", "seed", lambda: dna_method(False)),
        ("DNA anchored windows", "product", lambda: dna_method(True)),
        ("product dedup", "product", ProductDedup),
        ("product dedup (Redis)", "product", ProductDedupRedis),
        ("HammingIndex dedup", "product", HammingDedup),
        ("product matcher", "product", ProductMatcher),
        ("MinHash LSH", "baseline", ProductMinHashLSH),
        ("Shingle Jaccard > 0.95", "baseline", shingle_jaccard_method),
        ("Top-5 longest sentences", "baseline", top_sentences_method),
        ("Winnowing", "baseline", winnowing_method),
        ("simhash (PyPI) k=3", "peer", peer_simhash_pypi),
        ("trafilatura Simhash k=3", "peer", peer_trafilatura),
        ("datasketch MinHashLSH t=0.5", "peer", DatasketchLSH),
    ]
    out: list[PairMethod | IndexMethod | Unavailable] = []
    for name, group, make in builders:
        try:
            out.append(make())
        except Exception as exc:  # a missing piece of the library must not hide the others
            out.append(Unavailable(name, group, f"{type(exc).__name__}: {exc}"))
    return out
