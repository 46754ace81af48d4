"""A rewrite (伪原创, 洗稿) as a reviewer reads it: the original's and the copy's sentences paired side by side,
the words swapped for synonyms marked apart from other changes, padding and dropped sentences left unpaired.

No second aligner: the pairs come from the matcher's own verification (`matcher.align` over the canonical
pinyin-initial letters, synonyms mapped first, offsets into the raw texts). Every 8-letter gram of the copy
that lies in an aligned passage votes for the sentences of the original holding the same gram in theirs; each
copy sentence takes the original sentence with most votes, one to one, best pairs first. A sentence
without a vote is unaligned: dropped from the original, or added in the copy (stock phrases such as
值得一提的是 padded in as sentences of their own).

Inside a pair, words (the product's tokenizer) are compared after synonym canonicalisation (difflib on the
canonical tokens): a word that differs as written but not canonically is a synonym swap ("syn"); a word that
differs canonically is another change ("diff", or "add" / "del" where one side has nothing in its place,
as a padded 据了解 at a sentence's start). Pure: no I/O.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from fingerprint import synonyms
from fingerprint.matcher import VERIFY_K, MatchParams, _Letters, align
from fingerprint.seeds import gram_codes

MAX_POSTINGS = 8   # a gram in more sentences of the original than this (a refrain, a stock phrase) votes for none
_SENTENCE = re.compile(r"[^。！？!?；;…\n]*(?:[。！？!?；;…]+[”」』’\"）)]*|\n|$)")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Sentence:
    """One sentence: its number in its text (1-based), [start, end) offsets and its words with their marks."""

    n: int
    start: int
    end: int
    words: tuple[tuple[str, str], ...]   # (word as written, mark: "" | "syn" | "diff" | "add" | "del")


@dataclass(frozen=True)
class Row:
    """One line of the side-by-side view: a pair, a sentence dropped from the original, or one added in the copy."""

    kind: str                      # "pair" | "dropped" | "added"
    original: Sentence | None = None
    copy: Sentence | None = None
    votes: int = 0                 # shared 8-letter grams in aligned passages (pairs only)


@dataclass(frozen=True)
class SentencePairs:
    """The rows in the original's order (added sentences after the copy sentence before them), and counts."""

    rows: list[Row] = field(default_factory=list)
    original_sentences: int = 0
    copy_sentences: int = 0
    pairs: int = 0
    synonym_swaps: int = 0
    other_changes: int = 0

    @property
    def original_share(self) -> float:
        """Share of the original's sentences that have a partner in the copy."""
        return self.pairs / self.original_sentences if self.original_sentences else 0.0

    @property
    def copy_share(self) -> float:
        """Share of the copy's sentences that have a partner in the original."""
        return self.pairs / self.copy_sentences if self.copy_sentences else 0.0

    @property
    def share(self) -> float:
        """Share of sentences aligned, the smaller side (as the dedup verdict's `sentences`)."""
        return min(self.original_share, self.copy_share)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence holding a Han character (closing quotes stay with their sentence)."""
    out = []
    for m in _SENTENCE.finditer(text):
        s, e = m.span()
        if e > s and _HAN.search(text, s, e):
            while s < e and text[s].isspace():
                s += 1
            out.append((s, e))
    return out


def sentence_pairs(original: str, copy: str) -> SentencePairs:
    """Pair the copy's sentences with the original's on the passages the matcher aligns, and mark their words."""
    bounds_a, bounds_b = split_sentences(original), split_sentences(copy)
    paired = _pair(original, copy, bounds_a, bounds_b)
    sent_a: dict[int, Sentence] = {}
    sent_b: dict[int, Sentence] = {}
    for i, j, _ in paired:
        sent_a[i], sent_b[j] = _marked(original, bounds_a[i], i, copy, bounds_b[j], j)
    for i, b in enumerate(bounds_a):
        sent_a.setdefault(i, _plain(original, b, i))
    for j, b in enumerate(bounds_b):
        sent_b.setdefault(j, _plain(copy, b, j))
    rows = _rows(paired, sent_a, sent_b)
    marks = Counter(mark for j in sent_b for _, mark in sent_b[j].words)   # marked stretches of the copy
    return SentencePairs(rows, len(bounds_a), len(bounds_b), len(paired), marks["syn"], marks["diff"] + marks["add"])


def _sentence_of(offsets: np.ndarray, bounds: list[tuple[int, int]]) -> np.ndarray:
    """The sentence each letter lies in (-1 outside every sentence)."""
    starts = np.array([s for s, _ in bounds] or [0], dtype=np.int64)
    ends = np.array([e for _, e in bounds] or [0], dtype=np.int64)
    idx = np.searchsorted(starts, offsets, side="right") - 1
    ok = (idx >= 0) & (offsets < ends[np.maximum(idx, 0)])
    return np.where(ok, idx, -1) if bounds else np.full(len(offsets), -1)


def _in_runs(n: int, runs: list[tuple[int, int]]) -> np.ndarray:
    """Which of n grams lie wholly inside an aligned passage (runs of letters)."""
    mask = np.zeros(n + VERIFY_K, dtype=bool)
    for s, e in runs:
        mask[s:e] = True
    return mask[:n] & mask[VERIFY_K - 1:n + VERIFY_K - 1]


def _votes(original: str, copy: str, bounds_a: list, bounds_b: list) -> Counter:
    """(original sentence, copy sentence) -> shared grams inside the passages matcher.align found."""
    la, lb = _Letters.of(original), _Letters.of(copy)
    runs_a, runs_b = align(la, lb, MatchParams())
    ga, gb = gram_codes(la.codes, VERIFY_K), gram_codes(lb.codes, VERIFY_K)
    sa, sb = _sentence_of(la.offsets, bounds_a), _sentence_of(lb.offsets, bounds_b)
    where: dict[int, set[int]] = defaultdict(set)
    for g, i in zip(ga[_in_runs(len(ga), runs_a)].tolist(), sa[:len(ga)][_in_runs(len(ga), runs_a)].tolist()):
        if i >= 0:
            where[g].add(i)
    votes: Counter = Counter()
    ok_b = _in_runs(len(gb), runs_b)
    for g, j in zip(gb[ok_b].tolist(), sb[:len(gb)][ok_b].tolist()):
        sentences = where.get(g, ())
        if j >= 0 and 0 < len(sentences) <= MAX_POSTINGS:
            votes.update((i, j) for i in sentences)
    return votes


def _pair(original: str, copy: str, bounds_a: list, bounds_b: list) -> list[tuple[int, int, int]]:
    """(original sentence, copy sentence, votes), one to one, most votes first (ties: nearer in order)."""
    if not bounds_a or not bounds_b:
        return []
    votes = _votes(original, copy, bounds_a, bounds_b)
    ranked = sorted(votes.items(), key=lambda kv: (-kv[1], abs(kv[0][0] - kv[0][1]), kv[0]))
    used_a: set[int] = set()
    used_b: set[int] = set()
    out = []
    for (i, j), n in ranked:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            out.append((i, j, n))
    return sorted(out)


def _tokens(text: str) -> tuple[list[str], list[str]]:
    """A sentence's words as written and canonical (synonyms mapped when canonicalisation is on)."""
    from fingerprint.tokens import default_tokenizer

    simple = synonyms._simplified(text)   # one to one: the cut's lengths hold for the text as written
    cut = default_tokenizer().cut(simple)
    words, pos = [], 0
    for w in cut:
        words.append(text[pos:pos + len(w)])
        pos += len(w)
    canon = synonyms.canonical_tokens(cut) if synonyms.enabled() else list(cut)
    return words, canon


def _marked(a: str, ba: tuple[int, int], i: int, b: str, bb: tuple[int, int], j: int) -> tuple[Sentence, Sentence]:
    """Both sentences of a pair with their words marked: syn (same canonical word), diff, add, del."""
    wa, ca = _tokens(a[ba[0]:ba[1]])
    wb, cb = _tokens(b[bb[0]:bb[1]])
    ma, mb = [""] * len(wa), [""] * len(wb)
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, ca, cb, autojunk=False).get_opcodes():
        if op == "equal":
            for x, y in zip(range(a0, a1), range(b0, b1)):
                if wa[x] != wb[y] and synonyms._simplified(wa[x]) != synonyms._simplified(wb[y]):
                    ma[x] = mb[y] = "syn"
        else:
            ma[a0:a1] = ["diff" if b1 > b0 else "del"] * (a1 - a0)
            mb[b0:b1] = ["diff" if a1 > a0 else "add"] * (b1 - b0)
    return (Sentence(i + 1, *ba, _merge(wa, ma)), Sentence(j + 1, *bb, _merge(wb, mb)))


def _merge(words: list[str], marks: list[str]) -> tuple[tuple[str, str], ...]:
    """Neighbouring words with one mark joined (fewer elements to draw); punctuation never marked."""
    out: list[list[str]] = []
    for w, m in zip(words, marks):
        m = m if _HAN.search(w) or w.strip().isalnum() else ""
        if out and out[-1][1] == m:
            out[-1][0] += w
        else:
            out.append([w, m])
    return tuple((w, m) for w, m in out)


def _plain(text: str, bounds: tuple[int, int], i: int) -> Sentence:
    """An unaligned sentence: its words unmarked (the whole row says what it is)."""
    return Sentence(i + 1, bounds[0], bounds[1], ((text[bounds[0]:bounds[1]], ""),))


def _rows(paired: list[tuple[int, int, int]], sent_a: dict[int, Sentence], sent_b: dict[int, Sentence]) -> list[Row]:
    """Pairs and dropped sentences in the original's order; each added sentence after the row holding the
    copy sentence before it (or first)."""
    partner = {i: (j, n) for i, j, n in paired}
    rows = [Row("pair", sent_a[i], sent_b[partner[i][0]], partner[i][1]) if i in partner else Row("dropped", sent_a[i])
            for i in sorted(sent_a)]
    row_of = {r.copy.n - 1: k for k, r in enumerate(rows) if r.copy is not None}
    after: dict[int, list[Row]] = defaultdict(list)
    for j in sorted(sent_b):
        if j in row_of:
            continue
        prev = max((row_of[x] for x in range(j) if x in row_of), default=-1)
        after[prev].append(Row("added", copy=sent_b[j]))
    out = list(after[-1])
    for k, r in enumerate(rows):
        out.append(r)
        out.extend(after[k])
    return out
