"""Known, seeded ways of disguising a text: the labelled set is built from these, never by hand.

Every function is pure given its `random.Random`: the same seed gives the same variant in every
process (no salted `hash()`, no set iteration order).
"""
from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

HAN = re.compile(r"[\u4e00-\u9fff]")
_SENTENCE = re.compile(r"[^。！？!?；…\n]*(?:[。！？!?；…]+[”’」』）)\"']*\n?|\n|$)")
_CLAUSE_END = re.compile(r"[，。！？；：、,.!?;:…”’」』）)]")


@dataclass
class Variant:
    """A transformed text plus what is known about it (the truly copied character spans)."""

    text: str
    copied_spans: list[tuple[int, int]] = field(default_factory=list)
    changed: float = 0.0  # measured fraction of the source that was changed (or copied, for partial)


# ---------------------------------------------------------------- splitting

def split_sentences(text: str) -> list[str]:
    """Split into sentences keeping their punctuation, so "".join(parts) == text."""
    return [p for p in _SENTENCE.findall(text) if p]


def split_paragraphs(text: str, sentences_per_block: int = 4) -> list[str]:
    """Paragraphs by newline; texts without them (most news) get blocks of a few sentences."""
    paras = [p + "\n" for p in text.split("\n") if p.strip()]
    if len(paras) >= 3:
        paras[-1] = paras[-1][:-1] if not text.endswith("\n") else paras[-1]
        return paras
    sents = split_sentences(text)
    return ["".join(sents[i:i + sentences_per_block]) for i in range(0, len(sents), sentences_per_block)]


def clause_boundaries(text: str) -> list[int]:
    """Offsets just after each clause mark, plus 0 and len(text): where an editor inserts text."""
    cuts = {0, len(text)}
    cuts.update(m.end() for m in _CLAUSE_END.finditer(text))
    return sorted(cuts)


# ---------------------------------------------------------------- the paper's edits

def add_text(text: str, fraction: float, donors: Sequence[str], rng: random.Random) -> Variant:
    """Insert pieces of other documents' sentences, totalling `fraction` of the text, at random clause boundaries."""
    budget = max(1, round(len(text) * fraction))
    pieces: list[str] = []
    while budget > 0:
        donor = split_sentences(rng.choice(donors)) or ["。"]
        piece = rng.choice(donor).strip()[:budget] or "。"
        pieces.append(piece)
        budget -= len(piece)
    cuts = clause_boundaries(text)
    inserts = sorted((rng.choice(cuts), i) for i in range(len(pieces)))
    out, prev = [], 0
    for pos, i in inserts:
        out.append(text[prev:pos])
        out.append(pieces[i])
        prev = pos
    out.append(text[prev:])
    added = sum(len(p) for p in pieces)
    return Variant("".join(out), changed=added / max(1, len(text)))


def delete_text(text: str, fraction: float, rng: random.Random) -> Variant:
    """Delete spans starting at random clause starts, totalling `fraction` of the text."""
    budget = max(1, round(len(text) * fraction))
    keep = bytearray(b"\x01") * len(text)
    starts = clause_boundaries(text)[:-1]
    deleted, tries = 0, 0
    while deleted < budget and tries < 100000:
        tries += 1
        s = rng.choice(starts) if rng.random() < 0.8 else rng.randrange(len(text))
        length = min(rng.randint(4, 40), budget - deleted)
        for i in range(s, min(len(text), s + length)):
            if keep[i]:
                keep[i] = 0
                deleted += 1
    out = "".join(c for c, k in zip(text, keep) if k)
    return Variant(out, changed=deleted / max(1, len(text)))


def reorder_sentences(text: str, rng: random.Random) -> Variant:
    """The paper's reordering: take a random number of sentences out and put them back at random places."""
    sents = split_sentences(text)
    if len(sents) < 2:
        return Variant(text, changed=0.0)
    moves = rng.randint(1, len(sents))
    moved = 0
    for _ in range(moves):
        s = sents.pop(rng.randrange(len(sents)))
        sents.insert(rng.randrange(len(sents) + 1), s)
        moved += len(s)
    return Variant("".join(sents), changed=min(1.0, moved / max(1, len(text))))


def reorder_paragraphs(text: str, rng: random.Random) -> Variant:
    """Shuffle the paragraphs (or blocks of sentences when the text has no paragraph breaks)."""
    paras = split_paragraphs(text)
    if len(paras) < 2:
        return Variant(text)
    order = list(range(len(paras)))
    while order == sorted(order):
        rng.shuffle(order)
    joined = []
    for i in order:
        p = paras[i]
        joined.append(p if p.endswith("\n") or "\n" not in text else p + "\n")
    return Variant("".join(joined), changed=1.0)


# ---------------------------------------------------------------- character substitutions

# Common look-alike characters (形近字); each group's members are swapped for one another.
LOOKALIKE_GROUPS: tuple[str, ...] = (
    "己已巳", "未末", "干千于", "人入", "大太犬", "日曰", "土士", "戊戌戍", "拔拨", "候侯",
    "折拆析", "兔免", "今令", "王玉主", "白自", "木本术", "刀力", "田由甲申", "贝见", "鸟乌",
    "斤斥", "戈弋", "辨辩辫", "狠狼", "历厉", "汩汨", "茶荼", "洒酒", "晴睛", "准淮", "句旬",
    "问间", "冶治", "处外", "天夭", "住往", "苦若", "壁璧", "徒徙", "祟崇", "即既", "免兔",
    "买卖", "午牛", "失矢", "办为", "亨享", "仑仓", "幻幼", "免兑", "喝渴", "撤撒", "采釆",
    "密蜜", "灸炙", "代伐", "叨叼", "瓜爪", "手毛", "子孑", "儿几", "开升", "下卞", "右石",
)


@lru_cache(maxsize=1)
def lookalike_table() -> dict[str, tuple[str, ...]]:
    """Character -> the other members of its look-alike group."""
    table: dict[str, list[str]] = {}
    for group in LOOKALIKE_GROUPS:
        for c in group:
            table.setdefault(c, [])
            table[c].extend(o for o in group if o != c and o not in table[c])
    return {c: tuple(v) for c, v in table.items()}


@dataclass(frozen=True)
class ReadingTables:
    """Reading tables built from the corpus' own characters: exact reading and toneless reading."""

    same_reading: dict[str, tuple[str, ...]]   # char -> other chars with the same toned reading
    near_reading: dict[str, tuple[str, ...]]   # char -> chars with the same initial+final, other tone


def build_reading_tables(texts: Iterable[str], min_count: int = 3) -> ReadingTables:
    """Use pypinyin to group the corpus' common Han characters by reading (sorted, so it is deterministic)."""
    from pypinyin import Style, pinyin

    counts: Counter[str] = Counter()
    for t in texts:
        counts.update(HAN.findall(t))
    chars = sorted(c for c, n in counts.items() if n >= min_count)
    by_tone: dict[str, list[str]] = {}
    by_plain: dict[str, list[str]] = {}
    toned: dict[str, str] = {}
    for c in chars:
        r = pinyin(c, style=Style.TONE3, heteronym=False, neutral_tone_with_five=True)[0][0]
        if not r or not r[-1].isdigit():
            continue
        toned[c] = r
        by_tone.setdefault(r, []).append(c)
        by_plain.setdefault(r[:-1], []).append(c)
    # prefer frequent characters: a pirate writes common homophones, not obscure ones
    def by_freq(cs: list[str]) -> list[str]:
        return sorted(cs, key=lambda x: (-counts[x], x))
    same = {c: tuple(o for o in by_freq(by_tone[r]) if o != c)[:8] for c, r in toned.items()}
    near = {c: tuple(o for o in by_freq(by_plain[r[:-1]]) if toned[o] != r)[:8] for c, r in toned.items()}
    return ReadingTables({c: v for c, v in same.items() if v}, {c: v for c, v in near.items() if v})


def substitute_chars(text: str, fraction: float, table: dict[str, tuple[str, ...]],
                     rng: random.Random) -> Variant:
    """Replace `fraction` of the Han characters by a table alternative (as many as the table allows)."""
    han_total = sum(1 for c in text if HAN.match(c))
    positions = [i for i, c in enumerate(text) if c in table]
    want = min(len(positions), round(han_total * fraction))
    chosen = rng.sample(positions, want) if want else []
    chars = list(text)
    for i in chosen:
        chars[i] = rng.choice(table[chars[i]])
    return Variant("".join(chars), changed=want / max(1, han_total))


# ---------------------------------------------------------------- script and encoding

@lru_cache(maxsize=2)
def _opencc(config: str):
    """One converter per config (building one costs milliseconds)."""
    import opencc
    return opencc.OpenCC(config)


def to_traditional(text: str) -> Variant:
    """Simplified -> traditional script (OpenCC s2t)."""
    return Variant(_opencc("s2t").convert(text), changed=1.0)


def traditional_big5(text: str) -> Variant:
    """Taiwan-standard traditional (OpenCC s2tw) served as a Big5 page (what Big5 lacks becomes '?')."""
    trad = _opencc("s2tw").convert(text)
    return Variant(trad.encode("big5", errors="replace").decode("big5"), changed=1.0)


_FULL = {i: i + 0xFEE0 for i in range(0x21, 0x7F)}
_FULL[0x20] = 0x3000
_HALF_PUNCT = str.maketrans({"，": ",", "。": ".", "！": "!", "？": "?", "；": ";", "：": ":",
                             "“": '"', "”": '"', "‘": "'", "’": "'", "（": "(", "）": ")",
                             "《": "<", "》": ">", "、": ","})


def to_fullwidth(text: str) -> Variant:
    """Every ASCII character (digits, Latin letters, punctuation, space) to its full-width form."""
    return Variant(text.translate(_FULL), changed=1.0)


def to_halfwidth_punct(text: str) -> Variant:
    """Chinese punctuation to ASCII punctuation (the opposite habit of some sites)."""
    return Variant(text.translate(_HALF_PUNCT), changed=1.0)


def encoding_round_trip(text: str, encoding: str) -> Variant:
    """Encode with `encoding` (errors=replace) and decode back, as a page served in that charset."""
    out = text.encode(encoding, errors="replace").decode(encoding)
    lost = sum(1 for a, b in zip(text, out) if a != b) if len(out) == len(text) else len(text)
    return Variant(out, changed=lost / max(1, len(text)))


# ---------------------------------------------------------------- boilerplate

NAV_LINES = (
    "首页 | 新闻 | 体育 | 娱乐 | 财经 | 科技 | 汽车 | 房产 | 教育 | 读书 | 原创 | 排行榜",
    "您当前的位置：首页 > 新闻中心 > 国内新闻 > 正文",
    "上一篇：{t}　下一篇：返回目录　加入书签　推荐本书",
    "热门搜索：小说排行 完本小说 玄幻 都市 言情 历史 网游 科幻",
    "登录 | 注册 | 手机版 | 网站地图 | 联系我们 | 关于我们",
)
AD_LINES = (
    "【广告】扫码关注公众号，每天免费领取阅读币，新用户注册即送VIP七天！",
    "广告：限时特惠，全场商品低至1折，点击进入官方旗舰店抢购>>",
    "手机用户请访问 m.example-novel.com 阅读，体验更流畅，无弹窗广告。",
    "本站域名已更换，请收藏新域名，以免迷路。最新章节第一时间更新。",
    "（天才一秒记住本站地址，为您提供精彩小说阅读。）",
)
READ_ORIGINAL_LINES = (
    "请阅读原文",
    "点击“阅读原文”查看更多精彩内容。",
    "本文来源于网络，版权归原作者所有，如有侵权请联系删除。责任编辑：小编",
    "未完待续，请点击下一页继续阅读。",
    "转载请注明出处，更多精彩请关注我们的官方微博和微信。",
)
SPAM_PARAGRAPHS = (
    "最新娱乐平台上线啦，注册即送彩金，天天返水，提款秒到账，信誉第一，欢迎各位朋友加入体验，"
    "客服二十四小时在线为您服务，推荐好友还有额外奖励，机会难得不要错过。",
    "专业代办各类证件，诚信经营多年，价格公道，快速办理，全国各地均可邮寄，有需要的朋友请加微信咨询，"
    "保密工作做得好，让您放心满意。",
    "减肥瘦身新方法，一个月瘦二十斤不反弹，无需节食无需运动，纯天然成分安全无副作用，"
    "已有上万名用户亲身见证，现在下单还送精美礼品一份。",
)


def add_boilerplate(text: str, kind: str, rng: random.Random, title: str = "") -> Variant:
    """Wrap/interleave the text with navigation, ads, 'read the original' lines or spam paragraphs."""
    paras = [p if p.endswith("\n") else p + "\n" for p in split_paragraphs(text)]
    head: list[str] = []
    tail: list[str] = []
    kinds = ("navigation", "ads", "read-original", "spam") if kind == "all" else (kind,)
    inner: list[tuple[int, str]] = []
    for k in kinds:
        if k == "navigation":
            head += [NAV_LINES[0], NAV_LINES[1]]
            tail += [NAV_LINES[2].format(t=title or "第一章"), rng.choice(NAV_LINES[3:])]
        elif k == "ads":
            for _ in range(max(1, len(paras) // 4)):
                inner.append((rng.randrange(len(paras) + 1), rng.choice(AD_LINES)))
        elif k == "read-original":
            tail += rng.sample(READ_ORIGINAL_LINES, 2)
        elif k == "spam":
            for _ in range(max(1, len(paras) // 8)):
                inner.append((rng.randrange(len(paras) + 1), rng.choice(SPAM_PARAGRAPHS)))
        else:
            raise ValueError(f"unknown boilerplate kind {kind!r}")
    body: list[str] = []
    inner.sort(key=lambda x: x[0])
    j = 0
    for i, p in enumerate(paras + [""]):
        while j < len(inner) and inner[j][0] == i:
            body.append(inner[j][1] + "\n")
            j += 1
        body.append(p)
    pre = "".join(line + "\n" for line in head)
    post = "".join(line + "\n" for line in tail)
    out = pre + "".join(body) + post
    return Variant(out, changed=(len(out) - len(text)) / max(1, len(text)))


# ---------------------------------------------------------------- partial copies

def partial_copy(text: str, fraction: float, host: str, rng: random.Random) -> Variant:
    """A contiguous `fraction` of the source (cut at sentence ends) placed inside another document."""
    sents = split_sentences(text)
    want = max(1, round(len(text) * fraction))
    lengths = [len(s) for s in sents]
    start = rng.randrange(len(sents))
    while start > 0 and sum(lengths[start:]) < want:
        start -= 1
    end, got = start, 0
    while end < len(sents) and got < want:
        got += lengths[end]
        end += 1
    piece = "".join(sents[start:end])
    hosts = split_sentences(host)
    cut = rng.randrange(len(hosts) + 1)
    before = "".join(hosts[:cut])
    after = "".join(hosts[cut:])
    if before and not before.endswith("\n"):
        before += "\n"
    if after and not piece.endswith("\n"):
        piece_out = piece + "\n"
    else:
        piece_out = piece
    out = before + piece_out + after
    span = (len(before), len(before) + len(piece))
    return Variant(out, copied_spans=[span], changed=len(piece) / max(1, len(text)))


def join_chapters(chapters: Sequence[tuple[str, str]]) -> Variant:
    """Several (title, text) chapters joined into one page; each chapter's span is recorded."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    for title, body in chapters:
        head = f"{title}\n"
        out.append(head)
        pos += len(head)
        spans.append((pos, pos + len(body)))
        out.append(body + "\n\n")
        pos += len(body) + 2
    return Variant("".join(out), copied_spans=spans, changed=1.0)
