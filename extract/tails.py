"""Structural marks of an article's edges that no site name is needed for (extract.boilerplate applies them).

Why: on a site seen for the first time the body's last paragraph is followed by a page-function bar
(【我来说两句】【推荐】【打印】【关闭】), a related or comment heading behind a bullet symbol (■相关链接, ● 发表评论)
or a notice heading spaced out letter by letter (郑 重 声 明); above the first paragraph sits a dateline
(AUTO.SOHU.COM 2005年05月13日14:15, 2005-02-06 13:26更新 来源：…, 发表于 … (阅读:3727;评论:63)).  None of
them is a sentence of the story; left in, they change the story's fingerprint from one fetch to the next.
"""
from __future__ import annotations

import re

# Bullet symbols a heading may start with: ■相关链接, ● 发表评论, ★ 热点推荐.
HEAD_SYMBOLS = r"■□●○◆◇★☆▶►▲△◎※·•>》"
BAR_GROUP = re.compile(r"[【\[]\s*([^【】\[\]]{1,14}?)\s*[】\]]")
BAR_GROUPS = 3               # a line of this many bracketed items ...
BAR_OUTSIDE = 8              # ... with at most this many characters outside them is a function bar
SENTENCE_PUNCT = re.compile(r"[。！？!?；;…]")
SENTENCE_END = re.compile(r"[。！？!?…”」』]$")
HEADING_MAX = 20             # a heading written with spaces between its characters is at most this long
SPACED_OUT = re.compile(r"^\S(\s+\S){2,}$")
# A notice heading that closes the article (its clauses follow: 1. 任何言论纯属作者个人观点 ...).
NOTICE_HEAD = re.compile(r"^[\[【]?(郑重|特别|免责|版权|法律)?声明[】\]:：]?$")
DATE = r"\d{4}\s*[-年/.]\s*\d{1,2}\s*[-月/.]\s*\d{1,2}\s*日?"
DATETIME = re.compile(rf"({DATE}|\d{{1,2}}/\d{{1,2}}/\d{{4}})\s*\d{{1,2}}\s*[:：]\s*\d{{2}}")   # also 7/5/2005 9:23:57 PM
META_WORD = re.compile(r"(来源|稿源|作者|发表|发布|更新|阅读|浏览|点击|评论|编辑)")
DATELINE_MAX = 80            # a dateline is a short line
DATELINE_PUNCT = re.compile(r"[。！？!?…，]")   # (阅读:3727;评论:63) is a dateline's counter, not a sentence
# A label and an address on a line of their own: a blog's trackback or permalink (引用该篇文章 http://…).
LINK_LABEL = re.compile(r"^[^。！？!?，,]{0,30}?[:：]?\s*https?://\S+$")


def is_function_bar(line: str) -> bool:
    """A row of page functions: 3+ short bracketed items (【推荐】【打印】【关闭】) and a few characters besides."""
    if "【" not in line and "[" not in line:
        return False
    groups = BAR_GROUP.findall(line)
    if len(groups) < BAR_GROUPS or not all(re.search(r"[\u4e00-\u9fffA-Za-z]", g) for g in groups):
        return False
    outside = re.sub(r"\s+", "", BAR_GROUP.sub("", line))
    return len(outside) <= BAR_OUTSIDE and not SENTENCE_PUNCT.search(outside)


def compact_heading(line: str) -> str:
    """A short heading without its bullet symbols and without the spaces between its characters (■ 相关链接 ->
    相关链接, 郑 重 声 明 -> 郑重声明); any other line as it is."""
    t = line.strip().lstrip(HEAD_SYMBOLS + " \u3000")
    if len(t) <= HEADING_MAX and SPACED_OUT.match(t):
        t = re.sub(r"\s+", "", t)
    return t


# A forum or blog program's credit and its page counter: the page's footer, whatever the site.
SOFTWARE_FOOTER = re.compile(r"^(Powered\s+by\b|Processed\s+in\s+[\d.]+\s*s|查看完整版本\s*[:：])", re.I)


# Lines a news app or portal puts under every story: an app prompt, the channel it came from, report and
# correction buttons, a share prompt, the previous/next story, the story's tags, a newsletter's sign-up prompt.
CLOSING = re.compile(r"^((打开|下载).{0,12}(APP|App|app|客户端).{0,16}|本文来自.{0,20}(客户端|APP|App|公众号|号)[。.]?|"
                     r"举报|反馈|举报\s*/\s*反馈|纠错|【纠错】|扫一扫.{0,10}|(上一篇|下一篇|上一条|下一条)\s*[:：].{1,40}|"
                     r"(标签|关键词|文章关键词|关键字|Tags?)\s*[:：].{0,40}|"
                     r"[^。！？!?]{0,20}(新闻信|电子报|新闻简报|[Nn]ewsletter)[^。！？!?]{0,20})$")   # a newsletter's sign-up


# A site's cookie or privacy consent notice (本网站使用相关技术…隐私声明…代表您同意上述规范).
CONSENT = re.compile(r"(cookie|隐私).{0,80}(同意|接受)|(同意|接受).{0,40}(cookie|隐私)", re.I)
CONSENT_MAX = 160


def is_consent(t: str) -> bool:
    """A cookie or privacy consent notice (both of CONSENT's branches need 同意 or 接受: two substring tests spare
    the regex on every other line)."""
    return len(t) <= CONSENT_MAX and ("同意" in t or "接受" in t) and bool(CONSENT.search(t))


def is_closing_line(line: str) -> bool:
    """A line that closes a story on a portal or in an app (打开APP阅读更多, 举报/反馈, 上一篇：…, 标签：…), or the
    site's cookie or privacy consent notice."""
    t = line.strip()
    return (len(t) <= 60 and bool(CLOSING.match(t))) or is_consent(t)


# A blog post's posting lines under its text: where it was filed and how often read, its trackback address, the
# count of comments above them ((本文发表于…, 已被阅读178次), 本文通告引用(Trackback)链接: …, 《…》已有1件评论).
POSTING = re.compile(r"(已被|被)(阅读|浏览|点击)\s*\d+\s*次|已有\s*\d+\s*(件|条|篇|个)(评论|回复)|Trackback|引用通告|通告引用",
                     re.I)
POSTING_MAX = 80


def is_posting_line(line: str) -> bool:
    """A blog post's posting line (read count, trackback, comment count): no sentence, the post ends above it."""
    t = line.strip()
    return len(t) <= POSTING_MAX and "。" not in t and bool(POSTING.search(t))


def is_page_notice(line: str) -> bool:
    """A notice of the site, never of a story (a consent notice, a forum program's footer): it ends the body however
    much text follows it (a language-switch prompt in three languages)."""
    t = line.strip()
    return is_consent(t) or is_software_footer(t)


# A byline as Taiwan sites write it: 記者林悅／南市報導, 社會中心／綜合報導 (read through the simplified view).
REPORT_BYLINE = re.compile(r"^[^，。！？,!?]{0,20}[／/|｜]\s*[^，。！？,!?]{0,10}(报导|报道)$")


def is_report_byline(line: str) -> bool:
    """A '…／…報導' byline: at the body's edges it is a credit, not text."""
    return len(line) <= 40 and bool(REPORT_BYLINE.match(line.strip()))


def is_software_footer(line: str) -> bool:
    """'Powered by …', 'Processed in 0.01 second', 查看完整版本: a forum or blog program's footer line."""
    return bool(SOFTWARE_FOOTER.match(line.strip()))


def is_notice_head(line: str) -> bool:
    """A notice heading on a line of its own (郑重声明, 【免责声明】): the site's terms follow, not the story."""
    return len(line) <= 2 * HEADING_MAX and "明" in line and bool(NOTICE_HEAD.match(compact_heading(line)))


# A date written in English alone on a line, as blog programs stamp a post: Saturday, September 10th, 2005 10:56 am.
EN_DATE_LINE = re.compile(r"^((Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\.?,?\s+)?(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
                          r"[a-z]*\.?\s+\d{1,2}(st|nd|rd|th)?,?\s+\d{4}(,?\s+(at\s+)?\d{1,2}:\d{2}(:\d{2})?\s*([ap]\.?m\.?)?)?$",
                          re.I)
EMPTY_META = re.compile(r"^[\u4e00-\u9fff]{0,4}(时间|日期|来源|作者|编辑|字号)\s*[:：]\s*$")   # 发表时间： (its value gone)


# A newspaper's dateline: the date and the paper's name, nothing else (2003-7-24 钱江晚报, 人民日报 2005年3月1日).
OUTLET = r"[\u4e00-\u9fff]{1,10}(?:报|网|社|台|刊|杂志)"
DATE_OUTLET = re.compile(rf"^(?:{DATE}\s*{OUTLET}|{OUTLET}\s*{DATE})$")


def is_dateline(line: str) -> bool:
    """A line above the story that only dates it: a date with a time, or a date with a meta word (来源, 阅读,
    发表于), in a short line without a sentence -- a first paragraph that opens with a date has one; or a date or
    meta label whose value went with its markup (发表时间：)."""
    t = line.strip()
    if EMPTY_META.match(t) or EN_DATE_LINE.match(t):
        return True
    if not t or len(t) > DATELINE_MAX or DATELINE_PUNCT.search(t):
        return False
    return bool(DATETIME.search(t) or (re.search(DATE, t) and META_WORD.search(t)) or DATE_OUTLET.match(t))


DATELINE_SOURCE = re.compile(r"(?:来源|稿源)\s*[:：]\s*[\[【(（]?\s*([^\s\[\]【】()（）:：|｜]{2,30})")


def dateline_source(line: str) -> str:
    """The outlet a dateline names (BUSINESS.SOHU.COM 2005年3月11日12:12 来源：[ 人民网 ] -> 人民网), '' if none:
    the line leaves the body, its data goes to the source field."""
    m = DATELINE_SOURCE.search(line) if ("来源" in line or "稿源" in line) and is_dateline(line) else None
    return m.group(1) if m else ""


def is_link_label(line: str) -> bool:
    """A label and a web address alone on a line (Trackback: http://…, 你可以使用这个链接引用该篇文章 http://…)."""
    return bool(LINK_LABEL.match(line.strip()))


TRAILING_LABEL_MAX = 4       # a channel or widget label under the last paragraph (推荐, 娱乐) is at most this long
TRAILING_LABELS = (2, 5)     # this many of them (junk lines among them) end a body; one may sign a letter, more
                             # are a list of the body's own (a form's rows: 圣经的原理 / 环境的带领 / ...)
LEAD_IN = re.compile(r"^[^。！？!?…，,；;\d]{2,16}[:：]$")   # 理论新闻精选： introduces a list that is not there


def drop_trailing_labels(lines: list[str], junk) -> list[str]:
    """Short labels left under the last paragraph (推荐 / 娱乐, junk lines such as 分享 among them) whose links
    went -- a single short name may sign the text and stays."""
    def label(line: str) -> bool:
        t = line.strip()
        return 0 < len(t) <= TRAILING_LABEL_MAX and not re.search(r"[\W\d_]", t)

    j, labels = len(lines), 0
    while j > 0 and (not lines[j - 1].strip() or label(lines[j - 1]) or junk(lines[j - 1].strip())):
        labels += label(lines[j - 1])
        j -= 1
    return lines[:j] if TRAILING_LABELS[0] <= labels <= TRAILING_LABELS[1] and j > 0 else lines


def is_lead_in(line: str) -> bool:
    """A short label ending with a colon (理论新闻精选：): under the last paragraph it introduces a list that went."""
    return bool(LEAD_IN.match(line.strip()))


HEADLINE_LINK = "\x00"      # marks a line that is a linked headline; alone, where one was dropped (article.unlink)
TEASER_HEADLINES = 2         # this many linked headlines after the body's last paragraph are a list of other stories
HEADLINE_MIN, HEADLINE_MAX = 6, 40


def is_headline_link(line: str) -> bool:
    """A link line that reads as a headline: 6-40 characters, no sentence inside (a menu item is shorter)."""
    t = re.sub(r"\s+", "", line)
    return HEADLINE_MIN <= len(t) <= HEADLINE_MAX and not re.search(r"[。！？!?；;]", t[:-1])


def mark_headline_links(lines: list[str], anchors: set[str] | frozenset) -> list[str]:
    """Lines that are a linked headline's whole text, marked (HEADLINE_LINK in front) for teaser_list_starts."""
    if not anchors:
        return lines
    return [HEADLINE_LINK + line if len(line) <= 2 * HEADLINE_MAX and "".join(line.split()) in anchors
            and is_headline_link(line) else line for line in lines]


def teaser_list_starts(lines: list[str]) -> list[int]:
    """Where a list of other stories may begin: a linked headline right under a paragraph with TEASER_HEADLINES-1
    more linked headlines below it (one-line teasers between them have the body's density, so only the links
    show the list); a story's single link to another page is no list."""
    marks = [i for i, line in enumerate(lines) if line.startswith(HEADLINE_LINK)]
    out = []
    for k, i in enumerate(marks):
        above = next((x for x in reversed(lines[:i]) if x != HEADLINE_LINK), "")
        if len(marks) - k >= TEASER_HEADLINES and SENTENCE_END.search(above.strip()):
            out.append(i)
    return out


def drop_headline_marks(lines: list[str]) -> list[str]:
    """The body without the marks: a marked headline left in the body keeps its text, a bare mark goes."""
    return [line.lstrip(HEADLINE_LINK) for line in lines if line != HEADLINE_LINK]


# A headline of a recommendation list dated in the ways extract.boilerplate.STAMP leaves out: month-day (and time)
# at its end or start, a time at its start, a 年月日 date after the headline, a relative time (3小时前, 昨天 07:42).
DATED_HEADLINE = re.compile(
    r"\S\s+\d{1,2}[-/]\d{1,2}(\s+\d{1,2}:\d{2})?$"
    r"|^(\d{4}[-/.])?\d{1,2}[-/.]\d{1,2}(\s+\d{1,2}:\d{2})?\s+[^\d\s]"
    r"|^\d{1,2}:\d{2}\s+[^\d\s]"
    r"|[\u4e00-\u9fff]{4}.*\s\d{4}年\d{1,2}月\d{1,2}日(\s*\d{1,2}:\d{2})?$"
    r"|(^|\s)(\d+\s*(秒|分钟|小时|天)前|刚刚|(昨天|今天|前天)\s*\d{1,2}:\d{2})$")
HEADLINE_PUNCT = re.compile(r"[。！？!?，,；;]")


def is_dated_headline(line: str) -> bool:
    """A short line without a sentence whose date or time says it is a list's headline (央行开展逆回购操作 09-30,
    07:42 多地出台楼市新政, 3小时前): a chronology in a body writes sentences."""
    t = line.strip()
    return bool(DATED_HEADLINE.search(t)) and not HEADLINE_PUNCT.search(t)


PERIOD_MAX = 5               # a dated list's items (headline, teaser, date, time) are at most this many lines each


def item_start(lines: list[str], i: int, stamped) -> int | None:
    """Where the first item of a dated list whose first date is at i begins, when items repeat every p lines
    (headline / one-line teaser / date / time): the headline above the date; None when the lines above are no item."""
    run = next((k - i for k in range(i, len(lines)) if not stamped(lines[k])), len(lines) - i)
    nxt = next((k for k in range(i + run, min(len(lines), i + PERIOD_MAX + 1)) if stamped(lines[k])), None)
    if nxt is None:
        return None
    start = i - (nxt - i - run)
    if start >= i or start < 1 or any(stamped(lines[k]) for k in range(start, i)):
        return None
    head = lines[start].strip()
    return start if len(head) <= HEADLINE_MAX and not HEADLINE_PUNCT.search(head) else None


WIDGET_REPEAT = 3            # a short line seen this many times in a body is a per-item widget (← 返回, 回复)
WIDGET_KEY = re.compile(r"[\u4e00-\u9fff]{2,8}")   # ... of 2-8 Chinese characters (not code, not a lone character)
NINE_WORDS = re.compile(r"[^\W_](?:[\W_]*[^\W_]){8}")


def widget_key(line: str) -> str:
    """A line's words without punctuation and arrows ('← 返回......' -> '返回'); '' for a line too long to be a
    widget or a bare number."""
    if len(line) > 8 and NINE_WORDS.search(line):
        return ""   # nine word characters are never a key of 2-8: a paragraph is not scanned whole
    key = re.sub(r"[\W_]+", "", line)
    return key if WIDGET_KEY.fullmatch(key) else ""


def repeated_widgets(lines: list[str]) -> set[str]:
    """Keys of the short lines repeated WIDGET_REPEAT+ times: a reply or back button under every post of a thread."""
    counts: dict[str, int] = {}
    previous = ""
    for line in lines:
        key = widget_key(line)
        if key and key != previous:   # under every post: other lines between two of them
            counts[key] = counts.get(key, 0) + 1
        previous = key
    return {k for k, n in counts.items() if n >= WIDGET_REPEAT}


# Lines that close a reprinted text: where it was taken from (摘自《…》, 转自《北京科技报》), the site that compiled it
# on a date (…网站(http://…)搜集整理于2002-09-25), a pager's label whose page links went (页: / 页码：).
REPRINT_SOURCE = re.compile(r"^[（(【\[]?\s*(摘自|转自|选自|转载自|摘编自)\s*[《“「][^。！？!?]{0,60}$")
COMPILED_ON = re.compile(rf"^[^。！？!?]{{0,60}}(搜集|收集|编辑)?整理于\s*{DATE}\s*$")
PAGER_LABEL = re.compile(r"^(页|页码|分页|页次)\s*[:：]\s*[\d\s]*$")
# A reporter's name alone in brackets under the story (（袁源）), not an ending note such as （完）, （未完待续）.
NAME_IN_BRACKETS = re.compile(r"^[（(]\s*(?![^)）]*[完续])[\u4e00-\u9fff·]{2,4}(\s+[\u4e00-\u9fff·]{2,4}){0,2}\s*[)）]$")
# A prompt to the reader under a story: download the app, join the fan page, follow the account, become a paying member
# (还想看更多新闻吗？欢迎下载…APP，…; 看更多！请加入…粉丝团; …建议您加入…付费会员…) -- an invitation verb and what
# it invites to, on a short line.
READER_PROMPT = re.compile(r"(欢迎|请|立即|马上|赶快|快来?|建议您)\s*(下载|安装|加入|关注|订阅|按赞|点赞)[^。！？!?]{0,24}"
                           r"(APP|App|app|客户端|粉丝团|粉丝专页|粉丝页|公众号|官方账号|官方帐号|付费会员)")
# A story's tags as hashtags, alone on a line (#上吊 #自杀 #士林区).
HASHTAGS = re.compile(r"^#[^\s#]{1,20}(\s*#[^\s#]{1,20})+$")
EDGE_MARK_MAX = 80


def is_edge_mark(line: str) -> bool:
    """A page-function bar, a reprint's source or compiled-on line, a pager label, a name in brackets, a prompt to
    the reader (download the app, join the fan page), a line of hashtags: at the body's edges, not text."""
    t = line.strip()
    return len(t) <= EDGE_MARK_MAX and bool(is_function_bar(t) or REPRINT_SOURCE.match(t) or COMPILED_ON.match(t)
                                            or PAGER_LABEL.match(t) or NAME_IN_BRACKETS.match(t)
                                            or READER_PROMPT.search(t) or HASHTAGS.match(t))


# The editor's credit alone on a line ((责任编辑： 黄帅 )): never a sentence of the story, wherever it stands.
LONE_EDITOR = re.compile(r"^[（(【\[]?\s*(责任编辑|责编)\s*[:：]\s*[^\s。！？，,]{1,12}(\s+[^\s。！？，,]{1,12}){0,2}\s*[)）】\]]?$")


def is_lone_editor(line: str) -> bool:
    """An editor's credit on a line of its own, with nothing but a name or two."""
    return "编" in line and len(line) <= EDGE_MARK_MAX and bool(LONE_EDITOR.match(line.strip()))
